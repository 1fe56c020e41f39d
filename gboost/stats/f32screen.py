"""The tensor-core kernel's float32 pre-screen of KSA, in NumPy (reference and error-bound check).

``boost_mma.cu`` evaluates every pair of a fully called block first in float32, rearranged so that
no sum holds large terms, with a bound E such that |v32 - KSA| <= E; only pairs whose decision
(survivor, N_SIG, best partner) the interval [v32 - E, v32 + E] leaves open get the float64 KSA of
:func:`gboost.stats.fastksa.ksa_df_lookup`. This module computes the same float32 value and bound
(same formula, float32 arithmetic; the kernel's fused multiply-adds round less, not more) so the
tests can check the bound on the tables where it is tightest, without a GPU.

Rearranged KSA/2 for a table t[a, b, k] with N samples, x(c) = c ln c:

    sum_ab [x(t_ab0) + x(t_ab1) - x(t_ab0 + t_ab1)]            (each term in [-(n_ab) ln 2, 0])
  + [sum_a x(n_a) - sum_ak x(n_ak)] + [sum_b x(n_b) - sum_bk x(n_bk)] + [x(n_0) + x(n_1) - x(N)]
  + N ln tau,   tau = sum_ab n_ab sum_k (n_ak / n_a) (n_bk / (n_b n_k))
"""
from __future__ import annotations

import numpy as np

U32 = 2.0 ** -24  # unit roundoff of float32


def bound(n: int, ln_tau, sfu: int = 0, fast_log: bool = False) -> np.ndarray:
    """E of the kernel: 4u (c N ln N + 52 N) + 12 u N |ln tau| (twice the first-order bound), c = 3
    with every x ln x from the table, 9 with the nine x(n_ab) from the SFU's lg2 (``MmaConfig.sfu_xlogx``
    1; relative error <= 7u each instead of u); with no table (``sfu_xlogx`` 2) each cell bracket is
    formed by shares (:func:`xlr_shares`), c = 0 and 52 becomes 64. With ``fast_log``
    (``MmaConfig.fast_log``: ln tau by ``__logf``, absolute error <= 2^-21.41 for tau in [0.5, 2], else
    3 ulp <= 6u |ln tau|, as the CUDA guide gives it) 52 becomes 59 and 12 becomes 36: the log's error
    times N, doubled for KSA and by the safety factor."""
    xn = n * np.log(n) if n > 1 else 0.0
    c = (3.0, 9.0, 0.0)[sfu]  # sfu 2: the cells by shares (xlr_shares), 12 u N in place of c N ln N
    a, b = (59.0, 36.0) if fast_log else (52.0, 12.0)
    a += 12.0 if sfu >= 2 else 0.0
    return (4 * U32 * (c * xn + a * n) * 1.0001 + b * U32 * n * 1.0001 * np.abs(ln_tau)).astype(np.float32)


def xlr_shares(c0, c1, sign: float = 0.0) -> np.ndarray:
    """c0 lg2(c0 / s) + c1 lg2(c1 / s), s = c0 + c1, in bits (boost_mma.cu, gm_xlr: x(c0) + x(c1) - x(s)
    without cancellation, divided by ln 2; the kernel multiplies the sum of a pair's brackets by ln 2
    once), in float32, moved by ``sign`` (-1 to 1) of its worst-case error (per share: rcp and product
    3u relative, lg2 4u (|lg2 r| + 1); 5u f |lg2 r| + 8.33u f, the sum, and the share of the final ln 2
    product's rounding)."""
    c0, c1 = np.asarray(c0, np.float64), np.asarray(c1, np.float64)
    s = c0 + c1
    v, err = np.zeros_like(s), np.zeros_like(s)
    for c in (c0, c1):
        with np.errstate(divide="ignore", invalid="ignore"):
            l2 = np.where(c > 0, np.log2(np.where(c > 0, c, 1) / np.where(s > 0, s, 1)), 0.0)
        v += c * l2
        err += 5 * U32 * c * np.abs(l2) + 8.34 * U32 * c
    err += U32 * np.abs(v)
    return ((v + sign * err) * (1 + sign * 2 * U32)).astype(np.float32)


