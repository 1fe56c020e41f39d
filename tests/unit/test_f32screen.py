"""The float32 pre-screen's error bound (gboost/stats/f32screen.py, the formula of boost_mma.cu):
on tables of fully called pairs, small and large studies, common and rare alleles, strong
interactions and extreme tables, |v32 - KSA| stays below half the kernel's E (E carries a
safety factor of 2 over the first-order bound). The GPU tests check the kernel itself against its
float64-only build."""
from __future__ import annotations

import numpy as np
import pytest

from gboost.stats.f32screen import bound, ksa32
from gboost.stats.fastksa import ksa_df_lookup, xlogx_table


def _tables(n, n_case, m, rng, maf=(0.01, 0.5), effect=0.0):
    """m tables of random fully called SNP pairs over one phenotype (n samples, n_case cases)."""
    y = np.zeros(n, np.int64)
    y[:n_case] = 1
    out = np.zeros((m, 3, 3, 2), np.int64)
    for q in range(m):
        fa, fb = rng.uniform(*maf, 2)
        ga = rng.binomial(2, fa, n)
        gb = rng.binomial(2, fb, n)
        if effect:  # cases enriched for one joint genotype
            hit = (ga == 2) & (gb == 2) & (rng.random(n) < effect)
            y = np.where(hit, 1, (np.arange(n) < n_case).astype(np.int64))
        np.add.at(out[q], (ga, gb, y), 1)
    return out


def _check(tables, log_shift=0.0):
    n = int(tables[0].sum())
    v32, lt = ksa32(tables, log_shift)
    return _within_half_the_bound(tables, n, v32, bound(n, lt, fast_log=bool(log_shift)))


def _within_half_the_bound(tables, n, v32, e):
    """|v32 - KSA| <= E / 2 on every valid table (KSA: the float64 reference); (max error, min E)."""
    xlx = xlogx_table(n)
    e = e.astype(np.float64)
    v64 = np.empty(len(tables))
    df = np.empty(len(tables), np.int64)
    for q, t in enumerate(tables):
        v64[q], df[q] = ksa_df_lookup(t, xlx)
    ok = (df > 0) & np.isfinite(v32)
    assert ok.sum() > 0.5 * len(tables)
    err = np.abs(v32[ok].astype(np.float64) - v64[ok])
    assert (err <= e[ok] / 2).all(), f"max error {err.max():.3g} against half-bound {e[ok].min() / 2:.3g}"
    return err.max(), e[ok].min()


@pytest.mark.parametrize("n,n_case", [(60, 20), (2000, 1000), (5000, 2500), (5000, 700), (20000, 9000)])
def test_error_within_half_the_bound_on_random_pairs(n, n_case):
    rng = np.random.default_rng(n + n_case)
    err, e = _check(_tables(n, n_case, 300, rng))
    assert err < e / 4  # the first-order bound itself is far from tight: useful, not vacuous


def test_error_within_bound_on_rare_alleles_and_strong_interactions():
    rng = np.random.default_rng(3)
    _check(_tables(5000, 2500, 200, rng, maf=(0.001, 0.02)))
    _check(_tables(5000, 2500, 200, rng, effect=0.9))


def test_error_within_bound_on_extreme_tables():
    # Whole classes in one cell, empty rows, a single sample off the diagonal.
    n = 5000
    t = np.zeros((6, 3, 3, 2), np.int64)
    t[0, 0, 0] = (2500, 2500)
    t[1, 0, 0], t[1, 2, 2] = (2500, 0), (0, 2500)
    t[2, 0, 0], t[2, 1, 1], t[2, 0, 1] = (1250, 1250), (1249, 1250), (1, 0)
    t[3, :, :, 0], t[3, :, :, 1] = 277, 278  # flat
    t[3, 2, 2, 0] += n - t[3].sum()
    t[4, 0, :, 0], t[4, 1, :, 1] = (833, 833, 834), (833, 833, 834)
    t[5, 0, 1], t[5, 1, 0], t[5, 2, 2] = (2000, 1), (1, 2000), (499, 499)
    assert (t.sum(axis=(1, 2, 3)) == n).all()
    n_valid_tables = [q for q in range(6) if ksa_df_lookup(t[q], xlogx_table(n))[1] > 0]
    _check(t[n_valid_tables] if len(n_valid_tables) > 3 else np.concatenate([t[n_valid_tables]] * 2))


@pytest.mark.parametrize("shift", [-1.0, 1.0])
@pytest.mark.parametrize("n,n_case", [(60, 20), (5000, 2500), (20000, 9000)])
def test_fast_log_bound_covers_logf_worst_case(n, n_case, shift):
    """MmaConfig.fast_log: ln tau off by __logf's documented worst case, either way, stays within half
    of the larger E the kernel then uses."""
    rng = np.random.default_rng(n + 7)
    _check(_tables(n, n_case, 300, rng), log_shift=shift)
    if n >= 5000:  # (rare alleles leave too few valid tables at 60 samples)
        _check(_tables(n, n_case, 100, rng, maf=(0.001, 0.02)), log_shift=shift)


# ---- Blocks with missing calls (gm_pairs_f32m): each pair's own margins ----------------------------


