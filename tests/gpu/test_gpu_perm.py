"""--perm on the GPU engines: the same permutations' maxima (and pairs) as the CPU engine, the oracle,
for the same seed; through run_pipeline too (EMP2 of every screened pair). Both counting paths.

Skipped, with the reason, where CuPy is missing or sees no GPU (the ``gpu`` marker, tests/conftest.py);
run on the GPU machine: ``python -m pytest tests/gpu/test_gpu_perm.py``."""
from __future__ import annotations

import numpy as np
import pytest

from gboost.engines.cpu import CpuEngine
from gboost.pipeline.permute import run_permutations
from gboost.pipeline.scan import ScanParams, run_pipeline
from tests.helpers import gpu_engine, gpu_study, gpu_unavailable, mma_unavailable

_NO_GPU = gpu_unavailable()


@pytest.fixture(params=["mma", "popc"])
def counting(request):
    if request.param == "mma" and _NO_GPU is None and mma_unavailable() is not None:
        pytest.skip(mma_unavailable())
    return request.param


@pytest.fixture(scope="module")
def study():
    # p not a multiple of any tile, n not of 64; missing calls, a monomorphic and a never-called SNP.
    return gpu_study(157, 203, 101, missing=0.02, seed=4, fully_called=40, monomorphic=(5,), all_missing=(40,))


@pytest.mark.gpu
@pytest.mark.parametrize("tile", [40, None])
def test_gpu_permutation_maxima_equal_the_cpu_engine(study, counting, tile):
    strata = np.arange(study.n_samples) % 4
    want = run_permutations(study, CpuEngine(tile=64), 12, 17, strata=strata)
    got = run_permutations(study, gpu_engine(tile=tile, counting=counting), 12, 17, strata=strata)
    assert [(m.stat, m.i, m.j, m.df) for m in got.maxima] == [(m.stat, m.i, m.j, m.df) for m in want.maxima]


@pytest.mark.gpu
def test_gpu_pipeline_perm_equals_the_cpu_engine(study, counting):
    params = dict(epi1=0.01, epi2=0.1, calibration_pairs=0, perm=10, perm_seed=3)
    want = run_pipeline(study, ScanParams(device="cpu", **params))
    got = run_pipeline(study, ScanParams(device="gpu", **params), engine=gpu_engine(counting=counting))
    assert got.engine == "gpu"
    assert np.array_equal(got.perm.stats, want.perm.stats)
    assert len(want.screened) and np.array_equal(got.screened.emp2, want.screened.emp2)


