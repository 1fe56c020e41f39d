"""``--overwrite``'s rename phase keeps the promise of its writing phase: OUT/ holds the previous
set exactly as it was, or the new set complete (gboost/outputs/outdir.py write_files). A rename that
fails (an immutable file, a folder at an output name) puts the old set back and leaves no
temporary folder; the command says so in one line, exit 2."""
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
    return small_study(tmp_path_factory, "hostile-overwrite", seed=49)


def scan(study, out, *extra):
    return cpu_scan(study, out, *extra)


def _previous(study, tmp_path):
    out = tmp_path / "res"
    assert scan(study, out, "--epi1", "0.05") == 0
    (out / "thesis.txt").write_text("mine\n")
    return out, tree_digest(out), neighbours_digest(out)


def _failing(monkeypatch, when, once=True):
    import gboost.outputs.outdir as outdir

    real = os.replace
    failed = []

    def replace(src, dst, *a, **k):
        if not (once and failed) and when(Path(src), Path(dst)):
            failed.append((src, dst))
            raise PermissionError(1, "Operation not permitted", str(src))
        return real(src, dst, *a, **k)

    monkeypatch.setattr(outdir.os, "replace", replace)
    return failed


def _check(out, before, beside, capsys, failed=None):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gboost: error:"), err
    if failed is not None:
        assert failed, "the rename meant to fail was never made"
    after = tree_digest(out)
    # The previous set, every byte; beside it only the finished screen's checkpoint, from which
    # --resume writes the outputs once the cause is removed.
    assert {k: v for k, v in after.items() if not Path(k).name.startswith("checkpoint.")} == before
    assert not [n for n in os.listdir(out) if n.startswith(".gboost")]
    assert neighbours_digest(out) == beside
    return err[0]


@pytest.mark.parametrize("name", ["pairs.tsv", "marginal.tsv", "run.json"])
def test_an_old_file_that_cannot_be_moved_leaves_the_previous_set(study, tmp_path, monkeypatch, capsys, name):
    """An immutable old file (chattr +i): every rename of it or over it fails, after others may
    have moved."""
    out, before, beside = _previous(study, tmp_path)
    failed = _failing(monkeypatch, lambda src, dst: src == out / name or (dst == out / name and dst.exists()),
                      once=False)
    assert scan(study, out, "--epi1", "0.01", "--overwrite") == 2
    line = _check(out, before, beside, capsys, failed)
    assert name in line


@pytest.mark.parametrize("name", ["pairs.epi.cc", "run.json"])
def test_a_new_file_that_cannot_be_moved_in_leaves_the_previous_set(study, tmp_path, monkeypatch, capsys, name):
    out, before, beside = _previous(study, tmp_path)
    failed = _failing(monkeypatch, lambda src, dst: dst == out / name)
    assert scan(study, out, "--epi1", "0.01", "--overwrite") == 2
    _check(out, before, beside, capsys, failed)


def test_a_folder_at_an_output_name_is_refused_and_nothing_replaced(study, tmp_path, capsys):
    out, _, _ = _previous(study, tmp_path)
    (out / "marginal.tsv").unlink()
    (out / "marginal.tsv").mkdir()
    (out / "marginal.tsv" / "mine.txt").write_text("a folder of the user's\n")
    before, beside = tree_digest(out), neighbours_digest(out)
    assert scan(study, out, "--epi1", "0.01", "--overwrite") == 2
    line = _check(out, before, beside, capsys)
    assert "marginal.tsv" in line


_KILLED = """
import os, sys
from pathlib import Path
import gboost.outputs.outdir as outdir
out, name = Path(sys.argv[1]), sys.argv[2]
real = os.replace
def replace(src, dst):
    if Path(dst) == out / name:
        os._exit(9)  # killed with the old set half moved aside and the new one half in
    real(src, dst)
outdir.os.replace = replace
outdir.write_files(out, {n: f"new {n}\\n" for n in ("pairs.tsv", "pairs.epi.cc", "marginal.tsv", "run.json")},
                   overwrite=True)
"""


@pytest.mark.parametrize("name", ["marginal.tsv", "run.json"])
def test_a_run_killed_mid_rename_is_rolled_back_by_the_next(study, tmp_path, name):
    out, before, beside = _previous(study, tmp_path)
    p = subprocess.run([sys.executable, "-c", _KILLED, str(out), name], env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 9
    assert tree_digest(out) != before  # a mixed folder for now
    from gboost.outputs.outdir import clear_leftovers

    assert len(clear_leftovers(out)) == 1
    assert tree_digest(out) == before and neighbours_digest(out) == beside


def test_a_complete_overwrite_leaves_no_old_file_and_no_temporary(study, tmp_path):
    out, before, beside = _previous(study, tmp_path)
    assert scan(study, out, "--epi1", "0.01", "--overwrite") == 0
    after = tree_digest(out)
    assert after != before and after[str(out / "thesis.txt")] == before[str(out / "thesis.txt")]
    assert not [n for n in os.listdir(out) if n.startswith(".gboost")]
    assert neighbours_digest(out) == beside
