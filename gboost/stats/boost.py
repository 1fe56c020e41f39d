"""The BOOST two-locus statistics on one 3x3x2 table (SPEC §4), as small numba functions.

They take ``t[a, b, k]`` (int64; a = SNP1 type, b = SNP2 type, k = 0 control / 1 case) and are
callable from Python and from the engines' compiled loops alike, so every engine shares one
definition of each statistic.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

IPF_TOL = 0.001  # PLINK's convergence rule: sum |delta mu| <= 0.001 after a full sweep
IPF_MAX_SWEEPS = 100  # far above what real tables need; a pair that hits it is flagged


@nb.njit(cache=True)
def plink_df(t) -> int:
    """PLINK 1.9's degrees of freedom for a pair: 4; 2 when one SNP has one empty genotype class
    in the pooled table; 1 when both do; 0 (invalid, not a test) when a SNP has two empty classes.
    """
    empty1 = 0
    empty2 = 0
    for a in range(3):
        r = 0
        c = 0
        for b in range(3):
            r += t[a, b, 0] + t[a, b, 1]
            c += t[b, a, 0] + t[b, a, 1]
        if r == 0:
            empty1 += 1
        if c == 0:
            empty2 += 1
    if empty1 > 1 or empty2 > 1:
        return 0
    if empty1 == 1 and empty2 == 1:
        return 1
    if empty1 == 1 or empty2 == 1:
        return 2
    return 4


@nb.njit(cache=True, inline="always")
def _margins(t):
    """The two-way margins n_ab, n_ak, n_bk and N of a table, as floats."""
    nab = np.zeros((3, 3))
    nak = np.zeros((3, 2))
    nbk = np.zeros((3, 2))
    total = 0.0
    for a in range(3):
        for b in range(3):
            for k in range(2):
                v = float(t[a, b, k])
                nab[a, b] += v
                nak[a, k] += v
                nbk[b, k] += v
                total += v
    return nab, nak, nbk, total


@nb.njit(cache=True)
def ksa_stat(t) -> float:
    """Kirkwood superposition approximation statistic (BOOST's screen).

    P(a,b,k) = p(a,b) p(b,k) p(a,k) / (p(a) p(b) p(k)) from the table's own margins,
    tau = sum P, L = 2 sum n ln(n / (N P / tau)), zero cells skipped. L >= the exact statistic.
    """
    nab, nak, nbk, total = _margins(t)
    na = np.zeros(3)
    nb_ = np.zeros(3)
    nk = np.zeros(2)
    for a in range(3):  # sums of integer counts: exact in any order
        for b in range(3):
            na[a] += nab[a, b]
            nb_[b] += nab[a, b]
        for k in range(2):
            nk[k] += nak[a, k]
    if total == 0.0:
        return 0.0
    tau = 0.0
    pk = np.zeros((3, 3, 2))
    for a in range(3):
        for b in range(3):
            for k in range(2):
                if nab[a, b] > 0 and nak[a, k] > 0 and nbk[b, k] > 0:
                    p = (nab[a, b] * nak[a, k] * nbk[b, k]) / (na[a] * nb_[b] * nk[k] * total)
                    pk[a, b, k] = p
                    tau += p
    s = 0.0
    for a in range(3):
        for b in range(3):
            for k in range(2):
                v = float(t[a, b, k])
                if v > 0:
                    s += v * math.log(v * tau / (total * pk[a, b, k]))
    return 2.0 * s


@nb.njit(cache=True)
def ipf_stat(t):
    """Exact BOOST statistic: LR of [AB][AC][BC] against the saturated model, fitted by IPF.

    Returns ``(stat, converged)``. mu starts at 1 and sweeps the AB, AC, BC margins until the
    summed absolute change of mu over a sweep is <= 0.001 (PLINK's rule).
    STAT = 2 sum n ln(n/mu) + 2 N ln(sum mu / N).
    """
    mu = np.ones((3, 3, 2))
    nab, nak, nbk, total = _margins(t)
    converged = False
    prev = mu.copy()
    for _ in range(IPF_MAX_SWEEPS):
        for a in range(3):
            for b in range(3):
                m = mu[a, b, 0] + mu[a, b, 1]
                f = nab[a, b] / m if m > 0 else 0.0
                mu[a, b, 0] *= f
                mu[a, b, 1] *= f
        for a in range(3):
            for k in range(2):
                m = mu[a, 0, k] + mu[a, 1, k] + mu[a, 2, k]
                f = nak[a, k] / m if m > 0 else 0.0
                for b in range(3):
                    mu[a, b, k] *= f
        for b in range(3):
            for k in range(2):
                m = mu[0, b, k] + mu[1, b, k] + mu[2, b, k]
                f = nbk[b, k] / m if m > 0 else 0.0
                for a in range(3):
                    mu[a, b, k] *= f
        delta = 0.0
        for a in range(3):
            for b in range(3):
                for k in range(2):
                    delta += abs(mu[a, b, k] - prev[a, b, k])
                    prev[a, b, k] = mu[a, b, k]
        if delta <= IPF_TOL:
            converged = True
            break
    s = 0.0
    musum = 0.0
    for a in range(3):
        for b in range(3):
            for k in range(2):
                musum += mu[a, b, k]
                v = float(t[a, b, k])
                if v > 0:
                    s += v * math.log(v / mu[a, b, k])
    return 2.0 * s + 2.0 * total * math.log(musum / total), converged
