"""CPU engine of the quantitative-trait scan: every pair's 3x3 table of counts and trait sums from
the bit planes, PLINK's linear test, survivors and the per-SNP summary (numba, all cores).

Planes per SNP, by dosage d = copies of PLINK's A1 (the founders' minor allele; the .bim's A1
unless ``study.a1_flip``): H1 (het), H2 (hom A1) and M (missing call). With C = H1 | H2 (carries
A1), a pair's table needs only sparse work:

* cells (a, b) with a, b in {1, 2}: counts by AND+popcount, trait sums over C_i & C_j,
  H2_i & C_j, C_i & H2_j and H2_i & H2_j combined;
* the samples missing at one SNP and called at the other, by dosage at the called one
  (1 % of the words hold any): they turn per-SNP dosage totals into the pair's margins;
* the cells with a 0 dosage by subtraction from those margins, and sum(y^2) of the table as the
  total less the samples missing at either SNP.

Sums over a word's set bits use a table of the trait's partial sums per byte pattern
(``T[8 * word + byte, pattern]``, 2 KiB per 8 samples: 1.3 MB at 5,000 samples, in L2), so a word
costs 8 loads whatever its bits. Everything is float64: sums of the trait are exact up to
rounding of the additions (the GPU engine may use other arithmetic; docs/qt_epistasis.md §4).

Pass 1 writes each pair's STAT (NaN for a pair PLINK fails) into a block of rows x all columns;
the block's survivors (STAT >= the epi1 threshold, or failed pairs when that threshold is 0) are
re-tested one by one (pass 2, with beta and SE), and the block folds into the per-SNP summary.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numba as nb
import numpy as np

from gboost.stats.qt import linear_pair_test
from gboost.stats.table import popcount64
from gboost.study import Study

_ZBUF_BYTES = 64 << 20  # STAT buffer of one row block


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
    y_sum: float
    y2_sum: float


def qt_planes(study: Study) -> QTPlanes:
    """Dosage planes, per-SNP totals and byte tables of a QT study."""
    y = np.asarray(study.trait, dtype=np.float64)
    n = len(y)
    planes = study.planes
    p, _, W = planes.shape
    flip = np.asarray(study.a1_flip, dtype=bool) if study.a1_flip is not None else np.zeros(p, bool)
    # type t = copies of the .bim's A1; PLINK's dosage is t, or 2 - t where its A1 is the .bim's A2
    h2 = np.where(flip[:, None], planes[:, 0, :], planes[:, 2, :])
    h0 = np.where(flip[:, None], planes[:, 2, :], planes[:, 0, :])
    h1 = np.ascontiguousarray(planes[:, 1, :])
    valid = _valid_words(n, W)
    miss = np.ascontiguousarray(valid[None, :] & ~(planes[:, 0, :] | planes[:, 1, :] | planes[:, 2, :]))
    ty = _byte_table(y, W)
    ty2 = _byte_table(y * y, W)
    cnt = np.empty((p, 3), np.int64)
    sy = np.empty((p, 3), np.float64)
    for d, plane in enumerate((h0, h1, h2)):
        cnt[:, d], sy[:, d] = _plane_totals(np.ascontiguousarray(plane), ty)
    return QTPlanes(h1, np.ascontiguousarray(h2), miss, cnt, sy, ty, ty2, n, float(y.sum()), float((y * y).sum()))


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


@nb.njit(cache=True, inline="always")
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


@nb.njit(cache=True, parallel=True)
def _plane_totals(plane, ty):
    p, W = plane.shape
    c = np.zeros(p, np.int64)
    s = np.zeros(p, np.float64)
    for i in nb.prange(p):
        ci = 0
        si = 0.0
        for k in range(W):
            w = plane[i, k]
            if w:
                ci += popcount64(w)
                si += _wsum(ty, k, w)
        c[i] = ci
        s[i] = si
    return c, s


@nb.njit(cache=True, nogil=True)
def pair_sufficient(h1, h2, miss, cnt, sy, ty, ty2, y2_sum, i, j, n, s):
    """Fill the pair's table ``n`` (3x3 counts) and ``s`` (trait sums); return sum y^2 of it."""
    W = h1.shape[1]
    n11 = n12 = n21 = n22 = 0
    s_cc = s_2c = s_c2 = s_22 = 0.0
    # samples missing at j, called at i, by dosage at i (and the converse); y^2 of any missing
    rn = np.zeros(3, np.int64)
    rs = np.zeros(3)
    cn = np.zeros(3, np.int64)
    cs = np.zeros(3)
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
                x1 = only_j & a1
                x2 = only_j & a2
                x0 = only_j & ~(a1 | a2)
                for d, x in ((0, x0), (1, x1), (2, x2)):
                    if x:
                        rn[d] += popcount64(x)
                        rs[d] += _wsum(ty, k, x)
            only_i = mi & ~mj  # called at j
            if only_i:
                x1 = only_i & b1
                x2 = only_i & b2
                x0 = only_i & ~(b1 | b2)
                for d, x in ((0, x0), (1, x1), (2, x2)):
                    if x:
                        cn[d] += popcount64(x)
                        cs[d] += _wsum(ty, k, x)
    n[1, 1] = n11
    n[1, 2] = n12
    n[2, 1] = n21
    n[2, 2] = n22
    s[2, 2] = s_22
    s[2, 1] = s_2c - s_22
    s[1, 2] = s_c2 - s_22
    s[1, 1] = s_cc - s_2c - s[1, 2]
    # margins of the pair's table: dosage totals less the samples missing at the other SNP
    for a in (1, 2):
        n[a, 0] = cnt[i, a] - rn[a] - n[a, 1] - n[a, 2]
        s[a, 0] = sy[i, a] - rs[a] - s[a, 1] - s[a, 2]
    for b in (1, 2):
        n[0, b] = cnt[j, b] - cn[b] - n[1, b] - n[2, b]
        s[0, b] = sy[j, b] - cs[b] - s[1, b] - s[2, b]
    n[0, 0] = cnt[i, 0] - rn[0] - n[0, 1] - n[0, 2]
    s[0, 0] = sy[i, 0] - rs[0] - s[0, 1] - s[0, 2]
    return y2_sum - q_miss


