"""Tiles on a Dask cluster give exactly the single-process result, even when a worker dies."""
import os
import signal

import numpy as np
import pytest

pytest.importorskip("distributed", reason="Dask is not installed (pip install 'gboost[cluster]')")

from gboost.engines.cpu import CpuEngine  # noqa: E402
from gboost.engines.distributed import DaskEngine  # noqa: E402
from gboost.io.results import render_outputs  # noqa: E402
from gboost.scan import ScanParams, run_scan, scan_thresholds  # noqa: E402
from gboost.study import study_from_genotypes  # noqa: E402
from tests.helpers import random_genotypes  # noqa: E402

COMPARED = ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv")


@pytest.fixture(scope="module")
def study():
    g, is_case = random_genotypes(np.random.default_rng(3), 400, 300, missing=0.02)
    return study_from_genotypes(g, is_case)


def outputs(result):
    texts = render_outputs(result)
    return {k: texts[k] for k in COMPARED}


def test_dask_local_cluster_equals_single_process(study):
    params = ScanParams(device="cpu", epi1=1e-3, tile=32)
    single = run_scan(study, params, engine=CpuEngine(tile=32))
    distributed = run_scan(study, params, engine=DaskEngine("local:2", device="cpu", tile=32))
    assert outputs(distributed) == outputs(single)
    assert distributed.n_valid == single.n_valid


def test_worker_killed_mid_run_loses_nothing_and_counts_nothing_twice(study):
    params = ScanParams(device="cpu", epi1=1e-3, tile=16)
    single = run_scan(study, params, engine=CpuEngine(tile=16))
    engine = DaskEngine("local:2", device="cpu", tile=16, tiles_per_task=1)
    killed = []

    def progress(ev):
        if ev.tiles_done == 5 and not killed:
            pids = engine.client.run(os.getpid)
            victim = sorted(pids.values())[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    distributed = run_scan(study, params, engine=engine, progress=progress)
    assert killed
    assert outputs(distributed) == outputs(single)
    assert distributed.n_valid == single.n_valid


def _engine_keys():
    """On a worker: the keys of the engines it holds (imported here, so cloudpickle sends no copy)."""
    from gboost.engines import distributed as d

    return sorted(d._WORKER_ENGINES)


def test_prepare_builds_an_engine_on_every_worker(study):
    thr = scan_thresholds(ScanParams(device="cpu", epi1=1e-3))
    engine = DaskEngine("local:2", device="cpu")
    try:
        engine.prepare(study, thr)
        workers = sorted(engine.client.nthreads())
        assert len(workers) == 2 and sorted(engine.prepared_workers) == workers
        held = engine.client.run(_engine_keys)
        assert held == {w: [engine._key] for w in workers}
        # Every worker answered its tile; the scan's tile is theirs (the smallest, were they to differ).
        assert len(engine._worker_tiles) == 2 and engine.tile_snps() == min(engine._worker_tiles) > 0
    finally:
        engine.close()


def test_external_cluster_address_equals_single_process_and_reprepares(study):
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster:
        # Two scans on one running cluster, same study object, other thresholds: each prepares
        # anew (no engine of the first scan, with its thresholds, is reused by the second).
        for epi1, tile in ((1e-3, 32), (1e-2, 48)):
            params = ScanParams(device="cpu", epi1=epi1, tile=tile)
            single = run_scan(study, params, engine=CpuEngine(tile=tile))
            engine = DaskEngine(cluster.scheduler_address, device="cpu", threads=1, tile=tile)
            distributed = run_scan(study, params, engine=engine)
            assert outputs(distributed) == outputs(single)
            assert distributed.n_valid == single.n_valid
            assert len(engine.prepared_workers) == 2
        assert len(cluster.scheduler.workers) == 2  # the engine closed its client, not the cluster


def test_tiles_per_task_rule():
    from gboost.engines.distributed import default_tiles_per_task

    # At least eight tasks a worker where there are tiles enough, never more than four tiles a task.
    assert default_tiles_per_task(91, 2) == 4
    assert default_tiles_per_task(48, 2) == 3
    assert default_tiles_per_task(36, 2) == 2
    assert default_tiles_per_task(10, 2) == 1
    assert default_tiles_per_task(3, 8) == 1
    assert default_tiles_per_task(0, 1) == 1
    assert default_tiles_per_task(1000, 0) == 4
    assert DaskEngine("local:1", tiles_per_task=7).batch_size(1000) == 7


def test_worker_dying_during_prepare_is_dropped_and_scan_completes(study, monkeypatch):
    from gboost.engines import distributed as d

    real = d._worker_tile

    def dies_on_worker_0(*args):  # local, so cloudpickle sends it by value; `real` by reference
        from distributed import get_worker

        if str(get_worker().name) == "0":
            os._exit(1)
        return real(*args)

    monkeypatch.setattr(d, "_worker_tile", dies_on_worker_0)
    params = ScanParams(device="cpu", epi1=1e-3, tile=32)
    single = run_scan(study, params, engine=CpuEngine(tile=32))
    engine = DaskEngine("local:2", device="cpu", tile=32)
    distributed = run_scan(study, params, engine=engine)
    assert len(engine.prepared_workers) == 1
    assert engine.last_tiles_per_task == 4  # 13 blocks of 32 -> 91 tiles, 2 workers
    assert outputs(distributed) == outputs(single)
    assert distributed.n_valid == single.n_valid
