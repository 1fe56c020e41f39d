"""Missing calls counted by correction on the CUDA cores (``kernels/boost_screen.cu``, mode 4,
``gb_screen_2c``; docs/DESIGN.md §3.3).

With missing calls a pair's table needs 9 AND+popcount products a class and word instead of the 4 of
fully called SNPs (the margins then differ from pair to pair). Missing calls are sparse (~1 % on real
chips), so a block whose SNPs all have short lists of missing samples counts the 4 products that are
exact with missing calls too (a missing call sets no plane bit: types 0 and 1 of both SNPs) and takes
the other 5 cells of each class from five counts, each a sum over one SNP's list:

* ``c_t`` = number of the column SNP's missing samples (of the class) where the row SNP is of type t,
  t = 0, 1, 2;
* ``d_t`` = number of the row SNP's missing samples where the column SNP is of type t, t = 0, 1.

Then, with ``n_ab`` the table's cells and ``N_t`` a SNP's count of type t in the class:
``n_a2 = N_a(row) - n_a0 - n_a1 - c_a`` (a = 0, 1), ``n_2b = N_b(col) - n_0b - n_1b - d_b`` (b = 0, 1),
``n_22 = N_2(row) - n_20 - n_21 - c_2``: the same integers as the direct count (:func:`corrected_table`
is the reference, tests/unit/test_missing_lists.py holds it equal to ``pair_table`` on every pair).

The kernel sums the lists 32 SNPs at a time, from a sample-major copy of the planes (``gt``, one bit of
32 SNPs a word) into bit-sliced counters. This module plans which SNPs are listed, holds the device
arrays and builds them as each chunk of the resident planes lands (:class:`DeviceLists`), and gives
the NumPy references of the two build kernels with their signatures (:func:`transpose_ref`,
:func:`lists_ref`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# A list's samples are summed in 8-bit bit-sliced counters (boost_screen.cu, GB_CBITS): a SNP with more
# missing calls than this in a class is not listed, and blocks holding it count directly. (Samples of a
# class are stored as 16-bit places in the class: CLASS_MAX.)
LIST_MAX = 255
# The missing-call rate at which summing the lists costs about what the direct count's 5 further products
# a word cost: on an H100 at 200k x 5k the screen took 3.49 s + 0.03 s per missing call of a class and SNP
# counted by correction, 6.32 s directly, so the two meet at ~94 of ~2,500 (3.8 %); both grow with n, so
# the rate is what holds (bench/bench_popc_missing.py measures both against the rate). Where the
# study's SNPs average a higher rate (fully called ones count 0), no SNP is listed. (Single SNPs above
# it cost their blocks less: their lists are walked beside the others', on other threads.)
RATE_BREAK_EVEN = 0.035
UNLISTED = 2  # the flag of a SNP with missing calls that is not listed (boost_screen.cu, GB_UNLISTED)
CLASS_MAX = 1 << 16
_THREADS = 256


@dataclass(frozen=True)
class ListPlan:
    """Which SNPs are listed: ``flags`` per SNP (boost_screen.cu's ``miss``), 0 fully called, 1 listed,
    UNLISTED with missing calls but not listed; ``width`` entries a list (its count, then up to width - 1
    samples); 0 when no SNP is listed."""

    flags: np.ndarray
    width: int

    @property
    def listed(self) -> bool:
        return self.width > 0


def is_listed(flags: np.ndarray) -> np.ndarray:
    return flags == 1


def missing_per_class(counts: np.ndarray, n_ctrl: int, n_case: int) -> np.ndarray:
    """(p, 2) missing calls of each SNP in each class from its counts ``[p][type * 2 + class]``."""
    c = np.asarray(counts, dtype=np.int64).reshape(-1, 3, 2)
    return np.array([n_ctrl, n_case], dtype=np.int64) - c.sum(axis=1)


def plan_lists(counts: np.ndarray, n_ctrl: int, n_case: int, has_missing: np.ndarray, *, enabled: bool = True
               ) -> ListPlan:
    """The listed SNPs: those with missing calls, none of them more than LIST_MAX in a class, where the
    classes' places fit 16 bits, ``enabled`` (the block shape's corrections fit its buffers,
    KernelConfig.corrects), and the SNPs' missing-call rates average at most RATE_BREAK_EVEN. Else every
    SNP with missing calls is UNLISTED."""
    has = np.asarray(has_missing, dtype=bool)
    flags = np.where(has, UNLISTED, 0).astype(np.uint8)
    if not enabled or not has.any() or max(n_ctrl, n_case) > CLASS_MAX:
        return ListPlan(flags, 0)
    miss = missing_per_class(counts, n_ctrl, n_case)
    # (the lists' cost grows with both classes' missing calls, the direct count's with both classes' words)
    if miss.sum(axis=1).mean() / max(1, n_ctrl + n_case) > RATE_BREAK_EVEN:
        return ListPlan(flags, 0)
    most = miss.max(axis=1)
    ok = has & (most <= LIST_MAX)
    if not ok.any():
        return ListPlan(flags, 0)
    flags[ok] = 1
    return ListPlan(flags, int(most[ok].max()) + 1)


def unlisted(plan: ListPlan) -> ListPlan:
    """The same SNPs, none listed (where the lists do not fit on the device)."""
    return ListPlan(np.where(plan.flags > 0, UNLISTED, 0).astype(np.uint8), 0)


def block_modes(row_flags: np.ndarray, col_flags: np.ndarray, block_rows: int, block_cols: int) -> set[int]:
    """The modes of the blocks of a tile whose rows' and columns' flags these are, as the kernels'
    gb_block_mode derives each block's: 4 where the block has missing calls, all of listed SNPs; else
    2 * rows-have-missing + columns-have-missing."""

    def side(f: np.ndarray, b: int) -> set[tuple[bool, bool]]:
        if not len(f):
            return {(False, False)}
        at = np.arange(0, len(f), b)
        return set(zip((np.add.reduceat(f > 0, at) > 0).tolist(), (np.add.reduceat(f == UNLISTED, at) > 0).tolist()))

    return {4 if (ra or ca) and not (ru or cu) else 2 * int(ra) + int(ca)
            for ra, ru in side(row_flags, block_rows) for ca, cu in side(col_flags, block_cols)}


def groups(p: int) -> int:
    return -(-p // 32)


def device_bytes(p: int, n_words: int, width: int) -> int:
    """Device memory of the lists and of the sample-major copy for ``p`` SNPs."""
    return groups(p) * 3 * 64 * n_words * 4 + p * 2 * width * 2 if width else 0


# -- references of the build kernels (same signatures as boost_screen.cu's) ------------------------------
def transpose_ref(x: np.ndarray, n: int, W: int, g0: int, S: int, gt: np.ndarray) -> None:
    """gb_transpose_planes: ``gt[g0 + g][t][s]`` bit q = bit s of plane t of SNP 32 g + q of chunk ``x``
    ([n][3][W] words); ``gt`` flat uint32."""
    ng = -(-n // 32)
    bits = np.zeros((ng * 32, 3, 64 * W), dtype=np.uint8)
    bits[:n] = np.unpackbits(np.ascontiguousarray(x[:n]).view(np.uint8).reshape(n, 3, W, 8), axis=3,
                             bitorder="little").reshape(n, 3, 64 * W)
    # bit q of a word: SNP 32 g + q
    words = np.packbits(bits.reshape(ng, 32, 3, 64 * W).transpose(0, 2, 3, 1), axis=3, bitorder="little")
    view = gt.reshape(-1, 3, S)
    view[g0:g0 + ng, :, :64 * W] = words.view("<u4").reshape(ng, 3, 64 * W)


def lists_ref(x: np.ndarray, n: int, W: int, w_ctrl: int, n_ctrl: int, n_case: int, o: int, miss: np.ndarray,
              L1: int, lst: np.ndarray) -> None:
    """gb_miss_lists: ``lst[g][k]`` = the number of samples of class k without a call, then their places
    in the class, for each SNP g = o + r of chunk ``x`` that is listed or fully called (an empty list);
    ``lst`` flat uint16."""
    view = lst.reshape(-1, 2, L1)
    for r in range(n):
        g = o + r
        if miss[g] == UNLISTED:
            continue
        if miss[g] == 0:
            view[g, :, 0] = 0
            continue
        called = x[r, 0] | x[r, 1] | x[r, 2]
        bits = np.unpackbits(called.view(np.uint8), bitorder="little")
        for k, (wa, wb, nk) in enumerate(((0, w_ctrl, n_ctrl), (w_ctrl, W, n_case))):
            places = np.flatnonzero(bits[64 * wa:64 * wb][:nk] == 0)
            m = min(len(places), L1 - 1)
            view[g, k, 0] = m
            view[g, k, 1:1 + m] = places[:m]


def corrected_table(planes: np.ndarray, counts: np.ndarray, w_ctrl: int, gt: np.ndarray, S: int,
                    lst: np.ndarray, L1: int, i: int, j: int) -> np.ndarray:
    """Pair (i, j)'s table [row type][column type][class] as gb_screen_2c forms it: the 4 products of
    types 0 and 1, and the five corrections a class summed over the lists from ``gt``."""
    g3 = gt.reshape(-1, 3, S)
    view = lst.reshape(-1, 2, L1)
    cnt = np.asarray(counts, dtype=np.int64).reshape(-1, 3, 2)
    t = np.zeros((3, 3, 2), dtype=np.int64)

    def bit(snp: int, typ: int, s: int) -> int:
        return int(g3[snp // 32, typ, s] >> np.uint32(snp % 32)) & 1

    for k, (wa, wb) in enumerate(((0, w_ctrl), (w_ctrl, planes.shape[2]))):
        for a in range(2):
            for b in range(2):
                t[a, b, k] = sum(int(v).bit_count() for v in planes[i, a, wa:wb] & planes[j, b, wa:wb])
        s0 = 64 * wa
        miss_j = [s0 + int(s) for s in view[j, k, 1:1 + view[j, k, 0]]]
        miss_i = [s0 + int(s) for s in view[i, k, 1:1 + view[i, k, 0]]]
        c = [sum(bit(i, typ, s) for s in miss_j) for typ in range(3)]
        d = [sum(bit(j, typ, s) for s in miss_i) for typ in range(2)]
        for a in range(2):
            t[a, 2, k] = cnt[i, a, k] - t[a, 0, k] - t[a, 1, k] - c[a]
        for b in range(2):
            t[2, b, k] = cnt[j, b, k] - t[0, b, k] - t[1, b, k] - d[b]
        t[2, 2, k] = cnt[i, 2, k] - t[2, 0, k] - t[2, 1, k] - c[2]
    return t


# -- on the device -----------------------------------------------------------------------------------------
class DeviceLists:
    """The listed SNPs' lists and the planes' sample-major copy on one device, built chunk by chunk as the
    resident planes land (DeviceRunner.lay_out), on the stream that lays the chunk out."""

    def __init__(self, cp, k: dict, plan: ListPlan, p: int, n_words: int, w_ctrl: int, n_ctrl: int, n_case: int):
        self.k = k
        self.W, self.w_ctrl, self.n_ctrl, self.n_case = n_words, w_ctrl, n_ctrl, n_case
        self.S = 64 * n_words
        self.G = groups(p)
        self.width = plan.width
        self.gt = cp.empty(self.G * 3 * self.S, dtype=np.uint32)
        self.lst = cp.empty(p * 2 * self.width, dtype=np.uint16)

    def add(self, x, o: int, miss) -> None:
        """Chunk ``x`` (SNP-major planes [n][3][W] on the device) of SNPs [o, o + n): its groups of gt and
        its SNPs' lists (``miss``: every SNP's flag on the device, uint8). ``o`` is a multiple of 32 (the
        upload's chunks are), so each group of 32 SNPs is written by one chunk."""
        assert o % 32 == 0, o
        n = int(x.shape[0])
        if n == 0:
            return
        warps = groups(n) * 3 * self.W
        self.k["gb_transpose_planes"]((-(-warps * 32 // _THREADS), 1, 1), (_THREADS, 1, 1),
                                      (x, np.int32(n), np.int32(self.W), np.int32(o // 32), np.int64(self.S), self.gt))
        self.k["gb_miss_lists"]((-(-2 * n // _THREADS), 1, 1), (_THREADS, 1, 1),
                                (x, np.int32(n), np.int32(self.W), np.int32(self.w_ctrl), np.int32(self.n_ctrl),
                                 np.int32(self.n_case), np.int32(o), miss, np.int32(self.width), self.lst))

    @property
    def args(self) -> dict:
        """gb_screen_2c's own fields of its argument struct (kernel_args.py, gb_params)."""
        return dict(gt=self.gt, S=self.S, G=self.G, lst=self.lst, L1=self.width)
