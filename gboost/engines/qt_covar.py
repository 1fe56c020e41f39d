"""The covariate-adjusted test of every pair on the CPU (numba): the model of gboost/stats/qt_covar.py,
``y ~ 1 + covariates + a + b + a*b`` over each pair's complete cases, exact per pair.

**Whitened covariates.** Samples missing any covariate take part in no pair: the engine's planes
are the QT planes with those samples cleared (:func:`covariate_planes`). Over the others (G) the
design's covariate block Z = [1, covariates] is replaced by an orthonormal basis of its column space,
Zt (the left singular vectors of Z with its columns scaled to unit length; covariates collinear
over G drop out here), and the trait by its residual on it, yt. Neither changes a pair's a*b
coefficient, its SE or its residual df (the same column space on every subset of G), but the
pair's normal equations then start near the identity and near a residual, so they lose no digits
to the covariates' scales or the trait's mean.

**Exact per pair.** A pair's complete cases S are G less the samples missing at either SNP. Its
normal equations of [Zt, a, b, ab] are assembled from per-SNP sums over G and corrections:

* Zt'Zt over S = (over G) - (missing at i) - (missing at j) + (missing at both): the per-SNP Gram
  matrices of the samples missing at a SNP are made once (:func:`covariate_planes`, q x q per SNP
  with missing calls), the both-missing samples (rare) added back per pair;
* Zt'a and a'yt over S = per-SNP sums over the SNP's called samples less the samples called there
  and missing at the partner (walked per pair), likewise for b; Zt'yt, yt'yt and N from the totals
  over G less every sample missing at either;
* Zt'(ab) and (ab)'yt: the samples carrying A1 at both SNPs, walked in sample order;
* the genotype block (sums of a^2, ab, a^2 b, ...): integers, from popcounts of the cells and the
  per-SNP totals less the samples missing at the partner.

Then one symmetric elimination, the covariates first and a*b last: the last pivot is
1 / [(X'X)^-1]_ab,ab, and the reduced right-hand side over it is beta_ab; the residual sum of
squares is yt'yt less each pivot's share. A covariate column collinear with those before it on S
(its pivot below ``COLLINEAR_TOL`` of its length over G, about 1) is left out of the pair's fit
(df counts the rank); a genotype column collinear (pivot below that fraction of its own sum of
squares) fails the pair, as does df < 1 or a zero residual. tests/unit/test_qt_covar.py holds
random pairs to NumPy's lstsq on the complete cases.

Cost per pair: O(samples carrying A1 at both x covariates) for the ab sums, O(missing x covariates)
for the corrections, O((covariates + 3)^3) for the elimination.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from gboost.engines.qt_cpu import QTCPUEngine, QTPlanes, TileJob, carrier_word, cttz64, qt_planes
from gboost.runtime.numba_cache import cached_njit
from gboost.stats.qt_covar import COLLINEAR_TOL, SCREEN_SLACK, t_p, t_thresholds
from gboost.stats.table import popcount64


@dataclass
class CovariateScreen:
    """What the adjusted scan needs besides the study: the covariates (aligned with the study's
    samples, NaN where missing) and the two P thresholds (rows of .epi.qt; N_SIG)."""

    matrix: np.ndarray
    epi1: float
    epi2: float


@dataclass
class CovariatePlanes:
    """The adjusted engine's view of a QT study (see the module notes)."""

    h1: np.ndarray  # (p, W) uint64: QT planes with the samples lacking a covariate cleared
    h2: np.ndarray
    miss: np.ndarray  # missing calls among the samples with every covariate
    zt: np.ndarray  # (W * 64, q): orthonormal basis of [1, covariates] over G (0 elsewhere)
    yt: np.ndarray  # (W * 64,): the trait's residual on it (0 outside G)
    saa: np.ndarray  # (p,) int64: sum of a^2 over the SNP's called samples in G
    pay: np.ndarray  # (p,) sum of a yt
    paz: np.ndarray  # (p, q) sum of a zt
    mg_at: np.ndarray  # (p,) row of the SNP's missing Gram in mg, -1 if none missing
    mg: np.ndarray  # (m, q, q): sum of zt zt' over the SNP's missing samples in G
    ag: np.ndarray  # (q, q): zt'zt over G (the identity, to rounding)
    wg: np.ndarray  # (q,): zt'yt over G (0, to rounding)
    yyg: float
    n_g: int
    df_lo: int  # the thresholds' df range: every pair's df lies in it
    df_hi: int

    def pair_args(self) -> tuple:
        return (self.h1, self.h2, self.miss, self.zt, self.yt, self.saa, self.pay, self.paz, self.mg_at, self.mg,
                self.ag, self.wg, self.yyg, self.n_g)

    @property
    def n_covariate_columns(self) -> int:
        """Columns of the covariate block (intercept included) after collinear ones drop out."""
        return self.zt.shape[1]


