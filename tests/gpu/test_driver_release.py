"""The command's end of its GPU connection: once the contexts are reset, the driver's
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
def test_the_drivers_descriptors_point_at_dev_null_and_every_other_is_left_alone(tmp_path, monkeypatch):
    import gboost.engines.gpu.cuda as cuda_mod

    monkeypatch.setattr(cuda_mod, "_RELEASED", [False])  # (this process's flag, restored after)
    driver, user = tmp_path / "nvfake0", tmp_path / "user.txt"
    driver.write_bytes(b"driver")
    user.write_bytes(b"user's data")
    fd_driver = os.open(driver, os.O_RDWR)
    fd_user = os.open(user, os.O_RDWR)
    try:
        assert not cuda_mod.driver_released()
        assert release_driver_files(prefix=str(tmp_path / "nvfake")) == 1
        assert cuda_mod.driver_released()  # the CLI then ends by os._exit, on error too
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


def _full_disk_scan(tmp_path, released: bool):
    """A `gboost scan` as the command line runs it (a process of its own), whose outputs fail to
    write (a full disk) after starting a thread that finishes 0.3 s later, with the driver's files
    released before (``released``: as after GpuEngine.end_contexts on a GPU) or not; an atexit
    handler marks an exit through the interpreter's teardown. Returns (the process, the thread's
    marker, the teardown's marker, the expected error line)."""
    import subprocess
    import textwrap

    from gboost.data.simulate import simulate_study

    prefix = str(tmp_path / "s")
    simulate_study(60, 80, 80, seed=3).write(prefix)
    marker, torn = tmp_path / "thread-finished", tmp_path / "teardown-ran"
    failed = tmp_path / "out" / "pairs.tsv"
    code = textwrap.dedent(f"""
        import atexit, sys, threading, time
        import gboost.cli as cli
        import gboost.outputs.results as results
        atexit.register(lambda: open({str(torn)!r}, "w").write("ran"))
        cli._driver_released = lambda: {released!r}
        def full_disk(*a, **k):
            def late():
                time.sleep(0.3)
                open({str(marker)!r}, "w").write("joined")
            threading.Thread(target=late).start()
            raise OSError(28, "No space left on device", {str(failed)!r})
        results.write_outputs = full_disk
        sys.argv = ["gboost", "scan", "--bfile", {prefix!r}, "--out", {str(tmp_path / "out")!r}, "--device", "cpu",
                    "--quiet", "--calibration-pairs", "0"]
        sys.exit(cli.main())
        """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return r, marker, torn, f"gboost: error: {failed}: No space left on device"


@pytest.mark.slow
def test_a_scan_that_fails_after_the_release_prints_one_line_and_exits_2_after_its_threads(tmp_path):
    """Once the driver's files are released, a normal exit would run the driver library's teardown on
    /dev/null: a scan whose outputs then fail to write (a full disk) ends as a finished one does,
    by os._exit after its other threads (the checkpoint's writer), with the one line and exit code 2.
    Before the release, the same failure still ends by the interpreter's exit (the next test)."""
    r, marker, torn, line = _full_disk_scan(tmp_path, released=True)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [line]
    assert marker.read_text() == "joined"
    assert not torn.exists()  # ended by os._exit, as a finished scan is


@pytest.mark.slow
def test_a_scan_that_fails_before_any_release_ends_as_before(tmp_path):
    r, marker, torn, line = _full_disk_scan(tmp_path, released=False)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [line]
    assert marker.read_text() == "joined"  # (the interpreter's exit joins it too)
    assert torn.read_text() == "ran"
