"""The GPU engine against the CPU engine, the oracle (docs/DESIGN.md §3.5): tables, survivors, summaries, scans.

Every equality test runs for both counting paths (``counting``: binary tensor cores, "mma", and
CUDA-core popcounts, "popc"). Then the memory policy (planes streamed through a small device
budget, out-of-memory back-off), CUDA faults in a tile (a clear error, and --resume), and the
CPU fallback of ``--device auto``.

Every test that needs a device carries the one ``gpu`` marker (tests/helpers.py) and is skipped,
with the reason, where CuPy is missing or sees no GPU; they are run for real on the GPU machine
(``python -m pytest tests/gpu/test_gpu_engine.py``).
"""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from gboost.engines.base import Tile
from gboost.engines.cpu import CpuEngine
from gboost.pipeline.scan import ScanParams, run_scan
from gboost.pipeline.tiles import plan_tiles
from gboost.engines.gpu.config import MmaConfig
from tests.helpers import (LOOSE, STREAMED, assert_scan_equal, assert_tile_equal, gpu_engine, gpu_study,
                           gpu_unavailable, mma_unavailable, pool_baseline, tiles_of)

_NO_GPU = gpu_unavailable()


# p never a multiple of the tiles below, n never a multiple of 64.
STUDIES = {
    "missing-2pct-mixed-modes": dict(p=157, n=203, n_case=101, fully_called=70, monomorphic=(5, 77), all_missing=(40,)),
    "tiny-case-class": dict(p=131, n=150, n_case=7, seed=1),
    "no-missing": dict(p=100, n=130, n_case=61, missing=0.0, seed=2, monomorphic=(3,)),
    "many-words": dict(p=70, n=1500, n_case=700, missing=0.01, seed=3, fully_called=35),
}

@pytest.fixture(scope="module", params=sorted(STUDIES))
def study(request):
    return gpu_study(**STUDIES[request.param])


@pytest.fixture(params=["mma", "popc"])
def counting(request):
    """Both counting paths; the tensor-core one only where the device has binary mma."""
    if request.param == "mma" and _NO_GPU is None and mma_unavailable() is not None:
        pytest.skip(mma_unavailable())
    return request.param


@pytest.mark.gpu
@pytest.mark.parametrize("tile", [40, 64])
def test_tiles_equal_cpu_engine(study, tile, counting):
    tiles = plan_tiles(study.n_snps, tile)
    want = tiles_of(CpuEngine(tile=tile), study, LOOSE, tiles)
    eng = gpu_engine(tile=tile, counting=counting)
    eng.prepare(study, LOOSE)
    try:
        assert eng.countings == [counting] and eng.streaming is False
        got = [eng.run_tile(t) for t in tiles]
    finally:
        eng.close()
    assert sum(len(r.surv_i) for r in want) > 0
    assert sum(r.rows.n_tot.sum() - len(r.surv_i) for r in want) > 0  # non-survivors in the summary too
    for g, w in zip(got, want):
        assert_tile_equal(g, w)


def _scan(study, engine, **params):
    return run_scan(study, ScanParams(**{"epi1": 0.01, "epi2": 0.1, **params}), engine=engine)


@pytest.mark.gpu
@pytest.mark.parametrize("tile", [40, None])
def test_scan_outputs_equal_cpu_engine(study, tile, counting):
    want = _scan(study, CpuEngine(tile=64))
    got = _scan(study, gpu_engine(tile=tile, counting=counting))
    assert got.engine == "gpu"
    assert ("tensor-core" in got.device) == (counting == "mma")
    assert_scan_equal(got, want)


@pytest.mark.gpu
def test_tiny_survivor_buffer_still_yields_every_pair(counting):
    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    want = _scan(study, CpuEngine(tile=64), epi1=0.05)
    got = _scan(study, gpu_engine(tile=40, survivor_capacity=1, counting=counting), epi1=0.05)
    assert len(want.screened) > 40  # far past a capacity of 1 in most tiles
    assert_scan_equal(got, want)


@pytest.mark.gpu
def test_run_tiles_yields_each_tile_once_as_run_tile_does(counting):
    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 32)
    want = tiles_of(CpuEngine(tile=32), study, LOOSE, tiles)
    eng = gpu_engine(tile=32, counting=counting)
    eng.prepare(study, LOOSE)
    try:
        got = list(eng.run_tiles(tiles))
        assert eng.kernel_seconds > 0
    finally:
        eng.close()
    assert sorted(r.tile.index for r in got) == [t.index for t in tiles]
    for g in got:
        assert_tile_equal(g, want[g.tile.index])


@pytest.mark.gpu
def test_table_read_from_global_memory_gives_the_same_tiles(monkeypatch, counting):
    from gboost.engines.gpu import counting as ways

    monkeypatch.setattr(ways, "TABLE_SMEM_MAX", 0)  # as for a study too large for a shared-memory table
    monkeypatch.setattr(ways, "MMA_TABLE_SMEM_MAX", 0)
    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 64)
    eng = gpu_engine(tile=64, counting=counting)
    got = tiles_of(eng, study, LOOSE, tiles)
    assert eng.table_in_shared_memory is False
    for g, w in zip(got, tiles_of(CpuEngine(tile=64), study, LOOSE, tiles)):
        assert_tile_equal(g, w)


