"""Tiles of the pair triangle as tasks on a Dask cluster (`--dask ADDRESS` or `--dask local:N`).

The study's bit planes go to every worker once (``scatter(broadcast=True)``), and ``prepare()``
then has every worker present build its own engine for them (CPU, or GPU on the one GPU the worker
uses): planes uploaded and laid out, kernels compiled, before the screen starts, so no worker
spends the screen preparing while the others take its tasks. A worker that joins later prepares
on its first task. A task screens a small batch of tiles with the worker's engine and returns
their TileResults. Tasks are pure, so when a worker dies the scheduler reruns its tasks elsewhere;
results are merged by tile index, so a tile that comes back twice is counted once. Progress and
cancel behave as for a local scan.

Requires ``pip install gboost[cluster]``; nothing here is imported unless --dask is used.
"""
from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Iterator

from gboost.engines.base import Engine, Thresholds, Tile, TileResult
from gboost.study import Study

# Per worker process: the engine built for a scattered study, reused across tasks.
_WORKER_ENGINES: dict = {}
_WORKER_LOCK = threading.Lock()  # a worker with several threads prepares once, not once a thread

# Most tiles a task takes when tiles_per_task is not given (see DaskEngine.batch_size).
MAX_TILES_PER_TASK = 4
TASKS_PER_WORKER = 8


def _worker_gpu() -> int:
    """The GPU this worker uses: the only one it sees under dask-cuda (CUDA_VISIBLE_DEVICES set
    per worker); on a plain local cluster, worker k takes GPU k mod the GPUs visible."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if visible and "," not in visible:
        return 0
    try:
        from distributed import get_worker

        index = int(get_worker().name)
    except (ImportError, ValueError, TypeError):
        return 0
    import cupy

    return index % max(1, cupy.cuda.runtime.getDeviceCount())


def _worker_engine(study: Study, thr: Thresholds, device: str, threads: int | None, key: str) -> Engine:
    """This worker's engine for the scattered study, prepared once and reused across tasks."""
    from gboost.engines import make_engine

    engine = _WORKER_ENGINES.get(key)
    if engine is None:
        with _WORKER_LOCK:
            engine = _WORKER_ENGINES.get(key)
            if engine is None:
                _WORKER_ENGINES.clear()  # one study per worker at a time
                engine = make_engine(device, threads=threads, gpus=[_worker_gpu()] if device == "gpu" else None)
                engine.prepare(study, thr)
                if study.n_snps >= 2:
                    # One pair through the task's path: what compiles or loads on first use (JIT
                    # host code, kernels loaded lazily) does so here, in prepare, not in the screen.
                    list(engine.run_tiles([Tile(-1, 0, 1, 1, 2)]))
                _WORKER_ENGINES[key] = engine
    return engine


def _worker_tile(study: Study, thr: Thresholds, device: str, threads: int | None, key: str) -> int:
    """Prepare this worker's engine (if not yet) and return the tile edge it wants."""
    return _worker_engine(study, thr, device, threads, key).tile_snps()


def _worker_screen(study: Study, thr: Thresholds, tiles: list[Tile], device: str, threads: int | None,
                   key: str) -> list[TileResult]:
    engine = _worker_engine(study, thr, device, threads, key)
    # run_tiles, not run_tile one by one: a GPU engine keeps two tiles in flight, so the host
    # side of one tile overlaps the kernels of the next. Results carry their tile, any order.
    return list(engine.run_tiles(tiles))


