"""The binary tensor-core path beyond the shared equality tests of test_gpu_engine.py:
its plane layout kernel against NumPy, the choice of path, and studies with many k-steps.

GPU tests carry the ``gpu`` marker and are skipped, with the reason, where CuPy sees no device
with binary mma (compute capability 8.0+).
"""
from __future__ import annotations

import numpy as np
import pytest

from gboost.engines.cpu import CpuEngine
from gboost.pipeline.scan import ScanParams, run_scan
from tests.helpers import assert_scan_equal, gpu_study


def mma_layout_reference(planes: np.ndarray, w_ctrl: int) -> np.ndarray:
    """SNP-major planes (p, 3, W) -> the tensor-core kernels' (3, KS, p, 4): each class padded
    with zero words to whole k-steps of 4 words (256 samples)."""
    p, _, n_words = planes.shape
    out = []
    for w0, w1 in ((0, w_ctrl), (w_ctrl, n_words)):
        ks = -(-(w1 - w0) // 4)
        x = np.zeros((p, 3, 4 * ks), np.uint64)
        x[:, :, : w1 - w0] = planes[:, :, w0:w1]
        out.append(x.reshape(p, 3, ks, 4).transpose(1, 2, 0, 3))
    return np.ascontiguousarray(np.concatenate(out, axis=1))


def fragment_reference(layout: np.ndarray, off: int, stride: int) -> np.ndarray:
    """The fragment-native copy (boost_mma.cu, gm_count_class) of kernel-layout planes (3, KS, p, 4)
    placed at SNP ``off`` of arrays ``stride`` SNPs wide, as 32-bit words (3, KS, stride // 16, 128):
    group G's lane g * 4 + q holds [SNP g at k-word 2q, SNP g + 8 at 2q, SNP g at 2q + 1, SNP g + 8 at
    2q + 1]. Words of SNPs outside [off, off + p) are left 0."""
    t_, ks_, p, _ = layout.shape
    out = np.zeros((t_, ks_, stride // 16, 32, 4), np.uint32)
    for s in range(p):
        a = off + s
        g, h = a & 7, (a >> 3) & 1
        for q in range(4):
            v = layout[:, :, s, q]
            out[:, :, a >> 4, g * 4 + q, h] = (v & 0xFFFFFFFF).astype(np.uint32)
            out[:, :, a >> 4, g * 4 + q, h + 2] = (v >> np.uint64(32)).astype(np.uint32)
    return out.reshape(t_, ks_, stride // 16, 128)


def test_fragment_reference_gives_each_lane_its_a_fragment():
    # 16 SNPs, one type and k-step: SNP s's k-word w holds 100 s + w.
    words = np.array([[100 * s + w for w in range(8)] for s in range(16)], np.uint64)
    layout = (words[:, 0::2] | (words[:, 1::2] << np.uint64(32))).reshape(1, 1, 16, 4)
    got = fragment_reference(layout, 0, 16)[0, 0, 0].reshape(32, 4)
    for g in range(8):
        for q in range(4):  # rows g, g + 8 at k-word 2q, then at 2q + 1 (the mma's a0..a3)
            assert list(got[g * 4 + q]) == [100 * g + 2 * q, 100 * (g + 8) + 2 * q,
                                             100 * g + 2 * q + 1, 100 * (g + 8) + 2 * q + 1]


def test_layout_reference_pads_each_class_to_whole_k_steps():
    planes = np.arange(2 * 3 * 7, dtype=np.uint64).reshape(2, 3, 7) + 1  # 5 control words, 2 case words
    got = mma_layout_reference(planes, 5)
    assert got.shape == (3, 3, 2, 4)  # 2 + 1 k-steps
    np.testing.assert_array_equal(got[1, 0, 1], planes[1, 1, 0:4])
    np.testing.assert_array_equal(got[1, 1, 1], [planes[1, 1, 4], 0, 0, 0])
    np.testing.assert_array_equal(got[2, 2, 0], [planes[0, 2, 5], planes[0, 2, 6], 0, 0])


@pytest.mark.gpu(mma=True)
@pytest.mark.parametrize("n_ctrl,n_case", [(203, 101), (700, 1900), (64, 320)])
def test_layout_kernel_equals_the_numpy_reference(n_ctrl, n_case):
    import cupy as cp

    from gboost.data.encode import words_for
    from gboost.engines.gpu import MmaConfig, kernels

    rng = np.random.default_rng(n_ctrl)
    p, w_ctrl = 37, words_for(n_ctrl)
    n_words = w_ctrl + words_for(n_case)
    planes = rng.integers(0, 2**63, (p, 3, n_words), dtype=np.uint64)
    want = mma_layout_reference(planes, w_ctrl)
    ks0, n_ks = -(-w_ctrl // 4), want.shape[1]
    off, stride = 5, p + 9  # into a larger buffer, as the resident upload does chunk by chunk
    out = cp.full((3, n_ks, stride, 4), 0xDEAD, dtype=cp.uint64)
    total = p * 3 * n_ks * 4
    kernels(0, MmaConfig())["gm_layout"](((total + 255) // 256, 1, 1), (256, 1, 1),
                                         (cp.asarray(planes), np.int32(p), np.int32(n_words), np.int32(w_ctrl),
                                          np.int32(ks0), np.int32(n_ks), out, np.int64(stride), np.int64(off),
                                          np.int32(0)))
    got = out.get()
    np.testing.assert_array_equal(got[:, :, off:off + p], want)
    assert (got[:, :, :off] == 0xDEAD).all() and (got[:, :, off + p:] == 0xDEAD).all()
    # With the fragment-native copy (MmaCounting.frag): the same first half, and the copy after it.
    stride = 48  # a multiple of 16, SNPs 5 to 41 of it
    out = cp.zeros((6, n_ks, stride, 4), dtype=cp.uint64)
    kernels(0, MmaConfig())["gm_layout"](((total + 255) // 256, 1, 1), (256, 1, 1),
                                         (cp.asarray(planes), np.int32(p), np.int32(n_words), np.int32(w_ctrl),
                                          np.int32(ks0), np.int32(n_ks), out, np.int64(stride), np.int64(off),
                                          np.int32(1)))
    got = out.get()
    np.testing.assert_array_equal(got[:3, :, off:off + p], want)
    frag = np.ascontiguousarray(got[3:]).view(np.uint32).reshape(3, n_ks, stride // 16, 128)
    np.testing.assert_array_equal(frag, fragment_reference(want, off, stride))


@pytest.mark.gpu(mma=True)
def test_auto_counting_takes_the_tensor_cores():
    from gboost.engines.gpu import GpuEngine
    from gboost.engines.base import Thresholds
    from gboost.stats.pvalues import thresholds_by_df

    eng = GpuEngine(counting="auto", gpus=[0])  # one device: one counting path to look at
    assert "tensor-core b1 mma counting" in eng.describe()
    eng.prepare(gpu_study(p=40, n=100, n_case=50), Thresholds(thresholds_by_df(0.05), thresholds_by_df(0.2)))
    try:
        assert eng.countings == ["mma"]
    finally:
        eng.close()
    assert "CUDA-core popcount counting" in GpuEngine(counting="popc").describe()


@pytest.mark.gpu(mma=True)
@pytest.mark.parametrize("missing", [0.0, 0.01])
def test_many_k_steps_and_uneven_classes_equal_cpu_engine(missing):
    # 2,600 samples: 1,900 controls (8 k-steps, the last one part padding) and 700 cases (3).
    study = gpu_study(p=150, n=2600, n_case=700, missing=missing, seed=11, fully_called=60)
    params = ScanParams(epi1=0.01, epi2=0.1)
    want = run_scan(study, params, engine=CpuEngine(tile=64))
    from gboost.engines.gpu import GpuEngine

    got = run_scan(study, params, engine=GpuEngine(counting="mma"))
    assert_scan_equal(got, want)


def _assert_identical(got, want) -> None:
    """Bit for bit: the same survivors with the same float64 KSA, the same summaries."""
    a, b = got.screened, want.screened
    for f in ("i", "j", "df", "tables", "ksa", "stat"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert got.n_valid == want.n_valid
    for f in ("n_sig", "n_tot", "best", "best_partner"):
        np.testing.assert_array_equal(getattr(got.summary, f), getattr(want.summary, f))


def _assert_cpu_engine_agrees(got, study, params) -> None:
    """The CPU engine's survivors (where there are any) and per-SNP summaries are the GPU scan's."""
    want = run_scan(study, params, engine=CpuEngine(tile=64))
    if len(want.screened):
        assert_scan_equal(got, want)
    for f in ("n_sig", "n_tot", "best_partner"):
        np.testing.assert_array_equal(getattr(got.summary, f), getattr(want.summary, f))


def _tied_study(missing: bool = False, n=1500, n_case=600):
    """Fully called SNPs, one of them copied 20 times (210 pairs with exactly equal KSA, so best
    partners come down to PLINK's order), and a planted interaction among the rest.

    With ``missing``: missing calls (2 %) at every SNP but the first 64, so tiles hold all four
    counting modes; rare alleles at SNPs 250-269 (empty genotype types: DF 2 and 1, invalid pairs);
    SNP 90 copied to 120-139 with its missing calls (exact ties among pairs whose margins are their
    own)."""
    from gboost.data.study import study_from_genotypes

    p, seed = (320, 6) if missing else (300, 5)
    rng = np.random.default_rng(seed)
    f = rng.uniform(0.02, 0.5, p)
    if missing:
        f[250:270] = rng.uniform(0.0005, 0.004, 20)
    g = rng.binomial(2, f[:, None], (p, n)).astype(np.int8)
    if missing:
        miss = rng.random((p, n)) < 0.02
        miss[:64] = False
        g[miss] = -1
        g[120:140] = g[90]
    else:
        g[40:60] = g[20]
    is_case = np.zeros(n, bool)
    risk = (g[100] > 0) & (g[200] > 0)
    score = rng.random(n) + 0.6 * risk
    is_case[np.argsort(-score)[:n_case]] = True
    return study_from_genotypes(g, is_case)


@pytest.mark.gpu(mma=True)
@pytest.mark.parametrize("epi", [(5e-6, 0.01), (0.01, 0.2), (0.5, 0.9)])
def test_float32_prescreen_equals_float64_kernel_and_cpu_engine(epi):
    """Fully called blocks take the float32 pre-screen; the outputs equal, bit for bit, those of
    the float64-only build, and the CPU engine's; at epi1 = 0.5 most pairs are survivors or sig."""
    from gboost.engines.gpu import GpuEngine, MmaConfig

    study = _tied_study()
    params = ScanParams(epi1=epi[0], epi2=epi[1], calibration_pairs=0)
    eng = GpuEngine(counting="mma")
    got = run_scan(study, params, engine=eng)
    assert eng.describe() and got.n_valid > 0
    f64 = run_scan(study, params, engine=GpuEngine(counting="mma", mma_config=MmaConfig(f32_screen=False)))
    _assert_identical(got, f64)
    # The other counting loop (each warp's register prefetch), a shallower block ring, logf for __logf.
    for cfg in (MmaConfig(stages=0), MmaConfig(stages=4, bar_steps=1), MmaConfig(stages=4, bar_steps=2),
                MmaConfig(fast_log=False)):
        _assert_identical(run_scan(study, params, engine=GpuEngine(counting="mma", mma_config=cfg)), f64)
    for level in (0, 2):  # x ln x from the table; brackets by shares, no table (the default: the nine x(n_ab) by lg2)
        sfu = run_scan(study, params, engine=GpuEngine(counting="mma", mma_config=MmaConfig(sfu_xlogx=level)))
        _assert_identical(sfu, f64)
    _assert_cpu_engine_agrees(got, study, params)


@pytest.mark.gpu(mma=True)
@pytest.mark.parametrize("epi", [(5e-6, 0.01), (0.01, 0.2), (0.5, 0.9)])
def test_float32_prescreen_with_missing_calls_equals_float64_kernel_and_cpu_engine(epi):
    """Blocks with missing calls take their own pre-screen (per-pair margins, gm_pairs_f32m): the
    outputs equal, bit for bit, those of the float64-only build and the CPU engine's, in every mode."""
    from gboost.engines.gpu import GpuEngine, MmaConfig

    study = _tied_study(missing=True)
    params = ScanParams(epi1=epi[0], epi2=epi[1], calibration_pairs=0)
    eng = GpuEngine(counting="mma")
    got = run_scan(study, params, engine=eng)
    assert got.n_valid > 0
    f64 = run_scan(study, params, engine=GpuEngine(counting="mma", mma_config=MmaConfig(f32_screen=False)))
    _assert_identical(got, f64)
    # brackets by shares, no table (the build of studies whose table does not fit)
    _assert_identical(run_scan(study, params, engine=GpuEngine(counting="mma", mma_config=MmaConfig(sfu_xlogx=2))),
                      f64)
    _assert_cpu_engine_agrees(got, study, params)


@pytest.mark.gpu(mma=True)
@pytest.mark.parametrize("missing", [False, True])
@pytest.mark.parametrize("epi", [(0.01, 0.2), (0.5, 0.9)])
def test_float32_prescreen_without_its_table_equals_float64_kernel_and_cpu_engine(missing, epi):
    """From ~12.8k samples the float32 table does not fit in shared memory: the pre-screen then forms
    its brackets by shares (gm_xlr, no table). Bit for bit the float64 build's outputs and the CPU
    engine's, fully called and in every mode with missing calls."""
    from gboost.engines.gpu import GpuEngine, MmaConfig

    study = _tied_study(missing, n=20000, n_case=9000)
    params = ScanParams(epi1=epi[0], epi2=epi[1], calibration_pairs=0)
    got = run_scan(study, params, engine=GpuEngine(counting="mma"))
    assert got.n_valid > 0
    f64 = run_scan(study, params, engine=GpuEngine(counting="mma", mma_config=MmaConfig(f32_screen=False)))
    _assert_identical(got, f64)
    _assert_cpu_engine_agrees(got, study, params)


@pytest.mark.gpu(mma=True)
def test_float32_prescreen_is_used_where_its_table_fits():
    from gboost.engines.base import Thresholds
    from gboost.engines.gpu import GpuEngine, MmaConfig
    from gboost.stats.pvalues import thresholds_by_df

    thr = Thresholds(thresholds_by_df(0.05), thresholds_by_df(0.2))
    # with its table up to ~12.8k samples, without (brackets by shares) up to 2^16, where the
    # parked 16-bit cells end
    for n, want, staged in ((1500, True, True), (20000, True, False), (70000, False, True)):
        eng = GpuEngine(counting="mma")
        eng.prepare(gpu_study(p=40, n=n, n_case=n // 2, missing=0.0), thr)
        try:
            r = eng._runners[0]
            assert r.use_f32 is want
            assert r.build.table_staged is staged
            assert r.stats.table_in_shared_memory is (want and staged)
        finally:
            eng.close()
    eng = GpuEngine(counting="mma", mma_config=MmaConfig(f32_screen=False))
    eng.prepare(gpu_study(p=40, n=1500, n_case=700, missing=0.0), thr)
    try:
        assert eng._runners[0].use_f32 is False
    finally:
        eng.close()
