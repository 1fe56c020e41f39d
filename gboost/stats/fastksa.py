"""KSA from a table with logarithms looked up instead of computed (the engines' hot path).

With p(x) = n_x / N, every term of L_KSA except the one in tau is an ``x ln x`` of an integer
count <= N, so one table ``xlogx[c] = c ln c`` replaces 18 logarithms per pair:

    sum n ln P = S(n_ab) + S(n_ak) + S(n_bk) - S(n_a) - S(n_b) - S(n_k) - N ln N
    L_KSA      = 2 [ S(n) - sum n ln P - N ln N + N ln tau ],  S(x) = sum x ln x

and tau = sum n_ab n_ak n_bk / (n_a n_b n_k N) needs products only, then one log. Equal to
:func:`gboost.stats.boost.ksa_stat` to rounding (tests compare them).
"""
from __future__ import annotations

import math

import numpy as np

from gboost.runtime.numba_cache import cached_njit


def xlogx_table(n: int) -> np.ndarray:
    """``c * ln(c)`` for c = 0..n (0 ln 0 = 0)."""
    c = np.arange(n + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = c * np.log(c)
    out[0] = 0.0
    return out


@cached_njit(inline="always")
def ksa_lookup(t, xlx, m) -> float:
    """KSA of table ``t[3, 3, 2]`` (int64) via the ``xlogx`` table; ``m`` is float64 scratch (>= 32)."""
    # m[0:9] n_ab, m[9:15] n_ak (a*2+k), m[15:21] n_bk (b*2+k), m[21:24] n_a, m[24:27] n_b, m[27:29] n_k
    for q in range(29):
        m[q] = 0.0
    s = 0.0
    for a in range(3):
        for b in range(3):
            c0 = t[a, b, 0]
            c1 = t[a, b, 1]
            s += xlx[c0] + xlx[c1]
            ab = c0 + c1
            m[a * 3 + b] = ab
            m[9 + a * 2] += c0
            m[10 + a * 2] += c1
            m[15 + b * 2] += c0
            m[16 + b * 2] += c1
            m[21 + a] += ab
            m[24 + b] += ab
            m[27] += c0
            m[28] += c1
    total = m[27] + m[28]
    if total <= 0.0:
        return 0.0
    lnp = 0.0
    for q in range(9):
        lnp += xlx[np.int64(m[q])]
    for q in range(9, 21):
        lnp += xlx[np.int64(m[q])]
    for q in range(21, 29):
        lnp -= xlx[np.int64(m[q])]
    ntot = np.int64(total)
    lnp -= xlx[ntot]
    tau = 0.0
    for a in range(3):
        na = m[21 + a]
        if na == 0.0:
            continue
        for b in range(3):
            nab = m[a * 3 + b]
            if nab == 0.0:
                continue
            inner = 0.0
            for k in range(2):
                nk = m[27 + k]
                if nk > 0.0:
                    inner += m[9 + a * 2 + k] * m[15 + b * 2 + k] / nk
            tau += nab * inner / (na * m[24 + b])
    tau /= total
    return 2.0 * (s - lnp - xlx[ntot] + total * math.log(tau))


@cached_njit(inline="always")
def ksa_df_lookup(t, xlx):
    """``(KSA, PLINK DF)`` of table ``t`` in one pass with integer margins held in registers.

    Same values as :func:`ksa_lookup` and :func:`gboost.stats.boost.plink_df` (tests compare);
    the engines' hot path, so margins stay integer locals, reciprocals replace the divisions
    of tau, and an invalid pair (DF 0) returns before any floating-point work.
    """
    a00 = t[0, 0, 0] + t[0, 1, 0] + t[0, 2, 0]  # n_ak: SNP1 type a, class k
    a01 = t[0, 0, 1] + t[0, 1, 1] + t[0, 2, 1]
    a10 = t[1, 0, 0] + t[1, 1, 0] + t[1, 2, 0]
    a11 = t[1, 0, 1] + t[1, 1, 1] + t[1, 2, 1]
    a20 = t[2, 0, 0] + t[2, 1, 0] + t[2, 2, 0]
    a21 = t[2, 0, 1] + t[2, 1, 1] + t[2, 2, 1]
    b00 = t[0, 0, 0] + t[1, 0, 0] + t[2, 0, 0]  # n_bk: SNP2 type b, class k
    b01 = t[0, 0, 1] + t[1, 0, 1] + t[2, 0, 1]
    b10 = t[0, 1, 0] + t[1, 1, 0] + t[2, 1, 0]
    b11 = t[0, 1, 1] + t[1, 1, 1] + t[2, 1, 1]
    b20 = t[0, 2, 0] + t[1, 2, 0] + t[2, 2, 0]
    b21 = t[0, 2, 1] + t[1, 2, 1] + t[2, 2, 1]
    na0, na1, na2 = a00 + a01, a10 + a11, a20 + a21
    nb0, nb1, nb2 = b00 + b01, b10 + b11, b20 + b21
    empty_a = (na0 == 0) + (na1 == 0) + (na2 == 0)
    empty_b = (nb0 == 0) + (nb1 == 0) + (nb2 == 0)
    if empty_a > 1 or empty_b > 1:
        return 0.0, 0
    df = 4 >> (empty_a + empty_b)
    n0 = a00 + a10 + a20
    n1 = a01 + a11 + a21
    total = n0 + n1
    # S(n) - [S(n_ab) + S(n_ak) + S(n_bk) - S(n_a) - S(n_b) - S(n_k) - N ln N] - N ln N
    s = 0.0
    for a in range(3):
        for b in range(3):
            c0 = t[a, b, 0]
            c1 = t[a, b, 1]
            s += xlx[c0] + xlx[c1] - xlx[c0 + c1]
    s -= xlx[a00] + xlx[a01] + xlx[a10] + xlx[a11] + xlx[a20] + xlx[a21]
    s -= xlx[b00] + xlx[b01] + xlx[b10] + xlx[b11] + xlx[b20] + xlx[b21]
    s += xlx[na0] + xlx[na1] + xlx[na2] + xlx[nb0] + xlx[nb1] + xlx[nb2] + xlx[n0] + xlx[n1]
    # tau * N = sum_ab n_ab / (n_a n_b) * sum_k n_ak n_bk / n_k
    i0 = 1.0 / n0 if n0 > 0 else 0.0
    i1 = 1.0 / n1 if n1 > 0 else 0.0
    ra0 = 1.0 / na0 if na0 > 0 else 0.0
    ra1 = 1.0 / na1 if na1 > 0 else 0.0
    ra2 = 1.0 / na2 if na2 > 0 else 0.0
    rb0 = 1.0 / nb0 if nb0 > 0 else 0.0
    rb1 = 1.0 / nb1 if nb1 > 0 else 0.0
    rb2 = 1.0 / nb2 if nb2 > 0 else 0.0
    tau = 0.0
    tau += (t[0, 0, 0] + t[0, 0, 1]) * ra0 * rb0 * (a00 * b00 * i0 + a01 * b01 * i1)
    tau += (t[0, 1, 0] + t[0, 1, 1]) * ra0 * rb1 * (a00 * b10 * i0 + a01 * b11 * i1)
    tau += (t[0, 2, 0] + t[0, 2, 1]) * ra0 * rb2 * (a00 * b20 * i0 + a01 * b21 * i1)
    tau += (t[1, 0, 0] + t[1, 0, 1]) * ra1 * rb0 * (a10 * b00 * i0 + a11 * b01 * i1)
    tau += (t[1, 1, 0] + t[1, 1, 1]) * ra1 * rb1 * (a10 * b10 * i0 + a11 * b11 * i1)
    tau += (t[1, 2, 0] + t[1, 2, 1]) * ra1 * rb2 * (a10 * b20 * i0 + a11 * b21 * i1)
    tau += (t[2, 0, 0] + t[2, 0, 1]) * ra2 * rb0 * (a20 * b00 * i0 + a21 * b01 * i1)
    tau += (t[2, 1, 0] + t[2, 1, 1]) * ra2 * rb1 * (a20 * b10 * i0 + a21 * b11 * i1)
    tau += (t[2, 2, 0] + t[2, 2, 1]) * ra2 * rb2 * (a20 * b20 * i0 + a21 * b21 * i1)
    ftotal = float(total)
    # L = 2 [S(n) - sum n ln P - N ln N + N ln tau] with tau = (tau * N) / N, P's N^-1 folded in.
    return 2.0 * (s + ftotal * math.log(tau / ftotal)), df
