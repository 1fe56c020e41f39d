"""The covariate-adjusted linear test of a pair, its thresholds and its P (docs/qt_epistasis.md §7).

With covariates every pair is tested in the model PLINK 2 fits in its QT ``--epistasis``:

    y ~ 1 + covariates + a + b + a*b     (a, b: A1 dosages 0/1/2)

by least squares over the pair's complete cases (called at both SNPs, every covariate present),
and the Wald test of the a*b coefficient: ``STAT = t^2 = beta^2 / SE^2`` with
``SE^2 = sigma^2 [(X'X)^-1]_ab`` and ``sigma^2 = RSS / df``, ``df = N - rank(X)``. Its P is the
two-sided t tail with those df, whatever their number: under normal errors it is the exact null
distribution (the normal tail of the unadjusted test is its large-df limit, within 1 % of it from
about 5,000 df at 4 SE), so a small study, or a pair whose complete cases are few, is not
anti-conservative, and one rule holds for every pair. Each pair's df depends on its complete
cases, so the screen's epi1 and epi2 thresholds are per df (:func:`t_thresholds`).
"""
from __future__ import annotations

import numpy as np

# A column whose sum of squares left after the columns before it is below this fraction of its
# own is collinear with them (numerically; no VIF rule): a covariate column is then left out of
# the pair's fit, a genotype column (a, b or a*b) fails the pair.
COLLINEAR_TOL = 1e-9
# The screen keeps pairs slightly below the epi1 threshold: which rows are written is decided on
# the re-test's exact P, so a threshold a few ulps off at some df loses no pair.
SCREEN_SLACK = 1e-9


def t_thresholds(epi: float, df_lo: int, df_hi: int) -> np.ndarray:
    """``t^2`` at two-sided P = ``epi`` for df = ``df_lo .. df_hi`` (index ``df - df_lo``); 0 for
    ``epi = 1`` (every pair). ``df_lo >= 1``."""
    from scipy.special import stdtrit

    df = np.arange(df_lo, df_hi + 1, dtype=np.float64)
    if epi >= 1.0:
        return np.zeros(len(df))
    return stdtrit(df, epi / 2.0) ** 2


def t_p(stat: np.ndarray, df: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Two-sided t-test P of Wald statistics ``stat`` (t^2) with ``df`` residual degrees of
    freedom where ``ok``, NaN elsewhere."""
    from scipy.special import stdtr

    stat = np.asarray(stat, np.float64)
    ok = np.asarray(ok, bool)
    d = np.where(ok, np.asarray(df, np.float64), 1.0)
    with np.errstate(invalid="ignore"):
        t = np.sqrt(np.where(ok, stat, 0.0))
        return np.where(ok, 2.0 * stdtr(d, -t), np.nan)


def model_formula(names: list[str]) -> str:
    """The adjusted model as run.json names it."""
    return "y ~ 1 + " + "".join(f"{n} + " for n in names) + "a + b + a*b"
