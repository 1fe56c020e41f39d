"""Cost per pair of the CPU engine's inner loop: counting alone vs counting + KSA/DF.

    python bench/profile_cpu_pair_loop.py --snps 2000 --samples 2000 --threads 2

Prints ns per pair per thread for (a) the fused AND+POPCNT counting, (b) counting + the fused
KSA/DF used by the engine, (c) counting + the array-based reference KSA (gboost.stats.fastksa.
ksa_lookup + plink_df), all in one process so that machine load affects them alike.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numba as nb
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gboost.engines.cpu import _count_fused  # noqa: E402
from gboost.stats.boost import plink_df  # noqa: E402
from gboost.stats.fastksa import ksa_df_lookup, ksa_lookup, xlogx_table  # noqa: E402
from gboost.study import study_from_genotypes  # noqa: E402


@nb.njit(parallel=True)
def count_only(planes, counts, hm, wc, p):
    acc = 0
    for i in nb.prange(p):
        t = np.zeros((3, 3, 2), np.int64)
        for j in range(i + 1, p):
            _count_fused(planes, counts, hm, wc, i, j, t)
            acc += t[0, 0, 0]
    return acc


@nb.njit(parallel=True)
def fused(planes, counts, hm, wc, p, xlx):
    acc = 0.0
    for i in nb.prange(p):
        t = np.zeros((3, 3, 2), np.int64)
        for j in range(i + 1, p):
            _count_fused(planes, counts, hm, wc, i, j, t)
            k, d = ksa_df_lookup(t, xlx)
            acc += k + d
    return acc


@nb.njit(parallel=True)
def reference(planes, counts, hm, wc, p, xlx):
    acc = 0.0
    for i in nb.prange(p):
        t = np.zeros((3, 3, 2), np.int64)
        m = np.zeros(32)
        for j in range(i + 1, p):
            _count_fused(planes, counts, hm, wc, i, j, t)
            acc += ksa_lookup(t, xlx, m) + plink_df(t)
    return acc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snps", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    rng = np.random.default_rng(5)
    g = rng.binomial(2, rng.uniform(0.05, 0.5, a.snps)[:, None], (a.snps, a.samples)).astype(np.int8)
    g[rng.random(g.shape) < 0.01] = -1
    s = study_from_genotypes(g, rng.random(a.samples) < 0.5)
    nb.set_num_threads(a.threads)
    hm, xlx, p = s.has_missing, xlogx_table(s.n_samples), a.snps
    pairs = p * (p - 1) / 2
    runs = [("count", count_only, (s.planes, s.counts, hm, s.layout.w_ctrl, p)),
            ("count+fused KSA/DF", fused, (s.planes, s.counts, hm, s.layout.w_ctrl, p, xlx)),
            ("count+array KSA+DF", reference, (s.planes, s.counts, hm, s.layout.w_ctrl, p, xlx))]
    print(f"{a.snps} SNPs x {a.samples} samples, {a.threads} threads")
    for name, f, args in runs:
        f(*args)
        t = time.perf_counter()
        f(*args)
        dt = time.perf_counter() - t
        print(f"{name:<22}{dt * a.threads / pairs * 1e9:8.0f} ns/pair/thread")


if __name__ == "__main__":
    main()
