"""The scan pipeline: one code path for the CLI, the GUI and the cluster backends.

plan tiles -> engine screens each tile (progress event per tile, cancel checked between tiles)
-> exact test of the survivors -> per-SNP summary completed -> marginal tests -> ScanResult.
Writing files is separate (:mod:`gboost.io.results`), so nothing is written for a cancelled scan.

While a GPU (or Dask) engine screens, the host's cores would sit idle, so the host work of the
finalize step that needs no finished screen (marginal tests, calibration, exact tests of the
survivors found so far) runs meanwhile on one background thread (:class:`HostWork`).
"""
from __future__ import annotations

import functools
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numba as nb
import numpy as np

from gboost.engines.base import Engine, Thresholds, Tile, TileResult
from gboost.errors import ScanCancelled
from gboost.stats.exact import exact_tests
from gboost.stats.marginal import marginal_tests
from gboost.stats.multiple import bh_qvalues, r2_from_tables
from gboost.stats.summary_rule import better
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
    dask: str | None = None  # scheduler address or 'local:N': tiles run as Dask tasks
    allelic: bool = False  # marginal test: BOOST's 2-df LR (default) or PLINK's 1-df allelic chi2
    part: tuple[int, int] | None = None  # (k, n): the k-th of n parts of the triangle (--part k/n)
    min_distance_kb: float | None = None  # pairs.tsv: leave out pairs closer than this on one chromosome
    max_r2: float | None = None  # pairs.tsv: leave out pairs in LD above this r^2
    calibration_pairs: int = 200_000  # exact tests of a random sample of pairs for lambda (0: off)

    def __post_init__(self):
        for name in ("epi1", "epi2"):
            v = getattr(self, name)
            if not 0.0 < v < 1.0:
                raise ValueError(f"--{name} must be between 0 and 1 (exclusive), got {v}")
        if self.calibration_pairs < 0:
            raise ValueError(f"--calibration-pairs must be 0 (no calibration) or more, got {self.calibration_pairs}")


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
    q: np.ndarray | None = None  # Benjamini-Hochberg q values (set on reported pairs)
    adj: tuple | None = None  # (STAT_ADJ, DF_ADJ, P_ADJ) arrays with --covar

    def take(self, idx) -> "Pairs":
        return Pairs(*(getattr(self, f)[idx] for f in ("i", "j", "ksa", "stat", "df", "p", "converged", "tables")),
                     q=None if self.q is None else self.q[idx],
                     adj=None if self.adj is None else tuple(a[idx] for a in self.adj))

    @property
    def r2(self) -> np.ndarray:
        """Genotypic r^2 between the two SNPs (from the pair's own table)."""
        return r2_from_tables(self.tables)

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
    calibration: object | None = None  # gboost.calibration.Calibration of the interaction test
    covariate_names: list | None = None  # --covar columns used for STAT_ADJ / P_ADJ

    @cached_property
    def reported(self) -> Pairs:
        """pairs.tsv: exact P <= epi1, sorted by STAT descending (ties: file order), with BH q
        values over all valid tests; then --min-distance / --max-r2 set aside pairs of nearby or
        correlated SNPs (the PLINK-format files are never filtered)."""
        sc = self.screened
        keep = np.flatnonzero(sc.p <= self.params.epi1)
        q = bh_qvalues(sc.p[keep], max(self.n_valid, 1))
        order = np.lexsort((sc.j[keep], sc.i[keep], -sc.stat[keep]))
        rep = sc.take(keep[order])
        rep.q = q[order]
        ok = np.ones(len(rep), bool)
        if self.params.min_distance_kb is not None:
            d = self.pair_distance(rep)
            ok &= np.isnan(d) | (d >= self.params.min_distance_kb * 1000.0)
        if self.params.max_r2 is not None:
            r2 = rep.r2
            ok &= ~(r2 > self.params.max_r2)
        return rep if ok.all() else rep.take(np.flatnonzero(ok))

    def pair_distance(self, pairs: Pairs) -> np.ndarray:
        """Base-pair distance of each pair; NaN across chromosomes."""
        v = self.study.variants
        same = v.chrom[pairs.i] == v.chrom[pairs.j]
        d = np.abs(v.bp[pairs.j].astype(np.float64) - v.bp[pairs.i].astype(np.float64))
        return np.where(same, d, np.nan)

    @property
    def bonferroni(self) -> float:
        return 0.05 / self.n_valid if self.n_valid else float("nan")


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


