"""numba's cache folder follows the source: an edit of any module gives a fresh folder, so a
caller never runs machine code inlined from an older callee (gboost/numba_cache.py says why)."""
from __future__ import annotations

import shutil

import gboost
from gboost import numba_cache


def test_the_cache_folder_is_named_by_the_source_hash():
    assert gboost.NUMBA_CACHE.name.endswith(numba_cache.source_hash())
    import numba

    assert numba.config.CACHE_DIR == str(gboost.NUMBA_CACHE)


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