@pytest.mark.gpu
def test_a_study_too_large_for_the_pre_screen_table_counts_through_the_block_ring():
    """At >= ~12.8k samples the float32 pre-screen's table does not fit: the pre-screen forms its
    brackets by shares and stages no table; the float64 build (which runs from 2^16 samples) counts
    its fully called blocks through the <2,2> kernel's block ring (the float64 table in global
    memory, the ring at the start of dynamic shared memory) while blocks with missing calls count by
    each warp's loads. 13,000 samples, SNPs fully called and with 1 % missing calls: every tile of
    both builds equals the CPU engine's, and each build is the one described."""
    if _NO_GPU is None and mma_unavailable() is not None:
        pytest.skip(mma_unavailable())
    study = gpu_study(p=160, n=13_000, n_case=6_100, missing=0.01, fully_called=96, seed=7)
    tiles = plan_tiles(study.n_snps, 64)
    want = tiles_of(CpuEngine(tile=64), study, LOOSE, tiles)
    for cfg in (MmaConfig(), MmaConfig(f32_screen=False)):
        eng = gpu_engine(tile=64, counting="mma", mma_config=cfg)
        eng.prepare(study, LOOSE)
        try:
            build = eng._runners[0].build
            if cfg.f32_screen:
                assert build.use_f32 is True and build.table_staged is False and build.n_tab == 13_001
                assert build.dyn_smem["gm_screen_22"] == replace(cfg, sfu_xlogx=2).f32_smem(0)
            else:
                assert build.use_f32 is False and build.n_tab == 0
                assert build.dyn_smem["gm_screen_22"] == cfg.ring_bytes > 0
            got = list(eng.run_tiles(tiles))
        finally:
            eng.close()
        for g in got:
            assert_tile_equal(g, want[g.tile.index])


def _class_edge_study(n_class: int, seed: int = 3):
    """Fully called SNPs, n_class controls and n_class cases: SNPs 0-3 have every control at genotype 0
    (SNPs 0, 1) or 1 (SNPs 2, 3) and random cases, so pairs among them count n_class controls in one
    cell, the largest count a packed accumulator's half must hold (and strongly associated: they
    survive, so their tables are compared)."""
    from gboost.data.study import study_from_genotypes

    rng = np.random.default_rng(seed)
    p, n = 40, 2 * n_class
    g = rng.binomial(2, rng.uniform(0.1, 0.5, p)[:, None], (p, n)).astype(np.int8)
    is_case = np.zeros(n, bool)
    is_case[rng.choice(n, n_class, replace=False)] = True
    g[0:2, ~is_case] = 0
    g[2:4, ~is_case] = 1
    return study_from_genotypes(g, is_case)


@pytest.mark.gpu(mma=True)
@pytest.mark.parametrize("n_class, warp_rows", [(65_535, 32), (65_536, 16)])
def test_the_largest_class_a_packed_accumulator_holds(n_class, warp_rows):
    """With 32 rows a warp the <2,2> ring packs both classes into one accumulator, (controls << 16) |
    cases (boost_mma.cu, GM_KC): exact up to 65,535 samples a class, where a cell can count 65,535;
    one sample more and the runner takes 16 rows a warp, classes apart. Both equal the CPU engine."""
    study = _class_edge_study(n_class)
    tiles = plan_tiles(study.n_snps, 64)
    eng = gpu_engine(tile=64, counting="mma")
    eng.prepare(study, LOOSE)
    try:
        assert eng._runners[0].config.warp_rows == warp_rows
        assert eng._runners[0].block_rows == 4 * warp_rows
        got = list(eng.run_tiles(tiles))
    finally:
        eng.close()
    want = tiles_of(CpuEngine(tile=64), study, LOOSE, tiles)
    edge = 0
    for gt in got:
        w = want[gt.tile.index]
        assert_tile_equal(gt, w)
        edge += int(np.sum(w.surv_tables == n_class))
    assert edge > 0  # some survivor's table holds a cell of a whole class


@pytest.mark.gpu
def test_tiles_of_a_part_equal_cpu_engine(counting):
    from gboost.pipeline.scan import part_rows

    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 48, part_rows(study.n_snps, 2, 3))  # clipped rows: diagonal tiles not square
    assert any(t.diagonal and t.i1 - t.i0 != t.j1 - t.j0 for t in tiles)
    n = len(tiles)  # and overlapping tiles that do not start on the diagonal
    tiles += [Tile(n, 29, 67, 40, 90), Tile(n + 1, 60, 140, 10, 157), Tile(n + 2, 100, 101, 90, 157)]
    want = tiles_of(CpuEngine(tile=48), study, LOOSE, tiles)
    got = tiles_of(gpu_engine(tile=48, counting=counting), study, LOOSE, tiles)
    for g, w in zip(got, want):
        assert_tile_equal(g, w)


