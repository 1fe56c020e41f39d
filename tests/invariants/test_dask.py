"""Tiles on a Dask cluster give exactly the single-process result, even when a worker dies."""
import os
import signal

import numpy as np
import pytest

pytest.importorskip("distributed", reason="Dask is not installed (pip install 'gboost[cluster]')")

from gboost.engines.cpu import CpuEngine  # noqa: E402
from gboost.engines.distributed import DaskEngine  # noqa: E402
from gboost.outputs.results import render_outputs  # noqa: E402
from gboost.pipeline.scan import ScanParams, run_scan, scan_thresholds  # noqa: E402
from gboost.data.study import study_from_genotypes  # noqa: E402
from tests.helpers import random_genotypes  # noqa: E402

COMPARED = ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv")


@pytest.fixture(scope="module")
def study():
    g, is_case = random_genotypes(np.random.default_rng(3), 400, 300, missing=0.02)
    return study_from_genotypes(g, is_case)


def outputs(result):
    texts = render_outputs(result)
    return {k: texts[k] for k in COMPARED}


@pytest.mark.slow
def test_dask_local_cluster_equals_single_process(study):
    params = ScanParams(device="cpu", epi1=1e-3, tile=32)
    single = run_scan(study, params, engine=CpuEngine(tile=32))
    distributed = run_scan(study, params, engine=DaskEngine("local:2", device="cpu", tile=32))
    assert outputs(distributed) == outputs(single)
    assert distributed.n_valid == single.n_valid


@pytest.mark.slow
def test_worker_killed_mid_run_loses_nothing_and_counts_nothing_twice(study):
    params = ScanParams(device="cpu", epi1=1e-3, tile=16)
    single = run_scan(study, params, engine=CpuEngine(tile=16))
    engine = DaskEngine("local:2", device="cpu", tile=16)
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

    return sorted(d._WORKER_ENGINES)  # (each holds one engine a worker thread)


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_blocks_super_blocks_and_tasks_of_a_plan():
    from gboost.engines.distributed import block_grid, choose_units, group_tiles, super_blocks
    from gboost.pipeline.tiles import part_rows, plan_tiles

    # A whole plan: 13 blocks of 32 (the last 16 wide); 2 workers want 16 tasks: 2 blocks a
    # super-block gives 7 super-blocks, 28 tasks; 3 would give 5, 15 tasks.
    tiles = plan_tiles(400, 32)
    grid = block_grid(tiles)
    assert grid == [(k, min(k + 32, 400)) for k in range(0, 400, 32)]
    assert choose_units(tiles, grid, 24, 2) == 2
    groups = group_tiles(tiles, super_blocks(grid, 2))
    assert len(groups) == 28 and sorted(t.index for g in groups.values() for t in g) == list(range(len(tiles)))
    order = list(groups)
    assert order == sorted(order, key=lambda ab: (ab[1], ab[0]))  # column by column, as blocks are sent
    # No task needs more than its two super-blocks: every tile's rows in A, columns in B.
    supers = super_blocks(grid, 2)
    for (a, b), group in groups.items():
        assert a <= b
        for t in group:
            assert supers[a][0] <= t.i0 < t.i1 <= supers[a][1] and supers[b][0] <= t.j0 < t.j1 <= supers[b][1]
    # The super-block's bytes cap the units: 1 unit when one block alone is over the cap.
    assert choose_units(tiles, grid, 1 << 30, 1) == 1
    # A --part plan (rows clipped mid-block) and a resumed remainder lie on the same kind of grid.
    rows = part_rows(400, 2, 3)
    part = plan_tiles(400, 32, rows)
    pgrid = block_grid(part)
    assert all(s1 == e0 for (_, e0), (s1, _) in zip(pgrid, pgrid[1:])) and pgrid[0][0] == rows[0]
    for t in part[3:]:
        assert any(s == t.i0 and t.i1 <= e for s, e in pgrid) and (t.j0, t.j1) in pgrid


