"""CuPy imported without its cuTENSOR preload (gboost/engines/cupy_import.py).

Without a GPU: a stand-in CuPy whose package ``__init__`` asks its ``_environment`` for the preload as
CuPy's does, each case in a fresh interpreter (the first import of "cupy" is the one that counts). On
the device: the real CuPy, in a fresh process, keeps working and never maps libcutensor.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# CuPy's own shape (cupy/__init__.py, cupy/_environment.py): the table of preloads, None until tried;
# the preload records {} first, then loads; the package asks for it before anything else.
ENVIRONMENT = '''
import os
_preload_libs = {"cudnn": None, "nccl": None, "cutensor": None}
LOADED = []
def _can_attempt_preload(lib):
    return _preload_libs[lib] is None
def _preload_library(lib):
    if not _can_attempt_preload(lib):
        return
    _preload_libs[lib] = {}
    LOADED.append(lib)
'''
INIT = '''
from cupy import _environment
_environment._preload_library("cutensor")
import cupy._environment
SEEN_AT_IMPORT = cupy._environment is _environment
'''
PROBE = '''
import json, sys
from gboost.engines.cupy_import import import_cupy
cp = import_cupy()
again = import_cupy()
import cupy._environment as env
print(json.dumps({"loaded": env.LOADED, "table": env._preload_libs.get("cutensor"), "same": again is cp,
                  "attr": cp._environment is env, "seen": getattr(cp, "SEEN_AT_IMPORT", None),
                  "finders": [type(f).__name__ for f in sys.meta_path]}))
'''


def _fake(folder: Path, environment: str | None = ENVIRONMENT, version: str = "13.6.0") -> Path:
    pkg = folder / "cupy"
    pkg.mkdir(parents=True)
    # Its wheel's metadata, first on the path: the skip runs only on the major versions it was checked on.
    dist = folder / f"cupy_cuda12x-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: cupy-cuda12x\nVersion: {version}\n")
    (pkg / "__init__.py").write_text(INIT if environment is not None else "LOADED = []\n")
    if environment is not None:
        (pkg / "_environment.py").write_text(environment)
    return folder


def _run(folder: Path, **env) -> dict:
    e = {k: v for k, v in os.environ.items() if k != "CUPY_ACCELERATORS"}  # (only where a test sets it)
    e.update(PYTHONPATH=os.pathsep.join([str(folder), str(ROOT)]), **env)
    out = subprocess.run([sys.executable, "-c", PROBE], env=e, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_first_import_skips_the_cutensor_preload_and_leaves_cupy_as_it_imports(tmp_path):
    got = _run(_fake(tmp_path))
    assert got["loaded"] == []  # the preload returned at once
    assert got["table"] == {}  # marked as CuPy marks an attempted preload
    assert got["same"] and got["attr"] and got["seen"] is True  # the module is the package's attribute, as usual
    assert "_SkipCutensorPreload" not in got["finders"]  # the finder is gone once used


def test_a_cupy_major_version_not_checked_is_imported_untouched(tmp_path):
    got = _run(_fake(tmp_path, version="99.0.0"))
    assert got["loaded"] == ["cutensor"]  # CuPy's own preload ran
    assert "_SkipCutensorPreload" not in got["finders"]


@pytest.mark.slow
def test_cutensor_named_in_cupy_accelerators_keeps_the_preload(tmp_path):
    got = _run(_fake(tmp_path), CUPY_ACCELERATORS="cub,cutensor")
    assert got["loaded"] == ["cutensor"]
    assert "_SkipCutensorPreload" not in got["finders"]


@pytest.mark.slow
def test_a_cupy_with_another_environment_module_imports_unchanged(tmp_path):
    # no preload table at all: nothing to mark, the import goes on as CuPy's own
    other = ENVIRONMENT.replace('_preload_libs = {"cudnn": None, "nccl": None, "cutensor": None}',
                                '_preload_libs = {"cudnn": None, "nccl": None, "cutensor": None}\nTABLE = _preload_libs\n'
                                'del _preload_libs\n_preload_libs = {"cutensor": "loaded-by-other-means"}')
    got = _run(_fake(tmp_path, other))
    assert got["table"] == "loaded-by-other-means"  # left alone: not None, so not ours to mark
    assert "_SkipCutensorPreload" not in got["finders"]


@pytest.mark.slow
def test_a_cupy_without_the_environment_module_imports_and_the_finder_is_removed(tmp_path):
    folder = _fake(tmp_path, environment=None)
    probe = ("import json, sys; from gboost.engines.cupy_import import import_cupy; cp = import_cupy(); "
             "print(json.dumps([type(f).__name__ for f in sys.meta_path]))")
    e = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", probe], env=e, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "_SkipCutensorPreload" not in json.loads(out.stdout)


@pytest.mark.gpu
def test_the_real_cupy_imports_without_libcutensor_and_runs():
    probe = ("import json; from gboost.engines.cupy_import import import_cupy; cp = import_cupy(); "
             "import cupy._environment as env; x = cp.arange(10, dtype=cp.int32); s = int((x * x).sum()); "
             "maps = open('/proc/self/maps').read(); "
             "print(json.dumps({'sum': s, 'cutensor_mapped': 'libcutensor' in maps, "
             "'table': env._preload_libs.get('cutensor')}))")
    e = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    e.pop("CUPY_ACCELERATORS", None)
    out = subprocess.run([sys.executable, "-c", probe], env=e, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["sum"] == sum(i * i for i in range(10))
    assert got["table"] == {}
    assert got["cutensor_mapped"] is False


def test_only_cupy_import_imports_cupy():
    """Every gboost module gets CuPy through import_cupy, so that whichever path imports it first (a
    Dask worker, the QT engine, the doctor) skips the preload. A CuPy submodule may be imported in a
    function only after import_cupy was called there or after a check that CuPy is imported; a
    plain ``import cupy`` anywhere else fails here."""
    import ast

    def cupy_names(node):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        return [n for n in names if n == "cupy" or n.startswith("cupy.")]

    def guards(fn):  # lines where a function calls import_cupy or asks whether "cupy" is in sys.modules
        lines = []
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "import_cupy":
                lines.append(n.lineno)
            if isinstance(n, ast.Compare) and isinstance(n.left, ast.Constant) and n.left.value == "cupy":
                lines.append(n.lineno)
        return lines

    bad = []
    for path in sorted((ROOT / "gboost").rglob("*.py")):
        if path.name == "cupy_import.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in ast.walk(tree):
            names = cupy_names(node)
            if not names:
                continue
            inside = [f for f in functions if f.lineno <= node.lineno <= f.end_lineno]
            ok = bool(inside) and "cupy" not in names and any(g < node.lineno for g in guards(inside[-1]))
            if not ok:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert bad == []


@pytest.mark.slow
def test_a_dask_workers_first_import_skips_the_preload(tmp_path):
    """The worker's GPU choice is where a Dask worker process first imports CuPy."""
    folder = _fake(tmp_path, ENVIRONMENT)
    (folder / "cupy" / "cuda.py").write_text("class runtime:\n    getDeviceCount = staticmethod(lambda: 2)\n")
    (folder / "cupy" / "__init__.py").write_text(INIT + "from cupy import cuda\n")
    (folder / "distributed.py").write_text(
        "class _W:\n    name = '3'\ndef get_worker():\n    return _W()\n")  # the worker named 3
    probe = ("import json; from gboost.engines.distributed import _worker_gpu; g = _worker_gpu(); "
             "import cupy._environment as env; print(json.dumps([g, env.LOADED, env._preload_libs['cutensor']]))")
    e = {k: v for k, v in os.environ.items() if k not in ("CUPY_ACCELERATORS", "CUDA_VISIBLE_DEVICES")}
    e["PYTHONPATH"] = os.pathsep.join([str(folder), str(ROOT)])
    out = subprocess.run([sys.executable, "-c", probe], env=e, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [1, [], {}]  # 3 % 2 GPUs; preload skipped