@dataclass
class Accumulator:
    """What the screen has produced so far: survivors, per-SNP summary partials, counts.

    Everything merges order-independently, so tiles may finish in any order, come back from a
    checkpoint, another GPU, a Dask worker or another --part, and give the same result.
    """

    p: int
    summary: Summary = None
    surv_i: list = field(default_factory=list)
    surv_j: list = field(default_factory=list)
    surv_ksa: list = field(default_factory=list)
    surv_tables: list = field(default_factory=list)
    # The row block (its first SNP) each entry of the surv_ lists came from; None where unknown
    # (absorbed or loaded survivors). HostWork sorts and tests survivors row block by row block.
    surv_rows: list = field(default_factory=list)
    n_valid: int = 0
    pairs_done: int = 0
    tiles_done: set = field(default_factory=set)
    # The background host work started by screen() and collected by finalize(); never saved.
    host: "HostWork | None" = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.summary is None:
            self.summary = Summary.empty(self.p)

    def add(self, res: TileResult) -> None:
        if res.tile.index in self.tiles_done:  # a tile computed twice (a rerun task) counts once
            return
        for part in (res.rows, res.cols):
            self.summary.merge(part.start, part.n_sig, part.n_tot, part.best, part.best_partner)
        self.surv_i.append(res.surv_i)
        self.surv_j.append(res.surv_j)
        self.surv_ksa.append(res.surv_ksa)
        self.surv_tables.append(res.surv_tables)
        self.surv_rows.append(res.tile.i0)
        self.n_valid += res.n_valid
        self.pairs_done += res.tile.n_pairs
        self.tiles_done.add(res.tile.index)

    def absorb(self, other: "Accumulator") -> None:
        """Merge another accumulator over the same SNPs (another --part, another worker)."""
        s = other.summary
        self.summary.merge(0, s.n_sig, s.n_tot, s.best, s.best_partner)
        for name in ("surv_i", "surv_j", "surv_ksa", "surv_tables"):
            getattr(self, name).extend(getattr(other, name))
        self.surv_rows.extend([None] * len(other.surv_i))
        self.n_valid += other.n_valid
        self.pairs_done += other.pairs_done

    def survivors(self):
        i = np.concatenate(self.surv_i) if self.surv_i else np.zeros(0, np.int64)
        j = np.concatenate(self.surv_j) if self.surv_j else np.zeros(0, np.int64)
        ksa = np.concatenate(self.surv_ksa) if self.surv_ksa else np.zeros(0)
        tab = np.concatenate(self.surv_tables) if self.surv_tables else np.zeros((0, 3, 3, 2), np.int64)
        return i, j, ksa, tab

    def to_arrays(self) -> dict:
        """Plain arrays (for a part file or a checkpoint); inverse of :meth:`from_arrays`."""
        i, j, ksa, tab = self.survivors()
        s = self.summary
        return {"p": np.int64(self.p), "n_valid": np.int64(self.n_valid), "pairs_done": np.int64(self.pairs_done),
                "n_sig": s.n_sig, "n_tot": s.n_tot, "best": s.best, "best_partner": s.best_partner,
                "surv_i": i, "surv_j": j, "surv_ksa": ksa, "surv_tables": tab}

    @classmethod
    def from_arrays(cls, d) -> "Accumulator":
        acc = cls(int(d["p"]), Summary(np.array(d["n_sig"]), np.array(d["n_tot"]), np.array(d["best"]),
                                       np.array(d["best_partner"])))
        acc.surv_i, acc.surv_j = [np.array(d["surv_i"])], [np.array(d["surv_j"])]
        acc.surv_ksa, acc.surv_tables = [np.array(d["surv_ksa"])], [np.array(d["surv_tables"])]
        acc.surv_rows = [None]
        acc.n_valid, acc.pairs_done = int(d["n_valid"]), int(d["pairs_done"])
        return acc


