"""``gboost doctor`` says what the install found and always exits 0. The CPU path runs here; the
GPU path through a stand-in CuPy (tests/helpers.py, write_fake_cupy), since no GPU is needed to check that the
report reads the devices, versions and caches right."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import ROOT, write_fake_cupy

from gboost.runtime import numba_cache
def doctor(env: dict, *args) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "gboost.cli", "doctor", *args], cwd=ROOT, env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return r


def _env(tmp_path: Path, fake: str | None = None) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), CUPY_CACHE_DIR=str(tmp_path / "kernels"))
    env.pop("CUPY_CACHE_IN_MEMORY", None)
    if fake is None:
        env["CUDA_VISIBLE_DEVICES"] = ""  # where a real CuPy and GPU exist, hide them: the CPU path
    else:
        env["PYTHONPATH"] = os.pathsep.join([fake, env.get("PYTHONPATH", "")])
    return env


def test_without_a_gpu_doctor_names_the_cpu_engine_and_why(tmp_path):
    rep = json.loads(doctor(_env(tmp_path), "--json").stdout)
    assert rep["engine"]["auto"] == "cpu" and rep["engine"]["why"]
    assert rep["engine"]["cpu_threads"] >= 1 and rep["engine"]["numba_threads"] >= 1
    assert rep["gpu"]["usable"] is False
    assert rep["caches"]["numba_cache"] == str(tmp_path / "numba" / f"gboost-{numba_cache.source_hash()}")
    assert rep["caches"]["numba_cache_state"].startswith("cold")
    assert rep["caches"]["cupy_kernel_cache"] == str(tmp_path / "kernels")
    readers = " ".join(rep["readers"])
    for name in ("bed-reader", "pgenlib", "cyvcf2", "cbgen"):
        assert name in readers
    assert set(rep["plink"]) == {"plink1.9", "plink", "plink2"}


@pytest.mark.slow
def test_the_text_report_has_a_line_for_each_part(tmp_path):
    out = doctor(_env(tmp_path)).stdout
    assert "--device auto uses the CPU engine" in out
    for head in ("engine", "gpu", "caches", "readers", "plink"):
        assert any(line.startswith(head) for line in out.splitlines()), head
    assert "threads" in out and "cbgen" in out and "plink1.9" in out


@pytest.mark.slow
def test_doctor_reports_the_gpu_cupy_sees(tmp_path):
    env = _env(tmp_path, write_fake_cupy(tmp_path / "fake"))
    rep = json.loads(doctor(env, "--json").stdout)
    g = rep["gpu"]
    assert g["usable"] is True and rep["engine"]["auto"] == "gpu"
    assert g["cupy"] == "99.0.0" and g["cuda_runtime"] == "13.0" and g["cuda_driver"] == "13.1" and g["nvrtc"] == "13.0"
    assert g["devices"] == [{"id": 0, "name": "Fake GPU X100", "memory_gib": 80.0, "compute_capability": "9.0",
                             "counting": "tensor-core b1 mma"}]
    assert "not warmed for Fake GPU X100" in rep["caches"]["cupy_kernel_cache_state"]
    text = doctor(env).stdout
    assert "--device auto uses the GPU engine" in text
    assert "GPU 0: Fake GPU X100, 80.0 GiB, compute capability 9.0" in text


@pytest.mark.slow
def test_doctor_says_the_kernel_cache_is_warm_only_for_the_gpu_warm_built_it_for(tmp_path):
    env = _env(tmp_path, write_fake_cupy(tmp_path / "fake"))
    folder = tmp_path / "numba" / f"gboost-{numba_cache.source_hash()}"
    folder.mkdir(parents=True)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "0123abcd.cubin").write_bytes(b"\0")
    marker = {"numba": None, "python": None, "when": "2026-11-24T00:00:00Z",
              "gpu": {"name": "Fake GPU X100", "compute_capability": "90", "cupy": "99.0.0",
                      "kernel_cache": str(tmp_path / "kernels")}}
    (folder / "warm.json").write_text(json.dumps(marker))
    state = json.loads(doctor(env, "--json").stdout)["caches"]["cupy_kernel_cache_state"]
    assert state == "warm for Fake GPU X100 (1 compiled modules)"
    marker["gpu"]["name"] = "Another GPU"
    (folder / "warm.json").write_text(json.dumps(marker))
    state = json.loads(doctor(env, "--json").stdout)["caches"]["cupy_kernel_cache_state"]
    assert state.startswith("1 compiled modules; not warmed for Fake GPU X100")


@pytest.mark.slow
def test_a_cupy_that_fails_to_import_is_reported_not_raised(tmp_path):
    env = _env(tmp_path, write_fake_cupy(tmp_path / "fake", broken=True))
    rep = json.loads(doctor(env, "--json").stdout)
    assert rep["engine"]["auto"] == "cpu"
    assert "libnvrtc.so.13" in rep["gpu"]["reason"]


@pytest.mark.slow
def test_a_cupy_that_sees_no_device_leaves_the_cpu_engine(tmp_path):
    env = _env(tmp_path, write_fake_cupy(tmp_path / "fake", devices=0))
    rep = json.loads(doctor(env, "--json").stdout)
    assert rep["engine"]["auto"] == "cpu" and rep["gpu"]["reason"] == "no CUDA device"


@pytest.mark.slow
def test_doctor_imports_no_qt(tmp_path):
    code = "import sys; from gboost.cli import main; main(['doctor']); assert 'PySide6.QtCore' not in sys.modules"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
