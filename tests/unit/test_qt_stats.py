"""The quantitative-trait statistics and engine against direct least squares.

Sufficient statistics (3x3 counts, trait sums, sum y^2) and the engine's PLINK-order moments must
give the fit numpy's lstsq gives from the raw samples; the engine's tables must equal brute-force
counts; the whole scan (survivors, N_SIG, N_TOT, BEST) must equal a pair-by-pair reference.
"""
from __future__ import annotations

import numpy as np
import pytest

from gboost.engines.qt_cpu import QTCPUEngine, pair_linear_test, pair_sufficient, qt_planes
from gboost.pipeline.qt_scan import QTParams, genotypic_tests, run_qt_scan
from gboost.stats.qt import (acklam_quantile, genotypic_f_test, linear_from_moments, linear_pair_test,
                             moments_of_table, plink_normal_p, qt_thresholds)
from tests.helpers import qt_study_of


def qt_study(rng, p=24, n=257, missing=0.03, flip=None):
    """A study (p SNPs, n samples: not a multiple of 64) with missing calls and a trait."""
    maf = rng.uniform(0.05, 0.5, p)
    g = rng.binomial(2, maf[:, None], size=(p, n)).astype(np.int8)
    g[rng.random((p, n)) < missing] = -1
    y = 50 + rng.standard_normal(n) + 0.5 * np.where((g[0] > 0) & (g[1] > 0), 1.0, 0.0)
    st, dose = qt_study_of(g, y, flip)
    return st, dose, y


def lstsq_test(a, b, y):
    """y ~ 1 + a + b + ab by numpy: (beta_int, Wald chi-square, SE)."""
    X = np.column_stack([np.ones(len(a)), a, b, a * b]).astype(float)
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    rss = float(((y - X @ beta) ** 2).sum())
    cov = np.linalg.inv(X.T @ X) * rss / (len(y) - 4)
    return beta[3], beta[3] ** 2 / cov[3, 3], np.sqrt(cov[3, 3])


def brute_table(a, b, y):
    ok = (a >= 0) & (b >= 0)
    n = np.zeros((3, 3), np.int64)
    s = np.zeros((3, 3))
    np.add.at(n, (a[ok], b[ok]), 1)
    np.add.at(s, (a[ok], b[ok]), y[ok])
    return n, s, float((y[ok] ** 2).sum()), ok


@pytest.mark.slow
def test_linear_test_from_the_table_equals_least_squares_on_the_samples(rng):
    for _ in range(30):
        n_s = int(rng.integers(30, 400))
        a = rng.integers(0, 3, n_s)
        b = rng.integers(0, 3, n_s)
        y = rng.normal(rng.uniform(-5, 100), rng.uniform(0.1, 3), n_s) + rng.normal() * a * b
        n, s, q, _ = brute_table(a, b, y)
        ok, beta, stat, se = linear_pair_test(n, s, q)
        ok2, beta2, stat2, se2 = linear_from_moments(*moments_of_table(n, s), q)
        want = lstsq_test(a, b, y)
        assert ok and ok2
        np.testing.assert_allclose([beta, stat, se], want, rtol=1e-8)
        np.testing.assert_allclose([beta2, stat2, se2], want, rtol=1e-8)


@pytest.mark.parametrize("case", ["constant_a", "constant_b", "too_few", "a_equals_b"])
def test_degenerate_pairs_fail_as_in_plink(case):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, 100)
    b = rng.integers(0, 3, 100)
    if case == "constant_a":
        a[:] = 1
    elif case == "constant_b":
        b[:] = 0
    elif case == "too_few":
        a, b = a[:4], b[:4]
    else:
        b = a.copy()  # correlation 1 > 0.999
    y = rng.normal(size=len(a))
    n, s, q, _ = brute_table(a, b, y)
    ok, beta, stat, se = linear_pair_test(n, s, q)
    assert not ok and np.isnan(stat)


def test_engine_tables_and_moments_equal_brute_force(rng):
    flip = rng.random(24) < 0.5
    st, dose, y = qt_study(rng, flip=flip)
    qp = qt_planes(st)
    for i, j in [(0, 1), (3, 17), (22, 23), (5, 5 + 1)]:
        n, s = np.zeros((3, 3), np.int64), np.zeros((3, 3))
        q = pair_sufficient(qp.h1, qp.h2, qp.miss, qp.cnt, qp.sy, qp.ty, qp.ty2, qp.y2_sum, i, j, n, s)
        bn, bs, bq, ok = brute_table(dose[i], dose[j], y)
        np.testing.assert_array_equal(n, bn)
        np.testing.assert_allclose(s, bs, rtol=1e-12, atol=1e-9)
        assert q == pytest.approx(bq, rel=1e-12)
        got = pair_linear_test(qp.h1, qp.h2, qp.miss, qp.pg, qp.sa, qp.saa, qp.y, qp.n, qp.y_sum, qp.y2_sum, i, j)
        want = lstsq_test(dose[i][ok], dose[j][ok], y[ok])
        assert got[0]
        np.testing.assert_allclose(got[1:], want, rtol=1e-8)


