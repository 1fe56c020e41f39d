"""Exact test of screened pairs, vectorised over a batch of tables (shared by every engine)."""
from __future__ import annotations

import numba as nb
import numpy as np

from gboost.runtime.numba_cache import cached_njit
from gboost.stats.boost import plink_df
from gboost.stats.plink_order import plink_exact
from gboost.stats.pvalues import chi2_sf


# nogil: the scan runs these in a background thread while the GPU screens (gboost.pipeline.scan.HostWork).
@cached_njit(parallel=True, nogil=True)
def _exact_batch(tables, rev_i, rev_j, stat, df, pval, conv):
    for m in nb.prange(tables.shape[0]):
        d = plink_df(tables[m])
        df[m] = d
        if d == 0:
            stat[m] = np.nan
            pval[m] = np.nan
            conv[m] = False
            continue
        s, c = plink_exact(tables[m], rev_i[m], rev_j[m])
        stat[m] = s
        conv[m] = c
        pval[m] = chi2_sf(s, d)


def exact_tests(tables: np.ndarray, rev_i: np.ndarray | None = None, rev_j: np.ndarray | None = None):
    """IPF statistic, PLINK DF, P and convergence flag for tables ``(m, 3, 3, 2)``, each statistic
    PLINK's double (gboost/stats/plink_order.py): ``rev_i``/``rev_j`` per table whether PLINK swaps
    the alleles of its first and second SNP (None: neither). The orientation changes only the last
    bits, which a statistic of ~0 (a SNP and its duplicate) prints."""
    tables = np.ascontiguousarray(tables, dtype=np.int64)
    m = tables.shape[0]
    rev_i = np.zeros(m, np.bool_) if rev_i is None else np.ascontiguousarray(rev_i, dtype=np.bool_)
    rev_j = np.zeros(m, np.bool_) if rev_j is None else np.ascontiguousarray(rev_j, dtype=np.bool_)
    stat, pval = np.empty(m), np.empty(m)
    df, conv = np.empty(m, np.int64), np.empty(m, np.bool_)
    if m:
        _exact_batch(tables, rev_i, rev_j, stat, df, pval, conv)
    return stat, df, pval, conv
