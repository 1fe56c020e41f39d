"""CPU engine of the quantitative-trait scan: PLINK's linear test of every pair from the bit
planes, survivors and the per-SNP summary (numba, all cores). docs/qt_epistasis.md §3-4.

Planes per SNP, by dosage d = copies of PLINK's A1 (the founders' minor allele; the .bim's A1
unless ``study.a1_flip``): H1 (het), H2 (hom A1) and M (missing call); C = H1 | H2 carries A1.

The test (:func:`pair_moments` -> :func:`gboost.stats.qt.linear_from_moments`) needs the moments
of ``y ~ 1 + a + b + ab``. Per SNP, dosage totals and ``sum a y`` are summed once; per pair, the
cells with a, b >= 1 are counted by AND+popcount of H1/H2, and one walk over the set bits of
(C_i & C_j) | M_i | M_j, in sample order, adds ``a b y`` and takes the samples missing at either
SNP out of the totals. Sample order and PLINK's operations make these the doubles PLINK computes,
so STAT agrees to the last bit (byte parity of the printed files).

The pair's 3x3 table of counts and trait sums (:func:`pair_sufficient`, for pairs.tsv's N, the
genotypic F-test and the GUI) comes from the same planes: counts by popcount, trait sums over
C_i & C_j, H2_i & C_j, C_i & H2_j, H2_i & H2_j by a table of the trait's partial sums per byte
pattern (``T[8 * word + byte, pattern]``, 2 KiB per 8 samples: 1.3 MB at 5,000 samples, in L2),
margins from per-SNP dosage totals less the samples missing at the other SNP, and the cells with a
0 dosage by subtraction. gboost/stats/qt_products.py is the same table as matrix products.

Pass 1 writes each pair's STAT (NaN for a pair PLINK fails) into a block of rows x all columns;
the block's survivors (STAT >= the epi1 threshold, or failed pairs when that threshold is 0) are
re-tested one by one (pass 2: beta, SE and the table), and the block folds into the summary.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from gboost.errors import interrupts_held
from gboost.runtime.numba_cache import cached_njit
from gboost.stats.qt import linear_from_moments
from gboost.stats.table import popcount64
from gboost.data.study import Study
from gboost.pipeline.tiles import Summary, SummaryPartial, Tile, TileResult, plan_rect_tiles

_ZBUF_BYTES = 64 << 20  # STAT buffer of one row block
RECT_TILE = 2048  # a candidate-set scan's tiles: SNPs per side (a tile's STAT buffer 32 MB)


@dataclass
class QTPlanes:
    """The QT engine's view of a study (see the module notes)."""

    h1: np.ndarray  # (p, W) uint64
    h2: np.ndarray
    miss: np.ndarray
    cnt: np.ndarray  # (p, 3) int64: called samples by dosage
    sy: np.ndarray  # (p, 3) float64: trait sums by dosage
    ty: np.ndarray  # (8 W, 256) float64: trait sums per byte pattern
    ty2: np.ndarray  # the same for y^2
    n: int
    y_sum: float  # summed sample by sample, file order (PLINK's order)
    y2_sum: float
    y: np.ndarray  # the trait, padded with zeros to whole words
    pg: np.ndarray  # (p,) sum of dosage * y, PLINK's order
    sa: np.ndarray  # (p,) int64 sum of dosages
    saa: np.ndarray  # (p,) int64 sum of squared dosages

    def retest_args(self) -> tuple:
        return (self.h1, self.h2, self.miss, self.cnt, self.sy, self.ty, self.ty2, self.pg, self.sa, self.saa,
                self.y, self.n, self.y_sum, self.y2_sum)

    def scan_args(self) -> tuple:
        return (self.h1, self.h2, self.miss, self.pg, self.sa, self.saa, self.y, self.n, self.y_sum, self.y2_sum)


def qt_planes(study: Study) -> QTPlanes:
    """Dosage planes, per-SNP totals and byte tables of a QT study.

    One compiled pass over the planes, in parallel over SNPs and without the GIL (the GPU engine
    builds this on a host thread while its first tiles run): the NumPy version's temporaries (the
    flipped planes, the missing mask) cost seconds of a small machine at 100k x 5k."""
    y = np.asarray(study.trait, dtype=np.float64)
    n = len(y)
    planes = np.ascontiguousarray(study.planes)
    p, _, W = planes.shape
    flip = (np.ascontiguousarray(study.a1_flip, dtype=np.bool_) if study.a1_flip is not None
            else np.zeros(p, np.bool_))
    valid = _valid_words(n, W)
    ty = _byte_table(y, W)
    ty2 = _byte_table(y * y, W)
    h1 = np.empty((p, W), np.uint64)
    h2 = np.empty((p, W), np.uint64)
    miss = np.empty((p, W), np.uint64)
    cnt = np.empty((p, 3), np.int64)
    sy = np.empty((p, 3), np.float64)
    _dosage_planes(planes, flip, valid, ty, h1, h2, miss, cnt, sy)
    ypad = np.zeros(W * 64)
    ypad[:n] = y
    y_sum, y2_sum = _ordered_totals(ypad, n)
    pg, sa, saa = _sequential_sums(h1, h2, ypad)
    return QTPlanes(h1, h2, miss, cnt, sy, ty, ty2, n, y_sum, y2_sum, ypad, pg, sa, saa)


