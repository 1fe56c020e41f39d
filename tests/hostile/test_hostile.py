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
from tests.helpers import NO_PLINK, PLINK, assert_parity
from tests.hostile.hostile_helpers import bfile as _bfile, tree_digest, write_study as _write_study

ROOT = Path(__file__).resolve().parents[2]


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
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "0.99",
                 "--allow-extra-chr"]) == 0
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


# An interrupted scan's checkpoint, edited with its CRCs recomputed: refused in one line, never a
# different answer or a crash of compiled code reading past the planes.

def _interrupted(tmp_path):
    from gboost.pipeline.checkpoint import Ledger
    from gboost.errors import ScanCancelled
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study
    from gboost.pipeline.scan import ScanParams, screen

    prefix = _write_study(tmp_path / "data", p=120, seed=7)
    out = tmp_path / "run" / "res"
    st = load_study(open_bfile(prefix))
    params = ScanParams(epi1=0.05, device="cpu", tile=16)
    led = Ledger(out, st, params, resume=False)
    seen = []
    with pytest.raises(ScanCancelled):
        screen(st, params, progress=seen.append, cancel=lambda: len(seen) >= 12, checkpoint=led)
    led.close()
    return prefix, out


def _resume(prefix, out):
    return subprocess.run([sys.executable, "-m", "gboost.cli", "scan", "--bfile", prefix, "--out", str(out),
                           "--device", "cpu", "--quiet", "--epi1", "0.05", "--tile", "16", "--resume"],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=600)


def _edit_records(out, edit):
    """Each GBT2 record's arrays handed to ``edit(arrays)``, then framed again with a true CRC."""
    import zlib

    import numpy as np

    from gboost.pipeline.checkpoint import _HEAD, _MAGIC, _RECORD, LEDGER, _intact_records

    data = (out / LEDGER).read_bytes()
    new = b""
    for _, magic, payload, n in _intact_records(data):
        k, m, s = (int(x) for x in np.frombuffer(payload, np.int64, 3))
        pos = 24
        a = {"tiles": np.frombuffer(payload, np.int64, 7 * k, pos).reshape(k, 7).copy()}
        pos += 56 * k
        a["segs"] = np.frombuffer(payload, np.int64, 2 * s, pos).reshape(s, 2).copy()
        pos += 16 * s
        sizes = {"m": m, "L": int(a["segs"][:, 1].sum())}
        for name, dt, size in _RECORD:
            a[name] = np.frombuffer(payload, dt, sizes[size], pos).copy()
            pos += sizes[size] * np.dtype(dt).itemsize
        edit(a)
        body = b"".join([np.array([k, m, s], np.int64).tobytes(), a["tiles"].tobytes(), a["segs"].tobytes()]
                        + [a[name].tobytes() for name, _, _ in _RECORD])
        new += _HEAD.pack(_MAGIC, n, len(body), zlib.crc32(body)) + body
    assert new and len(new) == len(data)
    (out / LEDGER).write_bytes(new)


def _refused(prefix, out, guard, *words):
    before = tree_digest(out)
    guard(out, *_bfile(prefix))
    r = _resume(prefix, out)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("gboost: error:"), (r.returncode, r.stderr)
    assert all(w in lines[0] for w in words), lines[0]
    assert tree_digest(out) == before  # the checkpoint is kept as it was: nothing of it is trusted, nothing lost
    return lines[0]


@pytest.mark.slow  # gboost in a subprocess
def test_an_edited_tile_size_in_checkpoint_json_is_refused(tmp_path, guard):
    import json

    prefix, out = _interrupted(tmp_path)
    manifest = out / "checkpoint.json"
    saved = json.loads(manifest.read_text())
    saved["tile"] = 8
    manifest.write_text(json.dumps(saved, indent=1))
    _refused(prefix, out, guard, "checkpoint")
    saved["tile"] = -16
    manifest.write_text(json.dumps(saved, indent=1))
    _refused(prefix, out, guard, "checkpoint")


@pytest.mark.slow  # gboost in a subprocess
@pytest.mark.parametrize("edit", ["survivor_out_of_range", "survivor_outside_its_tile", "tile_moved",
                                  "segment_out_of_range", "partner_out_of_range", "more_significant_than_tested"])
def test_an_edited_ledger_record_is_refused(tmp_path, guard, edit):
    import numpy as np

    prefix, out = _interrupted(tmp_path)

    def change(a):
        if edit == "survivor_out_of_range" and len(a["i"]):
            a["j"][0] = 10 ** 9  # compiled code would read far past the planes (a segfault)
        elif edit == "survivor_outside_its_tile" and len(a["i"]):
            a["i"][0] = a["tiles"][-1][2] + 1 if a["tiles"][-1][2] + 1 < 119 else 0
            a["j"][0] = 119
        elif edit == "tile_moved":
            a["tiles"][0][1:3] += 1
        elif edit == "segment_out_of_range":
            a["segs"][0][0] = 10 ** 6
        elif edit == "partner_out_of_range":
            a["partner"][0] = 10 ** 6
        elif edit == "more_significant_than_tested":
            a["n_sig"][0] = a["n_tot"][0] + 1

    found = []
    _edit_records(out, lambda a: found.append(len(a["i"])) or change(a))
    if edit.startswith("survivor") and not any(found):
        pytest.skip("no survivor recorded to edit")
    _refused(prefix, out, guard, "checkpoint")