@pytest.mark.gpu(mma=True)
def test_the_fragment_native_kernels_screen_the_aligned_tiles_and_equal_the_cpu_engine(monkeypatch):
    """A study with missing calls keeps the planes' fragment-native copy (MmaCounting.frag): the <3,2> and
    <3,3> blocks of a tile whose rows and columns start at multiples of 16 run gm_screen_32f/33f, the
    others the standard kernels, and every tile equals the CPU engine's. A study without missing calls
    makes no copy."""
    from gboost.engines.gpu import counting as ways

    launched = []
    real = ways.MmaCounting.launch

    def launch(self, b, name, args, *a, **kw):
        launched.append((name, int(args["off_r"]), int(args["off_c"])))  # (kernel, row and column plane offsets)
        return real(self, b, name, args, *a, **kw)

    monkeypatch.setattr(ways.MmaCounting, "launch", launch)
    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 40)  # tiles at 0, 40, 80, 120: some start at multiples of 16, some not
    tiles += [Tile(len(tiles), 32, 64, 48, 157), Tile(len(tiles) + 1, 29, 67, 40, 90)]
    want = tiles_of(CpuEngine(tile=40), study, LOOSE, tiles)
    eng = gpu_engine(tile=40, counting="mma")
    eng.prepare(study, LOOSE)
    try:
        assert [r.way.frag for r in eng._runners] == [True] * len(eng._runners)
        got = [eng.run_tile(t) for t in tiles]
    finally:
        eng.close()
    for g, w in zip(got, want):
        assert_tile_equal(g, w)
    fast = {(o_r, o_c) for name, o_r, o_c in launched if name.endswith("f")}
    plain = {(o_r, o_c) for name, o_r, o_c in launched if name in ("gm_screen_32", "gm_screen_33")}
    assert fast and all(o_r % 16 == 0 and o_c % 16 == 0 for o_r, o_c in fast)
    assert plain and all(o_r % 16 or o_c % 16 for o_r, o_c in plain)
    eng = gpu_engine(tile=40, counting="mma")
    eng.prepare(gpu_study(**STUDIES["no-missing"]), LOOSE)
    try:
        assert not any(r.way.frag for r in eng._runners)
    finally:
        eng.close()


@pytest.mark.gpu(mma=True)
def test_planes_stay_resident_without_the_fragment_native_copy_where_it_does_not_fit(monkeypatch):
    """Where the planes' array with the fragment-native copy cannot be allocated (the device's free memory
    misjudged), the runner allocates them again without it: resident, not streamed, the standard
    kernels only, and every tile equal to the CPU engine's."""
    import cupy

    from gboost.engines.gpu import counting as ways

    real_alloc, real_launch = ways.MmaCounting.alloc_planes, ways.MmaCounting.launch
    asked, launched = [], []

    def alloc_planes(self, cp, n):
        asked.append(self.frag)
        if self.frag:
            raise cupy.cuda.memory.OutOfMemoryError(1 << 30, 0, 0)
        return real_alloc(self, cp, n)

    def launch(self, b, name, args, *a, **kw):
        launched.append(name)
        return real_launch(self, b, name, args, *a, **kw)

    monkeypatch.setattr(ways.MmaCounting, "alloc_planes", alloc_planes)
    monkeypatch.setattr(ways.MmaCounting, "launch", launch)
    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 64)
    want = tiles_of(CpuEngine(tile=64), study, LOOSE, tiles)
    eng = gpu_engine(tile=64, counting="mma")
    eng.prepare(study, LOOSE)
    try:
        assert asked == [True, False] * len(eng._runners)
        assert eng.streaming is False and eng.backoffs == len(eng._runners)
        assert not any(r.way.frag for r in eng._runners)
        got = [eng.run_tile(t) for t in tiles]
    finally:
        eng.close()
    assert {"gm_screen_32", "gm_screen_33"} & set(launched) and not any(name.endswith("f") for name in launched)
    for g, w in zip(got, want):
        assert_tile_equal(g, w)


@pytest.mark.gpu
def test_run_tiles_stops_taking_tiles_once_cancelled():
    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 16)
    eng = gpu_engine(tile=16)
    eng.prepare(study, LOOSE)
    seen = []
    try:
        for res in eng.run_tiles(tiles, cancel=lambda: len(seen) >= 2):
            seen.append(res)
    finally:
        eng.close()
    assert 2 <= len(seen) < len(tiles)


@pytest.mark.gpu
@pytest.mark.parametrize("config", [dict(carry_save=False), dict(block_rows=64, block_cols=16, chunk_words=3)])
def test_other_kernel_configurations_give_the_same_tiles(config):
    from gboost.engines.gpu import KernelConfig

    study = gpu_study(**STUDIES["many-words"])
    tiles = plan_tiles(study.n_snps, 48)
    want = tiles_of(CpuEngine(tile=48), study, LOOSE, tiles)
    got = tiles_of(gpu_engine(tile=48, config=KernelConfig(**config), counting="popc"), study, LOOSE, tiles)
    for g, w in zip(got, want):
        assert_tile_equal(g, w)


