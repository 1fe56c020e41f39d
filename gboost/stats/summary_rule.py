"""PLINK 1.9's choice of BEST_SNP in the .epi.cc.summary, as one compiled comparison.

PLINK takes the best partner after SNP m (earliest on ties), then lets the best partner before m
replace it only when strictly greater. As a total order: larger value; on equal values a partner
after m beats one before m; then the smaller index. Used by the CPU engine's tile kernels and by
the pipeline's survivor fold; ``gboost.scan.better_partner`` is the same rule over arrays.
"""
from __future__ import annotations

import numba as nb


@nb.njit(cache=True, inline="always")
def better(v, partner, best_v, best_partner, m) -> bool:
    """True when ``partner`` (value ``v``) should replace the current best of SNP ``m``
    (``best_partner < 0``: none yet)."""
    if best_partner < 0 or v > best_v:
        return True
    if v < best_v:
        return False
    after = partner > m
    if after != (best_partner > m):
        return after
    return partner < best_partner
