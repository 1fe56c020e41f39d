"""Plot-ready arrays derived from a ScanResult (NumPy only; no Qt).

These are presentation helpers; the statistics themselves come from the core
(:func:`gboost.stats.pvalues.neglog10_p`, :func:`gboost.stats.pvalues.chi2_isf`).
"""
from __future__ import annotations

from types import SimpleNamespace

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


def single_neglog10(single) -> np.ndarray:
    """−log10 P of a :func:`single_locus` test per SNP (NaN where untested)."""
    return _neglog10(single.p, single.stat, single.df)


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


def single_locus(study, allelic: bool = False) -> SimpleNamespace:
    """The single-locus test of ``study`` before any scan, by the core's functions (the same
    numbers a scan's marginal.tsv has): ``stat``, ``p``, ``df`` (nominal) and ``test`` (its name).
    A quantitative trait gets the additive linear test; a case-control study the genotype LR
    (2 df) or, with ``allelic``, the allelic χ² (1 df)."""
    if getattr(study, "quantitative", False):
        from gboost.engines.qt_cpu import qt_planes
        from gboost.pipeline.qt_scan import marginal_linear

        _beta, stat, p = marginal_linear(study, qt_planes(study))
        return SimpleNamespace(stat=stat, p=p, df=1, test="additive linear test, 1 df")
    from gboost.stats.marginal import marginal_tests

    stat, p, df = marginal_tests(study.counts, allelic=allelic)
    return SimpleNamespace(stat=stat, p=p, df=df, test=test_name(study, allelic))


def test_name(study, allelic: bool) -> str:
    """The single-locus test's name, as the Manhattan's axis gives it."""
    if getattr(study, "quantitative", False):
        return "additive linear test, 1 df"
    return "allelic χ², 1 df" if allelic else "genotype LR, 2 df"  # short: the axis of a 768-pixel window


def best_interaction(pairs, n_snps: int) -> tuple[np.ndarray, np.ndarray]:
    """Per SNP: the largest −log10 P of its reported pairs (NaN for a SNP in none) and the
    partner of that pair (−1 for none; of equal P values the pair listed first)."""
    best = np.full(n_snps, np.nan)
    partner = np.full(n_snps, -1, np.int64)
    if pairs is None or not len(pairs):
        return best, partner
    nlp = pairs_neglog10(pairs)
    snp = np.concatenate([pairs.i, pairs.j]).astype(np.int64)
    other = np.concatenate([pairs.j, pairs.i]).astype(np.int64)
    val = np.concatenate([nlp, nlp])
    val = np.where(np.isnan(val), -np.inf, val)
    order = np.lexsort((-val, snp))  # by SNP, the strongest first (stable: the first listed on ties)
    first = order[np.r_[True, snp[order][1:] != snp[order][:-1]]]
    best[snp[first]] = val[first]
    partner[snp[first]] = other[first]
    best[best == -np.inf] = np.nan  # a SNP whose only pairs have no P
    return best, partner


def attach_qt_adjusted(result) -> None:
    """A QT scan with covariates (``result.qt``, shown through :func:`as_scan_result`): its
    reported pairs get ``qt_adj``, the adjusted test's six columns (BETA_ADJ, SE_ADJ, STAT_ADJ,
    P_ADJ, N_ADJ, DF_ADJ) of each reported row, as its pairs.tsv writes them beside the
    unadjusted test. The case-control view of the result carries no ``adj`` for them: its
    writer's three adjusted columns are another test's."""
    qt = getattr(result, "qt", None)
    adj = getattr(getattr(qt, "screened", None), "adj", None)
    if adj is None:
        return
    idx, _q = result.reported_rows
    result.reported.qt_adj = tuple(np.asarray(col)[idx] for col in adj)


FAMILY_WISE = 0.05  # the level of --perm's threshold in run.json ("threshold_0.05") and in the views


def permutation_threshold(perm) -> SimpleNamespace | None:
    """--perm's empirical family-wise 0.05 threshold (``perm``: the result's
    gboost.pipeline.permute.PermResult), as run.json's ``permutations`` gives it: ``stat`` (a pair
    whose STAT is above it has EMP2 ≤ 0.05), ``df`` and ``p`` (the P of that STAT at the df of almost
    every pair: BOOST's 4, the linear QT test's 1; where the Manhattan's −log10 P track draws it) and
    ``neglog10``. ``None`` without permutations or with too few for an EMP2 of 0.05 (fewer than 19)."""
    if perm is None:
        return None
    stat = perm.threshold(FAMILY_WISE)
    if stat is None:
        return None
    df = 1 if perm.trait == "quantitative" else 4
    nlp = float(neglog10_p(np.array([stat]), np.array([df]))[0])
    return SimpleNamespace(stat=float(stat), df=df, p=perm.p_value(stat, df), neglog10=nlp)


def permutation_summary(perm, reported=None) -> str:
    """One line on --perm's outcome: 'N permutations, family-wise 0.05 threshold STAT > t (P < p at
    d df); k reported pairs with EMP2 ≤ 0.05', or why there is no threshold."""
    n = f"{perm.n:,} permutation{'s' if perm.n != 1 else ''}"
    thr = permutation_threshold(perm)
    if thr is None:
        return f"{n}, too few for a family-wise 0.05 threshold (19 or more)"
    text = f"{n}, family-wise 0.05 threshold STAT > {thr.stat:.4g} (P < {thr.p:.3g} at {thr.df} df)"
    emp2 = getattr(reported, "emp2", None)
    if emp2 is not None:
        k = int(np.count_nonzero(np.asarray(emp2) <= FAMILY_WISE))
        text += f"; {k:,} reported pair{'s' if k != 1 else ''} with EMP2 ≤ 0.05"
    return text
