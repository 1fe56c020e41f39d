"""The covariate-adjusted test of every pair (gboost/engines/qt_covar.py) against NumPy's lstsq on
each pair's complete cases, and the adjusted screen against the adjusted tests of every pair."""
from __future__ import annotations

import numpy as np
import pytest

from gboost.data.study import study_from_genotypes
from gboost.engines.qt_covar import CovariateScreen, adjusted_pairs, covariate_planes
from gboost.engines.qt_cpu import QTCPUEngine, qt_planes
from gboost.pipeline.qt_scan import QTParams, run_qt_scan
from gboost.stats.qt_covar import t_p
from tests.helpers import qt_study_of


def study_with_covariates(rng, p=20, n=301, missing=0.04, cov_missing=0.03, flip=None, mean=50.0):
    maf = rng.uniform(0.05, 0.5, p)
    g = rng.binomial(2, maf[:, None], size=(p, n)).astype(np.int8)
    g[rng.random((p, n)) < missing] = -1
    # covariates on scales far apart (age in years, a PC, sex 1/2), some missing
    cov = np.column_stack([rng.normal(50, 12, n), rng.normal(0, 0.01, n), rng.integers(1, 3, n).astype(float)])
    cov[rng.random(cov.shape) < cov_missing] = np.nan
    dose0 = np.where(g[0] >= 0, g[0], 0).astype(float)
    y = mean + 0.03 * np.nan_to_num(cov[:, 0]) + rng.standard_normal(n) + 0.4 * dose0
    st, dose = qt_study_of(g, y, flip)
    return st, dose, y, cov


def lstsq_adjusted(a, b, y, cov):
    """y ~ 1 + covariates + a + b + a*b on the complete cases by NumPy: (beta, se, t^2, df, N),
    df = N - rank (lstsq's); [(X'X)^-1]_ab = 1 / the residual sum of squares of ab on the other
    columns (lstsq again: stable where covariates are collinear)."""
    ok = (a >= 0) & (b >= 0) & np.isfinite(cov).all(axis=1)
    a, b, yy, c = a[ok].astype(float), b[ok].astype(float), y[ok], cov[ok]
    X = np.column_stack([np.ones(ok.sum()), c, a, b, a * b])
    beta, _, rank, _ = np.linalg.lstsq(X, yy, rcond=None)
    rss = float(((yy - X @ beta) ** 2).sum())
    df = len(yy) - rank
    coef, *_ = np.linalg.lstsq(X[:, :-1], X[:, -1], rcond=None)
    with np.errstate(divide="ignore", invalid="ignore"):  # (a degenerate pair: inf, as NaN below)
        var = rss / df / float(((X[:, -1] - X[:, :-1] @ coef) ** 2).sum())
    return beta[-1], np.sqrt(var), beta[-1] ** 2 / var, df, int(ok.sum())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_adjusted_test_of_random_pairs_equals_lstsq_on_the_complete_cases(seed):
    rng = np.random.default_rng(seed)
    flip = rng.random(20) < 0.3
    st, dose, y, cov = study_with_covariates(rng, flip=flip)
    cp = covariate_planes(qt_planes(st), cov)
    i = rng.integers(0, 19, 40)
    j = np.array([rng.integers(a + 1, 20) for a in i])
    beta, se, stat, p, n, df = adjusted_pairs(cp, i, j)
    for k in range(len(i)):
        want = lstsq_adjusted(dose[i[k]], dose[j[k]], y, cov)
        np.testing.assert_allclose([beta[k], se[k], stat[k]], want[:3], rtol=1e-10)
        assert (df[k], n[k]) == want[3:]
        np.testing.assert_allclose(p[k], t_p(np.array([want[2]]), np.array([want[3]]), np.array([True]))[0],
                                   rtol=1e-10)


def test_collinear_and_constant_covariates_leave_the_fit_and_its_df_to_the_rank():
    rng = np.random.default_rng(7)
    st, dose, y, cov = study_with_covariates(rng, p=6, n=200)
    cov = np.column_stack([cov, 3.0 * np.nan_to_num(cov[:, 0], nan=1.0) + 2.0, np.full(200, 4.0)])  # age again; constant
    cov[np.isnan(cov[:, 0]), 3] = np.nan
    cp = covariate_planes(qt_planes(st), cov)
    assert cp.n_covariate_columns == 4  # intercept + 3 covariates: the copy and the constant drop out
    i, j = np.array([0, 1, 2]), np.array([3, 4, 5])
    beta, se, stat, p, n, df = adjusted_pairs(cp, i, j)
    for k in range(3):
        want = lstsq_adjusted(dose[i[k]], dose[j[k]], y, cov)
        np.testing.assert_allclose([beta[k], se[k], stat[k]], want[:3], rtol=1e-10)
        assert (df[k], n[k]) == want[3:]


def test_a_covariate_constant_on_the_pairs_complete_cases_drops_out_of_that_pair_only():
    rng = np.random.default_rng(8)
    st, dose, y, cov = study_with_covariates(rng, p=4, n=150, missing=0.0, cov_missing=0.0)
    # SNP 0 missing wherever sex is 2: on pairs with SNP 0, sex is constant
    geno = dose.astype(np.int8)
    geno[0, cov[:, 2] == 2] = -1
    st = study_from_genotypes(geno, np.zeros(150, bool))
    st.trait, st.a1_flip = y, np.zeros(4, bool)
    cp = covariate_planes(qt_planes(st), cov)
    beta, se, stat, p, n, df = adjusted_pairs(cp, np.array([0, 1]), np.array([1, 2]))
    for k, (a, b) in enumerate([(0, 1), (1, 2)]):
        want = lstsq_adjusted(geno[a].astype(np.int64), geno[b].astype(np.int64), y, cov)
        np.testing.assert_allclose([beta[k], se[k], stat[k]], want[:3], rtol=1e-9)
        assert (df[k], n[k]) == want[3:]


