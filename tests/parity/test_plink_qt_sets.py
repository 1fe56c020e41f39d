"""Candidate-set scans of a quantitative trait against plink1.9: ``--set`` / ``--make-set`` with
``--epistasis set-by-all`` and ``set-by-set`` (PLINK's linear test over the rectangle).

gboost scans an LD-rich QT study with missing calls, alleles in both orders, a duplicated SNP (its
pairs fail), samples with a missing trait or unknown sex and an X chromosome (skipped), with the same
set file and flags as plink1.9; ``.epi.qt`` and its summary must equal PLINK's byte for byte: sets of
1, 10 and many SNPs, overlapping sets, a set file's two sets identical, ``--make-set`` ranges, with
``--maf`` and ``--epi1`` (at 0.05 and 1 enough rows that the rows themselves are compared).

plink1.9's QT ``set-by-set`` of one set is broken (it prints an overflowed count of valid tests and a
summary of uninitialised values, the X chromosome's skipped SNPs among its rows), so that case is held
to gboost's plain scan of the set's SNPs instead: the pairs within one set are that triangle. The
covariate-adjusted test (no plink1.9 equivalent) is held to the plain adjusted scan's pairs; the GPU
engine's tile math (on numpy) to the CPU engine's; parts merged to one run.
"""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from gboost.cli import main as gboost_main
from gboost.data.simulate import simulate_qt_study, write_bfile
from tests.helpers import NO_PLINK, PLINK, assert_foreign_set_parts_refused, read, write_set_files

FILES = ("pairs.epi.qt", "pairs.epi.qt.summary", "pairs.tsv", "marginal.tsv")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qtsets")
    st = simulate_qt_study(150, 500, seed=11, missing_rate=0.02, effects=[(9, 120, 0.45), (30, 70, 0.4)],
                           ld_block=20, ld_rho=0.97, chromosomes=["1", "2", "X"], missing_trait=0.03,
                           unknown_sex=0.02)
    g, v = st.genotypes.copy(), st.variants
    flip = np.random.default_rng(11).random(len(g)) < 0.5  # the .bim's A1 is the major allele here
    g[flip] = np.where(g[flip] >= 0, 2 - g[flip], -1)
    v.a1, v.a2 = np.where(flip, v.a2, v.a1), np.where(flip, v.a1, v.a2)
    g[13] = g[12]  # a duplicated SNP: PLINK fails its pair
    prefix = str(folder / "qt")
    write_bfile(prefix, g, v, st.samples)
    paths = write_set_files(folder, prefix, ten_extra=(12, 13))  # "ten" holds the duplicated SNP and its copy
    return prefix, paths


def _gboost(prefix, out, *flags):
    assert gboost_main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", *flags]) == 0
    return out