def _packed(mask: np.ndarray, W: int) -> np.ndarray:
    bits = np.zeros(W * 64, bool)
    bits[: len(mask)] = mask
    return np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64)


def covariate_planes(qp: QTPlanes, covariates: np.ndarray) -> CovariatePlanes:
    """The adjusted engine's planes and sums from the QT planes and the covariate matrix (n, c)."""
    n = qp.n
    W = qp.h1.shape[1]
    cov = np.asarray(covariates, np.float64)
    if cov.ndim != 2 or cov.shape[0] != n:
        raise ValueError(f"covariates of shape {cov.shape} for {n} samples")
    g = np.isfinite(cov).all(axis=1)
    z = np.column_stack([np.ones(int(g.sum())), cov[g]])
    # an orthonormal basis of the covariate block's column space over G: columns scaled first, so
    # that the rank decision does not depend on the covariates' units
    norms = np.sqrt((z * z).sum(axis=0))
    z = z / np.where(norms > 0, norms, 1.0)
    if len(z):
        u, s, _ = np.linalg.svd(z, full_matrices=False)
        keep = s > s[0] * max(z.shape) * np.finfo(np.float64).eps
        u = u[:, keep]
    else:
        u = np.zeros((0, 0))
    q = u.shape[1]
    zt = np.zeros((W * 64, q))
    zt[: n][g] = u
    y = np.asarray(qp.y[:n], np.float64)
    yg = y[g]
    for _ in range(2):  # twice: the second pass takes out what the first one's rounding left
        yg = yg - u @ (u.T @ yg)
    yt = np.zeros(W * 64)
    yt[: n][g] = yg
    gw = _packed(g, W)
    h1 = qp.h1 & gw[None, :]
    h2 = qp.h2 & gw[None, :]
    miss = qp.miss & gw[None, :]
    p = h1.shape[0]
    saa = np.empty(p, np.int64)
    pay = np.empty(p)
    paz = np.empty((p, q))
    nmiss = np.empty(p, np.int64)
    _snp_sums(h1, h2, miss, zt, yt, saa, pay, paz, nmiss)
    has = nmiss > 0
    mg_at = np.where(has, np.cumsum(has) - 1, -1).astype(np.int64)
    mg = np.zeros((int(has.sum()), q, q))
    _missing_grams(miss, zt, mg_at, mg)
    n_g = int(g.sum())
    two = np.sort(nmiss)[-2:] if p else np.zeros(0, np.int64)
    df_hi = max(1, n_g - 3)
    df_lo = max(1, min(df_hi, n_g - int(two.sum()) - q - 3))
    return CovariatePlanes(h1, h2, miss, zt, yt, saa, pay, paz, mg_at, mg, zt.T @ zt, zt.T @ yt, float(yt @ yt),
                           n_g, df_lo, df_hi)