@cached_njit(parallel=True, nogil=True)
def _dosage_planes(planes, flip, valid, ty, h1, h2, miss, cnt, sy):
    """H1, H2 and M by dosage (type t = copies of the .bim's A1; PLINK's dosage is t, or 2 - t
    where its A1 is the .bim's A2), and per dosage the called samples and their trait sum, each
    summed word by word in word order (the doubles of the per-plane sums before)."""
    p, _, W = planes.shape
    for i in nb.prange(p):
        c0 = c1 = c2 = 0
        s0 = s1 = s2 = 0.0
        for k in range(W):
            t0, t1, t2 = planes[i, 0, k], planes[i, 1, k], planes[i, 2, k]
            d0, d2 = (t2, t0) if flip[i] else (t0, t2)
            h1[i, k] = t1
            h2[i, k] = d2
            miss[i, k] = valid[k] & ~(t0 | t1 | t2)
            if d0:
                c0 += popcount64(d0)
                s0 += _wsum(ty, k, d0)
            if t1:
                c1 += popcount64(t1)
                s1 += _wsum(ty, k, t1)
            if d2:
                c2 += popcount64(d2)
                s2 += _wsum(ty, k, d2)
        cnt[i, 0], cnt[i, 1], cnt[i, 2] = c0, c1, c2
        sy[i, 0], sy[i, 1], sy[i, 2] = s0, s1, s2


@cached_njit(nogil=True)
def _ordered_totals(y, n):
    s = 0.0
    q = 0.0
    for k in range(n):
        s += y[k]
        q += y[k] * y[k]
    return s, q


def _valid_words(n: int, W: int) -> np.ndarray:
    bits = np.zeros(W * 64, bool)
    bits[:n] = True
    return np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64)


def _byte_table(v: np.ndarray, W: int) -> np.ndarray:
    padded = np.zeros(W * 64)
    padded[: len(v)] = v
    groups = padded.reshape(W * 8, 8)
    patterns = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.float64)
    return np.ascontiguousarray(groups @ patterns.T)


@cached_njit(inline="always")
def _wsum(t, k, w):
    """Sum of the values of word k's set bits, by byte table."""
    s = 0.0
    base = 8 * k
    while w:
        b = base + 0
        s += t[b, w & np.uint64(255)]
        w >>= np.uint64(8)
        base += 1
    return s


@cached_njit(nogil=True)
def pair_sufficient(h1, h2, miss, cnt, sy, ty, ty2, y2_sum, i, j, n, s):
    """Fill the pair's table ``n`` (3x3 counts) and ``s`` (trait sums); return sum y^2 of it."""
    W = h1.shape[1]
    n11 = n12 = n21 = n22 = 0
    s_cc = s_2c = s_c2 = s_22 = 0.0
    # samples missing at j, called at i, by dosage at i (and the converse); y^2 of any missing
    # (scalars: no allocation per pair in the parallel loops)
    rn0 = rn1 = rn2 = cn0 = cn1 = cn2 = 0
    rs0 = rs1 = rs2 = cs0 = cs1 = cs2 = 0.0
    q_miss = 0.0
    for k in range(W):
        a1 = h1[i, k]
        a2 = h2[i, k]
        b1 = h1[j, k]
        b2 = h2[j, k]
        ca = a1 | a2
        cb = b1 | b2
        both = ca & cb
        if both:
            n11 += popcount64(a1 & b1)
            n12 += popcount64(a1 & b2)
            n21 += popcount64(a2 & b1)
            n22 += popcount64(a2 & b2)
            s_cc += _wsum(ty, k, both)
            x = a2 & cb
            if x:
                s_2c += _wsum(ty, k, x)
                x2 = a2 & b2
                if x2:
                    s_22 += _wsum(ty, k, x2)
            x = ca & b2
            if x:
                s_c2 += _wsum(ty, k, x)
        mi = miss[i, k]
        mj = miss[j, k]
        if mi | mj:
            q_miss += _wsum(ty2, k, mi | mj)
            only_j = mj & ~mi  # called at i
            if only_j:
                x = only_j & ~(a1 | a2)
                rn0 += popcount64(x)
                rs0 += _wsum(ty, k, x)
                x = only_j & a1
                rn1 += popcount64(x)
                rs1 += _wsum(ty, k, x)
                x = only_j & a2
                rn2 += popcount64(x)
                rs2 += _wsum(ty, k, x)
            only_i = mi & ~mj  # called at j
            if only_i:
                x = only_i & ~(b1 | b2)
                cn0 += popcount64(x)
                cs0 += _wsum(ty, k, x)
                x = only_i & b1
                cn1 += popcount64(x)
                cs1 += _wsum(ty, k, x)
                x = only_i & b2
                cn2 += popcount64(x)
                cs2 += _wsum(ty, k, x)
    n[1, 1] = n11
    n[1, 2] = n12
    n[2, 1] = n21
    n[2, 2] = n22
    s[2, 2] = s_22
    s[2, 1] = s_2c - s_22
    s[1, 2] = s_c2 - s_22
    s[1, 1] = s_cc - s_2c - s[1, 2]
    # margins of the pair's table: dosage totals less the samples missing at the other SNP
    n[1, 0] = cnt[i, 1] - rn1 - n[1, 1] - n[1, 2]
    s[1, 0] = sy[i, 1] - rs1 - s[1, 1] - s[1, 2]
    n[2, 0] = cnt[i, 2] - rn2 - n[2, 1] - n[2, 2]
    s[2, 0] = sy[i, 2] - rs2 - s[2, 1] - s[2, 2]
    n[0, 1] = cnt[j, 1] - cn1 - n[1, 1] - n[2, 1]
    s[0, 1] = sy[j, 1] - cs1 - s[1, 1] - s[2, 1]
    n[0, 2] = cnt[j, 2] - cn2 - n[1, 2] - n[2, 2]
    s[0, 2] = sy[j, 2] - cs2 - s[1, 2] - s[2, 2]
    n[0, 0] = cnt[i, 0] - rn0 - n[0, 1] - n[0, 2]
    s[0, 0] = sy[i, 0] - rs0 - s[0, 1] - s[0, 2]
    return y2_sum - q_miss


