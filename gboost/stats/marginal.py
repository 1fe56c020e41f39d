"""Single-locus tests for every SNP (the Manhattan plot), from the per-SNP genotype counts.

* BOOST's marginal statistic: the likelihood ratio of genotype x status, 2N * MI(genotype; status)
  = G statistic of the 3x2 table, chi-square with (occupied genotype classes - 1) DF (2 normally).
* PLINK's 1-df allelic test (``--assoc``'s CHISQ): Pearson chi-square of the 2x2 allele x status
  table.
"""
from __future__ import annotations


import numpy as np

from gboost.runtime.numba_cache import cached_njit
from gboost.stats.pvalues import chi2_sf


def genotype_lr(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """G statistic and DF per SNP from counts ``(p, 3, 2)`` [type, class]."""
    c = counts.astype(np.float64)
    n = c.sum(axis=(1, 2), keepdims=True)
    row = c.sum(axis=2, keepdims=True)
    col = c.sum(axis=1, keepdims=True)
    expected = row * col / np.where(n > 0, n, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(c > 0, c * np.log(c / expected), 0.0)
    stat = 2.0 * terms.sum(axis=(1, 2))
    occupied = (row[:, :, 0] > 0).sum(axis=1)
    both_classes = (col[:, 0, :] > 0).all(axis=1)
    df = np.where(both_classes, np.maximum(occupied - 1, 0), 0)
    return np.maximum(stat, 0.0), df


def allelic_chisq(counts: np.ndarray) -> np.ndarray:
    """PLINK's 1-df allelic chi-square per SNP (A1 = type 2 allele count, as in encode)."""
    c = counts.astype(np.float64)
    # Alleles per class: copies of the counted allele = 2*n2 + n1; the other = 2*n0 + n1.
    a = np.stack([2 * c[:, 2, :] + c[:, 1, :], 2 * c[:, 0, :] + c[:, 1, :]], axis=1)  # (p, 2 alleles, 2 classes)
    n = a.sum(axis=(1, 2), keepdims=True)
    expected = a.sum(axis=2, keepdims=True) * a.sum(axis=1, keepdims=True) / np.where(n > 0, n, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(expected > 0, (a - expected) ** 2 / expected, 0.0)
    return terms.sum(axis=(1, 2))


def marginal_tests(counts: np.ndarray, *, allelic: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    """(stat, P, nominal DF) per SNP: genotype LR (2 df) by default, allelic chi-square (1 df)."""
    if allelic:
        stat = allelic_chisq(counts)
        df = np.ones(len(stat), np.int64)
        nominal = 1
    else:
        stat, df = genotype_lr(counts)
        nominal = 2
    return stat, _sf_many(np.ascontiguousarray(stat, np.float64), np.ascontiguousarray(df, np.int64)), nominal


@cached_njit(nogil=True)  # runs beside the GPU screen (gboost.pipeline.scan.HostWork)
def _sf_many(stat, df):
    out = np.empty(stat.shape[0])
    for k in range(stat.shape[0]):
        out[k] = chi2_sf(stat[k], df[k]) if df[k] > 0 else np.nan
    return out


def minor_allele_frequency(counts: np.ndarray) -> np.ndarray:
    """MAF over called genotypes, both classes (type t = t copies of A1)."""
    c = counts.sum(axis=2).astype(np.float64)
    alleles = 2 * c.sum(axis=1)
    a1 = 2 * c[:, 2] + c[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(alleles > 0, a1 / alleles, np.nan)
    return np.minimum(f, 1 - f)
