"""numba's cache folder follows the source: an edit of any module gives a fresh folder, so a
caller never runs machine code inlined from an older callee (gboost/runtime/numba_cache.py says why)."""
from __future__ import annotations

import shutil

import pytest

from gboost.runtime import numba_cache
def test_the_cache_folder_is_named_by_the_source_hash():
    assert numba_cache.choose().name.endswith(numba_cache.source_hash())
    from gboost.stats.hwe import _hwe_many  # gboost's functions find it without numba's configuration

    assert _hwe_many._cache.cache_path.startswith(str(numba_cache.choose()))


def test_an_edit_of_any_module_changes_the_folder(tmp_path, monkeypatch):
    copy = tmp_path / "gboost"
    shutil.copytree(numba_cache._PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(numba_cache, "_PACKAGE", copy)
    before = numba_cache.source_hash()
    assert before == numba_cache.source_hash()  # stable
    callee = copy / "stats" / "boost.py"
    callee.write_text(callee.read_text() + "\n# an edit\n")
    assert numba_cache.source_hash() != before


def test_a_user_cache_dir_is_respected(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert numba_cache.cache_dir().parent == tmp_path


_FIRST_CALL = """
import sys, numpy as np
from gboost.runtime.process import adjust_numba
adjust_numba()  # the command's start-up (gboost/runtime/process.py)
from gboost.data.encode import sample_order
import numba
numba.njit(lambda x: x + 1)(np.int64(1))  # numba's target loads its registries (numba.np.arraymath)
assert "numba.np.arraymath" in sys.modules
print("scipy.linalg" in sys.modules)
dot = numba.njit(lambda a, b: np.dot(a, b))  # BLAS still there for code that calls it
a = np.arange(6.0).reshape(2, 3)
assert (dot(a, np.arange(3.0)) == a @ np.arange(3.0)).all()
import numba.np.arraymath, numba.np.linalg
print(numba.np.arraymath._HAVE_BLAS, numba.np.linalg.ensure_blas.__name__, "scipy.linalg" in sys.modules)
"""


@pytest.mark.slow
def test_numbas_first_call_imports_no_scipy_linalg():
    """numba's probe for BLAS imports all of scipy.linalg at the first compiled call (0.2-0.4 s of
    every command on the VM); the command's import hook (gboost.runtime.process.adjust_numba) leaves it out, and np.dot in compiled
    code still gets BLAS (the real check runs when such a function compiles)."""
    import importlib.util
    import os
    import subprocess
    import sys

    import pytest

    if importlib.util.find_spec("scipy") is None:
        pytest.skip("SciPy is not installed: numba's probe finds no BLAS either way")
    env = dict(os.environ, PYTHONPATH=str(numba_cache._PACKAGE.parent))
    out = subprocess.run([sys.executable, "-c", _FIRST_CALL], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "True", "ensure_blas", "True"], out.stdout + out.stderr