def reference_scan(dose, y, alpha1, alpha2):
    """Pair by pair from the samples (lstsq), then PLINK's summary rules, in plain Python."""
    p = len(dose)
    z = np.full((p, p), np.nan)
    for i in range(p):
        for j in range(i + 1, p):
            n, s, q, _ = brute_table(dose[i], dose[j], y)
            ok, _, stat, _ = linear_pair_test(n, s, q)
            z[i, j] = z[j, i] = stat if ok else np.nan
    n_sig = np.array([(z[k][~np.isnan(z[k])] >= alpha2).sum() for k in range(p)])
    n_tot = np.array([(p - 1) - np.isnan(np.delete(z[k], k)).sum() for k in range(p)])
    best, partner = np.zeros(p), np.zeros(p, np.int64)
    for m in range(p):
        for group in (range(m + 1, p), range(m)):  # after m first; a partner before must be strictly greater
            for k in group:
                if not np.isnan(z[m, k]) and z[m, k] > best[m]:
                    best[m], partner[m] = z[m, k], k
    rows = [(i, j) for i in range(p) for j in range(i + 1, p)
            if (z[i, j] >= alpha1) or (alpha1 == 0.0 and np.isnan(z[i, j]))]
    return z, n_sig, n_tot, best, partner, rows


@pytest.mark.parametrize("epi1", [1.0, 0.2])
def test_scan_survivors_and_summary_equal_the_pairwise_reference(rng, epi1):
    st, dose, y = qt_study(rng, p=20, n=190)
    dose[4] = dose[3]  # a duplicate SNP: its pair with 3 fails (r > 0.999)
    st.planes[4] = st.planes[3]
    res = run_qt_scan(st, QTParams(epi1=epi1, epi2=0.3))
    z, n_sig, n_tot, best, partner, rows = reference_scan(dose, y, res.alpha1, res.alpha2)
    assert list(zip(res.screened.i.tolist(), res.screened.j.tolist())) == rows
    np.testing.assert_array_equal(res.summary.n_sig, n_sig)
    np.testing.assert_array_equal(res.summary.n_tot, n_tot)
    np.testing.assert_allclose(res.summary.best, best, rtol=1e-9)  # PLINK-order sums vs table sums
    np.testing.assert_array_equal(res.summary.best_partner, partner)
    assert res.n_valid == int(np.isfinite(z[np.triu_indices(20, 1)]).sum())


def test_summary_ties_go_to_the_earliest_partner_after_the_snp():
    rng = np.random.default_rng(9)
    st, dose, y = qt_study(rng, p=6, n=150, missing=0.0)
    # SNPs 1, 3 and 5 identical: SNP 0's partners 1, 3, 5 tie; SNP 3's tie between 1 (before) and 5 (after)
    for k in (3, 5):
        dose[k] = dose[1]
        st.planes[k] = st.planes[1]
    res = run_qt_scan(st, QTParams(epi1=1.0))
    _, _, _, best, partner, _ = reference_scan(dose, y, res.alpha1, res.alpha2)
    np.testing.assert_array_equal(res.summary.best_partner, partner)
    assert res.summary.best_partner[3] == partner[3]


@pytest.mark.slow
def test_genotypic_f_test_equals_nested_least_squares(rng):
    for _ in range(10):
        n_s = 300
        a = rng.integers(0, 3, n_s)
        b = rng.integers(0, 3, n_s)
        y = rng.normal(size=n_s) + 0.3 * ((a == 1) & (b == 2))
        n, s, q, _ = brute_table(a, b, y)
        ok, f, d1, d2 = genotypic_f_test(n, s, q)
        full = np.zeros((n_s, 9))
        full[np.arange(n_s), 3 * a + b] = 1
        add = np.column_stack([np.ones(n_s), a == 1, a == 2, b == 1, b == 2]).astype(float)
        rss = [float(((y - X @ np.linalg.lstsq(X, y, rcond=None)[0]) ** 2).sum()) for X in (full, add)]
        want = ((rss[1] - rss[0]) / 4) / (rss[0] / (n_s - 9))
        assert ok and (d1, d2) == (4, n_s - 9)
        assert f == pytest.approx(want, rel=1e-8)
    f, d1, d2, p = genotypic_tests(n[None], s[None], np.array([q]))
    from scipy.stats import f as fdist
    assert p[0] == pytest.approx(fdist.sf(f[0], d1[0], d2[0]), rel=1e-10)


