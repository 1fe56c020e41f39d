"""What missing calls cost the CPU engine's counting (SPEC §7's CPU row; docs/PERFORMANCE.md, "CPU engine vs
PLINK 1.9"): the engine's own ``_count_fused`` over every pair of a simulated study (1 % missing calls), one
thread, once with every SNP flagged as having missing calls (9 AND+popcount products a word and class, as real
data makes nearly every SNP) and once with the flags cleared (the 4 products of the fully called loop; its
tables are then not the study's, only its time is meant). Rounds alternate.

    python bench/probe_cpu_products.py [--samples 2000,5000] [--snps 1500] [--rounds 3]

Prints ns per pair for each.
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
from gboost.study import study_from_genotypes  # noqa: E402


@nb.njit
def count_all(planes, counts, has_missing, w_ctrl, p):
    acc = 0
    t = np.zeros((3, 3, 2), np.int64)
    for i in range(p):
        for j in range(i + 1, p):
            _count_fused(planes, counts, has_missing, w_ctrl, i, j, t)
            acc += t[0, 0, 0]
    return acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", default="2000,5000")
    ap.add_argument("--snps", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    for n in (int(x) for x in a.samples.split(",")):
        p = max(200, a.snps * 2000 // n)  # about the same seconds at each n
        rng = np.random.default_rng(5)
        g = rng.binomial(2, rng.uniform(0.05, 0.5, p)[:, None], (p, n)).astype(np.int8)
        g[rng.random(g.shape) < 0.01] = -1
        s = study_from_genotypes(g, rng.random(n) < 0.5)
        pairs = p * (p - 1) / 2
        flags = {"9 products": np.ones(p, bool), "4 products": np.zeros(p, bool)}
        got: dict = {k: [] for k in flags}
        for _ in range(a.rounds):
            for name, hm in flags.items():
                count_all(s.planes, s.counts, hm, s.layout.w_ctrl, p)  # compiled, caches warm
                t = time.perf_counter()
                count_all(s.planes, s.counts, hm, s.layout.w_ctrl, p)
                got[name].append((time.perf_counter() - t) / pairs * 1e9)
        print(f"n = {n}, {p} SNPs, 1 thread: " + "; ".join(
            f"{k} " + " ".join(f"{v:.0f}" for v in vs) + " ns a pair" for k, vs in got.items()))


if __name__ == "__main__":
    main()