@cached_njit(parallel=True, nogil=True)
def _snp_sums(h1, h2, miss, zt, yt, saa, pay, paz, nmiss):
    """Per SNP over its called samples in G, in sample order: sum a^2, sum a yt, sum a zt; and its
    missing samples in G."""
    p, W = h1.shape
    q = zt.shape[1]
    one = np.uint64(1)
    for i in nb.prange(p):
        s2 = 0
        sy = 0.0
        for u in range(q):
            paz[i, u] = 0.0
        m = 0
        for k in range(W):
            a2 = h2[i, k]
            w = h1[i, k] | a2
            base = 64 * k
            while w:
                t = cttz64(w)
                w &= w - one
                d = 1 + np.int64((a2 >> t) & one)
                s = base + t
                s2 += d * d
                sy += d * yt[s]
                for u in range(q):
                    paz[i, u] += d * zt[s, u]
            m += popcount64(miss[i, k])
        saa[i] = s2
        pay[i] = sy
        nmiss[i] = m


@cached_njit(parallel=True, nogil=True)
def _missing_grams(miss, zt, mg_at, mg):
    p, W = miss.shape
    q = zt.shape[1]
    one = np.uint64(1)
    for i in nb.prange(p):
        g = mg_at[i]
        if g < 0:
            continue
        for k in range(W):
            w = miss[i, k]
            base = 64 * k
            while w:
                t = cttz64(w)
                w &= w - one
                s = base + t
                for u in range(q):
                    zu = zt[s, u]
                    for v in range(q):
                        mg[g, u, v] += zu * zt[s, v]


@cached_njit(nogil=True)
def adjusted_pair(h1, h2, miss, zt, yt, saa, pay, paz, mg_at, mg, ag, wg, yyg, n_g, i, j, M, r):
    """The adjusted test of pair (i, j) (module notes): ``(ok, beta_ab, se, stat = t^2, df, N)``;
    ``M`` (q + 3, q + 3) and ``r`` (q + 3) scratch."""
    q = zt.shape[1]
    K = q + 3
    W = h1.shape[1]
    one = np.uint64(1)
    for u in range(q):
        r[u] = wg[u]
        for v in range(q):
            M[u, v] = ag[u, v]
        M[u, q] = paz[i, u]
        M[u, q + 1] = paz[j, u]
        M[u, q + 2] = 0.0
    for g in (mg_at[i], mg_at[j]):
        if g >= 0:
            for u in range(q):
                for v in range(u, q):
                    M[u, v] -= mg[g, u, v]
    va = pay[i]
    vb = pay[j]
    vab = 0.0
    saa_ = saa[i]
    sbb_ = saa[j]
    yy = yyg
    n = n_g
    c11 = c12 = c21 = c22 = 0
    for k in range(W):
        a1 = h1[i, k]
        a2 = h2[i, k]
        b1 = h1[j, k]
        b2 = h2[j, k]
        both = (a1 | a2) & (b1 | b2)
        base = 64 * k
        if both:  # Zt'(ab) and (ab)'yt over the carriers, as PLINK's test sums ab y (qt_cpu.carrier_word)
            c11, c12, c21, c22, vab = carrier_word(a1, a2, b1, b2, both, base, c11, c12, c21, c22, vab, yt, zt, M,
                                                   q + 2)
        mi = miss[i, k]
        mj = miss[j, k]
        w = mi | mj
        while w:
            t = cttz64(w)
            w &= w - one
            s = base + t
            y = yt[s]
            n -= 1
            yy -= y * y
            for u in range(q):
                r[u] -= zt[s, u] * y
            if (mi >> t) & one:
                if (mj >> t) & one:  # taken out by both SNPs' Gram matrices: once back
                    for u in range(q):
                        zu = zt[s, u]
                        for v in range(u, q):
                            M[u, v] += zu * zt[s, v]
                else:  # called at j: out of j's sums
                    d = 2 if (b2 >> t) & one else (1 if (b1 >> t) & one else 0)
                    if d:
                        vb -= d * y
                        sbb_ -= d * d
                        for u in range(q):
                            M[u, q + 1] -= d * zt[s, u]
            else:  # missing at j only: out of i's sums
                d = 2 if (a2 >> t) & one else (1 if (a1 >> t) & one else 0)
                if d:
                    va -= d * y
                    saa_ -= d * d
                    for u in range(q):
                        M[u, q] -= d * zt[s, u]
    M[q, q] = saa_
    M[q, q + 1] = c11 + 2 * (c12 + c21) + 4 * c22  # sum ab
    M[q, q + 2] = c11 + 2 * c12 + 4 * c21 + 8 * c22  # sum a^2 b
    M[q + 1, q + 1] = sbb_
    M[q + 1, q + 2] = c11 + 4 * c12 + 2 * c21 + 8 * c22  # sum a b^2
    M[q + 2, q + 2] = c11 + 4 * (c12 + c21) + 16 * c22  # sum a^2 b^2
    r[q] = va
    r[q + 1] = vb
    r[q + 2] = vab
    g0 = M[q, q]
    g1 = M[q + 1, q + 1]
    g2 = M[q + 2, q + 2]
    rank = 0
    rss = yy
    for k in range(K):
        d = M[k, k]
        if k < q:
            if not d > COLLINEAR_TOL * ag[k, k]:
                continue  # collinear with the covariates before it on S: out of this pair's fit
        else:
            own = g0 if k == q else (g1 if k == q + 1 else g2)
            if not d > COLLINEAR_TOL * own:
                return False, np.nan, np.nan, np.nan, n - rank, n
        rank += 1
        rk = r[k]
        rss -= rk * rk / d
        for u in range(k + 1, K):
            f = M[k, u] / d
            if f != 0.0:
                for v in range(u, K):
                    M[u, v] -= f * M[k, v]
                r[u] -= f * rk
    d = M[K - 1, K - 1]
    beta = r[K - 1] / d
    df = n - rank
    if df < 1:
        return False, np.nan, np.nan, np.nan, df, n
    sigma2 = rss / df
    if not sigma2 > 0.0:
        return False, np.nan, np.nan, np.nan, df, n
    return True, beta, math.sqrt(sigma2 / d), beta * beta * d / sigma2, df, n


