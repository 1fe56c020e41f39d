"""The `gboost` command: outputs, provenance, and bad input -> exit 2 with one line, nothing written."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from gboost.cli import main
from gboost.data.simulate import PlantedPair, simulate_study

from tests.helpers import ROOT


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("cli") / "s")
    simulate_study(120, 150, 170, seed=3, chromosomes=2, missing_rate=0.01,
                   planted=[PlantedPair(5, 60, "threshold", 12.0)]).write(prefix)
    return prefix


def copy_fileset(prefix, dest):
    for ext in (".bed", ".bim", ".fam"):
        shutil.copy(prefix + ext, dest + ext)
    return dest


def run_cli(*args):
    """Run the real console entry point in a subprocess, as a user would."""
    return subprocess.run([sys.executable, "-m", "gboost.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_scan_writes_every_output_and_provenance(study, tmp_path):
    out = tmp_path / "res"
    assert main(["scan", "--bfile", study, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "1e-3"]) == 0
    assert sorted(os.listdir(out)) == sorted(["pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv", "run.json",
                                              "gboost.log"])
    run = json.loads((out / "run.json").read_text())
    assert run["engine"] == "cpu" and run["parameters"]["epi1"] == 1e-3
    c = run["counts"]
    assert c["snps"] == 120 and c["samples"] == 320 and c["cases"] == 150 and c["controls"] == 170
    assert c["valid_tests"] <= 120 * 119 // 2 and c["screened_survivors"] >= c["reported_pairs"] >= 1
    assert len(open(out / "pairs.tsv").read().splitlines()) == c["reported_pairs"] + 1
    assert len(open(out / "pairs.epi.cc").read().splitlines()) == c["screened_survivors"] + 1
    assert all(len(h) == 64 for h in run["inputs"].values()) and len(run["inputs"]) == 3
    assert {"screen", "exact", "marginal", "total"} <= set(run["timings_s"])
    marg = [line.split("\t") for line in open(out / "marginal.tsv").read().splitlines()]
    assert marg[0] == ["CHR", "SNP", "BP", "A1", "A2", "MAF", "STAT", "P"] and len(marg) == 121
    top = open(out / "pairs.tsv").read().splitlines()[1].split("\t")
    assert {top[1], top[4]} == {"snp6", "snp61"}  # the planted pair leads


@pytest.mark.slow
def test_existing_output_is_refused_then_gboosts_files_replaced_with_overwrite(study, tmp_path):
    out = tmp_path / "res"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    r = run_cli("scan", "--bfile", study, "--out", str(out), "--device", "cpu", "--quiet")
    assert r.returncode == 2 and "--overwrite" in r.stderr and (out / "keep.txt").exists()
    r = run_cli("scan", "--bfile", study, "--out", str(out), "--device", "cpu", "--quiet", "--overwrite")
    # --overwrite replaces gboost's own files only: the user's file stays, byte for byte
    assert r.returncode == 0 and (out / "pairs.tsv").exists() and (out / "keep.txt").read_text() == "x"


def _corrupt_magic(p):
    with open(p + ".bed", "r+b") as f:
        f.write(b"\x00\x00")


def _truncate(p):
    size = os.path.getsize(p + ".bed")
    with open(p + ".bed", "r+b") as f:
        f.truncate(size - 17)


def _drop_bim_line(p):
    lines = open(p + ".bim").read().splitlines(True)
    open(p + ".bim", "w").writelines(lines[:-1])


def _no_cases(p):
    rows = [line.split() for line in open(p + ".fam")]
    open(p + ".fam", "w").write("".join(" ".join(r[:5] + ["1"]) + "\n" for r in rows))


def _extra_fam_line(p):
    with open(p + ".fam", "a") as f:
        f.write("X1 X1 0 0 1 2\n")


@pytest.mark.slow
@pytest.mark.parametrize("damage,file_ext,words", [
    (_corrupt_magic, ".bed", "expected 6c 1b 01"),
    (_truncate, ".bed", "bytes"),
    (_drop_bim_line, ".bed", "bytes"),
    (_extra_fam_line, ".bed", "bytes"),
    (_no_cases, "", "case"),
])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(study, tmp_path, damage, file_ext, words):
    bad = copy_fileset(study, str(tmp_path / "bad"))
    damage(bad)
    out = tmp_path / "res"
    r = run_cli("scan", "--bfile", bad, "--out", str(out), "--device", "cpu", "--quiet")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gboost: error:"), r.stderr
    assert "Traceback" not in r.stderr
    assert os.path.basename(bad) in lines[0] and (file_ext == "" or file_ext in lines[0])
    assert words in lines[0].lower()
    assert not out.exists()


@pytest.mark.slow
def test_missing_fileset_and_bad_flags_exit_2(tmp_path):
    r = run_cli("scan", "--bfile", str(tmp_path / "nope"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "nope" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("scan", "--bfile", str(tmp_path / "nope"), "--out", str(tmp_path / "o"), "--epi1", "2")
    assert r.returncode == 2 and "epi1" in r.stderr


def test_calibration_pairs_sets_or_turns_off_the_lambda_sample(study, tmp_path):
    args = ["scan", "--bfile", study, "--device", "cpu", "--quiet", "--epi1", "1e-3"]
    assert main([*args, "--out", str(tmp_path / "off"), "--calibration-pairs", "0"]) == 0
    assert main([*args, "--out", str(tmp_path / "few"), "--calibration-pairs", "500"]) == 0
    off = json.loads((tmp_path / "off" / "run.json").read_text())
    few = json.loads((tmp_path / "few" / "run.json").read_text())
    assert off["calibration"] is None and off["parameters"]["calibration_pairs"] == 0
    assert few["calibration"] is not None and few["parameters"]["calibration_pairs"] == 500
    # The scan's own outputs do not depend on it.
    for name in ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv"):
        assert (tmp_path / "off" / name).read_text() == (tmp_path / "few" / name).read_text()
    r = run_cli(*args, "--out", str(tmp_path / "bad"), "--calibration-pairs", "-5")
    assert r.returncode == 2 and "--calibration-pairs" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "bad").exists()


def test_library_never_imports_qt_or_cupy():
    code = ("import sys, gboost, gboost.pipeline.scan, gboost.cli, gboost.engines, gboost.outputs.results, gboost.data.load, gboost.data.simulate;"
            "bad=[m for m in sys.modules if m.split('.')[0] in ('PySide6','pyqtgraph','PyQt5','PyQt6','cupy','dask')];"
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_chr_ranges_are_read_as_plink_reads_them():
    """PLINK 1.9's parse_chrom_ranges: a range's ends are standard codes (chr prefix and case ignored,
    X/Y/XY/MT = 23-26), its end greater than its start; single names pass through."""
    from gboost.cli import _parse_chr
    from gboost.errors import InputError

    assert _parse_chr("chr1-chr3") == ["1", "2", "3"]
    assert _parse_chr("chr1-3,5") == ["1", "2", "3", "5"]
    assert _parse_chr("22-MT") == ["22", "23", "24", "25", "26"]
    assert _parse_chr("x-xy") == ["23", "24", "25"]
    assert _parse_chr("chrX,contig_7 2") == ["chrX", "contig_7", "2"]
    for bad in ("2-1", "1-1", "1-contig", "-3", "X-"):
        with pytest.raises(InputError):
            _parse_chr(bad)
