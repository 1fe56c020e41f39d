"""A pair's statistics as PLINK 1.9 forms its doubles: its orientation and its order of operations.

PLINK evaluates a pair's table as the first SNP's genotypes by the second's, cases first, each SNP's
genotypes in the order A1/A1, het, A2/A2 with A1 the founders' minor allele (it swaps the .bim's
alleles where A1 is the major one: gboost.data.load.founders_a1_major), and with its own order of
operations (fepi_counts_to_boost_chisq of plink_ld.c, read to learn the order, not copied). The
value is the same number in any orientation, but not the same double, and two places print or
compare those last bits: a pair whose exact statistic is ~0 (a SNP and its duplicate: the fit is
perfect and the statistic is rounding noise, which .epi.cc prints), and partners whose statistics
tie as numbers (the summary's BEST_SNP, gboost/pipeline/best_ties.py). So the exact test and the tie repair
evaluate here; gboost.stats.boost keeps the orientation-free forms the engines' screen uses.
"""
from __future__ import annotations

import math

import numpy as np

from gboost.runtime.numba_cache import cached_njit
from gboost.stats.boost import IPF_MAX_SWEEPS, IPF_TOL


@cached_njit()
def plink_counts(t, rev_i, rev_j, c):
    """``c[18]``: table ``t[a, b, k]`` (a the first SNP's type, k 0 controls) in PLINK's order:
    cases, then controls; the first SNP's genotype outer, each in PLINK's order (A1/A1 first, A1
    the minor allele: gboost's type 2 - t, or t where PLINK swapped the SNP's alleles)."""
    for kk in range(2):
        k = 1 - kk
        for a in range(3):
            pa = a if rev_i else 2 - a
            for b in range(3):
                pb = b if rev_j else 2 - b
                c[kk * 9 + pa * 3 + pb] = t[a, b, k]


@cached_njit(inline="always")
def _rcp(x):
    """PLINK's reciprocal cache: 1 / x as a double, 0 for x = 0."""
    return 1.0 / float(x) if x != 0 else 0.0


@cached_njit()
def plink_z(c, alpha1):
    """PLINK 1.9's value of a pair for the summary, from its 18 counts ``c`` in PLINK's order
    (:func:`plink_counts`) and the screen thresholds ``alpha1[d]`` for DF d = 1, 2, 4: the KSA, or
    for a pair over the screen the exact statistic raised to the threshold; NaN for a pair PLINK
    counts as failed. Each double is formed as PLINK forms it, in the same order."""
    # p_bc: the second SNP's genotypes within each class; p_ca: each class within the first SNP's.
    p_bc = np.empty(6)
    case = np.empty(3, np.int64)
    ctrl = np.empty(3, np.int64)
    for b in range(3):
        case[b] = c[b] + c[b + 3] + c[b + 6]
        ctrl[b] = c[9 + b] + c[12 + b] + c[15 + b]
    r = _rcp(case[0] + case[1] + case[2])
    for b in range(3):
        p_bc[b] = float(case[b]) * r
    r = _rcp(ctrl[0] + ctrl[1] + ctrl[2])
    for b in range(3):
        p_bc[3 + b] = float(ctrl[b]) * r
    p_ca = np.empty(6)
    df_adj = 0
    for a in range(3):
        ca = c[3 * a] + c[3 * a + 1] + c[3 * a + 2]
        ct = c[9 + 3 * a] + c[9 + 3 * a + 1] + c[9 + 3 * a + 2]
        if ca + ct == 0:
            df_adj += 1
        r = _rcp(ca + ct)
        p_ca[2 * a] = float(ca) * r
        p_ca[2 * a + 1] = float(ct) * r
    if df_adj > 1:
        return np.nan
    mu = np.empty(9)
    empty = 0
    n = 0
    for b in range(3):
        nj = c[b] + c[b + 9]
        nk = c[b + 3] + c[b + 12]
        nm = c[b + 6] + c[b + 15]
        nn = nj + nk + nm
        if nn == 0:
            empty += 1
            if empty > 1:
                return np.nan
            df_adj += 1
        n += nn
        d = _rcp(nn)
        mu[3 * b] = float(nj) * d
        mu[3 * b + 1] = float(nk) * d
        mu[3 * b + 2] = float(nm) * d
    im = 0.0
    tau = 0.0
    q = 0
    for k in range(2):
        for a in range(3):
            dyy = p_ca[2 * a + k]
            for b in range(3):
                dxx = mu[a + 3 * b] * p_bc[3 * k + b] * dyy
                tau += dxx
                u = c[q]
                q += 1
                if u != 0:
                    if dxx != 0.0:
                        im -= float(u) * math.log(dxx * _rcp(u))
                    else:
                        du = float(u)
                        im += du * math.log(du)
    sum_recip = _rcp(n)
    im = 2.0 * (im + float(n) * math.log(tau * sum_recip))
    a1 = alpha1[4 >> df_adj]
    if im > a1:
        im = _plink_exact(c, n, sum_recip)[0]
        if im < a1:
            im = a1
    return im