@pytest.mark.gpu(mma=True)
@pytest.mark.parametrize("config", [dict(warps_rows=1, warps_cols=2), dict(warps_rows=2, warps_cols=4, min_blocks=(2, 1), stages=4, bar_steps=2),
                                    dict(warp_rows=16), dict(warp_rows=16, stages=0), dict(stages=0)])
@pytest.mark.parametrize("name", ["many-words", "missing-2pct-mixed-modes"])
def test_other_tensor_core_configurations_give_the_same_tiles(config, name):
    from gboost.engines.gpu import MmaConfig

    study = gpu_study(**STUDIES[name])
    tiles = plan_tiles(study.n_snps, 48)
    want = tiles_of(CpuEngine(tile=48), study, LOOSE, tiles)
    got = tiles_of(gpu_engine(tile=48, mma_config=MmaConfig(**config), counting="mma"), study, LOOSE, tiles)
    for g, w in zip(got, want):
        assert_tile_equal(g, w)


@pytest.mark.gpu(devices=2)
def test_two_gpus_give_the_same_as_one(counting):
    """(The CUDA-core path: each GPU builds its own missing-call lists, missing_lists.DeviceLists.)"""
    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 32)
    one = gpu_engine(gpus=[0], tile=32, counting=counting)
    two = gpu_engine(gpus=[0, 1], tile=32, counting=counting)
    results = []
    for eng in (one, two):
        eng.prepare(study, LOOSE)
        try:
            results.append(sorted(eng.run_tiles(tiles), key=lambda r: r.tile.index))
        finally:
            eng.close()
    assert len(results[1]) == len(tiles)
    for g, w in zip(results[1], results[0]):
        assert_tile_equal(g, w)
    assert_scan_equal(_scan(study, gpu_engine(gpus=[0, 1], tile=32, counting=counting)),
                      _scan(study, gpu_engine(gpus=[0], tile=32, counting=counting)))
    if counting == "popc":
        assert one.listed_snps == two.listed_snps > 0


@pytest.mark.gpu
def test_make_engine_gpu_gives_a_described_gpu_engine():
    import cupy

    from gboost.engines import make_engine

    eng = make_engine("gpu")
    assert eng.name == "gpu"
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    assert name in eng.describe()


