"""The Dask cluster a scan runs on (``--dask ADDRESS``, ``local:N``, ``local:gpus``): the client's
connection and the clusters started on this machine, for both tests' engines on Dask
(gboost/engines/distributed.py, gboost/engines/qt_distributed.py). Dask itself is imported only when
a cluster is asked for."""
from __future__ import annotations

import os

GPU_WORKER_THREADS = 2  # tasks a GPU worker runs at once (see local_gpu_cluster)


def _gpu_count() -> int:
    try:
        from gboost.engines.cupy_import import import_cupy

        return int(import_cupy().cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no CuPy or no driver: no GPU
        return 0


def _local_gpu_ids() -> list[str]:
    """The GPUs of this host a worker each, as CUDA_VISIBLE_DEVICES names them (all if unset)."""
    n = _gpu_count()
    if n == 0:
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return [v.strip() for v in visible.split(",") if v.strip()] if visible else [str(k) for k in range(n)]


def local_gpu_cluster():
    """One worker process per GPU of this host, each seeing only its GPU (CUDA_VISIBLE_DEVICES):
    dask-cuda's LocalCUDACluster where installed, else the same from Nannies. Two threads a
    worker, so two tasks share a GPU: one's upload overlaps the other's kernels, which one thread
    a worker would leave idle meanwhile; the GPU engine's host side is safe in two threads, as it
    is under the built-in queue's one thread a GPU."""
    try:
        from dask_cuda import LocalCUDACluster

        return LocalCUDACluster(threads_per_worker=GPU_WORKER_THREADS, dashboard_address=None, silence_logs=40)
    except ImportError:
        pass
    from distributed import Nanny, Scheduler, SpecCluster

    ids = _local_gpu_ids()
    if not ids:
        raise RuntimeError("--dask local:gpus: no GPU is visible on this host")
    workers = {str(k): {"cls": Nanny, "options": {"nthreads": GPU_WORKER_THREADS, "env": {"CUDA_VISIBLE_DEVICES": gpu}}}
               for k, gpu in enumerate(ids)}
    return SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {"dashboard_address": None}},
                       silence_logs=40)


def connect(address: str, threads: int | None):
    """(client, the cluster started here or None, numba threads a task) of ``--dask ADDRESS``:
    ``local:N`` starts N worker processes on this machine (one numba thread each unless ``threads``
    says otherwise: N workers = N cores), ``local:gpus`` one a GPU, else the scheduler's address."""
    from distributed import Client, LocalCluster

    if address == "local:gpus":
        cluster = local_gpu_cluster()
        return Client(cluster), cluster, threads
    if address.startswith("local:"):
        n = int(address.split(":", 1)[1])
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=40)
        return Client(cluster), cluster, threads or 1
    return Client(address), None, threads
