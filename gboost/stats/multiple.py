"""Linkage disequilibrium of a pair and multiple-testing corrections for reported pairs."""
from __future__ import annotations

import numpy as np


def r2_from_tables(tables: np.ndarray) -> np.ndarray:
    """Squared Pearson correlation of the two SNPs' genotype codes (0/1/2) over the samples called
    at both, from the pairs' 3x3x2 tables (classes pooled): the genotypic r^2 PLINK's --r2 reports
    for unphased data. NaN where a SNP is monomorphic within the pair."""
    t = np.asarray(tables, dtype=np.float64).sum(axis=-1)  # (m, 3, 3)
    n = np.maximum(t.sum(axis=(1, 2)), 1.0)  # an empty table gives NaN below, not a warning
    g = np.arange(3.0)
    ex = np.einsum("mab,a->m", t, g) / n
    ey = np.einsum("mab,b->m", t, g) / n
    exx = np.einsum("mab,a->m", t, g * g) / n
    eyy = np.einsum("mab,b->m", t, g * g) / n
    exy = np.einsum("mab,a,b->m", t, g, g) / n
    vx, vy = exx - ex * ex, eyy - ey * ey
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = (exy - ex * ey) ** 2 / (vx * vy)
    return np.where((vx > 0) & (vy > 0), np.minimum(r2, 1.0), np.nan)


def bh_qvalues(p: np.ndarray, m: int) -> np.ndarray:
    """Benjamini-Hochberg q values of the smallest P values of a family of ``m`` tests.

    Only the pairs that passed the screen have P values; every other test has P >= epi1 (its KSA,
    an upper bound of the exact statistic, was under the threshold). q_(i) = min over k >= i of
    m p_(k) / k, taken over the known P values: exact wherever it is below epi1, an upper bound
    above it.
    """
    p = np.asarray(p, dtype=np.float64)
    if p.size == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, p.size + 1)
    q_sorted = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty_like(p)
    out[order] = np.minimum(q_sorted, 1.0)
    return out
