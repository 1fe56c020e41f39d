"""Exact test of screened pairs, vectorised over a batch of tables (shared by every engine)."""
from __future__ import annotations

import numba as nb
import numpy as np

from gboost.stats.boost import ipf_stat, plink_df
from gboost.stats.pvalues import chi2_sf


# nogil: the scan runs these in a background thread while the GPU screens (gboost.scan.HostWork).
@nb.njit(parallel=True, cache=True, nogil=True)
def _exact_batch(tables, stat, df, pval, conv):
    for m in nb.prange(tables.shape[0]):
        d = plink_df(tables[m])
        df[m] = d
        if d == 0:
            stat[m] = np.nan
            pval[m] = np.nan
            conv[m] = False
            continue
        s, c = ipf_stat(tables[m])
        stat[m] = s
        conv[m] = c
        pval[m] = chi2_sf(s, d)


def exact_tests(tables: np.ndarray):
    """IPF statistic, PLINK DF, P and convergence flag for tables ``(m, 3, 3, 2)``."""
    tables = np.ascontiguousarray(tables, dtype=np.int64)
    m = tables.shape[0]
    stat, pval = np.empty(m), np.empty(m)
    df, conv = np.empty(m, np.int64), np.empty(m, np.bool_)
    if m:
        _exact_batch(tables, stat, df, pval, conv)
    return stat, df, pval, conv