@cached_njit(parallel=True, nogil=True)
def _sequential_sums(h1, h2, y):
    """Per SNP, summed sample by sample in file order as PLINK does: sum of dosage * y (2 * y
    added for a homozygote), and the integer sums of dosage and dosage^2."""
    p, W = h1.shape
    pg = np.zeros(p)
    sa = np.zeros(p, np.int64)
    saa = np.zeros(p, np.int64)
    for i in nb.prange(p):
        acc = 0.0
        het = 0
        hom = 0
        for k in range(W):
            w = h1[i, k] | h2[i, k]
            while w:
                low = w & (~w + np.uint64(1))
                bit = popcount64(low - np.uint64(1))
                if h2[i, k] & low:
                    acc += 2 * y[64 * k + bit]
                    hom += 1
                else:
                    acc += y[64 * k + bit]
                    het += 1
                w ^= low
        pg[i] = acc
        sa[i] = het + 2 * hom
        saa[i] = het + 4 * hom
    return pg, sa, saa


@intrinsic
def cttz64(typingctx, x):
    """Index of the lowest set bit (LLVM cttz; x != 0): the next sample of a word, in file order."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.cttz", [ir.IntType(64), ir.IntType(1)])
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 1)])

    return sig, codegen


@cached_njit(inline="always")
def carrier_word(a1, a2, b1, b2, both, base, c11, c12, c21, c22, acc, y, zt, M, col):
    """One word of a pair's walk (SNP i's H1/H2 words a1, a2, SNP j's b1, b2; ``both`` = the
    samples carrying A1 at both, nonzero; samples base..base+63), shared by PLINK's test and the
    covariate-adjusted one (gboost/engines/qt_covar.py): the cells with a, b >= 1 counted by
    AND+popcount into c11..c22, and a*b*y of each carrier added to ``acc`` one sample at a time in
    sample order (PLINK's order: the doubles it computes); with covariates (``zt`` not None) each
    carrier's a*b*zt[s, u] also into M[u, col]. Returns (c11, c12, c21, c22, acc). (With ``zt``
    None numba prunes the covariates' branch from that specialisation: PLINK's test runs as before.)"""
    one = np.uint64(1)
    c11 += popcount64(a1 & b1)
    c12 += popcount64(a1 & b2)
    c21 += popcount64(a2 & b1)
    c22 += popcount64(a2 & b2)
    w = both
    while w:
        t = cttz64(w)
        w &= w - one
        # a * b in {1, 2, 4} without a branch (hom and het interleave at random)
        f = float((one + ((a2 >> t) & one)) * (one + ((b2 >> t) & one)))
        s = base + t
        acc += f * y[s]
        if zt is not None:
            for u in range(zt.shape[1]):
                M[u, col] += f * zt[s, u]
    return c11, c12, c21, c22, acc


@cached_njit(nogil=True)
def pair_moments(h1, h2, miss, pg, sa, saa, y, n_all, y_sum, y2_sum, i, j):
    """The moments of the pair's regression, each sum taken sample by sample in file order from
    PLINK's starting points (whole-sample totals, per-SNP dosage sums), so that they are the very
    doubles PLINK 1.9 computes: corrections for the samples missing at either SNP, and sum(ab y)
    over the samples carrying A1 at both. Returns the arguments of
    :func:`gboost.stats.qt.linear_from_moments`."""
    W = h1.shape[1]
    one = np.uint64(1)
    n = n_all
    ys = y_sum
    yy = y2_sum
    ya = pg[i]
    yb = pg[j]
    yab = 0.0
    sa_ = sa[i]
    saa_ = saa[i]
    sb_ = sa[j]
    sbb_ = saa[j]
    c11 = c12 = c21 = c22 = 0
    for k in range(W):
        a1 = h1[i, k]
        a2 = h2[i, k]
        b1 = h1[j, k]
        b2 = h2[j, k]
        both = (a1 | a2) & (b1 | b2)
        base = 64 * k
        if both:
            c11, c12, c21, c22, yab = carrier_word(a1, a2, b1, b2, both, base, c11, c12, c21, c22, yab, y, None,
                                                   None, 0)
        mi = miss[i, k]
        mj = miss[j, k]
        w = mi | mj
        while w:
            t = cttz64(w)
            w &= w - one
            v = y[base + t]
            if (mi >> t) & one:
                if (b2 >> t) & one:
                    yb -= 2 * v
                    sb_ -= 2
                    sbb_ -= 4
                elif (b1 >> t) & one:
                    yb -= v
                    sb_ -= 1
                    sbb_ -= 1
            elif (a2 >> t) & one:
                ya -= v
                ya -= v
                sa_ -= 2
                saa_ -= 4
            elif (a1 >> t) & one:
                ya -= v
                sa_ -= 1
                saa_ -= 1
            ys -= v
            yy -= v * v
            n -= 1
    sab = c11 + 2 * (c12 + c21) + 4 * c22
    saab = c11 + 2 * c12 + 4 * c21 + 8 * c22
    sabb = c11 + 4 * c12 + 2 * c21 + 8 * c22
    saabb = c11 + 4 * (c12 + c21) + 16 * c22
    return n, sa_, saa_, sb_, sbb_, sab, saab, sabb, saabb, ys, ya, yb, yab, yy


@cached_njit(nogil=True)
def pair_linear_test(h1, h2, miss, pg, sa, saa, y, n_all, y_sum, y2_sum, i, j):
    """PLINK's linear test of pair (i, j): ``(ok, beta_int, stat, se)``."""
    N, a, aa, b, bb, ab, aab, abb, aabb, ys, ya, yb, yab, yy = pair_moments(h1, h2, miss, pg, sa, saa, y, n_all,
                                                                           y_sum, y2_sum, i, j)
    return linear_from_moments(N, a, aa, b, bb, ab, aab, abb, aabb, ys, ya, yb, yab, yy)


