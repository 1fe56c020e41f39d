"""The host work of finalize that needs no finished screen, run beside a screen that leaves the
host's cores free (a GPU or Dask engine): marginal tests and calibration (the study alone), and the
survivors of each row block of tiles, sorted by (i, j) and exact-tested as soon as the block's last
tile is in. With ``background=False`` the same code runs serially in finalize.
"""
from __future__ import annotations

import functools
import time
from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

from gboost.data.planes import PlaneSource
from gboost.pipeline.accumulate import Accumulator
from gboost.runtime.numba_cache import cached_njit
from gboost.pipeline.params import ScanParams
from gboost.stats.exact import exact_tests
from gboost.stats.marginal import marginal_tests
from gboost.stats.pvalues import Thresholds
from gboost.data.study import Study
from gboost.pipeline.tiles import Summary, Tile, better


FORMAT_THREADS = 2  # threads formatting the row blocks' output rows beside the screen


class HostWork:
    """The host work of :func:`gboost.pipeline.scan.finalize` that needs no finished screen: marginal tests
    and calibration (the study alone), and the survivors of each row block of tiles, sorted by
    (i, j) and exact-tested as soon as the block's last tile is in.

    Row blocks cover disjoint SNP1 ranges, so finalize only joins the sorted blocks; what it waits
    for after the screen is the last row block (the smallest: one diagonal tile).

    In the background it all runs on ONE worker thread, in submission order: two threads must
    never run numba-parallel kernels at once. The kernels release the GIL (``nogil``), so the
    thread really runs beside the screen. With ``background=False`` each job runs on the calling
    thread when its result is asked for (the serial path, same code).

    ``planes``: the study's planes as they become readable (gboost/data/planes.py; the encoder may
    still write them beside the screen): the jobs that read planes read them through it. None: the
    study's planes are complete.
    """

    def __init__(self, study: Study, params: ScanParams, *, background: bool = True,
                 planes: PlaneSource | None = None):
        self.study, self.params = study, params
        planes = planes if planes is not None else PlaneSource.complete(study.planes)
        self.busy_s = 0.0  # seconds the background thread spent on jobs (written by that thread only)
        self._pool = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="gboost-host", initializer=_spare_a_core)
                      if background else None)
        self.marginal = self._submit(marginal_tests, study.counts, allelic=params.allelic)
        self.calibration = None
        if params.calibration_pairs and study.planes.shape[2] > 0:  # merged parts carry no planes
            self.calibration = self._submit(_calibrate, study, planes, params.calibration_pairs)
        # What the output files need of the study alone (SNP texts, marginal.tsv's rows), made here
        # only beside a screen that leaves the host free; serially the writer's pool does it
        # faster, in parallel runs.
        self.outputs = self._submit(self._prepare_outputs) if background else None
        # The SNPs alike up to their genotypes' names, for PLINK's BEST_SNP on ties (gboost/pipeline/best_ties.py;
        # in a small study all SNPs, one class): a pass over every SNP's planes, here beside the screen
        # rather than on the command's way after it.
        self.alike = self._submit(_alike_classes, study, planes)
        # Each row block's rows of pairs.epi.cc and pairs.tsv (Q left out: it needs every P), made
        # beside the screen once the block is tested (formatted after the screen, every row would
        # add to the command's time); finalize's writer joins them. On
        # threads of their own, so the exact tests of the next block do not wait; the formatting
        # passes are not numba-parallel, so they may run beside the host thread's kernels.
        self._formatter = (ThreadPoolExecutor(max_workers=FORMAT_THREADS, thread_name_prefix="gboost-host-format")
                           if background else None)
        self.formatted: dict = {}  # planned row block -> future of its FormattedBlock
        self._unplanned = False  # survivors joined without formatted rows (a block of no planned row)
        self.blocks: list = []  # one job per row block (None, or the block where it has no place in .screened)
        self.screened = _SortedSink()  # the planned row blocks' survivors, joined in row order
        self.folded = Summary.empty(study.n_snps)  # the survivors' exact tests folded in (PLINK's z)
        self._thr = params.thresholds()
        self._fed = 0  # entries of acc's survivor lists already placed in a row block
        self._left: dict = {}  # row block -> tiles of the plan not yet in
        self._waiting: dict = {}  # row block -> indices into acc's survivor lists

    def _prepare_outputs(self) -> dict:
        from gboost.outputs.results import prepare_outputs

        return prepare_outputs(self.study, self.marginal.result())  # (the job before this one: done)

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
        block = _sorted_block(p, *lists, rev=self.study.plink_reversed())
        i, j, _ksa, stat, df, *_ = block
        _fold_survivors(self.folded, i, j, stat, df, self._thr)
        if row is None:
            self._unplanned = True
            return block
        if self._formatter is not None:
            from gboost.outputs.results import format_block

            texts = self.outputs.result()["texts"]  # (an earlier job of this thread: done)
            self.formatted[row] = self._formatter.submit(format_block, texts, block, self.params.epi1)
        self.screened.put(row, block)
        return None

    def formatted_blocks(self) -> list | None:
        """Every planned row block's formatted rows (gboost.outputs.results.FormattedBlock), in row
        order, once the jobs are done; None where some survivors have none (formatted at the end
        instead). Call after :meth:`results`."""
        if self._formatter is None or self._unplanned or any(r not in self.formatted for r in self._left):
            return None
        return [self.formatted[r].result() for r in sorted(self._left)]

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
        """Drop the jobs not started, wait for the running ones (numba cannot be interrupted)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._formatter is not None:  # (after the pool: its last jobs may still submit here)
            self._formatter.shutdown(wait=True, cancel_futures=True)

    def _submit(self, fn, *args, **kwargs):
        job = functools.partial(fn, *args, **kwargs)
        return _Deferred(job) if self._pool is None else self._pool.submit(self._timed, job)

    def _timed(self, job):
        t = time.perf_counter()
        try:
            return job()
        finally:
            self.busy_s += time.perf_counter() - t


def _alike_classes(study: Study, planes: PlaneSource):
    """gboost.pipeline.best_ties.tie_classes of the study (None where the study has no planes: a merge of
    --part outputs), once the encoder has written every plane."""
    from gboost.pipeline.best_ties import tie_classes

    if study.planes.ndim != 3 or study.planes.shape[2] == 0:
        return None
    return tie_classes(planes.read(), study.counts)


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


def _calibrate(study: Study, planes: PlaneSource, n_pairs: int):
    """The calibration's pairs read planes of SNPs anywhere: after a background encode's last row
    (gboost/data/load.py; this thread waits, the screen does not)."""
    from gboost.stats.calibration import calibrate

    planes.wait()
    return calibrate(study, n_pairs=n_pairs)


def _spare_a_core() -> None:
    # Numba's thread count is per thread: the background kernels leave one core to the threads
    # that keep the GPU fed (their results do not depend on the thread count).
    nb.set_num_threads(max(1, nb.config.NUMBA_NUM_THREADS - 1))


def _sorted_block(p: int, i: list, j: list, ksa: list, tables: list, rev: np.ndarray | None = None) -> tuple:
    """One row block's survivors (lists of tile arrays) sorted by (i, j), with their exact tests:
    (i, j, ksa, stat, df, p, converged, tables), the fields of :class:`gboost.pipeline.scan.Pairs`. Every exact test
    depends only on its own table, so testing the sorted tables gives what sorting the tests would."""
    i, j, ksa = _concat(i, np.int64), _concat(j, np.int64), _concat(ksa, np.float64)
    tab = _concat(tables, np.int64, (3, 3, 2))
    # One sort of the key i * p + j (unique: every pair is screened once) orders as lexsort((j, i)),
    # several times faster than lexsort on a large block; skipped where the block is one tile (tiles
    # come sorted).
    key = i * p + j
    if len(key) > 1 and not (key[1:] > key[:-1]).all():
        order = np.argsort(key)
        i, j, ksa, tab = i[order], j[order], ksa[order], tab[order]
    # (each table in PLINK's orientation: ``rev`` per SNP whether PLINK swaps its alleles)
    return (i, j, ksa, *exact_tests(tab, *((rev[i], rev[j]) if rev is not None else ())), tab)


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


@cached_njit(nogil=True)  # runs on the host-work thread beside the GPU screen (HostWork)
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
    PLINK's order (:func:`gboost.pipeline.tiles.better`: larger z, then a partner after the SNP, then the
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
    """The screened pairs' fields (those of :class:`gboost.pipeline.scan.Pairs`, in its order) in (i, j) order, grown
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