def test_importing_the_gpu_engine_does_not_import_cupy():
    code = ("import sys, gboost, gboost.engines, gboost.engines.gpu, gboost.pipeline.scan\n"
            "assert 'cupy' not in sys.modules, 'cupy imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_kernel_source_ships_with_the_package():
    from gboost.engines.gpu import kernel_source

    src = kernel_source()
    for name in ("gb_screen_22", "gb_screen_33", "gb_reduce_partials"):
        assert f"{name}(" in src


# -- memory: planes streamed through a small budget, out-of-memory back-off ----------

@pytest.mark.gpu
def test_small_memory_limit_streams_the_planes_and_backs_off_with_the_same_scan(counting):
    import cupy

    study = gpu_study(**STREAMED)
    want = _scan(study, CpuEngine(tile=64))
    # 128 KiB: far less than twice the planes (so they stay on the host) and less than a tile
    # of 128 SNPs needs (two blocks, an upload buffer, partials), so the first tile runs out.
    limit = pool_baseline() + (128 << 10)
    before = cupy.get_default_memory_pool().get_limit()
    eng = gpu_engine(tile=128, counting=counting, memory_limit_bytes=limit)
    got = _scan(study, eng)
    assert eng.streaming is True
    assert eng.backoffs >= 1
    assert cupy.get_default_memory_pool().get_limit() == before  # the pool limit is restored
    assert_scan_equal(got, want)


@pytest.mark.gpu
def test_streamed_tiles_equal_cpu_engine(counting):
    study = gpu_study(**STREAMED)
    tiles = plan_tiles(study.n_snps, 48)
    tiles += [Tile(len(tiles), 29, 67, 40, 90), Tile(len(tiles) + 1, 100, 140, 90, 130)]  # off the grid
    want = tiles_of(CpuEngine(tile=48), study, LOOSE, tiles)
    # 320 KiB: less than twice the planes and their upload buffer (so they stream), room for tiles of 48.
    eng = gpu_engine(tile=48, counting=counting, memory_limit_bytes=pool_baseline() + (320 << 10))
    eng.prepare(study, LOOSE)
    try:
        assert eng.streaming is True
        got = list(eng.run_tiles(tiles))
    finally:
        eng.close()
    assert sorted(r.tile.index for r in got) == [t.index for t in tiles]
    for g in got:
        assert_tile_equal(g, want[g.tile.index])


@pytest.mark.gpu
@pytest.mark.parametrize("tile", [None, 200])
def test_a_study_past_the_counting_loops_32_bit_offsets_streams_in_blocks_it_can_address(monkeypatch, tile):
    """The tensor-core counting loop addresses each type's planes by 32-bit word offsets, so no plane
    array handed to it may hold more than MmaCounting.max_snps SNPs (2.7M at 100,000 samples, 560k at
    488,000). A study past it streams its planes in blocks of at most that many, a user's --tile
    included; here the limit is lowered to 64 SNPs for a study of 300 with missing calls, so every
    mode kernel runs on blocks, and the scan equals the CPU engine's."""
    from gboost.engines.gpu import counting as counting_mod

    if _NO_GPU is None and mma_unavailable() is not None:
        pytest.skip(mma_unavailable())
    monkeypatch.setattr(counting_mod.MmaCounting, "max_snps", property(lambda self: 64))
    study = gpu_study(**STREAMED)
    want = _scan(study, CpuEngine(tile=64))
    eng = gpu_engine(tile=tile, counting="mma")
    edges = []
    planned = eng.tile_snps
    eng.tile_snps = lambda: edges.append(planned()) or edges[-1]  # the tile edge the scan plans with
    got = _scan(study, eng)
    assert eng.streaming is True
    assert edges and max(edges) <= 64
    assert_scan_equal(got, want)


def _slow_chunks(monkeypatch, study, *, snps_per_chunk: int, delay_s: float, fail_at: int | None = None):
    """Resident planes uploaded in chunks of ``snps_per_chunk`` SNPs, each ``delay_s`` late (so tiles
    queue while the upload is under way); the chunk ``fail_at`` raises."""
    import time

    from gboost.engines.gpu import upload

    real = upload.PlaneUpload._send
    calls = []

    def send(self, k, a, b, buf, sent):
        calls.append(a)
        if fail_at is not None and len(calls) == fail_at:
            raise ValueError("disk went away")
        time.sleep(delay_s)
        return real(self, k, a, b, buf, sent)

    monkeypatch.setattr(upload.PlaneUpload, "_send", send)
    monkeypatch.setattr(upload, "PRELOAD_CHUNK_BYTES", snps_per_chunk * 3 * 8 * study.layout.n_words)
    return calls


def _upload_threads():
    import threading

    return [t for t in threading.enumerate() if t.name.startswith("gboost-upload")]


@pytest.mark.gpu
def test_tiles_queued_while_the_planes_upload_equal_cpu_engine(monkeypatch, counting):
    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 40)
    # Off the grid and out of order: the first tile needs the last chunks, the second the first.
    tiles = [Tile(0, 120, 157, 130, 157), Tile(1, 0, 30, 5, 50)] + [
        Tile(k + 2, t.i0, t.i1, t.j0, t.j1) for k, t in enumerate(tiles)]
    want = tiles_of(CpuEngine(tile=40), study, LOOSE, tiles)
    # (chunks are whole groups of 32 SNPs, the smallest: the missing-call lists' sample-major copy is built
    # a group at a time, missing_lists.DeviceLists.add)
    calls = _slow_chunks(monkeypatch, study, snps_per_chunk=32, delay_s=0.02)
    eng = gpu_engine(tile=40, counting=counting)
    eng.prepare(study, LOOSE)
    try:
        up = eng._runners[0]._uploading
        assert up is not None and not all(e.is_set() for e in up.ready)  # prepare did not wait for it
        got = list(eng.run_tiles(tiles))
        assert eng._runners[0]._uploading is None  # every chunk waited for: the upload is dropped
    finally:
        eng.close()
    assert calls == list(range(0, study.n_snps, 32))
    assert not _upload_threads()
    assert sorted(r.tile.index for r in got) == [t.index for t in tiles]
    for g in got:
        assert_tile_equal(g, want[g.tile.index])


@pytest.mark.gpu
def test_a_failed_plane_upload_stops_the_scan_with_a_clear_error(monkeypatch):
    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    _slow_chunks(monkeypatch, study, snps_per_chunk=7, delay_s=0.0, fail_at=3)
    with pytest.raises(RuntimeError, match="uploading the genotype planes failed: ValueError: disk went away"):
        _scan(study, gpu_engine(tile=40))
    assert not _upload_threads()


@pytest.mark.gpu
def test_out_of_memory_in_a_tile_halves_the_tile_and_gives_the_same_results(monkeypatch, counting):
    import cupy

    from gboost.engines.gpu.device import DeviceRunner

    real_submit = DeviceRunner.submit
    seen = []

    def submit(self, tile, slot):  # a device that cannot hold a tile wider than 40 SNPs
        seen.append(tile)
        if max(tile.i1 - tile.i0, tile.j1 - tile.j0) > 40:
            raise cupy.cuda.memory.OutOfMemoryError(1 << 30, 0, 0)
        return real_submit(self, tile, slot)

    monkeypatch.setattr(DeviceRunner, "submit", submit)
    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 64)
    want = tiles_of(CpuEngine(tile=64), study, LOOSE, tiles)
    eng = gpu_engine(tile=64, counting=counting)
    eng.prepare(study, LOOSE)
    try:
        got = sorted(eng.run_tiles(tiles), key=lambda r: r.tile.index)
        assert eng.backoffs == 1
    finally:
        eng.close()
    assert any(t.i1 - t.i0 == 32 for t in seen)  # screened as 32-SNP sub-tiles
    assert len(got) == len(tiles)
    for g, w in zip(got, want):
        assert_tile_equal(g, w)