# --- 5. one line owed, not a crash or a silent all-NA answer ----------------------------------

def test_a_phenotype_whose_variance_overflows_is_refused_as_plink_refuses_it(tmp_path, guard, capsys):
    """Values of +-1e308 in --pheno: numpy overflowed (warnings), every result NA, exit 0;
    plink1.9 --epistasis says "Phenotype is constant"."""
    prefix = _write_study(tmp_path / "data")
    fam = [line.split() for line in Path(prefix + ".fam").read_text().splitlines()]
    pheno = tmp_path / "data" / "huge.txt"
    pheno.write_text("".join(f"{f[0]} {f[1]} {(k + 1) * 1e306:g}\n" for k, f in enumerate(fam)))
    out = tmp_path / "run" / "res"
    guard(out, *_bfile(prefix), pheno)
    if PLINK is not None:
        (tmp_path / "oracle").mkdir()
        r = subprocess.run([PLINK, "--bfile", prefix, "--pheno", str(pheno), "--epistasis", "--out",
                            str(tmp_path / "oracle" / "q")], capture_output=True, text=True)
        assert r.returncode != 0 and "Phenotype is constant" in r.stdout + r.stderr
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning on the way to the refusal
        assert _scan(prefix, out, "--pheno", str(pheno)) == 2
    line = _one_error_line(capsys)
    assert "constant" in line and str(pheno) in line
    assert not out.exists()


def test_a_covariate_too_large_to_fit_is_refused(tmp_path, guard, capsys):
    """1e308 in --covar: its squares overflow in the logistic fit (NaN results, exit 0)."""
    prefix = _write_study(tmp_path / "data")
    fam = [line.split() for line in Path(prefix + ".fam").read_text().splitlines()]
    cov = tmp_path / "data" / "cov.txt"
    cov.write_text("FID IID AGE BIG\n" + "".join(f"{f[0]} {f[1]} {k % 7} {(k % 3) * 4e307:g}\n"
                                                 for k, f in enumerate(fam)))
    out = tmp_path / "run" / "res"
    guard(out, *_bfile(prefix), cov)
    assert _scan(prefix, out, "--covar", str(cov)) == 2
    line = _one_error_line(capsys)
    assert "BIG" in line and "rescale" in line
    assert not out.exists()
    assert _scan(prefix, out, "--covar", str(cov), "--covar-name", "AGE") == 0  # the usable one alone


def _cli(*args, env=None, shell_prefix=None):
    cmd = [sys.executable, "-m", "gboost.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))


@pytest.mark.slow  # gboost in a subprocess
def test_a_memory_limit_that_is_not_a_number_is_one_line(tmp_path, guard):
    prefix = _write_study(tmp_path / "data")
    out = tmp_path / "run" / "res"
    guard(out, *_bfile(prefix))
    r = _cli("scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", env={"GBOOST_MEMORY_LIMIT": "abc"})
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "GBOOST_MEMORY_LIMIT" in lines[0] and "abc" in lines[0], r.stderr
    assert not out.exists()
    r = _cli("scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", env={"GBOOST_MEMORY_LIMIT": "4e9"})
    assert r.returncode == 0, r.stderr  # a number, in the float form the docs allow, still works


@pytest.mark.slow  # gboost in a subprocess
def test_a_scan_with_stderr_closed_succeeds_and_writes_nothing_stray(tmp_path, guard):
    """``gboost scan ... 2>&-`` (a cron job, a daemon): exit 0, the log lines nowhere (not on
    stdout, not in a file that took descriptor 2), the outputs those of a normal run."""
    prefix = _write_study(tmp_path / "data")
    out, ref = tmp_path / "run" / "res", tmp_path / "reference" / "ref"
    assert _scan(prefix, ref) == 0
    guard(out, *_bfile(prefix))
    r = subprocess.run(["sh", "-c", 'exec "$@" 2>&-', "sh", sys.executable, "-m", "gboost.cli", "scan", "--bfile",
                        prefix, "--out", str(out), "--device", "cpu", "--epi1", "0.05"],
                       capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0 and r.stdout == "", (r.returncode, r.stdout)
    for name in ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv"):
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name


def test_merging_a_part_from_another_version_is_one_line(tmp_path, guard, capsys):
    import numpy as np

    prefix = _write_study(tmp_path / "data")
    parts = [tmp_path / "run" / f"p{k}" for k in (1, 2)]
    for k, d in enumerate(parts, 1):
        assert _scan(prefix, d, "--part", f"{k}/2") == 0
    f = parts[1] / "part.npz"
    with np.load(f, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    dropped = next(k for k in arrays if k not in ("meta", "var_snp", "counts"))
    del arrays[dropped]  # what an older or newer gboost writes differently
    with open(f, "wb") as fh:
        np.savez(fh, **arrays)
    out = tmp_path / "run" / "merged"
    guard(out, *_bfile(prefix), *(d / "part.npz" for d in parts))
    assert main(["merge", *map(str, parts), "--out", str(out), "--quiet"]) == 2
    line = _one_error_line(capsys)
    assert str(parts[1]) in line and "version" in line
    assert not out.exists()