def test_degenerate_pairs_fail():
    rng = np.random.default_rng(9)
    st, dose, y, cov = study_with_covariates(rng, p=4, n=120, missing=0.0, cov_missing=0.0)
    geno = dose.astype(np.int8)
    geno[1] = 1  # monomorphic: a is the intercept
    geno[3] = geno[2]  # b = a: ab's column is a^2, and b collinear with a
    st = study_from_genotypes(geno, np.zeros(120, bool))
    st.trait, st.a1_flip = y, np.zeros(4, bool)
    cp = covariate_planes(qt_planes(st), cov)
    beta, se, stat, p, n, df = adjusted_pairs(cp, np.array([0, 2, 0]), np.array([1, 3, 2]))
    assert np.isnan(stat[:2]).all() and np.isnan(p[:2]).all()
    assert np.isfinite(stat[2])


def brute_adjusted_scan(dose, y, cov, epi1, epi2):
    """Every pair's adjusted test by lstsq: survivors (P <= epi1), N_SIG (P <= epi2), fails, best."""
    from gboost.stats.qt_covar import t_thresholds

    p = len(dose)
    stat = np.full((p, p), np.nan)
    dfs = np.zeros((p, p), np.int64)
    for i in range(p):
        for j in range(i + 1, p):
            _, _, stat[i, j], dfs[i, j], _ = lstsq_adjusted(dose[i], dose[j], y, cov)
    return stat, dfs


def test_the_adjusted_screen_is_the_adjusted_test_of_every_pair():
    rng = np.random.default_rng(11)
    st, dose, y, cov = study_with_covariates(rng, p=16, n=260)
    epi1, epi2 = 0.05, 0.2
    res = run_qt_scan(st, QTParams(epi1=epi1, epi2=epi2, device="cpu"), covariates=(cov, ["age", "pc", "sex"]))
    stat, dfs = brute_adjusted_scan(dose, y, cov, epi1, epi2)
    iu = np.triu_indices(16, 1)
    pv = t_p(stat[iu], dfs[iu], np.isfinite(stat[iu]))
    want = set(zip(iu[0][pv <= epi1].tolist(), iu[1][pv <= epi1].tolist()))
    got = set(zip(res.screened.i.tolist(), res.screened.j.tolist()))
    assert got == want and len(want) > 0
    np.testing.assert_allclose(res.screened.adj[2], stat[res.screened.i, res.screened.j], rtol=1e-10)
    sig = np.zeros(16, np.int64)
    for a, b, pp in zip(iu[0], iu[1], pv):
        if pp <= epi2:
            sig[a] += 1
            sig[b] += 1
    np.testing.assert_array_equal(res.summary.n_sig, sig)
    full = np.where(np.isnan(stat), -1, stat)
    full = np.maximum(full, full.T)
    np.testing.assert_allclose(res.summary.best, full.max(axis=1), rtol=1e-10)
    rep = res.reported
    assert (np.diff(rep.adj[3]) >= 0).all() and len(rep) == len(want)


def test_covariates_on_the_gpu_engine_are_refused_and_auto_takes_the_cpu():
    rng = np.random.default_rng(12)
    st, dose, y, cov = study_with_covariates(rng, p=6, n=100)

    class FakeGpu:
        name = "gpu"

    with pytest.raises(ValueError, match="CPU engine"):
        run_qt_scan(st, QTParams(device="gpu"), covariates=(cov, ["a", "b", "c"]), engine=FakeGpu())
    res = run_qt_scan(st, QTParams(device="cpu", epi1=1.0), covariates=(cov, ["a", "b", "c"]),
                      engine=QTCPUEngine(1))
    assert len(res.screened) == 15 and res.test == "linear+covariates"
    assert CovariateScreen  # (the engine's input, built by run_qt_scan)


def test_a_pair_masked_by_a_covariate_is_found_with_it_and_not_without():
    """y = 10 + 0.5 ab + c + e with the covariate c = -0.5 ab + u: the trait is u + e, independent
    of the genotypes, so the unadjusted test sees nothing; adjusted for c the a*b effect is plain."""
    rng = np.random.default_rng(21)
    p, n = 30, 1500
    g = rng.binomial(2, 0.3, size=(p, n)).astype(np.int8)
    ab = (g[3] * g[17]).astype(float)
    c = -0.5 * ab + rng.standard_normal(n)
    y = 10.0 + 0.5 * ab + c + rng.standard_normal(n)
    g[rng.random((p, n)) < 0.01] = -1  # missing calls after the trait, as in a real study
    st = study_from_genotypes(g, np.zeros(n, bool))
    st.trait, st.a1_flip = y, np.zeros(p, bool)
    params = QTParams(epi1=1e-6, device="cpu")
    plain = run_qt_scan(st, params)
    assert (3, 17) not in set(zip(plain.reported.i.tolist(), plain.reported.j.tolist()))
    adjusted = run_qt_scan(st, params, covariates=(c[:, None], ["c"]))
    rep = adjusted.reported
    assert (int(rep.i[0]), int(rep.j[0])) == (3, 17) and rep.adj[3][0] < 1e-10
    assert rep.adj[0][0] == pytest.approx(0.5, abs=0.15)
    # the screen found it: the summary's best partner of both SNPs is the other
    assert adjusted.summary.best_partner[3] == 17 and adjusted.summary.best_partner[17] == 3