@pytest.mark.gpu
def test_the_gpu_command_permutes_on_the_gpu_and_equals_the_cpu_command(tmp_path):
    """As a user runs it (a process of its own, which ends the GPUs' contexts at its end: after the
    permutations, which screen on them)."""
    import subprocess
    import sys

    from gboost.data.simulate import simulate_study
    from tests.helpers import ROOT

    prefix = str(tmp_path / "s")
    simulate_study(300, 250, 260, seed=6, missing_rate=0.01, ld_block=10, ld_rho=0.9).write(prefix)
    outs = {}
    for device in ("cpu", "gpu"):
        outs[device] = tmp_path / device
        r = subprocess.run([sys.executable, "-m", "gboost", "scan", "--bfile", prefix, "--out", str(outs[device]),
                            "--device", device, "--quiet", "--perm", "8", "--perm-seed", "2", "--epi1", "1e-3"],
                           cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    for name in ("perm.tsv", "pairs.epi.cc", "pairs.epi.cc.summary"):
        assert (outs["gpu"] / name).read_bytes() == (outs["cpu"] / name).read_bytes(), name

    def emp2(out):  # (pair, EMP2) of pairs.tsv (its KSA column is the engine's, equal to 1e-10)
        rows = [line.split("\t") for line in (out / "pairs.tsv").read_text().splitlines()]
        assert rows[0][-1] == "EMP2"
        return [(r[1], r[4], r[-1]) for r in rows[1:]]

    assert emp2(outs["gpu"]) == emp2(outs["cpu"])


@pytest.fixture(scope="module")
def qt_study():
    """A quantitative trait: LD blocks, missing calls, rare alleles, flipped A1s, a duplicate and an
    all-het SNP (pairs that fail), p not a multiple of the tile, n not of 64 (built in memory)."""
    from gboost.data.simulate import simulate_qt_study
    from tests.helpers import qt_study_of

    sim = simulate_qt_study(120, 517, seed=22, missing_rate=0.02, maf_range=(0.01, 0.5), ld_block=5, ld_rho=0.9,
                            effects=[(1, 9, 0.4)])
    g = sim.genotypes.copy()
    g[11] = g[10]  # a duplicate: every pair of the two fails (r > 0.999)
    g[20] = np.where(g[20] >= 0, 1, -1)  # all het: every pair with it fails
    flip = np.random.default_rng(22).random(len(g)) < 0.5
    return qt_study_of(g, np.asarray(sim.samples.trait, np.float64), flip)[0]


@pytest.mark.gpu
@pytest.mark.parametrize("tile", [50, None])
def test_gpu_qt_permutation_maxima_equal_the_cpu_engine(qt_study, tile):
    """The GPU QT engine's scan of each permuted trait: the same maxima, to the bit, and pairs as the
    CPU engine's for the same seed, within strata too."""
    from gboost.engines.qt_cpu import QTCPUEngine
    from gboost.engines.qt_gpu import QTGPUEngine

    strata = np.arange(qt_study.n_samples) % 3
    want = run_permutations(qt_study, QTCPUEngine(), 10, 17, strata=strata)
    got = run_permutations(qt_study, QTGPUEngine(tile=tile), 10, 17, strata=strata)
    assert [(m.stat, m.i, m.j, m.df) for m in got.maxima] == [(m.stat, m.i, m.j, m.df) for m in want.maxima]


@pytest.mark.gpu
def test_gpu_qt_scan_perm_equals_the_cpu_engine(qt_study):
    from gboost.engines.qt_gpu import QTGPUEngine
    from gboost.pipeline.qt_scan import QTParams, run_qt_scan

    want = run_qt_scan(qt_study, QTParams(epi1=0.01, device="cpu", perm=8, perm_seed=3))
    got = run_qt_scan(qt_study, QTParams(epi1=0.01, device="gpu", perm=8, perm_seed=3), engine=QTGPUEngine(tile=40))
    assert got.engine == "gpu"
    assert np.array_equal(got.perm.stats, want.perm.stats)
    assert len(want.reported) and np.array_equal(got.reported.emp2, want.reported.emp2)


@pytest.mark.gpu
@pytest.mark.parametrize("make", ["gpu_study", "two_rate_study"])
def test_a_gpu_engine_prepared_again_screens_each_relabelled_study_as_the_cpu_engine(counting, make):
    """A prepare without a close between, for a study of the same shape (the permutations' path),
    keeps the runner and re-uploads only planes, counts, thresholds and the missing-call lists: each
    relabelled study's tiles (survivors, tables, summaries) equal the CPU engine's, and a study of
    another shape still gets a runner of its own."""
    from gboost.engines.base import Thresholds
    from gboost.pipeline.tiles import plan_tiles
    from gboost.pipeline.permute import permuted_labels, permuted_study
    from tests import helpers

    base = helpers.gpu_study(150, 260, 120, missing=0.02, seed=9) if make == "gpu_study" else helpers.two_rate_study()
    y = np.arange(base.n_samples) >= base.layout.n_ctrl
    eng = gpu_engine(tile=48, counting=counting)
    try:
        for k in range(3):
            s = permuted_study(base, permuted_labels(y, 5, k))
            thr = helpers.LOOSE if k != 1 else Thresholds(helpers.thresholds_by_df(0.01), helpers.thresholds_by_df(0.1))
            tiles = plan_tiles(s.n_snps, 48, None)
            want = helpers.tiles_of(CpuEngine(tile=48), s, thr, tiles)
            eng.prepare(s, thr)
            runner = eng._runners[0]
            got = list(eng.run_tiles(tiles))
            got.sort(key=lambda r: r.tile.index)
            for g, w in zip(got, want):
                helpers.assert_tile_equal(g, w)
            if k:
                assert runner is first, "the runner was set up again for a study of the same shape"
            first = runner
        other = helpers.gpu_study(97, 130, 61, missing=0.02, seed=2)
        eng.prepare(other, helpers.LOOSE)
        assert eng._runners[0] is not first
        tiles = plan_tiles(other.n_snps, 48, None)
        got = sorted(eng.run_tiles(tiles), key=lambda r: r.tile.index)
        for g, w in zip(got, helpers.tiles_of(CpuEngine(tile=48), other, helpers.LOOSE, tiles)):
            helpers.assert_tile_equal(g, w)
    finally:
        eng.close()
