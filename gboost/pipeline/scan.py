"""The scan pipeline: one code path for the CLI, the GUI, the library and the cluster backends.

``run_pipeline``: engine (:func:`gboost.engines.make_engine`) -> :func:`screen` (plan tiles, the engine
screens each, progress event per tile, cancel checked between tiles, each tile recorded in the
checkpoint) -> :func:`finalize` (exact test of the survivors, per-SNP summary completed, marginal
tests) -> :class:`ScanResult`. Writing files is separate (:mod:`gboost.outputs.results`), so nothing is
written for a cancelled scan. docs/DESIGN.md follows one scan through these steps.

Where the pieces live: tiles, partial summaries and PLINK's best-partner rule in gboost/pipeline/tiles.py,
the running totals in gboost/pipeline/accumulate.py, finalize's host work (run beside a GPU or Dask screen)
in gboost/pipeline/hostwork.py, the settings in gboost/pipeline/params.py.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterator

import numpy as np

from gboost.pipeline.accumulate import Accumulator
from gboost.engines.base import Engine, overlaps_host_work
from gboost.errors import ScanCancelled
from gboost.pipeline.hostwork import HostWork
from gboost.pipeline.workers import ScanWorkers
from gboost.pipeline.params import EngineOptions, ReportOptions, ScanParams, ScreenParams  # noqa: F401 - the API
from gboost.pipeline.progress import Progress
from gboost.stats.multiple import argsort_stable, bh_qvalues, r2_at, r2_from_tables
from gboost.stats.pvalues import Thresholds
from gboost.data.planes import PlaneSource
from gboost.data.study import Study
from gboost.pipeline.tiles import Summary, part_rows, plan_rect_tiles, plan_tiles, rect_rows


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
    emp2: np.ndarray | None = None  # --perm's family-wise P of each pair (gboost/pipeline/permute.py)

    def take(self, idx) -> "Pairs":
        return Pairs(*(getattr(self, f)[idx] for f in ("i", "j", "ksa", "stat", "df", "p", "converged", "tables")),
                     q=None if self.q is None else self.q[idx],
                     adj=None if self.adj is None else tuple(a[idx] for a in self.adj),
                     emp2=None if self.emp2 is None else self.emp2[idx])

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
    calibration: object | None = None  # gboost.stats.calibration.Calibration of the interaction test
    covariate_names: list | None = None  # --covar columns used for STAT_ADJ / P_ADJ
    # Output work done beside the screen (gboost/pipeline/hostwork.py): {"outputs": a Future of
    # gboost.outputs.results.prepare_outputs}; empty when finalize ran serially
    prepared: dict = field(default_factory=dict)
    engine_info: dict = field(default_factory=dict)  # the engine's screen_info() (run.json "engine_info")
    perm: object | None = None  # --perm: gboost.pipeline.permute.PermResult (perm.tsv, EMP2, run.json)

    @cached_property
    def reported(self) -> Pairs:
        """pairs.tsv: exact P <= epi1, sorted by STAT descending (ties: file order), with BH q
        values over all valid tests; then --min-distance / --max-r2 set aside pairs of nearby or
        correlated SNPs (the PLINK-format files are never filtered)."""
        idx, q = self.reported_rows
        rep = self.screened.take(idx)
        rep.q = q
        return rep

    @cached_property
    def reported_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """:attr:`reported` as rows of ``screened`` and their q values, without copying the pairs
        (their tables alone are 144 bytes a pair: copying them was most of the writer's time on a
        large file, bench/bench_write.py; pairs.tsv gathers its rows by these indices)."""
        sc = self.screened
        keep = np.flatnonzero(sc.p <= self.params.epi1)
        # The q values' sort (by P) and the rows' sort (by STAT) are independent: NumPy's sorts
        # release the GIL, so on a large file the first runs on a thread beside the second (the
        # writer waits for both before pairs.tsv's rows start).
        q_job = _run_beside(bh_qvalues, sc.p[keep], max(self.n_valid, 1), beside=len(keep) >= 100_000)
        i, j = sc.i[keep], sc.j[keep]
        key = i.astype(np.int64) * max(self.study.n_snps, 1) + j
        if len(key) < 2 or (key[1:] > key[:-1]).all():
            # screened is in (i, j) order (finalize makes it so): a stable sort on STAT alone then
            # breaks ties in file order, as the lexsort below does, in less time.
            order = argsort_stable(-sc.stat[keep])
        else:
            order = np.lexsort((j, i, -sc.stat[keep]))
        idx, q = keep[order], q_job()[order]
        ok = np.ones(len(idx), bool)
        if self.params.min_distance_kb is not None:
            d = self.pair_distance(sc, idx)
            ok &= np.isnan(d) | (d >= self.params.min_distance_kb * 1000.0)
        if self.params.max_r2 is not None:
            ok &= ~(r2_at(sc.tables, idx) > self.params.max_r2)
        return (idx, q) if ok.all() else (idx[ok], q[ok])

    @property
    def n_reported(self) -> int:
        """Rows of pairs.tsv (``len(reported)`` without building it)."""
        return len(self.reported_rows[0])

    def pair_distance(self, pairs: Pairs, rows: np.ndarray | None = None) -> np.ndarray:
        """Base-pair distance of each pair (of ``pairs[rows]`` when given); NaN across chromosomes."""
        i, j = (pairs.i, pairs.j) if rows is None else (pairs.i[rows], pairs.j[rows])
        return self.study.variants.distance(i, j)

    @property
    def bonferroni(self) -> float:
        return 0.05 / self.n_valid if self.n_valid else float("nan")


@dataclass
class ScreenResult:
    """What :func:`screen` hands to :func:`finalize` (or, for a --part, to the part file)."""

    acc: Accumulator
    thresholds: Thresholds
    timings: dict
    engine: str  # the engine's name ('cpu', 'gpu', 'dask')
    device: str  # its describe(): the device in words, for the log and run.json
    engine_info: dict = field(default_factory=dict)  # its screen_info(): run.json's "engine_info"
    # (A plain record, as the accumulator is: the finalize step's host work started beside the
    # screen belongs to the scan's ScanWorkers, gboost/pipeline/workers.py.)


def _run_beside(fn, *args, beside: bool):
    """``fn(*args)`` on a thread now (``beside``) or here when asked for: a function returning it."""
    if not beside:
        return lambda: fn(*args)
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gboost-sort")
    job = pool.submit(fn, *args)
    pool.shutdown(wait=False)
    return job.result


def run_pipeline(study: Study, params: ScanParams | None = None, *, engine: Engine | None = None,
                 checkpoint=None, progress: Callable[[Progress], None] | None = None,
                 cancel: Callable[[], bool] | None = None, covariates: tuple | None = None,
                 on_screened: Callable[[ScreenResult], None] | None = None,
                 planes: PlaneSource | None = None) -> ScanResult | ScreenResult:
    """Scan every pair of ``study`` (or of ``params.part``): the one sequence the CLI, the GUI and
    the library run.

    ``engine`` defaults to ``make_engine(params.engine)``. ``checkpoint`` (a
    :class:`gboost.pipeline.checkpoint.Ledger`) replays the tiles an interrupted run finished, records each
    new one, and is closed when the screen ends (finished or not). ``cancel()`` turning true between
    tiles raises :class:`ScanCancelled`. ``covariates`` = (matrix aligned with study.samples, names)
    adds the covariate-adjusted tests. ``on_screened`` sees the screen's result before finalize
    (the CLI times its stages there). ``planes``: the study's planes as a background encoder writes
    them (``gboost.data.load.load_with_encoder``'s source), through which the scan reads them (the
    screen starts on the first rows encoded); None where the study's planes are complete. The
    scan's threads (that encoder, finalize's host work) are held by one
    :class:`gboost.pipeline.workers.ScanWorkers` for this call: a failed or cancelled scan stops
    them all before the exception leaves.

    Returns the :class:`ScanResult`; for a --part, whose finalize is `gboost merge`'s, the
    :class:`ScreenResult` (gboost/pipeline/parts.py writes it).
    """
    params = params or ScanParams()
    _check_pipeline_args(study, params, covariates)
    strata = None
    if params.perm:  # a bad --within file is refused before the scan, not after it
        from gboost.pipeline.permute import strata_of

        strata = strata_of(study, params)
    t0 = time.perf_counter()
    with ScanWorkers(study, planes) as workers:
        try:
            screened = screen(study, params, engine=engine, progress=progress, cancel=cancel, checkpoint=checkpoint,
                              workers=workers)
        finally:
            if checkpoint is not None:
                checkpoint.close()
        t1 = time.perf_counter()
        screened.timings["screen_call"] = t1 - t0  # prepare + screen + planning, as the caller sees it
        if on_screened is not None:
            on_screened(screened)
        if params.part:
            return screened
        res = finalize(study, params, screened, covariates=covariates, workers=workers)
    res.timings["finalize_call"] = time.perf_counter() - t1
    if params.perm:
        permute(study, params, res, engine=engine, checkpoint=checkpoint, progress=progress, cancel=cancel,
                strata=strata)
    return res


def permute(study: Study, params: ScanParams, res: ScanResult, *, engine: Engine | None = None, checkpoint=None,
            progress=None, cancel=None, strata: np.ndarray | None = None) -> None:
    """``--perm``: the permutations' maxima on the scan's engine (gboost/pipeline/permute.py), each
    recorded beside the scan's checkpoint, and every screened pair's EMP2 into ``res``. ``strata``:
    the --within file's codes (:func:`gboost.pipeline.permute.strata_of`), None without the file."""
    from gboost.engines import make_engine
    from gboost.pipeline.permute import run_permutations

    t = time.perf_counter()
    sc = res.screened
    ok = ~np.isnan(sc.stat)
    first = float(sc.stat[ok].max()) if ok.any() else None  # the real scan's maximum: a null permutation's peer
    perm = run_permutations(study, engine or make_engine(params.engine), params.perm, params.perm_seed,
                            strata=strata, within=params.within, first_threshold=first,
                            checkpoint_dir=None if checkpoint is None else checkpoint.dir,
                            progress=progress, cancel=cancel)
    sc.emp2 = perm.emp2(sc.stat)
    res.perm = perm
    res.timings["permutations"] = time.perf_counter() - t


