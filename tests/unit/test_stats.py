"""Statistics of docs/DESIGN.md §3.3 checked against independent computations."""
import math

import numpy as np
import pytest
from scipy import stats as sps

from gboost.stats.boost import ipf_stat, ksa_stat, plink_df
from gboost.stats.exact import exact_tests
from gboost.stats.fastksa import ksa_lookup, xlogx_table
from gboost.stats.marginal import allelic_chisq, genotype_lr, marginal_tests
from gboost.stats.pvalues import chi2_isf, chi2_logsf, chi2_sf, thresholds_by_df


def random_tables(rng, count, *, sparse=0.2, high=40):
    t = rng.integers(0, high, (count, 3, 3, 2))
    t[rng.random(t.shape) < sparse] = 0
    return t


def logistic_deviance_difference(t: np.ndarray) -> float:
    """Deviance(y ~ x1 + x2) - deviance(y ~ x1 * x2), genotypes as factors, fitted by Newton.

    y ~ x1 * x2 is saturated over the occupied cells, so the difference is the additive model's
    deviance against the cell proportions. Levels that are empty in the pooled table are dropped.
    """
    n_case = t[:, :, 1].astype(float)
    n_all = t.sum(axis=2).astype(float)
    rows = [a for a in range(3) if n_all[a].sum() > 0]
    cols = [b for b in range(3) if n_all[:, b].sum() > 0]
    cells = [(a, b) for a in rows for b in cols if n_all[a, b] > 0]
    X = []
    for a, b in cells:  # intercept + treatment contrasts of x1 and x2
        X.append([1.0] + [float(a == r) for r in rows[1:]] + [float(b == c) for c in cols[1:]])
    X = np.array(X)
    y = np.array([n_case[a, b] for a, b in cells])
    m = np.array([n_all[a, b] for a, b in cells])
    beta = np.zeros(X.shape[1])
    for _ in range(200):
        eta = np.clip(X @ beta, -30, 30)
        mu = 1.0 / (1.0 + np.exp(-eta))
        w = m * mu * (1 - mu) + 1e-300
        grad = X.T @ (y - m * mu)
        hess = X.T @ (X * w[:, None]) + 1e-12 * np.eye(X.shape[1])
        step = np.linalg.solve(hess, grad)
        beta += step
        if np.abs(step).max() < 1e-12:
            break
    mu = 1.0 / (1.0 + np.exp(-np.clip(X @ beta, -30, 30)))
    fit = m * mu
    dev = 0.0
    for obs, exp_ in ((y, fit), (m - y, m - fit)):
        ok = obs > 0
        dev += 2 * np.sum(obs[ok] * np.log(obs[ok] / exp_[ok]))
    return dev


def test_ksa_is_an_upper_bound_of_the_exact_statistic(rng):
    for t in random_tables(rng, 3000, sparse=0.3):
        if plink_df(t) == 0:
            continue
        exact, _ = ipf_stat(t)
        assert ksa_stat(t) >= exact - 1e-6 * max(1.0, exact)


def test_lookup_ksa_equals_direct_ksa(rng):
    xlx = xlogx_table(3 * 3 * 2 * 60)
    scratch = np.zeros(32)
    for t in random_tables(rng, 3000, sparse=0.3, high=60):
        assert ksa_lookup(t, xlx, scratch) == pytest.approx(ksa_stat(t), rel=1e-10, abs=1e-9)


def test_exact_statistic_is_the_logistic_deviance_difference(rng):
    checked = 0
    for t in random_tables(rng, 400, sparse=0.0, high=60) + 1:
        if plink_df(t) != 4 or (t == 0).any():
            continue
        stat, converged = ipf_stat(t)
        assert converged
        # IPF stops at sum |delta mu| <= 0.001 (PLINK's rule), so agreement is to that order.
        assert stat == pytest.approx(logistic_deviance_difference(t), abs=2e-3, rel=1e-4)
        checked += 1
    assert checked > 100


def test_exact_statistic_with_empty_cells_matches_logistic_fit(rng):
    t = np.array([[[30, 10], [12, 20], [0, 0]], [[8, 15], [0, 9], [5, 0]], [[4, 1], [7, 3], [2, 9]]])
    stat, converged = ipf_stat(t)
    assert converged
    assert stat == pytest.approx(logistic_deviance_difference(t), abs=5e-3)


