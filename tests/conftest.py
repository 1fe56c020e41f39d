import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def random_genotypes(rng: np.random.Generator, p: int, n: int, *, missing: float = 0.02,
                     case_frac: float = 0.5, monomorphic: int = 0):
    """Random HWE genotypes with MAFs 0.05-0.5, a missing-call rate, and some monomorphic SNPs."""
    maf = rng.uniform(0.05, 0.5, p)
    g = rng.binomial(2, maf[:, None], (p, n)).astype(np.int8)
    if monomorphic:
        idx = rng.choice(p, monomorphic, replace=False)
        g[idx] = rng.integers(0, 3, monomorphic)[:, None]
    g[rng.random((p, n)) < missing] = -1
    is_case = rng.random(n) < case_frac
    is_case[0], is_case[-1] = True, False  # both classes present
    return g, is_case


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
