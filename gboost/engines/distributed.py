"""Tiles of the pair triangle as tasks on a Dask cluster (`--dask ADDRESS`, `--dask local:N`,
`--dask local:gpus`); docs/CLUSTER.md says how to run it, docs/DESIGN.md why results merge exactly.

What travels. A task carries only the planes of the SNPs its tiles need, never the whole study:
the plan's tiles lie on one grid of SNP blocks (every tile is one row block x one column block),
and consecutive blocks are grouped into *super-blocks* of a few hundred MB. A task is every tile of
one super-block pair (A, B), A <= B, so it needs the planes of A and B only and runs for seconds on
a GPU. The client scatters each super-block once, to one worker, column by column while the first
tasks already run; Dask moves a block to the worker whose task needs it and keeps it there (its
worker memory is a least-recently-used store that spills to disk under pressure), and the
scheduler places a task where most of its bytes already are. At biobank scale (1M SNPs x 500k
samples, ~190 GB of planes) a worker so holds a few super-blocks, not the study.

What is warmed. ``prepare()`` broadcasts a small probe (the first SNPs of the study, a few hundred
MB at most) and has every worker present build its engine on it at once: kernels compiled, the
tile edge the worker wants answered. A worker that joins later prepares on its first task. On each
task the worker's engine is prepared again on the task's sub-study (planes of A and B, in SNP
order), which costs an upload of the two super-blocks, a few % of the task.

Faults. Tasks are pure and retried, so when a worker dies the scheduler reruns its tasks
elsewhere; results are merged by tile index, so a tile that comes back twice is counted once. A
worker whose GPU fails in a task (a CUDA error) leaves the cluster, unless it is the last, so the
retry runs on a healthy GPU rather than on the broken one again. Progress and cancel behave as for
a local scan.

Requires ``pip install gboost[cluster]``; nothing here is imported unless --dask is used.
"""
from __future__ import annotations

import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from gboost.data.planes import PlaneSource
from gboost.data.encode import ClassLayout
from gboost.engines.base import Engine, Thresholds, Tile, TileResult
from gboost.data.study import QCReport, SampleTable, Study, VariantTable
from gboost.pipeline.tiles import SummaryPartial
from gboost.engines.dask_cluster import _local_gpu_ids, connect

# Per worker process: for the scan (by key), each worker thread's engine and the super-block pair
# it is prepared on.
_WORKER_ENGINES: dict = {}
_WORKER_LOCK = threading.Lock()  # guards _WORKER_ENGINES across a worker's threads

TASKS_PER_WORKER = 8  # enough tasks that a worker finishing early takes more, and a rerun is small
SUPER_BLOCK_BYTES = 512 << 20  # planes of one super-block at most: two fit any GPU and worker
PROBE_BYTES = 256 << 20  # the probe every worker prepares on (kernels compiled, tile edge answered)
MIN_PROBE_SNPS = 2048
RESEND_LIMIT = 5  # sends of a block, or reruns of a task whose blocks were lost, before giving up
# The k-th rerun of a task whose blocks were lost waits this times 2^(k-1) first: a rerun sent at
# once can meet the same dead worker, which the scheduler has not yet dropped (a worker fetching a
# block from it: "lost dependencies"). Five instant reruns could all meet it, and so could five
# waiting 0.25 s x k (3.75 s in all) on a loaded 2-core machine; doubling waits 7.75 s in all before
# the scan gives up.
RESEND_BACKOFF_S = 0.25


def _lost(exc: BaseException) -> bool:
    """A task that failed because a worker (and the data sent to it) went away, not because of
    what it computed."""
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    return isinstance(exc, (KilledWorker, FutureCancelledError, OSError)) or "lost" in str(exc).lower()


# --- what a worker is sent -----------------------------------------------------------------------

@dataclass(frozen=True)
class Frame:
    """What every task needs besides its planes: the sample layout and the thresholds."""

    layout: ClassLayout
    thresholds: Thresholds


