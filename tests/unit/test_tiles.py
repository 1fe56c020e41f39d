"""gboost/pipeline/tiles.py: PLINK's best-partner rule (written once) against PLINK's own procedure, merges
in any order, and the GPU engine's host-side merge against the rule."""
from __future__ import annotations

import numpy as np
import pytest

from gboost.pipeline.tiles import Summary, SummaryPartial, Tile, merge_runs, plan_tiles


def plink_best(m: int, partners: list[int], values: list[float]) -> tuple[float, int]:
    """PLINK 1.9's procedure for SNP m: the best partner after m (earliest on ties), replaced by
    the best partner before m (earliest on ties) only when that one is strictly greater."""
    def earliest_max(cands):
        best = None
        for b, v in sorted(cands):
            if best is None or v > best[1]:
                best = (b, v)
        return best

    after = earliest_max([(b, v) for b, v in zip(partners, values) if b > m])
    before = earliest_max([(b, v) for b, v in zip(partners, values) if b < m])
    if after is None:
        chosen = before
    elif before is not None and before[1] > after[1]:
        chosen = before
    else:
        chosen = after
    return (chosen[1], chosen[0]) if chosen else (-np.inf, -1)


def one_candidate(start: int, n: int, snp: int, partner: int, value: float) -> SummaryPartial:
    part = SummaryPartial.empty(start, n)
    part.best[snp - start], part.best_partner[snp - start] = value, partner
    return part


@pytest.mark.parametrize("seed", range(20))
def test_merging_candidates_in_any_order_gives_plinks_choice(seed):
    rng = np.random.default_rng(seed)
    p = 12
    m = int(rng.integers(p))
    partners = [b for b in range(p) if b != m]
    values = rng.choice([1.0, 2.0, 3.0], len(partners)).tolist()  # many ties, on both sides of m
    want = plink_best(m, partners, values)
    for order in range(5):
        perm = rng.permutation(len(partners))
        s = Summary.empty(p)
        for k in perm:
            s.merge_partial(one_candidate(0, p, m, partners[k], values[k]))
        assert (s.best[m], s.best_partner[m]) == want, (order, m, partners, values)


def test_merge_adds_counts_and_ignores_empty_candidates():
    s = Summary.empty(5)
    part = SummaryPartial.empty(2, 3)
    part.n_sig[:] = [1, 0, 2]
    part.n_tot[:] = [3, 1, 4]
    s.merge_partial(part)
    s.merge_partial(part)
    assert s.n_sig.tolist() == [0, 0, 2, 0, 4] and s.n_tot.tolist() == [0, 0, 6, 2, 8]
    assert (s.best_partner == -1).all() and np.isneginf(s.best).all()


def test_merge_runs_joins_overlapping_and_adjacent_partials_as_merging_all_would():
    rng = np.random.default_rng(3)
    parts = []
    for start, n in [(0, 4), (4, 3), (10, 5), (12, 2)]:
        part = SummaryPartial.empty(start, n)
        part.n_sig[:] = rng.integers(0, 3, n)
        part.n_tot[:] = part.n_sig + rng.integers(0, 3, n)
        part.best[:] = rng.choice([1.0, 2.0], n)
        part.best_partner[:] = rng.integers(0, 20, n)
        parts.append(part)
    runs = merge_runs(parts)
    assert [(r.start, len(r)) for r in runs] == [(0, 7), (10, 5)]
    a, b = Summary.empty(20), Summary.empty(20)
    for part in parts:
        a.merge_partial(part)
    for run in runs:
        b.merge_partial(run)
    for f in ("n_sig", "n_tot", "best", "best_partner"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_a_tile_merged_from_its_sub_tiles_is_the_whole_tiles_result():
    """gboost/engines/gpu/device.py's merge_tile_results (a tile re-run as sub-tiles after an out-of-memory
    back-off) gives what the whole tile gives: survivors, counts and PLINK's best partners (ties
    of the rule itself: test_merging_candidates_in_any_order_gives_plinks_choice above)."""
    from gboost.engines.base import Thresholds
    from gboost.engines.cpu import CpuEngine
    from gboost.engines.gpu import merge_tile_results
    from gboost.stats.pvalues import thresholds_by_df
    from tests.helpers import gpu_study

    study = gpu_study(p=90, n=300, n_case=140, seed=4, fully_called=20)
    thr = Thresholds(thresholds_by_df(0.05), thresholds_by_df(0.3))
    eng = CpuEngine(tile=16)
    eng.prepare(study, thr)
    # A diagonal tile cut the same way along both sides (sub-tiles keep j0 >= i0, as planned ones),
    # an off-diagonal one cut unevenly.
    for whole, cuts_i, cuts_j in ((Tile(0, 0, 90, 0, 90), (0, 37, 90), (0, 37, 90)),
                                  (Tile(1, 10, 50, 50, 90), (10, 31, 50), (50, 63, 90))):
        want = eng.run_tile(whole)
        subs = [Tile(0, a, b, c, d) for a, b in zip(cuts_i, cuts_i[1:]) for c, d in zip(cuts_j, cuts_j[1:])
                if c >= a]
        got = merge_tile_results(whole, [eng.run_tile(t) for t in subs[::-1]])
        for f in ("surv_i", "surv_j", "surv_ksa", "surv_tables"):
            np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
        assert got.n_valid == want.n_valid
        for side in ("rows", "cols"):
            for f in ("n_sig", "n_tot", "best", "best_partner"):
                np.testing.assert_array_equal(getattr(getattr(got, side), f), getattr(getattr(want, side), f))


def test_plan_covers_every_pair_once():
    p, tile = 53, 10
    seen = np.zeros((p, p), int)
    for t in plan_tiles(p, tile):
        assert isinstance(t, Tile) and t.j0 >= t.i0
        n = 0
        for i in range(t.i0, t.i1):
            for j in range(max(t.j0, i + 1), t.j1):
                seen[i, j] += 1
                n += 1
        assert n == t.n_pairs
    assert (seen[np.triu_indices(p, 1)] == 1).all() and seen[np.tril_indices(p)].sum() == 0
