"""numba unpickles what its cache folder holds, so a cache folder is code this process runs: gboost
loads from one only when it and each folder gboost made above it belong to this user and nobody
else can write them (gboost/runtime/numba_cache.py configure). Two users: the tests run as root and plant
as ``nobody`` through fork + setuid."""
from __future__ import annotations

import os
import pickle
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gboost.runtime import numba_cache
from tests.hostile.hostile_helpers import tree_digest

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534


def _as_other_user(fn) -> None:
    """``fn()`` in a forked child running as uid/gid ``nobody``; raises if it failed."""
    pid = os.fork()
    if pid == 0:  # the child: plants the folder as the other user, then exits
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            fn()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the other user's step failed"


needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="planting as another user needs root (fork + setuid)")


@pytest.fixture
def shared_tmp():
    """A temp directory like /tmp (mode 1777) that another user can reach."""
    d = Path(tempfile.mkdtemp(prefix="gboost-hostile-", dir="/tmp"))
    os.chmod(d, 0o1777)
    yield d
    import shutil

    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """configure() run here must not leave this process's choice, or its environment, at a test folder."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(numba_cache, "_CHOSEN", [])


def configure():
    """configure() choosing afresh, as a new process does (the choice is once a process)."""
    numba_cache._CHOSEN.clear()
    return numba_cache.configure()


def _unwritable_home(monkeypatch, tmp_path) -> None:
    """A cache home that cannot be made (root writes anywhere; a file in the path stops it)."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "cache"))


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


_CALL = """
import numpy as np, sys
import gboost
from gboost.pipeline.best_ties import _choose_all
z = np.array([[np.nan, 1.0], [1.0, np.nan]])
best, partner, done = np.zeros(2), np.zeros(2, np.int64), np.zeros(2, np.bool_)
_choose_all(z, np.array([0, 1]), best, partner, done)
from gboost.cli.doctor import caches_section
from gboost.runtime.numba_cache import choose
import os
st = os.lstat(os.path.dirname(str(choose())))
print(choose(), caches_section({"usable": False, "reason": ""})["numba_cache"], st.st_uid, oct(st.st_mode))
"""


def _run(env_extra: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "TMPDIR")}
    env.update(PYTHONPATH=str(ROOT), **env_extra)
    return subprocess.run([sys.executable, "-c", _CALL], capture_output=True, text=True, env=env, timeout=300)


@needs_root
def test_pickles_another_user_planted_in_the_temp_cache_never_run(tmp_path, shared_tmp):
    """The user's cache home is not writable, so gboost falls back to the temp directory, where
    ``nobody`` made gboost's folder first and planted a cache index that runs code when unpickled."""
    tag = numba_cache.source_hash()
    # Where numba keeps the index of the function called, learned from a cache of our own.
    ours = tmp_path / "ours" / tag
    first = _run({"NUMBA_CACHE_DIR": str(ours), "TMPDIR": str(tmp_path)})
    assert first.returncode == 0, first.stderr
    indexes = [p.relative_to(ours) for p in ours.rglob("*.nbi")]
    assert indexes, "numba wrote no index: the layout this test plants into is not numba's"
    marker = str(shared_tmp / "planted-code-ran")
    evil = pickle.dumps(_Evil(marker))
    planted = shared_tmp / f"gboost-numba-{os.getuid()}"

    def plant():
        os.umask(0)
        for rel in indexes:
            target = planted / tag / rel
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o777)
            target.write_bytes(evil)

    _as_other_user(plant)
    assert os.stat(planted).st_uid == NOBODY
    before = tree_digest(planted)
    home = tmp_path / "blocker"
    home.write_text("")
    got = _run({"XDG_CACHE_HOME": str(home / "cache"), "TMPDIR": str(shared_tmp)})
    assert got.returncode == 0, got.stderr
    assert not os.path.exists(marker), "code another user planted in the cache folder ran"
    used, doctor, uid, mode = got.stdout.split()
    assert used == doctor  # the doctor (and warm, the GUI) read the folder configure() proved
    assert not Path(used).is_relative_to(planted)
    assert int(uid) == os.getuid() and stat.S_IMODE(int(mode, 8)) == 0o700 and stat.S_ISDIR(int(mode, 8))
    assert not Path(used).exists()  # this run's own cache is gone with it: nothing piles up in the temp folder
    assert "numba's cache folder" in got.stderr and str(planted) in got.stderr
    assert len([l for l in got.stderr.splitlines() if l.startswith("gboost:")]) == 1, got.stderr
    assert tree_digest(planted) == before  # the other user's files are left as they were


