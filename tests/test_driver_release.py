"""The command's end of its GPU connection (issue 24): once the contexts are reset, the driver's
device files are released on the GPU-ending thread, beside the formatting, instead of by the
kernel after the process's last instruction (gboost/engines/gpu/cuda.py, release_driver_files)."""
from __future__ import annotations

import os
import sys

import pytest

import gboost.engines.gpu.engine as engine_mod
from gboost.engines.gpu import GpuEngine
from gboost.engines.gpu.cuda import release_driver_files

linux = pytest.mark.skipif(not os.path.isdir("/proc/self/fd") or sys.platform != "linux", reason="needs /proc/self/fd")


@linux
def test_the_drivers_descriptors_point_at_dev_null_and_every_other_is_left_alone(tmp_path):
    driver, user = tmp_path / "nvfake0", tmp_path / "user.txt"
    driver.write_bytes(b"driver")
    user.write_bytes(b"user's data")
    fd_driver = os.open(driver, os.O_RDWR)
    fd_user = os.open(user, os.O_RDWR)
    try:
        assert release_driver_files(prefix=str(tmp_path / "nvfake")) == 1
        assert os.readlink(f"/proc/self/fd/{fd_driver}") == os.devnull
        assert os.readlink(f"/proc/self/fd/{fd_user}") == str(user)
        os.write(fd_driver, b"lost")  # the number is still open (never reused by a later open), on /dev/null
        assert driver.read_bytes() == b"driver" and user.read_bytes() == b"user's data"
        assert release_driver_files(prefix=str(tmp_path / "nvfake")) == 0  # nothing of the driver's is left
    finally:
        os.close(fd_driver)
        os.close(fd_user)


def test_without_a_descriptor_listing_nothing_is_released(tmp_path):
    assert release_driver_files(fds=str(tmp_path / "no-such-dir")) == 0


def test_the_engine_releases_the_driver_only_after_every_context_it_used_is_reset(monkeypatch):
    calls = []
    monkeypatch.setattr(engine_mod, "end_context", lambda d: calls.append(f"reset {d}"))
    monkeypatch.setattr(engine_mod, "release_driver_files", lambda: calls.append("release") or 0)
    e = GpuEngine()
    e._devices_used = [0, 1]
    e.end_contexts()
    assert calls == ["reset 0", "reset 1", "release"]
    calls.clear()
    GpuEngine().end_contexts()  # an engine that never started a GPU touches nothing
    assert calls == []
