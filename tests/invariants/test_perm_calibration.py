"""--perm's EMP2 controls the family-wise error: on null studies with LD blocks and missing calls, the
share of studies whose smallest EMP2 is <= 0.05 is 0.05, within binomial error, over many studies.

Under the null the real labels are one more draw of the permutations' labels, so the smallest EMP2
(that of the real scan's largest statistic) is <= 0.05 with probability 0.05 exactly when 0.05 (N+1)
is a whole number (ties among maxima only make it smaller): N = 39 permutations, EMP2 <= 0.05 when
at most one permutation's maximum reaches the real one."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gboost.data.study import study_from_genotypes
from gboost.engines.cpu import CpuEngine
from gboost.pipeline.permute import permutation_maximum, run_permutations

REPLICATES = 400
PERMS = 39


def _null_study(rng):
    """10 SNPs in two LD blocks (each SNP a noisy copy of its block's first), 2 % missing calls,
    labels independent of the genotypes."""
    n, p = 90, 10
    g = np.empty((p, n), np.int8)
    for b in range(0, p, 5):
        g[b] = rng.binomial(2, rng.uniform(0.1, 0.5), n)
        for k in range(b + 1, b + 5):
            fresh = rng.binomial(2, rng.uniform(0.1, 0.5), n)
            g[k] = np.where(rng.random(n) < 0.7, g[b], fresh)
    g[rng.random((p, n)) < 0.02] = -1
    y = np.zeros(n, bool)
    y[rng.choice(n, 40, replace=False)] = True
    return study_from_genotypes(g, y)


@pytest.mark.slow
def test_smallest_emp2_rejects_five_percent_of_null_studies():
    rng = np.random.default_rng(2024)
    eng = CpuEngine(threads=1)
    hits = 0
    for r in range(REPLICATES):
        s = _null_study(rng)
        real = permutation_maximum(eng, s, np.arange(s.n_samples) >= s.layout.n_ctrl, -math.inf, 0).stat
        perm = run_permutations(s, eng, PERMS, seed=r)
        hits += bool(perm.emp2([real])[0] <= 0.05)
    # Binomial(400, 0.05): mean 20, sd 4.36; 3 sd either side.
    assert 20 - 3 * 4.36 <= hits <= 20 + 3 * 4.36, hits