# __logf's documented worst case (CUDA C++ Programming Guide, intrinsic functions): absolute error
# 2^-21.41 for x in [0.5, 2], else 3 ulp (<= 6u relative). Their sum bounds it everywhere.
FAST_LOG_ABS = 2.0 ** -21.41
# ln 2 as the kernel's float32 constant 0.69314718f.
LN2_32 = float(np.float32(0.69314718))
# lg2.approx-based x ln x (boost_mma.cu, gm_xlx): relative error <= 7u.
SFU_REL = 7 * U32
FAST_LOG_REL = 6 * U32


def ksa32(tables: np.ndarray, log_shift: float = 0.0, sfu: int = 0,
          sfu_shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(v32, ln tau) in float32 for tables (m, 3, 3, 2) of fully called pairs, as the kernel computes them.

    ``log_shift`` (-1 to 1) moves ln tau by that fraction of ``__logf``'s worst-case error, to model
    the kernel's ``MmaConfig.fast_log`` at its worst in either direction. ``sfu`` (``MmaConfig.sfu_xlogx``)
    takes the nine x(n_ab) from the SFU (1), each moved by ``sfu_shift`` (-1 to 1) of its worst-case
    error (7u relative) in the direction that adds up, or (2) forms each cell bracket by shares
    (:func:`xlr_shares`), moved likewise."""
    t = np.asarray(tables, dtype=np.int64)
    n = int(t[0].sum())
    x64 = np.zeros(n + 1)
    x64[1:] = np.arange(1, n + 1) * np.log(np.arange(1, n + 1))
    x32 = x64.astype(np.float32)
    f = np.float32

    def x_sfu(c):  # the SFU's x ln x of a subtracted term, moved down by sfu_shift * 7u (sfu 1)
        return (x64[c] * (1.0 - sfu_shift * SFU_REL)).astype(f)

    nak, nbk = t.sum(axis=2), t.sum(axis=1)            # (m, 3, 2)
    na, nb, nk = nak.sum(axis=2), nbk.sum(axis=2), nak.sum(axis=1)  # (m, 3), (m, 3), (m, 2)
    # Per SNP and study, formed in float64 then rounded (the kernel does this once per SNP).
    ka = (x64[na].sum(axis=1) - x64[nak].sum(axis=(1, 2))).astype(f)
    kb = (x64[nb].sum(axis=1) - x64[nbk].sum(axis=(1, 2))).astype(f)
    cst = (x64[nk[:, 0]] + x64[nk[:, 1]] - x64[n]).astype(f)
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = (nak / na[:, :, None]).astype(f)                                   # P_ak
        qb = (nbk / nb[:, :, None] / nk[:, None, :]).astype(f)                  # Q_bk
    pa, qb = np.nan_to_num(pa), np.nan_to_num(qb)
    # The kernel's order: one partial sum per row type a, for the cell terms and for tau.
    sa, ta = [], []
    for a in range(3):
        s_a, t_a = np.zeros(len(t), f), np.zeros(len(t), f)
        for b in range(3):
            c0, c1 = t[:, a, b, 0], t[:, a, b, 1]
            if sfu >= 2:  # in bits (xlr_shares); the sum becomes nats below
                s_a = s_a + xlr_shares(c0, c1, sfu_shift)
            else:
                s_a = s_a + ((x32[c0] + x32[c1]) - (x_sfu(c0 + c1) if sfu >= 1 else x32[c0 + c1]))
            inner = (pa[:, a, 0].astype(np.float64) * qb[:, b, 0] + (pa[:, a, 1] * qb[:, b, 1])).astype(f)
            t_a = ((c0 + c1).astype(np.float64) * inner + t_a).astype(f)  # fmaf: one rounding
        sa.append(s_a)
        ta.append(t_a)
    if sfu >= 2:
        s = (((sa[0] + sa[1]) + sa[2]) * f(LN2_32) + cst) + (ka + kb)
    else:
        s = ((sa[0] + sa[1]) + (sa[2] + cst)) + (ka + kb)
    tau = (ta[0] + ta[1]) + ta[2]
    with np.errstate(divide="ignore"):
        lt = np.log(tau)
        if log_shift:
            lt = (lt + log_shift * (FAST_LOG_ABS + FAST_LOG_REL * np.abs(lt.astype(np.float64)))).astype(f)
    v = (2 * (np.float64(n) * lt.astype(np.float64) + s).astype(f)).astype(f)
    return v, lt


# ---- Blocks with missing calls (boost_mma.cu, gm_ksa32m) ----------------------------------------------
# A pair's margins and total N' are its own there; every bracket is formed per pair in float32, by
# shares (xlr_shares). The kernel's comment derives the bound.


def bound_missing(n: int, ln_tau) -> np.ndarray:
    """E of gm_pairs_f32m for a study of n samples: 4u (172 N) + 28 u N |ln tau|."""
    return (4 * U32 * 172.0 * n * 1.0001
            + 28.0 * U32 * n * 1.0001 * np.abs(ln_tau)).astype(np.float32)


def ksa32_missing(tables: np.ndarray, n: int, sfu_shift: float = 0.0,
                  log_shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(v32, ln tau) in float32 of tables (m, 3, 3, 2) whose sums may be below the study's n samples,
    operation for operation as gm_ksa32m. ``sfu_shift`` (-1 to 1) moves every bracket and reciprocal
    by that fraction of its worst-case error, in the direction that adds up (brackets added up, those
    subtracted down, reciprocals up, for +1); ``log_shift`` does the same for ``__logf`` as in :func:`ksa32`.
    Every bracket by shares (:func:`xlr_shares`)."""
    t = np.asarray(tables, dtype=np.int64)
    f = np.float32
    ak, bk = t.sum(axis=2), t.sum(axis=1)                 # (m, 3, 2): n_ak, n_bk
    na, nb = ak.sum(axis=2), bk.sum(axis=2)              # (m, 3)
    n0, n1 = ak[:, :, 0].sum(axis=1), ak[:, :, 1].sum(axis=1)

    def rcp(v):  # rcp.approx (relative error <= 2u), moved by sfu_shift of that
        return np.where(v > 0, (1.0 / np.maximum(v, 1) * (1.0 + sfu_shift * 2 * U32)).astype(f), f(0))

    i0, i1 = rcp(n0), rcp(n1)
    pa = np.zeros((len(t), 3, 2), f)
    qb = np.zeros((len(t), 3, 2), f)
    mr = np.zeros(len(t), f)
    mc = np.zeros(len(t), f)
    for a in range(3):
        ra, rb = rcp(na[:, a]), rcp(nb[:, a])
        pa[:, a, 0] = ak[:, a, 0].astype(f) * ra
        pa[:, a, 1] = ak[:, a, 1].astype(f) * ra
        qb[:, a, 0] = (bk[:, a, 0].astype(f) * rb) * i0
        qb[:, a, 1] = (bk[:, a, 1].astype(f) * rb) * i1
        mr = mr - xlr_shares(ak[:, a, 0], ak[:, a, 1], -sfu_shift)  # each margin bracket by shares, subtracted
        mc = mc - xlr_shares(bk[:, a, 0], bk[:, a, 1], -sfu_shift)
    kc = xlr_shares(n0, n1, sfu_shift)
    sa, ta = [], []
    for a in range(3):
        s_a, t_a = np.zeros(len(t), f), np.zeros(len(t), f)
        for b in range(3):
            c0, c1 = t[:, a, b, 0], t[:, a, b, 1]
            s_a = s_a + xlr_shares(c0, c1, sfu_shift)
            inner = (pa[:, a, 0].astype(np.float64) * qb[:, b, 0] + (pa[:, a, 1] * qb[:, b, 1])).astype(f)
            t_a = ((c0 + c1).astype(np.float64) * inner + t_a).astype(f)  # fmaf: one rounding
        sa.append(s_a)
        ta.append(t_a)
    s = (((sa[0] + sa[1]) + (sa[2] + kc)) + (mr + mc)) * f(LN2_32)  # bits to nats once, as the kernel
    tau = (ta[0] + ta[1]) + ta[2]
    with np.errstate(divide="ignore"):
        lt = np.log(tau)
        if log_shift:
            lt = (lt + log_shift * (FAST_LOG_ABS + FAST_LOG_REL * np.abs(lt.astype(np.float64)))).astype(f)
    v = (2 * ((n0 + n1).astype(np.float64) * lt.astype(np.float64) + s).astype(f)).astype(f)
    return v, lt
