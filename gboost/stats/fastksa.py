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

import numba as nb
import numpy as np


def xlogx_table(n: int) -> np.ndarray:
    """``c * ln(c)`` for c = 0..n (0 ln 0 = 0)."""
    c = np.arange(n + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = c * np.log(c)
    out[0] = 0.0
    return out


@nb.njit(cache=True, inline="always")
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
