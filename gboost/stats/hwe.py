"""Hardy-Weinberg exact test (--hwe's): Wigginton, Cutler & Abecasis, AJHG 2005, two-sided, not
mid-p, with PLINK 1.9's tolerance on ties. gboost/data/load.py applies it to founder controls."""
from __future__ import annotations

import numba as nb
import numpy as np

from gboost.runtime.numba_cache import cached_njit

SMALL_EPSILON = 2.0**-44  # PLINK's tolerance on every QC threshold (and on equally likely counts here)


@cached_njit()
def hwe_exact_p(het: int, hom1: int, hom2: int) -> float:
    """Exact two-sided Hardy-Weinberg test (Wigginton, Cutler & Abecasis, AJHG 2005; not mid-p).

    The p value is the total probability, given the allele counts, of every heterozygote count no
    more likely than the observed one. Probabilities are taken relative to the most likely count,
    so nothing overflows; a count as likely as the observed one within 2^-44 (PLINK's tolerance)
    is a tie and belongs to the tail.
    """
    n = het + hom1 + hom2
    if n == 0:
        return 1.0
    rare = 2 * min(hom1, hom2) + het
    # The most likely het count is near the HWE expectation, with the parity of the rare copies.
    mode = int(rare * (2 * n - rare) / (2 * n))
    if (mode - rare) % 2 != 0:
        mode += 1
    mode = min(mode, rare)
    total = 1.0
    observed = 1.0 if het == mode else 0.0
    up = _walk(mode, rare, n, 2, het)
    down = _walk(mode, rare, n, -2, het)
    total += up[0] + down[0]
    observed = max(observed, up[1], down[1])
    limit = observed * (1.0 + SMALL_EPSILON)
    tail = (1.0 if 1.0 <= limit else 0.0) + _tail(mode, rare, n, 2, limit) + _tail(mode, rare, n, -2, limit)
    return min(1.0, tail / total)


@cached_njit()
def _ratio(h: int, rare: int, n: int, step: int) -> float:
    """P(h + step) / P(h) for the het count given the rare allele copies (Levene's distribution)."""
    if step > 0:
        homr = (rare - h) // 2
        homc = n - h - homr
        return 4.0 * homr * homc / ((h + 2.0) * (h + 1.0))
    homr = (rare - h) // 2 + 1
    homc = n - h + 1 - ((rare - h) // 2)
    return h * (h - 1.0) / (4.0 * homr * homc)


# Past the mode the relative probabilities only fall; once one is below 2^-55 of the sum it is
# added to, it (and every later one) rounds away: the sum is final and the walk stops there (the
# same sums, bit for bit, as walking on to underflow, in a fraction of the steps).
_NEGLIGIBLE = 2.0**-55


@cached_njit()
def _walk(mode: int, rare: int, n: int, step: int, het: int):
    """Sum of relative probabilities from the mode outwards in one direction; also P(het) if met."""
    total, observed, r, h = 0.0, 0.0, 1.0, mode
    while (h + step >= 0) and (h + step <= rare):
        r *= _ratio(h, rare, n, step)
        h += step
        if h == het:
            observed = r
        if r == 0.0:
            break
        total += r
        if r < total * _NEGLIGIBLE and (het - h) * step <= 0:  # negligible, and het not ahead
            break
    return total, observed


@cached_njit()
def _tail(mode: int, rare: int, n: int, step: int, limit: float) -> float:
    total, r, h = 0.0, 1.0, mode
    while (h + step >= 0) and (h + step <= rare):
        r *= _ratio(h, rare, n, step)
        h += step
        if r == 0.0:
            break
        if r <= limit:
            total += r
            if r < total * _NEGLIGIBLE:
                break
    return total


@cached_njit(parallel=True)
def _hwe_many(het, hom1, hom2, out):
    # SNPs apart on every core: each test walks its het distribution, O(samples) steps (on one core,
    # --hwe was the slowest step of loading a .bed).
    for k in nb.prange(het.shape[0]):
        out[k] = hwe_exact_p(het[k], hom1[k], hom2[k])


def hwe_exact_pvalues(het: np.ndarray, hom1: np.ndarray, hom2: np.ndarray) -> np.ndarray:
    """Vectorised :func:`hwe_exact_p` over arrays of genotype counts."""
    het, hom1, hom2 = (np.ascontiguousarray(a, dtype=np.int64) for a in (het, hom1, hom2))
    out = np.empty(len(het), dtype=np.float64)
    if len(het):
        _hwe_many(het, hom1, hom2, out)
    return out
