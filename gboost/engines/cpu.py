"""CPU engine: numba-compiled AND+popcount over SNP-major bit planes, all cores.

Each tile is a block of rows x a block of columns of the triangle; rows are spread over threads
(``prange``) and every thread streams the tile's column SNPs, whose planes stay in L2. A pair's
table comes from :func:`gboost.stats.table.pair_table`, its screen from
:func:`gboost.stats.boost.ksa_stat`: the same functions the tests check against brute force.
"""
from __future__ import annotations

import os

import numba as nb
import numpy as np

from gboost.engines.base import Engine, SummaryPartial, Thresholds, Tile, TileResult
from gboost.runtime.numba_cache import cached_njit
from gboost.stats.fastksa import ksa_df_lookup, xlogx_table
from gboost.stats.table import pair_table, popcount64
from gboost.data.study import Study
from gboost.data.planes import PlaneSource
from gboost.pipeline.tiles import better


@cached_njit(inline="always")
def _count_fused(planes, counts, has_missing, w_ctrl, i, j, t):
    """The table of (i, j) in one pass over the words: 6 loads, up to 9 AND+popcounts per word.

    Same result as :func:`gboost.stats.table.pair_table` (the tests compare them); fusing the
    cells into one loop reads each word once instead of once per cell.
    """
    n_words = planes.shape[2]
    direct = has_missing[i] or has_missing[j]
    for k in range(2):
        w0 = 0 if k == 0 else w_ctrl
        w1 = w_ctrl if k == 0 else n_words
        c00 = c01 = c02 = c10 = c11 = c12 = c20 = c21 = c22 = np.uint64(0)
        if direct:
            for w in range(w0, w1):
                x0 = planes[i, 0, w]
                x1 = planes[i, 1, w]
                x2 = planes[i, 2, w]
                y0 = planes[j, 0, w]
                y1 = planes[j, 1, w]
                y2 = planes[j, 2, w]
                c00 += popcount64(x0 & y0)
                c01 += popcount64(x0 & y1)
                c02 += popcount64(x0 & y2)
                c10 += popcount64(x1 & y0)
                c11 += popcount64(x1 & y1)
                c12 += popcount64(x1 & y2)
                c20 += popcount64(x2 & y0)
                c21 += popcount64(x2 & y1)
                c22 += popcount64(x2 & y2)
            t[0, 0, k] = c00
            t[0, 1, k] = c01
            t[0, 2, k] = c02
            t[1, 0, k] = c10
            t[1, 1, k] = c11
            t[1, 2, k] = c12
            t[2, 0, k] = c20
            t[2, 1, k] = c21
            t[2, 2, k] = c22
        else:
            for w in range(w0, w1):
                x0 = planes[i, 0, w]
                x1 = planes[i, 1, w]
                y0 = planes[j, 0, w]
                y1 = planes[j, 1, w]
                c00 += popcount64(x0 & y0)
                c01 += popcount64(x0 & y1)
                c10 += popcount64(x1 & y0)
                c11 += popcount64(x1 & y1)
            t[0, 0, k] = c00
            t[0, 1, k] = c01
            t[1, 0, k] = c10
            t[1, 1, k] = c11
            t[0, 2, k] = counts[i, 0, k] - t[0, 0, k] - t[0, 1, k]
            t[1, 2, k] = counts[i, 1, k] - t[1, 0, k] - t[1, 1, k]
            for b in range(3):
                t[2, b, k] = counts[j, b, k] - t[0, b, k] - t[1, b, k]


@cached_njit(parallel=True, nogil=True)  # the GUI's thread stays free during a CPU scan
def _screen_tile(planes, counts, has_missing, w_ctrl, xlx, thr1, thr2, i0, i1, j0, j1, ksa_out, df_out, surv_out,
                 rn_sig, rn_tot, rbest, rbest_p):
    """KSA and DF of every pair of the tile, its survivors (KSA > screen threshold for the DF),
    and the row SNPs' summary partials, each thread owning whole rows (no shared writes)."""
    ni = i1 - i0
    for r in nb.prange(ni):
        i = i0 + r
        t = np.zeros((3, 3, 2), dtype=np.int64)
        jstart = max(j0, i + 1)
        for c in range(j1 - j0):
            j = j0 + c
            if j < jstart:
                df_out[r, c] = -1  # j <= i: not a pair (lower triangle of a diagonal tile)
                continue
            _count_fused(planes, counts, has_missing, w_ctrl, i, j, t)
            ksa, df = ksa_df_lookup(t, xlx)
            df_out[r, c] = df
            ksa_out[r, c] = ksa
            if df <= 0:
                continue
            rn_tot[r] += 1
            if ksa > thr1[df]:
                surv_out[r, c] = 1  # its summary value comes from the exact test, later
                continue
            if ksa >= thr2[df]:
                rn_sig[r] += 1
            if better(ksa, j, rbest[r], rbest_p[r], i):
                rbest[r] = ksa
                rbest_p[r] = j


