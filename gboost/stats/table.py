"""3x3x2 contingency tables of a SNP pair: n[a, b, k], a = type of SNP1, b = type of SNP2,
k = 0 control / 1 case. Only samples called at both SNPs are counted (PLINK 1.9's rule).

Two implementations with the same meaning: ``pair_table_bruteforce`` from genotype codes (the
test oracle), and ``pair_table`` from bit planes (the engines' inner loop; numba).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from gboost.runtime.numba_cache import cached_njit


@intrinsic
def popcount64(typingctx, x):
    """Hardware popcount (LLVM ctpop): one instruction on x86-64 and on aarch64."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.ctpop", [ir.IntType(64)])
        return builder.call(fn, args)

    return sig, codegen


def pair_table_bruteforce(g1: np.ndarray, g2: np.ndarray, is_case: np.ndarray) -> np.ndarray:
    """Count the table directly from genotype codes (0/1/2, -1 missing). Test oracle."""
    t = np.zeros((3, 3, 2), dtype=np.int64)
    ok = (g1 >= 0) & (g2 >= 0)
    np.add.at(t, (g1[ok], g2[ok], np.asarray(is_case, bool)[ok].astype(np.int64)), 1)
    return t


@cached_njit(inline="always")
def _count_and(planes, i, ti, j, tj, w0, w1):
    s = np.uint64(0)
    for w in range(w0, w1):
        s += popcount64(planes[i, ti, w] & planes[j, tj, w])
    return np.int64(s)


@cached_njit()
def pair_table(planes, counts, has_missing, w_ctrl, i, j, out):
    """Fill ``out[3, 3, 2]`` with the table of SNPs i and j from CPU-layout bit planes.

    Without missing calls in either SNP, 4 cells per class come from AND+popcount of planes
    {0,1}x{0,1} and the other 5 from the per-SNP counts by subtraction (BOOST); otherwise all
    9 cells are counted directly, so a sample missing at either SNP is in no cell.
    """
    n_words = planes.shape[2]
    direct = has_missing[i] or has_missing[j]
    for k in range(2):
        w0 = 0 if k == 0 else w_ctrl
        w1 = w_ctrl if k == 0 else n_words
        if direct:
            for a in range(3):
                for b in range(3):
                    out[a, b, k] = _count_and(planes, i, a, j, b, w0, w1)
        else:
            for a in range(2):
                for b in range(2):
                    out[a, b, k] = _count_and(planes, i, a, j, b, w0, w1)
            for a in range(2):
                out[a, 2, k] = counts[i, a, k] - out[a, 0, k] - out[a, 1, k]
            for b in range(3):
                out[2, b, k] = counts[j, b, k] - out[0, b, k] - out[1, b, k]
