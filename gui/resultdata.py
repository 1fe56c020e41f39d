"""Plot-ready arrays derived from a ScanResult (NumPy only; no Qt).

These are presentation helpers; the statistics themselves come from the core
(:func:`gboost.stats.pvalues.neglog10_p`, :func:`gboost.stats.pvalues.chi2_isf`).
"""
from __future__ import annotations

import numpy as np

from gboost.stats.pvalues import chi2_isf, neglog10_p


def _neglog10(p: np.ndarray, stat: np.ndarray, df) -> np.ndarray:
    """−log10 p, exact where p underflowed to 0 (from the statistic, via the core's log-tail)."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -np.log10(p)
    zero = np.flatnonzero(p == 0.0)
    if zero.size:
        dfs = np.broadcast_to(np.asarray(df), p.shape)[zero]
        out[zero] = neglog10_p(np.asarray(stat, dtype=np.float64)[zero], dfs)
    return out


def marginal_neglog10(result) -> np.ndarray:
    """−log10 P of the single-locus test per SNP (NaN where the SNP could not be tested)."""
    return _neglog10(result.marginal_p, result.marginal_stat, result.marginal_df)


def pairs_neglog10(pairs) -> np.ndarray:
    """−log10 P of each pair's exact interaction test."""
    return _neglog10(pairs.p, pairs.stat, pairs.df)


def genomic_inflation(p: np.ndarray, df: int) -> float:
    """λ = median χ² / median of χ²(df), from the median P (the quantile map is monotone).

    NaN when fewer than one finite P value, or the median P is 0 or 1.
    """
    p = np.asarray(p, dtype=np.float64)
    p = p[np.isfinite(p)]
    if not p.size:
        return float("nan")
    med = float(np.median(p))
    if not 0.0 < med < 1.0:
        return float("nan")
    return chi2_isf(med, df) / chi2_isf(0.5, df)


def partners_of(pairs, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(row indices of ``pairs`` involving SNP k, the partner SNP of each row)."""
    rows = np.flatnonzero((pairs.i == k) | (pairs.j == k))
    partners = np.where(pairs.i[rows] == k, pairs.j[rows], pairs.i[rows])
    return rows, partners.astype(np.int64)
