"""Issue 18, goal 1: the sparse correction of missing calls (bench/missing_correction.py, a measurement
of a design, not used by gboost). Its counts must equal the direct integer products exactly, on every
missing pattern: none, sparse, dense, whole classes, rare alleles."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import missing_correction as mc  # noqa: E402


def _study(p=150, n=600, n_ctrl=250, seed=3):
    """Missing-call rates from none to 30 %, a SNP missing in every control, SNPs without any."""
    rng = np.random.default_rng(seed)
    rates = rng.choice([0.0, 0.001, 0.01, 0.05, 0.3], p)
    g1, g2, m = mc.simulate(p, n, rates, seed)
    m[7, :n_ctrl] = True  # every control of SNP 7 missing (a class's count at its largest)
    m[7, n_ctrl:] = False
    g1[7] &= ~m[7]
    g2[7] &= ~m[7]
    g1[20:30], g2[20:30] = False, False  # monomorphic for the reference allele, some missing calls
    return g1, g2, m, n_ctrl


def test_lists_and_planes_hold_the_study():
    g1, g2, m, n_ctrl = _study()
    lst, cnt = mc.missing_lists(m, n_ctrl)
    for snp in (0, 7, 40):
        for k, (a, b) in enumerate(((0, n_ctrl), (n_ctrl, m.shape[1]))):
            assert list(lst[snp, k, : cnt[snp, k]]) == list(np.nonzero(m[snp, a:b])[0] + a)
    gt = mc.transposed_planes((g1, g2, m))
    bits = np.unpackbits(gt.view(np.uint8), axis=2, bitorder="little")[:, :, : g1.shape[0]]
    for x, plane in enumerate((g1, g2, m)):
        np.testing.assert_array_equal(bits[x].T.astype(bool), plane)


def test_bit_sliced_counts_equal_the_products():
    """The kernel's arithmetic (NumPy emulation) against integer matrix products, every pair and class."""
    g1, g2, m, n_ctrl = _study(p=90, n=400, n_ctrl=150)
    lst, cnt = mc.missing_lists(m, n_ctrl)
    bits = mc.bits_for(cnt)
    assert bits == 8  # SNP 7: 150 missing controls
    np.testing.assert_array_equal(mc.emulate(mc.transposed_planes((g1, g2, m)), lst, cnt, bits),
                                  mc.reference(g1, g2, m, n_ctrl))


def test_more_than_255_missing_calls_of_a_class_are_refused():
    with pytest.raises(ValueError, match="more than 8 bit planes"):
        mc.bits_for(np.array([[256, 3]]))


@pytest.mark.gpu
@pytest.mark.parametrize("p", [150, 333])
def test_kernel_counts_equal_the_products(p):
    """The CUDA kernel's counts (WRITE build) against integer products, every pair i < j."""
    g1, g2, m, n_ctrl = _study(p=p)
    want = mc.reference(g1, g2, m, n_ctrl)
    c = mc.Corrections(g1, g2, m, n_ctrl)
    got, _ = c.run(write=True)
    got = got.get().astype(np.int64)
    iu = np.triu_indices(p, 1)
    np.testing.assert_array_equal(got[iu], want[iu])
    _, chk = c.run()  # the timed build (its own bit planes) runs and reads every pair
    assert int(chk.get().astype(np.uint64).sum()) > 0


def test_large_study_builder_matches_the_small_one():
    """simulate_large (the timing study, built in chunks) gives the same lists and planes as the helpers
    on its planes: checked on a study of three chunks."""
    gt, lst, cnt = mc.simulate_large(200, 300, 140, 0.05, seed=4, chunk=64)
    bits = np.unpackbits(gt.view(np.uint8), axis=2, bitorder="little")[:, :, :200].astype(bool)
    m = bits[2].T
    assert not (bits[0] & bits[1]).any() and not ((bits[0] | bits[1]) & bits[2]).any()
    want_lst, want_cnt = mc.missing_lists(m, 140)
    np.testing.assert_array_equal(cnt, want_cnt)
    np.testing.assert_array_equal(lst[:, :, : want_lst.shape[2]], want_lst)
    assert 0.03 < m.mean() < 0.07