@nb.njit(cache=True, parallel=True)
def _stat_block(h1, h2, miss, cnt, sy, ty, ty2, y2_sum, i0, i1, zbuf):
    p = h1.shape[0]
    for r in nb.prange(i1 - i0):
        i = i0 + r
        n = np.zeros((3, 3), np.int64)
        s = np.zeros((3, 3))
        for j in range(i + 1, p):
            q = pair_sufficient(h1, h2, miss, cnt, sy, ty, ty2, y2_sum, i, j, n, s)
            ok, beta, stat, se = linear_pair_test(n, s, q)
            zbuf[r, j] = stat if ok else np.nan


@nb.njit(cache=True, parallel=True)
def _fold_rows(zbuf, i0, i1, alpha2, n_sig, n_fail, best_after, best_after_id):
    """Row side: SNP i's partners after it (earliest wins ties; a best must exceed 0)."""
    p = zbuf.shape[1]
    for r in nb.prange(i1 - i0):
        i = i0 + r
        sig = 0
        fail = 0
        best = 0.0
        bid = -1
        for j in range(i + 1, p):
            z = zbuf[r, j]
            if np.isnan(z):
                fail += 1
                continue
            if z >= alpha2:
                sig += 1
            if z > best:
                best = z
                bid = j
        n_sig[i] += sig
        n_fail[i] += fail
        best_after[i] = best
        best_after_id[i] = bid


@nb.njit(cache=True, parallel=True)
def _fold_cols(zbuf, i0, i1, alpha2, n_sig, n_fail, best_before, best_before_id):
    """Column side: SNP j's partners before it, rows in order (earliest wins ties)."""
    p = zbuf.shape[1]
    for j in nb.prange(i0 + 1, p):
        for r in range(min(i1, j) - i0):
            z = zbuf[r, j]
            if np.isnan(z):
                n_fail[j] += 1
                continue
            if z >= alpha2:
                n_sig[j] += 1
            if z > best_before[j]:
                best_before[j] = z
                best_before_id[j] = i0 + r


