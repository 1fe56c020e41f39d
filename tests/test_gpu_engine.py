"""The GPU engine against the CPU engine, the oracle (SPEC §6): tables, survivors, summaries, scans.

Every test that needs a device carries the ``gpu`` marker and is skipped, with the reason, where
CuPy is missing or sees no GPU; they are run for real on the GPU machine
(``python -m pytest tests/test_gpu_engine.py``).
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gboost.engines.base import Thresholds, Tile, TileResult
from gboost.engines.cpu import CpuEngine
from gboost.io.results import format_epi_cc, format_summary
from gboost.scan import ScanParams, plan_tiles, run_scan
from gboost.stats.pvalues import thresholds_by_df
from gboost.study import study_from_genotypes


def _gpu_unavailable() -> str | None:
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CUDA library error at import
        return f"CuPy is not importable ({type(exc).__name__}: {exc})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"CuPy sees no CUDA device ({type(exc).__name__}: {exc})"
    return None if n > 0 else "CuPy sees no CUDA device"


def _gpu_count() -> int:
    if _gpu_unavailable() is not None:
        return 0
    import cupy

    return cupy.cuda.runtime.getDeviceCount()


_WHY = _gpu_unavailable()
needs_gpu = pytest.mark.skipif(_WHY is not None, reason=f"needs an NVIDIA GPU with CuPy: {_WHY}")


def _study(p, n, n_case, *, missing=0.02, seed=0, fully_called=0, monomorphic=(), all_missing=(), maf=(0.03, 0.5)):
    """Random genotypes; the first ``fully_called`` SNPs without missing calls (so tiles mix the
    kernel's counting modes), some SNPs monomorphic or never called."""
    rng = np.random.default_rng(seed)
    f = rng.uniform(*maf, p)
    g = rng.binomial(2, f[:, None], (p, n)).astype(np.int8)
    miss = rng.random((p, n)) < missing
    miss[:fully_called] = False
    g[miss] = -1
    for k in monomorphic:
        g[k] = np.where(g[k] < 0, -1, 2)
    for k in all_missing:
        g[k] = -1
    is_case = np.zeros(n, bool)
    is_case[rng.choice(n, n_case, replace=False)] = True
    return study_from_genotypes(g, is_case)


# p never a multiple of the tiles below, n never a multiple of 64.
STUDIES = {
    "missing-2pct-mixed-modes": dict(p=157, n=203, n_case=101, fully_called=70, monomorphic=(5, 77), all_missing=(40,)),
    "tiny-case-class": dict(p=131, n=150, n_case=7, seed=1),
    "no-missing": dict(p=100, n=130, n_case=61, missing=0.0, seed=2, monomorphic=(3,)),
    "many-words": dict(p=70, n=1500, n_case=700, missing=0.01, seed=3, fully_called=35),
}

LOOSE = Thresholds(thresholds_by_df(0.05), thresholds_by_df(0.2))  # plenty of survivors and non-survivors


@pytest.fixture(scope="module", params=sorted(STUDIES))
def study(request):
    return _study(**STUDIES[request.param])


def _engine(**kw):
    from gboost.engines.gpu import GpuEngine

    return GpuEngine(**kw)


def _assert_tile_equal(got: TileResult, want: TileResult) -> None:
    assert got.tile == want.tile
    np.testing.assert_array_equal(got.surv_i, want.surv_i)
    np.testing.assert_array_equal(got.surv_j, want.surv_j)
    np.testing.assert_array_equal(got.surv_tables, want.surv_tables)
    np.testing.assert_allclose(got.surv_ksa, want.surv_ksa, rtol=1e-10, atol=1e-10)
    assert got.n_valid == want.n_valid
    for g, w in ((got.rows, want.rows), (got.cols, want.cols)):
        assert g.start == w.start
        np.testing.assert_array_equal(g.n_sig, w.n_sig)
        np.testing.assert_array_equal(g.n_tot, w.n_tot)
        np.testing.assert_array_equal(g.best_partner, w.best_partner)
        np.testing.assert_array_equal(np.isneginf(g.best), np.isneginf(w.best))
        fin = np.isfinite(w.best)
        np.testing.assert_allclose(g.best[fin], w.best[fin], rtol=1e-10, atol=1e-10)


def _tiles_of(engine, study, thresholds, tiles):
    engine.prepare(study, thresholds)
    try:
        return [engine.run_tile(t) for t in tiles]
    finally:
        engine.close()


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("tile", [40, 64])
def test_tiles_equal_cpu_engine(study, tile):
    tiles = plan_tiles(study.n_snps, tile)
    want = _tiles_of(CpuEngine(tile=tile), study, LOOSE, tiles)
    got = _tiles_of(_engine(tile=tile), study, LOOSE, tiles)
    assert sum(len(r.surv_i) for r in want) > 0
    assert sum(r.rows.n_tot.sum() - len(r.surv_i) for r in want) > 0  # non-survivors in the summary too
    for g, w in zip(got, want):
        _assert_tile_equal(g, w)


def _scan(study, engine, **params):
    return run_scan(study, ScanParams(**{"epi1": 0.01, "epi2": 0.1, **params}), engine=engine)


def _assert_scan_equal(got, want) -> None:
    a, b = got.screened, want.screened
    assert len(b) > 0
    np.testing.assert_array_equal(a.i, b.i)
    np.testing.assert_array_equal(a.j, b.j)
    np.testing.assert_array_equal(a.df, b.df)
    np.testing.assert_array_equal(a.tables, b.tables)
    np.testing.assert_allclose(a.stat, b.stat, rtol=1e-6)
    np.testing.assert_allclose(a.ksa, b.ksa, rtol=1e-10)
    assert got.n_valid == want.n_valid
    for f in ("n_sig", "n_tot", "best_partner"):
        np.testing.assert_array_equal(getattr(got.summary, f), getattr(want.summary, f))
    np.testing.assert_allclose(got.summary.best, want.summary.best, rtol=1e-10)
    assert format_epi_cc(got) == format_epi_cc(want)
    assert format_summary(got) == format_summary(want)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("tile", [40, None])
def test_scan_outputs_equal_cpu_engine(study, tile):
    want = _scan(study, CpuEngine(tile=64))
    got = _scan(study, _engine(tile=tile))
    assert got.engine == "gpu"
    _assert_scan_equal(got, want)


@pytest.mark.gpu
@needs_gpu
def test_tiny_survivor_buffer_still_yields_every_pair():
    study = _study(**STUDIES["missing-2pct-mixed-modes"])
    want = _scan(study, CpuEngine(tile=64), epi1=0.05)
    got = _scan(study, _engine(tile=40, survivor_capacity=1), epi1=0.05)
    assert len(want.screened) > 40  # far past a capacity of 1 in most tiles
    _assert_scan_equal(got, want)


@pytest.mark.gpu
@needs_gpu
def test_run_tiles_yields_each_tile_once_as_run_tile_does():
    study = _study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 32)
    want = _tiles_of(CpuEngine(tile=32), study, LOOSE, tiles)
    eng = _engine(tile=32)
    eng.prepare(study, LOOSE)
    try:
        got = list(eng.run_tiles(tiles))
        assert eng.kernel_seconds > 0
    finally:
        eng.close()
    assert sorted(r.tile.index for r in got) == [t.index for t in tiles]
    for g in got:
        _assert_tile_equal(g, want[g.tile.index])


