"""gboost/pipeline/params.py: every setting belongs to exactly one of the three views, the checkpoint pins
exactly the screen's view, and make_engine takes the engine's view."""
from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from gboost.engines import make_engine
from gboost.engines.cpu import CpuEngine
from gboost.errors import InputError
from gboost.pipeline.params import (EngineOptions, PermutationOptions, ReportOptions, ScanParams, ScreenParams,
                                    results_key)
from gboost.data.study import study_from_genotypes
from tests.helpers import random_genotypes


def test_every_setting_is_in_exactly_one_view():
    views = [{f.name for f in fields(v)} for v in (ScreenParams, EngineOptions, ReportOptions, PermutationOptions)]
    flat = [f.name for f in fields(ScanParams)]
    assert sorted(n for v in views for n in v) == sorted(flat)  # a new flag must say what it changes


def test_the_views_give_back_the_flat_settings():
    p = ScanParams(epi1=1e-3, epi2=0.05, device="cpu", threads=2, tile=64, gpus=[0, 1], dask="local:2",
                   allelic=True, part=(2, 5), min_distance_kb=10.0, max_r2=0.5, calibration_pairs=7)
    assert p.screen == ScreenParams(1e-3, 0.05, (2, 5))
    assert p.engine == EngineOptions("cpu", 2, 64, (0, 1), "local:2")
    assert p.report == ReportOptions(True, 10.0, 0.5, 7)
    assert ScanParams.of(p.screen, p.engine, p.report) == p
    assert results_key(vars(p)) == {"epi1": 1e-3, "epi2": 0.05, "allelic": True, "min_distance_kb": 10.0,
                                    "max_r2": 0.5, "calibration_pairs": 7}


def test_make_engine_takes_the_engine_options():
    eng = make_engine(ScanParams(device="cpu", threads=1, tile=48).engine)
    assert type(eng) is CpuEngine and eng.threads == 1 and eng._tile == 48


def test_a_checkpoint_resumes_under_other_engine_and_report_options_but_not_other_screen_settings(tmp_path):
    from gboost.pipeline.checkpoint import Ledger

    g, is_case = random_genotypes(np.random.default_rng(4), 40, 120)
    study = study_from_genotypes(g, is_case)
    first = ScanParams(epi1=1e-2, epi2=0.1, device="cpu", threads=1)
    led = Ledger(tmp_path, study, first, resume=False)
    led.start(tile=16, tiles=6)
    led.close()
    other_engine_and_report = ScanParams(epi1=1e-2, epi2=0.1, device="auto", threads=2, tile=32, allelic=True,
                                         max_r2=0.5, calibration_pairs=0)
    Ledger(tmp_path, study, other_engine_and_report, resume=True).close()
    for changed in (dict(epi1=1e-3), dict(epi2=0.2), dict(part=(1, 2))):
        with pytest.raises(InputError, match="other settings"):
            Ledger(tmp_path, study, ScanParams(**{**vars(first), **changed}), resume=True)


def test_a_checkpoint_pins_the_permutations_n_seed_and_the_within_files_content(tmp_path):
    from gboost.pipeline.checkpoint import Ledger

    g, is_case = random_genotypes(np.random.default_rng(5), 30, 100)
    study = study_from_genotypes(g, is_case)
    assert "perm" not in ScanParams().checkpoint_settings()[1]  # (a scan without --perm pins what it pinned)
    within = tmp_path / "w.txt"
    within.write_text("a b 1\n")
    first = ScanParams(device="cpu", perm=10, perm_seed=3, within=str(within))
    d = tmp_path / "ck"
    led = Ledger(d, study, first, resume=False)
    led.start(tile=16, tiles=3)
    led.close()
    Ledger(d, study, ScanParams(**{**vars(first), "threads": 1}), resume=True).close()
    other = tmp_path / "w2.txt"
    other.write_text("a b 2\n")
    for changed in (dict(perm=11), dict(perm_seed=4), dict(within=str(other)), dict(perm=0, within=None)):
        with pytest.raises(InputError, match="other settings"):
            Ledger(d, study, ScanParams(**{**vars(first), **changed}), resume=True)
    within.write_text("a b 2\n")  # the same path, other clusters
    with pytest.raises(InputError, match=r"--perm, --perm-seed or the --within file"):
        Ledger(d, study, first, resume=True)


def test_qt_params_check_dask_and_the_pair_filters_as_scan_params_do():
    """QTParams refuses what ScanParams refuses for the settings both have, in the same words."""
    from gboost.pipeline.qt_scan import QTParams

    for kw in (dict(max_r2=1.5), dict(min_distance_kb=-1), dict(dask="local:0")):
        with pytest.raises(ValueError) as qt:
            QTParams(**kw)
        with pytest.raises(ValueError) as cc:
            ScanParams(**kw)
        assert str(qt.value) == str(cc.value)
    with pytest.raises(TypeError, match="QTParams: dask"):
        QTParams(dask=3)
    with pytest.raises(ValueError, match="workers' CPUs"):
        QTParams(dask="local:1", device="gpu")
    assert QTParams(dask="local:1", max_r2=0.5, min_distance_kb=10).dask == "local:1"