def test_local_index_maps_tiles_and_results_back():
    from gboost.engines.distributed import _LocalIndex
    from gboost.pipeline.tiles import SummaryPartial, Tile, TileResult

    ix = _LocalIndex((64, 128), (256, 320))  # A = SNPs 64..127 at 0..63, B = 256..319 at 64..127
    t = ix.tile(Tile(5, 96, 128, 288, 320))
    assert (t.i0, t.i1, t.j0, t.j1) == (32, 64, 96, 128) and not t.diagonal
    rows = SummaryPartial(32, np.ones(32, np.int64), np.ones(32, np.int64), np.zeros(32),
                          np.where(np.arange(32) % 2 == 0, 100, -1))
    cols = SummaryPartial(96, np.ones(32, np.int64), np.ones(32, np.int64), np.zeros(32), np.full(32, 40))
    res = ix.result(TileResult(t, np.array([33]), np.array([100]), np.array([9.0]), np.zeros((1, 3, 3, 2), np.int64),
                               5, rows, cols), Tile(5, 96, 128, 288, 320))
    assert res.surv_i.tolist() == [97] and res.surv_j.tolist() == [292] and res.tile.index == 5
    assert res.rows.start == 96 and set(res.rows.best_partner.tolist()) == {292, -1}
    assert res.cols.start == 288 and set(res.cols.best_partner.tolist()) == {104}
    same = _LocalIndex((64, 128), (64, 128))
    d = same.tile(Tile(0, 64, 128, 64, 128))
    assert (d.i0, d.i1, d.j0, d.j1) == (0, 64, 0, 64) and d.diagonal


@pytest.mark.slow
def test_a_part_on_dask_equals_the_part_in_one_process(study):
    """A --part's rows start mid-block: its grid is not the whole plan's, and the tasks still cover
    it exactly (same survivors, tables and per-SNP partials as one process)."""
    from gboost.pipeline.scan import screen

    params = ScanParams(device="cpu", epi1=1e-3, tile=32, part=(2, 3))
    one = screen(study, params, engine=CpuEngine(tile=32)).acc
    dist = screen(study, params, engine=DaskEngine("local:2", device="cpu", tile=32)).acc

    def pairs(acc):
        i, j = np.concatenate(acc.surv_i), np.concatenate(acc.surv_j)
        order = np.lexsort((j, i))
        return i[order], j[order], np.concatenate(acc.surv_ksa)[order], np.concatenate(acc.surv_tables)[order]

    for x, y in zip(pairs(one), pairs(dist)):
        assert np.array_equal(x, y)
    assert dist.n_valid == one.n_valid and dist.tiles_done == one.tiles_done
    for f in ("n_sig", "n_tot", "best", "best_partner"):
        assert np.array_equal(getattr(dist.summary, f), getattr(one.summary, f))


@pytest.mark.slow
def test_a_gpu_fault_on_one_worker_moves_its_tasks_and_loses_nothing(study):
    """Worker 0's 'GPU' fails on every tile: it leaves the cluster and its tasks rerun on the
    other; the outputs are those of one process."""
    def engine_factory():  # local: cloudpickle sends it, and the class below, by value
        from distributed import get_worker

        class FailingGpu(CpuEngine):
            def run_tiles(self, tiles, cancel=None):
                if any(t.index >= 0 for t in tiles):  # the probe's tile (index -1) passes
                    raise RuntimeError("GPU 0 (Fake X100): CUDA error in tile 3 (row SNPs 0-31 x column SNPs "
                                       "64-95): CUDARuntimeError: cudaErrorECCUncorrectable")
                return super().run_tiles(tiles, cancel)

        return FailingGpu(threads=1) if str(get_worker().name) == "0" else CpuEngine(threads=1)

    params = ScanParams(device="cpu", epi1=1e-3, tile=32)
    single = run_scan(study, params, engine=CpuEngine(tile=32))
    engine = DaskEngine("local:2", device="cpu", tile=32, engine_factory=engine_factory)
    names = []

    def progress(ev):
        if ev.tiles_done == ev.tiles_total:
            names.extend(str(w["name"]) for w in engine.client.scheduler_info()["workers"].values())

    distributed = run_scan(study, params, engine=engine, progress=progress)
    assert outputs(distributed) == outputs(single)
    assert distributed.n_valid == single.n_valid
    assert names == ["1"]  # worker 0 left after its first task (28 tasks: it was given some)