@cached_njit()
def plink_exact(t, rev_i, rev_j):
    """The exact statistic of table ``t[a, b, k]`` (the LR of the [AB][AC][BC] model fitted by
    PLINK's IPF, gboost.stats.boost.ipf_stat's number) as PLINK's double, with ``rev_i``/``rev_j``
    whether PLINK swapped each SNP's alleles; and whether IPF settled before the safety cap."""
    c = np.empty(18, np.int64)
    plink_counts(t, rev_i, rev_j, c)
    n = 0
    for q in range(18):
        n += c[q]
    return _plink_exact(c, n, 1.0 / float(n))


@cached_njit()
def _plink_exact(c, n, sum_recip):
    """PLINK's exact statistic of counts ``c`` in PLINK's order (:func:`plink_counts`), ``n`` their
    sum and ``sum_recip`` its reciprocal; and whether IPF settled before IPF_MAX_SWEEPS."""
    mu_t = np.ones(18)
    mu0 = np.empty(18)
    mx = np.empty(9)
    converged = False
    for _ in range(IPF_MAX_SWEEPS):
        mu0[:] = mu_t
        for q in range(9):
            mx[q] = mu_t[2 * q] + mu_t[2 * q + 1]
        for q in range(9):
            d = mx[q]
            if d != 0.0:
                d = float(c[q] + c[q + 9]) / d
            mu_t[2 * q] *= d
            mu_t[2 * q + 1] *= d
        w = 0
        for q0 in range(0, 18, 6):
            for q in range(q0, q0 + 2):
                mx[w] = mu_t[q] + mu_t[q + 2] + mu_t[q + 4]
                w += 1
        for a in range(3):
            for k in range(2):
                d = mx[a * 2 + k]
                if d != 0.0:
                    d = float(c[k * 9 + a * 3] + c[k * 9 + a * 3 + 1] + c[k * 9 + a * 3 + 2]) / d
                mu_t[a * 6 + k] *= d
                mu_t[a * 6 + k + 2] *= d
                mu_t[a * 6 + k + 4] *= d
        for q in range(6):
            mx[q] = mu_t[q] + mu_t[q + 6] + mu_t[q + 12]
        for b in range(3):
            for k in range(2):
                d = mx[b * 2 + k]
                if d != 0.0:
                    d = float(c[k * 9 + b] + c[k * 9 + b + 3] + c[k * 9 + b + 6]) / d
                mu_t[b * 2 + k] *= d
                mu_t[b * 2 + k + 6] *= d
                mu_t[b * 2 + k + 12] *= d
        err = 0.0
        for q in range(18):
            err += abs(mu_t[q] - mu0[q])
        if not (err > IPF_TOL):
            converged = True
            break
    tau = 0.0
    im = 0.0
    q = 0
    for k in range(2):
        for a in range(3):
            for b in range(3):
                dxx = float(c[q]) * sum_recip
                q += 1
                dyy = mu_t[a * 6 + b * 2 + k] * sum_recip
                if dxx != 0.0:
                    if dyy != 0.0:
                        im += dxx * math.log(dxx / dyy)
                    else:
                        im += dxx * math.log(dxx)
                tau += dyy
    return (im + math.log(tau)) * float(2 * n), converged