@cached_njit(parallel=True, nogil=True)
def _column_summary(ksa, df, surv, thr2, i0, j0, cn_sig, cn_tot, cbest, cbest_p):
    """The column SNPs' summary partials over the tile's valid, non-surviving pairs."""
    for c in nb.prange(ksa.shape[1]):
        for r in range(ksa.shape[0]):
            d = df[r, c]
            if d <= 0:
                continue
            cn_tot[c] += 1
            if surv[r, c]:
                continue
            v = ksa[r, c]
            if v >= thr2[d]:
                cn_sig[c] += 1
            if better(v, i0 + r, cbest[c], cbest_p[c], j0 + c):
                cbest[c] = v
                cbest_p[c] = i0 + r


# nogil: the calibration (gboost/stats/calibration.py) and the ledger's replay call this beside a GPU screen,
# whose worker thread must take the GIL between tiles. Holding it, the calibration's 200,000 tables
# of a biobank's samples (seconds of work) would leave the GPU idle between tiles for as long.
@cached_njit(nogil=True)
def _tables_of(planes, counts, has_missing, w_ctrl, ii, jj):
    out = np.zeros((ii.shape[0], 3, 3, 2), dtype=np.int64)
    for m in range(ii.shape[0]):
        pair_table(planes, counts, has_missing, w_ctrl, ii[m], jj[m], out[m])
    return out


class CpuEngine(Engine):
    name = "cpu"
    overlaps_host_work = False  # the screen has every core already

    def __init__(self, threads: int | None = None, tile: int | None = None):
        self.threads = threads or os.cpu_count() or 1
        self._tile = tile
        self.study: Study | None = None

    def describe(self) -> str:
        return f"CPU (numba, {self.threads} threads)"

    def prepare(self, study: Study, thresholds: Thresholds, planes: PlaneSource | None = None) -> None:
        self.study = study
        # The planes as the encoder writes them (a background encode, gboost/data/load.py), read per tile.
        self.planes = planes if planes is not None else PlaneSource.complete(study.planes)
        self.thr = thresholds
        self.has_missing = np.ascontiguousarray(study.has_missing)
        self.xlx = xlogx_table(study.n_samples)
        nb.set_num_threads(min(self.threads, nb.config.NUMBA_NUM_THREADS))

    def tile_snps(self) -> int:
        if self._tile:
            return self._tile
        # Keep a column block's planes (tile x 3 x W words) near 1 MiB so it stays in L2.
        bytes_per_snp = 3 * self.study.planes.shape[2] * 8
        return int(np.clip((1 << 20) // bytes_per_snp, 64, 1024))

    def run_tile(self, tile: Tile) -> TileResult:
        s = self.study
        planes = self.planes.read(tile.j1)  # the tile's SNPs are all < j1
        ni, nj = tile.i1 - tile.i0, tile.j1 - tile.j0
        ksa = np.empty((ni, nj))
        df = np.empty((ni, nj), np.int8)
        surv = np.zeros((ni, nj), np.int8)
        rows, cols = SummaryPartial.empty(tile.i0, ni), SummaryPartial.empty(tile.j0, nj)
        _screen_tile(planes, s.counts, self.has_missing, s.layout.w_ctrl, self.xlx, self.thr.screen,
                     self.thr.summary, tile.i0, tile.i1, tile.j0, tile.j1, ksa, df, surv,
                     rows.n_sig, rows.n_tot, rows.best, rows.best_partner)
        _column_summary(ksa, df, surv, self.thr.summary, tile.i0, tile.j0,
                        cols.n_sig, cols.n_tot, cols.best, cols.best_partner)
        rr, cc = np.nonzero(surv)
        ii = (rr + tile.i0).astype(np.int64)
        jj = (cc + tile.j0).astype(np.int64)
        tables = _tables_of(planes, s.counts, self.has_missing, s.layout.w_ctrl, ii, jj)
        return TileResult(tile, ii, jj, ksa[rr, cc], tables, int(rows.n_tot.sum()), rows, cols)


# The same on every core, for the calibration's 200,000 pairs (gboost/stats/calibration.py): on one core they
# can take longer than a fast GPU's whole screen, and the command would wait for them. Only from a thread
# that may run numba-parallel kernels (the host-work thread, which runs the parallel exact tests too, or
# the only thread): the ledger's replay keeps the serial loop.
@cached_njit(nogil=True, parallel=True)
def _tables_of_parallel(planes, counts, has_missing, w_ctrl, ii, jj):
    out = np.zeros((ii.shape[0], 3, 3, 2), dtype=np.int64)
    for m in nb.prange(ii.shape[0]):
        pair_table(planes, counts, has_missing, w_ctrl, ii[m], jj[m], out[m])
    return out


def tables_of(study: Study, i: np.ndarray, j: np.ndarray, *, parallel: bool = False) -> np.ndarray:
    """Tables ``(m, 3, 3, 2)`` of the pairs (i[k], j[k]) of a study (host planes); ``parallel`` on
    every core numba allows this thread (see _tables_of_parallel for where that is safe). The
    study's planes must be written (its callers wait for a background encode: the calibration's
    host job, the ledger's replay)."""
    fn = _tables_of_parallel if parallel else _tables_of
    return fn(study.planes, study.counts, np.ascontiguousarray(study.has_missing), study.layout.w_ctrl,
              np.ascontiguousarray(i, np.int64), np.ascontiguousarray(j, np.int64))
