"""Tiles of the pair triangle and what they give back: planning, per-SNP partial summaries, merging,
and PLINK's best-partner rule (written once, here).

An engine screens a :class:`Tile` and returns a :class:`TileResult`: the surviving pairs and two
:class:`SummaryPartial` (the tile's row SNPs and column SNPs). The pipeline merges partials into
one per-SNP :class:`Summary`; every merge is order-independent, so tiles may finish in any order,
come back from a checkpoint, another GPU, a Dask worker or another --part, and give the same
result (docs/DESIGN.md, "Invariants").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gboost.runtime.numba_cache import cached_njit


@dataclass(frozen=True)
class Tile:
    """SNPs [i0, i1) x [j0, j1) of the triangle; only pairs with i < j belong to it.

    Tiles are planned with j0 >= i0; a tile whose column range overlaps its row range is
    "diagonal" and its pairs with j <= i are skipped (row ranges may be clipped by --part, so a
    diagonal tile need not be square).
    """

    index: int
    i0: int
    i1: int
    j0: int
    j1: int

    @property
    def diagonal(self) -> bool:
        return self.j0 < self.i1

    @property
    def n_pairs(self) -> int:
        if not self.diagonal:
            return (self.i1 - self.i0) * (self.j1 - self.j0)
        # sum over rows i of max(0, j1 - max(j0, i + 1)), in closed form (a Python loop over the rows
        # of every diagonal tile of a large plan is slow): rows i < j0 see all j1 - j0 columns,
        # rows i in [max(i0, j0), min(i1, j1 - 1)) see j1 - 1 - i.
        i0, i1, j0, j1 = self.i0, self.i1, self.j0, self.j1
        full = max(0, min(i1, j0) - i0) * max(0, j1 - j0)
        a, b = max(i0, j0), min(i1, j1 - 1)  # rows [a, b)
        if b <= a:
            return full
        n = b - a
        return full + n * (j1 - 1) - (a + b - 1) * n // 2


# --- PLINK's best partner -------------------------------------------------------------------------

@cached_njit(inline="always")
def better(v, partner, best_v, best_partner, m) -> bool:
    """True when ``partner`` (value ``v``) should replace the current best of SNP ``m``
    (``best_partner < 0``: none yet).

    PLINK 1.9 takes the best partner after m (earliest on ties), then lets the best partner before
    m replace it only when strictly greater (docs/DESIGN.md, "PLINK's rules"). As a total order, so
    that the result does not depend on the order pairs are seen in: larger value; on equal values a
    partner after m beats one before m; then the smaller index. The CPU engine's tile kernels, the
    survivor fold and every merge below call this one function; the GPU kernels' ``gb_better``
    (kernels/boost_common.cu) is its restriction to partners on one side of m, and
    tests/unit/test_tiles.py checks the GPU engine's host-side merge against it.
    """
    if best_partner < 0 or v > best_v:
        return True
    if v < best_v:
        return False
    after = partner > m
    if after != (best_partner > m):
        return after
    return partner < best_partner


@cached_njit()
def _merge_best(best, best_partner, v, b, m0):
    """Fold candidates (v[k], b[k]) for SNPs m0 + k into (best, best_partner), in place."""
    for k in range(v.shape[0]):
        if b[k] >= 0 and better(v[k], b[k], best[k], best_partner[k], m0 + k):
            best[k] = v[k]
            best_partner[k] = b[k]


# --- per-SNP partial summaries ------------------------------------------------------------------

@dataclass
class SummaryPartial:
    """Per-SNP summary over some pairs (one tile's non-surviving valid pairs, a run of merged
    tiles, or the whole scan), for SNPs [start, start + len)."""

    start: int
    n_sig: np.ndarray  # int64
    n_tot: np.ndarray  # int64
    best: np.ndarray  # float64, -inf where no pair
    best_partner: np.ndarray  # int64, -1 where no pair

    @classmethod
    def empty(cls, start: int, n: int) -> "SummaryPartial":
        """No pair seen yet for SNPs [start, start + n)."""
        return cls(start, np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -np.inf), np.full(n, -1, np.int64))

    def __len__(self) -> int:
        return len(self.n_sig)

    def merge(self, start: int, n_sig, n_tot, best, best_partner) -> None:
        """Add the counts of SNPs [start, start + len(n_sig)) (inside this partial's range) and let
        their candidates compete for the best partner (:func:`better`)."""
        lo = start - self.start
        sl = slice(lo, lo + len(n_sig))
        self.n_sig[sl] += n_sig
        self.n_tot[sl] += n_tot
        _merge_best(self.best[sl], self.best_partner[sl], np.ascontiguousarray(best, np.float64),
                    np.ascontiguousarray(best_partner, np.int64), start)

    def merge_partial(self, other: "SummaryPartial") -> None:
        self.merge(other.start, other.n_sig, other.n_tot, other.best, other.best_partner)


class Summary(SummaryPartial):
    """Per-SNP epistasis summary (PLINK's .epi.cc.summary) over all valid pairs of each SNP: a
    partial that covers every SNP. ``best_partner`` is -1 where none (PLINK prints 0 and the first
    SNP when z <= 0)."""

    def __init__(self, n_sig, n_tot, best, best_partner):
        super().__init__(0, n_sig, n_tot, best, best_partner)

    @classmethod
    def empty(cls, p: int) -> "Summary":  # type: ignore[override]
        e = SummaryPartial.empty(0, p)
        return cls(e.n_sig, e.n_tot, e.best, e.best_partner)

    def copy(self) -> "Summary":
        return Summary(self.n_sig.copy(), self.n_tot.copy(), self.best.copy(), self.best_partner.copy())


def merge_runs(parts: list[SummaryPartial]) -> list[SummaryPartial]:
    """Partials merged into disjoint runs of SNPs, in SNP order (overlapping or adjacent partials
    become one run; a partial alone is returned as it is, not copied)."""
    spans = sorted(((p.start, p.start + len(p), p) for p in parts if len(p)), key=lambda x: x[0])
    out = []
    k = 0
    while k < len(spans):
        lo, hi = spans[k][0], spans[k][1]
        group = [spans[k][2]]
        k += 1
        while k < len(spans) and spans[k][0] <= hi:
            hi = max(hi, spans[k][1])
            group.append(spans[k][2])
            k += 1
        if len(group) == 1:
            out.append(group[0])
            continue
        run = SummaryPartial.empty(lo, hi - lo)
        for g in group:
            run.merge_partial(g)
        out.append(run)
    return out


@dataclass
class TileResult:
    tile: Tile
    surv_i: np.ndarray  # int64 global SNP index (SNP1, i < j)
    surv_j: np.ndarray
    surv_ksa: np.ndarray  # float64
    surv_tables: np.ndarray  # int64 (m, 3, 3, 2)
    n_valid: int
    rows: SummaryPartial
    cols: SummaryPartial


# --- planning -----------------------------------------------------------------------------------

def part_rows(p: int, k: int, n: int) -> tuple[int, int]:
    """SNP1 rows [a, b) of part k (1-based) of n, balanced by pair count (not by rows).

    Row i holds p - 1 - i pairs, so early rows are heavier; boundaries are where the cumulative
    pair count crosses k/n of the total (PLINK's --parallel splits the same way).
    """
    if not 1 <= k <= n:
        raise ValueError(f"--part {k}/{n}: need 1 <= k <= n")
    total = p * (p - 1) // 2
    cum = np.concatenate([[0], np.cumsum(np.arange(p - 1, -1, -1, dtype=np.int64))])  # pairs before row i

    def boundary(m: int) -> int:
        return int(np.searchsorted(cum, -(-m * total // n), side="left")) if m < n else p

    return (0 if k == 1 else boundary(k - 1)), boundary(k)


def plan_tiles(p: int, tile: int, rows: tuple[int, int] | None = None) -> list[Tile]:
    """Tiles of edge ``tile`` over SNP1 rows ``rows`` (default all), row block by row block.

    Column blocks start at each row block's first SNP, so every tile has j0 >= i0 and only the
    first tile of a row block is diagonal.
    """
    r0, r1 = rows if rows is not None else (0, p)
    out = []
    for a in range(r0, r1, tile):
        a1 = min(a + tile, r1)
        for b in range(a, p, tile):
            t = Tile(len(out), a, a1, b, min(b + tile, p))
            if t.n_pairs:
                out.append(t)
    return out


def rect_rows(n_rows: int, k: int, n: int) -> tuple[int, int]:
    """Rows [a, b) of part k (1-based) of n of a rectangle: every row holds about as many pairs, so
    the rows are split evenly (as plink1.9's --parallel splits a set scan's rows)."""
    if not 1 <= k <= n:
        raise ValueError(f"--part {k}/{n}: need 1 <= k <= n")
    return (k - 1) * n_rows // n, k * n_rows // n


def plan_rect_tiles(n_rows: int, p: int, self_cols: np.ndarray, tile: int,
                    rows: tuple[int, int] | None = None) -> list[Tile]:
    """Tiles of a rectangle study (gboost/data/candidates.py): rows [0, n_rows) (of ``rows``) against
    columns [n_rows, p), each row's own column ``self_cols[row]`` (-1: none) left out.

    Every tile lies right of the rows (j0 >= n_rows >= i1), so none is diagonal and an engine screens
    every pair of it. A tile of edge ``tile`` that holds a row's own column is cut around it: the
    other rows in runs of whole tiles, that row in two tiles beside its own column."""
    r0, r1 = rows if rows is not None else (0, n_rows)
    out: list[Tile] = []

    def add(i0, i1, j0, j1):
        if i1 > i0 and j1 > j0:
            out.append(Tile(len(out), i0, i1, j0, j1))

    for a in range(r0, r1, tile):
        a1 = min(a + tile, r1)
        own = self_cols[a:a1]
        for b in range(n_rows, p, tile):
            b1 = min(b + tile, p)
            hit = np.flatnonzero((own >= b) & (own < b1)) + a
            start = a
            for k in hit.tolist():
                add(start, k, b, b1)
                s = int(self_cols[k])
                add(k, k + 1, b, s)
                add(k, k + 1, s + 1, b1)
                start = k + 1
            add(start, a1, b, b1)
    return out
