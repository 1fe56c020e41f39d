"""numba compiles on the GUI's main thread only (gboost/runtime/compile_guard.py, docs/DESIGN.md).

Two CI runs crashed while the GUI's loading thread compiled a numba function and the main thread
collected garbage; ``gboost warm`` hid it on a warm install. Here the window runs with an empty
numba cache folder (a fresh subprocess), so every function it needs is compiled on the spot:
opening each input format and scanning a case-control and a QT study must compile many
functions, and every one of them on the main thread."""
import json
import os
import subprocess
import sys

import pytest

from tests.helpers import PLINK2, ROOT, make_formats_study

pytestmark = pytest.mark.slow  # a cold numba cache compiled in a subprocess

DRIVER = os.path.join(os.path.dirname(__file__), "compile_threads.py")


def _run(tmp_path, mode: str) -> dict:
    formats = ""
    if PLINK2 is not None and all(__import__("importlib").util.find_spec(m) for m in ("pgenlib", "cyvcf2", "cbgen")):
        formats = make_formats_study(str(tmp_path))
    cache = tmp_path / f"numba-{mode}"
    cache.mkdir()
    out = tmp_path / f"out-{mode}"
    out.mkdir()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "QT_QPA_PLATFORM": "offscreen",
           "PYTHONPATH": os.pathsep.join([ROOT, os.path.join(ROOT, "tests", "gui"), os.path.join(ROOT, "tests")]),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}
    proc = subprocess.run([sys.executable, DRIVER, formats, mode, str(out)], env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_cold_cache_compiles_everything_on_the_main_thread(tmp_path):
    got = _run(tmp_path, "guard")
    assert got["guard"]
    assert len(got["opened"]) in (3, 6)  # the .bed, (.pgen, VCF, BGEN,) two scans
    names = {name for name, _ in got["compiled"]}
    # the cache was cold: the readers, the encoder, both engines and the writers compiled here
    assert len(names) >= 10, names
    off_main = sorted({name for name, main in got["compiled"] if not main})
    assert off_main == [], f"compiled on a worker thread: {off_main}"
    assert got["logged"] >= 10  # the window's log names what it compiled