def _plink(prefix, out, mode, set_flag, set_path, extra=()):
    subprocess.run([PLINK, "--bfile", prefix, "--epistasis", mode, set_flag, set_path, "--out", str(out),
                    "--threads", "2", "--silent", *extra], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return out


CASES = [
    ("set-by-all", "--set", "one", ["--epi1", "0.01"]),
    ("set-by-all", "--set", "ten", ["--epi1", "0.001", "--maf", "0.05"]),
    ("set-by-all", "--set", "many", []),
    ("set-by-all", "--set", "many", ["--maf", "0.1", "--epi1", "0.01"]),
    ("set-by-set", "--set", "overlap", ["--epi1", "0.01"]),
    ("set-by-set", "--set", "identical", ["--epi1", "0.01", "--epi2", "0.1"]),
    ("set-by-set", "--make-set", "ranges", ["--epi1", "0.01"]),
    # loose enough that rows are printed: the rows themselves byte-equal, not only the summaries
    ("set-by-all", "--set", "many", ["--epi1", "0.05"]),
    ("set-by-all", "--set", "ten", ["--epi1", "0.05", "--epi2", "0.2"]),
    ("set-by-set", "--set", "overlap", ["--epi1", "0.05"]),
    ("set-by-set", "--make-set", "ranges", ["--epi1", "1"]),  # every pair, failed ones as nan rows
]


@pytest.mark.parametrize("mode,flag,name,extra", CASES, ids=[f"{c[0]}-{c[2]}-{'-'.join(c[3])}" for c in CASES])
@pytest.mark.plink
@pytest.mark.slow
@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
def test_qt_set_scans_equal_plinks(study, tmp_path, mode, flag, name, extra):
    prefix, paths = study
    out = _gboost(prefix, tmp_path / "gboost", flag, paths[name], f"--{mode}", *extra)
    plink = _plink(prefix, tmp_path / "plink", mode, flag, paths[name], extra)
    for ours, theirs in (("pairs.epi.qt", ".epi.qt"), ("pairs.epi.qt.summary", ".epi.qt.summary")):
        assert (out / ours).read_bytes() == open(f"{plink}{theirs}", "rb").read(), ours
    rows = read(f"{plink}.epi.qt").splitlines()[1:]
    epi1 = float(extra[extra.index("--epi1") + 1]) if "--epi1" in extra else 1e-4
    if epi1 >= 0.05:
        assert len(rows) >= 10
    # the valid tests PLINK counts are the rectangle's (a pair of two set SNPs twice, each as SNP1)
    n_plink = int(read(f"{plink}.log").split(" valid test")[0].split()[-1])
    run = json.loads(read(out / "run.json"))
    assert run["counts"]["valid_tests"] == n_plink
    assert run["sets"]["mode"] == mode


@pytest.mark.plink
@pytest.mark.slow
@pytest.mark.skipif(PLINK is None, reason=NO_PLINK)
def test_epi1_1_writes_failed_pairs_of_the_duplicated_snp_as_plink_does(study, tmp_path):
    prefix, paths = study
    out = _gboost(prefix, tmp_path / "gboost", "--set", paths["ten"], "--set-by-all", "--epi1", "1")
    plink = _plink(prefix, tmp_path / "plink", "set-by-all", "--set", paths["ten"], ["--epi1", "1"])
    mine = read(out / "pairs.epi.qt")
    assert mine == read(f"{plink}.epi.qt")
    assert read(out / "pairs.epi.qt.summary") == read(f"{plink}.epi.qt.summary")
    assert any(line.split()[-1] == "nan" for line in mine.splitlines()[1:])


def test_one_set_set_by_set_is_the_plain_scan_of_its_snps(study, tmp_path):
    """The pairs within one set are the triangle of its SNPs: the files of a plain scan of them."""
    prefix, paths = study
    got = _gboost(prefix, tmp_path / "set", "--set", paths["within"], "--set-by-set", "--epi1", "0.05")
    ids = read(paths["within"]).split()[1:-1]
    (tmp_path / "ids.txt").write_text("\n".join(ids) + "\n")
    plain = _gboost(prefix, tmp_path / "plain", "--extract", str(tmp_path / "ids.txt"), "--epi1", "0.05")
    for f in FILES:
        assert read(got / f) == read(plain / f), f
    assert len(read(got / "pairs.epi.qt").splitlines()) > 10


def _rows(path):
    """.epi.qt's rows as {(SNP1, SNP2): (BETA_INT, STAT, P)} (floats; nan for failed pairs)."""
    out = {}
    for line in read(path).splitlines()[1:]:
        f = line.split()
        out[(f[1], f[3])] = tuple(float(x) for x in f[4:7])
    return out


def test_marginal_lists_each_snp_once_as_a_plain_scan(study, tmp_path):
    prefix, paths = study
    got = _gboost(prefix, tmp_path / "set", "--set", paths["many"], "--set-by-all")
    plain = _gboost(prefix, tmp_path / "plain")
    assert read(got / "marginal.tsv") == read(plain / "marginal.tsv")


@pytest.mark.parametrize("mode,name", [("set-by-all", "ten"), ("set-by-set", "overlap")])
def test_covariate_adjusted_set_scan_tests_the_rectangles_pairs_as_the_plain_adjusted_scan(study, tmp_path, mode,
                                                                                          name):
    """With --covar every pair of the rectangle gets the adjusted test, the same as the plain adjusted
    scan gives that pair (either SNP first); the summary is the rectangle rows' own."""
    prefix, paths = study
    rng = np.random.default_rng(4)
    fam = [line.split() for line in open(prefix + ".fam", encoding="utf-8")]
    cov = tmp_path / "cov.txt"
    cov.write_text("FID IID age batch\n" + "".join(
        f"{f[0]} {f[1]} {rng.normal(50, 9):.3f} {'-9' if rng.random() < 0.03 else rng.integers(0, 3)}\n" for f in fam))
    flags = ["--covar", str(cov), "--epi1", "1"]
    got = _gboost(prefix, tmp_path / "set", "--set", paths[name], f"--{mode}", *flags)
    plain = _rows(_gboost(prefix, tmp_path / "plain", *flags) / "pairs.epi.qt")
    rect = _rows(got / "pairs.epi.qt")
    assert len(rect) == json.loads(read(got / "run.json"))["counts"]["pairs"] > 100
    per_row: dict = {}
    for (a, b), values in rect.items():
        want = plain.get((a, b), plain.get((b, a)))
        np.testing.assert_allclose(values, want, rtol=1e-9, atol=0)
        per_row.setdefault(a, []).append((values[1], b))
    summary = [line.split() for line in read(got / "pairs.epi.qt.summary").splitlines()[1:]]
    assert [s[1] for s in summary] == list(per_row)  # the rows, in file order
    for s in summary:
        valid = [(z, b) for z, b in per_row[s[1]] if not np.isnan(z)]
        assert int(s[3]) == len(valid)
        best = max(valid, key=lambda x: x[0])  # (ties: the earliest column, as max keeps the first)
        assert (float(s[5]), s[7]) == (pytest.approx(best[0], rel=1e-3), best[1])


@pytest.mark.parametrize("mode,name", [("set-by-all", "many"), ("set-by-set", "overlap"), ("set-by-all", "one")])
def test_gpu_engines_tile_math_gives_the_cpu_engines_set_scan(study, mode, name):
    """The GPU engine on the rectangle's tiles (its tile math on numpy, small tiles: rows beside their
    own column cut out) gives the CPU engine's rows, summary and counts."""
    from gboost.data.candidates import read_set_file, rectangle_study
    from gboost.data.inputs import open_input
    from gboost.data.load import load_study
    from gboost.engines.qt_cpu import QTCPUEngine
    from gboost.engines.qt_gpu import QTGPUEngine
    from gboost.outputs.qt_results import render_qt_outputs
    from gboost.pipeline.qt_scan import QTParams, run_qt_scan

    prefix, paths = study
    st = rectangle_study(load_study(open_input(bfile=prefix)), read_set_file(paths[name]), mode)
    params = QTParams(epi1=0.05, epi2=0.2)
    want = run_qt_scan(st, params, engine=QTCPUEngine())
    got = run_qt_scan(st, params, engine=QTGPUEngine(xp=np, tile=7, gpus=[0, 1]))
    a, b = render_qt_outputs(want), render_qt_outputs(got)
    for f in FILES:
        assert a[f] == b[f], f
    assert got.n_valid == want.n_valid and len(want.screened) >= (1 if name == "one" else 10)


@pytest.mark.parametrize("mode,name", [("set-by-all", "ten"), ("set-by-set", "overlap")])
def test_gpu_engines_parts_of_a_set_scan_merge_to_the_cpu_engines_run(study, tmp_path, mode, name):
    """Each part of the GPU engine's set scan (its tile math on numpy) screens its rows of the
    rectangle; merged, the CPU engine's whole run, byte for byte."""
    from gboost.data.candidates import read_set_file, rectangle_study
    from gboost.data.inputs import open_input
    from gboost.data.load import load_study
    from gboost.engines.qt_cpu import QTCPUEngine
    from gboost.engines.qt_gpu import QTGPUEngine
    from gboost.outputs.qt_results import render_qt_outputs
    from gboost.pipeline.parts import merge_parts, write_qt_part
    from gboost.pipeline.qt_scan import QTParams, run_qt_scan

    prefix, paths = study
    st = rectangle_study(load_study(open_input(bfile=prefix)), read_set_file(paths[name]), mode)
    want = render_qt_outputs(run_qt_scan(st, QTParams(epi1=0.05), engine=QTCPUEngine()))
    dirs = []
    for k in (1, 2, 3):
        part = run_qt_scan(st, QTParams(epi1=0.05, part=(k, 3)), engine=QTGPUEngine(xp=np, tile=5))
        dirs.append(write_qt_part(tmp_path / f"p{k}", part))
    got = render_qt_outputs(merge_parts(dirs))
    for f in FILES:
        assert got[f] == want[f], f


def _parts(prefix, folder, n, *flags):
    return [str(_gboost(prefix, folder / f"part{k}", *flags, "--part", f"{k}/{n}")) for k in range(1, n + 1)]


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("mode,name,extra", [("set-by-all", "ten", ["--epi1", "0.05"]),
                                             ("set-by-all", "one", ["--epi1", "0.05"]),  # a part of no row
                                             ("set-by-set", "overlap", ["--epi1", "0.05"]),
                                             ("set-by-set", "identical", ["--epi1", "1"])])
def test_parts_of_a_qt_set_scan_merge_to_one_run(study, tmp_path, n, mode, name, extra):
    prefix, paths = study
    flags = ["--set", paths[name], f"--{mode}", *extra]
    whole = _gboost(prefix, tmp_path / "whole", *flags)
    merged = tmp_path / "merged"
    assert gboost_main(["merge", *_parts(prefix, tmp_path, n, *flags), "--out", str(merged), "--quiet"]) == 0
    for f in FILES:
        assert read(merged / f) == read(whole / f), f
    a, b = (json.loads(read(d / "run.json"))["counts"] for d in (merged, whole))
    assert a["valid_tests"] == b["valid_tests"] and a["pairs"] == b["pairs"]


@pytest.mark.slow
def test_parts_of_an_adjusted_qt_set_scan_merge_to_one_run(study, tmp_path):
    prefix, paths = study
    fam = [line.split() for line in open(prefix + ".fam", encoding="utf-8")]
    rng = np.random.default_rng(8)
    cov = tmp_path / "cov.txt"
    cov.write_text("FID IID c1\n" + "".join(f"{f[0]} {f[1]} {rng.normal():.4f}\n" for f in fam))
    flags = ["--set", paths["overlap"], "--set-by-set", "--epi1", "0.05", "--covar", str(cov)]
    whole = _gboost(prefix, tmp_path / "whole", *flags)
    merged = tmp_path / "merged"
    assert gboost_main(["merge", *_parts(prefix, tmp_path, 2, *flags), "--out", str(merged), "--quiet"]) == 0
    for f in FILES:
        assert read(merged / f) == read(whole / f), f


@pytest.mark.slow
def test_parts_of_other_sets_or_of_a_plain_qt_scan_are_refused(study, tmp_path, capsys):
    prefix, paths = study
    assert_foreign_set_parts_refused(lambda folder, *flags: _parts(prefix, folder, 2, *flags), paths, tmp_path, capsys)