@dataclass(frozen=True)
class Block:
    """The planes and genotype counts of SNPs [start, start + len(planes))."""

    start: int
    planes: np.ndarray  # (m, 3, W) uint64
    counts: np.ndarray  # (m, 3, 2) int64

    @property
    def stop(self) -> int:
        return self.start + len(self.planes)


def block_of(study: Study, start: int, stop: int) -> Block:
    return Block(start, study.planes[start:stop], study.counts[start:stop])


def sub_study(layout: ClassLayout, blocks: list[Block]) -> Study:
    """A study of the blocks' SNPs, in SNP order: what an engine needs (planes, counts, layout)
    and placeholders for what it does not read (names, positions, sample IDs)."""
    planes = blocks[0].planes if len(blocks) == 1 else np.concatenate([b.planes for b in blocks])
    counts = blocks[0].counts if len(blocks) == 1 else np.concatenate([b.counts for b in blocks])
    m = len(planes)
    blank = np.zeros(m, dtype=object)
    variants = VariantTable(blank, blank, np.zeros(m), np.zeros(m, np.int64), blank, blank)
    none = np.zeros(0, dtype=object)
    samples = SampleTable(none, none, np.zeros(0, np.int8), np.zeros(0, np.int8))
    return Study(variants, samples, layout, planes, counts, QCReport())


class _LocalIndex:
    """Global SNP index <-> index in a task's sub-study (super-block A, then B when B != A)."""

    def __init__(self, a: tuple[int, int], b: tuple[int, int]):
        self.a0, self.a1 = a
        self.b0 = b[0]
        self.same = a == b
        self.off_b = 0 if self.same else self.a1 - self.a0  # where B starts in the sub-study

    def local(self, g: int, column: bool) -> int:
        return g - self.b0 + self.off_b if column and not self.same else g - self.a0

    def tile(self, t: Tile) -> Tile:
        return Tile(t.index, self.local(t.i0, False), self.local(t.i1, False),
                    self.local(t.j0, True), self.local(t.j1, True))

    def to_global(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.int64)
        if self.same:
            return x + self.a0
        return np.where(x < self.off_b, x + self.a0, x - self.off_b + self.b0)

    def partial(self, part: SummaryPartial) -> SummaryPartial:
        start = int(self.to_global(np.array([part.start]))[0])
        partner = np.where(part.best_partner >= 0, self.to_global(part.best_partner), -1)
        return SummaryPartial(start, part.n_sig, part.n_tot, part.best, partner)

    def result(self, res: TileResult, tile: Tile) -> TileResult:
        return TileResult(tile, self.to_global(res.surv_i), self.to_global(res.surv_j), res.surv_ksa,
                          res.surv_tables, res.n_valid, self.partial(res.rows), self.partial(res.cols))


# --- on the worker -------------------------------------------------------------------------------

def _worker_gpu() -> int:
    """The GPU this worker uses: the only one it sees under dask-cuda or `local:gpus`
    (CUDA_VISIBLE_DEVICES set per worker); on a plain local cluster, worker k takes GPU k mod the
    GPUs visible."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if visible and "," not in visible:
        return 0
    try:
        from distributed import get_worker

        index = int(get_worker().name)
    except (ImportError, ValueError, TypeError):
        return 0
    from gboost.engines.cupy_import import import_cupy  # a worker's first import: without cuTENSOR's preload

    return index % max(1, import_cupy().cuda.runtime.getDeviceCount())


def _new_engine(device: str, threads: int | None, factory: Callable[[], Engine] | None) -> Engine:
    if factory is not None:
        return factory()
    from gboost.engines.local import make_local_engine

    return make_local_engine(device, threads=threads, gpus=[_worker_gpu()] if device == "gpu" else None)


def _worker_engine(key: str, frame: Frame, blocks: list[Block], device: str, threads: int | None,
                   factory) -> Engine:
    """This worker thread's engine for scan ``key``, prepared on ``blocks`` (kept when they are
    the ones it holds already). One engine a thread: a GPU worker runs two tasks at once (see
    local_gpu_cluster), so one task's sub-study is assembled and uploaded while the other's
    kernels run, instead of the GPU waiting for every task's upload."""
    span = tuple((b.start, b.stop) for b in blocks)
    me = threading.get_ident()
    with _WORKER_LOCK:
        if key not in _WORKER_ENGINES:
            for engines in _WORKER_ENGINES.values():  # one scan per worker at a time
                for old, _ in engines.values():
                    old.close()
            _WORKER_ENGINES.clear()
            _WORKER_ENGINES[key] = {}
        engines = _WORKER_ENGINES[key]
        if me not in engines:
            engines[me] = (_new_engine(device, threads, factory), None)
        engine, prepared_on = engines[me]
    if prepared_on != span:
        engine.prepare(sub_study(frame.layout, blocks), frame.thresholds)
        with _WORKER_LOCK:
            engines[me] = (engine, span)
    return engine


