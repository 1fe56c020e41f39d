"""The quantitative-trait screen's tile math, written against an array module ``xp``: numpy in the
CPU tests, CuPy in the GPU engine (gboost/engines/qt_gpu.py), and symbols in the fused kernel's
tracer (gboost/engines/qt_fused.py), which runs :func:`linear_screen` once to write it as C.

Per tile of SNP pairs (rows I x columns J) the moments of ``y ~ 1 + a + b + ab`` over the samples
called at both SNPs come from two float64 matrix products (``xp.matmul``), with C the called mask,
D the dosage and D2 its square (0/1, 0/1/2, 0/1/4 per sample):

    [C; D; D2]_I      @ [C; D; D2]_J.T  ->  N, sb, sbb / sa, sab, sabb / saa, saab, saabb
    [Cy; Dy; C y^2]_I @ [C; D]_J.T      ->  y, yb / ya, yab / yy

The nine integer moments are exact (integers below 2^53, whatever the summation order); the five
trait sums are not PLINK's doubles (another summation order). :func:`linear_screen` then evaluates
PLINK's test (:func:`gboost.stats.qt.linear_from_moments`) operation for operation, one IEEE
operation per array operation, so everything computed from the integer moments alone (checks 1-5
of docs/qt_epistasis.md §3 and the cofactor inverse) is the CPU's double bit for bit; only the
tail (beta, RSS, sigma, STAT, check 6) sees the trait sums, and a running error bound through that
tail gives each pair a margin with |STAT_gpu - STAT_cpu| <= margin.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gboost.stats.qt import DET_EPSILON, VIF_THRESH, cofactors4

U = 2.0**-53  # unit roundoff of float64 (round to nearest)
RSS_DEPTH = 12  # roundings along any path of PLINK's expanded RSS (9 counted; docs/qt_epistasis.md §4)


def gamma(m: float) -> float:
    """Higham's gamma_m = m u / (1 - m u): a sum of products evaluated with at most m roundings
    along each term's path is off by at most gamma_m times the sum of the terms' magnitudes."""
    return m * U / (1.0 - m * U)


@dataclass(frozen=True)
class TraitSumErrors:
    """Bounds on |computed - exact| of the five trait sums, valid for PLINK's order (the CPU) and for
    any order a GEMM takes: each is a sum of at most 3 n + 4 rounded terms (PLINK starts from
    whole-sample totals and subtracts the samples missing at either SNP, a homozygote's y twice),
    whose magnitudes add up to at most 2 sum|y| (y), 4 sum|y| (a y, b y, ab y) or 2 sum y^2."""

    y: float
    ay: float
    yy: float

    @classmethod
    def of(cls, trait: np.ndarray) -> "TraitSumErrors":
        y = np.asarray(trait, np.float64)
        g = gamma(3 * len(y) + 4)
        s1 = float(np.abs(y).sum()) * (1 + 1e-12)  # the sums themselves rounded up
        s2 = float((y * y).sum()) * (1 + 1e-12)
        return cls(g * 2 * s1, g * 4 * s1, g * 2 * s2)


# --- the tile math, against an array module -----------------------------------------------------

def dosage_operands(xp, g, y):
    """Float64 operands of the products from dosages ``g`` (int8, -1 missing): ``(C, D, D2)`` and
    the trait-weighted ``(C y, D y, C y^2)``."""
    c = (g >= 0).astype(xp.float64)
    d = xp.maximum(g, 0).astype(xp.float64)
    d2 = d * d
    y2 = y * y
    return (c, d, d2), (c * y, d * y, c * y2)


def tile_moments(xp, gi, gj, y):
    """The 14 moments of every pair (i in rows, j in columns): two GEMMs (see the module notes).
    Returns ``(N, sa, saa, sb, sbb, sab, saab, sabb, saabb, ys, ya, yb, yab, yy)``, each (R, C)."""
    (ci, di, d2i), (cyi, dyi, y2i) = dosage_operands(xp, gi, y)
    cj = (gj >= 0).astype(xp.float64)
    dj = xp.maximum(gj, 0).astype(xp.float64)
    d2j = dj * dj
    R, C = gi.shape[0], gj.shape[0]
    p1 = xp.matmul(xp.concatenate([ci, di, d2i]), xp.concatenate([cj, dj, d2j]).T)
    p2 = xp.matmul(xp.concatenate([cyi, dyi, y2i]), xp.concatenate([cj, dj]).T)

    def blk(m, r, c):
        return m[r * R:(r + 1) * R, c * C:(c + 1) * C]

    return (blk(p1, 0, 0), blk(p1, 1, 0), blk(p1, 2, 0), blk(p1, 0, 1), blk(p1, 0, 2), blk(p1, 1, 1),
            blk(p1, 2, 1), blk(p1, 1, 2), blk(p1, 2, 2),
            blk(p2, 0, 0), blk(p2, 1, 0), blk(p2, 0, 1), blk(p2, 1, 1), blk(p2, 2, 0))


def linear_screen(xp, mom, errs: TraitSumErrors):
    """PLINK's linear test of every pair of a tile from its moments, with a margin per pair.

    Returns ``(stat, ok, margin, unsure)`` (each (R, C)): ``stat`` NaN where ``ok`` is False;
    ``|stat - STAT_cpu| <= margin`` wherever ``ok`` and not ``unsure``; ``unsure`` where the pass/
    fail decision itself may differ from the CPU's (check 6 within its margin, or a bound that is
    not finite). Checks 1-5 and the inverse are the operations of
    :func:`gboost.stats.qt.linear_from_moments` in its order, on the exact integer moments: the same
    doubles on every IEEE machine, so their decisions are the CPU's (no margin needed).
    """
    N, sa, saa, sb, sbb, sab, saab, sabb, saabb, y, ya, yb, yab, yy = mom
    n = N
    rn = 1.0 / n
    rn1 = 1.0 / (N - 1.0)
    fa, fb, fab = sa, sb, sab
    mb = fb * rn
    mab = fab * rn
    va = saa - fa * fa * rn
    vb = sbb - fb * mb
    vab = saabb - fab * mab
    fail = (N <= 4) | (va <= 0.0) | (vb <= 0.0) | (vab <= 0.0)
    ia = 1.0 / xp.sqrt(va * rn1)
    ib = 1.0 / xp.sqrt(vb * rn1)
    iab = 1.0 / xp.sqrt(vab * rn1)
    r12 = (fab - fa * mb) * rn1
    r23 = (sabb - fb * mab) * rn1
    r13 = (saab - fa * mab) * rn1
    r12 = r12 * (ia * ib)
    r13 = r13 * (ia * iab)
    r23 = r23 * (ib * iab)
    fail |= (r12 > 0.999) | (r13 > 0.999) | (r23 > 0.999)
    q12 = r12 * r12
    q13 = r13 * r13
    q23 = r23 * r23
    det = 1 + 2 * r12 * r13 * r23 - q12 - q13 - q23
    fail |= xp.abs(det) < DET_EPSILON
    lim = 1 - VIF_THRESH * det
    fail |= ((det > 0) & ((lim > q12) | (lim > q13) | (lim > q23))) | \
        ((det < 0) & ((lim < q12) | (lim < q13) | (lim < q23)))
    inv = _adjugate_inverse(xp, n, fa, fb, fab, saa, fab, saab, sbb, sabb, saabb)
    fail |= inv[0]
    i00, i01, i02, i03, i11, i12, i13, i22, i23, i33 = inv[1:]
    r0, r1, r2, r3 = xp.sqrt(i00), xp.sqrt(i11), xp.sqrt(i22), xp.sqrt(i33)
    fail |= ((i01 > 0.99999 * r1 * r0) | (i02 > 0.99999 * r2 * r0) | (i12 > 0.99999 * r2 * r1)
             | (i03 > 0.99999 * r3 * r0) | (i13 > 0.99999 * r3 * r1) | (i23 > 0.99999 * r3 * r2))
    min_sigma = xp.maximum(i11, i22)
    min_sigma = xp.where(i33 > min_sigma, i33, min_sigma)
    min_sigma = 1e-20 / min_sigma
    b0 = y * i00 + ya * i01 + yb * i02 + yab * i03
    b1 = y * i01 + ya * i11 + yb * i12 + yab * i13
    b2 = y * i02 + ya * i12 + yb * i22 + yab * i23
    b3 = y * i03 + ya * i13 + yb * i23 + yab * i33
    rss = (b0 * b0 * n + b1 * b1 * saa + b2 * b2 * sbb + b3 * b3 * saabb + yy
           + 2 * (b0 * (b1 * fa + b2 * fb + b3 * fab - y)
                  + b1 * (b2 * fab + b3 * saab - ya)
                  + b2 * (b3 * sabb - yb)
                  - b3 * yab))
    dof = N - 4.0
    sigma = rss / dof
    var = i33 * sigma
    num = b3 * b3
    stat = num / var

    # The tail's running error bound (see the module notes and docs/qt_epistasis.md §4). Inputs:
    # the trait sums g (error eps_g, both paths), the inverse and the integer moments (shared
    # doubles: no error). A = |value| + 2 eps bounds both paths' value and the exact one.
    g = (y, ya, yb, yab)
    eg = (errs.y, errs.ay, errs.ay, errs.ay)
    ag = [xp.abs(v) + 2.0 * e for v, e in zip(g, eg)]
    # beta_k = sum_m inv[m, k] g_m, 4 roundings per term: sum |inv| (eps_g + gamma_4 A_g)
    wg = [e + gamma(4) * a for e, a in zip(eg, ag)]
    cols = ((i00, i01, i02, i03), (i01, i11, i12, i13), (i02, i12, i22, i23), (i03, i13, i23, i33))
    eb = [xp.abs(c[0]) * wg[0] + xp.abs(c[1]) * wg[1] + xp.abs(c[2]) * wg[2] + xp.abs(c[3]) * wg[3] for c in cols]
    ab = [xp.abs(v) + 2.0 * e for v, e in zip((b0, b1, b2, b3), eb)]
    # PLINK's RSS has the monomials of b'Mb - 2 b'g + yy, M = X'X (entries >= 0): propagated
    # 2 eps_b' M A_b + 2 sum (eps_b A_g + A_b eps_g) + eps_yy, rounding gamma_12 times
    # A_b' M A_b + 2 sum A_b A_g + A_yy (the bound of sum_t |c_t| prod A over the same monomials).
    m = ((n, fa, fb, fab), (fa, saa, fab, saab), (fb, fab, sbb, sabb), (fab, saab, sabb, saabb))
    ma = [r[0] * ab[0] + r[1] * ab[1] + r[2] * ab[2] + r[3] * ab[3] for r in m]
    prop = 2.0 * (eb[0] * ma[0] + eb[1] * ma[1] + eb[2] * ma[2] + eb[3] * ma[3])
    prop = prop + 2.0 * sum(eb[k] * ag[k] + ab[k] * eg[k] for k in range(4)) + errs.yy
    mag = ab[0] * ma[0] + ab[1] * ma[1] + ab[2] * ma[2] + ab[3] * ma[3]
    mag = mag + 2.0 * sum(ab[k] * ag[k] for k in range(4)) + (xp.abs(yy) + 2.0 * errs.yy)
    e_rss = prop + gamma(RSS_DEPTH) * mag
    e_sigma = e_rss / dof + U * (xp.abs(rss) + 2.0 * e_rss) / dof
    ai33 = xp.abs(i33)
    e_var = ai33 * e_sigma + U * ai33 * (xp.abs(sigma) + 2.0 * e_sigma)
    a3 = ab[3]
    e_num = 2.0 * eb[3] * a3 + U * a3 * a3
    low = xp.abs(var) - 2.0 * e_var  # both paths' |var| and the exact one are at least this
    big = xp.abs(num) + 2.0 * e_num
    e_stat = e_num / low + big * e_var / (low * low) + U * big / low
    # Twice: each path is within e_stat of the exact value. (1 + 2^-20) covers the rounding of
    # this bound's own ~100 operations of positive terms (relative < 100 u).
    margin = 2.0 * e_stat * (1.0 + 2.0**-20)
    near = xp.abs(sigma - min_sigma) <= 2.0 * e_sigma * (1.0 + 2.0**-20)
    bad = ~(xp.isfinite(margin) & (low > 0.0) & xp.isfinite(stat))
    ok_int = ~fail
    unsure = ok_int & (near | bad)
    ok = ok_int & ~(sigma < min_sigma)
    stat = xp.where(ok, stat, xp.nan)
    return stat, ok, xp.where(ok_int, margin, 0.0), unsure


def _adjugate_inverse(xp, m00, m01, m02, m03, m11, m12, m13, m22, m23, m33):
    """:func:`gboost.stats.qt._adjugate_inverse` on arrays, through the same cofactors (one order
    of operations for both); returns ``(fails, i00, i01, i02, i03, i11, i12, i13, i22, i23, i33)``."""
    det, *cof = cofactors4(m00, m01, m02, m03, m11, m12, m13, m22, m23, m33)
    fails = xp.abs(det) < DET_EPSILON
    r = 1.0 / det
    return (fails, *(c * r for c in cof))
