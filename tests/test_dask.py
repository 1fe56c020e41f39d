"""Tiles on a Dask cluster give exactly the single-process result, even when a worker dies."""
import os
import signal

import numpy as np
import pytest

pytest.importorskip("distributed", reason="Dask is not installed (pip install 'gboost[cluster]')")

from gboost.engines.cpu import CpuEngine  # noqa: E402
from gboost.engines.distributed import DaskEngine  # noqa: E402
from gboost.io.results import render_outputs  # noqa: E402
from gboost.scan import ScanParams, run_scan  # noqa: E402
from gboost.study import study_from_genotypes  # noqa: E402
from tests.conftest import random_genotypes  # noqa: E402

COMPARED = ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv")


@pytest.fixture(scope="module")
def study():
    g, is_case = random_genotypes(np.random.default_rng(3), 400, 300, missing=0.02)
    return study_from_genotypes(g, is_case)


def outputs(result):
    texts = render_outputs(result)
    return {k: texts[k] for k in COMPARED}


def test_dask_local_cluster_equals_single_process(study):
    params = ScanParams(device="cpu", epi1=1e-3, tile=32)
    single = run_scan(study, params, engine=CpuEngine(tile=32))
    distributed = run_scan(study, params, engine=DaskEngine("local:2", device="cpu", tile=32))
    assert outputs(distributed) == outputs(single)
    assert distributed.n_valid == single.n_valid


def test_worker_killed_mid_run_loses_nothing_and_counts_nothing_twice(study):
    params = ScanParams(device="cpu", epi1=1e-3, tile=16)
    single = run_scan(study, params, engine=CpuEngine(tile=16))
    engine = DaskEngine("local:2", device="cpu", tile=16, tiles_per_task=1)
    killed = []

    def progress(ev):
        if ev.tiles_done == 5 and not killed:
            pids = engine.client.run(os.getpid)
            victim = sorted(pids.values())[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    distributed = run_scan(study, params, engine=engine, progress=progress)
    assert killed
    assert outputs(distributed) == outputs(single)
    assert distributed.n_valid == single.n_valid
