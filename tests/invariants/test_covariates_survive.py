"""--covar survives --part + merge and Dask, for both tests: the merged pairs.tsv equals one run's
with --covar, its STAT_ADJ/DF_ADJ/P_ADJ (for a quantitative trait every pair's adjusted test:
.epi.qt, its summary and pairs.tsv's BETA_ADJ..DF_ADJ) included, and run.json names the
covariates; parts of scans with other covariates do not merge."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gboost.cli import main
from gboost.data.simulate import PlantedPair, simulate_qt_study, simulate_study

CC_FILES = ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv")
QT_FILES = ("pairs.tsv", "pairs.epi.qt", "pairs.epi.qt.summary", "marginal.tsv")


def _write_covar(path, fam, seed, names=("age", "pc1")):
    rng = np.random.default_rng(seed)
    rows = [line.split() for line in open(fam)]
    with open(path, "w") as f:
        f.write("FID IID " + " ".join(names) + "\n")
        for k, r in enumerate(rows):
            age = "NA" if k % 37 == 5 else str(int(rng.integers(20, 80)))
            f.write(f"{r[0]} {r[1]} {age} {rng.normal():.4f}\n")
    return str(path)


@pytest.fixture(scope="module")
def cc(tmp_path_factory):
    d = tmp_path_factory.mktemp("cccov")
    prefix = str(d / "s")
    simulate_study(60, 250, 250, seed=7, missing_rate=0.01,
                   planted=[PlantedPair(2, 30, "threshold", 20.0, 0.3, 0.3), PlantedPair(10, 50, "threshold", 8.0)]
                   ).write(prefix)
    cov = _write_covar(d / "cov.txt", prefix + ".fam", 1)
    one = d / "one"
    assert main(["scan", "--bfile", prefix, "--out", str(one), "--device", "cpu", "--quiet", "--epi1", "1e-3",
                 "--covar", cov, "--calibration-pairs", "0"]) == 0
    return prefix, cov, one


def _files(d, names):
    return {n: (d / n).read_bytes() for n in names}


@pytest.mark.parametrize("n", [2, 3])
def test_case_control_parts_merged_keep_the_adjusted_tests(cc, tmp_path, n):
    prefix, cov, one = cc
    head = (one / "pairs.tsv").read_text().splitlines()[0].split("\t")
    assert head[-3:] == ["STAT_ADJ", "DF_ADJ", "P_ADJ"]  # (the reference has them)
    parts = []
    for k in range(1, n + 1):
        d = tmp_path / f"p{k}"
        assert main(["scan", "--bfile", prefix, "--out", str(d), "--device", "cpu", "--quiet", "--epi1", "1e-3",
                     "--covar", cov, "--calibration-pairs", "0", "--part", f"{k}/{n}"]) == 0
        parts.append(str(d))
    merged = tmp_path / "merged"
    assert main(["merge", *parts, "--out", str(merged), "--quiet"]) == 0
    assert _files(merged, CC_FILES) == _files(one, CC_FILES)
    assert json.loads((merged / "run.json").read_text())["covariates"] == ["age", "pc1"]


def test_case_control_parts_with_other_covariates_do_not_merge(cc, tmp_path, capsys):
    prefix, cov, _ = cc
    other = _write_covar(tmp_path / "other.txt", prefix + ".fam", 2)
    for k, c in ((1, cov), (2, other)):
        assert main(["scan", "--bfile", prefix, "--out", str(tmp_path / f"p{k}"), "--device", "cpu", "--quiet",
                     "--epi1", "1e-3", "--covar", c, "--calibration-pairs", "0", "--part", f"{k}/2"]) == 0
    assert main(["scan", "--bfile", prefix, "--out", str(tmp_path / "bare2"), "--device", "cpu", "--quiet",
                 "--epi1", "1e-3", "--calibration-pairs", "0", "--part", "2/2"]) == 0
    capsys.readouterr()
    for second in ("p2", "bare2"):
        assert main(["merge", str(tmp_path / "p1"), str(tmp_path / second), "--out", str(tmp_path / f"m{second}"),
                     "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "different scan" in err[0]


@pytest.mark.slow  # a local Dask cluster's start: about 20 s, the fast lane's longest test by far
def test_case_control_on_dask_keeps_the_adjusted_tests(cc, tmp_path):
    pytest.importorskip("distributed")
    prefix, cov, one = cc
    out = tmp_path / "dask"
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "1e-3",
                 "--covar", cov, "--calibration-pairs", "0", "--dask", "local:1"]) == 0
    assert _files(out, CC_FILES) == _files(one, CC_FILES)
    parts = []
    for k in (1, 2):  # a part on Dask too
        d = tmp_path / f"dp{k}"
        assert main(["scan", "--bfile", prefix, "--out", str(d), "--device", "cpu", "--quiet", "--epi1", "1e-3",
                     "--covar", cov, "--calibration-pairs", "0", "--part", f"{k}/2"]
                    + (["--dask", "local:1"] if k == 1 else [])) == 0
        parts.append(str(d))
    assert main(["merge", *parts, "--out", str(tmp_path / "dm"), "--quiet"]) == 0
    assert _files(tmp_path / "dm", CC_FILES) == _files(one, CC_FILES)


@pytest.fixture(scope="module")
def qt(tmp_path_factory):
    d = tmp_path_factory.mktemp("qtcov")
    prefix = str(d / "q")
    simulate_qt_study(50, 240, seed=3, missing_rate=0.02, effects=[(2, 30, 0.6), (8, 40, 0.5)]).write(prefix)
    cov = _write_covar(d / "cov.txt", prefix + ".fam", 5)
    one = d / "one"
    assert main(["scan", "--bfile", prefix, "--out", str(one), "--device", "cpu", "--quiet", "--epi1", "0.05",
                 "--covar", cov]) == 0
    return prefix, cov, one


@pytest.mark.parametrize("n,epi1", [(2, "0.05"), (3, "0.05"), (7, "1")])
def test_quantitative_parts_merged_keep_the_adjusted_scan(qt, tmp_path, n, epi1):
    prefix, cov, one = qt
    if epi1 != "0.05":
        one = tmp_path / "one"
        assert main(["scan", "--bfile", prefix, "--out", str(one), "--device", "cpu", "--quiet", "--epi1", epi1,
                     "--covar", cov]) == 0
    assert "P_ADJ" in (one / "pairs.tsv").read_text().splitlines()[0].split("\t")
    plain = tmp_path / "plain"
    assert main(["scan", "--bfile", prefix, "--out", str(plain), "--device", "cpu", "--quiet", "--epi1", epi1]) == 0
    for name in ("pairs.epi.qt", "pairs.epi.qt.summary"):  # (so a part that lost its covariates is seen)
        assert (one / name).read_bytes() != (plain / name).read_bytes()
    parts = []
    for k in range(1, n + 1):
        d = tmp_path / f"p{k}"
        assert main(["scan", "--bfile", prefix, "--out", str(d), "--device", "cpu", "--quiet", "--epi1", epi1,
                     "--covar", cov, "--part", f"{k}/{n}"]) == 0
        parts.append(str(d))
    merged = tmp_path / "merged"
    assert main(["merge", *parts, "--out", str(merged), "--quiet"]) == 0
    assert _files(merged, QT_FILES) == _files(one, QT_FILES)
    run = json.loads((merged / "run.json").read_text())
    assert run["covariates"] == ["age", "pc1"] and run["test"] == "linear+covariates"


def test_quantitative_parts_with_and_without_covariates_do_not_merge(qt, tmp_path, capsys):
    prefix, cov, _ = qt
    assert main(["scan", "--bfile", prefix, "--out", str(tmp_path / "p1"), "--device", "cpu", "--quiet",
                 "--epi1", "0.05", "--covar", cov, "--part", "1/2"]) == 0
    assert main(["scan", "--bfile", prefix, "--out", str(tmp_path / "p2"), "--device", "cpu", "--quiet",
                 "--epi1", "0.05", "--part", "2/2"]) == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "p1"), str(tmp_path / "p2"), "--out", str(tmp_path / "m"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "different scan" in err[0]
