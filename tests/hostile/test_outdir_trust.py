"""gboost deletes or renames only what it can prove it made (gboost/outputs/outdir.py): a folder of its
own carries a marker written at creation (its creator's PID and a random token, matching the
folder's name) and is held locked by that process; a leftover is cleared only when its marker is
valid and its process is gone. Each test hashes every byte of OUT/'s neighbours before and after."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.hostile.hostile_helpers import cpu_scan, neighbours_digest, small_study, tree_digest


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return small_study(tmp_path_factory, "hostile-out", seed=48)


def scan(study, out, *extra):
    return cpu_scan(study, out, "--epi1", "0.05", *extra)


def _inputs(study):
    return tree_digest(*(study + ext for ext in (".bed", ".bim", ".fam")))


def test_a_users_partial_named_folder_beside_out_is_left_byte_identical(study, tmp_path):
    """``mkdir .res.partial-backup; cp pairs.tsv .res.partial-backup/; gboost scan --out res``: the
    folder's shape is that of gboost before 0.2, but nothing proves gboost made it."""
    first = tmp_path / "first"
    assert scan(study, first) == 0
    backup = tmp_path / ".res.partial-backup"
    backup.mkdir()
    (backup / "pairs.tsv").write_bytes((first / "pairs.tsv").read_bytes())
    old = tmp_path / f".res.old-{2 ** 22 + 4321}"  # and an "old-<dead pid>" one
    old.mkdir()
    (old / "run.json").write_bytes((first / "run.json").read_bytes())
    out = tmp_path / "res"
    before, inputs = neighbours_digest(out), _inputs(study)
    assert scan(study, out) == 0
    assert neighbours_digest(out) == before
    assert scan(study, out, "--overwrite") == 0
    assert neighbours_digest(out) == before and _inputs(study) == inputs


def test_unmarked_gboost_named_folders_in_out_are_left(study, tmp_path):
    out = tmp_path / "o"
    assert scan(study, out) == 0
    dead = 2 ** 22 + 12345
    staging = out / f".gboost-staging-{dead}-ab12"
    staging.mkdir()
    (staging / "pairs.tsv").write_text("a user's copy\n")
    tmp = out / f".gboost-tmp-{dead}-0123456789abcdef"
    tmp.mkdir()
    (tmp / "marginal.tsv").write_text("also theirs\n")
    theirs = tree_digest(staging, tmp)
    assert scan(study, out, "--overwrite") == 0
    assert tree_digest(staging, tmp) == theirs


_MAKE = """
import os, sys
from pathlib import Path
from gboost.outputs import outdir
made = outdir.MarkedFolder(Path(sys.argv[1]), outdir._TMP)
(made.path / "pairs.tsv").write_text("half\\n")
print(made.path, flush=True)
if sys.argv[2] == "killed":
    os._exit(9)  # as a kill -9: the folder, its marker and a half file left behind
sys.stdin.read()  # alive (holding the folder) until the test closes stdin
"""


def _make(out: Path, how: str):
    p = subprocess.Popen([sys.executable, "-c", _MAKE, str(out), how], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return p, Path(p.stdout.readline().strip())


def test_a_killed_runs_marked_folder_is_cleared_and_a_live_ones_kept(study, tmp_path):
    from gboost.outputs.outdir import clear_leftovers

    out = tmp_path / "k"
    assert scan(study, out) == 0
    killed, dead_folder = _make(out, "killed")
    killed.wait()
    live, live_folder = _make(out, "live")
    try:
        assert dead_folder.is_dir() and live_folder.is_dir()
        before = neighbours_digest(out)
        assert clear_leftovers(out) == [dead_folder.name]
        assert not dead_folder.exists() and live_folder.is_dir()
        assert neighbours_digest(out) == before
    finally:
        live.stdin.close()
        live.wait()
    assert clear_leftovers(out) == [live_folder.name]  # its creator is gone now (it left the folder)


def test_a_forged_or_mismatched_marker_proves_nothing(study, tmp_path):
    from gboost.outputs.outdir import clear_leftovers

    out = tmp_path / "f"
    assert scan(study, out) == 0
    killed, folder = _make(out, "killed")
    killed.wait()
    marker = next(p for p in folder.iterdir() if p.name.startswith(".gboost-made"))
    text = marker.read_text()
    marker.write_text(text.replace(folder.name.rsplit("-", 1)[1], "0" * 16))  # another token
    kept = tree_digest(folder)
    assert clear_leftovers(out) == []
    assert tree_digest(folder) == kept
    marker.unlink()
    os.symlink(os.devnull, marker)  # a symlink at the marker's name
    assert clear_leftovers(out) == [] and folder.is_dir()


def test_a_stale_lock_whose_pid_another_program_took_is_taken_over(study, tmp_path, capsys):
    """A lock left by a killed run names its PID and the process's start time; once the system has
    given that PID to another program (here a `sleep`), the lock is stale and the next run takes it
    over. A lock of the live process that wrote it is refused, naming the lock file and the way out."""
    from gboost.outputs.outdir import LOCK, process_start

    if process_start(os.getpid()) is None:
        pytest.skip("no /proc/PID/stat on this system: a lock is a PID alone")
    other = subprocess.Popen(["sleep", "60"])
    try:
        out = tmp_path / "locked"
        out.mkdir()
        lock = out / LOCK
        lock.write_text(f"{other.pid} {process_start(other.pid) + 1}\n")  # a PID now another program's
        assert scan(study, out) == 0
        assert not lock.exists() and (out / "run.json").is_file()
        out2 = tmp_path / "held"
        out2.mkdir()
        (out2 / LOCK).write_text(f"{other.pid} {process_start(other.pid)}\n")  # that program's own lock
        capsys.readouterr()
        assert scan(study, out2) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"PID {other.pid}" in err[0] and str(out2 / LOCK) in err[0], err
        assert "delete that file" in err[0]
        assert [p.name for p in out2.iterdir()] == [LOCK]
    finally:
        other.kill()
        other.wait()