@cached_njit(parallel=True)
def _stat_block(h1, h2, miss, pg, sa, saa, y, n_all, y_sum, y2_sum, i0, i1, zbuf):
    p = h1.shape[0]
    rows = i1 - i0
    # Row r and row rows-1-r together: equal work per iteration (the triangle's rows shrink), so
    # prange's even split of iterations is an even split of pairs.
    for h in nb.prange((rows + 1) // 2):
        hh = np.int64(h)  # (prange's index may be unsigned: mixed with signed it would turn float)
        for m in range(1 if rows - 1 - hh == hh else 2):
            r = hh if m == 0 else rows - 1 - hh
            i = i0 + r
            for j in range(i + 1, p):
                ok, beta, stat, se = pair_linear_test(h1, h2, miss, pg, sa, saa, y, n_all, y_sum, y2_sum, i, j)
                zbuf[r, j] = stat if ok else np.nan


@cached_njit(inline="always")
def df_threshold(thr, df, df_lo):
    """The threshold of a pair's df: ``thr[df - df_lo]``, clamped to the table (one entry: the
    unadjusted test's single threshold)."""
    k = min(max(df - df_lo, 0), thr.shape[0] - 1)
    return thr[k]


@cached_njit(inline="always")
def _fold_row(zbuf, dfbuf, r, c0, c1, thr2, df_lo):
    """Row ``r`` of a STAT buffer (NaN where the pair fails; ``dfbuf`` its df) over its columns
    [c0, c1), every partner after the row's SNP: (N_SIG by the threshold of each pair's df, failed
    pairs, the best STAT, its column: the earliest of the largest, which must exceed 0; -1 none)."""
    sig = 0
    fail = 0
    best = 0.0
    bid = -1
    for c in range(c0, c1):
        z = zbuf[r, c]
        if np.isnan(z):
            fail += 1
            continue
        if z >= df_threshold(thr2, dfbuf[r, c], df_lo):
            sig += 1
        if z > best:
            best = z
            bid = c
    return sig, fail, best, bid


@cached_njit(parallel=True)
def fold_rows(zbuf, dfbuf, i0, i1, thr2, df_lo, n_sig, n_fail, best_after, best_after_id):
    """Row side of a row block (STAT in ``zbuf``, NaN where the pair fails; its df in ``dfbuf``):
    SNP i's partners after it (earliest wins ties; a best must exceed 0), N_SIG by the threshold of
    each pair's df (``thr2``; the unadjusted test: one threshold, :func:`no_dfs`). Both tests' folds
    (gboost/engines/qt_covar.py)."""
    p = zbuf.shape[1]
    for r in nb.prange(i1 - i0):
        i = i0 + r
        sig, fail, best, bid = _fold_row(zbuf, dfbuf, r, i + 1, p, thr2, df_lo)
        n_sig[i] += sig
        n_fail[i] += fail
        best_after[i] = best
        best_after_id[i] = bid


@cached_njit(parallel=True)
def fold_cols(zbuf, dfbuf, i0, i1, thr2, df_lo, n_sig, n_fail, best_before, best_before_id):
    """Column side: SNP j's partners before it, rows in order (earliest wins ties)."""
    p = zbuf.shape[1]
    for j in nb.prange(i0 + 1, p):
        for r in range(min(i1, j) - i0):
            z = zbuf[r, j]
            if np.isnan(z):
                n_fail[j] += 1
                continue
            if z >= df_threshold(thr2, dfbuf[r, j], df_lo):
                n_sig[j] += 1
            if z > best_before[j]:
                best_before[j] = z
                best_before_id[j] = i0 + r


@cached_njit(inline="always")
def kept(z, df, thr1, df_lo, slack, every):
    """Whether PLINK writes a pair of STAT ``z`` (NaN: failed) and df ``df``: at or above the epi1
    threshold of its df less ``slack`` (the adjusted test's re-test then decides), a failed pair
    when ``every`` (``--epi1 1``)."""
    if np.isnan(z):
        return every
    return z >= df_threshold(thr1, df, df_lo) * (1.0 - slack)


def survivors(zbuf, dfbuf, i0, i1, thr1, df_lo, slack, every):
    """(row in block, column) of the pairs of a row block PLINK writes (:func:`kept`), in (i, j)
    order; both tests' (gboost/engines/qt_covar.py)."""
    return kept_pairs(zbuf, dfbuf, i1 - i0, i0 + 1, 1, zbuf.shape[1], thr1, df_lo, slack, every)


@cached_njit(parallel=True)
def retest_pairs(qp_h1, qp_h2, qp_miss, cnt, sy, ty, ty2, pg, sa, saa, y, n_all, y_sum, y2_sum, pi, pj,
                 tables, sums, sumsq, beta, stat, se, ok):
    """Pass 2: the tables and linear tests of the pairs (pi, pj)."""
    for k in nb.prange(pi.shape[0]):
        sumsq[k] = pair_sufficient(qp_h1, qp_h2, qp_miss, cnt, sy, ty, ty2, y2_sum, pi[k], pj[k], tables[k], sums[k])
        ok[k], beta[k], stat[k], se[k] = pair_linear_test(qp_h1, qp_h2, qp_miss, pg, sa, saa, y, n_all, y_sum,
                                                          y2_sum, pi[k], pj[k])


@cached_njit(parallel=True)
def exact_stats(h1, h2, miss, pg, sa, saa, y, n_all, y_sum, y2_sum, pi, pj, ok, stat):
    """PLINK's test of the pairs (pi, pj) in PLINK's order, pass/fail and STAT only (NaN where the
    pair fails): the GPU engine's exact path for the pairs its screen cannot decide."""
    for k in nb.prange(pi.shape[0]):
        good, beta, z, se = pair_linear_test(h1, h2, miss, pg, sa, saa, y, n_all, y_sum, y2_sum, pi[k], pj[k])
        ok[k] = good
        stat[k] = z if good else np.nan


@cached_njit(parallel=True)
def _stat_rect(h1, h2, miss, pg, sa, saa, y, n_all, y_sum, y2_sum, i0, i1, j0, j1, zbuf):
    """Pass 1 on a tile of a candidate-set scan's rectangle (gboost/data/candidates.py): every pair
    of rows [i0, i1) x columns [j0, j1) (all with i < j), in parallel over pairs: such a tile has
    few rows (a set's SNPs, or one row beside its own column) and many columns."""
    C = j1 - j0
    for k in nb.prange((i1 - i0) * C):
        kk = np.int64(k)
        r = kk // C
        c = kk - r * C
        ok, beta, stat, se = pair_linear_test(h1, h2, miss, pg, sa, saa, y, n_all, y_sum, y2_sum, i0 + r, j0 + c)
        zbuf[r, c] = stat if ok else np.nan


@cached_njit(parallel=True)
def fold_rect_rows(zbuf, dfbuf, R, C, j0, thr2, df_lo, n_sig, n_fail, best, best_id):
    """A rectangle tile's rows (``zbuf[:R, :C]``, columns from SNP ``j0``), every partner after the
    row SNP (:func:`_fold_row`)."""
    for r in nb.prange(R):
        sig, fail, b, c = _fold_row(zbuf, dfbuf, r, 0, C, thr2, df_lo)
        n_sig[r] = sig
        n_fail[r] = fail
        best[r] = b
        best_id[r] = j0 + c if c >= 0 else -1


@cached_njit(nogil=True)
def kept_pairs(zbuf, dfbuf, rows, c0, step, c1, thr1, df_lo, slack, every):
    """(row, column) in a STAT buffer of the pairs PLINK writes (:func:`kept`), in (i, j) order:
    row r's columns [c0 + step * r, c1) (a row block of the triangle: the columns after the row's
    SNP; a rectangle tile: all its columns, step 0)."""
    count = 0
    for r in range(rows):
        for c in range(c0 + step * r, c1):
            if kept(zbuf[r, c], dfbuf[r, c], thr1, df_lo, slack, every):
                count += 1
    ri = np.empty(count, np.int64)
    ci = np.empty(count, np.int64)
    count = 0
    for r in range(rows):
        for c in range(c0 + step * r, c1):
            if kept(zbuf[r, c], dfbuf[r, c], thr1, df_lo, slack, every):
                ri[count] = r
                ci[count] = c
                count += 1
    return ri, ci


def no_dfs(shape) -> np.ndarray:
    """A df buffer of the unadjusted test, which has one threshold: zeros, holding no memory."""
    return np.broadcast_to(np.zeros(1, np.int64), shape)


@dataclass
class QTScanCore:
    """What the scan of every pair gives: survivors (i < j, in (i, j) order) and the summary."""

    i: np.ndarray
    j: np.ndarray
    n_sig: np.ndarray
    n_fail: np.ndarray
    best: np.ndarray
    best_partner: np.ndarray  # 0 (PLINK's first scanned SNP) where no partner beats 0
    n_valid: int
    # The summary before PLINK's "0 and the first SNP" where no partner beats 0 (best -inf and
    # partner -1 there): what a --part keeps, so that `gboost merge` merges the parts' partners by
    # tiles.better as one scan does (gboost/pipeline/parts.py)
    partial: Summary | None = None


def pairs_per_snp(p: int, rows: tuple[int, int] | None = None) -> np.ndarray:
    """Each SNP's pairs i < j with SNP1 ``i`` in ``rows`` (default all: p - 1 each)."""
    r0, r1 = rows if rows is not None else (0, p)
    s = np.arange(p, dtype=np.int64)
    return np.where((s >= r0) & (s < r1), p - 1 - s, 0) + np.clip(np.minimum(r1, s) - r0, 0, None)


def tile_pairs_per_snp(tile: Tile) -> tuple[np.ndarray, np.ndarray]:
    """Pairs i < j of ``tile`` of each of its row SNPs and of each of its column SNPs."""
    rows = np.arange(tile.i0, tile.i1, dtype=np.int64)
    cols = np.arange(tile.j0, tile.j1, dtype=np.int64)
    return (np.maximum(0, tile.j1 - np.maximum(tile.j0, rows + 1)),
            np.maximum(0, np.minimum(tile.i1, cols) - tile.i0))


class QTTotals:
    """The tiles of a QT scan finished so far, as the checkpoint records them
    (:class:`gboost.pipeline.tiles.TileResult`, gboost/pipeline/checkpoint.py): the per-SNP summary merged by
    :func:`gboost.pipeline.tiles.better` (PLINK's partner after a SNP, replaced by the one before it only
    when strictly greater, as a total order, so tiles merge in any order),
    the pairs each tile kept, its valid tests. A partial's ``n_tot`` counts the tile's pairs of the
    SNP less those it counted as failed (a GPU tile's undecided pairs count as not failed: the exact
    re-test decides them)."""

    def __init__(self, p: int):
        self.p = p
        self.summary = Summary.empty(p)
        self.pairs = np.zeros(p, np.int64)  # the finished tiles' pairs of each SNP
        self.surv_i: list = []
        self.surv_j: list = []
        self.n_valid = 0
        self.tiles_done: set = set()

    def add(self, res: TileResult) -> None:
        t = res.tile
        if t.index in self.tiles_done:
            return
        self.summary.merge_partial(res.rows)
        self.summary.merge_partial(res.cols)
        rows, cols = tile_pairs_per_snp(t)
        self.pairs[t.i0:t.i1] += rows
        self.pairs[t.j0:t.j1] += cols
        self.surv_i.append(np.asarray(res.surv_i, np.int64))
        self.surv_j.append(np.asarray(res.surv_j, np.int64))
        self.n_valid += res.n_valid
        self.tiles_done.add(t.index)

    def add_recorded(self, res: TileResult, checkpoint) -> None:
        """``res`` into the totals and onto ``checkpoint``'s queue (a Ledger, or None) whole: inside
        errors.interrupts_held, so a Ctrl-C never records half a tile (docs/DESIGN.md §4.8)."""
        with interrupts_held():
            self.add(res)
            if checkpoint is not None:
                checkpoint.record(res)

    @property
    def n_fail(self) -> np.ndarray:
        return self.pairs - self.summary.n_tot

    def survivors(self) -> tuple[np.ndarray, np.ndarray]:
        """The kept pairs in (i, j) order (replayed and new tiles come in any order)."""
        i = np.concatenate(self.surv_i) if self.surv_i else np.zeros(0, np.int64)
        j = np.concatenate(self.surv_j) if self.surv_j else np.zeros(0, np.int64)
        order = np.lexsort((j, i))
        return i[order], j[order]


def plink_best(summary: Summary, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """PLINK's BEST and its partner: 0 and the first scanned SNP where no partner beats 0 (``first``:
    a candidate-set scan's first column, gboost/outputs/results.py summary_span)."""
    none = summary.best_partner < 0
    return np.where(none, 0.0, summary.best), np.where(none, first, summary.best_partner).astype(np.int64)


def with_checkpoint(ledger, tiles: list, tile_edge: int, totals: QTTotals) -> None:
    """Pin ``ledger`` (a :class:`gboost.pipeline.checkpoint.Ledger`, or None) to the plan and take up the
    tiles an interrupted run recorded."""
    if ledger is None:
        return
    ledger.start(tile=tile_edge, tiles=len(tiles))
    ledger.plan(tiles)
    for res in ledger.replay():
        totals.add(res)


_LEDGER_TILES = 256  # row tiles of a scan at most (STAT buffers grouped): see QTCPUEngine.plan


class QTCPUEngine:
    """All pairs of a QT study on the CPU (see the module notes)."""

    name = "cpu"

    def __init__(self, threads: int | None = None):
        self.threads = threads or os.cpu_count() or 1

    def describe(self) -> str:
        return f"CPU (numba, {min(self.threads, nb.config.NUMBA_NUM_THREADS)} threads)"

    def close(self) -> None:
        """Nothing held between scans (the GPU engine's dosages are; one way to end either engine)."""

    @staticmethod
    def _block(p: int) -> int:
        return max(1, min(p, _ZBUF_BYTES // (8 * max(p, 1))))


    def checkpoint_plan(self, rows: tuple[int, int] | None = None, rect: bool = False) -> dict:
        """What a checkpoint of this engine pins besides the study and thresholds: its row blocks,
        or a candidate-set scan's rectangle tiles (``rect``)."""
        if rect:
            return {"engine": "qt-cpu-rect", "tile": RECT_TILE, "rows": list(rows) if rows else None}
        return {"engine": "qt-cpu-rows", "rows": list(rows) if rows else None}

    def plan(self, p: int, rows: tuple[int, int] | None = None) -> tuple[int, list[Tile]]:
        """(rows per tile, the tiles): row blocks of whole STAT buffers, grouped into at most
        ``_LEDGER_TILES`` tiles. A tile's checkpoint record carries its column SNPs' counts and
        partners (20 bytes for every SNP after its first row), so one record per buffer (16 rows
        at 500k SNPs) would write the summary 31,000 times over, 300 GB; grouped, the ledger holds
        it at most 256 times (2.5 GB at 500k SNPs, 50 MB at 10k) and a kill loses at most one
        tile's work, 1/256 of the rows."""
        r0, r1 = rows if rows is not None else (0, p)
        block = self._block(p)
        edge = block * max(1, -(-p // (_LEDGER_TILES * block)))
        return edge, [Tile(k, i0, min(r1, i0 + edge), i0, p) for k, i0 in enumerate(range(r0, r1, edge))]

    def scan(self, study: Study, alpha1: float, alpha2: float, progress=None, cancel=None,
             rows: tuple[int, int] | None = None, checkpoint=None) -> tuple[QTScanCore, QTPlanes]:
        """Every pair i < j with SNP1 ``i`` in ``rows`` (default all: a --part scans a share).
        ``checkpoint`` (gboost.pipeline.checkpoint.Ledger): an interrupted run's finished tiles are taken
        from it, and each finished tile is recorded in it."""
        nb.set_num_threads(min(self.threads, nb.config.NUMBA_NUM_THREADS))
        qp = qt_planes(study)
        # (one df, one threshold; every failed pair is a row of --epi1 1, whose threshold is 0)
        job = TileJob(LINEAR_KERNELS, qp.scan_args(), study.n_snps, np.array([alpha1]), np.array([alpha2]), 0, 0.0,
                      alpha1 == 0.0, with_df=False)
        if study.rect is not None:  # a candidate-set scan (gboost/data/candidates.py)
            return self.scan_rect(study, job, progress, cancel, rows, checkpoint), qp
        return self.scan_tiles(study.n_snps, job, progress, cancel, rows, checkpoint), qp

    def scan_tiles(self, p: int, job: "TileJob", progress, cancel, rows, checkpoint) -> QTScanCore:
        """The row tiles of a scan (:meth:`plan`), each by ``job`` (:func:`tile_work`: the row
        blocks' statistics, folds and survivors of the job's test), into the totals and the
        checkpoint whole tile by whole tile (the covariate-adjusted scan, gboost/engines/qt_covar.py,
        brings its own job)."""
        edge, tiles = self.plan(p, rows)
        totals = QTTotals(p)
        with_checkpoint(checkpoint, tiles, edge, totals)
        job.block_rows = self._block(p)
        total = self.run_tiles(tiles, totals, job, progress, cancel, checkpoint)
        return core_of(totals, pairs_per_snp(p, rows), total)

    def scan_rect(self, study: Study, job: "TileJob", progress, cancel, rows, checkpoint) -> QTScanCore:
        """The tiles of a candidate-set scan's rectangle (:func:`gboost.pipeline.tiles.plan_rect_tiles`,
        the case-control scan's plan: each row's own column left out), rows of ``rows`` (default
        all), each by ``job`` (:func:`tile_work`; its TileResult has the rows' partial only: a
        rectangle's summary is its rows'), into the totals and the checkpoint whole tile by whole
        tile (the covariate-adjusted scan, gboost/engines/qt_covar.py, brings its own job)."""
        rect, p = study.rect, study.n_snps
        tiles = plan_rect_tiles(rect.n_rows, p, rect.self_columns(), RECT_TILE, rows)
        totals = QTTotals(p)
        with_checkpoint(checkpoint, tiles, RECT_TILE, totals)
        job.rect_shape = rect_shape(rect)
        total = self.run_tiles(tiles, totals, job, progress, cancel, checkpoint)
        return rect_core(totals, rect, rows, total)

    def run_tiles(self, tiles: list, totals: "QTTotals", job: "TileJob", progress, cancel, checkpoint) -> int:
        """Every tile of ``tiles`` not yet in ``totals``, here, in order (:func:`run_tiles`); the
        Dask engine (gboost/engines/qt_distributed.py) runs them as tasks instead."""
        def work(tile: Tile, done: int, total: int) -> TileResult:
            return tile_work(job, tile, cancel, progress, done, total)

        return run_tiles(tiles, totals, work, progress, checkpoint)


# The statistic kernels of a test's tiles, by (module, row-block kernel, rectangle kernel): a job
# names them, so that it pickles (a Dask task's) and the adjusted test's module is imported only
# where its tiles run.
LINEAR_KERNELS = ("gboost.engines.qt_cpu", "_stat_block", "_stat_rect")


@dataclass
class TileJob:
    """What each tile of a QT scan needs besides the tile (:func:`tile_work`): the test's kernels
    (their module and names) and arguments, the thresholds of rows (``thr1``) and N_SIG (``thr2``)
    by df from ``df_lo``, the survivors' slack and whether every pair is kept (``every``); with
    ``with_df`` the kernels write each pair's df (the adjusted test), else it has one df. The STAT
    buffers are made where the tile runs, once per process, and never pickled."""

    kernels: tuple
    args: tuple
    p: int
    thr1: np.ndarray
    thr2: np.ndarray
    df_lo: int
    slack: float
    every: bool
    with_df: bool = True
    block_rows: int = 1  # rows of a triangle tile's STAT buffer (QTCPUEngine._block)
    rect_shape: tuple | None = None  # a rectangle tile's STAT buffer

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_bufs", None)
        return state

    def buffers(self, rect: bool):
        """(STAT buffer, df buffer) of a triangle row block or a rectangle tile, made on first use
        by each thread (a Dask worker may run several of the job's tiles at once)."""
        bufs = self.__dict__.setdefault("_bufs", {})
        key = (rect, threading.get_ident())
        if key not in bufs:
            shape = self.rect_shape if rect else (self.block_rows, self.p)
            z = np.empty(shape)
            bufs[key] = (z, np.empty(shape, np.int64) if self.with_df else no_dfs(shape))
        return bufs[key]

    def kernel(self, rect: bool):
        import importlib

        module, block, rectangle = self.kernels
        return getattr(importlib.import_module(module), rectangle if rect else block)


def tile_work(job: TileJob, tile: Tile, cancel=None, progress=None, done: int = 0, total: int = 0) -> TileResult:
    """One tile of a QT scan by ``job``: a rectangle's tile (a job with ``rect_shape``) in one kernel call, a
    triangle row tile row block by row block (``cancel()`` asked between blocks; ``progress(done +
    pairs so far, total)`` after each but the last). The tile's counts and partners are its own,
    merged by the caller when it is whole: what the checkpoint records is whole tiles."""
    p = job.p
    rect = job.rect_shape is not None
    stat = job.kernel(rect)
    zbuf, dfbuf = job.buffers(rect)
    if rect:
        stop_if_cancelled(cancel)
        if job.with_df:
            stat(*job.args, tile.i0, tile.i1, tile.j0, tile.j1, zbuf, dfbuf)
        else:
            stat(*job.args, tile.i0, tile.i1, tile.j0, tile.j1, zbuf)
        return rect_tile_result(tile, zbuf, dfbuf, job.thr1, job.thr2, job.df_lo, job.slack, job.every)
    n_sig_r, n_fail_r = np.zeros(p, np.int64), np.zeros(p, np.int64)
    n_sig_c, n_fail_c = np.zeros(p, np.int64), np.zeros(p, np.int64)
    best_after, after_id = np.zeros(p), np.full(p, -1, np.int64)
    best_before, before_id = np.zeros(p), np.full(p, -1, np.int64)
    si, sj = [], []
    step = job.block_rows
    for i0 in range(tile.i0, tile.i1, step):
        stop_if_cancelled(cancel)
        i1 = min(tile.i1, i0 + step)
        # The block's statistics (most of its time) change none of the totals: a Ctrl-C then,
        # raised as the kernel returns, leaves the finished tiles recorded.
        if job.with_df:
            stat(*job.args, i0, i1, zbuf, dfbuf)
        else:
            stat(*job.args, i0, i1, zbuf)
        fold_rows(zbuf, dfbuf, i0, i1, job.thr2, job.df_lo, n_sig_r, n_fail_r, best_after, after_id)
        fold_cols(zbuf, dfbuf, i0, i1, job.thr2, job.df_lo, n_sig_c, n_fail_c, best_before, before_id)
        r, c = survivors(zbuf, dfbuf, i0, i1, job.thr1, job.df_lo, job.slack, job.every)
        si.append(r + i0)
        sj.append(c)
        if progress is not None and i1 < tile.i1:
            progress(done + sum(p - 1 - i for i in range(tile.i0, i1)), total)
    rows_pairs, cols_pairs = tile_pairs_per_snp(tile)
    a, b = tile.i0, tile.i1
    ki, kj = np.concatenate(si), np.concatenate(sj)
    # (a QT tile's kept pairs carry no screen value or table: they are re-tested)
    return TileResult(tile, ki, kj, np.zeros(len(ki)), no_tables(len(ki)),
                      int(tile.n_pairs - n_fail_r[a:b].sum()),
                      SummaryPartial(a, n_sig_r[a:b], rows_pairs - n_fail_r[a:b],
                                     _no_best(best_after[a:b], after_id[a:b]), after_id[a:b]),
                      SummaryPartial(a, n_sig_c[a:], cols_pairs - n_fail_c[a:],
                                     _no_best(best_before[a:], before_id[a:]), before_id[a:]))


def run_tiles(tiles: list, totals: QTTotals, work, progress, checkpoint) -> int:
    """Each tile of ``tiles`` not yet in ``totals`` by ``work(tile, done, total)`` -> its
    TileResult (``done`` of ``total`` pairs finished before it: progress within a tile), into the
    totals and the checkpoint whole tile by whole tile, ``progress(done, total)`` after each; the
    checkpoint flushed at the end, whatever ended it (--resume goes on from the finished tiles).
    Returns the plan's pairs."""
    total = sum(t.n_pairs for t in tiles)
    done = sum(t.n_pairs for t in tiles if t.index in totals.tiles_done)
    try:
        for tile in tiles:
            if tile.index in totals.tiles_done:
                continue
            totals.add_recorded(work(tile, done, total), checkpoint)
            done += tile.n_pairs
            if progress is not None:
                progress(done, total)
    finally:
        if checkpoint is not None:
            checkpoint.flush()  # the finished tiles on disk: --resume goes on from them
    return total


def stop_if_cancelled(cancel) -> None:
    """Raise :class:`gboost.errors.ScanCancelled` when ``cancel()`` (None: never) is true: asked
    between row blocks and tiles, never inside one."""
    if cancel is not None and cancel():
        from gboost.errors import ScanCancelled

        raise ScanCancelled()


def rect_shape(rect) -> tuple[int, int]:
    """The shape of a rectangle's tiles' STAT buffer (at most RECT_TILE SNPs a side)."""
    return max(1, min(RECT_TILE, rect.n_rows)), max(1, min(RECT_TILE, rect.n_cols))


def rect_tile_result(tile: Tile, zbuf, dfbuf, thr1, thr2, df_lo: int, slack: float, every: bool) -> TileResult:
    """A rectangle tile's outcome from its STAT (``zbuf``) and df (``dfbuf``) buffers: its rows'
    counts and best partners by the thresholds of each pair's df (:func:`fold_rect_rows`), the
    pairs it keeps (:func:`kept_pairs`). Its columns' partial is empty: a rectangle's summary
    counts its rows only."""
    R, C = tile.i1 - tile.i0, tile.j1 - tile.j0
    n_sig, n_fail = np.zeros(R, np.int64), np.zeros(R, np.int64)
    best, partner = np.zeros(R), np.full(R, -1, np.int64)
    fold_rect_rows(zbuf, dfbuf, R, C, tile.j0, thr2, df_lo, n_sig, n_fail, best, partner)
    r, c = kept_pairs(zbuf, dfbuf, R, 0, 0, C, thr1, df_lo, slack, every)
    # (a QT tile's kept pairs carry no screen value or table: they are re-tested)
    return TileResult(tile, r + tile.i0, c + tile.j0, np.zeros(len(r)), no_tables(len(r)),
                      int(tile.n_pairs - n_fail.sum()),
                      SummaryPartial(tile.i0, n_sig, C - n_fail, _no_best(best, partner), partner),
                      SummaryPartial.empty(tile.j0, 0))


def rect_core(totals: QTTotals, rect, rows, total: int) -> QTScanCore:
    """A rectangle scan's core from its finished tiles (its rows' summary; the columns' entries
    are 0): the partner named where none beats 0 is the first column, as PLINK names it."""
    s = totals.summary
    n_fail = rect.row_pairs(rows) - s.n_tot
    n_fail[rect.n_rows:] = 0
    best, partner = plink_best(s, first=rect.n_rows)
    i, j = totals.survivors()
    return QTScanCore(i, j, s.n_sig.copy(), n_fail, best, partner, total - int(n_fail.sum()), s.copy())


def no_tables(m: int) -> np.ndarray:
    """A QT tile's (m, 3, 3, 2) tables: zeros, as a view that holds no memory (with --epi1 1 every
    pair is kept; its table, if wanted, comes from the re-test)."""
    return np.broadcast_to(np.zeros((1, 3, 3, 2), np.int64), (m, 3, 3, 2))


def _no_best(best: np.ndarray, partner: np.ndarray) -> np.ndarray:
    """A partial's best: -inf where no partner beat 0 (tiles.SummaryPartial's "none")."""
    return np.where(partner < 0, -np.inf, best)


def core_of(totals: QTTotals, pairs: np.ndarray, total: int) -> QTScanCore:
    """The scan's core from its finished tiles: ``pairs`` each SNP's pairs in the scan, ``total``
    the scan's pairs."""
    s = totals.summary
    n_fail = pairs - s.n_tot
    best, partner = plink_best(s)
    i, j = totals.survivors()
    return QTScanCore(i, j, s.n_sig.copy(), n_fail, best, partner, total - int(n_fail.sum()) // 2, s.copy())