def _fail_at(monkeypatch, index: int):
    """Make the kernel launch of tile ``index`` fail as an illegal memory access would."""
    import cupy

    from gboost.engines.gpu.device import DeviceRunner

    real = DeviceRunner._launch

    def launch(self, mode, first, tile, *args):
        if tile.index == index:
            raise cupy.cuda.runtime.CUDARuntimeError(700)  # cudaErrorIllegalAddress
        return real(self, mode, first, tile, *args)

    monkeypatch.setattr(DeviceRunner, "_launch", launch)


@pytest.mark.gpu
def test_cuda_error_in_a_tile_names_the_device_and_the_tile(monkeypatch):
    _fail_at(monkeypatch, 3)
    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 32)
    eng = gpu_engine(tile=32)
    eng.prepare(study, LOOSE)
    try:
        with pytest.raises(RuntimeError, match=r"GPU 0 \(.+\): CUDA error in tile 3 .*--resume"):
            list(eng.run_tiles(tiles))
        with pytest.raises(RuntimeError, match="tile 3"):
            eng.run_tile(tiles[3])
    finally:
        eng.close()


@pytest.mark.gpu
def test_scan_stopped_by_a_gpu_error_resumes_to_the_same_outputs(monkeypatch, tmp_path, counting):
    from gboost.pipeline.checkpoint import Ledger
    from gboost.pipeline.scan import ScanParams, screen

    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    params = ScanParams(epi1=0.01, epi2=0.1)
    want = _scan(study, CpuEngine(tile=32))
    _fail_at(monkeypatch, 9)
    led = Ledger(tmp_path, study, params, resume=False)
    with pytest.raises(RuntimeError, match="tile 9"):
        screen(study, params, engine=gpu_engine(tile=32, counting=counting), checkpoint=led)
    led.close()
    monkeypatch.undo()
    led = Ledger(tmp_path, study, params, resume=True)
    assert led.tile == 32
    replayed = sum(1 for _ in led.replay())
    assert 0 < replayed < 9
    led.close()
    led = Ledger(tmp_path, study, params, resume=True)
    got = run_scan(study, params, engine=gpu_engine(tile=32, counting=counting), checkpoint=led)
    led.close()
    assert_scan_equal(got, want)


@pytest.mark.gpu
def test_make_engine_auto_takes_a_working_gpu():
    from gboost.engines import make_engine

    eng = make_engine("auto")
    assert eng.name == "gpu"
    assert "GPU not used" not in eng.describe()


# -- no device needed ----------------------------------------------------------------------------

def test_auto_falls_back_to_the_cpu_engine_when_the_gpu_engine_cannot_start(monkeypatch):
    import gboost.engines as engines
    import gboost.engines.devices as devices
    import gboost.engines.gpu as gpu

    def broken(self):
        raise RuntimeError("GPU 0: CompileException: nvrtc: error: invalid value for --gpu-architecture")

    monkeypatch.setattr(devices, "gpu_available", lambda: (True, "1 x Some GPU"))
    monkeypatch.setattr(gpu.GpuEngine, "probe", broken)
    eng = engines.make_engine("auto", threads=1)
    assert eng.name == "cpu"
    assert eng.describe().startswith("CPU (numba, 1 threads); GPU not used:")
    assert "nvrtc" in eng.describe()
    assert engines.make_engine("gpu").name == "gpu"  # an explicit --device gpu is not second-guessed


def test_auto_says_why_when_cupy_sees_no_usable_device(monkeypatch):
    import gboost.engines as engines
    import gboost.engines.devices as devices

    monkeypatch.setattr(devices, "gpu_available", lambda: (False, "no CUDA device (cudaErrorNoDevice)"))
    monkeypatch.setattr(devices, "_cupy_installed", lambda: True)
    eng = engines.make_engine("auto", threads=1)
    assert eng.name == "cpu" and "GPU not used: no CUDA device" in eng.describe()
    monkeypatch.setattr(devices, "_cupy_installed", lambda: False)  # a plain CPU machine: no note
    assert engines.make_engine("auto", threads=1).describe() == "CPU (numba, 1 threads)"


def test_counting_is_chosen_by_argument_or_environment(monkeypatch):
    from gboost.engines.gpu import GpuEngine

    monkeypatch.delenv("GBOOST_GPU_COUNTING", raising=False)
    assert GpuEngine().counting == "auto"
    monkeypatch.setenv("GBOOST_GPU_COUNTING", "popc")
    assert GpuEngine().counting == "popc"
    assert GpuEngine(counting="mma").counting == "mma"
    with pytest.raises(ValueError, match="counting"):
        GpuEngine(counting="tensor")


def test_sub_tile_results_merge_into_the_tile_result():
    """The back-off path's merge, checked on the CPU engine: a tile screened as sub-tiles."""
    from gboost.engines.gpu import merge_tile_results

    study = gpu_study(**STUDIES["missing-2pct-mixed-modes"])
    cpu = CpuEngine(tile=64)
    cpu.prepare(study, LOOSE)
    for tile in (Tile(0, 0, 100, 0, 100), Tile(1, 30, 90, 60, 157), Tile(2, 60, 140, 10, 157)):
        whole = cpu.run_tile(tile)
        parts = []
        for a in range(tile.i0, tile.i1, 24):
            for b in range(tile.j0, tile.j1, 24):
                sub = Tile(tile.index, a, min(a + 24, tile.i1), b, min(b + 24, tile.j1))
                if sub.n_pairs:
                    parts.append(cpu.run_tile(sub))
        assert len(parts) > 4
        assert_tile_equal(merge_tile_results(tile, parts), whole)