def test_genotypic_f_test_dfs_shrink_with_empty_classes():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, 200)  # dosage 2 never seen at SNP1
    b = rng.integers(0, 3, 200)
    y = rng.normal(size=200)
    n, s, q, _ = brute_table(a, b, y)
    ok, f, d1, d2 = genotypic_f_test(n, s, q)
    assert ok and d1 == 2 and d2 == 200 - 6


def test_genotypic_f_test_with_a_single_genotype_or_confounded_cells():
    """A SNP all heterozygous in the pair (its dummy is the intercept), or cells only on the
    diagonal (SNP1's dummies are SNP2's): the additive model is rank-deficient, not an error; df1
    is the cells less its rank, and F that of nested least squares."""
    rng = np.random.default_rng(5)
    y = rng.normal(size=240)
    b = rng.integers(0, 3, 240)
    cases = [(np.ones(240, np.int64), b),  # SNP1 all heterozygous: no interaction left (df1 0)
             (b.copy(), b)]  # identical SNPs: 3 diagonal cells, additive rank 3, df1 0
    a = rng.integers(1, 3, 240)
    a[:80] = 0
    b2 = rng.integers(1, 3, 240)
    b2[:80] = 0  # genotype 0 of each only with the other's 0: 5 cells, additive rank 4, df1 1
    cases.append((a, b2))
    for a, b in cases:
        n, s, q, _ = brute_table(a, b, y)
        ok, f, d1, d2 = genotypic_f_test(n, s, q)
        cells = int((n > 0).sum())
        full = np.zeros((240, 9))
        full[np.arange(240), 3 * a + b] = 1
        add = np.column_stack([np.ones(240), a == 1, a == 2, b == 1, b == 2]).astype(float)
        rank = np.linalg.matrix_rank(add)
        assert d1 == cells - rank and d2 == 240 - cells
        if d1 > 0:
            rss = [float(((y - X @ np.linalg.lstsq(X, y, rcond=None)[0]) ** 2).sum()) for X in (full, add)]
            assert ok and f == pytest.approx(((rss[1] - rss[0]) / d1) / (rss[0] / d2), rel=1e-8)
        else:
            assert not ok
    f1, e1, e2, p = genotypic_tests(n[None], s[None], np.array([q]))  # the batch path takes it too
    assert (e1[0], e2[0]) == (d1, d2) == (1, 235) and f1[0] == f


def test_thresholds_and_p_follow_plink():
    # epi1 = 1: threshold exactly 0 (every pair written); the default 1e-4 is z = 3.8906
    a1, a2 = qt_thresholds(1.0, 0.01)
    assert a1 == 0.0
    assert a2 == pytest.approx(2.5758293035489 ** 2, rel=1e-8)
    assert acklam_quantile(5e-5) == pytest.approx(-3.890591886, rel=1e-8)
    from scipy.special import ndtr
    for z2 in (0.0, 0.01, 1.0, 3.84, 15.0, 40.0):
        assert plink_normal_p(z2) == pytest.approx(2 * ndtr(-np.sqrt(z2)), abs=2e-7)


def test_engine_cancel_between_blocks(rng):
    from gboost.errors import ScanCancelled

    st, _, _ = qt_study(rng, p=10, n=100)
    with pytest.raises(ScanCancelled):
        QTCPUEngine().scan(st, 0.0, 1.0, cancel=lambda: True)


def test_matrix_product_tables_equal_the_engine(rng):
    from gboost.stats.qt_products import qt_tables_matmul

    flip = rng.random(24) < 0.5
    st, dose, y = qt_study(rng, flip=flip)
    qp = qt_planes(st)
    rows, cols = np.array([0, 5, 9]), np.array([1, 12, 23, 17])
    n, s, q = qt_tables_matmul(st, rows, cols)
    for r, i in enumerate(rows):
        for c, j in enumerate(cols):
            en, es = np.zeros((3, 3), np.int64), np.zeros((3, 3))
            eq = pair_sufficient(qp.h1, qp.h2, qp.miss, qp.cnt, qp.sy, qp.ty, qp.ty2, qp.y2_sum, i, j, en, es)
            np.testing.assert_array_equal(n[r, c], en)
            np.testing.assert_allclose(s[r, c], es, rtol=1e-12, atol=1e-9)
            assert q[r, c] == pytest.approx(eq, rel=1e-12)


def test_results_do_not_depend_on_the_thread_count(rng):
    import numba as nb

    st, _, _ = qt_study(rng, p=40, n=300)
    outs = []
    for threads in (1, nb.config.NUMBA_NUM_THREADS):
        r = run_qt_scan(st, QTParams(epi1=1.0, threads=threads))
        outs.append((r.screened.i, r.screened.j, r.screened.stat, r.screened.beta, r.summary.best,
                     r.summary.best_partner, r.summary.n_sig, r.summary.n_tot))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