@pytest.mark.slow
def test_worker_dying_during_prepare_is_dropped_and_scan_completes(study, monkeypatch):
    from gboost.engines import distributed as d

    real = d._worker_probe

    def dies_on_worker_0(*args):  # local, so cloudpickle sends it by value; `real` by reference
        from distributed import get_worker

        if str(get_worker().name) == "0":
            os._exit(1)
        return real(*args)

    monkeypatch.setattr(d, "_worker_probe", dies_on_worker_0)
    params = ScanParams(device="cpu", epi1=1e-3, tile=32)
    single = run_scan(study, params, engine=CpuEngine(tile=32))
    engine = DaskEngine("local:2", device="cpu", tile=32)
    distributed = run_scan(study, params, engine=engine)
    assert len(engine.prepared_workers) == 1
    assert engine.last_tasks >= 8  # at least 8 tasks a worker for the workers there (1 or 2, as the dead one restarts)
    assert outputs(distributed) == outputs(single)
    assert distributed.n_valid == single.n_valid


def test_local_gpus_without_a_gpu_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    from gboost.cli import main
    from gboost.engines import dask_cluster as d

    monkeypatch.setattr(d, "_gpu_count", lambda: 0)
    out = tmp_path / "res"
    rc = main(["scan", "--bfile", "sample_data/sample", "--out", str(out), "--dask", "local:gpus", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == ["gboost: error: --dask local:gpus: no GPU is visible on this host (CuPy sees none)"]
    assert not out.exists()


def test_local_gpus_cluster_pins_one_gpu_per_worker(monkeypatch):
    """Without dask-cuda: one Nanny a GPU, each seeing only its GPU (as CUDA_VISIBLE_DEVICES
    names them), two threads each (one task's upload beside the other's kernels)."""
    import sys

    from gboost.engines import dask_cluster as d

    monkeypatch.setitem(sys.modules, "dask_cuda", None)  # as where it is not installed
    monkeypatch.setattr(d, "_gpu_count", lambda: 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    seen = {}

    class Spec:
        def __init__(self, workers, scheduler, silence_logs):
            seen.update(workers)

    import distributed

    monkeypatch.setattr(distributed, "SpecCluster", Spec)
    d.local_gpu_cluster()
    assert {k: v["options"] for k, v in seen.items()} == {
        "0": {"nthreads": 2, "env": {"CUDA_VISIBLE_DEVICES": "3"}},
        "1": {"nthreads": 2, "env": {"CUDA_VISIBLE_DEVICES": "5"}}}


@pytest.mark.gpu(devices=2)
def test_local_gpus_on_two_gpus_equals_one_gpu_in_one_process():
    """`--dask local:gpus` on a host of several GPUs: a worker a GPU, tasks of two super-blocks,
    the same outputs as the GPU engine in one process (1 % missing calls, tiles small enough that
    there are many tasks)."""
    from gboost.engines.gpu import GpuEngine

    g, is_case = random_genotypes(np.random.default_rng(11), 3000, 700, missing=0.01)
    s = study_from_genotypes(g, is_case)
    params = ScanParams(device="gpu", epi1=1e-3, tile=256)
    single = run_scan(s, params, engine=GpuEngine(gpus=[0], tile=256))
    engine = DaskEngine("local:gpus", tile=256)
    distributed = run_scan(s, params, engine=engine)
    assert outputs(distributed) == outputs(single)
    assert distributed.n_valid == single.n_valid
    assert engine.last_tasks >= 16 and engine.last_units >= 1


@pytest.mark.slow
def test_permutations_on_a_dask_cluster_equal_the_cpu_engine_on_one_cluster(study):
    """The permutations keep the engine prepared from one to the next: on Dask one cluster serves them
    all (it is started once and closed at the end), with the CPU engine's maxima for the same seed."""
    from gboost.pipeline.permute import run_permutations

    want = run_permutations(study, CpuEngine(tile=64), 4, 9)
    engine = DaskEngine("local:2", device="cpu", tile=64)
    started = []
    connect = engine._connect

    def counted_connect():
        started.append(1)
        connect()

    engine._connect = counted_connect
    got = run_permutations(study, engine, 4, 9)
    assert [(m.stat, m.i, m.j, m.df) for m in got.maxima] == [(m.stat, m.i, m.j, m.df) for m in want.maxima]
    assert len(started) == 1 and engine.client is None  # one cluster for every permutation, closed after
