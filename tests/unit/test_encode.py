"""Encoder and counter: GBOOST Fig. S3, layouts, and every cell against brute force."""
import numpy as np
import pytest

from gboost.data.encode import (ClassLayout, bed_missing_counts, decode_planes, encode_bed_bytes, encode_block,
                           encode_block_reference, from_gpu_layout,
                           genotype_counts, mask_words, masked_counts, plane_counts, sample_order,
                           to_gpu_layout)
from gboost.stats.table import pair_table, pair_table_bruteforce
from tests.helpers import bed_rows, random_genotypes

# GBOOST supplement, Fig. S3: 2 SNPs x 16 samples (8 controls, 8 cases). The controls of X1 are
# [0 2 1 1 2 2 0 0]; X2 is chosen to give the figure's tables.
FIG_S3_X1 = [0, 2, 1, 1, 2, 2, 0, 0] + [0, 0, 0, 1, 2, 2, 1, 1]
FIG_S3_X2 = [0, 0, 1, 1, 0, 1, 1, 2] + [0, 0, 1, 1, 0, 0, 2, 2]
FIG_S3_CTRL = [[1, 1, 1], [0, 2, 0], [2, 1, 0]]
FIG_S3_CASE = [[2, 1, 0], [0, 1, 2], [2, 0, 0]]


def _bits(word: int, n: int) -> str:
    return "".join("1" if (int(word) >> s) & 1 else "0" for s in range(n))


def test_fig_s3_planes_and_tables():
    g = np.array([FIG_S3_X1, FIG_S3_X2], dtype=np.int8)
    is_case = np.r_[np.zeros(8, bool), np.ones(8, bool)]
    planes = encode_block(g, is_case)
    assert planes.shape == (2, 3, 2)  # one word of controls, one of cases
    # The figure's bit strings for the controls of X1 (first sample leftmost).
    assert _bits(planes[0, 0, 0], 8) == "10000011"
    assert _bits(planes[0, 1, 0], 8) == "00110000"
    assert _bits(planes[0, 2, 0], 8) == "01001100"
    # Padding bits stay zero.
    assert int(planes[0, 0, 0]) >> 8 == 0
    counts = genotype_counts(g, is_case)
    t = np.zeros((3, 3, 2), np.int64)
    for missing_flags in (np.array([False, False]), np.array([True, True])):  # subtraction and direct paths
        pair_table(planes, counts, missing_flags, 1, 0, 1, t)
        assert t[:, :, 0].tolist() == FIG_S3_CTRL
        assert t[:, :, 1].tolist() == FIG_S3_CASE


def test_words_never_mix_classes():
    is_case = np.r_[np.zeros(65, bool), np.ones(3, bool)]
    layout = ClassLayout.from_status(is_case)
    assert (layout.w_ctrl, layout.w_case, layout.n_words) == (2, 1, 3)
    g = np.full((1, 68), 2, np.int8)
    planes = encode_block(g, is_case)
    assert bin(int(planes[0, 2, 1])).count("1") == 1  # 65th control alone in word 1
    assert int(planes[0, 2, 2]) == 0b111  # the 3 cases in their own word


@pytest.mark.parametrize("n", [1, 63, 64, 65, 130, 257])
def test_roundtrip_and_gpu_layout(rng, n):
    g, is_case = random_genotypes(rng, 7, n, missing=0.1) if n > 1 else (np.array([[1]] * 7, np.int8), np.array([True]))
    order = sample_order(is_case)
    planes = encode_block(g[:, order], is_case[order])
    back, back_case = decode_planes(planes, ClassLayout.from_status(is_case))
    assert np.array_equal(back, g[:, order])
    assert np.array_equal(back_case, is_case[order])
    gpu = to_gpu_layout(planes)
    assert gpu.shape == (3, planes.shape[2], 7) and gpu.flags.c_contiguous
    # Type-major, SNP fastest: consecutive SNPs are consecutive words.
    assert gpu.strides[2] == 8
    assert gpu[1, 0, 3] == planes[3, 1, 0]
    assert np.array_equal(from_gpu_layout(gpu), planes)