def _worker_probe(key: str, frame: Frame, probe: Block, device: str, threads: int | None, factory) -> int:
    """Prepare this worker's engine on the probe; one pair through the task path, so what compiles
    or loads on first use does so now, not in the screen; the tile edge the worker wants."""
    try:
        engine = _worker_engine(key, frame, [probe], device, threads, factory)
        if len(probe.planes) >= 2:
            list(engine.run_tiles([Tile(-1, 0, 1, 1, 2)]))
        return engine.tile_snps()
    except Exception as exc:
        _on_fault(exc)
        raise


def _is_device_fault(exc: BaseException) -> bool:
    """A GPU's failure (the GPU engine's CUDA error, or CuPy's own), not a bug or bad input."""
    if type(exc).__module__.startswith("cupy"):  # cupy and cupy_backends
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and text.startswith("GPU ") and "CUDA error" in text


def _leave_cluster(reason: str) -> None:
    """Close this worker and its nanny (so it is not restarted on the same GPU), unless it is the
    last worker: its tasks are then rescheduled on the others."""
    try:
        from distributed import get_client, get_worker

        worker = get_worker()
        if len(get_client().nthreads()) <= 1:
            return
        worker.loop.add_callback(worker.close, nanny=True, reason=reason)
    except Exception:  # noqa: BLE001 - leaving is best effort; the retry still happens
        pass


def _worker_task(key: str, frame: Frame, block_a: Block, block_b: Block, tiles: list[Tile], device: str,
                 threads: int | None, factory) -> list[TileResult]:
    """Screen ``tiles`` (all in super-block pair A x B) on this worker's engine."""
    same = block_a.start == block_b.start
    index = _LocalIndex((block_a.start, block_a.stop), (block_b.start, block_b.stop))
    try:
        engine = _worker_engine(key, frame, [block_a] if same else [block_a, block_b], device, threads, factory)
        by_index = {t.index: t for t in tiles}
        # run_tiles, not run_tile one by one: a GPU engine keeps two tiles in flight, so the host
        # side of one tile overlaps the kernels of the next. Results carry their tile, any order.
        return [index.result(r, by_index[r.tile.index]) for r in engine.run_tiles([index.tile(t) for t in tiles])]
    except Exception as exc:
        _on_fault(exc)
        raise


def _on_fault(exc: BaseException) -> None:
    """After a device fault this worker drops its engines and leaves (see _leave_cluster)."""
    if not _is_device_fault(exc):
        return
    with _WORKER_LOCK:
        for engines in _WORKER_ENGINES.values():
            for engine, _ in engines.values():
                try:
                    engine.close()
                except Exception:  # noqa: BLE001 - the device may be unusable
                    pass
        _WORKER_ENGINES.clear()
    _leave_cluster(f"gboost: {exc}")


# --- on the client -------------------------------------------------------------------------------

def block_grid(tiles: list[Tile]) -> list[tuple[int, int]]:
    """The SNP blocks the tiles lie on, in order: a plan's tiles are one row block x one column
    block of one grid (a row block clipped by --part lies inside a column block of the grid)."""
    ends: dict[int, int] = {}
    for t in tiles:
        for a, b in ((t.i0, t.i1), (t.j0, t.j1)):
            ends[a] = max(ends.get(a, a), b)
    starts = sorted(ends)
    return [(s, ends[s]) for s in starts]


