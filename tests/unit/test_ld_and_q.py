"""r^2 and distance of reported pairs, Benjamini-Hochberg q values, --min-distance / --max-r2."""
import numpy as np
import pytest

from gboost.pipeline.scan import ScanParams, run_scan
from gboost.stats.multiple import bh_qvalues, r2_from_tables
from gboost.stats.table import pair_table_bruteforce
from gboost.data.study import VariantTable, study_from_genotypes
from tests.helpers import random_genotypes


def test_r2_equals_direct_correlation(rng):
    g, is_case = random_genotypes(rng, 12, 300, missing=0.05)
    g[1] = np.where(rng.random(300) < 0.8, g[0], g[1])  # a correlated pair
    for i, j in [(0, 1), (2, 3), (4, 9)]:
        ok = (g[i] >= 0) & (g[j] >= 0)
        direct = np.corrcoef(g[i][ok], g[j][ok])[0, 1] ** 2
        got = r2_from_tables(pair_table_bruteforce(g[i], g[j], is_case)[None])[0]
        assert got == pytest.approx(direct, rel=1e-10)


def naive_bh(p, m):
    order = np.argsort(p)
    ps = p[order]
    q = np.array([min(min(m * ps[k] / (k + 1) for k in range(i, len(ps))), 1.0) for i in range(len(ps))])
    out = np.empty_like(q)
    out[order] = q
    return out


def test_bh_equals_a_direct_implementation(rng):
    p = rng.random(200) ** 4
    for m in (200, 5000):
        np.testing.assert_allclose(bh_qvalues(p, m), naive_bh(p, m), rtol=1e-12)


def test_min_distance_and_max_r2_set_pairs_apart(rng):
    p, n = 60, 400
    g, is_case = random_genotypes(rng, p, n, missing=0.01)
    g[1] = np.where(rng.random(n) < 0.9, g[0], g[1])  # snp1-snp2 in strong LD, 500 bp apart
    chrom = np.array(["1"] * 30 + ["2"] * 30, dtype=object)
    bp = np.r_[np.arange(30) * 500 + 1000, np.arange(30) * 500 + 1000].astype(np.int64)
    v = VariantTable(chrom, np.array([f"s{k}" for k in range(p)], dtype=object), np.zeros(p), bp,
                     np.full(p, "A", dtype=object), np.full(p, "G", dtype=object))
    study = study_from_genotypes(g, is_case, variants=v)
    base = run_scan(study, ScanParams(device="cpu", epi1=0.05))
    rep = base.reported
    d = base.pair_distance(rep)
    assert np.isnan(d[v.chrom[rep.i] != v.chrom[rep.j]]).all()
    near = run_scan(study, ScanParams(device="cpu", epi1=0.05, min_distance_kb=5))
    dn = near.pair_distance(near.reported)
    assert (np.isnan(dn) | (dn >= 5000)).all() and len(near.reported) == int((np.isnan(d) | (d >= 5000)).sum())
    cut = float(np.nanmedian(rep.r2))
    ld = run_scan(study, ScanParams(device="cpu", epi1=0.05, max_r2=cut))
    assert not (ld.reported.r2 > cut).any() and len(ld.reported) == int((~(rep.r2 > cut)).sum()) < len(rep)
    # q values do not depend on the display filters and follow BH over all valid tests.
    np.testing.assert_allclose(rep.q, naive_bh(rep.p, base.n_valid), rtol=1e-12)
    # The PLINK-format rows never change.
    assert len(ld.screened) == len(base.screened)


def test_compiled_r2_equals_the_array_reference_exactly(rng):
    from gboost.stats.multiple import r2_from_tables_numpy

    tables = rng.integers(0, 400, size=(5000, 3, 3, 2))
    tables[:50, 1:] = 0  # SNP1 monomorphic within the pair
    tables[50:100, :, 1:] = 0  # SNP2 monomorphic
    tables[100:110] = 0  # empty
    tables[110:120] = 0
    tables[110:120, 0, 0, 0] = tables[110:120, 2, 2, 1] = 7  # perfect LD: r^2 = 1
    tables[120:130] *= 1000  # biobank-sized counts
    got, ref = r2_from_tables(tables), r2_from_tables_numpy(tables)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.array_equal(got[~np.isnan(got)].view(np.int64), ref[~np.isnan(ref)].view(np.int64))
    assert np.isnan(got[:130][:110]).all() and (got[110:120] == 1.0).all()
    assert r2_from_tables(np.zeros((0, 3, 3, 2), np.int64)).shape == (0,)


@pytest.mark.parametrize("threads", [2, 3, 16])
def test_sort_in_runs_on_threads_equals_numpys_stable_sort(rng, threads):
    """pairs.tsv's order and q values sort in runs on threads (argsort_stable): the same order as
    one stable sort, on ties (across run boundaries too), NaN, -0.0 beside 0.0, infinities."""
    from gboost.stats.multiple import argsort_stable, r2_at

    v = np.round(rng.random(5003) * 40) / 7  # many ties
    v[rng.integers(0, len(v), 50)] = np.nan
    v[rng.integers(0, len(v), 50)] = -0.0
    v[rng.integers(0, len(v), 50)] = 0.0
    v[rng.integers(0, len(v), 9)] = np.inf
    v[rng.integers(0, len(v), 9)] = -np.inf
    for x in (v, -v, v[:threads + 1], v[:0]):
        assert (argsort_stable(x, threads, min_size=0) == np.argsort(x, kind="stable")).all()
    tables = rng.integers(0, 9, (40, 3, 3, 2))
    rows = rng.integers(0, 40, 25)
    assert np.array_equal(r2_at(tables, rows), r2_from_tables(tables[rows]), equal_nan=True)