def test_tensor_core_build_plans_shared_memory_and_skips_the_f32_build_it_cannot_use(monkeypatch):
    """MmaCounting.build (no device: kernels faked with the static shared memory nvcc reports) compiles
    the pre-screen's build, reads its static shared memory and falls back to GM_F32=0 where the parking
    areas do not fit; where its float32 table cannot fit (n + 1 > MMA_TABLE_SMEM_MAX / 8, ~12.8k samples)
    the pre-screen forms its brackets by shares (sfu_xlogx 2) and stages no table. The float64 build's
    <2,2> kernel counts through the block ring where the ring fits (from 2^16 samples it is what runs),
    else each warp loads its own operands, and its float64 table is staged where it fits beside the
    ring. It never loads the pre-screen's build where n alone rules it out (n >= 2^16: 16-bit cells)."""
    from gboost.engines.gpu import MmaConfig
    from gboost.engines.gpu import counting as ways

    class Fn:
        def __init__(self, static):
            self.shared_size_bytes, self.max_dynamic_shared_size_bytes, self.num_regs = static, 0, 128

    asked = []

    def fake_kernels(device_id, config):
        asked.append(config)
        static = 36400 if config.f32_screen else 25632  # gm_screen_22 of the two builds (sm_90, 4 x 4 warps of 32 x 16)
        names = (*ways.MMA_MODE_KERNELS, *ways.MMA_FAST_KERNELS.values())
        return {name: Fn(static if name.endswith("22") else 10240) for name in names}

    def rule(cfg, n, optin):
        """(pre-screen built, ring stages, table entries, pre-screen used): the pre-screen where its table,
        parking areas and ring fit; else the float64 build, its <2,2> kernel counting through the ring
        where the ring fits (else each warp's own loads), the float64 table staged where it fits beside."""
        def fit(c, ring=0):
            static = max(fake_kernels(0, c)[name].shared_size_bytes for name in ways.MMA_MODE_KERNELS)
            return static, (n + 1 if (n + 1) * 8 <= min(ways.MMA_TABLE_SMEM_MAX, optin - static - ring) else 0)

        cap = lambda static: min(ways.MMA_TABLE_SMEM_MAX * max(1, cfg.threads // 256), optin - static)  # noqa: E731
        sfu = cfg.sfu_xlogx
        if cfg.f32_screen and n < 1 << 16 and not ((n + 1) * 8 <= ways.MMA_TABLE_SMEM_MAX
                                                   and cfg.f32_smem(n + 1) <= cap(0)):
            cfg = replace(cfg, sfu_xlogx=2)
        staged = cfg.sfu_xlogx < 2
        static, n_tab = fit(cfg)
        n_tab = n_tab if staged else n + 1
        use = bool(n_tab and cfg.f32_screen and cfg.f32_smem(n_tab) <= cap(static) and n < 1 << 16)
        if not use:
            cfg = replace(cfg, f32_screen=False, sfu_xlogx=sfu)
            static, _ = fit(cfg)
            if cfg.stages > 1 and static + cfg.ring_bytes > optin:
                cfg = replace(cfg, stages=0)
            static, n_tab = fit(cfg, cfg.ring_bytes)
            staged = True
        return cfg.f32_screen, cfg.stages, n_tab, use, cfg.sfu_xlogx, staged

    monkeypatch.setattr(ways, "kernels", fake_kernels)
    configs = (MmaConfig(), MmaConfig(stages=0), MmaConfig(warps_rows=1, warps_cols=2), MmaConfig(f32_screen=False),
               MmaConfig(warp_rows=16),
               MmaConfig(warps_rows=2, warps_cols=4, min_blocks=(2, 1), stages=4, bar_steps=2))
    seen_use, seen_ring, seen_sfu = set(), set(), set()
    for optin in (227 << 10, 163 << 10, 99 << 10, 48 << 10):
        props = dict(sharedMemPerBlockOptin=optin, multiProcessorCount=132)
        for cfg in configs:
            for n in (100, 1500, 5000, 9000, 12000, 12798, 12799, 12800, 20000, 70000):
                want = rule(cfg, n, optin)
                asked.clear()
                b = ways.MmaCounting(cfg, 80, 40).build(0, props, n)
                got = (asked[-1].f32_screen, asked[-1].stages, b.n_tab, b.use_f32, asked[-1].sfu_xlogx, b.table_staged)
                assert got == want, (optin, cfg, n)
                if n >= 1 << 16:
                    assert not any(c.f32_screen for c in asked), (optin, cfg, n)
                ring = [b.dyn_smem[name] for name in ways.MMA_MODE_KERNELS]
                # the fragment-native kernels launch as the modes they stand for
                assert all(b.dyn_smem[f] == b.dyn_smem[ways.MMA_MODE_KERNELS[m]] for m, f in ways.MMA_FAST_KERNELS.items())
                if b.use_f32:
                    built = asked[-1]
                    assert ring == [built.f32_smem(b.n_tab)] + [built.f32_smem(b.n_tab, ring=False)] * 3
                    seen_sfu.add((b.table_staged, built.sfu_xlogx))
                else:
                    table = -(-b.n_tab * 8 // 16) * 16
                    assert ring == [table + asked[-1].ring_bytes] + [table] * 3
                    assert table + asked[-1].ring_bytes + 25632 <= optin  # the <2,2> kernel can launch
                seen_use.add(b.use_f32)
                seen_ring.add((b.use_f32, asked[-1].stages > 1))
    assert seen_use == {True, False}
    assert seen_sfu == {(True, 1), (False, 2)}  # the pre-screen with its table, and without it
    assert (False, True) in seen_ring and (False, False) in seen_ring  # the float64 build with and without the ring


def test_production_configs_cannot_build_a_wrong_result_kernel():
    """The bench-only switches (counting alone, timing probes, extra -D) and the ceiling kernels live in
    bench/gpu_variants.py and bench/kernels/: the package's configs and sources have none of them."""
    import dataclasses

    from gboost.engines.gpu import KernelConfig, MmaConfig, kernel_source, mma_kernel_source

    assert {f.name for f in dataclasses.fields(MmaConfig)} == {
        "warps_rows", "warps_cols", "warp_rows", "min_blocks", "f32_screen", "stages", "bar_steps", "sfu_xlogx",
        "fast_log"}
    for bad in ("count_only", "defines"):
        with pytest.raises(TypeError):
            MmaConfig(**{bad: ()})
    for opts in (MmaConfig().options(), MmaConfig(f32_screen=False, stages=0).options(), KernelConfig().options()):
        assert not [o for o in opts if o.startswith(("-DGM_COUNT_ONLY", "-DGM_PROBE"))], opts
    for src in (kernel_source(), mma_kernel_source()):
        assert "_ceiling(" not in src


@pytest.mark.gpu
def test_run_json_engine_info_says_where_the_planes_were_and_how_long_the_gpu_waited(counting):
    """run.json's engine_info (GpuEngine.screen_info): resident planes for a study that fits,
    streamed ones under a small memory limit; the tiles counted, idle time no more than the
    screen and the engine's set-up, its longest gap within the total."""
    study = gpu_study(**STREAMED)
    resident = run_scan(study, ScanParams(epi1=1e-3), engine=gpu_engine(tile=64, counting=counting))
    streamed = run_scan(study, ScanParams(epi1=1e-3), engine=gpu_engine(
        tile=48, counting=counting, memory_limit_bytes=pool_baseline() + (320 << 10)))
    for res, planes in ((resident, "resident"), (streamed, "streamed")):
        info = res.engine_info
        assert info["planes"] == planes
        assert info["tiles"] >= len(plan_tiles(study.n_snps, 64 if planes == "resident" else 48))  # (sub-tiles after a back-off count too)
        # (idle counts from the end of the engine's set-up, inside "prepare", to the last tile)
        assert 0.0 <= info["gpu_idle_longest_s"] <= info["gpu_idle_s"] <= res.timings["screen"] + res.timings["prepare"]
        assert info["kernel_s"] > 0 and info["mean_tile_kernel_s"] > 0


def test_mma_config_takes_16_rows_a_warp_where_a_class_would_carry_out_of_its_half():
    """32 rows a warp packs both classes' counts into one accumulator's 16-bit halves: the default,
    except where a class has 2^16 samples or more (MmaConfig.for_classes); the shared memory it plans
    (the parking areas of two row tiles, which the <2,2> ring shares)."""
    c = MmaConfig()
    assert (c.warp_rows, c.block_rows, c.block_cols) == (32, 128, 64)
    assert "-DGM_TR=2" in c.options() and "-DGM_TR=1" in c.for_classes(65_536, 3).options()
    assert c.for_classes(65_535, 65_535) is c
    for n_ctrl, n_case in ((65_536, 10), (10, 65_536), (300_000, 200_000)):
        narrow = c.for_classes(n_ctrl, n_case)
        assert (narrow.warp_rows, narrow.block_rows) == (16, 64)
        assert narrow == MmaConfig(warp_rows=16)
    assert MmaConfig(warp_rows=16).for_classes(10, 10).warp_rows == 16  # never widened
    assert (c.cells22_bytes, MmaConfig(warp_rows=16).cells22_bytes, c.park_bytes) == (8576, 4480, 4992)
    assert c.ring_bytes == 8 * 4 * (4 * 2 + 4) * 256 and MmaConfig(warp_rows=16).ring_bytes == 8 * 4 * 8 * 256
    assert c.f32_smem(5001) == 20016 + max(16 * 8576, c.ring_bytes)
    assert c.f32_smem(5001, ring=False) == 16 * 4992  # (the kernels with missing calls: no table, more L1)
    for bad in (dict(warp_rows=24), dict(warp_rows=8), dict(warps_rows=1, warps_cols=1)):
        with pytest.raises(ValueError):
            MmaConfig(**bad)
