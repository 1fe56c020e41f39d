"""Chi-square upper tails and their inverses for the DFs the BOOST test uses (1, 2, 4).

Closed forms keep full precision far into the tail where 1 - cdf would round to 0:
df 1: erfc(sqrt(x/2)); df 2: exp(-x/2); df 4: exp(-x/2) (1 + x/2). ``chi2_logsf`` gives the
natural log of the tail for statistics so large that even the closed form underflows.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np


@nb.njit(cache=True)
def chi2_sf(x: float, df: int) -> float:
    """Upper tail P(X >= x) of chi-square(df) for df in {1, 2, 4} (``nan`` otherwise)."""
    if x <= 0.0:
        return 1.0
    if df == 4:
        return math.exp(-0.5 * x) * (1.0 + 0.5 * x)
    if df == 2:
        return math.exp(-0.5 * x)
    if df == 1:
        return math.erfc(math.sqrt(0.5 * x))
    return math.nan


@nb.njit(cache=True)
def chi2_logsf(x: float, df: int) -> float:
    """Natural log of :func:`chi2_sf`, finite where the tail itself underflows."""
    if x <= 0.0:
        return 0.0
    if df == 4:
        return -0.5 * x + math.log1p(0.5 * x)
    if df == 2:
        return -0.5 * x
    if df == 1:
        p = math.erfc(math.sqrt(0.5 * x))
        if p > 1e-300:
            return math.log(p)
        # Asymptotic erfc(z) ~ exp(-z^2) / (z sqrt(pi)) (1 - 1/(2z^2) + 3/(4z^4)), z^2 = x/2.
        z2 = 0.5 * x
        return -z2 - 0.5 * math.log(z2) - 0.5 * math.log(math.pi) + math.log1p(-0.5 / z2 + 0.75 / (z2 * z2))
    return math.nan


def chi2_isf(p: float, df: int) -> float:
    """Inverse of :func:`chi2_sf`: the x with ``chi2_sf(x, df) == p`` (bisection to ~1 ulp)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    lo, hi = 0.0, 1.0
    while chi2_sf(hi, df) > p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if chi2_sf(mid, df) > p:
            lo = mid
        else:
            hi = mid
    return hi


def thresholds_by_df(p: float) -> np.ndarray:
    """Chi-square thresholds indexed by DF (entries 1, 2, 4 filled; others inf)."""
    out = np.full(5, np.inf)
    for df in (1, 2, 4):
        out[df] = chi2_isf(p, df)
    return out


def neglog10_p(x: np.ndarray, df: np.ndarray) -> np.ndarray:
    """-log10 P for arrays of statistics and DFs (for plots; exact far into the tail)."""
    x = np.asarray(x, dtype=np.float64)
    df = np.asarray(df)
    out = np.empty(x.shape)
    flat_x, flat_df, flat_out = x.ravel(), df.ravel(), out.ravel()
    for k in range(flat_x.size):
        flat_out[k] = -chi2_logsf(flat_x[k], int(flat_df[k])) / math.log(10.0)
    return out
