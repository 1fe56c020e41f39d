"""GPU engine of the quantitative-trait scan: dense products on the device, a proven screen, the
CPU's exact test for every pair whose outcome the screen cannot decide (docs/qt_epistasis.md §4).

Per tile of SNP pairs the moments come from two float64 matrix products (cuBLAS through
``xp.matmul``) and PLINK's test runs on them operation for operation with a margin per pair
(gboost/engines/qt_screen.py: :func:`~gboost.engines.qt_screen.tile_moments`,
:func:`~gboost.engines.qt_screen.linear_screen`).

Every pair whose outcome the margin cannot decide is tested again on the CPU in PLINK's order
(:func:`gboost.engines.qt_cpu.exact_stats`): its pass/fail (check 6 within the margin), its row of
``.epi.qt`` (STAT + margin >= alpha1), its N_SIG (|STAT - alpha2| <= margin) and its chance of
being a SNP's best partner (STAT + margin >= the best STAT - margin seen so far for either SNP).
The other pairs' counts are reduced per tile on the device and summed on the host. So the files
equal the CPU engine's byte for byte; the tile math is written against an array module ``xp``
(numpy in the CPU tests, cupy here), and on the device :func:`linear_screen` runs as one kernel
traced from the same function (gboost/engines/qt_fused.py: the same IEEE operations in the same
order, no FMA).

Several GPUs (``gpus``) each hold the dosages and take row blocks of tiles from one shared queue on
a host thread of their own; the files do not depend on how many or in which order tiles finish
(docs/qt_epistasis.md §4). A scan can cover a share of the rows (``--part``) and be checkpointed
and resumed (``--resume``: each finished tile recorded in gboost/pipeline/checkpoint.py's ledger; §8 there).
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import os
import queue
import threading
import time
from dataclasses import dataclass

import numba as nb
import numpy as np

from gboost.engines.qt_cpu import (QTPlanes, QTScanCore, QTTotals, exact_stats, no_tables, pairs_per_snp, plink_best,
                                   qt_planes, tile_pairs_per_snp, with_checkpoint)
from gboost.engines.qt_screen import TraitSumErrors, linear_screen, tile_moments
from gboost.runtime.numba_cache import cached_njit
from gboost.data.study import Study
from gboost.pipeline.tiles import Summary, SummaryPartial, Tile, TileResult, plan_rect_tiles

DEFAULT_TILE = 2048


@dataclass
class TileScreen:
    """One tile's outcome on the device side: pairs to test exactly (global indices), and the
    decided pairs' N_SIG and fail counts of the tile's rows and columns (host arrays: the caller's
    thread sums them, so that what it has summed is always whole tiles, as a checkpoint needs)."""

    xi: np.ndarray
    xj: np.ndarray
    sig_rows: np.ndarray
    sig_cols: np.ndarray
    fail_rows: np.ndarray
    fail_cols: np.ndarray

    def add_counts(self, tile: tuple[int, int, int, int], n_sig: np.ndarray, n_fail: np.ndarray) -> None:
        i0, i1, j0, j1 = tile
        n_sig[i0:i1] += self.sig_rows
        n_sig[j0:j1] += self.sig_cols
        n_fail[i0:i1] += self.fail_rows
        n_fail[j0:j1] += self.fail_cols


class DeviceState:
    """Per-SNP arrays kept on a device across tiles: the running lower bounds of each SNP's best
    STAT (partners after it, partners before it) among the pairs that device decided."""

    def __init__(self, xp, p: int):
        self.lb_after = xp.full(p, -xp.inf)
        self.lb_before = xp.full(p, -xp.inf)


def screen_tile(xp, dose, y, errs: TraitSumErrors, state: DeviceState, i0: int, i1: int, j0: int, j1: int,
                alpha1: float, alpha2: float, screen=None) -> TileScreen:
    """Screen pairs (i, j), i in [i0, i1), j in [j0, j1), i < j (see the module notes). ``screen``:
    :func:`linear_screen` (default) or its fused kernel (gboost/engines/qt_fused.py), same results."""
    mom = tile_moments(xp, dose[i0:i1], dose[j0:j1], y)
    with np.errstate(all="ignore"):  # failed pairs divide by 0 (numpy warns; they are masked)
        stat, ok, margin, unsure = (screen or linear_screen)(xp, mom, errs)
    ii = xp.arange(i0, i1)[:, None]
    jj = xp.arange(j0, j1)[None, :]
    upper = jj > ii
    sure_ok = ok & ~unsure & upper
    low = xp.where(sure_ok, stat - margin, -xp.inf)
    state.lb_after[i0:i1] = xp.maximum(state.lb_after[i0:i1], low.max(axis=1))
    state.lb_before[j0:j1] = xp.maximum(state.lb_before[j0:j1], low.max(axis=0))
    high = stat + margin
    best = ok & (high > 0.0) & ((high >= state.lb_after[i0:i1, None]) | (high >= state.lb_before[None, j0:j1]))
    band2 = ok & (xp.abs(stat - alpha2) <= margin)
    if alpha1 == 0.0:
        row = xp.ones_like(ok)  # --epi1 1: every pair is a row
    else:
        row = ok & (high >= alpha1)
    exact = upper & (unsure | band2 | row | best)
    sure = upper & ~exact
    sig = sure & ok & (stat >= alpha2)
    fails = sure & ~ok
    R, C = i1 - i0, j1 - j0
    counts = _host(xp.concatenate([sig.sum(axis=1), sig.sum(axis=0), fails.sum(axis=1),
                                   fails.sum(axis=0)])).astype(np.int64)  # one copy to the host
    r, c = xp.nonzero(exact)
    return TileScreen(_host(r).astype(np.int64) + i0, _host(c).astype(np.int64) + j0, counts[:R],
                      counts[R:R + C], counts[R + C:2 * R + C], counts[2 * R + C:])


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def dosages(study: Study, rows: slice = slice(None), out: np.ndarray | None = None) -> np.ndarray:
    """(p, n) int8 copies of PLINK's A1 (-1 missing), samples in plane order, of the SNPs ``rows``
    (into ``out`` when given): one compiled pass over the planes, word by word, in parallel over
    SNPs (the NumPy decode, gboost.stats.qt_products.dosage_matrix, was most of the GPU engine's
    prepare; tests hold the two equal)."""
    lay = study.layout
    planes = study.planes[rows]
    flip = (np.ascontiguousarray(study.a1_flip[rows], dtype=np.bool_) if study.a1_flip is not None
            else np.zeros(planes.shape[0], np.bool_))
    if out is None:
        out = np.empty((planes.shape[0], study.n_samples), np.int8)
    _decode_dosages(planes, flip, lay.n_ctrl, lay.w_ctrl, lay.n_case, out)
    return out


@cached_njit(parallel=True, nogil=True)
def _decode_dosages(planes, flip, n_ctrl, w_ctrl, n_case, out):
    # Word by word, branch-free over the bits (the loop vectorises): a called sample's dosage is
    # (plane 1 bit) + 2 (plane 2 bit), a missing one's 0 - 1. A flipped SNP swaps planes 0 and 2.
    W = planes.shape[2]
    for s in nb.prange(planes.shape[0]):
        for w in range(W):
            # controls are bits 0.. of words [0, w_ctrl); cases bits 0.. of words [w_ctrl, W)
            if w < w_ctrl:
                k0, m = 64 * w, min(64, n_ctrl - 64 * w)
            else:
                k0, m = n_ctrl + 64 * (w - w_ctrl), min(64, n_case - 64 * (w - w_ctrl))
            p0, p1, p2 = planes[s, 0, w], planes[s, 1, w], planes[s, 2, w]
            if flip[s]:
                p0, p2 = p2, p0
            called = p0 | p1 | p2
            for b in range(m):
                sb = np.uint64(b)
                t = ((p1 >> sb) & np.uint64(1)) + (((p2 >> sb) & np.uint64(1)) << np.uint64(1)) \
                    + ((called >> sb) & np.uint64(1))
                out[s, k0 + b] = np.int8(t) - np.int8(1)


def fold_exact(p: int, xi, xj, ok, stat, alpha1: float, alpha2: float):
    """The exactly tested pairs' share of the summary (PLINK's rules, as the CPU engine's folds):
    counts, each SNP's best partner after / before it (larger STAT, then the earliest partner;
    a best must exceed 0) and the rows of ``.epi.qt``."""
    n_sig = np.zeros(p, np.int64)
    n_fail = np.zeros(p, np.int64)
    good = ok
    sig = good & (stat >= alpha2)
    np.add.at(n_sig, xi[sig], 1)
    np.add.at(n_sig, xj[sig], 1)
    np.add.at(n_fail, xi[~good], 1)
    np.add.at(n_fail, xj[~good], 1)
    best_after = np.zeros(p)
    after_id = np.full(p, -1, np.int64)
    best_before = np.zeros(p)
    before_id = np.full(p, -1, np.int64)
    pos = good & (stat > 0.0)
    for own, other, best, bid in ((xi, xj, best_after, after_id), (xj, xi, best_before, before_id)):
        o, t, s = own[pos], other[pos], stat[pos]
        order = np.lexsort((t, -s, o))  # per SNP: largest STAT first, then the earliest partner
        o, t, s = o[order], t[order], s[order]
        first = np.r_[True, o[1:] != o[:-1]] if len(o) else np.zeros(0, bool)
        best[o[first]] = s[first]
        bid[o[first]] = t[first]
    keep = (good & (stat >= alpha1)) | ((alpha1 == 0.0) & ~good)
    return n_sig, n_fail, best_after, after_id, best_before, before_id, keep


DECODE_ROWS = 4096  # SNPs decoded per fill of the host buffer that goes up to the devices


class QTDeviceRunner:
    """One device's share of a scan: the study's dosages and trait on it, the running counts and
    bounds of the tiles it screened (:class:`DeviceState`), and the tile screen run under its
    device. With numpy (the CPU tests) each runner is a separate "device" of its own arrays."""

    def __init__(self, xp, device_id: int, p: int, n: int, trait: np.ndarray, errs: TraitSumErrors, screen):
        self.xp, self.device_id, self.screen_fn = xp, device_id, screen
        with self.use():
            self.dose = xp.empty((p, n), xp.int8)
        self.retrait(trait, errs)

    def retrait(self, trait: np.ndarray, errs: TraitSumErrors) -> None:
        """A scan of the same dosages with another trait (a permutation's): the trait and its error
        bounds replace the old, the running bounds and the tile count start again."""
        xp = self.xp
        self.errs = errs
        self.tiles = 0
        with self.use():
            self.y = xp.asarray(np.asarray(trait, np.float64))
            self.state = DeviceState(xp, self.dose.shape[0])

    def use(self):
        """The context in which this runner's arrays live (CuPy's current device is per thread)."""
        if self.xp.__name__ == "numpy":
            return contextlib.nullcontext()
        return self.xp.cuda.Device(self.device_id)

    def load(self, r0: int, block: np.ndarray) -> None:
        """Dosage rows ``r0 ..`` from the host."""
        with self.use():
            if self.xp.__name__ == "numpy":
                self.dose[r0:r0 + len(block)] = block
            else:
                self.dose[r0:r0 + len(block)].set(block)

    def screen(self, tile: tuple[int, int, int, int], alpha1: float, alpha2: float) -> TileScreen:
        with self.use():
            self.tiles += 1
            return screen_tile(self.xp, self.dose, self.y, self.errs, self.state, *tile, alpha1, alpha2,
                               self.screen_fn)



def plan_qt_tiles(p: int, T: int, rows: tuple[int, int] | None = None) -> list[tuple[int, int, int, int]]:
    """Tiles (i0, i1, j0, j1) of the pair triangle (of SNP1 ``rows``, default all), row blocks of T
    SNPs by column blocks from the diagonal on; each pair i < j in exactly one (a tile on the
    diagonal holds its i < j half)."""
    r0, r1 = rows if rows is not None else (0, p)
    return [(i0, min(r1, i0 + T), j0, min(p, j0 + T)) for i0 in range(r0, r1, T) for j0 in range(i0, p, T)]


class QTGPUEngine:
    """All pairs of a QT study on one or more GPUs (see the module notes); ``xp`` numpy runs the
    same tile math on the CPU (the tests).

    ``gpus``: device ids (default: every visible GPU; with numpy, ``gpus=[0, 1]`` makes two
    simulated devices). Each device holds the study's dosages and screens tiles from one shared
    queue on a host thread of its own; a tile's outcome does not depend on which device or in which
    order it ran, except for how many pairs go to the exact re-test (each device's running bounds
    are its own), so the files are the same whatever the number of devices (tests/gpu/test_qt_gpu.py).
    ``runner``: the class of the per-device runners (tests inject slow or failing ones).
    """

    name = "gpu"

    def __init__(self, threads: int | None = None, tile: int | None = None, xp=None, fused: bool = True,
                 gpus: list[int] | None = None, runner=QTDeviceRunner):
        if tile is not None and tile < 1:
            raise ValueError(f"tile must be >= 1 SNP, got {tile}")
        self.threads = threads or os.cpu_count() or 1
        self.tile = int(tile or DEFAULT_TILE)
        if xp is None:
            from gboost.engines.cupy_import import import_cupy

            xp = import_cupy()
        self.xp = xp
        self._gpus = None if gpus is None else [int(g) for g in gpus]
        self._runner_class = runner
        # On the device the per-pair statistic runs as one fused kernel traced from linear_screen
        # (one pass over memory instead of ~300); numpy runs the array code itself.
        self.screen = linear_screen
        if fused and xp.__name__ != "numpy":
            from gboost.engines.qt_fused import fused_screen

            self.screen = fused_screen
        self.timings: dict[str, float] = {}
        self.n_exact = 0
        self.tiles_per_device: dict[int, int] = {}
        # The runners of the last scan and the genotypes their dosages came from, kept until close():
        # a scan of the same genotypes with another trait (each of --perm's permutations) uploads only
        # the trait, not the p x n dosages.
        self._held: tuple | None = None

    def device_ids(self) -> list[int]:
        """The devices a scan uses: ``gpus`` checked against those visible, or all of them."""
        if self.xp.__name__ == "numpy":
            return list(dict.fromkeys(self._gpus)) if self._gpus else [0]
        from gboost.engines.devices import select_gpus

        return select_gpus(self._gpus, self.xp.cuda.runtime.getDeviceCount())

    def describe(self) -> str:
        ids = self.device_ids()
        if self.xp.__name__ == "numpy":
            return "GPU engine's tile math on numpy (CPU)" + (f", {len(ids)} simulated devices" if len(ids) > 1 else "")
        names = []
        for d in ids:
            props = self.xp.cuda.runtime.getDeviceProperties(d)
            names.append(props["name"].decode() if isinstance(props["name"], bytes) else props["name"])
        how = "fused" if self.screen is not linear_screen else "array"
        where = names[0] if len(set(names)) == 1 else ", ".join(names)
        where = f"{len(ids)} x {where}" if len(ids) > 1 else where
        return f"GPU ({where}, CuPy float64 GEMM moments, {how} per-pair screen, exact CPU re-test)"

    def probe(self) -> None:
        """Run a tiny product on each device (``--device auto`` falls back to the CPU if this fails)."""
        xp = self.xp
        for d in self.device_ids():
            with (contextlib.nullcontext() if xp.__name__ == "numpy" else xp.cuda.Device(d)):
                a = xp.ones((2, 3))
                float((a @ a.T).sum())

    def _prepare(self, study: Study, runners: list) -> None:
        """Dosages to every device, ``DECODE_ROWS`` SNPs at a time through one host buffer: the host
        never holds the p x n matrix (2.5 GB at 500k x 5k; in a fresh process its first touch alone
        costs seconds of a small machine at 100k x 5k), and each block is decoded once for all devices."""
        p, n = study.n_snps, study.n_samples
        buf = np.empty((min(DECODE_ROWS, max(p, 1)), n), np.int8)
        decode = upload = 0.0
        for r0 in range(0, p, DECODE_ROWS):
            r1 = min(p, r0 + DECODE_ROWS)
            t = time.perf_counter()
            block = dosages(study, slice(r0, r1), buf[:r1 - r0])
            decode += time.perf_counter() - t
            t = time.perf_counter()
            for r in runners:
                r.load(r0, block)
            upload += time.perf_counter() - t
        self.timings["prepare.decode"] = decode
        self.timings["prepare.upload"] = upload

    def _runners(self, study: Study, errs: TraitSumErrors) -> list:
        """One runner a device with ``study``'s dosages and trait: the last scan's runners where
        they hold the same genotypes (the same planes and A1 flips, the same devices), given the new
        trait; else new ones, the dosages uploaded (the old runners let go first: their device
        memory is the new ones' room)."""
        ids = self.device_ids()
        held = self._held
        if (held is not None and held[0] is study.planes and held[1] is study.a1_flip
                and [r.device_id for r in held[2]] == ids):
            for r in held[2]:
                r.retrait(study.trait, errs)
            self.timings["prepare.decode"] = self.timings["prepare.upload"] = 0.0
            return held[2]
        if held is not None:
            self.close()
        runners = [self._runner_class(self.xp, d, study.n_snps, study.n_samples, study.trait, errs, self.screen)
                   for d in ids]
        self._prepare(study, runners)
        self._held = (study.planes, study.a1_flip, runners)
        return runners

    def close(self) -> None:
        """Let go of the devices' dosages (a later scan uploads them again). Idempotent."""
        held, self._held = self._held, None
        if held is None or self.xp.__name__ == "numpy":
            return
        ids = [r.device_id for r in held[2]]
        held[2].clear()  # (the runners' arrays go with the last reference to them)
        for d in ids:
            with self.xp.cuda.Device(d):
                self.xp.get_default_memory_pool().free_all_blocks()

    def checkpoint_plan(self, rows: tuple[int, int] | None = None, rect: bool = False) -> dict:
        """What a checkpoint of this engine's tiles pins besides the study and thresholds: a tile is
        an index into this plan (of the triangle, or of a candidate-set scan's rectangle: ``rect``)."""
        return {"engine": "qt-gpu-rect" if rect else "qt-gpu-tiles", "tile": max(1, self.tile),
                "rows": list(rows) if rows else None}

    def scan(self, study: Study, alpha1: float, alpha2: float, progress=None, cancel=None,
             rows: tuple[int, int] | None = None, checkpoint=None) -> tuple[QTScanCore, QTPlanes]:
        """Every pair i < j with SNP1 ``i`` in ``rows`` (default all: a --part scans a share).
        ``checkpoint`` (gboost.pipeline.checkpoint.Ledger): the tiles finished by an interrupted run are
        taken from it, and each finished tile is recorded in it."""
        nthreads = min(self.threads, nb.config.NUMBA_NUM_THREADS)
        nb.set_num_threads(nthreads)
        t0 = time.perf_counter()
        p = study.n_snps
        rect = study.rect  # a candidate-set scan: the case-control scan's plan of its rectangle
        if rect is not None:
            tiles = plan_rect_tiles(rect.n_rows, p, rect.self_columns(), max(1, self.tile), rows)
        else:
            tiles = [Tile(k, *t) for k, t in enumerate(plan_qt_tiles(p, max(1, self.tile), rows))]
        acc = QTTotals(p)
        with_checkpoint(checkpoint, tiles, max(1, self.tile), acc)
        errs = TraitSumErrors.of(study.trait)
        runners = self._runners(study, errs)
        self.timings["prepare"] = time.perf_counter() - t0

        # The CPU's view of the study (the exact re-test's planes and totals, and the marginal tests
        # after the scan) is built on a host thread while the devices run the tiles.
        def planes():
            nb.set_num_threads(nthreads)  # per thread in numba
            t = time.perf_counter()
            qp = qt_planes(study)
            return qp, time.perf_counter() - t

        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gboost-qt-planes") as pool:
            job = pool.submit(planes)
            t0 = time.perf_counter()
            try:
                self._run_tiles(runners, tiles, acc, alpha1, alpha2, progress, cancel, checkpoint)
            finally:
                job.exception()  # never leave the planes' parallel loops running behind an error
            self.tiles_per_device = {r.device_id: r.tiles for r in runners}
            self.timings["tiles"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            qp, self.timings["planes"] = job.result()
            self.timings["planes_wait"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        total = sum(t.n_pairs for t in tiles)
        # the decided pairs' counts (a tile's undecided pairs count as neither sig nor failed there)
        n_sig, n_fail = acc.summary.n_sig.copy(), acc.n_fail
        # tiles finish in any order on several devices: the re-test's input in (i, j) order
        xi, xj = acc.survivors()
        self.n_exact = len(xi)
        ok = np.zeros(len(xi), np.bool_)
        stat = np.full(len(xi), np.nan)
        if len(xi):
            exact_stats(*qp.scan_args(), xi, xj, ok, stat)
        es, ef, ba, ba_id, bb, bb_id, keep = fold_exact(p, xi, xj, ok, stat, alpha1, alpha2)
        n_sig += es
        n_fail += ef
        if rect is not None:  # a rectangle's summary is its rows': every partner is after the row
            n_fail[rect.n_rows:] = 0
            pairs, sides, first = rect.row_pairs(rows), ((ba, ba_id),), rect.n_rows
        else:
            pairs, sides, first = pairs_per_snp(p, rows), ((ba, ba_id), (bb, bb_id)), 0
        # the partners, merged as tiles merge (tiles.better; -inf / -1 where none beat 0)
        partial = Summary(n_sig, pairs - n_fail, np.full(p, -np.inf), np.full(p, -1, np.int64))
        for best, bid in sides:
            partial.merge(0, np.zeros(p, np.int64), np.zeros(p, np.int64), np.where(bid < 0, -np.inf, best), bid)
        best, partner = plink_best(partial, first)
        si, sj = xi[keep], xj[keep]
        self.timings["exact"] = time.perf_counter() - t0
        # (the triangle counts each failed pair at both SNPs, a rectangle at its row only)
        n_valid = total - (int(n_fail.sum()) if rect is not None else int(n_fail.sum()) // 2)
        return QTScanCore(si, sj, n_sig.copy(), n_fail, best, partner, n_valid, partial), qp

    def _run_tiles(self, runners: list, tiles: list, acc: QTTotals, alpha1: float, alpha2: float,
                   progress, cancel, checkpoint) -> None:
        """Every tile not yet in ``acc`` on the devices: one host thread per device takes row blocks
        of tiles from a shared queue; this (the caller's) thread adds each result to ``acc``, so
        that ``acc`` always holds whole tiles, each recorded in ``checkpoint`` (a
        :class:`gboost.pipeline.checkpoint.Ledger`) as it is added. ``cancel()`` is asked here before the
        first tile and after each; on true, or on a device's error, the workers stop after their
        current tile, the checkpoint is flushed and the error is raised."""
        # The queue's items are row blocks (their tiles in order): a device then sees every tile of
        # a row, so its running bound of each row SNP's best partner is the one device's (measured on
        # numpy, 3,000 SNPs, tile 100: 17,241 pairs re-tested on one device; by single tiles from the
        # queue 25,874 on two and 36,516 on four). Later blocks are smaller: the end stays balanced.
        work: queue.SimpleQueue = queue.SimpleQueue()
        blocks: dict[int, list] = {}
        for t in tiles:
            if t.index not in acc.tiles_done:
                blocks.setdefault(t.i0, []).append(t)
        for i0 in sorted(blocks):
            work.put(blocks[i0])
        out: queue.SimpleQueue = queue.SimpleQueue()
        stop = threading.Event()
        done_marker = object()

        def worker(runner) -> None:
            try:
                while not stop.is_set():
                    try:
                        block = work.get_nowait()
                    except queue.Empty:
                        break
                    for tile in block:
                        if stop.is_set():
                            break
                        out.put((tile, runner.screen((tile.i0, tile.i1, tile.j0, tile.j1), alpha1, alpha2)))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, raised there
                stop.set()
                out.put(exc)
            finally:
                out.put(done_marker)

        def cancelled() -> None:
            if cancel is not None and cancel():
                from gboost.errors import ScanCancelled

                raise ScanCancelled()

        total = sum(t.n_pairs for t in tiles)
        done = sum(t.n_pairs for t in tiles if t.index in acc.tiles_done)
        if progress is not None and done:
            progress(done, total)
        threads = [threading.Thread(target=worker, args=(r,), name=f"gboost-qt-gpu{r.device_id}", daemon=True)
                   for r in runners]
        try:
            cancelled()
            for t in threads:
                t.start()
            finished = 0
            while finished < len(threads):
                item = out.get()
                if item is done_marker:
                    finished += 1
                    continue
                if isinstance(item, BaseException):
                    raise item
                tile, ts = item
                res = tile_result(tile, ts)
                acc.add_recorded(res, checkpoint)
                done += tile.n_pairs
                if progress is not None:
                    progress(done, total)
                if done < total:
                    cancelled()
        finally:
            stop.set()
            for t in threads:
                if t.ident is not None:  # started
                    t.join()
            if checkpoint is not None:
                checkpoint.flush()  # the finished tiles on disk: --resume goes on from them


def tile_result(tile: Tile, ts: TileScreen) -> TileResult:
    """A screened tile as the checkpoint records it (gboost.engines.qt_cpu.QTTotals): the pairs
    for the exact re-test as its kept pairs, the decided pairs' counts as its partials (no
    partners: the re-test finds them)."""
    rows, cols = tile_pairs_per_snp(tile)
    m = len(ts.xi)
    none = (lambda n: (np.full(n, -np.inf), np.full(n, -1, np.int64)))
    return TileResult(tile, ts.xi, ts.xj, np.zeros(m), no_tables(m), int(tile.n_pairs - ts.fail_rows.sum()),
                      SummaryPartial(tile.i0, ts.sig_rows, rows - ts.fail_rows, *none(len(rows))),
                      SummaryPartial(tile.j0, ts.sig_cols, cols - ts.fail_cols, *none(len(cols))))