def default_tiles_per_task(n_tiles: int, n_workers: int) -> int:
    """Tiles per task when not given: enough tasks for TASKS_PER_WORKER per worker, so the load
    balances (a worker that finishes early takes more; the last task is a small share of a
    worker's time) and a lost worker costs little to rerun; but at most MAX_TILES_PER_TASK tiles,
    and at least 1. A task is a scheduler round trip (about a millisecond measured on one host)
    against tens of ms per GPU tile (~17k-40k SNPs a side) or per CPU tile (~500), so round trips
    stay a small share either way, and a worker has its next task queued while it screens; more
    than one tile a task also lets a GPU engine keep two tiles in flight (see _worker_screen).
    E.g. 36 GPU tiles on 2 workers: 2 a task, 18 tasks; 171 tiles: 4 a task, 43 tasks."""
    return max(1, min(MAX_TILES_PER_TASK, n_tiles // (TASKS_PER_WORKER * max(1, n_workers))))


class DaskEngine(Engine):
    """Screens tiles on a dask.distributed cluster; see the module docstring."""

    name = "dask"
    overlaps_host_work = True  # tiles run in worker processes

    def __init__(self, address: str, *, device: str = "auto", threads: int | None = None, tile: int | None = None,
                 tiles_per_task: int | None = None, prepare_timeout: float | None = None):
        try:
            import distributed  # noqa: F401
        except ImportError as exc:
            raise RuntimeError("--dask needs Dask: pip install 'gboost[cluster]'") from exc
        self.address = address
        self.device = device
        self.threads = threads
        self._tile = tile
        self.tiles_per_task = tiles_per_task  # None: default_tiles_per_task at run_tiles
        self.prepare_timeout = prepare_timeout  # None: wait as long as the workers take
        self.client = None
        self.cluster = None
        self.prepared_workers: list[str] = []  # addresses whose engine prepare() built
        self._worker_tiles: list[int] = []
        self.last_tiles_per_task: int | None = None

    def _connect(self):
        from distributed import Client, LocalCluster

        if self.address.startswith("local:"):
            n = int(self.address.split(":", 1)[1])
            # Worker processes, one numba thread each unless told otherwise: N workers = N cores.
            self.threads = self.threads or 1
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                        silence_logs=40)
            self.client = Client(self.cluster)
        else:
            self.client = Client(self.address)

    def _workers(self) -> list[str]:
        """Addresses of the workers the scheduler knows now."""
        return sorted(self.client.nthreads())

    def describe(self) -> str:
        if self.client is None:
            return f"Dask cluster {self.address}"
        return f"Dask cluster {self.address} ({len(self._workers())} workers, {self.device} engine on each)"

    def prepare(self, study: Study, thresholds: Thresholds) -> None:
        if self.client is None:
            self._connect()
        self.study = study
        self.thr = thresholds
        # A fresh key per prepare: a long-running cluster may see the same study object again
        # with other thresholds (or another study at a recycled id()); each scan prepares anew.
        self._key = f"{os.getpid()}-{study.n_snps}-{uuid.uuid4().hex}"
        self._study_future = self.client.scatter(study, broadcast=True, hash=False)
        self._prepare_workers()

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
            self.client.submit(_worker_tile, self._study_future, self.thr, self.device, self.threads, self._key,
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
        """The workers' own engines' tile (a GPU wants tiles of ~17k SNPs, a CPU core ~500).
        Every prepared worker answered in prepare(); should they differ (mixed GPUs), the
        smallest. With no worker prepared (none yet, or all lost), asked of one worker."""
        if self._tile:
            return self._tile
        if self._worker_tiles:
            return min(self._worker_tiles)
        fut = self.client.submit(_worker_tile, self._study_future, self.thr, self.device, self.threads, self._key,
                                 pure=False)
        return int(fut.result())

    def batch_size(self, n_tiles: int) -> int:
        """Tiles per task: as given, else :func:`default_tiles_per_task` for the workers now."""
        if self.tiles_per_task:
            return int(self.tiles_per_task)
        return default_tiles_per_task(n_tiles, len(self._workers()))

    def run_tile(self, tile: Tile) -> TileResult:
        return next(iter(self.run_tiles([tile])))

    def run_tiles(self, tiles: list[Tile], cancel=None) -> Iterator[TileResult]:
        from distributed import as_completed

        tiles = list(tiles)
        k = self.last_tiles_per_task = self.batch_size(len(tiles))
        batches = [tiles[i:i + k] for i in range(0, len(tiles), k)]
        # One map, not a submit a batch: one message, and the scheduler sees the whole group at
        # once (so it queues it and each worker takes the next task as it frees up, rather than
        # placing the first few before the group looks large). On 2 H200s one worker still
        # sometimes started its first task ~0.5 s after the other; cause not pinned down.
        n = len(batches)
        futures = self.client.map(_worker_screen, [self._study_future] * n, [self.thr] * n, batches,
                                  [self.device] * n, [self.threads] * n, [self._key] * n, pure=False, retries=3)
        seen: set[int] = set()
        try:
            for fut in as_completed(futures):
                if cancel is not None and cancel():
                    return
                for res in fut.result():
                    if res.tile.index not in seen:  # a rerun task never counts a tile twice
                        seen.add(res.tile.index)
                        yield res
                fut.release()  # its results are ours now; the worker may drop them
        finally:
            self.client.cancel(futures)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None
