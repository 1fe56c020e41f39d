"""``import gboost`` changes nothing in the process; the commands' start-up (gboost/runtime/process.py) does
each of its steps, and each step alone. Subprocesses: every check needs a process whose signals,
streams, environment and numba nobody has touched yet."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from gboost.runtime import numba_cache
from tests.helpers import ROOT


def _python(code: str, env_extra: dict | None = None, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env_extra or {}))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300, cwd=str(ROOT), **kw)


_UNTOUCHED = """
import json, os, signal, sys
sys.argv[0] = os.path.join(os.path.dirname(sys.executable), "gboost")  # as the command's script would be
import numba, numba.core.caching as caching
before = {"meta_path": list(sys.meta_path), "load": caching.Cache.load_overload, "sigint": signal.getsignal(signal.SIGINT),
          "env": dict(os.environ), "streams": (sys.stdin, sys.stdout, sys.stderr), "cache_dir": numba.config.CACHE_DIR}
import gboost, gboost.pipeline.scan, gboost.data.load, gboost.data.inputs, gboost.engines
gboost.open_input, gboost.load_study, gboost.run_pipeline, gboost.make_engine  # the lazy names too
after = {"meta_path": list(sys.meta_path), "load": caching.Cache.load_overload, "sigint": signal.getsignal(signal.SIGINT),
         "env": dict(os.environ), "streams": (sys.stdin, sys.stdout, sys.stderr), "cache_dir": numba.config.CACHE_DIR}
print(json.dumps({k: before[k] == after[k] if k != "streams" else all(a is b for a, b in zip(before[k], after[k]))
                  for k in before}))
