"""The library's public surface (gboost/__init__.py): the README's example runs as written and
gives the CLI's outputs, and ``import gboost`` imports nothing heavy."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import gboost
from tests.helpers import ROOT


def readme_example() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("## From Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
def test_the_readme_example_runs_and_writes_what_the_cli_writes(tmp_path, capsys, monkeypatch):
    code = readme_example()
    assert "results/sample" in code
    out = tmp_path / "lib"
    monkeypatch.chdir(ROOT)  # the example names sample_data/ relative to the repository
    exec(compile(code.replace("results/sample", str(out)), "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert re.fullmatch(r"\d+ pairs with P <= 1e-4\n", printed) and int(printed.split()[0]) > 0

    from gboost.cli import main

    cli = tmp_path / "cli"
    assert main(["scan", "--bfile", "sample_data/sample", "--maf", "0.01", "--epi1", "1e-4", "--device", "cpu",
                 "--quiet", "--out", str(cli)]) == 0
    for name in ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv"):
        assert (out / name).read_bytes() == (cli / name).read_bytes(), name


def test_the_package_docstring_shows_the_same_example():
    doc = " ".join(gboost.__doc__.split())
    for line in readme_example().splitlines():
        assert " ".join(line.split()) in doc, line


def test_every_public_name_resolves_and_import_gboost_stays_light():
    for name in gboost.__all__:
        assert getattr(gboost, name) is not None, name
    probe = "import sys, gboost; print(sorted(m for m in ('numba', 'gboost.pipeline.scan', 'cupy', 'dask', 'PySide6') if m in sys.modules))"
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"
