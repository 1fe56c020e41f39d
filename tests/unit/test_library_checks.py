"""The library checks what the command line checks: QCOptions, ScanParams, open_input and
run_pipeline refuse wrong types (TypeError naming the argument) and values (ValueError in the
command line's words), and the command line, which only parses and calls, prints what it did."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import gboost
from gboost.cli import main
from gboost.data.simulate import simulate_study


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("checks") / "s")
    simulate_study(30, 40, 40, seed=3).write(prefix)
    return prefix


@pytest.mark.parametrize("kw, message", [
    ({"maf": -1}, "invalid --maf parameter -1 (must be in (0, 1])"),
    ({"maf": 0.0}, "invalid --maf parameter 0.0 (must be in (0, 1])"),
    ({"maf": math.nan}, "invalid --maf parameter nan (must be a finite number)"),
    ({"geno": 1.5}, "invalid --geno parameter 1.5 (must be in [0, 1])"),
    ({"mind": -0.1}, "invalid --mind parameter -0.1 (must be in [0, 1])"),
    ({"hwe": 1.0}, "invalid --hwe parameter 1.0 (must be in [0, 1))"),
])
def test_qc_options_refuse_values_out_of_range(kw, message):
    with pytest.raises(ValueError) as exc:
        gboost.QCOptions(**kw)
    assert str(exc.value) == message


@pytest.mark.parametrize("kw, name", [({"maf": "0.01"}, "maf"), ({"hwe": True}, "hwe"), ({"chrom": "22"}, "chrom"),
                                      ({"chrom": 22}, "chrom"), ({"chrom": [22]}, "chrom"), ({"extract": 5}, "extract")])
def test_qc_options_refuse_wrong_types_naming_the_argument(kw, name):
    with pytest.raises(TypeError, match=rf"^QCOptions: {name} must be"):
        gboost.QCOptions(**kw)


def test_chrom_as_a_list_still_selects_chromosome_22(tmp_path):
    prefix = str(tmp_path / "c")
    simulate_study(220, 30, 30, seed=5, chromosomes=22).write(prefix)
    study = gboost.load_study(gboost.open_input(bfile=prefix), gboost.QCOptions(chrom=["22"]))
    assert set(study.variants.chrom) == {"22"}


@pytest.mark.parametrize("kw, message", [
    ({"tile": -5}, "invalid --tile parameter -5 (must be at least 1)"),
    ({"tile": 0}, "invalid --tile parameter 0 (must be at least 1)"),
    ({"threads": 0}, "invalid --threads parameter 0 (must be at least 1)"),
    ({"min_distance_kb": -1.0}, "invalid --min-distance parameter -1.0 (must be at least 0)"),
    ({"max_r2": 2.0}, "invalid --max-r2 parameter 2.0 (must be in [0, 1])"),
    ({"max_r2": math.nan}, "invalid --max-r2 parameter nan (must be a finite number)"),
    ({"gpus": [0, 0]}, "invalid --gpus parameter [0, 0] (expected distinct device numbers >= 0, e.g. 0,1)"),
    ({"gpus": [-1]}, "invalid --gpus parameter [-1] (expected distinct device numbers >= 0, e.g. 0,1)"),
    ({"device": "tpu"}, "--device must be auto, cpu or gpu, got 'tpu'"),
    ({"part": (3, 2)}, "--part 3/2: need 1 <= K <= N"),
    ({"epi1": 1.5}, "--epi1 must be between 0 and 1 (exclusive), got 1.5"),
    ({"calibration_pairs": -1}, "--calibration-pairs must be 0 (no calibration) or more, got -1"),
    ({"perm": -3}, "invalid --perm parameter -3 (must be at least 1)"),
    ({"perm_seed": -1}, "invalid --perm-seed parameter -1 (must be at least 0)"),
    ({"within": "c.txt"}, "--within c.txt gives the clusters to permute labels within, but no --perm was given; add "
                          "--perm N"),
    ({"perm": 5, "part": (1, 2)}, "--perm takes the maximum over every pair of the study, which a --part does not "
                                  "see; run --perm without --part"),
])
def test_scan_params_refuse_values_out_of_range(kw, message):
    with pytest.raises(ValueError) as exc:
        gboost.ScanParams(**kw)
    assert str(exc.value) == message


@pytest.mark.parametrize("kw, name", [({"tile": 2.5}, "tile"), ({"threads": "4"}, "threads"), ({"epi1": "1e-4"}, "epi1"),
                                      ({"gpus": "0,1"}, "gpus"), ({"allelic": "yes"}, "allelic"), ({"part": "1/2"}, "part"),
                                      ({"calibration_pairs": 1.5}, "calibration_pairs"), ({"dask": 8786}, "dask"),
                                      ({"perm": 2.0}, "perm"), ({"perm": True}, "perm"), ({"perm_seed": "1"}, "perm_seed"),
                                      ({"perm": 3, "within": 5}, "within")])
def test_scan_params_refuse_wrong_types_naming_the_argument(kw, name):
    with pytest.raises(TypeError, match=rf"^ScanParams: {name} must be"):
        gboost.ScanParams(**kw)


def test_a_negative_tile_no_longer_scans_nothing(prefix):
    """(it gave 0 valid tests and no error)"""
    study = gboost.load_study(gboost.open_input(bfile=prefix))
    with pytest.raises(ValueError, match="--tile"):
        gboost.run_pipeline(study, gboost.ScanParams(tile=-5, device="cpu"))


@pytest.mark.parametrize("kw, name", [({"bfile": 123}, "bfile"), ({"vcf": ["a.vcf"]}, "vcf"),
                                      ({"bfile": "x", "pheno": 1}, "pheno"),
                                      ({"bfile": "x", "allow_no_sex": "no"}, "allow_no_sex")])
def test_open_input_refuses_wrong_types_naming_the_argument(kw, name):
    with pytest.raises(TypeError, match=rf"^open_input: {name} must be"):
        gboost.open_input(**kw)


def test_open_input_takes_a_path_object(prefix):
    assert gboost.open_input(bfile=Path(prefix)).variants is not None


def test_open_input_refuses_a_hard_call_threshold_out_of_range(prefix):
    with pytest.raises(ValueError, match=r"invalid --hard-call-threshold parameter 0\.5 \(must be in \[0, 0\.5\)\)"):
        gboost.open_input(bgen="x.bgen", hard_call_threshold=0.5)


def test_run_pipeline_checks_its_arguments(prefix):
    study = gboost.load_study(gboost.open_input(bfile=prefix))
    with pytest.raises(TypeError, match="^run_pipeline: study must be"):
        gboost.run_pipeline(prefix)
    with pytest.raises(TypeError, match="^run_pipeline: params must be"):
        gboost.run_pipeline(study, {"epi1": 1e-4})
    with pytest.raises(TypeError, match="^run_pipeline: covariates must be"):
        gboost.run_pipeline(study, gboost.ScanParams(device="cpu"), covariates=np.zeros((80, 1)))
    with pytest.raises(ValueError, match=r"^run_pipeline: covariates of shape \(79, 1\)"):
        gboost.run_pipeline(study, gboost.ScanParams(device="cpu"), covariates=(np.zeros((79, 1)), ["age"]))


@pytest.mark.parametrize("flags, line", [
    (["--maf", "-1"], "gboost scan: error: argument --maf: invalid --maf parameter '-1' (must be in (0, 1])"),
    (["--maf", "nan"], "gboost scan: error: argument --maf: invalid --maf parameter 'nan' (must be a finite number)"),
    (["--tile", "-5"], "gboost scan: error: argument --tile: invalid --tile parameter '-5' (must be at least 1)"),
    (["--gpus", "0,0"], "gboost scan: error: argument --gpus: invalid --gpus parameter '0,0' (expected distinct "
                        "device numbers >= 0, e.g. 0,1)"),
    (["--hwe", "1"], "gboost scan: error: argument --hwe: invalid --hwe parameter '1' (must be in [0, 1))"),
    (["--perm", "0"], "gboost scan: error: argument --perm: invalid --perm parameter '0' (must be at least 1)"),
    (["--perm", "-3"], "gboost scan: error: argument --perm: invalid --perm parameter '-3' (must be at least 1)"),
    (["--perm", "ten"], "gboost scan: error: argument --perm: invalid --perm parameter 'ten'"),
    (["--perm", "2.5"], "gboost scan: error: argument --perm: invalid --perm parameter '2.5'"),
    (["--perm-seed", "-1"], "gboost scan: error: argument --perm-seed: invalid --perm-seed parameter '-1' (must be at "
                            "least 0)"),
])
def test_the_command_line_prints_the_same_line(prefix, tmp_path, capsys, flags, line):
    with pytest.raises(SystemExit) as exc:
        main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--quiet", *flags])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == line


def test_the_command_line_reports_a_library_refusal_in_one_line(prefix, tmp_path, capsys):
    assert main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--quiet", "--epi1", "1"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "gboost: error: --epi1 must be between 0 and 1 (exclusive), got 1.0"]


def test_more_local_dask_workers_than_cores_are_refused_in_one_line(prefix, tmp_path, capsys, monkeypatch):
    """Each local Dask worker is a process with gboost and numba loaded: 500 of them on two cores
    never finished starting. The library and the command refuse it with the same reason."""
    from gboost.pipeline import validate

    monkeypatch.setattr(validate, "usable_cores", lambda: 2)
    why = ("invalid --dask parameter 'local:500' (this machine has 2 usable cores and local:N starts N worker "
           "processes, one a core: use local:2 or fewer, or a scheduler's address to reach more machines)")
    with pytest.raises(ValueError) as exc:
        gboost.ScanParams(dask="local:500")
    assert str(exc.value) == why
    assert gboost.ScanParams(dask="local:2").dask == "local:2"
    with pytest.raises(SystemExit) as stop:
        main(["scan", "--bfile", prefix, "--out", str(tmp_path / "o"), "--quiet", "--dask", "local:500"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"gboost scan: error: argument --dask: {why}"
    assert not (tmp_path / "o").exists()
