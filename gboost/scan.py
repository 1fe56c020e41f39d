"""The scan pipeline: one code path for the CLI, the GUI and the cluster backends.

plan tiles -> engine screens each tile (progress event per tile, cancel checked between tiles)
-> exact test of the survivors -> per-SNP summary completed -> marginal tests -> ScanResult.
Writing files is separate (:mod:`gboost.io.results`), so nothing is written for a cancelled scan.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from gboost.engines.base import Engine, Thresholds, Tile
from gboost.errors import ScanCancelled
from gboost.stats.exact import exact_tests
from gboost.stats.marginal import marginal_tests
from gboost.stats.pvalues import screen_and_summary_thresholds
from gboost.study import Study


@dataclass
class ScanParams:
    epi1: float = 5e-6  # PLINK's default for --fast-epistasis boost
    epi2: float = 0.01
    device: str = "auto"
    threads: int | None = None
    tile: int | None = None
    gpus: list[int] | None = None
    allelic: bool = False  # marginal test: BOOST's 2-df LR (default) or PLINK's 1-df allelic chi2

    def __post_init__(self):
        for name in ("epi1", "epi2"):
            v = getattr(self, name)
            if not 0.0 < v < 1.0:
                raise ValueError(f"--{name} must be between 0 and 1 (exclusive), got {v}")


@dataclass
class Progress:
    tiles_done: int
    tiles_total: int
    pairs_done: int
    pairs_total: int
    elapsed: float

    @property
    def fraction(self) -> float:
        return self.pairs_done / self.pairs_total if self.pairs_total else 1.0

    @property
    def eta(self) -> float | None:
        f = self.fraction
        return None if f <= 0 else self.elapsed * (1.0 - f) / f

    @property
    def pairs_per_s(self) -> float:
        return self.pairs_done / self.elapsed if self.elapsed > 0 else 0.0


@dataclass
class Summary:
    """Per-SNP epistasis summary (PLINK's .epi.cc.summary), over all valid pairs of each SNP."""

    n_sig: np.ndarray
    n_tot: np.ndarray
    best: np.ndarray  # best summary value z over the SNP's valid partners (-inf: none yet)
    best_partner: np.ndarray  # -1 where none (PLINK prints 0 and the first SNP when z <= 0)

    @classmethod
    def empty(cls, p: int) -> "Summary":
        return cls(np.zeros(p, np.int64), np.zeros(p, np.int64), np.full(p, -np.inf), np.full(p, -1, np.int64))

    def merge(self, start: int, n_sig, n_tot, best, best_partner) -> None:
        sl = slice(start, start + len(n_sig))
        self.n_sig[sl] += n_sig
        self.n_tot[sl] += n_tot
        snp = np.arange(start, start + len(n_sig))
        take = better_partner(best, best_partner, self.best[sl], self.best_partner[sl], snp)
        self.best[sl][take] = best[take]
        self.best_partner[sl][take] = best_partner[take]


def better_partner(v, b, cur_v, cur_b, m):
    """PLINK 1.9's choice of BEST_SNP, made order-independent (works on scalars or arrays).

    PLINK takes the best partner after m (earliest on ties), then lets the best partner before m
    replace it only when strictly greater. Equivalently the largest key (value, b > m, -b) wins:
    on equal values a later partner beats an earlier one, and among later (or among earlier)
    partners the smallest index wins. ``cur_b < 0`` means no candidate yet.
    """
    v, b, cur_v, cur_b, m = (np.asarray(x) for x in (v, b, cur_v, cur_b, m))
    valid = b >= 0
    after, cur_after = b > m, cur_b > m
    tie_wins = (after & ~cur_after) | ((after == cur_after) & (b < cur_b))
    return valid & ((cur_b < 0) | (v > cur_v) | ((v == cur_v) & tie_wins))


@dataclass
class Pairs:
    """Screened pairs (KSA above the epi1 threshold) with their exact test. i < j."""

    i: np.ndarray
    j: np.ndarray
    ksa: np.ndarray
    stat: np.ndarray
    df: np.ndarray
    p: np.ndarray
    converged: np.ndarray
    tables: np.ndarray  # (m, 3, 3, 2)

    def take(self, idx) -> "Pairs":
        return Pairs(*(getattr(self, f)[idx] for f in ("i", "j", "ksa", "stat", "df", "p", "converged", "tables")))

    def __len__(self) -> int:
        return len(self.i)


@dataclass
class ScanResult:
    study: Study
    params: ScanParams
    engine: str
    device: str
    screened: Pairs  # every pair that passed the screen (PLINK's .epi.cc rows), in (i, j) order
    summary: Summary
    marginal_stat: np.ndarray
    marginal_p: np.ndarray
    marginal_df: int
    n_valid: int
    thresholds: Thresholds
    timings: dict = field(default_factory=dict)

    @property
    def reported(self) -> Pairs:
        """pairs.tsv: exact P <= epi1, sorted by STAT descending (ties: file order)."""
        keep = np.flatnonzero(self.screened.p <= self.params.epi1)
        order = np.lexsort((self.screened.j[keep], self.screened.i[keep], -self.screened.stat[keep]))
        return self.screened.take(keep[order])

    @property
    def bonferroni(self) -> float:
        return 0.05 / self.n_valid if self.n_valid else float("nan")


def plan_tiles(p: int, tile: int) -> list[Tile]:
    """Upper-triangle tiles of edge ``tile``, row-major (i0 ascending, then j0)."""
    starts = list(range(0, p, tile))
    out = []
    for a in starts:
        for b in starts:
            if b >= a:
                out.append(Tile(len(out), a, min(a + tile, p), b, min(b + tile, p)))
    return out


def run_scan(study: Study, params: ScanParams | None = None, *, engine: Engine | None = None,
             progress: Callable[[Progress], None] | None = None,
             cancel: Callable[[], bool] | None = None) -> ScanResult:
    """Scan every pair of ``study``; raise :class:`ScanCancelled` if ``cancel()`` turns true."""
    from gboost.engines import make_engine

    params = params or ScanParams()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    engine = engine or make_engine(params.device, threads=params.threads, tile=params.tile, gpus=params.gpus)
    thr = Thresholds(*screen_and_summary_thresholds(params.epi1, params.epi2))
    engine.prepare(study, thr)
    timings["prepare"] = time.perf_counter() - t0

    p = study.n_snps
    tiles = plan_tiles(p, engine.tile_snps())
    total_pairs = p * (p - 1) // 2
    summary = Summary.empty(p)
    parts_i, parts_j, parts_ksa, parts_tab = [], [], [], []
    n_valid = 0
    done = 0
    t1 = time.perf_counter()
    for tile in tiles:
        if cancel is not None and cancel():
            raise ScanCancelled()
        res = engine.run_tile(tile)
        for part in (res.rows, res.cols):
            summary.merge(part.start, part.n_sig, part.n_tot, part.best, part.best_partner)
        parts_i.append(res.surv_i)
        parts_j.append(res.surv_j)
        parts_ksa.append(res.surv_ksa)
        parts_tab.append(res.surv_tables)
        n_valid += res.n_valid
        done += tile.n_pairs
        if progress is not None:
            progress(Progress(tile.index + 1, len(tiles), done, total_pairs, time.perf_counter() - t1))
    timings["screen"] = time.perf_counter() - t1
    engine.close()

    t2 = time.perf_counter()
    screened = _exact(parts_i, parts_j, parts_ksa, parts_tab)
    _fold_survivors(summary, screened, thr)
    timings["exact"] = time.perf_counter() - t2

    t3 = time.perf_counter()
    mstat, mp, mdf = marginal_tests(study.counts, allelic=params.allelic)
    timings["marginal"] = time.perf_counter() - t3
    timings["total"] = time.perf_counter() - t0
    return ScanResult(study, params, engine.name, engine.describe(), screened, summary, mstat, mp, mdf,
                      n_valid, thr, timings)


def _exact(parts_i, parts_j, parts_ksa, parts_tab) -> Pairs:
    i = np.concatenate(parts_i) if parts_i else np.zeros(0, np.int64)
    j = np.concatenate(parts_j) if parts_j else np.zeros(0, np.int64)
    ksa = np.concatenate(parts_ksa) if parts_ksa else np.zeros(0)
    tab = np.concatenate(parts_tab) if parts_tab else np.zeros((0, 3, 3, 2), np.int64)
    order = np.lexsort((j, i))
    i, j, ksa, tab = i[order], j[order], ksa[order], tab[order]
    stat, df, pval, conv = exact_tests(tab)
    return Pairs(i, j, ksa, stat, df, pval, conv, tab)


def _fold_survivors(summary: Summary, pairs: Pairs, thr: Thresholds) -> None:
    """Credit each screened pair to both SNPs with PLINK's value z = max(exact STAT, screen
    threshold), counted in N_SIG when z >= the summary threshold for its DF."""
    valid = pairs.df > 0
    if not valid.any():
        return
    df = pairs.df[valid]
    value = np.maximum(pairs.stat[valid], thr.screen[df])
    sig = (value >= thr.summary[df]).astype(np.int64)
    for a, b in ((pairs.i[valid], pairs.j[valid]), (pairs.j[valid], pairs.i[valid])):
        for k in range(len(a)):  # survivors are few; clarity over vectorisation
            summary.merge(int(a[k]), sig[k:k + 1], np.zeros(1, np.int64), value[k:k + 1], b[k:k + 1])
