"""The BOOST two-locus statistics on one 3x3x2 table (docs/DESIGN.md §3.3), as small numba functions.

They take ``t[a, b, k]`` (int64; a = SNP1 type, b = SNP2 type, k = 0 control / 1 case) and are
callable from Python and from the engines' compiled loops alike, so every engine shares one
definition of each statistic.
"""
from __future__ import annotations

import math

import numpy as np

from gboost.runtime.numba_cache import cached_njit

IPF_TOL = 0.001  # PLINK's convergence rule: sum |delta mu| <= 0.001 after a full sweep
# PLINK iterates until that rule holds, with no cap. Pairs in strong LD (near-diagonal tables with
# empty cells) need hundreds of sweeps, and a cap of 100 changed printed STATs of real chips
# (docs/plink_boost_notes.md §4). This safety cap is far beyond any table seen: a pair that reaches
# it is flagged (run.json "ipf_safety_cap_hits", a warning in the log), never silently cut short.
IPF_MAX_SWEEPS = 1_000_000


@cached_njit()
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


@cached_njit(inline="always")
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


@cached_njit()
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


@cached_njit()
def ipf_fit(t, max_sweeps):
    """The fitted [AB][AC][BC] table mu of ``t`` by PLINK's IPF, the sweeps it took, and whether
    PLINK's rule (summed |delta mu| over a sweep <= 0.001) held within ``max_sweeps``.

    mu starts at 1; each sweep fits the AB, then AC, then BC margins (a margin whose fitted sum is
    0 scales its cells by 0), in PLINK's order of operations (docs/plink_boost_notes.md §4).
    """
    mu = np.ones((3, 3, 2))
    nab, nak, nbk, total = _margins(t)
    prev = mu.copy()
    for sweep in range(1, max_sweeps + 1):
        for a in range(3):
            for b in range(3):
                m = mu[a, b, 0] + mu[a, b, 1]
                f = nab[a, b] / m if m != 0.0 else 0.0
                mu[a, b, 0] *= f
                mu[a, b, 1] *= f
        for a in range(3):
            for k in range(2):
                m = mu[a, 0, k] + mu[a, 1, k] + mu[a, 2, k]
                f = nak[a, k] / m if m != 0.0 else 0.0
                for b in range(3):
                    mu[a, b, k] *= f
        for b in range(3):
            for k in range(2):
                m = mu[0, b, k] + mu[1, b, k] + mu[2, b, k]
                f = nbk[b, k] / m if m != 0.0 else 0.0
                for a in range(3):
                    mu[a, b, k] *= f
        delta = 0.0
        for a in range(3):
            for b in range(3):
                for k in range(2):
                    delta += abs(mu[a, b, k] - prev[a, b, k])
                    prev[a, b, k] = mu[a, b, k]
        if not (delta > IPF_TOL):  # PLINK's test, as written there
            return mu, sweep, True
    return mu, max_sweeps, False


@cached_njit()
def ipf_stat(t):
    """Exact BOOST statistic: LR of [AB][AC][BC] against the saturated model, fitted by IPF.

    Returns ``(stat, converged)``: :func:`ipf_fit` with no practical cap (``converged`` is False
    only for a pair that reached the safety cap IPF_MAX_SWEEPS), then
    STAT = 2 sum n ln(n/mu) + 2 N ln(sum mu / N), evaluated as PLINK does.
    """
    mu, _, converged = ipf_fit(t, IPF_MAX_SWEEPS)
    total = 0.0
    for a in range(3):
        for b in range(3):
            for k in range(2):
                total += float(t[a, b, k])
    # STAT in PLINK's order of evaluation (docs/plink_boost_notes.md §4): p = n/N and q = mu/N with
    # r = 1/N, class outermost, acc += p ln(p/q), tau += q, then (acc + ln tau) * 2N. Statistics
    # near 0 are differences of nearly equal sums, so another order prints other digits.
    r = 1.0 / total
    acc = 0.0
    tau = 0.0
    for k in range(2):
        for a in range(3):
            for b in range(3):
                pp = float(t[a, b, k]) * r
                q = mu[a, b, k] * r
                if pp != 0.0:
                    if q != 0.0:
                        acc += pp * math.log(pp / q)
                    else:
                        acc += pp * math.log(pp)
                tau += q
    return (acc + math.log(tau)) * (2.0 * total), converged
