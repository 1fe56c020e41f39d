"""scripts/setup.sh finds the GPU: from nvidia-smi it reads the CUDA version the driver runs and
picks the CuPy wheel of that major version (the extra gpu or gpu-cuda13), keeps a CuPy that
already works, and without a driver says in one line that the CPU engine will be used.

Checked through ``setup.sh --detect`` (what it would do; nothing installed) with a stand-in
nvidia-smi first on the PATH and a copy of the script outside the repository, so that no .venv
is there and the interpreter named by PYTHON is the one whose CuPy counts."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import write_fake_cupy

ROOT = Path(__file__).resolve().parents[2]
HEADER = """+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: {cuda}          |
+-----------------------------------------+------------------------+----------------------+
"""
no_real_cupy = pytest.mark.skipif(importlib.util.find_spec("cupy") is not None,
                                  reason="this interpreter has a CuPy of its own: setup would keep it")


def detect(tmp_path: Path, *, cuda: str | None = "13.0", driver: str = "580.159.04", smi_fails: bool = False,
           fake_cupy: str | None = None) -> subprocess.CompletedProcess:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", repo / "scripts" / "setup.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    header = HEADER.format(cuda=cuda) if cuda else HEADER.replace("CUDA Version: {cuda}", "")
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + ("exit 9\n" if smi_fails else
                   f'case "$1" in\n'
                   f'  --query-gpu=name,driver_version*) echo "Fake GPU X100, {driver}" ;;\n'
                   f'  --query-gpu=driver_version*) echo "{driver}" ;;\n'
                   f"  *) cat <<'EOF'\n{header}EOF\n ;;\nesac\n"))
    smi.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PYTHON=sys.executable)
    if fake_cupy:
        env["PYTHONPATH"] = fake_cupy
    r = subprocess.run(["bash", str(repo / "scripts" / "setup.sh"), "--detect"], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert not (repo / ".venv").exists()  # --detect changes nothing
    return r


@no_real_cupy
def test_a_cuda_13_driver_gets_the_cuda13_wheel(tmp_path):
    out = detect(tmp_path, cuda="13.0").stdout
    assert "NVIDIA driver found: Fake GPU X100, 580.159.04, CUDA 13.0" in out
    assert "installing cupy-cuda13x (the extra gpu-cuda13)" in out


@no_real_cupy
def test_a_cuda_12_driver_gets_the_cuda12_wheel(tmp_path):
    out = detect(tmp_path, cuda="12.4", driver="550.54.15").stdout
    assert "CUDA 12.4" in out and "installing cupy-cuda12x (the extra gpu)" in out


@no_real_cupy
def test_without_a_cuda_version_in_the_header_the_driver_branch_decides(tmp_path):
    out = detect(tmp_path, cuda=None, driver="535.104.05").stdout
    assert "CUDA 12.0" in out and "the extra gpu)" in out
    out = detect(tmp_path, cuda=None, driver="580.65.06").stdout
    assert "CUDA 13.0" in out and "the extra gpu-cuda13" in out


@no_real_cupy
def test_a_driver_older_than_cuda_12_installs_no_cupy(tmp_path):
    out = detect(tmp_path, cuda="11.4", driver="470.82.01").stdout
    assert "older than the CuPy wheels gboost uses" in out and "installing" not in out


def test_without_a_driver_one_line_says_the_cpu_engine_will_be_used(tmp_path):
    r = detect(tmp_path, smi_fails=True)
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1, r.stdout
    assert lines[0].startswith("no NVIDIA driver found: gboost will use the CPU engine (")
    assert lines[0].endswith(" threads)")


def test_a_cupy_that_already_works_is_kept(tmp_path):
    out = detect(tmp_path, cuda="13.0", fake_cupy=write_fake_cupy(tmp_path / "fake")).stdout
    assert f"CuPy already works in {sys.executable}" in out and "kept, nothing installed" in out
    assert ".venv will see it" in out


def test_a_cupy_that_sees_no_gpu_is_left_alone(tmp_path):
    out = detect(tmp_path, cuda="13.0", fake_cupy=write_fake_cupy(tmp_path / "fake", devices=0)).stdout
    assert "sees no GPU: left as it is" in out and "installing" not in out
