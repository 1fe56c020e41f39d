"""A second `gboost` process compiles nothing: every numba function on the command's paths loads
from the cache the first process left (gboost/runtime/numba_cache.py). A function numba cannot cache (a
closure, a dynamic global, an njit made on the fly) would compile in every process: ~20 s of a
first run, seconds of every run."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gboost.data.simulate import PlantedPair, simulate_study

from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # subprocess scans or PLINK runs throughout

# Runs gboost's CLI in-process, then reports every numba dispatcher of gboost's modules that
# compiled (cache miss) or loaded (cache hit) in this process.
PROBE = r"""
import json, sys
from gboost.cli import main
from numba.core.registry import CPUDispatcher
rc = main(sys.argv[1:])
seen = {}
for name, mod in list(sys.modules.items()):
    if name.startswith("gboost"):
        for attr, f in list(vars(mod).items()):
            if isinstance(f, CPUDispatcher):
                st = f.stats
                seen[f"{f.py_func.__module__}.{f.py_func.__qualname__}"] = (sum(st.cache_hits.values()),
                                                                            sum(st.cache_misses.values()))
print(json.dumps({"rc": rc, "seen": seen}))
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("nr") / "s")
    simulate_study(400, 150, 150, seed=8, chromosomes=2, missing_rate=0.02,
                   planted=[PlantedPair(1, 300, "threshold", 8.0)]).write(prefix)
    return prefix


def probe(*args, env: dict | None = None) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["rc"] == 0
    return out["seen"]


@pytest.mark.parametrize("flags", [[], ["--allelic", "--calibration-pairs", "0"], ["--part", "1/2"]],
                         ids=["scan", "allelic", "part"])
def test_a_second_process_loads_every_function_from_the_cache(study, tmp_path, flags):
    args = ["scan", "--bfile", study, "--device", "cpu", "--quiet", "--epi1", "1e-2", "--tile", "64", *flags]
    probe(*args, "--out", str(tmp_path / "first"))
    seen = probe(*args, "--out", str(tmp_path / "second"))
    compiled = {k: v for k, v in seen.items() if v[1]}
    assert not compiled, f"compiled again in a second process: {sorted(compiled)}"
    assert sum(h for h, _ in seen.values()) >= 5  # the scan's kernels did load from the cache


def test_a_resumed_scan_loads_every_function_from_the_cache(study, tmp_path):
    """Resume recounts the replayed survivors' tables (gboost/pipeline/checkpoint.py)."""
    from gboost.pipeline.checkpoint import Ledger
    from gboost.errors import ScanCancelled
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study
    from gboost.pipeline.scan import ScanParams, screen

    st = load_study(open_bfile(study))
    params = ScanParams(epi1=1e-2, device="cpu", tile=64)
    runs = []
    for k in range(2):
        out = tmp_path / f"r{k}"
        led = Ledger(out, st, params, resume=False)
        seen_tiles = []
        with pytest.raises(ScanCancelled):
            screen(st, params, progress=seen_tiles.append, cancel=lambda: len(seen_tiles) >= 4, checkpoint=led)
        led.close()
        runs.append(probe("scan", "--bfile", study, "--device", "cpu", "--quiet", "--epi1", "1e-2", "--out", str(out),
                          "--resume"))
    compiled = {k: v for k, v in runs[1].items() if v[1]}
    assert not compiled, f"compiled again in a second process: {sorted(compiled)}"


def test_a_scan_that_leaves_snps_out_loads_the_encoder_a_whole_scan_compiled(study, tmp_path):
    """A .bed block read whole reaches the encoder as the file's read-only map, one with SNPs left
    out (--chr, --extract, a QC filter) as a writable copy; numba would compile the two apart, so
    a cache filled by one kind of scan (gboost warm's) left the other to compile (gboost/data/encode.py)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))  # empty: nothing warmed it before
    base = ["scan", "--bfile", study, "--device", "cpu", "--quiet", "--epi1", "1e-2", "--tile", "64"]
    probe(*base, "--out", str(tmp_path / "whole"), env=env)
    seen = probe(*base, "--chr", "2", "--out", str(tmp_path / "part"), env=env)
    compiled = {k: v for k, v in seen.items() if v[1]}
    assert not compiled, f"compiled again for a scan that leaves SNPs out: {sorted(compiled)}"


def test_a_second_qt_scan_loads_every_function_from_the_cache(tmp_path):
    """The quantitative-trait scan: engine, writers, F-test and covariate paths."""
    from gboost.data.simulate import simulate_qt_study

    prefix = str(tmp_path / "q")
    simulate_qt_study(60, 200, seed=3, missing_rate=0.02, effects=[(1, 2, 0.6)]).write(prefix)
    args = ["scan", "--bfile", prefix, "--quiet", "--epi1", "0.05", "--genotypic"]
    probe(*args, "--out", str(tmp_path / "first"))
    seen = probe(*args, "--out", str(tmp_path / "second"))
    assert any(k.startswith("gboost.engines.qt_cpu") for k in seen), "the QT engine's functions were seen"
    compiled = {k: v for k, v in seen.items() if v[1]}
    assert not compiled, f"compiled again in a second process: {sorted(compiled)}"
