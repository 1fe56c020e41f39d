"""Missing calls counted by correction (gboost/engines/gpu/missing_lists.py; the CUDA-core kernel's
mode 4): the plan of which SNPs are listed, the NumPy references of the two build kernels, and the
correction's arithmetic, which must give every pair's table exactly as the direct count does. These run
without a GPU; tests/gpu/test_gpu_missing_lists.py holds the kernels equal to these references."""
from __future__ import annotations

import numpy as np
import pytest

from gboost.engines.gpu import missing_lists as ml
from gboost.engines.gpu.config import KernelConfig
from gboost.stats.table import pair_table
from tests.helpers import gpu_study, missing_lists_of, two_rate_study


def test_transpose_ref_puts_each_plane_bit_at_its_snp_and_sample():
    study = gpu_study(p=77, n=150, n_case=70, missing=0.05, seed=4)
    plan, gt, lst, S = missing_lists_of(study, chunk=32)
    planes = study.planes
    g3 = gt.reshape(-1, 3, S)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        snp, t, s = int(rng.integers(77)), int(rng.integers(3)), int(rng.integers(S))
        want = int(planes[snp, t, s // 64] >> np.uint64(s % 64)) & 1
        assert (int(g3[snp // 32, t, s]) >> (snp % 32)) & 1 == want
    # the last group's SNPs past the study read as zero
    assert not (g3[77 // 32] >> np.uint32(77 % 32)).any()


def test_lists_ref_lists_each_class_samples_without_a_call():
    study = gpu_study(p=40, n=300, n_case=130, missing=0.03, seed=5, fully_called=10)
    lay = study.layout
    plan, gt, lst, S = missing_lists_of(study)
    view = lst.reshape(-1, 2, plan.width)
    calls = study.planes[:, 0] | study.planes[:, 1] | study.planes[:, 2]
    for g in range(40):
        for k, (wa, wb, nk) in enumerate(((0, lay.w_ctrl, lay.n_ctrl), (lay.w_ctrl, lay.n_words, lay.n_case))):
            bits = np.unpackbits(calls[g, wa:wb].view(np.uint8), bitorder="little")[:nk]
            want = np.flatnonzero(bits == 0)
            m = view[g, k, 0]
            np.testing.assert_array_equal(view[g, k, 1:1 + m], want)
            if g < 10:
                assert plan.flags[g] == 0 and m == 0
    assert ml.is_listed(plan.flags[10:]).all()
    assert plan.width == 1 + int(ml.missing_per_class(study.counts, lay.n_ctrl, lay.n_case)[10:].max())


@pytest.mark.parametrize("name,kw", [
    ("1% missing, fully called SNPs among them", dict(p=70, n=1500, n_case=700, missing=0.01, seed=3, fully_called=35)),
    ("5% missing, rare alleles", dict(p=60, n=400, n_case=180, missing=0.05, seed=8, maf=(0.005, 0.05))),
    ("tiny case class, monomorphic", dict(p=50, n=150, n_case=7, missing=0.02, seed=1, monomorphic=(3, 30))),
])
def test_every_pair_table_by_correction_equals_the_direct_count(name, kw):
    """The kernel's arithmetic (corrected_table, the reference of gb_fill_corrected and gb_corrections)
    against pair_table's direct count, every pair of SNPs that mode 4 may meet."""
    study = gpu_study(**kw)
    plan, gt, lst, S = missing_lists_of(study, any_rate=True)
    assert plan.listed
    ok = np.flatnonzero(plan.flags < ml.UNLISTED)
    want = np.zeros((3, 3, 2), dtype=np.int64)
    checked = 0
    for a in ok:
        for b in ok:
            if a >= b:
                continue
            pair_table(study.planes, study.counts, study.has_missing, study.layout.w_ctrl, a, b, want)
            got = ml.corrected_table(study.planes, study.counts, study.layout.w_ctrl, gt, S, lst, plan.width, a, b)
            np.testing.assert_array_equal(got, want, err_msg=f"{name}: pair ({a}, {b})")
            checked += 1
    assert checked >= len(ok) * (len(ok) - 1) // 2 > 1000


def test_a_wrong_correction_is_seen():
    """The equality above can fail: one sample dropped from a list changes that SNP's tables."""
    study = gpu_study(p=30, n=400, n_case=200, missing=0.03, seed=2)
    plan, gt, lst, S = missing_lists_of(study)
    view = lst.reshape(-1, 2, plan.width)
    g = int(np.flatnonzero(ml.is_listed(plan.flags) & (view[:, 0, 0] > 0))[0])
    view[g, 0, 0] -= 1
    want = np.zeros((3, 3, 2), dtype=np.int64)
    differ = 0
    for b in range(30):
        if b == g or plan.flags[b] == ml.UNLISTED:
            continue
        i, j = min(g, b), max(g, b)
        pair_table(study.planes, study.counts, study.has_missing, study.layout.w_ctrl, i, j, want)
        got = ml.corrected_table(study.planes, study.counts, study.layout.w_ctrl, gt, S, lst, plan.width, i, j)
        differ += not np.array_equal(got, want)
    assert differ > 0


def test_the_plan_lists_short_lists_only():
    counts = np.array([[5, 5, 3, 3, 2, 2],  # n_ctrl = n_case = 10: fully called
                       [5, 5, 3, 3, 1, 1],  # 1 and 1 missing
                       [0, 5, 0, 3, 0, 2]],  # all 10 controls missing
                      dtype=np.int64)
    has = np.array([False, True, True])
    u = ml.UNLISTED
    low = ml.RATE_BREAK_EVEN
    try:
        ml.RATE_BREAK_EVEN = 1.0  # (these three SNPs' rates average 0.37)
        plan = ml.plan_lists(counts, 10, 10, has)
        assert plan.flags.tolist() == [0, 1, 1] and plan.width == 11
        old = ml.LIST_MAX
        try:
            ml.LIST_MAX = 9
            plan = ml.plan_lists(counts, 10, 10, has)
            assert plan.flags.tolist() == [0, 1, u] and plan.width == 2
        finally:
            ml.LIST_MAX = old
        assert ml.plan_lists(counts, 10, 10, has, enabled=False).flags.tolist() == [0, u, u]
        assert not ml.plan_lists(counts, 10, 10, has, enabled=False).listed
        assert ml.unlisted(plan).flags.tolist() == [0, u, u]
        assert not ml.plan_lists(counts, ml.CLASS_MAX + 1, 10, has).listed  # 16-bit places
        assert ml.plan_lists(counts, 10, 10, np.zeros(3, bool)).flags.tolist() == [0, 0, 0]
    finally:
        ml.RATE_BREAK_EVEN = low


def test_no_snp_is_listed_where_the_rates_average_past_the_break_even():
    """1 % missing calls: listed; 5 %: the direct count (cheaper there, docs/PERFORMANCE.md); a few SNPs far
    past it among fully called ones: listed (their lists are walked beside the others')."""
    def counts_at(missing_per_class, p=100, n=1000):
        c = np.zeros((p, 6), np.int64)
        called = n - missing_per_class
        c[:, 0], c[:, 1] = called // 2, called // 2
        c[:, 2], c[:, 3] = called - called // 2, called - called // 2
        return c

    one = ml.plan_lists(counts_at(np.full(100, 10)), 1000, 1000, np.ones(100, bool))
    assert one.listed and (one.flags == 1).all()
    five = ml.plan_lists(counts_at(np.full(100, 50)), 1000, 1000, np.ones(100, bool))
    assert not five.listed and (five.flags == ml.UNLISTED).all()
    few = np.zeros(100, np.int64)
    few[::20] = 200  # 20 % at five SNPs: average 1 %
    plan = ml.plan_lists(counts_at(few), 1000, 1000, few > 0)
    assert plan.listed and (plan.flags[::20] == 1).all() and plan.width == 201


def test_block_modes_follow_the_kernels_rule():
    """4 where a block's SNPs with missing calls are all listed; else the direct modes."""
    u = ml.UNLISTED
    f = np.zeros(8, np.uint8)
    assert ml.block_modes(f, f, 4, 4) == {0}
    assert ml.block_modes(np.array([0, 1, 0, 0], np.uint8), np.zeros(4, np.uint8), 4, 4) == {4}
    assert ml.block_modes(np.array([0, 1, 0, u], np.uint8), np.zeros(4, np.uint8), 4, 4) == {2}
    assert ml.block_modes(np.zeros(4, np.uint8), np.array([u, 0, 0, 0], np.uint8), 4, 4) == {1}
    assert ml.block_modes(np.array([1, 0, 0, 0, u, 0, 0, 0], np.uint8), np.ones(4, np.uint8), 4, 4) == {3, 4}
    assert ml.block_modes(np.array([0] * 4 + [1], np.uint8), np.zeros(4, np.uint8), 4, 4) == {0, 4}


def test_the_default_block_shape_counts_by_correction_and_a_shape_without_room_does_not():
    assert KernelConfig().corrects
    assert not KernelConfig(block_rows=64, block_cols=16, chunk_words=3).corrects
    assert not KernelConfig(block_rows=30, block_cols=32).corrects  # (word writes of 4 rows)
    assert ml.device_bytes(100, 80, 0) == 0
    assert ml.device_bytes(64, 80, 41) == 2 * 3 * 64 * 80 * 4 + 64 * 2 * 41 * 2


def test_the_two_rate_studies_of_the_gpu_tests_are_planned_as_they_say():
    """tests/gpu/test_gpu_missing_lists.py: light SNPs with a few heavy ones are all listed; light and heavy
    halves (an average past the break-even) none."""
    for kw, listed in ((dict(heavy_every=8), True), (dict(heavy_every=2), False)):
        study = two_rate_study(**kw)
        lay = study.layout
        plan = ml.plan_lists(study.counts, lay.n_ctrl, lay.n_case, study.has_missing)
        assert plan.listed == listed
        assert (plan.flags[study.has_missing] == (1 if listed else ml.UNLISTED)).all()