# --perm with --covar, refused by run_pipeline and in these words by the CLI and the GUI
PERM_WITH_COVARIATES = ("--perm permutes the case/control labels of the unadjusted test; with covariates the labels "
                        "are not exchangeable, so --perm and --covar do not go together")


def _check_pipeline_args(study, params, covariates) -> None:
    """run_pipeline's arguments, before anything runs: TypeError naming the one of a wrong type,
    ValueError for covariates that do not fit the study."""
    if not isinstance(study, Study):
        raise TypeError(f"run_pipeline: study must be a gboost.Study (gboost.load_study), got {type(study).__name__}")
    if not isinstance(params, ScanParams):
        raise TypeError(f"run_pipeline: params must be a gboost.ScanParams or None, got {type(params).__name__}")
    if study.quantitative:
        raise ValueError("run_pipeline: the study's phenotype is quantitative; its scan is "
                         "gboost.pipeline.qt_scan.run_qt_scan (PLINK's linear --epistasis test)")
    if covariates is not None and params.perm:
        raise ValueError(f"run_pipeline: {PERM_WITH_COVARIATES}")
    if covariates is not None:
        if not isinstance(covariates, tuple) or len(covariates) != 2:
            raise TypeError("run_pipeline: covariates must be (matrix, names), as gboost.stats.covariates.read_covariates "
                            f"returns, or None; got {type(covariates).__name__}")
        matrix, names = covariates
        shape = np.shape(matrix)
        if len(shape) != 2 or shape[0] != study.n_samples or shape[1] != len(names):
            raise ValueError(f"run_pipeline: covariates of shape {shape} for {study.n_samples} samples and "
                             f"{len(names)} names (expected ({study.n_samples}, {len(names)}), aligned with "
                             "study.samples)")


