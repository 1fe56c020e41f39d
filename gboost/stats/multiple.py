"""Linkage disequilibrium of a pair and multiple-testing corrections for reported pairs."""
from __future__ import annotations

import numpy as np

from gboost.runtime.numba_cache import cached_njit


def r2_from_tables(tables: np.ndarray) -> np.ndarray:
    """Squared Pearson correlation of the two SNPs' genotype codes (0/1/2) over the samples called
    at both, from the pairs' 3x3x2 tables (classes pooled): the genotypic r^2 PLINK's --r2 reports
    for unphased data. NaN where a SNP is monomorphic within the pair.

    One compiled pass, no temporaries (pairs.tsv's R2 column: NumPy's version, with its temporaries,
    was most of pairs.tsv's formatting, bench/bench_write.py); :func:`r2_from_tables_numpy` is its
    reference."""
    t = np.ascontiguousarray(tables, dtype=np.int64).reshape(-1, 18)
    out = np.empty(len(t))
    _r2_rows(t, out)
    return out


def r2_at(tables: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """:func:`r2_from_tables` of ``tables[rows]``, without gathering the tables (pairs.tsv's
    R2 of reported pairs, read from the screened pairs' tables)."""
    t = np.ascontiguousarray(tables, dtype=np.int64).reshape(-1, 18)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    out = np.empty(len(rows))
    _r2_rows_at(t, rows, out)
    return out


@cached_njit(nogil=True)
def _r2_rows(t, out):
    _r2_rows_at(t, np.arange(t.shape[0]), out)


@cached_njit(nogil=True)
def _r2_rows_at(t, rows, out):
    # Every sum below is of integer counts times 0, 1, 2 or 4: exact in float64, so in any order
    # the same as the reference's; the operations after them are the reference's, in its order.
    for m in range(rows.shape[0]):
        r = rows[m]
        n = sx = sy = sxx = syy = sxy = 0.0
        for a in range(3):
            for b in range(3):
                c = float(t[r, 6 * a + 2 * b] + t[r, 6 * a + 2 * b + 1])
                n += c
                sx += c * a
                sy += c * b
                sxx += c * (a * a)
                syy += c * (b * b)
                sxy += c * (a * b)
        n = max(n, 1.0)
        ex, ey, exx, eyy, exy = sx / n, sy / n, sxx / n, syy / n, sxy / n
        vx = exx - ex * ex
        vy = eyy - ey * ey
        if vx > 0 and vy > 0:
            d = exy - ex * ey
            out[m] = min(d * d / (vx * vy), 1.0)
        else:
            out[m] = np.nan


def r2_from_tables_numpy(tables: np.ndarray) -> np.ndarray:
    """The reference of :func:`r2_from_tables`, in array operations (tests hold the two equal)."""
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
    order = argsort_stable(p)
    ranked = p[order] * m / np.arange(1, p.size + 1)
    q_sorted = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty_like(p)
    out[order] = np.minimum(q_sorted, 1.0)
    return out


def argsort_stable(values: np.ndarray, threads: int | None = None, min_size: int = 200_000) -> np.ndarray:
    """``np.argsort(values, kind="stable")``, the work spread over ``threads`` (default: every
    core) for large arrays: runs of the array sorted side by side (NumPy's sorts release the GIL),
    then one stable sort of the values laid out run by run, which timsort finishes by merging
    the runs. Equal values keep their order either way: the runs are in array order, and each
    sort is stable. (pairs.tsv's order and q values: on a large file each sort on one core is a
    visible part of the writing, bench/bench_write.py.)"""
    import os

    values = np.asarray(values)
    n = len(values)
    threads = threads or os.cpu_count() or 1
    if threads < 2 or n < min_size:
        return np.argsort(values, kind="stable")
    from concurrent.futures import ThreadPoolExecutor

    cuts = np.linspace(0, n, threads + 1).astype(np.int64).tolist()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gboost-sort") as pool:
        runs = list(pool.map(lambda ab: np.argsort(values[ab[0]:ab[1]], kind="stable") + ab[0], zip(cuts, cuts[1:])))
    order = np.concatenate(runs)
    return order[np.argsort(values[order], kind="stable")]
