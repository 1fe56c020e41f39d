"""The linear epistasis test of a quantitative trait, from a pair's sufficient statistics.

Per pair the samples called at both SNPs fall into a 3x3 table by dosage (a, b) = copies of
PLINK's A1 at SNP1 and SNP2. The counts ``n[a, b]``, the trait sums ``s[a, b] = sum y`` over each
cell and ``q = sum y^2`` over the table are sufficient for every least-squares fit whose design is
constant within a cell:

* PLINK 1.9's ``--epistasis`` on a quantitative trait (the oracle, docs/qt_epistasis.md):
  ``y ~ 1 + a + b + a*b`` by ordinary least squares, Wald test of the product term,
  ``STAT = beta_int^2 / (sigma^2 [(X'X)^-1]_44)``, ``P = 2 Phi(-sqrt(STAT))``. X'X and X'y are
  moments of the table: ``sum a^i b^j = sum_ab n[a,b] a^i b^j``, ``sum a^i b^j y = sum_ab s[a,b]
  a^i b^j`` (all integers up to the ``s`` sums, so exact in float64 below 2^53), and the residual
  sum of squares is ``q - 2 beta'X'y + beta'X'X beta``.
* The optional 4-df genotypic interaction F-test: the 9 cell means (the saturated model) against
  the additive model ``y ~ factor(a) + factor(b)`` (5 parameters); the additive fit is a
  least-squares problem on the 9 cells with weights ``n``.

PLINK refuses a pair (no row unless ``--epi1 1``, where it prints NaN, and a "fail" in the
summary) when its regression is ill-conditioned; :func:`linear_pair_test` applies the same
checks, in the same order, on the same quantities (docs/qt_epistasis.md §3).
"""
from __future__ import annotations

import math

import numpy as np

from gboost.runtime.numba_cache import cached_njit

# PLINK 1.9's tolerances: EPSILON = 2^-30 on determinants, glm's default VIF limit 50.
DET_EPSILON = 2.0**-30
VIF_THRESH = 50.0
QT_DEFAULT_EPI1 = 1e-4  # PLINK 1.9's --epistasis default (it halves it for the two-sided normal tail)

# Acklam's rational approximation of the normal quantile (public domain), as PLINK 1.9 computes
# --epi1/--epi2 thresholds with it (no refinement step): the thresholds must be these doubles.
_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
      -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
      -1.328068155288572e+01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
      4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)


