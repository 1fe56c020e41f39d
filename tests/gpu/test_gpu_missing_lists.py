"""Missing calls counted by correction on the CUDA cores (boost_screen.cu, mode 4; missing_lists.py), on
the GPU: the build kernels equal their NumPy references word for word, and tiles of every mix of modes
equal the CPU engine's (tables exactly). tests/gpu/test_gpu_engine.py runs the CUDA-core path on its
studies with missing calls too, where mode 4 now takes most blocks."""
from __future__ import annotations

import numpy as np
import pytest

from gboost.engines.cpu import CpuEngine
from gboost.engines.gpu import missing_lists as ml
from gboost.engines.gpu.config import KernelConfig
from gboost.pipeline.tiles import plan_tiles
from tests.helpers import (LOOSE, STREAMED, assert_tile_equal, gpu_engine, gpu_study, missing_lists_of, pool_baseline,
                           tiles_of, two_rate_study)

STUDY = dict(p=150, n=1500, n_case=700, missing=0.01, seed=11, fully_called=40, all_missing=(70,), maf=(0.01, 0.5))


def _run(study, tile, **kw):
    """The popc engine's tiles, the modes each tile launched, and the first runner's lists (copied)."""
    eng = gpu_engine(tile=tile, counting="popc", **kw)
    eng.prepare(study, LOOSE)
    try:
        runner = eng._runners[0]
        tiles = plan_tiles(study.n_snps, tile)
        modes = set()
        for t in tiles:
            modes.update(runner._modes(t))
        got = [eng.run_tile(t) for t in tiles]
        lists = None
        if runner.lists is not None:
            lists = (runner.lists.gt.get(), runner.lists.lst.get(), runner.lists.width, runner.flags.copy())
        return got, modes, lists, eng.listed_snps
    finally:
        eng.close()


@pytest.mark.gpu
def test_the_build_kernels_equal_their_references():
    study = gpu_study(**STUDY)
    _, _, lists, listed = _run(study, 64)
    plan, gt, lst, S = missing_lists_of(study)
    assert lists is not None and listed == int(ml.is_listed(plan.flags).sum()) > 0
    dgt, dlst, width, flags = lists
    np.testing.assert_array_equal(flags, plan.flags)
    assert width == plan.width
    np.testing.assert_array_equal(dgt, gt)
    # entries past a list's count are never read (and not written)
    v, w = dlst.reshape(-1, 2, width), lst.reshape(-1, 2, width)
    for g in np.flatnonzero(plan.flags < ml.UNLISTED):
        for k in range(2):
            m = int(w[g, k, 0])
            np.testing.assert_array_equal(v[g, k, :1 + m], w[g, k, :1 + m])


@pytest.mark.gpu
@pytest.mark.parametrize("tile", [40, 64])
@pytest.mark.parametrize("list_max", [255, 12])
def test_tiles_counted_by_correction_equal_the_cpu_engine(monkeypatch, tile, list_max):
    """Tiles at offsets that are and are not multiples of 32 (the sample-major words' shift); with the
    lists cut short (LIST_MAX 12) blocks of listed SNPs sit beside blocks that count directly."""
    monkeypatch.setattr(ml, "LIST_MAX", list_max)
    study = gpu_study(**STUDY)
    tiles = plan_tiles(study.n_snps, tile)
    want = tiles_of(CpuEngine(tile=tile), study, LOOSE, tiles)
    got, modes, lists, listed = _run(study, tile)
    assert 4 in modes and listed > 0
    if list_max == 12:
        assert modes & {1, 2, 3}, modes
    assert sum(len(r.surv_i) for r in want) > 0
    for g, w in zip(got, want):
        assert_tile_equal(g, w)


@pytest.mark.gpu
@pytest.mark.parametrize("heavy_every", [8, 2])
def test_heavy_snps_among_light_ones_are_listed_and_a_heavy_study_counts_directly(heavy_every):
    """SNPs at 8 % missing calls among SNPs at 0.5 %: one in 8, all listed (every block has long lists beside
    short ones); one in 2 (an average past the break-even), none listed. Every tile equals the CPU engine's."""
    study = two_rate_study(heavy_every=heavy_every)
    tiles = plan_tiles(study.n_snps, 64)
    want = tiles_of(CpuEngine(tile=64), study, LOOSE, tiles)
    got, modes, _, listed = _run(study, 64)
    if heavy_every == 8:
        assert modes == {4} and listed == int(study.has_missing.sum())
    else:
        assert 4 not in modes and listed == 0
    for g, w in zip(got, want):
        assert_tile_equal(g, w)


@pytest.mark.gpu
def test_a_smaller_block_shape_counts_by_correction_too():
    """16 x 16 SNPs a block: half of each sample-major word is the block's."""
    study = gpu_study(**STUDY)
    tiles = plan_tiles(study.n_snps, 48)
    want = tiles_of(CpuEngine(tile=48), study, LOOSE, tiles)
    got, modes, _, listed = _run(study, 48, config=KernelConfig(block_rows=16, block_cols=16))
    assert 4 in modes and listed > 0
    for g, w in zip(got, want):
        assert_tile_equal(g, w)


@pytest.mark.gpu
def test_streamed_planes_and_shapes_without_room_count_directly():
    """No lists where the planes stream (the lists are built as resident planes land) or where the block
    shape's corrections do not fit its buffers: every block with missing calls counts directly."""
    study = gpu_study(**STUDY)
    _, modes, lists, listed = _run(study, 48, config=KernelConfig(block_rows=64, block_cols=16, chunk_words=3))
    assert lists is None and listed == 0 and 4 not in modes
    streamed = gpu_study(**STREAMED)
    tiles = plan_tiles(streamed.n_snps, 48)
    want = tiles_of(CpuEngine(tile=48), streamed, LOOSE, tiles)
    got, modes, lists, listed = _run(streamed, 48, memory_limit_bytes=pool_baseline() + (320 << 10))
    assert lists is None and listed == 0 and 4 not in modes
    for g, w in zip(got, want):
        assert_tile_equal(g, w)