def super_blocks(grid: list[tuple[int, int]], units: int) -> list[tuple[int, int]]:
    """Groups of ``units`` consecutive grid blocks, as SNP ranges."""
    return [(grid[k][0], grid[min(k + units, len(grid)) - 1][1]) for k in range(0, len(grid), units)]


def _super_index(tiles: list[Tile], supers: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Each tile's row and column super-block."""
    starts = np.array([s for s, _ in supers])
    i0 = np.fromiter((t.i0 for t in tiles), np.int64, len(tiles))
    j0 = np.fromiter((t.j0 for t in tiles), np.int64, len(tiles))
    return np.searchsorted(starts, i0, side="right") - 1, np.searchsorted(starts, j0, side="right") - 1


def group_tiles(tiles: list[Tile], supers: list[tuple[int, int]]) -> dict[tuple[int, int], list[Tile]]:
    """Tiles by (row super-block, column super-block) index, column-major (the order blocks are
    sent in: the tasks of column super-block B need only blocks <= B)."""
    rows, cols = _super_index(tiles, supers)
    groups: dict[tuple[int, int], list[Tile]] = {}
    for t, a, b in zip(tiles, rows.tolist(), cols.tolist()):
        groups.setdefault((a, b), []).append(t)
    return dict(sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])))


def choose_units(tiles: list[Tile], grid: list[tuple[int, int]], bytes_per_snp: int, n_workers: int) -> int:
    """Grid blocks per super-block: the most whose planes stay within SUPER_BLOCK_BYTES and that
    still give TASKS_PER_WORKER tasks a worker thread (``n_workers`` counts threads; fewer units,
    more and smaller tasks); at least 1. E.g. 1.3M SNPs on 2 GPU workers of 2 threads: 6 units,
    36 tasks."""
    widest = max((b - a for a, b in grid), default=1)
    cap = max(1, SUPER_BLOCK_BYTES // max(1, widest * bytes_per_snp))
    want = TASKS_PER_WORKER * max(1, n_workers)
    for units in range(min(cap, len(grid)), 0, -1):
        rows, cols = _super_index(tiles, super_blocks(grid, units))
        if len(np.unique(rows * (len(grid) + 1) + cols)) >= want:  # tasks = distinct (row, column) pairs
            return units
    return 1


class DaskEngine(Engine):
    """Screens tiles on a dask.distributed cluster; see the module docstring.

    ``engine_factory``: builds each worker's engine instead of ``make_local_engine(device)`` (a callable
    Dask can pickle; tests use it to make a worker's GPU fail)."""

    name = "dask"
    overlaps_host_work = True  # tiles run in worker processes

    def __init__(self, address: str, *, device: str = "auto", threads: int | None = None, tile: int | None = None,
                 prepare_timeout: float | None = None, engine_factory: Callable[[], Engine] | None = None):
        try:
            import distributed  # noqa: F401
        except ImportError as exc:
            raise RuntimeError("--dask needs Dask: pip install 'gboost[cluster]'") from exc
        if address == "local:gpus" and device != "cpu" and not _local_gpu_ids():
            raise RuntimeError("--dask local:gpus: no GPU is visible on this host (CuPy sees none)")
        self.address = address
        self.device = device
        self.threads = threads
        self._tile = tile
        self.prepare_timeout = prepare_timeout  # None: wait as long as the workers take
        self.factory = engine_factory
        self.client = None
        self.cluster = None
        self.prepared_workers: list[str] = []  # addresses whose engine prepare() built
        self._worker_tiles: list[int] = []
        # What the last run_tiles did, for run.json and the bench: grid blocks per super-block,
        # tasks, and seconds spent scattering blocks (beside the first tasks, not before them).
        self.last_units: int | None = None
        self.last_tasks: int | None = None
        self.scatter_seconds = 0.0

    def _connect(self):
        if self.address == "local:gpus":
            self.device = "gpu" if self.device == "auto" else self.device
        self.client, self.cluster, self.threads = connect(self.address, self.threads)

    def _workers(self) -> list[str]:
        """Addresses of the workers the scheduler knows now."""
        return sorted(self.client.nthreads())

    def describe(self) -> str:
        if self.client is None:
            return f"Dask cluster {self.address}"
        return f"Dask cluster {self.address} ({len(self._workers())} workers, {self.device} engine on each)"

    def prepare(self, study: Study, thresholds: Thresholds, planes: PlaneSource | None = None) -> None:
        if planes is not None:  # tasks carry their super-blocks' planes as they are sent: every plane first
            planes.wait()
        if self.client is None:
            self._connect()
        self.study = study
        # A fresh key per prepare: a long-running cluster may see the same study object again
        # with other thresholds (or another study at a recycled id()); each scan prepares anew.
        self._key = f"{os.getpid()}-{study.n_snps}-{uuid.uuid4().hex}"
        self._frame = self.client.scatter(Frame(study.layout, thresholds), broadcast=True, hash=False)
        bytes_per_snp = max(1, study.planes[0].nbytes if study.n_snps else 1)
        m = min(study.n_snps, max(MIN_PROBE_SNPS, PROBE_BYTES // bytes_per_snp))
        self._probe = self.client.scatter(block_of(study, 0, m), broadcast=True, hash=False)
        self._prepare_workers()

    def _args(self) -> tuple:
        return (self.device, self.threads, self.factory)

    def _prepare_workers(self) -> None:
        """Build the engine on every worker present, all at once, and wait for them all.

        One task per worker, pinned to it. A worker that leaves meanwhile (its pinned task could
        never run) is dropped, as is one whose task was lost with it; its replacement, like any
        worker that joins later, prepares on its first task. Any other error is raised.
        """
        from distributed import wait
        from distributed.client import FutureCancelledError
        from distributed.scheduler import KilledWorker  # where the class is defined, in every release

        pending = {
            self.client.submit(_worker_probe, self._key, self._frame, self._probe, *self._args(),
                               workers=[addr], allow_other_workers=False, pure=False): addr
            for addr in self._workers()
        }
        self.prepared_workers, self._worker_tiles = [], []
        deadline = None if self.prepare_timeout is None else time.monotonic() + self.prepare_timeout
        try:
            while pending:
                try:
                    wait(list(pending), timeout=1.0, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    pass  # see who is still there
                alive = set(self._workers())
                for fut, addr in list(pending.items()):
                    if fut.status == "finished":
                        self._worker_tiles.append(int(fut.result()))
                        self.prepared_workers.append(addr)
                    elif fut.status in ("error", "cancelled", "lost"):
                        try:
                            fut.result()
                        except (KilledWorker, FutureCancelledError):
                            pass  # the worker died; its replacement prepares lazily
                        except Exception as exc:  # noqa: BLE001
                            if not _is_device_fault(exc):
                                raise
                            # its GPU failed: the worker leaves (_on_fault), the others go on
                    elif addr not in alive:
                        fut.cancel()  # pinned to a worker that is gone: it would never run
                    else:
                        continue
                    del pending[fut]
                if deadline is not None and time.monotonic() > deadline:
                    break  # the rest prepare on their first task
        except BaseException:
            self.client.cancel(list(pending))
            raise
        # A prepare that timed out keeps running on its worker; its result is simply not awaited.

    def tile_snps(self) -> int:
        """The workers' own engines' tile (a GPU wants tiles of ~17k-40k SNPs, a CPU core ~500),
        as they answered on the probe; should they differ (mixed GPUs), the smallest. With no
        worker prepared (none yet, or all lost), asked of one worker."""
        if self._tile:
            return self._tile
        if self._worker_tiles:
            return min(self._worker_tiles)
        fut = self.client.submit(_worker_probe, self._key, self._frame, self._probe, *self._args(), pure=False)
        return int(fut.result())

    def run_tile(self, tile: Tile) -> TileResult:
        return next(iter(self.run_tiles([tile])))

    def _scatter(self, block: Block):
        """Send one block to one worker (the scheduler picks it); again if that worker dies
        meanwhile."""
        for attempt in range(RESEND_LIMIT):
            try:
                return self.client.scatter(block, hash=False)
            except (OSError, TimeoutError) as exc:  # CommClosedError is an OSError
                if attempt == RESEND_LIMIT - 1:
                    raise RuntimeError(f"Dask: could not send SNPs {block.start}-{block.stop - 1} to a worker "
                                       f"({type(exc).__name__}: {exc})") from exc
                time.sleep(0.2)

    def run_tiles(self, tiles: list[Tile], cancel=None) -> Iterator[TileResult]:
        from distributed import as_completed

        tiles = list(tiles)
        if not tiles:
            return
        grid = block_grid(tiles)
        slots = sum(self.client.nthreads().values())  # tasks the cluster runs at once
        units = self.last_units = choose_units(tiles, grid, self.study.planes[0].nbytes, slots)
        supers = super_blocks(grid, units)
        groups = list(group_tiles(tiles, supers).items())
        self.last_tasks = len(groups)
        queue = as_completed()
        task_of: dict = {}  # future -> index into groups
        sent: dict[int, object] = {}  # super-block -> its scattered future
        lock = threading.Lock()  # sent and task_of, shared with the sender thread
        stop, done = threading.Event(), threading.Event()
        failed: list[BaseException] = []

        def block(k: int, fresh: bool = False):
            with lock:
                fut = sent.get(k)
            if fut is None or fresh or fut.status != "finished":
                fut = self._scatter(block_of(self.study, *supers[k]))
                with lock:
                    sent[k] = fut
            return fut

        def submit(g: int, fresh: bool = False) -> None:
            (a, b), group = groups[g]
            fa = block(a, fresh)
            fb = fa if b == a else block(b, fresh)  # a diagonal task's one block, sent once
            fut = self.client.submit(_worker_task, self._key, self._frame, fa, fb, group, *self._args(), pure=False,
                                     retries=3)
            with lock:
                task_of[fut] = g
            queue.add(fut)

        def send() -> None:
            """Scatter super-blocks column by column, submitting each task as soon as its blocks
            are out, so the first tasks run while the rest are still being sent."""
            t0 = time.perf_counter()
            try:
                for g in range(len(groups)):
                    if stop.is_set():
                        return
                    submit(g)
            except BaseException as exc:  # noqa: BLE001 - raised on the consuming side
                failed.append(exc)
            finally:
                self.scatter_seconds = time.perf_counter() - t0
                done.set()

        sender = threading.Thread(target=send, name="gboost-dask-send", daemon=True)
        sender.start()
        finished: set[int] = set()
        resent = [0] * len(groups)
        try:
            while len(finished) < len(groups):
                if failed:
                    raise failed[0]
                fut = next(queue, None) if queue.count() else None
                if fut is None:  # nothing submitted yet, or all received and more to come
                    if done.is_set() and not queue.count():
                        raise RuntimeError("Dask scan: tasks missing after all were sent")
                    time.sleep(0.005)
                    continue
                if cancel is not None and cancel():
                    return
                with lock:
                    g = task_of.pop(fut)
                try:
                    results = fut.result()
                except Exception as exc:  # noqa: BLE001
                    if not _lost(exc):
                        raise  # a device fault on every retry, or a bug: the scan stops
                    # A worker died holding the only copy of a block it was sent, or the task's
                    # result (scattered data cannot be recomputed): send the blocks again, rerun.
                    resent[g] += 1
                    if resent[g] > RESEND_LIMIT:
                        raise RuntimeError(f"Dask: tiles of SNP blocks {groups[g][0]} lost {RESEND_LIMIT} times "
                                           f"({exc!r})") from exc
                    time.sleep(RESEND_BACKOFF_S * 2 ** (resent[g] - 1))
                    submit(g, fresh=True)
                    continue
                finished.add(g)
                # A group's results come once (a rerun is only submitted after its first failed);
                # the accumulator and the ledger count a tile once in any case.
                yield from results
                fut.release()  # its results are ours now; the worker may drop them
        finally:
            stop.set()
            sender.join()
            with lock:
                self.client.cancel(list(task_of))
                for f in sent.values():
                    f.release()

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None