def run_scan(study: Study, params: ScanParams | None = None, **kwargs) -> ScanResult:
    """:func:`run_pipeline` of a whole scan (no --part), under its earlier name."""
    params = params or ScanParams()
    if params.part:
        raise ValueError("run_scan scans the whole triangle; a --part goes through run_pipeline")
    return run_pipeline(study, params, **kwargs)


def scan_thresholds(params: ScanParams) -> Thresholds:
    return params.thresholds()


def screen(study: Study, params: ScanParams | None = None, *, engine: Engine | None = None,
           progress=None, cancel=None, checkpoint=None, workers: ScanWorkers | None = None) -> ScreenResult:
    """The screen alone: tiles -> :class:`ScreenResult` (used by run_pipeline, --part and workers).

    ``workers`` (:class:`gboost.pipeline.workers.ScanWorkers`): the scan's threads. The engine reads
    the planes through ``workers.planes``, and with an engine that leaves the host's cores free
    (:func:`overlaps_host_work`) the finalize step's host work starts on them, in the background
    (``workers.host``), for ``finalize(..., workers=workers)`` to collect. If the screen is cancelled
    or fails, they are stopped (host work and encoder) before the exception leaves. None: the
    study's planes are complete, and finalize runs its host work itself.
    """
    from gboost.engines import make_engine

    params = params or ScanParams()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    engine = engine or make_engine(params.engine)
    beside = workers is not None
    workers = workers if beside else ScanWorkers(study)
    planes = workers.planes
    # A --part is not finalized by this process (merge does it), so nothing to start for it.
    host = workers.start_host(study, params) if beside and overlaps_host_work(engine) and not params.part else None
    try:
        thr = params.thresholds()
        engine.prepare(study, thr, planes=planes)
        timings["prepare"] = time.perf_counter() - t0

        p = study.n_snps
        tile = checkpoint.tile if checkpoint is not None and checkpoint.tile else engine.tile_snps()
        tiles = scan_tiles(study, params, tile)
        total_pairs = sum(t.n_pairs for t in tiles)
        acc = Accumulator(p)
        if checkpoint is not None:
            checkpoint.start(tile=tile, tiles=len(tiles))
            checkpoint.plan(tiles)
            for res in checkpoint.replay():
                acc.add(res)
        if host is not None:
            host.expect(tiles)
            host.feed(acc)
        todo = [t for t in tiles if t.index not in acc.tiles_done]
        order = stream_order(todo, planes) if not planes.done() else todo
        t1 = time.perf_counter()
        cancelled = False
        base = (acc.pairs_done, 0.0)  # the ETA's pace: from the first tile this run finishes on (gboost/pipeline/progress.py)
        first = True

        def should_stop() -> bool:
            nonlocal cancelled
            cancelled = cancelled or (cancel is not None and bool(cancel()))
            return cancelled

        finished = False
        try:
            for res in engine.run_tiles(order, should_stop):
                acc.add(res)
                if host is not None:
                    host.feed(acc)
                if checkpoint is not None:
                    checkpoint.record(res)
                if progress is not None:
                    now = time.perf_counter() - t1
                    progress(Progress(len(acc.tiles_done), len(tiles), acc.pairs_done, total_pairs, now, *base))
                    if first:
                        base, first = (acc.pairs_done, now), False
            finished = not cancelled and len(acc.tiles_done) == len(tiles)
        finally:
            if checkpoint is not None:  # a finished screen may leave the ledger's end to its writer
                checkpoint.flush(wait=not finished)  # thread (Ledger.finish_in_background)
            engine.close()
        if cancelled or len(acc.tiles_done) < len(tiles):
            raise ScanCancelled()
    except BaseException:  # cancelled, failed, interrupted: no thread may outlive the scan
        workers.stop()  # the host work and a background encode (gboost/data/load.py)
        raise
    timings["screen"] = time.perf_counter() - t1
    return ScreenResult(acc, thr, timings, engine.name, engine.describe(), engine.screen_info())