@pytest.mark.gpu
@needs_gpu
def test_table_read_from_global_memory_gives_the_same_tiles(monkeypatch):
    import gboost.engines.gpu as gpu

    monkeypatch.setattr(gpu, "TABLE_SMEM_MAX", 0)  # as for a study too large for a shared-memory table
    study = _study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 64)
    eng = _engine(tile=64)
    got = _tiles_of(eng, study, LOOSE, tiles)
    assert eng.table_in_shared_memory is False
    for g, w in zip(got, _tiles_of(CpuEngine(tile=64), study, LOOSE, tiles)):
        _assert_tile_equal(g, w)


@pytest.mark.gpu
@needs_gpu
def test_tiles_of_a_part_equal_cpu_engine():
    from gboost.scan import part_rows

    study = _study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 48, part_rows(study.n_snps, 2, 3))  # clipped rows: diagonal tiles not square
    assert any(t.diagonal and t.i1 - t.i0 != t.j1 - t.j0 for t in tiles)
    n = len(tiles)  # and overlapping tiles that do not start on the diagonal
    tiles += [Tile(n, 29, 67, 40, 90), Tile(n + 1, 60, 140, 10, 157), Tile(n + 2, 100, 101, 90, 157)]
    want = _tiles_of(CpuEngine(tile=48), study, LOOSE, tiles)
    got = _tiles_of(_engine(tile=48), study, LOOSE, tiles)
    for g, w in zip(got, want):
        _assert_tile_equal(g, w)