def run_scan(study: Study, params: ScanParams | None = None, *, engine: Engine | None = None,
             progress: Callable[[Progress], None] | None = None,
             cancel: Callable[[], bool] | None = None, checkpoint=None, covariates: tuple | None = None) -> ScanResult:
    """Scan every pair of ``study`` (or of ``params.part``); raise :class:`ScanCancelled` if
    ``cancel()`` turns true between tiles.

    ``checkpoint`` (a :class:`gboost.checkpoint.Ledger`) replays the tiles an interrupted run
    finished and records each new tile as it completes.
    """
    t0 = time.perf_counter()
    acc, thr, timings, engine_desc = screen(study, params, engine=engine, progress=progress, cancel=cancel,
                                            checkpoint=checkpoint)
    t1 = time.perf_counter()
    timings["screen_call"] = t1 - t0  # prepare + screen + planning, as the caller sees it
    res = finalize(study, params or ScanParams(), acc, thr, engine_desc, timings, covariates)
    res.timings["finalize_call"] = time.perf_counter() - t1
    return res


def scan_thresholds(params: ScanParams) -> Thresholds:
    return Thresholds(*screen_and_summary_thresholds(params.epi1, params.epi2))


def screen(study: Study, params: ScanParams | None = None, *, engine: Engine | None = None,
           progress=None, cancel=None, checkpoint=None):
    """The screen alone: tiles -> :class:`Accumulator` (used by run_scan, --part and workers).

    With an engine that leaves the host's cores free (:func:`overlaps_host_work`) the returned
    accumulator carries the finalize step's host work, already running in the background
    (``acc.host``); :func:`finalize` collects it. If the screen is cancelled or fails, that work
    is stopped before the exception leaves.
    """
    from gboost.engines import make_engine

    params = params or ScanParams()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    engine = engine or make_engine(params.device, threads=params.threads, tile=params.tile, gpus=params.gpus,
                                  dask=params.dask)
    # A --part is not finalized by this process (merge does it), so nothing to start for it.
    host = HostWork(study, params) if overlaps_host_work(engine) and not params.part else None
    try:
        thr = scan_thresholds(params)
        engine.prepare(study, thr)
        timings["prepare"] = time.perf_counter() - t0

        p = study.n_snps
        tile = checkpoint.tile if checkpoint is not None and checkpoint.tile else engine.tile_snps()
        rows = part_rows(p, *params.part) if params.part else None
        tiles = plan_tiles(p, tile, rows)
        total_pairs = sum(t.n_pairs for t in tiles)
        acc = Accumulator(p)
        if checkpoint is not None:
            checkpoint.start(tile=tile, tiles=len(tiles))
            for res in checkpoint.replay():
                acc.add(res)
        if host is not None:
            host.expect(tiles)
            host.feed(acc)
        todo = [t for t in tiles if t.index not in acc.tiles_done]
        t1 = time.perf_counter()
        cancelled = False

        def should_stop() -> bool:
            nonlocal cancelled
            cancelled = cancelled or (cancel is not None and bool(cancel()))
            return cancelled

        try:
            for res in engine.run_tiles(todo, should_stop):
                acc.add(res)
                if host is not None:
                    host.feed(acc)
                if checkpoint is not None:
                    checkpoint.record(res)
                if progress is not None:
                    progress(Progress(len(acc.tiles_done), len(tiles), acc.pairs_done, total_pairs,
                                      time.perf_counter() - t1))
        finally:
            if checkpoint is not None:
                checkpoint.flush()
            engine.close()
        if cancelled or len(acc.tiles_done) < len(tiles):
            raise ScanCancelled()
    except BaseException:  # cancelled, failed, interrupted: no thread may outlive the scan
        if host is not None:
            host.close()
        raise
    timings["screen"] = time.perf_counter() - t1
    acc.host = host
    return acc, thr, timings, (engine.name, engine.describe())


