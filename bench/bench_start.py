"""What the command does before its first tile, and when: one fresh process per
variant, timestamps from the process's start (gboost.pipeline.stages.process_age) for each step of the
CLI's way to the screen — numba's import and what its first load needs (start_target), CuPy's import, the CUDA context
and the kernels' module on the thread the CLI starts them on, the .fam/.bim parse, the .bed's
counting pass — so the critical path can be read off rather than guessed (the start that
bench_cli.py's "cmd s" includes; no SPEC section 7 row of its own).

    python bench/bench_start.py PREFIX            # the fileset's .bed/.bim/.fam
    python bench/bench_start.py PREFIX --encode   # and the background encoder's watermark over time

Prints one table: a line per variant and step, the seconds from the process's start and the thread,
then each variant's process wall seen from outside (the second of two runs: caches warm).

The ``gpu-only`` variant's thread imports ``gboost.engines``, and with it NumPy and numba, before the
driver's start: its "kernels loaded" is not the GPU's start alone. ``cli`` approximates the command
(the command itself writes its stages into run.json's command_s).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CHILD = r"""
import json, sys, threading, time
from gboost.pipeline.stages import process_age
T0 = time.perf_counter() - process_age()
marks = []
def mark(what, t=None):
    marks.append((what, round((time.perf_counter() if t is None else t) - T0, 4), threading.current_thread().name))
mark("python up, probe running")
variant, prefix = sys.argv[1], sys.argv[2]
gpu = None
go = threading.Event()
def warm():  # as gboost/engines/early.py: the driver through ctypes, CuPy once numba's target is up
    from gboost.engines.early import _driver_contexts
    _driver_contexts(); mark("driver and contexts (ctypes)")
    if variant in ("cli", "cupy-late"):
        go.wait(2.0)
    import cupy  # noqa
    mark("cupy imported")
    from gboost.engines import gpu_available
    gpu_available(); mark("CUDA context")
    from gboost.engines.gpu.compile import kernels
    from gboost.engines.gpu.config import MmaConfig
    kernels(0, MmaConfig()); mark("kernels loaded")
if variant in ("cli", "cupy-late", "gpu-only"):
    gpu = threading.Thread(target=warm, name="gpu"); gpu.start()
if variant == "gpu-only":
    gpu.join(); print(json.dumps(marks)); sys.exit()
import numpy; mark("numpy imported")
import numba; mark("numba imported")
if variant == "numpy-bim":  # the .bim/.fam through the NumPy passes (the compiled parse's fallback)
    import gboost.readers.plink_bed as pb
    pb._read_columns_compiled = lambda *a: None
else:
    from gboost.runtime.numba_cache import start_target  # as the CLI: what numba's first load needs
    start_target(); mark("numba ready to load (start_target)")
if variant != "cupy-late":
    go.set()
from gboost.data.inputs import open_input
from gboost.data.load import load_with_encoder
from gboost.data.study import QCOptions
mark("gboost load modules imported")
src = open_input(bfile=prefix, ped=None, map_file=None, boost_matrix=None, pheno=None, allow_no_sex=False,
                 pfile=None, vcf=None, bgen=None, sample=None, hard_call_threshold=None,
                 bgen_ref="ref-unknown", ids=None)
mark(".fam/.bim parsed")
go.set()  # cupy-late: CuPy's import beside the counting pass only
tim = {}
st, planes = load_with_encoder(src, QCOptions(), log=lambda m: None, timings=tim)
mark("counting pass done (the screen may start)")
if variant == "encode":  # the watermark every 50 ms until every row is encoded
    total, last = planes.total, -1
    while True:
        rows = planes.rows
        if rows != last:
            mark(f"encoded {rows}/{total} SNPs ({rows * st.planes.shape[1] * st.planes.shape[2] * 8 / 1e9:.2f} GB)")
            last = rows
        if rows >= total:
            break
        time.sleep(0.05)
if gpu is not None:
    gpu.join(); mark("GPU thread joined")
print(json.dumps(marks))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefix", help="a PLINK fileset's prefix (.bed/.bim/.fam)")
    ap.add_argument("--encode", action="store_true", help="only the background encoder's watermark over time")
    a = ap.parse_args()
    prefix = a.prefix
    print(f"{'variant':9} {'step':45} {'s from process start':>20}  thread")
    variants = ("encode",) if a.encode else ("cli", "cupy-late", "cpu-only", "numpy-bim", "gpu-only")
    for variant in variants:
        for _ in range(2):  # the second run is the one shown: caches warm
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", CHILD, variant, prefix], check=True,
                                 capture_output=True, text=True).stdout
            wall = time.perf_counter() - t
        for what, s, thread in json.loads(out.strip().splitlines()[-1]):
            print(f"{variant:9} {what:45} {s:20.3f}  {thread}")
        print(f"{variant:9} {'(process wall, from outside)':45} {wall:20.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
