"""gboost/tiles.py: PLINK's best-partner rule (written once) against PLINK's own procedure, merges
in any order, and the GPU engine's host-side merge against the rule."""
from __future__ import annotations

import numpy as np
import pytest

from gboost.tiles import Summary, SummaryPartial, Tile, merge_runs, plan_tiles


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


def test_the_gpu_engines_host_side_merge_is_the_rule_restricted_to_one_side():
    """gboost/engines/gpu.py's _merge_partial folds sub-tiles of one tile, where every partner of a
    row SNP lies after it and every partner of a column SNP before it; there it must choose as
    gboost.tiles.better does (the kernels' gb_better is the same restriction: docs/DESIGN.md)."""
    from gboost.engines.gpu import _merge_partial

    rng = np.random.default_rng(7)
    for side in ("rows", "cols"):
        start, n = 100, 30
        dst_gpu = SummaryPartial.empty(start, n)
        dst_rule = SummaryPartial.empty(start, n)
        for _ in range(6):
            src = SummaryPartial.empty(start, n)
            src.n_sig[:] = rng.integers(0, 2, n)
            src.n_tot[:] = src.n_sig + 1
            src.best[:] = rng.choice([0.5, 1.0, 1.5], n)
            snp = np.arange(start, start + n)
            offset = rng.integers(1, 40, n)
            src.best_partner[:] = snp + offset if side == "rows" else snp - offset  # all on one side
            src.best_partner[rng.random(n) < 0.2] = -1  # no candidate
            src.best[src.best_partner < 0] = -np.inf
            _merge_partial(dst_gpu, src)
            dst_rule.merge_partial(src)
        for f in ("n_sig", "n_tot", "best", "best_partner"):
            np.testing.assert_array_equal(getattr(dst_gpu, f), getattr(dst_rule, f), err_msg=f"{side} {f}")


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