def finalize(study: Study, params: ScanParams, acc: Accumulator, thr: Thresholds, engine_desc: tuple[str, str],
             timings: dict | None = None, covariates: tuple | None = None) -> ScanResult:
    """Exact tests of the survivors, the summary completed, marginal tests: the ScanResult.

    ``covariates`` = (matrix aligned with study.samples, names) adds covariate-adjusted logistic
    tests (gboost.covariates) of the pairs with P <= epi1.

    Work that :func:`screen` started in the background (``acc.host``) is collected here; without
    it (CPU engine, merged parts) the same work runs now, on this thread. Either way the result is
    the same, byte for byte. timings "marginal", "calibration" and "exact" are the seconds spent
    here on each (near 0 when they overlapped the screen); "host_overlapped" the seconds the
    background thread worked.
    """
    timings = dict(timings or {})
    host, acc.host = acc.host, None
    if host is not None and not host.serves(study, params):
        host.close()
        host = None
    overlapped = host is not None
    host = host or HostWork(study, params, background=False)
    try:
        host.feed(acc, final=True)
        # Waited for in the order they were started (the background thread runs them in that order).
        t = time.perf_counter()
        mstat, mp, mdf = host.marginal.result()
        timings["marginal"] = time.perf_counter() - t
        calib = None
        if host.calibration is not None:
            t = time.perf_counter()
            calib = host.calibration.result()
            timings["calibration"] = time.perf_counter() - t
        t2 = time.perf_counter()
        for f in host.blocks:
            f.result()
        t3 = time.perf_counter()
        screened = Pairs(*host.results(acc))
    finally:
        host.close()
    if overlapped:
        timings["host_overlapped"] = host.busy_s
    t4 = time.perf_counter()
    # The split of "exact" (bench/bench_gpu.py prints it): waiting for the last row blocks' sorts,
    # exact tests and folds, joining the blocks, merging the fold into the summary (after the
    # covariates, if any).
    timings["exact_wait"], timings["exact_join"] = t3 - t2, t4 - t3
    if covariates is not None:
        from gboost.covariates import adjusted_tests

        t = time.perf_counter()
        sel = np.flatnonzero(screened.p <= params.epi1)
        adj = (np.full(len(screened), np.nan), np.zeros(len(screened), np.int64), np.full(len(screened), np.nan))
        for arr, vals in zip(adj, adjusted_tests(study, screened.i[sel], screened.j[sel], covariates[0])):
            arr[sel] = vals
        screened.adj = adj
        timings["adjusted_tests"] = time.perf_counter() - t  # (part of "exact")
    summary = Summary(acc.summary.n_sig.copy(), acc.summary.n_tot.copy(), acc.summary.best.copy(),
                      acc.summary.best_partner.copy())
    t5 = time.perf_counter()
    f = host.folded
    summary.merge(0, f.n_sig, f.n_tot, f.best, f.best_partner)
    timings["exact_fold"] = time.perf_counter() - t5
    timings["exact"] = time.perf_counter() - t2
    timings["total"] = sum(v for k, v in timings.items() if k in ("prepare", "screen", "exact", "marginal"))
    return ScanResult(study, params, engine_desc[0], engine_desc[1], screened, summary, mstat, mp, mdf,
                      acc.n_valid, thr, timings, calib, None if covariates is None else list(covariates[1]))