@cached_njit(parallel=True)
def stat_block(h1, h2, miss, zt, yt, saa, pay, paz, mg_at, mg, ag, wg, yyg, n_g, i0, i1, zbuf, dfbuf):
    """Pass 1 of the adjusted scan on rows i0..i1: t^2 (NaN where the pair fails) and df."""
    p = h1.shape[0]
    K = zt.shape[1] + 3
    rows = i1 - i0
    # rows r and rows-1-r together: equal work per iteration (as the unadjusted engine's block)
    for h in nb.prange((rows + 1) // 2):
        hh = np.int64(h)
        M = np.empty((K, K))
        r = np.empty(K)
        for m in range(1 if rows - 1 - hh == hh else 2):
            rr = hh if m == 0 else rows - 1 - hh
            i = i0 + rr
            for j in range(i + 1, p):
                ok, beta, se, stat, df, n = adjusted_pair(h1, h2, miss, zt, yt, saa, pay, paz, mg_at, mg, ag, wg,
                                                          yyg, n_g, i, j, M, r)
                zbuf[rr, j] = stat if ok else np.nan
                dfbuf[rr, j] = df


_RECT_RUN = 64  # columns of a rectangle tile one iteration of its parallel loop takes (one scratch each)


@cached_njit(parallel=True)
def stat_rect(h1, h2, miss, zt, yt, saa, pay, paz, mg_at, mg, ag, wg, yyg, n_g, i0, i1, j0, j1, zbuf, dfbuf):
    """Pass 1 of the adjusted scan on a tile of a candidate-set scan's rectangle: rows [i0, i1) x
    columns [j0, j1) (all i < j), in parallel over runs of columns (few rows, many columns)."""
    K = zt.shape[1] + 3
    C = j1 - j0
    runs = (C + _RECT_RUN - 1) // _RECT_RUN
    for t in nb.prange((i1 - i0) * runs):
        tt = np.int64(t)
        rr = tt // runs
        c0 = (tt - rr * runs) * _RECT_RUN
        M = np.empty((K, K))
        r = np.empty(K)
        for c in range(c0, min(C, c0 + _RECT_RUN)):
            ok, beta, se, stat, df, n = adjusted_pair(h1, h2, miss, zt, yt, saa, pay, paz, mg_at, mg, ag, wg,
                                                      yyg, n_g, i0 + rr, j0 + c, M, r)
            zbuf[rr, c] = stat if ok else np.nan
            dfbuf[rr, c] = df


@cached_njit(parallel=True)
def _pairs_kernel(h1, h2, miss, zt, yt, saa, pay, paz, mg_at, mg, ag, wg, yyg, n_g, pi, pj, ok, beta, se, stat,
                  df, n):
    K = zt.shape[1] + 3
    for k in nb.prange(pi.shape[0]):
        M = np.empty((K, K))
        r = np.empty(K)
        ok[k], beta[k], se[k], stat[k], df[k], n[k] = adjusted_pair(h1, h2, miss, zt, yt, saa, pay, paz, mg_at, mg,
                                                                    ag, wg, yyg, n_g, pi[k], pj[k], M, r)


# (the kernels of this test's tiles, named for gboost.engines.qt_cpu.TileJob)
ADJUSTED_KERNELS = ("gboost.engines.qt_covar", "stat_block", "stat_rect")


def adjusted_pairs(cp: CovariatePlanes, i: np.ndarray, j: np.ndarray) -> tuple:
    """The adjusted tests of pairs (i[k], j[k]) (pass 2): ``(BETA_ADJ, SE_ADJ, STAT_ADJ, P_ADJ,
    N_ADJ, DF_ADJ)``, NaN in the first four where the pair fails."""
    m = len(i)
    ok = np.zeros(m, np.bool_)
    beta, se, stat = np.full(m, np.nan), np.full(m, np.nan), np.full(m, np.nan)
    df = np.zeros(m, np.int64)
    n = np.zeros(m, np.int64)
    if m:
        _pairs_kernel(*cp.pair_args(), np.ascontiguousarray(i, np.int64), np.ascontiguousarray(j, np.int64), ok,
                      beta, se, stat, df, n)
    return beta, se, stat, t_p(stat, df, ok), n, df


def thresholds(cp: CovariatePlanes, screen: CovariateScreen) -> tuple[np.ndarray, np.ndarray]:
    """t^2 thresholds of epi1 and epi2 over the df a pair can have."""
    return (t_thresholds(screen.epi1, cp.df_lo, cp.df_hi), t_thresholds(screen.epi2, cp.df_lo, cp.df_hi))


def scan_adjusted(engine: QTCPUEngine, study, screen: CovariateScreen, progress=None, cancel=None,
                  rows: tuple[int, int] | None = None, checkpoint=None):
    """The CPU engine's scan (:meth:`QTCPUEngine.scan`, its tiles and checkpoint) with every pair's
    adjusted test: rows of .epi.qt and N_SIG by the t test's P, BEST the largest t^2. Returns
    (core, the QT planes, the adjusted planes)."""
    nb.set_num_threads(min(engine.threads, nb.config.NUMBA_NUM_THREADS))
    qp = qt_planes(study)
    cp = covariate_planes(qp, screen.matrix)
    thr1, thr2 = thresholds(cp, screen)
    every = screen.epi1 >= 1.0
    job = TileJob(ADJUSTED_KERNELS, cp.pair_args(), study.n_snps, thr1, thr2, cp.df_lo, SCREEN_SLACK, every)
    if study.rect is not None:  # a candidate-set scan (gboost/data/candidates.py): its rectangle's tiles
        return engine.scan_rect(study, job, progress, cancel, rows, checkpoint), qp, cp
    return engine.scan_tiles(study.n_snps, job, progress, cancel, rows, checkpoint), qp, cp