@needs_root
def test_the_temp_cache_folder_another_user_made_is_replaced_by_a_fresh_one(monkeypatch, tmp_path, shared_tmp, isolated):
    _unwritable_home(monkeypatch, tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(shared_tmp))
    planted = shared_tmp / f"gboost-numba-{os.getuid()}"
    tag = numba_cache.source_hash()

    def plant():
        os.mkdir(planted, 0o755)  # not writable by us either way: ownership alone decides
        os.mkdir(planted / tag, 0o755)

    _as_other_user(plant)
    got = configure()
    assert got is not None and not got.is_relative_to(planted)
    assert got.name == tag and numba_cache.untrusted(got) is None and numba_cache.untrusted(got.parent) is None
    assert os.environ["NUMBA_CACHE_DIR"] == str(got)
    # a child process that inherits the folder checks it again and keeps it
    assert configure() == got


def test_a_world_writable_cache_folder_of_ours_is_not_trusted(monkeypatch, tmp_path, isolated):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    normal = tmp_path / "cache" / "gboost" / "numba" / numba_cache.source_hash()
    normal.mkdir(parents=True)
    os.chmod(normal, 0o777)
    got = configure()
    assert got is not None and not got.is_relative_to(tmp_path / "cache")
    assert numba_cache.untrusted(got) is None
    # the temp directory's fixed name is not used either: the fresh folder is mkdtemp's
    assert got.parent.name != f"gboost-numba-{os.getuid()}"
    # a group-writable folder above it is as bad
    os.chmod(normal, 0o700)
    os.chmod(normal.parent, 0o770)
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    got = configure()
    assert got is not None and not got.is_relative_to(tmp_path / "cache")
    os.chmod(normal.parent, 0o755)
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert configure() == normal  # a private one is used


def test_a_symlink_planted_at_the_temp_cache_name_is_not_followed(monkeypatch, tmp_path, isolated):
    _unwritable_home(monkeypatch, tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / numba_cache.source_hash()).mkdir(parents=True, mode=0o700)
    os.chmod(elsewhere, 0o700)
    (tmp / f"gboost-numba-{os.getuid()}").symlink_to(elsewhere)
    got = configure()
    assert got is not None and not got.resolve().is_relative_to(elsewhere.resolve())
    assert numba_cache.untrusted(got.parent) is None


def test_a_symlink_at_an_inherited_cache_folder_is_not_followed(monkeypatch, tmp_path, isolated):
    tag = numba_cache.source_hash()
    (tmp_path / "real" / tag).mkdir(parents=True)
    (tmp_path / "gboost-numba-x").symlink_to(tmp_path / "real")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "gboost-numba-x" / tag))
    got = configure()
    assert got is not None and not got.resolve().is_relative_to((tmp_path / "real").resolve())


def test_caching_is_turned_off_when_no_private_folder_can_be_made(monkeypatch, tmp_path, isolated, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    normal = tmp_path / "cache" / "gboost"
    normal.mkdir(parents=True)
    os.chmod(normal, 0o777)

    def no_temp(*a, **k):
        raise PermissionError(13, "Permission denied", str(tmp_path))

    monkeypatch.setattr(tempfile, "mkdtemp", no_temp)
    assert configure() is None
    assert "NUMBA_CACHE_DIR" not in os.environ
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cache is off" in err


def test_with_caching_off_gboosts_functions_are_not_cached():
    """No private folder (choose() gave None): cached_njit compiles the function and opens no cache."""
    import numba

    def f(x):
        return x + 1

    g = numba.njit(f)
    numba_cache._cache_in(g, None)
    assert type(g._cache).__name__ == "NullCache" and g(1) == 2  # numba's null cache: none opened
    numba_cache._cache_in(g, numba_cache.choose())  # the same call with a folder does open one
    assert type(g._cache).__name__ == "FunctionCache"