def _tables_missing(n, n_case, m, rng, missing, maf=(0.01, 0.5), effect=0.0):
    """m tables of SNP pairs with missing calls at rate ``missing`` (a pair keeps the samples called at
    both SNPs, so its total and margins are its own)."""
    y = (np.arange(n) < n_case).astype(np.int64)
    out = np.zeros((m, 3, 3, 2), np.int64)
    for q in range(m):
        fa, fb = rng.uniform(*maf, 2)
        ga, gb = rng.binomial(2, fa, n), rng.binomial(2, fb, n)
        yy = y
        if effect:
            hit = (ga == 2) & (gb == 2) & (rng.random(n) < effect)
            yy = np.where(hit, 1, y)
        keep = (rng.random(n) >= missing) & (rng.random(n) >= missing)
        np.add.at(out[q], (ga[keep], gb[keep], yy[keep]), 1)
    return out


def _check_missing(tables, n, sfu_shift=0.0, log_shift=0.0):
    from gboost.stats.f32screen import bound_missing, ksa32_missing

    v32, lt = ksa32_missing(tables, n, sfu_shift, log_shift)
    return _within_half_the_bound(tables, n, v32, bound_missing(n, lt))


@pytest.mark.parametrize("missing", [0.001, 0.01, 0.05, 0.3])
@pytest.mark.parametrize("n,n_case", [(60, 20), (5000, 2500), (5000, 700), (12000, 6000)])
def test_missing_call_bound_on_random_pairs(n, n_case, missing):
    rng = np.random.default_rng(int(n + n_case + 1000 * missing))
    err, e = _check_missing(_tables_missing(n, n_case, 200, rng, missing), n)
    assert err < e / 4  # useful, not vacuous


@pytest.mark.parametrize("shift", [(1.0, 1.0), (-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0)])
def test_missing_call_bound_covers_sfu_and_logf_worst_cases(shift):
    """Every SFU x ln x and __logf off by their documented worst case, in the direction that adds up."""
    rng = np.random.default_rng(11)
    for n, n_case, maf, effect in ((5000, 2500, (0.01, 0.5), 0.0), (5000, 2500, (0.001, 0.02), 0.0),
                                   (5000, 1000, (0.05, 0.5), 0.9), (12000, 6000, (0.01, 0.5), 0.0)):
        _check_missing(_tables_missing(n, n_case, 150, rng, 0.02, maf, effect), n, *shift)


def test_missing_call_bound_on_extreme_tables():
    # A pair that lost most samples, one whose cases are almost all missing, whole classes in a cell.
    n = 5000
    t = np.zeros((5, 3, 3, 2), np.int64)
    t[0, 0, 0], t[0, 1, 1], t[0, 2, 0] = (3, 2), (1, 4), (2, 1)          # 13 of 5,000 called
    t[1, 0, 0], t[1, 1, 0], t[1, 2, 1], t[1, 0, 1] = (2400, 0), (2000, 0), (0, 2), (0, 1)
    t[2, 0, 0], t[2, 2, 2] = (2500, 0), (0, 2499)
    t[3, :, :, 0], t[3, :, :, 1] = 270, 275
    t[4, 0, 1], t[4, 1, 0], t[4, 2, 2] = (1990, 3), (2, 1995), (499, 500)
    assert (t.sum(axis=(1, 2, 3)) <= n).all()
    for shift in (0.0, 1.0, -1.0):
        valid = [q for q in range(5) if ksa_df_lookup(t[q], xlogx_table(n))[1] > 0]
        _check_missing(np.concatenate([t[valid]] * 2), n, shift, shift)


# ---- Studies whose float32 table does not fit (n >= ~12.8k): brackets by shares, no table ------------


@pytest.mark.slow
@pytest.mark.parametrize("shift", [-1.0, 0.0, 1.0])
@pytest.mark.parametrize("n,n_case", [(20000, 9000), (50000, 25000), (60000, 20000)])
def test_all_sfu_bound_of_fully_called_pairs_at_large_n(n, n_case, shift):
    """MmaConfig.sfu_xlogx 2 (the build where the table does not fit): the cell brackets by shares, each
    off by its worst case in the direction that adds up, and __logf too, within half of E."""
    from gboost.stats.f32screen import bound

    rng = np.random.default_rng(n + 5)
    for tables in (_tables(n, n_case, 120, rng), _tables(n, n_case, 60, rng, maf=(0.001, 0.02)),
                   _tables(n, n_case, 60, rng, effect=0.9)):
        v32, lt = ksa32(tables, log_shift=shift, sfu=2, sfu_shift=shift)
        err, e = _within_half_the_bound(tables, n, v32, bound(n, lt, sfu=2, fast_log=True))
        if not shift:  # unshifted, the bound is useful, not vacuous; every worst case at once takes up to half
            assert err < e / 4


@pytest.mark.slow
@pytest.mark.parametrize("shift", [(1.0, 1.0), (-1.0, -1.0), (0.0, 0.0)])
@pytest.mark.parametrize("missing", [0.01, 0.05])
@pytest.mark.parametrize("n,n_case", [(20000, 9000), (50000, 25000)])
def test_missing_call_bound_at_large_n(n, n_case, missing, shift):
    """gm_ksa32m at 20k and 50k samples: every bracket by shares, E = 4u (172 N) + 28 u N |ln tau|."""
    from gboost.stats.f32screen import bound_missing, ksa32_missing

    rng = np.random.default_rng(int(n + 100 * missing))
    for tables in (_tables_missing(n, n_case, 100, rng, missing),
                   _tables_missing(n, n_case, 50, rng, missing, maf=(0.001, 0.02))):
        v32, lt = ksa32_missing(tables, n, *shift)
        err, e = _within_half_the_bound(tables, n, v32, bound_missing(n, lt))
        if not any(shift):
            assert err < e / 4
