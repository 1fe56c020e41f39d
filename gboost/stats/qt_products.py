"""The QT tables as matrix products of bit planes: the NumPy reference for a GPU engine.

For SNP blocks I and J, with P_d the 0/1 matrix (SNPs x samples) of dosage d and M the called
mask, the pair tables of every (i, j) in I x J are products (docs/qt_epistasis.md §4):

    n[i, j, a, b] = (P_a[I] @ P_b[J].T)[i, j]
    S[i, j, a, b] = ((P_a[I] * y) @ P_b[J].T)[i, j]
    Q[i, j]       = ((M[I] * y^2) @ M[J].T)[i, j]

Counts are exact in any float format up to 2^24 (float32) or 2^53 (float64) samples; the trait
sums here are float64 products, equal to :func:`gboost.engines.qt_cpu.pair_sufficient`'s up to
rounding (the tests compare them). A GPU kernel computing the same products should be tested
against this function.
"""
from __future__ import annotations

import numpy as np

from gboost.data.encode import decode_planes
from gboost.data.study import Study


def dosage_matrix(study: Study, snps: np.ndarray) -> np.ndarray:
    """Copies of PLINK's A1 (0/1/2, -1 missing) of ``snps``, samples in plane order."""
    geno, _ = decode_planes(study.planes[snps], study.layout)
    flip = study.a1_flip[snps] if study.a1_flip is not None else np.zeros(len(snps), bool)
    return np.where(flip[:, None] & (geno >= 0), 2 - geno, geno)


def qt_tables_matmul(study: Study, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(n, S, Q)`` of every pair (rows[r], cols[c]): shapes (R, C, 3, 3) int64, (R, C, 3, 3)
    float64 and (R, C) float64, by 18 + 1 dense matrix products."""
    y = np.asarray(study.trait, np.float64)
    gi, gj = dosage_matrix(study, np.asarray(rows)), dosage_matrix(study, np.asarray(cols))
    pi = [(gi == d).astype(np.float64) for d in range(3)]
    pj = [(gj == d).astype(np.float64) for d in range(3)]
    n = np.empty((len(rows), len(cols), 3, 3), np.int64)
    s = np.empty((len(rows), len(cols), 3, 3))
    for a in range(3):
        for b in range(3):
            n[:, :, a, b] = np.rint(pi[a] @ pj[b].T).astype(np.int64)
            s[:, :, a, b] = (pi[a] * y) @ pj[b].T
    q = ((gi >= 0) * (y * y)) @ (gj >= 0).T.astype(np.float64)
    return n, s, q
