"""Candidate-set scans against plink1.9: ``--set`` / ``--make-set`` with ``--fast-epistasis boost
set-by-all`` and ``set-by-set``.

gboost scans an LD-rich study with missing calls (and an X chromosome, which the scan skips) with
the same set file and flags as plink1.9; ``.epi.cc`` and its summary must equal PLINK's byte for byte:
sets of 1, 10 and many SNPs, overlapping sets, SNPs that QC removed or that do not exist, a set
file's two sets identical, ``--make-set`` ranges, with ``--maf`` and ``--epi1``. Also: the tile plan
of a rectangle holds each pair once and never a SNP with itself, and bad set files are one line,
exit 2.
"""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from gboost.cli import main as gboost_main
from gboost.data.simulate import PlantedPair, simulate_study, write_bfile
from gboost.pipeline.tiles import plan_rect_tiles
from tests.helpers import (LD_ARGS, NO_PLINK, PLINK, assert_foreign_set_parts_refused, assert_parity, read,
                           write_set_files)

plink_only = [pytest.mark.plink, pytest.mark.slow, pytest.mark.skipif(PLINK is None, reason=NO_PLINK)]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sets")
    sim = simulate_study(150, 220, 220, seed=5, **{**LD_ARGS, "planted": [PlantedPair(9, 120, "xor", 4.0)]})
    prefix = str(folder / "cc")
    write_bfile(prefix, sim.genotypes, sim.variants, sim.samples)
    paths = write_set_files(folder, prefix)
    return prefix, paths


