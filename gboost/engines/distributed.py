"""Tiles of the pair triangle as tasks on a Dask cluster (`--dask ADDRESS` or `--dask local:N`).

The study's bit planes go to every worker once (``scatter(broadcast=True)``); a task screens a
small batch of tiles with the worker's own engine (CPU, or GPU on a dask-cuda worker, which sees
exactly one GPU) and returns their TileResults. Tasks are pure, so when a worker dies the
scheduler reruns its tasks elsewhere; results are merged by tile index, so a tile that comes back
twice is counted once. Progress and cancel behave as for a local scan.

Requires ``pip install gboost[cluster]``; nothing here is imported unless --dask is used.
"""
from __future__ import annotations

import os
from typing import Iterator

from gboost.engines.base import Engine, Thresholds, Tile, TileResult
from gboost.study import Study

# Per worker process: the engine built for a scattered study, reused across tasks.
_WORKER_ENGINES: dict = {}


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
        _WORKER_ENGINES.clear()  # one study per worker at a time
        engine = make_engine(device, threads=threads, gpus=[_worker_gpu()] if device == "gpu" else None)
        engine.prepare(study, thr)
        _WORKER_ENGINES[key] = engine
    return engine


def _worker_tile(study: Study, thr: Thresholds, device: str, threads: int | None, key: str) -> int:
    return _worker_engine(study, thr, device, threads, key).tile_snps()


def _worker_screen(study: Study, thr: Thresholds, tiles: list[Tile], device: str, threads: int | None,
                   key: str) -> list[TileResult]:
    engine = _worker_engine(study, thr, device, threads, key)
    return [engine.run_tile(t) for t in tiles]


class DaskEngine(Engine):
    """Screens tiles on a dask.distributed cluster; see the module docstring."""

    name = "dask"

    def __init__(self, address: str, *, device: str = "auto", threads: int | None = None, tile: int | None = None,
                 tiles_per_task: int = 4):
        try:
            import distributed  # noqa: F401
        except ImportError as exc:
            raise RuntimeError("--dask needs Dask: pip install 'gboost[cluster]'") from exc
        self.address = address
        self.device = device
        self.threads = threads
        self._tile = tile
        self.tiles_per_task = tiles_per_task
        self.client = None
        self.cluster = None

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

    def describe(self) -> str:
        if self.client is None:
            return f"Dask cluster {self.address}"
        workers = self.client.scheduler_info().get("workers", {})
        return f"Dask cluster {self.address} ({len(workers)} workers, {self.device} engine on each)"

    def prepare(self, study: Study, thresholds: Thresholds) -> None:
        if self.client is None:
            self._connect()
        self.study = study
        self.thr = thresholds
        self._study_future = self.client.scatter(study, broadcast=True, hash=False)
        self._key = f"{id(study)}-{os.getpid()}-{study.n_snps}"

    def tile_snps(self) -> int:
        """The workers' own engine's tile (a GPU wants tiles of ~17k SNPs, a CPU core ~500):
        asked of one worker, whose prepared engine the scan's tasks then reuse."""
        if self._tile:
            return self._tile
        fut = self.client.submit(_worker_tile, self._study_future, self.thr, self.device, self.threads, self._key,
                                 pure=False)
        return int(fut.result())

    def run_tile(self, tile: Tile) -> TileResult:
        return next(iter(self.run_tiles([tile])))

    def run_tiles(self, tiles: list[Tile], cancel=None) -> Iterator[TileResult]:
        from distributed import as_completed

        batches = [tiles[k:k + self.tiles_per_task] for k in range(0, len(tiles), self.tiles_per_task)]
        futures = [self.client.submit(_worker_screen, self._study_future, self.thr, b, self.device, self.threads,
                                      self._key, pure=False, retries=3) for b in batches]
        seen: set[int] = set()
        try:
            for fut in as_completed(futures):
                if cancel is not None and cancel():
                    return
                for res in fut.result():
                    if res.tile.index not in seen:  # a rerun task never counts a tile twice
                        seen.add(res.tile.index)
                        yield res
        finally:
            self.client.cancel(futures)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None
