"""A quantitative trait's scan on a Dask cluster (``--dask ADDRESS``, ``--dask local:N``): the QT
CPU engine's tiles (gboost/engines/qt_cpu.py: its plan, totals and checkpoint) as Dask tasks, one a
tile, on the workers' CPUs.

What travels. The scan's :class:`~gboost.engines.qt_cpu.TileJob` (the QT planes of the whole study,
about p x n x 3 / 8 bytes, 190 MB at 100k x 5k; with covariates the adjusted test's arrays too) is
scattered to every worker once a scan; each task carries one tile and returns its TileResult. The
client adds the results to the local engine's totals and checkpoint in the order they finish,
keyed by tile index (a tile that comes back twice, from a task rerun after a worker died, is
counted once), so the files are the local engine's byte for byte and a checkpoint written here
resumes on this machine's CPUs or on another cluster alike (the plan is the CPU engine's).

The workers run the CPU engine's kernels (``threads`` numba threads a task; local:N: one, N workers
= N cores). QT tiles on GPU workers are not written: ``--dask local:gpus`` is refused.
Requires ``pip install gboost[cluster]``; imported only when --dask is used.
"""
from __future__ import annotations

import numba as nb

from gboost.engines.qt_cpu import QTCPUEngine, QTTotals, TileJob, stop_if_cancelled, tile_work
from gboost.pipeline.tiles import Tile, TileResult

# Why a quantitative trait's --dask takes no GPU workers (QTParams and this engine refuse them)
DASK_WITH_GPU = ("--dask with GPU workers (--device gpu, or local:gpus): a quantitative trait's tiles run on the Dask "
                 "workers' CPUs (the QT GPU engine runs on this machine's GPUs: --device gpu without --dask)")


def _task(job: TileJob, tile: Tile, threads: int) -> TileResult:
    """One tile on a worker (:func:`tile_work`), on ``threads`` numba threads."""
    nb.set_num_threads(max(1, min(int(threads), nb.config.NUMBA_NUM_THREADS)))
    return tile_work(job, tile)


class QTDaskEngine(QTCPUEngine):
    """The QT CPU engine with its tiles on a Dask cluster (see the module notes). Connects on the
    first scan; the cluster stays until :meth:`close` (every permutation of --perm on one)."""

    name = "dask"

    def __init__(self, address: str, threads: int | None = None):
        try:
            import distributed  # noqa: F401
        except ImportError as exc:
            raise RuntimeError("--dask needs Dask: pip install 'gboost[cluster]'") from exc
        if address == "local:gpus":
            raise ValueError(DASK_WITH_GPU)
        super().__init__(threads)
        self.address = address
        self._task_threads = threads
        self.client = self.cluster = None

    def describe(self) -> str:
        if self.client is None:
            return f"Dask cluster {self.address} (the CPU engine on each worker)"
        workers = len(self.client.nthreads())
        return f"Dask cluster {self.address} ({workers} worker{'s' if workers != 1 else ''}, the CPU engine on each)"

    def _connect(self) -> None:
        from gboost.engines.dask_cluster import connect

        self.client, self.cluster, threads = connect(self.address, self._task_threads)
        self._task_threads = threads or 1

    def run_tiles(self, tiles: list, totals: QTTotals, job: TileJob, progress, cancel, checkpoint) -> int:
        """Every tile not yet in ``totals`` as a task; each result into the totals and the checkpoint
        as it comes back, ``progress(done, total)`` after each; ``cancel()`` asked before the first
        and after each (the tasks not yet finished are then cancelled). Returns the plan's pairs."""
        from distributed import as_completed

        total = sum(t.n_pairs for t in tiles)
        done = sum(t.n_pairs for t in tiles if t.index in totals.tiles_done)
        pending = [t for t in tiles if t.index not in totals.tiles_done]
        if progress is not None and done:
            progress(done, total)
        stop_if_cancelled(cancel)
        if not pending:
            return total
        if self.client is None:
            self._connect()
        client = self.client
        shared = client.scatter(job, broadcast=True, hash=False)
        futures = client.map(_task, [shared] * len(pending), pending, [self._task_threads] * len(pending),
                             pure=False)
        try:
            for fut in as_completed(futures):
                res = fut.result()
                if res.tile.index not in totals.tiles_done:
                    totals.add_recorded(res, checkpoint)
                    done += res.tile.n_pairs
                    if progress is not None:
                        progress(done, total)
                stop_if_cancelled(cancel)
        finally:
            client.cancel(futures)
            shared.release()
            if checkpoint is not None:
                checkpoint.flush()  # the finished tiles on disk: --resume goes on from them
        return total

    def close(self) -> None:
        """Close the client and a cluster started here. Idempotent."""
        client, cluster, self.client, self.cluster = self.client, self.cluster, None, None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
