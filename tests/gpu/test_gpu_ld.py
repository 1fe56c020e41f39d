"""The GPU engine on the LD-rich study (tests/helpers.py, ld_study) against the CPU engine: near-diagonal
tables, empty cells, DF 1 and 2, missing calls in every block, at loose thresholds so thousands
of pairs pass the screen. Run on the GPU machine; skipped with the reason elsewhere."""
from __future__ import annotations

import pytest

from gboost.engines.cpu import CpuEngine
from gboost.data.load import load_study
from gboost.pipeline.scan import ScanParams, run_scan
from gboost.data.study import QCOptions
from tests.helpers import assert_scan_equal, gpu_engine, ld_study


@pytest.fixture(scope="module")
def study():
    return load_study(ld_study().source(), QCOptions())


@pytest.mark.gpu
@pytest.mark.parametrize("counting", ["mma", "popc"])
@pytest.mark.parametrize("epi1", [1e-4, 1e-2])
def test_ld_study_gpu_equals_cpu(study, counting, epi1):
    params = ScanParams(epi1=epi1, epi2=0.05)
    want = run_scan(study, params, engine=CpuEngine())
    got = run_scan(study, params, engine=gpu_engine(counting=counting))
    assert (want.screened.df == 2).any() and len(want.screened) > 100
    if epi1 >= 1e-2:
        assert (want.screened.df == 1).any()
    assert_scan_equal(got, want)
