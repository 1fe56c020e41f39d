"""Two candidate speed-ups of the CPU engine's pair loop, against the engine's own (SPEC §7's CPU row;
docs/PERFORMANCE.md, "CPU engine vs PLINK 1.9"). Neither is in the engine: both were measured and lost.

    python bench/probe_cpu_variants.py --variant pad  [--snps 3000 --samples 2000 --threads 2]
    python bench/probe_cpu_variants.py --variant ksa4 [--samples 2000 --tables 400000]

* ``pad`` — every tile's row and column planes copied with each class padded to a multiple of 4 words
  (so LLVM's vectorised AND+popcount loop has no scalar remainder), then the engine's tile loop
  (counting, KSA/DF, the row summaries) on the copies; the same tiles screened by
  ``gboost.engines.cpu._screen_tile``. Rounds alternate; a checksum of the outputs must agree.
* ``ksa4`` — the KSA/DF of four stored tables at a time, lane by lane with the same float64 operations as
  ``gboost.stats.fastksa.ksa_df_lookup`` (checked equal, bit for bit), against one table at a time.

Prints ns per pair (per thread for ``pad``).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numba as nb
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gboost.engines.cpu import _count_fused, _screen_tile  # noqa: E402
from gboost.stats.fastksa import ksa_df_lookup, xlogx_table  # noqa: E402
from gboost.stats.table import popcount64  # noqa: E402
from gboost.study import study_from_genotypes  # noqa: E402
from gboost.tiles import better  # noqa: E402


def _study(p: int, n: int, missing: float):
    rng = np.random.default_rng(5)
    g = rng.binomial(2, rng.uniform(0.05, 0.5, p)[:, None], (p, n)).astype(np.int8)
    g[rng.random(g.shape) < missing] = -1
    return study_from_genotypes(g, rng.random(n) < 0.5)


@nb.njit(inline="always")
def _count_pad(rp, cp, counts, hmr, hmc, pa, ptot, r, c, gi, gj, t):
    """_count_fused on padded copies: class 0 in words [0, pa), class 1 in [pa, ptot)."""
    direct = hmr or hmc
    for k in range(2):
        w0 = 0 if k == 0 else pa
        w1 = pa if k == 0 else ptot
        c00 = c01 = c02 = c10 = c11 = c12 = c20 = c21 = c22 = np.uint64(0)
        if direct:
            for w in range(w0, w1):
                x0, x1, x2 = rp[r, 0, w], rp[r, 1, w], rp[r, 2, w]
                y0, y1, y2 = cp[c, 0, w], cp[c, 1, w], cp[c, 2, w]
                c00 += popcount64(x0 & y0)
                c01 += popcount64(x0 & y1)
                c02 += popcount64(x0 & y2)
                c10 += popcount64(x1 & y0)
                c11 += popcount64(x1 & y1)
                c12 += popcount64(x1 & y2)
                c20 += popcount64(x2 & y0)
                c21 += popcount64(x2 & y1)
                c22 += popcount64(x2 & y2)
            t[0, 0, k], t[0, 1, k], t[0, 2, k] = c00, c01, c02
            t[1, 0, k], t[1, 1, k], t[1, 2, k] = c10, c11, c12
            t[2, 0, k], t[2, 1, k], t[2, 2, k] = c20, c21, c22
        else:
            for w in range(w0, w1):
                x0, x1 = rp[r, 0, w], rp[r, 1, w]
                y0, y1 = cp[c, 0, w], cp[c, 1, w]
                c00 += popcount64(x0 & y0)
                c01 += popcount64(x0 & y1)
                c10 += popcount64(x1 & y0)
                c11 += popcount64(x1 & y1)
            t[0, 0, k], t[0, 1, k], t[1, 0, k], t[1, 1, k] = c00, c01, c10, c11
            t[0, 2, k] = counts[gi, 0, k] - c00 - c01
            t[1, 2, k] = counts[gi, 1, k] - c10 - c11
            for b in range(3):
                t[2, b, k] = counts[gj, b, k] - t[0, b, k] - t[1, b, k]


@nb.njit(parallel=True, nogil=True)
def _screen_pad(rp, cp, counts, has_missing, pa, ptot, xlx, thr1, thr2, i0, i1, j0, j1, ksa_out, df_out, surv_out,
                rn_sig, rn_tot, rbest, rbest_p):
    """gboost.engines.cpu._screen_tile on the padded copies."""
    for r in nb.prange(i1 - i0):
        i = i0 + r
        t = np.zeros((3, 3, 2), dtype=np.int64)
        jstart = max(j0, i + 1)
        for c in range(j1 - j0):
            j = j0 + c
            if j < jstart:
                df_out[r, c] = -1
                continue
            _count_pad(rp, cp, counts, has_missing[i], has_missing[j], pa, ptot, r, c, i, j, t)
            ksa, df = ksa_df_lookup(t, xlx)
            df_out[r, c] = df
            ksa_out[r, c] = ksa
            if df <= 0:
                continue
            rn_tot[r] += 1
            if ksa > thr1[df]:
                surv_out[r, c] = 1
                continue
            if ksa >= thr2[df]:
                rn_sig[r] += 1
            if better(ksa, j, rbest[r], rbest_p[r], i):
                rbest[r] = ksa
                rbest_p[r] = j


def _padded(planes, w_ctrl, a, b):
    nw = planes.shape[2]
    pa, pb = -(-w_ctrl // 4) * 4, -(-(nw - w_ctrl) // 4) * 4
    q = np.zeros((b - a, 3, pa + pb), np.uint64)
    q[:, :, :w_ctrl] = planes[a:b, :, :w_ctrl]
    q[:, :, pa:pa + nw - w_ctrl] = planes[a:b, :, w_ctrl:]
    return q, pa, pa + pb


def _tiles(s, variant: str, tile: int = 1024) -> float:
    p, xlx = s.n_snps, xlogx_table(s.n_samples)
    thr1, thr2 = np.full(5, 40.0), np.full(5, 13.0)
    total = 0.0
    for i0 in range(0, p, tile):
        for j0 in range(i0, p, tile):
            i1, j1 = min(p, i0 + tile), min(p, j0 + tile)
            ni, nj = i1 - i0, j1 - j0
            ksa, df, surv = np.empty((ni, nj)), np.empty((ni, nj), np.int8), np.zeros((ni, nj), np.int8)
            sig, tot, best, bp = np.zeros(ni, np.int64), np.zeros(ni, np.int64), np.full(ni, -np.inf), np.full(ni, -1, np.int64)
            if variant == "engine":
                _screen_tile(s.planes, s.counts, s.has_missing, s.layout.w_ctrl, xlx, thr1, thr2, i0, i1, j0, j1,
                             ksa, df, surv, sig, tot, best, bp)
            else:
                rp, pa, pt = _padded(s.planes, s.layout.w_ctrl, i0, i1)
                cp = _padded(s.planes, s.layout.w_ctrl, j0, j1)[0]
                _screen_pad(rp, cp, s.counts, s.has_missing, pa, pt, xlx, thr1, thr2, i0, i1, j0, j1,
                            ksa, df, surv, sig, tot, best, bp)
            total += float(ksa[df > 0].sum()) + float(tot.sum()) + float(bp.sum())
    return total


def probe_pad(a) -> None:
    s = _study(a.snps, a.samples, a.missing)
    nb.set_num_threads(a.threads)
    pairs = a.snps * (a.snps - 1) / 2
    sums = {v: _tiles(s, v) for v in ("engine", "pad")}  # (compiles both)
    assert sums["engine"] == sums["pad"], sums
    for _ in range(a.rounds):
        for v in ("engine", "pad"):
            t = time.perf_counter()
            _tiles(s, v)
            print(f"{v:6s} {(time.perf_counter() - t) / pairs * 1e9 * a.threads:6.1f} ns a pair a thread", flush=True)


@nb.njit
def _tables(planes, counts, hm, wc, p, m):
    out = np.zeros((m, 3, 3, 2), np.int64)
    t = np.zeros((3, 3, 2), np.int64)
    c = 0
    for i in range(p):
        for j in range(i + 1, p):
            _count_fused(planes, counts, hm, wc, i, j, t)
            out[c] = t
            c += 1
            if c == m:
                return out
    return out[:c]


@nb.njit(inline="always")
def _ksa4(tabs, c0, xlx, out_k, out_d):
    """ksa_df_lookup of tabs[c0 .. c0 + 3], lane by lane with its float64 operations."""
    am = np.empty((4, 6), np.int64)  # n_ak: a * 2 + k
    bm = np.empty((4, 6), np.int64)  # n_bk: b * 2 + k
    for l in range(4):
        t = tabs[c0 + l]
        for a in range(3):
            for k in range(2):
                am[l, a * 2 + k] = t[a, 0, k] + t[a, 1, k] + t[a, 2, k]
                bm[l, a * 2 + k] = t[0, a, k] + t[1, a, k] + t[2, a, k]
    for l in range(4):
        t = tabs[c0 + l]
        a00, a01, a10, a11, a20, a21 = am[l, 0], am[l, 1], am[l, 2], am[l, 3], am[l, 4], am[l, 5]
        b00, b01, b10, b11, b20, b21 = bm[l, 0], bm[l, 1], bm[l, 2], bm[l, 3], bm[l, 4], bm[l, 5]
        na0, na1, na2 = a00 + a01, a10 + a11, a20 + a21
        nb0, nb1, nb2 = b00 + b01, b10 + b11, b20 + b21
        empty_a = (na0 == 0) + (na1 == 0) + (na2 == 0)
        empty_b = (nb0 == 0) + (nb1 == 0) + (nb2 == 0)
        if empty_a > 1 or empty_b > 1:
            out_k[l], out_d[l] = 0.0, 0
            continue
        out_d[l] = 4 >> (empty_a + empty_b)
        n0, n1 = a00 + a10 + a20, a01 + a11 + a21
        s = 0.0
        for a in range(3):
            for b in range(3):
                c0_, c1_ = t[a, b, 0], t[a, b, 1]
                s += xlx[c0_] + xlx[c1_] - xlx[c0_ + c1_]
        s -= xlx[a00] + xlx[a01] + xlx[a10] + xlx[a11] + xlx[a20] + xlx[a21]
        s -= xlx[b00] + xlx[b01] + xlx[b10] + xlx[b11] + xlx[b20] + xlx[b21]
        s += xlx[na0] + xlx[na1] + xlx[na2] + xlx[nb0] + xlx[nb1] + xlx[nb2] + xlx[n0] + xlx[n1]
        i0 = 1.0 / n0 if n0 > 0 else 0.0
        i1 = 1.0 / n1 if n1 > 0 else 0.0
        ra = (1.0 / na0 if na0 > 0 else 0.0, 1.0 / na1 if na1 > 0 else 0.0, 1.0 / na2 if na2 > 0 else 0.0)
        rb = (1.0 / nb0 if nb0 > 0 else 0.0, 1.0 / nb1 if nb1 > 0 else 0.0, 1.0 / nb2 if nb2 > 0 else 0.0)
        tau = 0.0
        for a in range(3):
            for b in range(3):
                tau += (t[a, b, 0] + t[a, b, 1]) * ra[a] * rb[b] * (am[l, a * 2] * bm[l, b * 2] * i0
                                                                   + am[l, a * 2 + 1] * bm[l, b * 2 + 1] * i1)
        ft = float(n0 + n1)
        out_k[l] = 2.0 * (s + ft * math.log(tau / ft))


@nb.njit
def _one(tabs, xlx):
    acc = 0.0
    for c in range(tabs.shape[0]):
        k, d = ksa_df_lookup(tabs[c], xlx)
        acc += k + d
    return acc


@nb.njit
def _four(tabs, xlx):
    acc, ok, od = 0.0, np.empty(4), np.empty(4, np.int64)
    for c in range(0, tabs.shape[0] - 3, 4):
        _ksa4(tabs, c, xlx, ok, od)
        for l in range(4):
            acc += ok[l] + od[l]
    return acc


@nb.njit
def _mismatches(tabs, xlx) -> int:
    ok, od, bad = np.empty(4), np.empty(4, np.int64), 0
    for c in range(0, tabs.shape[0] - 3, 4):
        _ksa4(tabs, c, xlx, ok, od)
        for l in range(4):
            k, d = ksa_df_lookup(tabs[c + l], xlx)
            bad += d != od[l] or (d > 0 and k != ok[l])
    return bad


def probe_ksa4(a) -> None:
    s = _study(2000, a.samples, a.missing)
    xlx = xlogx_table(s.n_samples)
    tabs = _tables(s.planes, s.counts, s.has_missing, s.layout.w_ctrl, 2000, a.tables)
    print("mismatches (tables whose KSA or DF differ):", _mismatches(tabs, xlx))
    for _ in range(a.rounds):
        for name, f in (("one at a time", _one), ("four at a time", _four)):
            f(tabs, xlx)
            t = time.perf_counter()
            f(tabs, xlx)
            print(f"{name:15s} {(time.perf_counter() - t) / len(tabs) * 1e9:6.1f} ns a table", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=("pad", "ksa4"), required=True)
    ap.add_argument("--snps", type=int, default=3000)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--missing", type=float, default=0.01)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tables", type=int, default=400_000)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    print(f"{a.variant}: {a.snps} SNPs x {a.samples} samples, {a.missing:g} missing, {a.threads} threads", flush=True)
    (probe_pad if a.variant == "pad" else probe_ksa4)(a)


if __name__ == "__main__":
    main()