def _both(prefix, tmp_path, mode, set_flag, set_path, extra=()):
    out = tmp_path / "gboost"
    args = ["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", set_flag, set_path,
            f"--{mode}", *extra]
    assert gboost_main(args) == 0
    plink = tmp_path / "plink"
    subprocess.run([PLINK, "--bfile", prefix, "--fast-epistasis", "boost", mode, set_flag, set_path,
                    "--out", str(plink), "--threads", "2", "--silent", *extra],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out, plink


CASES = [
    ("set-by-all", "--set", "one", ["--epi1", "0.01"]),
    ("set-by-all", "--set", "ten", ["--epi1", "0.001", "--maf", "0.05"]),
    ("set-by-all", "--set", "many", ["--epi1", "0.0005"]),
    ("set-by-all", "--set", "many", ["--maf", "0.1"]),
    ("set-by-set", "--set", "overlap", ["--epi1", "0.01"]),
    ("set-by-set", "--set", "identical", ["--epi1", "0.01"]),
    ("set-by-set", "--set", "within", ["--epi1", "0.001", "--maf", "0.05"]),
    ("set-by-set", "--make-set", "ranges", ["--epi1", "0.01"]),
    # loose enough that rows are printed: the rows themselves byte-equal, not only the summaries
    ("set-by-all", "--set", "many", ["--epi1", "0.05"]),
    ("set-by-set", "--set", "overlap", ["--epi1", "0.05"]),
]


@pytest.mark.parametrize("mode,flag,name,extra", CASES, ids=[f"{c[0]}-{c[2]}-{'-'.join(c[3])}" for c in CASES])
@pytest.mark.plink
@pytest.mark.slow
@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
def test_set_scans_equal_plinks(study, tmp_path, mode, flag, name, extra):
    prefix, paths = study
    out, plink = _both(prefix, tmp_path, mode, flag, paths[name], extra)
    epi1 = float(extra[extra.index("--epi1") + 1]) if "--epi1" in extra else 5e-6
    assert_parity(out, plink, epi1, min_rows=10 if epi1 >= 0.05 else 0)
    # the valid tests PLINK counts are the rectangle's
    log = read(f"{plink}.log")
    n_plink = int(log.split(" valid test")[0].split()[-1])
    import json

    assert json.loads(read(out / "run.json"))["counts"]["valid_tests"] == n_plink


@pytest.mark.plink
@pytest.mark.slow
@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
def test_plinks_own_spelling_gives_the_same_files(study, tmp_path):
    prefix, paths = study
    a, b = tmp_path / "a", tmp_path / "b"
    base = ["scan", "--bfile", prefix, "--device", "cpu", "--quiet", "--set", paths["ten"], "--epi1", "0.001"]
    assert gboost_main([*base, "--out", str(a), "--set-by-all"]) == 0
    assert gboost_main([*base, "--out", str(b), "--fast-epistasis", "boost", "set-by-all"]) == 0
    for f in ("pairs.epi.cc", "pairs.epi.cc.summary", "pairs.tsv"):
        assert read(a / f) == read(b / f)


def test_rectangle_tiles_hold_each_pair_once_and_no_snp_with_itself():
    rng = np.random.default_rng(1)
    for n_rows, n_cols, tile in [(1, 7, 4), (5, 40, 8), (13, 13, 4), (30, 200, 16), (9, 9, 64)]:
        origin_cols = np.arange(n_cols)
        rows = np.sort(rng.choice(n_cols + 5, n_rows, replace=False))  # some rows not among the columns
        origin = np.concatenate([rows, origin_cols])
        pos = {int(o): n_rows + k for k, o in enumerate(origin_cols)}
        own = np.array([pos.get(int(r), -1) for r in rows])
        for part in (None, (0, n_rows // 2), (n_rows // 2, n_rows)):
            tiles = plan_rect_tiles(n_rows, n_rows + n_cols, own, tile, part)
            seen = np.zeros((n_rows, n_rows + n_cols), int)
            for t in tiles:
                assert t.j0 >= n_rows >= t.i1 and not t.diagonal
                seen[t.i0:t.i1, t.j0:t.j1] += 1
                assert t.n_pairs == (t.i1 - t.i0) * (t.j1 - t.j0)
            r0, r1 = part or (0, n_rows)
            want = np.zeros_like(seen)
            want[r0:r1, n_rows:] = 1
            for k in range(r0, r1):
                if own[k] >= 0:
                    want[k, own[k]] = 0
            assert (seen == want).all()
            assert [t.index for t in tiles] == list(range(len(tiles)))


BAD = [
    ("noend.set", "S1\nsnp1\nsnp2\n", "--set", "set-by-all", "has no 'END'"),
    ("extra.set", "S1\nsnp1\nEND\nEND\n", "--set", "set-by-all", "an 'END' with no set open"),
    ("two.set", "A\nsnp1\nEND\nB\nsnp2\nEND\n", "--set", "set-by-all", "needs exactly one set"),
    ("three.set", "A\nsnp1\nEND\nB\nsnp2\nEND\nC\nsnp3\nEND\n", "--set", "set-by-set", "one or two sets"),
    ("gone.set", "S1\nnot_here\nEND\n", "--set", "set-by-all", "has no SNP left in the scan"),
    ("short.txt", "1 100 200\n", "--make-set", "set-by-set", "line 1: expected CHR START END NAME"),
    ("back.txt", "1 300 200 g\n", "--make-set", "set-by-set", "smaller than its start"),
    ("word.txt", "1 abc 200 g\n", "--make-set", "set-by-set", "invalid range start"),
]


@pytest.mark.slow
@pytest.mark.parametrize("fname,text,flag,mode,words", BAD, ids=[b[0] for b in BAD])
def test_bad_set_files_are_one_line_exit_2(study, tmp_path, capsys, fname, text, flag, mode, words):
    prefix, _ = study
    path = tmp_path / fname
    path.write_text(text)
    rc = gboost_main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--device", "cpu", "--quiet",
                      flag, str(path), f"--{mode}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and str(path) in err[0] and words in err[0], err
    assert "Traceback" not in "\n".join(err)


@pytest.mark.parametrize("flags,words", [
    (["--set-by-all"], "needs the sets"),
    (["--set", "X", "--set-by-all", "--set-by-set"], "both given"),
    (["--set", "X"], "needs --set-by-all or --set-by-set"),
    (["--fast-epistasis", "joint-effects", "--set", "X"], "modifiers it takes"),
])
def test_set_flags_that_disagree_are_refused(tmp_path, capsys, flags, words):
    rc = gboost_main(["scan", "--bfile", str(tmp_path / "none"), "--out", str(tmp_path / "o"), "--quiet", *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and words in err[0], err


def _scan(prefix, out, *flags):
    assert gboost_main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", *flags]) == 0
    return out


@pytest.mark.parametrize("mode,name", [("set-by-all", "ten"), ("set-by-all", "many"), ("set-by-set", "overlap")])
def test_marginal_lists_each_snp_once_as_a_plain_scan(study, tmp_path, mode, name):
    """A rectangle study holds a SNP that is both row and column twice; marginal.tsv lists each scanned
    SNP once, in file order: the plain scan's marginal.tsv of the same SNPs, byte for byte."""
    prefix, paths = study
    got = _scan(prefix, tmp_path / "set", "--set", paths[name], f"--{mode}")
    flags = []
    if mode == "set-by-set":  # the scanned SNPs are the two sets' union
        ids = set(open(paths[name], encoding="utf-8").read().split()) - {"A", "B", "END"}
        (tmp_path / "union.txt").write_text("\n".join(sorted(ids)) + "\n")
        flags = ["--extract", str(tmp_path / "union.txt")]
    plain = _scan(prefix, tmp_path / "plain", *flags)
    mine, theirs = read(got / "marginal.tsv"), read(plain / "marginal.tsv")
    assert mine == theirs
    snps = [line.split("\t")[1] for line in mine.splitlines()[1:]]
    assert len(snps) == len(set(snps))


def _parts(prefix, folder, n, *flags, parallel=False):
    dirs = []
    for k in range(1, n + 1):
        share = ["--parallel", str(k), str(n)] if parallel else ["--part", f"{k}/{n}"]
        dirs.append(str(_scan(prefix, folder / f"part{k}", *flags, *share)))
    return dirs


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("mode,name,extra", [("set-by-all", "ten", ["--epi1", "0.001"]),
                                             ("set-by-all", "one", ["--epi1", "0.01"]),  # a part of no row
                                             ("set-by-set", "overlap", ["--epi1", "0.01"]),
                                             ("set-by-set", "identical", ["--epi1", "0.01"])])
def test_parts_of_a_set_scan_merge_to_one_run(study, tmp_path, n, mode, name, extra):
    """Each part screens its share of the rectangle's rows; merged, the files are one run's, byte for byte."""
    prefix, paths = study
    flags = ["--set", paths[name], f"--{mode}", *extra]
    whole = _scan(prefix, tmp_path / "whole", *flags)
    dirs = _parts(prefix, tmp_path, n, *flags, parallel=(n == 3))
    merged = tmp_path / "merged"
    assert gboost_main(["merge", *dirs, "--out", str(merged), "--quiet"]) == 0
    for f in ("pairs.epi.cc", "pairs.epi.cc.summary", "pairs.tsv", "marginal.tsv"):
        assert read(merged / f) == read(whole / f), f


@pytest.mark.slow
def test_parts_of_other_sets_or_of_a_plain_scan_are_refused(study, tmp_path, capsys):
    prefix, paths = study
    assert_foreign_set_parts_refused(lambda folder, *flags: _parts(prefix, folder, 2, *flags), paths, tmp_path, capsys)