def test_plink_df_rule():
    t = np.ones((3, 3, 2), np.int64)
    assert plink_df(t) == 4
    t1 = t.copy()
    t1[2] = 0  # SNP1 lacks type 2
    assert plink_df(t1) == 2
    t2 = t1.copy()
    t2[:, 0] = 0  # and SNP2 lacks type 0
    assert plink_df(t2) == 1
    t3 = t.copy()
    t3[1:] = 0  # SNP1 has one type only
    assert plink_df(t3) == 0


@pytest.mark.parametrize("df", [1, 2, 4])
def test_pvalues_match_scipy_and_invert(df):
    for x in (0.01, 1.0, 13.3, 29.95, 100.0, 700.0):
        assert chi2_sf(x, df) == pytest.approx(sps.chi2.sf(x, df), rel=1e-12)
        assert chi2_logsf(x, df) == pytest.approx(sps.chi2.logsf(x, df), rel=1e-10)
    for p in (0.05, 0.01, 5e-6, 1e-12):
        x = chi2_isf(p, df)
        assert x == pytest.approx(sps.chi2.isf(p, df), rel=1e-10)
    # Far tails: no underflow to -inf in the log.
    assert np.isfinite(chi2_logsf(5000.0, df))
    from scipy.special import log_ndtr

    exact = {1: math.log(2) + log_ndtr(-math.sqrt(5000.0)), 2: -2500.0, 4: -2500.0 + math.log(2501.0)}[df]
    assert chi2_logsf(5000.0, df) == pytest.approx(exact, rel=1e-8)


def test_default_epi1_threshold_is_boosts_30():
    thr = thresholds_by_df(5e-6)
    assert thr[4] == pytest.approx(29.95, abs=0.01)


def test_exact_tests_batch_flags_invalid_pairs(rng):
    tabs = random_tables(rng, 50, sparse=0.0)
    tabs[3, 1:] = 0  # invalid
    stat, df, p, conv = exact_tests(tabs)
    assert df[3] == 0 and math.isnan(stat[3])
    ok = df > 0
    assert np.all(p[ok] == [chi2_sf(s, d) for s, d in zip(stat[ok], df[ok])])


def test_marginal_tests_match_scipy(rng):
    counts = rng.integers(1, 200, (40, 3, 2))
    counts[5, 2] = 0  # a SNP without homozygotes of one kind: 1 df
    stat, df = genotype_lr(counts)
    for k in range(40):
        tab = counts[k][counts[k].sum(axis=1) > 0]
        g, p, d, _ = sps.chi2_contingency(tab, correction=False, lambda_="log-likelihood")
        assert stat[k] == pytest.approx(g, rel=1e-10) and df[k] == d
    chi = allelic_chisq(counts)
    for k in range(40):
        c = counts[k]
        alle = np.array([[2 * c[2, 0] + c[1, 0], 2 * c[2, 1] + c[1, 1]], [2 * c[0, 0] + c[1, 0], 2 * c[0, 1] + c[1, 1]]])
        assert chi[k] == pytest.approx(sps.chi2_contingency(alle, correction=False)[0], rel=1e-10)
    s, p, nominal = marginal_tests(counts)
    assert nominal == 2 and p[0] == pytest.approx(sps.chi2.sf(s[0], 2), rel=1e-10)


def test_fused_ksa_and_df_equal_the_reference(rng):
    from gboost.stats.fastksa import ksa_df_lookup

    xlx = xlogx_table(18 * 40)
    for t in random_tables(rng, 4000, sparse=0.4):
        if rng.random() < 0.2:
            t[rng.integers(3)] = 0  # an empty SNP1 class
        if rng.random() < 0.2:
            t[:, rng.integers(3)] = 0  # an empty SNP2 class
        ksa, df = ksa_df_lookup(t, xlx)
        assert df == plink_df(t)
        if df:
            assert ksa == pytest.approx(ksa_stat(t), rel=1e-10, abs=1e-9)