@pytest.mark.parametrize("n,case_frac", [(100, 0.5), (129, 0.05), (64, 0.5), (333, 0.9)])
def test_every_cell_equals_bruteforce(rng, n, case_frac):
    g, is_case = random_genotypes(rng, 12, n, missing=0.05, case_frac=case_frac, monomorphic=2)
    g[0] = np.where(g[0] < 0, 0, g[0])  # a SNP without missing calls (subtraction path)
    g[1] = np.where(g[1] < 0, 1, g[1])
    order = sample_order(is_case)
    g, is_case = g[:, order], is_case[order]
    planes = encode_block(g, is_case)
    counts = genotype_counts(g, is_case)
    has_missing = counts.sum(axis=(1, 2)) < n
    assert not has_missing[0] and not has_missing[1] and has_missing[2:].any()
    w_ctrl = ClassLayout.from_status(is_case).w_ctrl
    t = np.zeros((3, 3, 2), np.int64)
    for i in range(12):
        for j in range(12):
            pair_table(planes, counts, has_missing, w_ctrl, i, j, t)
            np.testing.assert_array_equal(t, pair_table_bruteforce(g[i], g[j], is_case), err_msg=f"pair {i},{j}")


@pytest.mark.parametrize("n,case_frac", [(1, 1.0), (63, 0.3), (64, 0.5), (65, 0.5), (200, 0.1), (513, 0.7)])
def test_plane_counts_equal_the_genotype_counts(rng, n, case_frac):
    g, is_case = random_genotypes(rng, 40, n, missing=0.1, case_frac=case_frac) if n > 1 else (np.array([[2]] * 40, np.int8), np.array([True]))
    planes = encode_block(g, is_case)  # columns in file order: classes interleaved
    got = plane_counts(planes, ClassLayout.from_status(is_case))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, genotype_counts(g, is_case))
    assert plane_counts(planes[:0], ClassLayout.from_status(is_case)).shape == (0, 3, 2)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 300])
