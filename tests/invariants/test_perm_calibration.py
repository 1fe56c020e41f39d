"""--perm's EMP2 controls the family-wise error: on null studies with LD blocks and missing calls, the
share of studies whose smallest EMP2 is <= 0.05 is 0.05, within binomial error, over many studies;
case-control and quantitative (a skewed trait: the permutation null needs no normal errors).

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
from gboost.pipeline.permute import permutation_maximum, run_permutations, trait_maximum

REPLICATES = 400
PERMS = 39


def _null_genotypes(rng, n=90, p=10):
    """10 SNPs in two LD blocks (each SNP a noisy copy of its block's first), 2 % missing calls."""
    g = np.empty((p, n), np.int8)
    for b in range(0, p, 5):
        g[b] = rng.binomial(2, rng.uniform(0.1, 0.5), n)
        for k in range(b + 1, b + 5):
            fresh = rng.binomial(2, rng.uniform(0.1, 0.5), n)
            g[k] = np.where(rng.random(n) < 0.7, g[b], fresh)
    g[rng.random((p, n)) < 0.02] = -1
    return g


def _null_study(rng):
    """:func:`_null_genotypes` and labels independent of them."""
    n = 90
    g = _null_genotypes(rng, n)
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


@pytest.mark.slow
def test_smallest_emp2_rejects_five_percent_of_null_quantitative_studies():
    from gboost.engines.qt_cpu import QTCPUEngine
    from tests.helpers import qt_study_of

    rng = np.random.default_rng(2025)
    eng = QTCPUEngine(threads=1)
    hits = 0
    for r in range(REPLICATES):
        s, _ = qt_study_of(_null_genotypes(rng), rng.exponential(2.0, 90))  # independent of the genotypes
        real = trait_maximum(eng, s, s.trait, 0).stat
        perm = run_permutations(s, eng, PERMS, seed=r)
        hits += bool(perm.emp2([real])[0] <= 0.05)
    assert 20 - 3 * 4.36 <= hits <= 20 + 3 * 4.36, hits