@nb.njit(cache=True, parallel=True)
def retest_pairs(h1, h2, miss, cnt, sy, ty, ty2, y2_sum, pi, pj, tables, sums, sumsq, beta, stat, se, ok):
    """Pass 2: the tables and linear tests of the pairs (pi, pj)."""
    for k in nb.prange(pi.shape[0]):
        n = np.zeros((3, 3), np.int64)
        s = np.zeros((3, 3))
        q = pair_sufficient(h1, h2, miss, cnt, sy, ty, ty2, y2_sum, pi[k], pj[k], n, s)
        tables[k] = n
        sums[k] = s
        sumsq[k] = q
        ok[k], beta[k], stat[k], se[k] = linear_pair_test(n, s, q)


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


class QTCPUEngine:
    """All pairs of a QT study on the CPU (see the module notes)."""

    name = "cpu"

    def __init__(self, threads: int | None = None):
        self.threads = threads or os.cpu_count() or 1

    def describe(self) -> str:
        return f"CPU (numba, {min(self.threads, nb.config.NUMBA_NUM_THREADS)} threads)"

    def scan(self, study: Study, alpha1: float, alpha2: float, progress=None, cancel=None) -> tuple[QTScanCore, QTPlanes]:
        nb.set_num_threads(min(self.threads, nb.config.NUMBA_NUM_THREADS))
        qp = qt_planes(study)
        p = study.n_snps
        n_sig = np.zeros(p, np.int64)
        n_fail = np.zeros(p, np.int64)
        best_after = np.zeros(p)
        best_after_id = np.full(p, -1, np.int64)
        best_before = np.zeros(p)
        best_before_id = np.full(p, -1, np.int64)
        rows = max(1, min(p, _ZBUF_BYTES // (8 * max(p, 1))))
        zbuf = np.empty((rows, p))
        si, sj = [], []
        total = p * (p - 1) // 2
        done = 0
        for i0 in range(0, p, rows):
            if cancel is not None and cancel():
                from gboost.errors import ScanCancelled

                raise ScanCancelled()
            i1 = min(p, i0 + rows)
            _stat_block(qp.h1, qp.h2, qp.miss, qp.cnt, qp.sy, qp.ty, qp.ty2, qp.y2_sum, i0, i1, zbuf)
            _fold_rows(zbuf, i0, i1, alpha2, n_sig, n_fail, best_after, best_after_id)
            _fold_cols(zbuf, i0, i1, alpha2, n_sig, n_fail, best_before, best_before_id)
            r, c = survivors(zbuf, i0, i1, alpha1)
            si.append(r + i0)
            sj.append(c)
            done += sum(p - 1 - i for i in range(i0, i1))
            if progress is not None:
                progress(done, total)
        best, partner = combine_best(best_after, best_after_id, best_before, best_before_id)
        n_valid = total - int(n_fail.sum()) // 2
        i = np.concatenate(si) if si else np.zeros(0, np.int64)
        j = np.concatenate(sj) if sj else np.zeros(0, np.int64)
        return QTScanCore(i.astype(np.int64), j.astype(np.int64), n_sig, n_fail, best, partner, n_valid), qp


def survivors(zbuf, i0, i1, alpha1):
    """(row in block, column) of the pairs PLINK writes: STAT >= the epi1 threshold, and failed
    pairs too when that threshold is 0 (``--epi1 1``), in (i, j) order."""
    p = zbuf.shape[1]
    rows = i1 - i0
    z = zbuf[:rows]
    upper = np.arange(p)[None, :] > (i0 + np.arange(rows))[:, None]
    with np.errstate(invalid="ignore"):
        keep = z >= alpha1
    if alpha1 == 0.0:
        keep |= np.isnan(z)
    keep &= upper
    r, c = np.nonzero(keep)
    return r.astype(np.int64), c.astype(np.int64)


def combine_best(best_after, after_id, best_before, before_id):
    """PLINK's BEST: the partner after the SNP (if > 0), replaced by the one before only when
    strictly greater; 0 and the first scanned SNP where no partner beats 0."""
    best = np.zeros(len(best_after))
    partner = np.zeros(len(best_after), np.int64)
    take = (after_id >= 0) & (best_after > best)
    best[take], partner[take] = best_after[take], after_id[take]
    take = (before_id >= 0) & (best_before > best)
    best[take], partner[take] = best_before[take], before_id[take]
    return best, partner
