"""The regional (LocusZoom-style) view's data: the SNPs around one SNP, their −log10 P and their
LD with it (NumPy and the core's functions; no Qt).

A region is every SNP of the study on the centre SNP's chromosome within ``half_width_bp`` of its
position. Each SNP gets two values: −log10 P of its best interaction, from the scan's per-SNP
summary (PLINK's .epi.cc.summary BEST_CHISQ, the largest statistic over all its valid partners, so
every SNP scanned has one, not only those of reported pairs), and −log10 P of the single-locus
test (marginal.tsv's P). The colour is the genotypic r² of each SNP with the centre one, from the
study's own genotypes: the same r² as pairs.tsv's R2 column (:func:`gboost.stats.multiple.r2_from_tables`
of the two SNPs' tables, samples called at both).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_HALF_WIDTH_KB = 250
# LocusZoom's r² classes and colours: (lower bound, colour); a SNP without an r² (a SNP
# monomorphic among the samples called at both) is grey.
LD_BINS = ((0.8, "#d43f3a"), (0.6, "#eea236"), (0.4, "#5cb85c"), (0.2, "#46b8da"), (0.0, "#357ebd"))
NO_LD = "#a0a0a0"
CENTRE = "#9632b8"  # the selected SNP: LocusZoom's purple diamond

# y: what each SNP's height is
BEST_INTERACTION = "best"
SINGLE_LOCUS = "single"


def ld_colour(r2: float) -> str:
    """The colour of an r² (its LocusZoom class; grey for NaN)."""
    if not np.isfinite(r2):
        return NO_LD
    for lo, colour in LD_BINS:
        if r2 >= lo:
            return colour
    return LD_BINS[-1][1]


def ld_colours(r2: np.ndarray) -> list[str]:
    return [ld_colour(float(v)) for v in np.asarray(r2, np.float64)]


def region_snps(variants, k: int, half_width_bp: float) -> np.ndarray:
    """Indices (in position order) of the SNPs on SNP ``k``'s chromosome within ``half_width_bp``
    of its position, ``k`` among them."""
    chrom, bp = variants.chrom, np.asarray(variants.bp, np.int64)
    same = np.flatnonzero((np.asarray(chrom) == chrom[k]) & (np.abs(bp - bp[k]) <= half_width_bp))
    return same[np.argsort(bp[same], kind="stable")]


def ld_with(study, k: int, snps: np.ndarray) -> np.ndarray:
    """Genotypic r² of SNP ``k`` with each of ``snps`` over the samples called at both (the
    pairs' 3x3x2 tables from the study's bit planes, classes pooled); NaN where either is
    monomorphic there. r² of ``k`` with itself is 1 where it is polymorphic."""
    from gboost.engines.cpu import tables_of
    from gboost.stats.multiple import r2_from_tables

    snps = np.asarray(snps, np.int64)
    if not len(snps):
        return np.zeros(0)
    return r2_from_tables(tables_of(study, np.full(len(snps), int(k), np.int64), snps))


def best_interaction_df(result) -> int:
    """The summary statistic's nominal degrees of freedom: BOOST's 4-df interaction test; the
    linear QT test's 1 df."""
    return 1 if getattr(result, "qt", None) is not None else 4


@dataclass
class Region:
    """One panel of the regional view: the SNPs around ``centre``."""

    centre: int
    half_width_bp: int
    snps: np.ndarray  # study indices, position order
    bp: np.ndarray
    best: np.ndarray  # −log10 P of each SNP's best interaction (summary), NaN where none
    best_partner: np.ndarray  # each SNP's best partner in the summary (-1: none)
    single: np.ndarray  # −log10 P of the single-locus test, NaN where untested
    r2: np.ndarray  # with ``centre``

    def y(self, what: str) -> np.ndarray:
        return self.best if what == BEST_INTERACTION else self.single

    def __len__(self) -> int:
        return len(self.snps)


def region(result, k: int, half_width_bp: float, single: np.ndarray | None = None) -> Region:
    """The region of ``half_width_bp`` around SNP ``k`` of ``result.study``; ``single``: the
    single-locus −log10 P of every SNP (default: from ``result``)."""
    from gboost.stats.pvalues import neglog10_p
    from gui.resultdata import marginal_neglog10

    study = result.study
    snps = region_snps(study.variants, int(k), half_width_bp)
    sm = result.summary
    stat = np.asarray(sm.best, np.float64)[snps]
    best = np.full(len(snps), np.nan)
    ok = np.isfinite(stat)
    best[ok] = neglog10_p(np.maximum(stat[ok], 0.0), np.full(int(ok.sum()), best_interaction_df(result)))
    single = marginal_neglog10(result) if single is None else np.asarray(single, np.float64)
    return Region(int(k), int(half_width_bp), snps, np.asarray(study.variants.bp, np.int64)[snps], best,
                  np.asarray(sm.best_partner, np.int64)[snps], single[snps], ld_with(study, int(k), snps))