def acklam_quantile(p: float) -> float:
    """Acklam's approximation of the standard normal quantile (relative error < 1.15e-9)."""
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        return (((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]) / \
            ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1)
    if p > 0.97575:
        q = math.sqrt(-2 * math.log(1 - p))
        return -(((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]) / \
            ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1)
    q = p - 0.5
    r = q * q
    return (((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q / \
        (((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1)


def qt_thresholds(epi1: float, epi2: float) -> tuple[float, float]:
    """PLINK's chi-square (1 df) thresholds for --epi1 and --epi2: ``quantile(p/2)^2``.

    ``epi1 = 1`` gives 0 exactly: every valid pair is written, and every failed one as NaN.
    """
    return acklam_quantile(epi1 * 0.5) ** 2, acklam_quantile(epi2 * 0.5) ** 2


@cached_njit(nogil=True)
def plink_normal_p(zsq: float) -> float:
    """Two-sided normal tail ``2 Phi(-sqrt(zsq))`` with PLINK 1.9's approximation (Abramowitz &
    Stegun 26.2.17, absolute error < 7.5e-8): PLINK prints this, to 4 digits."""
    z = -math.sqrt(zsq)
    t = 1.0 / (1.0 + 0.2316419 * abs(z))
    d = math.exp(-0.5 * z * z) / 2.50662827463
    p = d * t * (0.31938153 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + 1.330274429 * t))))
    return 2.0 * ((1.0 - p) if z >= 0 else p)


@cached_njit(nogil=True)
def plink_normal_p_many(zsq, ok):
    """:func:`plink_normal_p` of each STAT where ``ok`` (NaN elsewhere), clamped at 0 as printed."""
    out = np.empty(zsq.shape[0])
    for k in range(zsq.shape[0]):
        out[k] = max(plink_normal_p(zsq[k]), 0.0) if ok[k] else np.nan
    return out


def exact_normal_p(stat, ok) -> np.ndarray:
    """Exact two-sided normal P of Wald statistics ``stat`` (z squared) where ``ok``, NaN elsewhere:
    pairs.tsv's P (QTPairs.p; the writer computes it per run of rows)."""
    from scipy.special import ndtr

    with np.errstate(invalid="ignore"):
        return np.where(ok, 2.0 * ndtr(-np.sqrt(np.where(ok, stat, 0.0))), np.nan)


@cached_njit(nogil=True)
def _moments(n, s):
    """The 4x4 X'X and X'y of y ~ 1 + a + b + ab from the 3x3 table (float64, exact for counts)."""
    xtx = np.zeros((4, 4))
    xty = np.zeros(4)
    for a in range(3):
        for b in range(3):
            c = float(n[a, b])
            if c == 0.0:
                continue
            x = (1.0, float(a), float(b), float(a * b))
            for u in range(4):
                xty[u] += x[u] * s[a, b]
                for v in range(4):
                    xtx[u, v] += x[u] * x[v] * c
    return xtx, xty


@cached_njit(nogil=True)
def _invert4(m, out):
    """Inverse of a symmetric 4x4 matrix by Gauss-Jordan with partial pivoting; False when the
    determinant is below PLINK's tolerance (it inverts by cofactors and refuses |det| < 2^-30)."""
    w = np.zeros((4, 8))
    for i in range(4):
        for j in range(4):
            w[i, j] = m[i, j]
        w[i, 4 + i] = 1.0
    det = 1.0
    for col in range(4):
        piv = col
        for r in range(col + 1, 4):
            if abs(w[r, col]) > abs(w[piv, col]):
                piv = r
        if w[piv, col] == 0.0:
            return False
        if piv != col:
            for j in range(8):
                w[col, j], w[piv, j] = w[piv, j], w[col, j]
            det = -det
        d = w[col, col]
        det *= d
        for j in range(8):
            w[col, j] /= d
        for r in range(4):
            if r != col:
                f = w[r, col]
                if f != 0.0:
                    for j in range(8):
                        w[r, j] -= f * w[col, j]
    if abs(det) < DET_EPSILON:
        return False
    for i in range(4):
        for j in range(4):
            out[i, j] = w[i, 4 + j]
    return True


def cofactors4(m00, m01, m02, m03, m11, m12, m13, m22, m23, m33):
    """The determinant and upper-triangle cofactors of the symmetric 4x4 X'X (rows expanded along
    the first), every product in the order PLINK 1.9 evaluates it, so that STAT agrees to the last
    bit (its 6 printed digits then agree even next to a rounding tie). Only ``+ - *``: the same
    code runs on floats (compiled below for the CPU's loops) and on NumPy/CuPy arrays (the GPU's
    screen, gboost/engines/qt_screen.py), so the two paths share one order of operations.
    Returns ``(det, c00, c01, c02, c03, c11, c12, c13, c22, c23, c33)``."""
    t_a = m11 * m23 - m12 * m13
    t_b = m12 * m23 - m13 * m22
    t_c = m12 * m33 - m13 * m23
    t_d = m22 * m33 - m23 * m23
    c00 = m11 * t_d - m12 * t_c + m13 * t_b
    c01 = m02 * t_c - m01 * t_d - m03 * t_b
    c02 = m01 * t_c + m02 * (m13 * m13 - m11 * m33) + m03 * t_a
    t_e = m11 * m22 - m12 * m12
    c03 = m02 * t_a - m01 * t_b - m03 * t_e
    det = m00 * c00 + m01 * c01 + m02 * c02 + m03 * c03
    c11 = m00 * t_d + m02 * (m03 * m23 - m02 * m33) + m03 * (m02 * m23 - m03 * m22)
    t_f = m01 * m33 - m03 * m13
    c12 = m02 * t_f - m00 * t_c + m03 * (m03 * m12 - m01 * m23)
    t_g = m01 * m23 - m02 * m13
    t_h = m01 * m22 - m02 * m12
    c13 = m00 * t_b - m02 * t_g + m03 * t_h
    c22 = m00 * (m11 * m33 - m13 * m13) - m01 * t_f + m03 * (m01 * m13 - m03 * m11)
    t_i = m01 * m12 - m02 * m11
    c23 = m01 * t_g - m00 * t_a - m03 * t_i
    c33 = m00 * t_e - m01 * t_h + m02 * t_i
    return det, c00, c01, c02, c03, c11, c12, c13, c22, c23, c33


_cofactors4 = cached_njit(nogil=True)(cofactors4)


@cached_njit(nogil=True)
def _adjugate_inverse(m00, m01, m02, m03, m11, m12, m13, m22, m23, m33):
    """Inverse of the symmetric 4x4 X'X by cofactors (:func:`cofactors4`). Returns ``(ok, i00,
    i01, i02, i03, i11, i12, i13, i22, i23, i33)``; ``ok`` False when |det| < 2^-30. (Scalars, not
    an array: no allocation per pair in the parallel loops.)"""
    det, c00, c01, c02, c03, c11, c12, c13, c22, c23, c33 = _cofactors4(
        m00, m01, m02, m03, m11, m12, m13, m22, m23, m33)
    if abs(det) < DET_EPSILON:
        z = 0.0
        return False, z, z, z, z, z, z, z, z, z, z
    r = 1.0 / det
    return True, c00 * r, c01 * r, c02 * r, c03 * r, c11 * r, c12 * r, c13 * r, c22 * r, c23 * r, c33 * r


@cached_njit(nogil=True)
def linear_from_moments(N, sa, saa, sb, sbb, sab, saab, sabb, saabb, y, ya, yb, yab, yy):
    """PLINK 1.9's linear epistasis test from the moments of a pair (integers: ``N`` samples and
    the sums of a, a^2, b, b^2, ab, a^2 b, a b^2, a^2 b^2; floats: sums of y, a y, b y, ab y and
    y^2), with PLINK's checks and its order of floating-point operations (docs/qt_epistasis.md §3).

    Returns ``(ok, beta_int, stat, se)``; NaNs when ``ok`` is False (PLINK fails the pair).
    """
    nan = np.nan
    if N <= 4:
        return False, nan, nan, nan
    n = float(N)
    rn = 1.0 / n
    rn1 = 1.0 / float(N - 1)
    fa, fb, fab = float(sa), float(sb), float(sab)
    mb = fb * rn
    mab = fab * rn
    va = float(saa) - fa * fa * rn
    vb = float(sbb) - fb * mb
    vab = float(saabb) - fab * mab
    if va <= 0.0 or vb <= 0.0 or vab <= 0.0:
        return False, nan, nan, nan
    ia = 1.0 / math.sqrt(va * rn1)
    ib = 1.0 / math.sqrt(vb * rn1)
    iab = 1.0 / math.sqrt(vab * rn1)
    r12 = (fab - fa * mb) * rn1
    r23 = (float(sabb) - fb * mab) * rn1
    r13 = (float(saab) - fa * mab) * rn1
    r12 *= ia * ib
    r13 *= ia * iab
    r23 *= ib * iab
    if r12 > 0.999 or r13 > 0.999 or r23 > 0.999:
        return False, nan, nan, nan
    q12 = r12 * r12
    q13 = r13 * r13
    q23 = r23 * r23
    det = 1 + 2 * r12 * r13 * r23 - q12 - q13 - q23
    if abs(det) < DET_EPSILON:
        return False, nan, nan, nan
    lim = 1 - VIF_THRESH * det  # a VIF (1 - r^2) / det above the limit fails the pair
    if (det > 0 and (lim > q12 or lim > q13 or lim > q23)) or (det < 0 and (lim < q12 or lim < q13 or lim < q23)):
        return False, nan, nan, nan
    ok, i00, i01, i02, i03, i11, i12, i13, i22, i23, i33 = _adjugate_inverse(
        n, fa, fb, fab, float(saa), fab, float(saab), float(sbb), float(sabb), float(saabb))
    if not ok:
        return False, nan, nan, nan
    # Parameter estimates correlated beyond 0.99999 fail the pair too.
    r0, r1, r2, r3 = math.sqrt(i00), math.sqrt(i11), math.sqrt(i22), math.sqrt(i33)
    if (i01 > 0.99999 * r1 * r0 or i02 > 0.99999 * r2 * r0 or i12 > 0.99999 * r2 * r1
            or i03 > 0.99999 * r3 * r0 or i13 > 0.99999 * r3 * r1 or i23 > 0.99999 * r3 * r2):
        return False, nan, nan, nan
    min_sigma = max(i11, i22)
    if i33 > min_sigma:
        min_sigma = i33
    min_sigma = 1e-20 / min_sigma
    b0 = y * i00 + ya * i01 + yb * i02 + yab * i03
    b1 = y * i01 + ya * i11 + yb * i12 + yab * i13
    b2 = y * i02 + ya * i12 + yb * i22 + yab * i23
    b3 = y * i03 + ya * i13 + yb * i23 + yab * i33
    # residual sum of squares expanded in the moments: sum (x'beta - y)^2
    rss = (b0 * b0 * n + b1 * b1 * float(saa) + b2 * b2 * float(sbb) + b3 * b3 * float(saabb) + yy
           + 2 * (b0 * (b1 * fa + b2 * fb + b3 * fab - y)
                  + b1 * (b2 * fab + b3 * float(saab) - ya)
                  + b2 * (b3 * float(sabb) - yb)
                  - b3 * yab))
    sigma = rss / float(N - 4)
    if sigma < min_sigma:
        return False, nan, nan, nan
    var = i33 * sigma
    return True, b3, (b3 * b3) / var, math.sqrt(var)


@cached_njit(nogil=True)
def moments_of_table(n, s):
    """The integer and trait moments of ``y ~ 1 + a + b + ab`` from a 3x3 table (for
    :func:`linear_from_moments`)."""
    N = sa = saa = sb = sbb = sab = saab = sabb = saabb = 0
    y = ya = yb = yab = 0.0
    for a in range(3):
        for b in range(3):
            c = n[a, b]
            N += c
            sa += a * c
            saa += a * a * c
            sb += b * c
            sbb += b * b * c
            sab += a * b * c
            saab += a * a * b * c
            sabb += a * b * b * c
            saabb += a * a * b * b * c
            y += s[a, b]
            ya += a * s[a, b]
            yb += b * s[a, b]
            yab += a * b * s[a, b]
    return N, sa, saa, sb, sbb, sab, saab, sabb, saabb, y, ya, yb, yab


@cached_njit(nogil=True)
def linear_pair_test(n, s, q):
    """PLINK 1.9's linear epistasis test of one pair from its table.

    Parameters
    ----------
    n : (3, 3) int64
        Samples called at both SNPs, by dosage (copies of PLINK's A1) at SNP1 (row) and SNP2.
    s : (3, 3) float64
        Sum of the trait over each cell.
    q : float
        Sum of the squared trait over the table.

    Returns
    -------
    (ok, beta_int, stat, se)
        ``ok`` False when PLINK would fail the pair (then the numbers are NaN); ``stat`` is the
        Wald chi-square (1 df) of the a*b coefficient, ``se`` its standard error.
    """
    nan = np.nan
    xtx, xty = _moments(n, s)
    N = xtx[0, 0]
    if N <= 4.0:
        return False, nan, nan, nan
    # PLINK's collinearity checks on the centred covariates a, b, ab (its glm_check_vif with three
    # covariates): variances, correlations > 0.999, the correlation matrix's determinant and VIF.
    rn = 1.0 / N
    rn1 = 1.0 / (N - 1.0)
    va = xtx[1, 1] - xtx[0, 1] * xtx[0, 1] * rn
    vb = xtx[2, 2] - xtx[0, 2] * (xtx[0, 2] * rn)
    vab = xtx[3, 3] - xtx[0, 3] * (xtx[0, 3] * rn)
    if va <= 0.0 or vb <= 0.0 or vab <= 0.0:
        return False, nan, nan, nan
    sa, sb, sab = 1.0 / math.sqrt(va * rn1), 1.0 / math.sqrt(vb * rn1), 1.0 / math.sqrt(vab * rn1)
    r12 = (xtx[1, 2] - xtx[0, 1] * (xtx[0, 2] * rn)) * rn1 * (sa * sb)
    r13 = (xtx[1, 3] - xtx[0, 1] * (xtx[0, 3] * rn)) * rn1 * (sa * sab)
    r23 = (xtx[2, 3] - xtx[0, 2] * (xtx[0, 3] * rn)) * rn1 * (sb * sab)
    if r12 > 0.999 or r13 > 0.999 or r23 > 0.999:
        return False, nan, nan, nan
    q12, q13, q23 = r12 * r12, r13 * r13, r23 * r23
    det = 1.0 + 2.0 * r12 * r13 * r23 - q12 - q13 - q23
    if abs(det) < DET_EPSILON:
        return False, nan, nan, nan
    # Each VIF (1 - r^2) / det above the limit fails the pair.
    lim = 1.0 - VIF_THRESH * det
    if (det > 0.0 and (lim > q12 or lim > q13 or lim > q23)) or (det < 0.0 and (lim < q12 or lim < q13 or lim < q23)):
        return False, nan, nan, nan
    inv = np.empty((4, 4))
    if not _invert4(xtx, inv):
        return False, nan, nan, nan
    # PLINK also refuses a pair whose parameter estimates are correlated beyond 0.99999.
    for u in range(1, 4):
        lim_u = 0.99999 * math.sqrt(inv[u, u])
        for v in range(u):
            if inv[u, v] > lim_u * math.sqrt(inv[v, v]):
                return False, nan, nan, nan
    beta = inv @ xty
    rss = q - 2.0 * (beta[0] * xty[0] + beta[1] * xty[1] + beta[2] * xty[2] + beta[3] * xty[3])
    for u in range(4):
        for v in range(4):
            rss += beta[u] * xtx[u, v] * beta[v]
    sigma = rss / (N - 4.0)
    min_sigma = 1e-20 / max(inv[1, 1], inv[2, 2], inv[3, 3])
    if sigma < min_sigma:
        return False, nan, nan, nan
    var = inv[3, 3] * sigma
    return True, beta[3], beta[3] * beta[3] / var, math.sqrt(var)


@cached_njit(nogil=True)
def genotypic_f_test(n, s, q):
    """The 4-df genotypic interaction F-test: 9 cell means against ``y ~ factor(a) + factor(b)``.

    Returns ``(ok, F, df1, df2)``; ``df1`` = occupied cells less the additive model's rank (4
    when every cell is occupied; less for empty rows, columns or cells, or a SNP with a single
    genotype in the pair), ``df2 = N - occupied cells``. ``ok`` False when either df is 0 or the
    full model's residual variance is 0.
    """
    N = 0.0
    cells = 0
    rss_full = q
    for a in range(3):
        for b in range(3):
            if n[a, b] > 0:
                N += n[a, b]
                cells += 1
                rss_full -= s[a, b] * s[a, b] / n[a, b]
    # Additive model: columns 1, a==1, a==2, b==1, b==2 (dummy coding), weighted by n over cells.
    xtx = np.zeros((5, 5))
    xty = np.zeros(5)
    for a in range(3):
        for b in range(3):
            c = float(n[a, b])
            if c == 0.0:
                continue
            x = (1.0, 1.0 if a == 1 else 0.0, 1.0 if a == 2 else 0.0, 1.0 if b == 1 else 0.0, 1.0 if b == 2 else 0.0)
            for u in range(5):
                xty[u] += x[u] * s[a, b]
                for v in range(5):
                    xtx[u, v] += x[u] * x[v] * c
    # Drop the dummies of empty rows/columns (their columns are zero): the model's rank.
    keep = np.zeros(5, np.bool_)
    k = 0
    for u in range(5):
        keep[u] = xtx[u, u] > 0.0
        if keep[u]:
            k += 1
    idx = np.empty(k, np.int64)
    m = 0
    for u in range(5):
        if keep[u]:
            idx[m] = u
            m += 1
    sub = np.empty((k, k))
    rhs = np.empty(k)
    for u in range(k):
        rhs[u] = xty[idx[u]]
        for v in range(k):
            sub[u, v] = xtx[idx[u], idx[v]]
    # The dummies can still be collinear: a SNP with one genotype in the pair (all heterozygous,
    # say) makes its dummy the intercept, and cells on a diagonal alone make a's dummies b's. Then
    # the normal equations are singular but consistent: any solution gives the same RSS, and the
    # model's rank, not its column count, is what df1 subtracts.
    rank = np.linalg.matrix_rank(sub) if k > 0 else 0
    if rank == k:
        coef = np.linalg.solve(sub, rhs)
    else:
        coef = np.linalg.lstsq(sub, rhs)[0]
    rss_add = q
    for u in range(k):
        rss_add -= coef[u] * rhs[u]
    df1 = cells - rank
    df2 = N - cells
    if df1 <= 0 or df2 <= 0 or rss_full <= 0.0:
        return False, np.nan, df1, df2
    f = ((rss_add - rss_full) / df1) / (rss_full / df2)
    return True, max(f, 0.0), df1, df2
