"""Covariate-adjusted interaction tests against an independent logistic fit (scipy.optimize)."""
import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps

from gboost.cli import main
from gboost.stats.covariates import adjusted_test, adjusted_tests, read_covariates
from gboost.data.simulate import PlantedPair, simulate_study
from gboost.data.study import study_from_genotypes
from tests.helpers import random_genotypes


def reference_loglik_max(X, y):
    def nll(b):
        eta = X @ b
        return -np.sum(y * eta - np.logaddexp(0, eta))

    def grad(b):
        mu = 1 / (1 + np.exp(-(X @ b)))
        return -X.T @ (y - mu)

    best = optimize.minimize(nll, np.zeros(X.shape[1]), jac=grad, method="BFGS", options={"gtol": 1e-10, "maxiter": 5000})
    return -best.fun


def reference(g1, g2, y, cov):
    ok = (g1 >= 0) & (g2 >= 0)
    g1, g2, y, cov = g1[ok], g2[ok], y[ok], cov[ok]
    one = np.ones((len(y), 1))
    lv1, lv2 = sorted(set(g1)), sorted(set(g2))
    cells = sorted(set(zip(g1, g2)))
    red = np.column_stack([one, cov] + [(g1 == a) * 1.0 for a in lv1[1:]] + [(g2 == b) * 1.0 for b in lv2[1:]])
    full = np.column_stack([one, cov] + [((g1 == a) & (g2 == b)) * 1.0 for a, b in cells[1:]])
    stat = 2 * (reference_loglik_max(full, y) - reference_loglik_max(red, y))
    df = (len(cells) - 1) - (len(lv1) - 1) - (len(lv2) - 1)
    return stat, df, sps.chi2.sf(stat, df)


@pytest.mark.parametrize("empty", [False, True])
def test_adjusted_statistic_equals_reference_fit(rng, empty):
    n = 600
    g, is_case = random_genotypes(rng, 6, n, missing=0.02)
    cov = np.column_stack([rng.normal(size=n), rng.integers(0, 2, n)]).astype(float)
    logit = -0.2 + 0.8 * cov[:, 0] + 0.5 * (g[0] == 1) * (g[1] == 2)
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(float)
    if empty:  # empty cells: SNP1 type 2 never with SNP2 type 0, and SNP1 lacks type 1 with type 2
        g[1][(g[0] == 2) & (g[1] == 0)] = 1
        g[1][(g[0] == 1) & (g[1] == 2)] = 1
    got = adjusted_test(g[0], g[1], y, cov)
    ref = reference(g[0], g[1], y, cov)
    assert got[1] == ref[1]
    assert got[0] == pytest.approx(ref[0], rel=1e-5, abs=1e-6)
    assert got[2] == pytest.approx(ref[2], rel=1e-4)


def test_cli_adds_adjusted_columns(tmp_path):
    prefix = str(tmp_path / "s")
    sim = simulate_study(40, 300, 300, seed=4, planted=[PlantedPair(2, 30, "threshold", 20.0, 0.3, 0.3)])
    sim.write(prefix)
    rng = np.random.default_rng(0)
    with open(tmp_path / "cov.txt", "w") as f:
        f.write("FID IID age pc1\n")
        for fid, iid in zip(sim.samples.fid, sim.samples.iid):
            f.write(f"{fid} {iid} {rng.integers(20, 80)} {rng.normal():.4f}\n")
    out = tmp_path / "o"
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--covar", str(tmp_path / "cov.txt"),
                 "--covar-name", "pc1", "--quiet", "--device", "cpu"]) == 0
    rows = [r.split("\t") for r in open(out / "pairs.tsv").read().splitlines()]
    assert rows[0][-3:] == ["STAT_ADJ", "DF_ADJ", "P_ADJ"] and len(rows) >= 2
    top = dict(zip(rows[0], rows[1]))
    assert {top["SNP1"], top["SNP2"]} == {"snp3", "snp31"} and float(top["P_ADJ"]) < 1e-6
    # The adjusted statistic of the top pair equals the reference fit with the same covariate.
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study

    st = load_study(open_bfile(prefix))
    cov, names = read_covariates(tmp_path / "cov.txt", st, ["pc1"])
    s, d, p = adjusted_tests(st, np.array([2]), np.array([30]), cov)
    assert float(top["STAT_ADJ"]) == pytest.approx(s[0], rel=1e-7)
    assert main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o2"), "--covar", str(tmp_path / "cov.txt"),
                 "--covar-name", "bmi", "--quiet"]) == 2


def test_three_df_tail_matches_scipy():
    from gboost.stats.covariates import _chi2_sf_3

    for x in (0.1, 1.0, 7.8, 30.0, 200.0):
        assert _chi2_sf_3(x) == pytest.approx(sps.chi2.sf(x, 3), rel=1e-10)
