"""Resource limits as batch schedulers set them end in one line and exit 2, with nothing written:
an address-space limit (``ulimit -v``) below what starting needs is refused before numba starts
(under it LLVM and OpenMP abort the process), the thread pools are fitted to a limit that has room
for fewer threads than cores, and an allocation that fails mid-scan is named, not a traceback."""
from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from tests.helpers import ROOT
from tests.hostile.hostile_helpers import small_study, tree_digest


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return small_study(tmp_path_factory, "limits", seed=51)


def _limited(limit_bytes):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    return apply


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux")
def test_an_address_limit_below_the_floor_is_one_line_and_nothing_written(study, tmp_path):
    inputs = tree_digest(*(study + ext for ext in (".bed", ".bim", ".fam")))
    out = tmp_path / "o"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"}
    r = subprocess.run([sys.executable, "-m", "gboost.cli", "scan", "--bfile", study, "--out", str(out), "--quiet",
                        "--device", "cpu"], cwd=ROOT, env=env, capture_output=True, text=True,
                       preexec_fn=_limited(500 << 20))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gboost: error: the address-space limit of this process "
                                                   "(ulimit -v) is 500 MB; gboost needs at least"), lines
    assert not out.exists()
    assert tree_digest(*(study + ext for ext in (".bed", ".bim", ".fam"))) == inputs


def test_threads_are_fitted_to_a_limit_with_room_for_fewer_than_cores(monkeypatch):
    """(Into a dict standing for the environment: numba re-reads the real one as it compiles, and
    this process's thread pool has started.)"""
    from gboost.runtime import process

    monkeypatch.setattr(process.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setattr(process, "address_limit", lambda: 1200 << 20)  # 64 threads failed here
    env = {}
    room = (500 << 20) // process.THREAD_BYTES
    assert process.fit_threads_to_limit(env) == room
    assert env == {"NUMBA_NUM_THREADS": str(room), "OMP_NUM_THREADS": str(room)}
    env = {"NUMBA_NUM_THREADS": "48"}  # the user's own choice stands
    assert process.fit_threads_to_limit(env) is None and env == {"NUMBA_NUM_THREADS": "48"}
    monkeypatch.setattr(process, "address_limit", lambda: None)  # no limit: nothing changes
    env = {}
    assert process.fit_threads_to_limit(env) is None and env == {}


@pytest.mark.slow  # a whole scan in a subprocess under an address limit (~40 s on 2 cores)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux")
def test_a_limit_with_room_for_one_thread_scans(study, tmp_path):
    """Just above the floor, on every core this machine has: the fitted pool starts and the scan ends."""
    from gboost.runtime.process import START_BYTES, THREAD_BYTES

    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")}
    out = tmp_path / "o"
    r = subprocess.run([sys.executable, "-m", "gboost.cli", "scan", "--bfile", study, "--out", str(out), "--quiet",
                        "--device", "cpu"], cwd=ROOT, env=env, capture_output=True, text=True,
                       preexec_fn=_limited(START_BYTES + 6 * THREAD_BYTES))
    assert r.returncode == 0, r.stderr
    assert (out / "run.json").is_file()


def test_an_allocation_failing_mid_scan_is_one_line_and_nothing_written(study, tmp_path, capsys, monkeypatch):
    import gboost.pipeline.scan as scan
    from gboost.cli import main

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 8.00 GiB for an array with shape (1024, 1048576)")

    monkeypatch.setattr(scan, "finalize", no_memory)
    out = tmp_path / "o"
    assert main(["scan", "--bfile", study, "--out", str(out), "--quiet", "--device", "cpu"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gboost: error: out of memory (Unable to allocate 8.00 GiB"), lines
    assert not (out / "run.json").exists() and not (out / "pairs.tsv").exists()


def test_a_simulation_larger_than_memory_is_refused_before_drawing(tmp_path, capsys, monkeypatch):
    """`gboost simulate` holds ~10 bytes per genotype call at its peak: a size beyond the memory
    the machine can spare is one line and exit 2, before anything is drawn or written (the kernel's
    OOM killer ended such a run on a shared machine)."""
    from gboost.cli import main

    monkeypatch.setenv("GBOOST_MEMORY_LIMIT", str(1 << 30))
    out = tmp_path / "big"
    for extra in (["--cases", "2500", "--controls", "2500"], ["--qt", "5000"]):
        capsys.readouterr()
        assert main(["simulate", "--out", str(out), "--snps", "500000", "--seed", "1", *extra]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("gboost simulate: 500,000 SNPs x 5,000 samples need about "), lines
        assert list(tmp_path.iterdir()) == []
    assert main(["simulate", "--out", str(out), "--snps", "50", "--seed", "1", "--cases", "30", "--controls", "30"]) == 0