def finalize(study: Study, params: ScanParams, screened: ScreenResult, *,
             covariates: tuple | None = None, part_ties: tuple | None = None,
             workers: ScanWorkers | None = None) -> ScanResult:
    """Exact tests of the survivors, the summary completed, marginal tests: the ScanResult.

    ``covariates`` = (matrix aligned with study.samples, names) adds covariate-adjusted logistic
    tests (gboost.stats.covariates) of the pairs with P <= epi1. ``part_ties`` = (alike classes, [(z,
    partner)] per part): a merge's BEST_SNP ties, as the parts chose them (gboost/pipeline/best_ties.py).

    Work that :func:`screen` started in the background (``workers.host``) is collected here; without
    it (CPU engine, merged parts, no ``workers``) the same work runs now, on this thread. Either way the result is
    the same, byte for byte. timings "marginal", "calibration" and "exact" are the seconds spent
    here on each (near 0 when they overlapped the screen); "host_overlapped" the seconds the
    background thread worked.
    """
    acc, thr = screened.acc, screened.thresholds
    timings = dict(screened.timings)
    workers = workers if workers is not None else ScanWorkers(study)
    workers.planes.wait()  # (complete after any screen; a --resume with every tile done waited in its ledger)
    host = workers.take_host(study, params)
    overlapped = host is not None
    host = host or HostWork(study, params, background=False, planes=workers.planes)
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
        pairs = Pairs(*host.results(acc))
        formatted = host.formatted_blocks() if overlapped else None
        alike = host.alike.result()
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
        from gboost.stats.covariates import adjusted_tests

        t = time.perf_counter()
        sel = np.flatnonzero(pairs.p <= params.epi1)
        adj = (np.full(len(pairs), np.nan), np.zeros(len(pairs), np.int64), np.full(len(pairs), np.nan))
        for arr, vals in zip(adj, adjusted_tests(study, pairs.i[sel], pairs.j[sel], covariates[0])):
            arr[sel] = vals
        pairs.adj = adj
        timings["adjusted_tests"] = time.perf_counter() - t  # (part of "exact")
    summary = acc.summary.copy()
    t5 = time.perf_counter()
    f = host.folded
    summary.merge_partial(f)
    timings["exact_fold"] = time.perf_counter() - t5
    t6 = time.perf_counter()
    from gboost.pipeline.best_ties import apply_part_ties, repair_best

    if alike is not None:  # BEST_SNP among alike partners, as PLINK's doubles order them
        repair_best(study, summary, thr.screen, alike)
    elif part_ties is not None:
        apply_part_ties(summary, *part_ties)
    timings["best_ties"] = time.perf_counter() - t6
    timings["exact"] = time.perf_counter() - t2
    timings["total"] = sum(v for k, v in timings.items() if k in ("prepare", "screen", "exact", "marginal"))
    prepared = {"outputs": host.outputs} if overlapped and host.outputs is not None else {}
    if formatted is not None:
        prepared["formatted"] = formatted
    return ScanResult(study, params, screened.engine, screened.device, pairs, summary, mstat, mp, mdf,
                      acc.n_valid, thr, timings, calib, None if covariates is None else list(covariates[1]), prepared,
                      engine_info=screened.engine_info)


