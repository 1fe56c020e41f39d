"""A candidate-set scan's rectangle (gboost/data/candidates.py) on the GPU equals the CPU engine's:
the rectangle's tiles (cut around each row's own column, some one SNP wide or high) go through the
GPU's ordinary tile path, so every pair, table, statistic and summary must be the same. Run on the GPU
machine; skipped with the reason elsewhere."""
from __future__ import annotations

import numpy as np
import pytest

from gboost.data.candidates import CandidateSets, rectangle_study
from gboost.data.load import load_study
from gboost.data.study import QCOptions
from gboost.engines.cpu import CpuEngine
from gboost.pipeline.scan import ScanParams, run_scan
from tests.helpers import assert_scan_equal, gpu_engine, ld_study


@pytest.fixture(scope="module")
def study():
    return load_study(ld_study().source(), QCOptions())


def _sets(study, *groups):
    ids = np.asarray(study.variants.snp)
    return CandidateSets("sets.txt", "set", tuple((f"S{k}", tuple(ids[g].tolist())) for k, g in enumerate(groups)))


@pytest.mark.gpu
@pytest.mark.parametrize("counting", ["mma", "popc"])
@pytest.mark.parametrize("mode", ["set-by-all", "set-by-set"])
def test_rectangle_gpu_equals_cpu(study, counting, mode):
    p = study.n_snps
    hits = np.arange(7, p, max(1, p // 300))  # ~300 rows spread over the study
    groups = (hits,) if mode == "set-by-all" else (hits, np.arange(0, p, 3))  # overlapping sets
    rect = rectangle_study(study, _sets(study, *groups), mode)
    params = ScanParams(epi1=1e-3, epi2=0.05)
    want = run_scan(rect, params, engine=CpuEngine())
    got = run_scan(rect, params, engine=gpu_engine(counting=counting))
    assert want.n_valid == int(want.summary.n_tot[:rect.rect.n_rows].sum())
    assert_scan_equal(got, want)
