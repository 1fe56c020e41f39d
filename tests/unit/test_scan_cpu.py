"""CPU engine and pipeline against a brute-force scan written with the reference functions."""
import numpy as np
import pytest

from gboost.errors import ScanCancelled
from gboost.pipeline.scan import ScanParams, plan_tiles, run_scan
from gboost.stats.boost import ipf_stat, ksa_stat, plink_df
from gboost.stats.pvalues import chi2_sf, screen_and_summary_thresholds
from gboost.stats.table import pair_table_bruteforce
from gboost.data.study import study_from_genotypes
from tests.helpers import random_genotypes


def brute_force_scan(g, is_case, epi1, epi2):
    """Every pair from genotype codes: table, DF, KSA, exact test, and PLINK's summary rules."""
    p = g.shape[0]
    thr1, thr2 = screen_and_summary_thresholds(epi1, epi2)
    screened = {}
    n_sig = np.zeros(p, int)
    n_tot = np.zeros(p, int)
    best = [(-np.inf, -1)] * p
    for i in range(p):
        for j in range(i + 1, p):
            t = pair_table_bruteforce(g[i], g[j], is_case)
            df = plink_df(t)
            if df == 0:
                continue
            n_tot[i] += 1
            n_tot[j] += 1
            ksa = ksa_stat(t)
            if ksa > thr1[df]:
                stat, _ = ipf_stat(t)
                screened[(i, j)] = (ksa, stat, df, chi2_sf(stat, df))
                value, sig = max(stat, thr1[df]), stat >= thr2[df]
            else:
                value, sig = ksa, ksa >= thr2[df]
            for a, b in ((i, j), (j, i)):
                n_sig[a] += sig
                # PLINK: best partner after a first (earliest on ties), then one before a
                # replaces it only if strictly greater.
                key = (value, b > a, -b)
                cur_v, cur_b = best[a]
                if cur_b < 0 or key > (cur_v, cur_b > a, -cur_b):
                    best[a] = (value, b)
    return screened, n_sig, n_tot, best


@pytest.mark.parametrize("p,n,case_frac,tile", [(37, 150, 0.5, 8), (50, 257, 0.2, 16), (23, 120, 0.8, 5)])
def test_cpu_scan_equals_brute_force(rng, p, n, case_frac, tile):
    g, is_case = random_genotypes(rng, p, n, missing=0.03, case_frac=case_frac, monomorphic=2)
    g[:5] = np.where(g[:5] < 0, 1, g[:5])  # some SNPs without missing calls: subtraction path
    epi1, epi2 = 0.05, 0.2  # loose, so that many pairs pass the screen
    study = study_from_genotypes(g, is_case)
    res = run_scan(study, ScanParams(device="cpu", epi1=epi1, epi2=epi2, tile=tile))
    screened, n_sig, n_tot, best = brute_force_scan(g, is_case, epi1, epi2)
    got = {(int(i), int(j)): (k, s, d, pv) for i, j, k, s, d, pv in zip(*(getattr(res.screened, f) for f in ("i", "j", "ksa", "stat", "df", "p")))}
    assert set(got) == set(screened) and len(got) >= 3
    for key, (k, s, d, pv) in screened.items():
        gk, gs, gd, gp = got[key]
        assert gd == d
        assert gk == pytest.approx(k, rel=1e-9)
        assert gs == pytest.approx(s, rel=1e-12)
        assert gp == pytest.approx(pv, rel=1e-12)
    np.testing.assert_array_equal(res.summary.n_tot, n_tot)
    np.testing.assert_array_equal(res.summary.n_sig, n_sig)
    np.testing.assert_allclose(res.summary.best, [b[0] for b in best], rtol=1e-9)
    np.testing.assert_array_equal(res.summary.best_partner, [b[1] for b in best])
    assert res.n_valid == n_tot.sum() // 2


def test_tiling_does_not_change_results(rng):
    g, is_case = random_genotypes(rng, 70, 200, missing=0.02)
    study = study_from_genotypes(g, is_case)
    runs = [run_scan(study, ScanParams(device="cpu", epi1=0.01, tile=t)) for t in (7, 32, 70, 1000)]
    for r in runs[1:]:
        for f in ("i", "j", "df", "stat", "ksa"):
            np.testing.assert_array_equal(getattr(r.screened, f), getattr(runs[0].screened, f))
        for f in ("n_sig", "n_tot", "best", "best_partner"):
            np.testing.assert_array_equal(getattr(r.summary, f), getattr(runs[0].summary, f))


def test_plan_tiles_cover_the_triangle_once():
    for p, t in ((1, 4), (10, 3), (64, 64), (100, 7)):
        seen = np.zeros((p, p), int)
        for tile in plan_tiles(p, t):
            for i in range(tile.i0, tile.i1):
                for j in range(max(tile.j0, i + 1) if tile.diagonal else tile.j0, tile.j1):
                    seen[i, j] += 1
        assert (seen == np.triu(np.ones((p, p), int), 1)).all()
        assert sum(x.n_pairs for x in plan_tiles(p, t)) == p * (p - 1) // 2


def test_progress_is_monotone_and_cancel_stops_between_tiles(rng):
    g, is_case = random_genotypes(rng, 60, 100)
    study = study_from_genotypes(g, is_case)
    events = []
    run_scan(study, ScanParams(device="cpu", tile=10), progress=events.append)
    assert [e.tiles_done for e in events] == list(range(1, len(events) + 1))
    assert events[-1].pairs_done == 60 * 59 // 2 and events[-1].fraction == 1.0
    seen = []
    with pytest.raises(ScanCancelled):
        run_scan(study, ScanParams(device="cpu", tile=10), progress=seen.append, cancel=lambda: len(seen) >= 3)
    assert len(seen) == 3


def test_reported_pairs_are_exact_p_below_epi1_sorted_by_stat(rng):
    g, is_case = random_genotypes(rng, 80, 300)
    study = study_from_genotypes(g, is_case)
    res = run_scan(study, ScanParams(device="cpu", epi1=0.01))
    rep = res.reported
    assert len(rep) > 0 and (rep.p <= 0.01).all()
    assert (np.diff(rep.stat) <= 0).all()
    assert ((res.screened.p <= 0.01).sum()) == len(rep)


def test_tile_pair_count_closed_form_equals_the_row_by_row_count():
    """Tile.n_pairs counts a diagonal (or --part-clipped) tile in closed form; against the direct
    count over rows, on every small tile shape, including clipped, empty and off-grid ones."""
    from gboost.engines.base import Tile

    def direct(t):
        return sum(max(0, t.j1 - max(t.j0, i + 1)) for i in range(t.i0, t.i1))

    for i0 in range(0, 7):
        for i1 in range(i0, 14):
            for j0 in range(0, 14):
                for j1 in range(j0, 20):
                    t = Tile(0, i0, i1, j0, j1)
                    assert t.n_pairs == direct(t), (i0, i1, j0, j1)