def scan_rows(study: Study, params: ScanParams) -> tuple[int, int] | None:
    """The SNP1 rows of this scan (of its --part): None for every row."""
    if not params.part:
        return None
    rect = study.rect
    return rect_rows(rect.n_rows, *params.part) if rect is not None else part_rows(study.n_snps, *params.part)


def scan_tiles(study: Study, params: ScanParams, tile: int) -> list:
    """The tile plan of the scan: the triangle (of --part's rows), or a candidate-set scan's
    rectangle without each row's own column (gboost/data/candidates.py)."""
    rows = scan_rows(study, params)
    rect = study.rect
    if rect is None:
        return plan_tiles(study.n_snps, tile, rows)
    return plan_rect_tiles(rect.n_rows, study.n_snps, rect.self_columns(), tile, rows)


def stream_order(tiles: list, ready) -> Iterator:
    """``tiles`` (plan order: row block by row block) in the order to screen them while the planes
    are still being encoded (``ready``: gboost.data.planes.PlaneSource, SNPs in order).

    Taken lazily, one at a time: the next tile is the first in plan order whose columns are all
    encoded (j1 <= ready.rows); when none is, the one that needs the fewest SNPs (smallest j1,
    then i0), which the engine then waits for. While the encoder is behind this is column-block
    order, where the work available grows with the square of what is encoded; once it is ahead
    (or done) it is plan order again, so row blocks still complete one after another and
    finalize's host work on them (gboost/pipeline/hostwork.py) still runs beside the screen. A pure
    column-block order would complete every row block in the last column sweep. Results do not
    depend on the order (gboost/pipeline/tiles.py)."""
    rows: dict[int, list] = {}
    for t in tiles:  # within a row block, plan order is by j0 and so by j1
        rows.setdefault(t.i0, []).append(t)
    heads = {a: 0 for a in sorted(rows)}  # row block -> its next tile; only open row blocks
    while heads:
        if ready.done():
            for a, k in heads.items():
                yield from rows[a][k:]
            return
        edge = ready.rows
        pick, least = None, None
        for a, k in heads.items():
            t = rows[a][k]
            if t.j1 <= edge:
                pick = a
                break
            if least is None or (t.j1, t.i0) < least[0]:
                least = ((t.j1, t.i0), a)
        a = pick if pick is not None else least[1]
        k = heads[a]
        yield rows[a][k]
        if k + 1 == len(rows[a]):
            del heads[a]
        else:
            heads[a] = k + 1