def test_masked_counts_equal_counts_within_each_sample_set(rng, n):
    g, _ = random_genotypes(rng, 25, n, missing=0.1) if n > 1 else (np.array([[1]] * 25, np.int8), None)
    member = rng.random((n, 4)) < 0.5
    planes = encode_block(g, np.zeros(n, bool))  # one class: sample s is bit s
    got = masked_counts(planes, mask_words(member))
    want = np.zeros((25, 3, 4), np.int64)
    for t in range(3):
        for k in range(4):
            want[:, t, k] = ((g == t) & member[:, k]).sum(axis=1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n,case_frac", [(1, 1.0), (64, 0.5), (200, 0.1), (513, 0.7)])
def test_numba_encoder_equals_numpy_reference(rng, n, case_frac):
    g, is_case = random_genotypes(rng, 9, n, missing=0.1, case_frac=case_frac) if n > 1 else (np.array([[2]] * 9, np.int8), np.array([True]))
    np.testing.assert_array_equal(encode_block(g, is_case), encode_block_reference(g, is_case))


@pytest.mark.parametrize("n", [1, 3, 4, 63, 64, 65, 257])
def test_bed_bytes_decode_as_plink_codes_say(rng, n):
    """.bed codes 00 / 10 / 11 are 2 / 1 / 0 copies of A1 (PLINK's count_A1), 01 is missing."""
    codes = rng.integers(0, 4, (11, n)).astype(np.uint8)
    raw = bed_rows(codes)
    geno = np.array([2, -1, 1, 0], np.int8)[codes]
    np.testing.assert_array_equal(bed_missing_counts(raw, n), (codes == 1).sum(axis=0))
    cols = rng.permutation(n)[: max(1, n - 2)]  # a subset of the samples, in any order
    is_case = rng.random(len(cols)) < 0.5
    np.testing.assert_array_equal(encode_bed_bytes(raw, cols, is_case), encode_block(geno[:, cols], is_case))


def test_bed_bytes_encode_picked_rows_into_a_given_array(rng):
    """The loader encodes a .bed block's kept rows by index straight into the study's
    planes; the words are those of the rows copied out and encoded, padding bits included."""
    n = 131
    codes = rng.integers(0, 4, (9, n)).astype(np.uint8)
    raw = bed_rows(codes)
    cols = rng.permutation(n)
    is_case = rng.random(n) < 0.4
    rows = np.array([7, 0, 3, 3, 8])
    dest = np.full((len(rows) + 2, 3, ClassLayout.from_status(is_case).n_words), 0xDEAD, np.uint64)
    got = encode_bed_bytes(raw, cols, is_case, rows=rows, out=dest[1:-1])
    assert got.base is dest or got.base is dest.base
    np.testing.assert_array_equal(dest[1:-1], encode_bed_bytes(raw[rows], cols, is_case))
    assert (dest[0] == 0xDEAD).all() and (dest[-1] == 0xDEAD).all()
    with pytest.raises(ValueError):
        encode_bed_bytes(raw, cols, is_case, rows=rows, out=dest[:2])


@pytest.mark.parametrize("n", [1, 2, 5, 63, 64, 65, 127, 128, 129, 200, 257, 700])
@pytest.mark.parametrize("pattern", ["interleaved", "sorted", "one class first", "some left out"])
def test_compressed_bed_words_equal_the_sample_by_sample_gather(rng, n, pattern):
    """Columns in file order within each class (the loader's order) go through the
    compress kernel; its planes, padding bits included, and its per-class counts equal those of
    the decoded calls, whatever the classes' pattern and wherever a word or byte ends."""
    from gboost.data.encode import bed_encode, bed_plan, monomorphic

    codes = rng.integers(0, 4, (13, n)).astype(np.uint8)
    raw = bed_rows(codes)
    raw[:, -1] |= np.uint8(0xFF) << np.uint8(2 * (n % 4)) if n % 4 else np.uint8(0)  # garbage padding codes
    geno = np.array([2, -1, 1, 0], np.int8)[codes]
    case = {"interleaved": rng.random(n) < 0.5, "sorted": np.arange(n) >= n // 2,
            "one class first": np.arange(n) < n // 3, "some left out": rng.random(n) < 0.4}[pattern]
    scanned = rng.random(n) > 0.2 if pattern == "some left out" else np.ones(n, bool)
    if n == 1:
        scanned[:] = True
    is_case_file = case[scanned]
    cols = np.flatnonzero(scanned)[sample_order(is_case_file)]
    is_case = is_case_file[sample_order(is_case_file)]
    plan = bed_plan(cols, is_case, n)
    assert plan is not None
    want = encode_block(geno[:, cols], is_case)
    rows = np.array([12, 0, 5, 5, 7])
    out = np.full((len(rows), 3, plan.layout.n_words), 0xABCD, np.uint64)
    for quantitative in (False, True):
        counts, mono = bed_encode(raw, plan, rows, out, quantitative=quantitative)
        np.testing.assert_array_equal(out, want[rows])
        np.testing.assert_array_equal(counts, plane_counts(want[rows], plan.layout))
        np.testing.assert_array_equal(mono, monomorphic(counts, quantitative))
    np.testing.assert_array_equal(encode_bed_bytes(raw, cols, is_case), want)


def test_a_plan_refuses_columns_out_of_file_order():
    from gboost.data.encode import bed_plan

    assert bed_plan(np.array([3, 1, 2]), np.array([False, False, True]), 4) is None
    assert bed_plan(np.array([1, 3, 0, 2]), np.array([False, False, True, True]), 4) is not None


@pytest.mark.parametrize("n", [1, 7, 64, 65, 300])
def test_bed_set_counts_equal_counts_of_the_decoded_calls(rng, n):
    from gboost.data.encode import bed_set_counts, file_masks

    codes = rng.integers(0, 4, (9, n)).astype(np.uint8)
    raw = bed_rows(codes)
    geno = np.array([2, -1, 1, 0], np.int8)[codes]
    member = rng.random((5, n)) < 0.5
    rows = np.array([8, 1, 1, 4])
    got = bed_set_counts(raw, rows, file_masks(member, n))
    want = np.zeros((len(rows), 3, 5), np.int64)
    for t in range(3):
        for k in range(5):
            want[:, t, k] = ((geno[rows] == t) & member[k]).sum(axis=1)
    np.testing.assert_array_equal(got, want)


def test_move_rows_closes_gaps_in_place():
    from gboost.data.encode import move_rows

    a = np.arange(30, dtype=np.uint64).reshape(10, 3)
    want = a.copy()
    move_rows(a, 2, np.array([0, 2, 3, 6]))
    np.testing.assert_array_equal(a[2:6], want[[2, 4, 5, 8]])
    np.testing.assert_array_equal(a[:2], want[:2])
    rng = np.random.default_rng(3)
    for _ in range(50):  # runs long and short, overlapping their destinations
        a = rng.integers(0, 1 << 60, (40, 3, 2)).astype(np.uint64)
        want = a.copy()
        src = np.flatnonzero(rng.random(30) < rng.random())
        move_rows(a, 5, src)
        np.testing.assert_array_equal(a[5 : 5 + len(src)], want[5 + src])
        np.testing.assert_array_equal(a[:5], want[:5])
