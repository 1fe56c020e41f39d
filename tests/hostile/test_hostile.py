"""Hostile cases (issue list of the hostile probe): each feeds gboost something crafted, checks it
ends in PLINK's answer or one line with exit 2, and, through the ``guard`` fixture, hashes every
byte of the inputs and of OUT/'s neighbours before and after, so nothing else is touched."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gboost.cli import main
from gboost.simulate import simulate_study
from tests.helpers import NO_PLINK, PLINK, assert_parity
from tests.hostile.hostile_helpers import neighbours_digest, tree_digest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def guard():
    """``guard(out, *inputs)``: every byte of ``inputs`` and beside ``out``, checked at the end."""
    watched = []

    def watch(out, *inputs):
        Path(out).parent.mkdir(parents=True, exist_ok=True)  # (OUT/ itself is the command's to make)
        watched.append((out, inputs, neighbours_digest(out), tree_digest(*inputs)))

    yield watch
    for out, inputs, beside, before in watched:
        assert neighbours_digest(out) == beside, "a file beside OUT/ changed"
        assert tree_digest(*inputs) == before, "an input changed"


def _bfile(prefix):
    return [prefix + ext for ext in (".bed", ".bim", ".fam")]


def _write_study(folder: Path, name="s", p=24, seed=48, **kw) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    prefix = str(folder / name)
    simulate_study(p, 40, 40, seed=seed, chromosomes=2, missing_rate=0.01, **kw).write(prefix)
    return prefix


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gboost: error:"), err
    return err[0]


# --- 4. silent wrong answers ---------------------------------------------------------------------

@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
def test_a_contig_name_is_kept_as_plink_keeps_it(tmp_path, guard):
    """``chrUn_gl000220``: plink1.9 --allow-extra-chr prints the name whole (the 'chr' prefix goes
    only from the codes it knows: chr2 -> 2, chrM -> 26)."""
    prefix = _write_study(tmp_path / "data")
    bim = Path(prefix + ".bim")
    rows = [line.split("\t") for line in bim.read_text().splitlines()]
    for k, r in enumerate(rows):
        r[0] = "chrUn_gl000220" if k < 10 else ("chrM" if k < 14 else "chr2")
    bim.write_text("".join("\t".join(r) + "\n" for r in rows))
    out = tmp_path / "run" / "res"
    guard(out, *_bfile(prefix))
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "0.99"]) == 0
    (tmp_path / "oracle").mkdir()
    plink = tmp_path / "oracle" / "plink"
    subprocess.run([PLINK, "--bfile", prefix, "--fast-epistasis", "boost", "--allow-extra-chr", "--epi1", "0.99",
                    "--out", str(plink), "--threads", "2", "--silent"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert "chrUn_gl000220" in (out / "pairs.epi.cc").read_text()
    assert_parity(out, plink, 0.99)


def _scan(prefix, out, *extra):
    return main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "0.05", *extra])


@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
def test_a_duplicate_sample_in_covar_is_refused_as_plink_refuses_it(tmp_path, guard, capsys):
    """plink1.9 refuses a sample ID twice in --covar (where the sample is loaded); gboost took the
    last row. A duplicate of a sample not in the study is ignored by both."""
    prefix = _write_study(tmp_path / "data")
    fam = [line.split() for line in Path(prefix + ".fam").read_text().splitlines()]
    cov = tmp_path / "data" / "cov.txt"
    rows = [f"{f[0]} {f[1]} {k % 5}" for k, f in enumerate(fam)]
    cov.write_text("\n".join(rows + ["zz zz 1", "zz zz 2"]) + "\n")
    out = tmp_path / "run" / "res"
    guard(out, *_bfile(prefix), cov)
    assert _scan(prefix, out, "--covar", str(cov)) == 0
    (tmp_path / "oracle").mkdir()
    theirs = subprocess.run([PLINK, "--bfile", prefix, "--covar", str(cov), "--logistic", "--out",
                             str(tmp_path / "oracle" / "a")], capture_output=True, text=True)
    assert theirs.returncode == 0, theirs.stdout
    cov = tmp_path / "data" / "dup.txt"
    cov.write_text("\n".join(rows + [f"{fam[3][0]} {fam[3][1]} 9"]) + "\n")
    guard(out, cov)
    theirs = subprocess.run([PLINK, "--bfile", prefix, "--covar", str(cov), "--logistic", "--out",
                             str(tmp_path / "oracle" / "b")], capture_output=True, text=True)
    assert theirs.returncode != 0 and "Duplicate sample ID in --covar file" in theirs.stdout + theirs.stderr
    before = tree_digest(out)
    assert _scan(prefix, out, "--covar", str(cov), "--overwrite") == 2
    line = _one_error_line(capsys)
    assert "duplicate sample ID" in line and f"{fam[3][0]} {fam[3][1]}" in line and "line 4" in line and f"line {len(rows) + 1}" in line
    assert tree_digest(out) == before
