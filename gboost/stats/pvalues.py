"""Chi-square upper tails and their inverses for the DFs the BOOST test uses (1, 2, 4).

Closed forms keep full precision far into the tail where 1 - cdf would round to 0:
df 1: erfc(sqrt(x/2)); df 2: exp(-x/2); df 4: exp(-x/2) (1 + x/2). ``chi2_logsf`` gives the
natural log of the tail for statistics so large that even the closed form underflows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gboost.runtime.numba_cache import cached_njit


@cached_njit()
def chi2_sf(x: float, df: int) -> float:
    """Upper tail P(X >= x) of chi-square(df) for df in {1, 2, 4} (``nan`` otherwise)."""
    if x <= 0.0:
        return 1.0
    h = 0.5 * x
    if df == 2 or df == 4:
        if h >= 31.0:
            # PLINK's DCDFLIB evaluates the tail as (r / h)(1 + s) with r = exp(a ln h - h) in this
            # range; the same order of operations keeps P identical even where it is subnormal.
            a = 0.5 * df
            r = math.exp(a * math.log(h) - h)
            return (r / h) * (1.0 + (1.0 / h if df == 4 else 0.0))
        if df == 4:
            return math.exp(-h) * (1.0 + h)
        return math.exp(-h)
    if df == 1:
        return math.erfc(math.sqrt(h))
    return math.nan


@cached_njit()
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


# PLINK 1.9 turns --epi1/--epi2 into chi-square thresholds with DCDFLIB's bracketing root search
# (relative tolerance 1e-8), which lands up to ~2e-9 relative away from the true quantile. A pair
# whose KSA falls in that sliver is screened differently, so for parity we use PLINK's own values,
# read out of a running plink1.9 (docs/plink_boost_notes.md §3), for the p values people use.
_PLINK_THRESHOLDS_HEX = {  # p: (df4, df2, df1)
    0.5: ("0x1.ada825f93d430p+1", "0x1.62e42fefa39f1p+0", "0x1.d1dada8c3b2b5p-2"),
    0.2: ("0x1.7f457ef3e4097p+2", "0x1.9c041f78b51f1p+1", "0x1.a472a6565b16ap+0"),
    0.1: ("0x1.f1e259ab064b7p+2", "0x1.26bb1bbb62652p+2", "0x1.5a4f3f768f0b8p+1"),
    0.05: ("0x1.2f9b79ebfb63fp+3", "0x1.7f7427c4c76d1p+2", "0x1.ebb4ec31e7f0ep+1"),
    0.01: ("0x1.a8dac2a3cd947p+3", "0x1.26bb1bbb55646p+3", "0x1.a8a2256884ef4p+2"),
    0.005: ("0x1.db873de22fdcdp+3", "0x1.5317a1b949f2dp+3", "0x1.f848b8bd555f0p+2"),
    0.001: ("0x1.27781f8c14d06p+4", "0x1.ba18a998f1cc4p+3", "0x1.5a7b6c0ccba16p+3"),
    5e-4: ("0x1.3ff52a82f1718p+4", "0x1.e6752f96f83ecp+3", "0x1.83b3875e93023p+3"),
    1e-4: ("0x1.7834316c23790p+4", "0x1.26bb1bb237277p+4", "0x1.e45fe3a3d11d2p+3"),
    5e-5: ("0x1.9036a6b35a0dbp+4", "0x1.3ce95eba57f51p+4", "0x1.072b759c98ff4p+4"),
    1e-5: ("0x1.c7927447e6cdbp+4", "0x1.7069e2ae67a84p+4", "0x1.382ec7bfdb173p+4"),
    5e-6: ("0x1.df458804166c2p+4", "0x1.869825a0e7897p+4", "0x1.4d658713ac332p+4"),
    1e-6: ("0x1.0b03c584ea13bp+5", "0x1.ba18a999007fbp+4", "0x1.7ed99bac47838p+4"),
    5e-7: ("0x1.16c164876939fp+5", "0x1.d046ec9837aa9p+4", "0x1.94389c14dc850p+4"),
    1e-7: ("0x1.31eab37780584p+5", "0x1.01e3b843e69b8p+5", "0x1.c5fbda2bff5aep+4"),
    5e-8: ("0x1.3d939016cf523p+5", "0x1.0cfad9c367c42p+5", "0x1.db77f40fcd15cp+4"),
    1e-8: ("0x1.5892939394bf5p+5", "0x1.26bb1bbb65d6fp+5", "0x1.06bae30a8bce9p+5"),
    1e-9: ("0x1.7f0920161d857p+5", "0x1.4b927f334fe5fp+5", "0x1.2a99618729931p+5"),
    1e-10: ("0x1.a557fd128858ep+5", "0x1.7069e2aa2aa4ap+5", "0x1.4e9257b717d26p+5"),
    1e-12: ("0x1.f19914a323cb6p+5", "0x1.ba18a999059e6p+5", "0x1.96c0c62276cd2p+5"),
}


def plink_threshold(p: float, df: int) -> tuple[float, bool]:
    """PLINK 1.9's chi-square threshold for ``p`` at ``df``; second item False where we had to
    use the exact quantile instead (parity then holds except within ~2e-9 of the threshold)."""
    row = _PLINK_THRESHOLDS_HEX.get(float(p))
    if row is not None:
        return float.fromhex(row[{4: 0, 2: 1, 1: 2}[df]]), True
    return chi2_isf(p, df), False


def thresholds_by_df(p: float) -> np.ndarray:
    """Chi-square thresholds indexed by DF (entries 1, 2, 4 filled; others inf), PLINK's values."""
    out = np.full(5, np.inf)
    for df in (1, 2, 4):
        out[df] = plink_threshold(p, df)[0]
    return out


def screen_and_summary_thresholds(epi1: float, epi2: float) -> tuple[np.ndarray, np.ndarray]:
    """Thresholds for --epi1 (screen) and --epi2 (summary N_SIG) as PLINK sets them: when the two
    p values are equal PLINK nudges the summary threshold up by a factor 1 + 2^-44, so a screened
    pair whose exact statistic is below the screen threshold (summary value = the threshold) is
    not counted as significant."""
    t1, t2 = thresholds_by_df(epi1), thresholds_by_df(epi2)
    if epi1 == epi2:
        t2 = t1 * (1.0 + 2.0**-44)
    return t1, t2


def neglog10_p(x: np.ndarray, df: np.ndarray) -> np.ndarray:
    """-log10 P for arrays of statistics and DFs (for plots; exact far into the tail)."""
    x = np.asarray(x, dtype=np.float64)
    df = np.asarray(df)
    out = np.empty(x.shape)
    flat_x, flat_df, flat_out = x.ravel(), df.ravel(), out.ravel()
    for k in range(flat_x.size):
        flat_out[k] = -chi2_logsf(flat_x[k], int(flat_df[k])) / math.log(10.0)
    return out


@dataclass(frozen=True)
class Thresholds:
    """Chi-square thresholds indexed by DF (1, 2, 4): screen from --epi1, summary from --epi2."""

    screen: np.ndarray
    summary: np.ndarray

    @classmethod
    def of(cls, epi1: float, epi2: float) -> "Thresholds":
        return cls(*screen_and_summary_thresholds(epi1, epi2))