"""


def test_importing_the_library_changes_nothing_in_the_process():
    r = _python(_UNTOUCHED)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {k: True for k in ("meta_path", "load", "sigint", "env", "streams", "cache_dir")}


def test_importing_the_library_leaves_a_closed_stream_closed():
    r = _python("""
        import os, sys
        sys.argv[0] = os.path.join(os.path.dirname(sys.executable), "gboost")  # as the command's script would be
        import gboost, gboost.pipeline.scan, gboost.data.load
        try:
            os.fstat(2)
            print("fd 2 open", sys.stderr is None)
        except OSError:
            print("fd 2 closed", sys.stderr is None)
        """, preexec_fn=lambda: os.close(2))
    assert r.stdout.split() == ["fd", "2", "closed", "True"], r.stdout


def test_gboosts_compiled_functions_use_gboosts_folder_and_a_users_keep_numbas(tmp_path):
    """No prepare_process: gboost's functions are cached in gboost's private folder (numba's default,
    beside the source, would load a caller's stale inlined callee), while numba's configuration
    stays as it was for the user's own cache=True functions."""
    user = tmp_path / "user_mod.py"
    user.write_text("import numba\n@numba.njit(cache=True)\ndef f(x):\n    return x + 1\n")
    r = _python(f"""
        import json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        import numba, numpy as np
        from gboost.runtime import numba_cache
        from gboost.stats.marginal import _sf_many as g  # any of gboost's cached functions
        import user_mod
        print(json.dumps({{"gboost": g._cache.cache_path, "user": user_mod.f._cache.cache_path,
                          "folder": str(numba_cache.choose()), "config": numba.config.CACHE_DIR}}))
        """, {"XDG_CACHE_HOME": str(tmp_path / "home"), "NUMBA_CACHE_DIR": ""})
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["folder"] == str(tmp_path / "home" / "gboost" / "numba" / numba_cache.source_hash())
    assert got["gboost"].startswith(got["folder"] + os.sep)
    assert not got["user"].startswith(got["folder"]) and got["config"] == ""
    assert numba_cache.untrusted(tmp_path / "home" / "gboost" / "numba") is None  # the checks still made it private


def test_quiet_interrupts_end_the_start_with_one_line_and_130():
    r = _python("""
        import os, signal, time
        from gboost.runtime.process import quiet_interrupts
        assert quiet_interrupts()
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        print("still running")
        """)
    assert r.returncode == 130 and r.stdout == ""
    assert r.stderr.strip() == "gboost: interrupted while starting; nothing was written"


def test_quiet_interrupts_off_the_main_thread_change_nothing():
    import threading

    from gboost.runtime.process import quiet_interrupts

    before = signal.getsignal(signal.SIGINT)
    got = []
    t = threading.Thread(target=lambda: got.append(quiet_interrupts()))
    t.start()
    t.join()
    assert got == [False] and signal.getsignal(signal.SIGINT) is before


def test_repair_streams_gives_a_closed_descriptor_dev_null():
    r = _python("""
        import os, sys
        from gboost.runtime.process import repair_streams
        fixed = repair_streams()
        fd = os.open(os.devnull, os.O_RDONLY)  # a file opened now does not take the stream's descriptor
        sys.stderr.write("to /dev/null\\n"); sys.stderr.flush()
        print(fixed, fd > 2, os.path.samefile("/proc/self/fd/2", os.devnull), repair_streams())
        """, preexec_fn=lambda: os.close(2))
    assert r.returncode == 0
    assert r.stdout.split() == ["[2]", "True", "True", "[]"], r.stdout


def test_configure_numba_cache_hands_the_private_folder_to_child_processes(tmp_path):
    r = _python("""
        import os, json, numba
        from gboost.runtime.process import configure_numba_cache
        path = configure_numba_cache()
        print(json.dumps([str(path), os.environ["NUMBA_CACHE_DIR"], numba.config.CACHE_DIR]))
        """, {"XDG_CACHE_HOME": str(tmp_path), "NUMBA_CACHE_DIR": ""})
    assert r.returncode == 0, r.stderr
    path, env, config = json.loads(r.stdout)
    assert path == env == str(tmp_path / "gboost" / "numba" / numba_cache.source_hash())
    assert config == ""  # numba imported first: its configuration is not touched
    assert numba_cache.untrusted(tmp_path / "gboost" / "numba" / numba_cache.source_hash()) is None


_ADJUSTED = """
import json, sys
from gboost.runtime import numba_cache
if sys.argv[1] == "unverified":
    numba_cache.VERIFIED_NUMBA = ()
from gboost.runtime.process import adjust_numba
adjust_numba()
import numba, numpy as np
import numba.core.caching as caching
numba.njit(lambda x: x + 1)(np.int64(1))  # numba's target loads numba.np.arraymath
print(json.dumps({"light": getattr(caching.Cache.load_overload, "_gboost", False),
                  "scipy.linalg": "scipy.linalg" in sys.modules}))
"""


@pytest.mark.parametrize("numba_is", ["verified", "unverified"])
def test_adjust_numba_only_on_the_numba_it_was_verified_on(numba_is):
    import importlib.util

    r = subprocess.run([sys.executable, "-c", _ADJUSTED, numba_is], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    adjusted = numba_is == "verified" and numba_cache.numba_verified()
    assert got["light"] is adjusted
    if importlib.util.find_spec("scipy") is not None:  # without SciPy numba's probe imports nothing either way
        assert got["scipy.linalg"] is not adjusted


def test_numba_verified_reads_major_and_minor():
    assert numba_cache.numba_verified("0.68.1") and numba_cache.numba_verified("0.68.0rc1")
    assert not numba_cache.numba_verified("0.69.0") and not numba_cache.numba_verified("1.0")
    assert not numba_cache.numba_verified("dev")


def test_a_missing_attribute_leaves_numbas_cache_class_untouched():
    class Cache:  # numba's Cache as it might be in another version: no _guard_against_spurious_io_errors
        def load_overload(self, sig, target_context):
            return "numba's own"

        def _load_overload(self, sig, target_context):
            return "light"

    original = Cache.load_overload

    class Caching:
        pass

    Caching.Cache = Cache
    numba_cache._patch_loads(Caching)
    assert Cache.load_overload is original and Cache().load_overload(None, None) == "numba's own"
    numba_cache._patch_loads(object())  # no Cache at all: nothing to do, no error


def test_a_numba_without_ensure_blas_runs_arraymath_as_it_is(monkeypatch):
    import types

    linalg = types.ModuleType("numba.np.linalg")  # a layout without ensure_blas
    monkeypatch.setitem(sys.modules, "numba.np.linalg", linalg)
    ran = []
    numba_cache._run_with_cheap_probe(lambda module: ran.append(module), "arraymath")
    assert ran == ["arraymath"] and not hasattr(linalg, "ensure_blas")


def test_the_commands_start_by_preparing_the_process(tmp_path):
    """``python -m gboost`` and ``gboost.cli.main()`` with no arguments of its own prepare the process
    (NUMBA_CACHE_DIR handed on, numba's adjustments installed); main(argv) from a caller does not."""
    r = _python("""
        import json, os, sys
        from gboost import cli
        try:
            cli.main(["--version"])
        except SystemExit:
            pass
        called = bool(os.environ.get("NUMBA_CACHE_DIR"))
        sys.argv = ["gboost", "--version"]
        try:
            cli.main()
        except SystemExit:
            pass
        print(json.dumps([called, bool(os.environ.get("NUMBA_CACHE_DIR")),
                          any(type(f).__name__ == "_ModuleHook" for f in sys.meta_path)]))
        """, {"XDG_CACHE_HOME": str(tmp_path), "NUMBA_CACHE_DIR": ""})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1]) == [False, True, True]
    r = subprocess.run([sys.executable, "-m", "gboost", "--version"], capture_output=True, text=True, cwd=str(ROOT),
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("gboost "), r.stderr


_FAKE_CUPY = {
    "cupy/__init__.py": "from cupy import _environment\n"
                        "PRELOADED = dict(_environment._preload_libs)\n",
    "cupy/_environment.py": "_preload_libs = {'cudnn': None, 'nccl': None, 'cutensor': None}\n",
}


@pytest.mark.parametrize("major", [13, 12])
def test_cupys_import_skips_the_cutensor_preload_and_leaves_no_finder(tmp_path, major):
    """A stand-in CuPy (its _environment's table as CuPy 13/14 keep it): import_cupy marks cuTENSOR's
    preload attempted before CuPy's __init__ asks for it, on a major version it knows; its finder is
    gone afterwards and the module's loader is the import system's own. Another major version is
    imported untouched."""
    for rel, text in _FAKE_CUPY.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    dist = tmp_path / f"cupy_cuda12x-{major}.0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: cupy-cuda12x\nVersion: {major}.0.0\n")
    r = _python(f"""
        import json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        before = list(sys.meta_path)
        from gboost.engines.cupy_import import import_cupy
        cupy = import_cupy()
        loader = sys.modules["cupy._environment"].__spec__.loader
        print(json.dumps({{"cutensor": cupy.PRELOADED["cutensor"], "finders": sys.meta_path == before,
                          "loader": "exec_module" in vars(loader)}}))
        """, {"CUPY_ACCELERATORS": ""})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"cutensor": {} if major == 13 else None, "finders": True, "loader": False}
