"""Calibration of the interaction test itself: genomic inflation λ and a QQ plot.

The screen never computes the exact statistic of every pair, and KSA (an upper bound) is biased
upward, so its distribution cannot calibrate the exact test. Instead the exact statistic is
computed for a uniform, seeded random sample of all pairs (200,000 by default, about half a second
on one core): λ = median(STAT of DF-4 pairs) / 3.357 (the χ²₄ median) estimates inflation of the
whole scan with a standard error near 0.3 %, whatever p is.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gboost.stats.exact import exact_tests
from gboost.stats.pvalues import chi2_isf
from gboost.data.study import Study

CHI2_4_MEDIAN = chi2_isf(0.5, 4)  # 3.35669...


@dataclass
class Calibration:
    n_pairs: int  # pairs sampled
    lam: float  # median(STAT) / 3.357 over sampled DF-4 pairs
    stat: np.ndarray  # exact statistics of the sampled valid pairs
    df: np.ndarray
    p: np.ndarray

    def as_dict(self) -> dict:
        return {"sampled_pairs": self.n_pairs, "valid_sampled": int(len(self.stat)), "lambda": self.lam,
                "method": "exact STAT of a uniform random sample of pairs; lambda = median(DF-4 STAT) / 3.357"}


def sample_pairs(p: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """k pairs i < j drawn uniformly (with replacement) from the p(p-1)/2 of the triangle."""
    total = p * (p - 1) // 2
    # Small studies: every pair, once.
    idx = np.arange(total) if total <= k else rng.integers(0, total, size=k)
    # Row i starts at offset i(2p - i - 1)/2; invert by the quadratic formula, then fix rounding.
    i = np.floor(((2 * p - 1) - np.sqrt((2 * p - 1) ** 2 - 8.0 * idx)) / 2).astype(np.int64)
    start = i * (2 * p - i - 1) // 2
    over = start > idx
    i[over] -= 1
    start = i * (2 * p - i - 1) // 2
    nxt = (i + 1) * (2 * p - i - 2) // 2
    under = idx >= nxt
    i[under] += 1
    start = i * (2 * p - i - 1) // 2
    j = i + 1 + (idx - start)
    return i, j


def calibrate(study: Study, *, n_pairs: int = 200_000, seed: int = 20110501) -> Calibration:
    """Exact tests of a random sample of pairs and λ; deterministic for a given study and seed."""
    from gboost.engines.cpu import tables_of

    rng = np.random.default_rng(seed)
    i, j = sample_pairs(study.n_snps, n_pairs, rng)
    # tables_of releases the GIL (it runs beside the GPU screen, gboost.pipeline.scan.HostWork, whose threads
    # must not wait for it): one call, on every core of the host-work thread (or of finalize's).
    tables = tables_of(study, i, j, parallel=True)
    stat, df, p, _ = exact_tests(tables)
    ok = df > 0
    four = stat[df == 4]
    lam = float(np.median(four) / CHI2_4_MEDIAN) if four.size else float("nan")
    return Calibration(int(len(i)), lam, stat[ok], df[ok], p[ok])