# Engines whose screen runs no numba code on this process's threads: the GPU engine's host threads
# only drive CuPy, Dask tiles run in worker processes. Beside them the host work may run on a
# background thread. Not beside the CPU engine: it has the cores already, and numba's default
# (workqueue) threading layer aborts when two threads run parallel kernels at once.
OVERLAPPING_ENGINES = ("gpu", "dask")
def overlaps_host_work(engine: Engine) -> bool:
    """Whether finalize's host work may run in the background while ``engine`` screens (an engine
    may say so itself with an ``overlaps_host_work`` attribute)."""
    return bool(getattr(engine, "overlaps_host_work", engine.name in OVERLAPPING_ENGINES))


class HostWork:
    """The host work of :func:`finalize` that needs no finished screen: marginal tests and
    calibration (the study alone), and the survivors of each row block of tiles, sorted by (i, j)
    and exact-tested as soon as the block's last tile is in.

    Row blocks cover disjoint SNP1 ranges, so finalize only joins the sorted blocks; what it waits
    for after the screen is the last row block (the smallest: one diagonal tile).

    In the background it all runs on ONE worker thread, in submission order: two threads must
    never run numba-parallel kernels at once. The kernels release the GIL (``nogil``), so the
    thread really runs beside the screen. With ``background=False`` each job runs on the calling
    thread when its result is asked for (the serial path, same code).
    """

    def __init__(self, study: Study, params: ScanParams, *, background: bool = True):
        from gboost.calibration import calibrate

        self.study, self.params = study, params
        self.busy_s = 0.0  # seconds the background thread spent on jobs (written by that thread only)
        self._pool = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="gboost-host", initializer=_spare_a_core)
                      if background else None)
        self.marginal = self._submit(marginal_tests, study.counts, allelic=params.allelic)
        self.calibration = None
        if params.calibration_pairs and study.planes.shape[2] > 0:  # merged parts carry no planes
            self.calibration = self._submit(calibrate, study, n_pairs=params.calibration_pairs)
        self.blocks: list = []  # one job per row block (None, or the block where it has no place in .screened)
        self.screened = _SortedSink()  # the planned row blocks' survivors, joined in row order
        self.folded = Summary.empty(study.n_snps)  # the survivors' exact tests folded in (PLINK's z)
        self._thr = scan_thresholds(params)
        self._fed = 0  # entries of acc's survivor lists already placed in a row block
        self._left: dict = {}  # row block -> tiles of the plan not yet in
        self._waiting: dict = {}  # row block -> indices into acc's survivor lists

    def serves(self, study: Study, params: ScanParams) -> bool:
        return study is self.study and params == self.params

    def expect(self, tiles: list[Tile]) -> None:
        """The scan's tile plan: a row block's job starts when its last tile has been fed."""
        for t in tiles:
            self._left[t.i0] = self._left.get(t.i0, 0) + 1
            self.screened.plan(t.i0, t.n_pairs)

    def feed(self, acc: Accumulator, *, final: bool = False) -> None:
        """Place the tiles fed since the last call in their row blocks; submit each completed block
        (with ``final``: every block still open, and survivors of no known block, as one job)."""
        for k in range(self._fed, len(acc.surv_i)):
            row = acc.surv_rows[k]
            row = row if row in self._left else None
            self._waiting.setdefault(row, []).append(k)
            if row is not None:
                self._left[row] -= 1
                if self._left[row] == 0:
                    self._submit_block(acc, self._waiting.pop(row), row)
        self._fed = len(acc.surv_i)
        if final and self._waiting:
            self._submit_block(acc, sorted(k for ks in self._waiting.values() for k in ks), None)
            self._waiting.clear()

    def _submit_block(self, acc: Accumulator, ks: list[int], row: int | None) -> None:
        self.blocks.append(self._submit(self._block_job, row, acc.p, [acc.surv_i[k] for k in ks],
                                        [acc.surv_j[k] for k in ks], [acc.surv_ksa[k] for k in ks],
                                        [acc.surv_tables[k] for k in ks]))

    def _block_job(self, row: int | None, p: int, *lists) -> tuple | None:
        """Sort and test one row block, fold it into ``folded`` and join it to ``screened`` (jobs
        run one at a time, so the two are never touched by two threads at once); a block of no
        planned row (``row`` None) is returned instead, for finalize to join."""
        block = _sorted_block(p, *lists)
        i, j, _ksa, stat, df, *_ = block
        _fold_survivors(self.folded, i, j, stat, df, self._thr)
        if row is None:
            return block
        self.screened.put(row, block)
        return None

    def results(self, acc: Accumulator) -> tuple:
        """Every survivor's fields in (i, j) order (waits for the jobs); finalize's only copy is
        where blocks arrived out of row order or outside the plan."""
        leftovers = [b for b in (f.result() for f in self.blocks) if b is not None]
        fields = _join_blocks(self.screened.parts() + leftovers, acc.p)
        n = sum(len(x) for x in acc.surv_i)
        if len(fields[0]) != n:
            raise RuntimeError(f"exact tests of {len(fields[0])} pairs for {n} survivors")
        return fields

    def close(self) -> None:
        """Drop the jobs not started, wait for the running one (numba cannot be interrupted)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _submit(self, fn, *args, **kwargs):
        job = functools.partial(fn, *args, **kwargs)
        return _Deferred(job) if self._pool is None else self._pool.submit(self._timed, job)

    def _timed(self, job):
        t = time.perf_counter()
        try:
            return job()
        finally:
            self.busy_s += time.perf_counter() - t


class _Deferred:
    """A job that runs when its result is first asked for: the serial stand-in for a Future."""

    _UNSET = object()

    def __init__(self, job):
        self._job = job
        self._result = self._UNSET

    def result(self):
        if self._result is self._UNSET:
            self._result = self._job()
        return self._result


def _spare_a_core() -> None:
    # Numba's thread count is per thread: the background kernels leave one core to the threads
    # that keep the GPU fed (their results do not depend on the thread count).
    nb.set_num_threads(max(1, nb.config.NUMBA_NUM_THREADS - 1))


def _sorted_block(p: int, i: list, j: list, ksa: list, tables: list) -> tuple:
    """One row block's survivors (lists of tile arrays) sorted by (i, j), with their exact tests:
    (i, j, ksa, stat, df, p, converged, tables), the fields of :class:`Pairs`. Every exact test
    depends only on its own table, so testing the sorted tables gives what sorting the tests would."""
    i, j, ksa = _concat(i, np.int64), _concat(j, np.int64), _concat(ksa, np.float64)
    tab = _concat(tables, np.int64, (3, 3, 2))
    # One sort of the key i * p + j (unique: every pair is screened once) orders as lexsort((j, i)),
    # ~6x faster at 7e5 survivors; skipped where the block is one tile (tiles come sorted).
    key = i * p + j
    if len(key) > 1 and not (key[1:] > key[:-1]).all():
        order = np.argsort(key)
        i, j, ksa, tab = i[order], j[order], ksa[order], tab[order]
    return (i, j, ksa, *exact_tests(tab), tab)


def _concat(parts: list, dtype, shape: tuple = ()) -> np.ndarray:
    """A new array (never a tile's own: the result must not alias what a checkpoint or part holds)."""
    if not parts:
        return np.zeros((0, *shape), dtype)
    return np.concatenate(parts).astype(dtype, copy=False) if len(parts) > 1 else np.array(parts[0], dtype=dtype)


def _join_blocks(blocks: list[tuple], p: int) -> tuple:
    """The row blocks' sorted fields, in (i, j) order: row blocks cover disjoint SNP1 ranges, so
    joining them in order of their first SNP1 is the sort; a full sort only if they overlap (never
    in a planned scan; kept so that any grouping gives the same result)."""
    blocks = sorted((b for b in blocks if len(b[0])), key=lambda b: b[0][0])
    if not blocks:
        return _sorted_block(p, [], [], [], [])
    if len(blocks) == 1:
        return blocks[0]
    fields = [np.concatenate(f) for f in zip(*blocks)]
    key = fields[0] * p + fields[1]
    if not (key[1:] > key[:-1]).all():
        order = np.argsort(key)
        fields = [f[order] for f in fields]
    return tuple(fields)


@nb.njit(cache=True, nogil=True)  # runs on the host-work thread beside the GPU screen (HostWork)
def _fold_loop(n_sig, best, best_partner, i, j, value, sig):
    for k in range(i.shape[0]):
        for a, b in ((i[k], j[k]), (j[k], i[k])):
            n_sig[a] += sig[k]
            if better(value[k], b, best[a], best_partner[a], a):
                best[a] = value[k]
                best_partner[a] = b


def _fold_survivors(summary: Summary, i, j, stat, df, thr: Thresholds) -> None:
    """Credit each screened pair (i, j) to both SNPs with PLINK's value z = max(exact STAT, screen
    threshold), counted in N_SIG when z >= the summary threshold for its DF; the best partner by
    PLINK's order (:func:`better_partner`: larger z, then a partner after the SNP, then the
    smaller index). One compiled pass; the order is total, so folding row blocks apart and merging
    gives what one fold of all would.
    """
    valid = df > 0
    if not valid.any():
        return
    d = df[valid]
    value = np.maximum(stat[valid], thr.screen[d])
    sig = (value >= thr.summary[d]).astype(np.int64)
    _fold_loop(summary.n_sig, summary.best, summary.best_partner, np.ascontiguousarray(i[valid]),
               np.ascontiguousarray(j[valid]), value, sig)


class _SortedSink:
    """The screened pairs' fields (those of :class:`Pairs`, in its order) in (i, j) order, grown
    row block by row block on the host-work thread, so that finalize copies nothing: a block is
    appended once every planned row block before it is in (blocks that come early wait).

    The arrays grow ahead of need, to the count the blocks so far project for the whole plan (their
    survivors per pair), so the joined result is views of one allocation with little slack.
    """

    def __init__(self):
        self._rows: dict = {}  # planned row block -> its pairs
        self._order: list | None = None
        self._next = 0
        self._early: dict = {}  # row block -> sorted block waiting for the blocks before it
        self._fields: list | None = None
        self.n = 0
        self._pairs_in = 0

    def plan(self, row: int, n_pairs: int) -> None:
        self._rows[row] = self._rows.get(row, 0) + n_pairs
        self._order = None

    def put(self, row: int, block: tuple) -> None:
        if self._order is None:
            self._order = sorted(self._rows)
        self._early[row] = block
        while self._next < len(self._order) and self._order[self._next] in self._early:
            r = self._order[self._next]
            self._append(self._early.pop(r), self._rows[r])
            self._next += 1

    def _append(self, block: tuple, n_pairs: int) -> None:
        m = len(block[0])
        self._pairs_in += n_pairs
        if self._fields is None or self.n + m > len(self._fields[0]):
            total = sum(self._rows.values())
            projected = (self.n + m) * total // max(1, self._pairs_in)
            # At least 1.5x the old room: a projection that keeps falling short (survivors denser in
            # later row blocks) still costs O(final size) in copies. Room never written is never
            # touched (np.empty), so a projection that overshoots costs address space, not memory.
            old = len(self._fields[0]) if self._fields is not None else 0
            cap = max(self.n + m, projected + projected // 16 + 1024, old + old // 2)
            grown = [np.empty((cap, *f.shape[1:]), f.dtype) for f in block]
            if self._fields is not None:
                for g, f in zip(grown, self._fields):
                    g[:self.n] = f[:self.n]
            self._fields = grown
        for g, f in zip(self._fields, block):
            g[self.n:self.n + m] = f
        self.n += m

    def parts(self) -> list[tuple]:
        """The joined blocks (views), then any block still waiting for one before it."""
        head = [tuple(f[:self.n] for f in self._fields)] if self._fields is not None else []
        return head + list(self._early.values())