@pytest.mark.gpu
@needs_gpu
def test_run_tiles_stops_taking_tiles_once_cancelled():
    study = _study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 16)
    eng = _engine(tile=16)
    eng.prepare(study, LOOSE)
    seen = []
    try:
        for res in eng.run_tiles(tiles, cancel=lambda: len(seen) >= 2):
            seen.append(res)
    finally:
        eng.close()
    assert 2 <= len(seen) < len(tiles)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("config", [dict(carry_save=False), dict(block_rows=64, block_cols=16, chunk_words=3)])
def test_other_kernel_configurations_give_the_same_tiles(config):
    from gboost.engines.gpu import KernelConfig

    study = _study(**STUDIES["many-words"])
    tiles = plan_tiles(study.n_snps, 48)
    want = _tiles_of(CpuEngine(tile=48), study, LOOSE, tiles)
    got = _tiles_of(_engine(tile=48, config=KernelConfig(**config)), study, LOOSE, tiles)
    for g, w in zip(got, want):
        _assert_tile_equal(g, w)


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_count() < 2, reason=f"needs two GPUs ({_gpu_count()} visible)")
def test_two_gpus_give_the_same_as_one():
    study = _study(**STUDIES["missing-2pct-mixed-modes"])
    tiles = plan_tiles(study.n_snps, 32)
    one = _engine(gpus=[0], tile=32)
    two = _engine(gpus=[0, 1], tile=32)
    results = []
    for eng in (one, two):
        eng.prepare(study, LOOSE)
        try:
            results.append(sorted(eng.run_tiles(tiles), key=lambda r: r.tile.index))
        finally:
            eng.close()
    assert len(results[1]) == len(tiles)
    for g, w in zip(results[1], results[0]):
        _assert_tile_equal(g, w)
    _assert_scan_equal(_scan(study, _engine(gpus=[0, 1], tile=32)), _scan(study, _engine(gpus=[0], tile=32)))


@pytest.mark.gpu
@needs_gpu
def test_make_engine_gpu_gives_a_described_gpu_engine():
    import cupy

    from gboost.engines import make_engine

    eng = make_engine("gpu")
    assert eng.name == "gpu"
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    assert name in eng.describe()


def test_importing_the_gpu_engine_does_not_import_cupy():
    code = ("import sys, gboost, gboost.engines, gboost.engines.gpu, gboost.scan\n"
            "assert 'cupy' not in sys.modules, 'cupy imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_kernel_source_ships_with_the_package():
    from gboost.engines.gpu import kernel_source

    src = kernel_source()
    for name in ("gb_screen_22", "gb_screen_33", "gb_reduce_partials"):
        assert f"{name}(" in src
