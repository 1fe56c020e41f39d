"""Where CuPy's import goes (issue 24: the GPU's own start before the first tile): in fresh
processes, ``python -X importtime -c "import cupy"`` (each module's own and cumulative
microseconds), and a cProfile of the import (what runs at import that is not an import: CUDA path
searches, library preloads). Run it after ``gboost warm`` (which compiles CuPy's bytecode where it
may write), several times: the last run is shown.

    python bench/probe_cupy_import.py [--runs 3]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time


def importtime(runs: int) -> list[tuple[int, int, str]]:
    rows = []
    for _ in range(runs):
        t = time.perf_counter()
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import cupy"], check=True,
                             capture_output=True, text=True).stderr
        print(f"process wall {time.perf_counter() - t:.3f} s")
        rows = []
        for line in err.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            self_us, cum_us, name = (x.strip() for x in line[len("import time:"):].split("|"))
            rows.append((int(self_us), int(cum_us), name))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    rows = importtime(a.runs)
    top = {name.strip(): (s, c) for s, c, name in rows}
    print(f"import cupy, cumulative: {top.get('cupy', (0, 0))[1] / 1e6:.3f} s; numpy {top.get('numpy', (0, 0))[1] / 1e6:.3f} s")
    print("children of cupy and other top-level imports by cumulative ms (depth <= 2):")
    for s, c, name in sorted(rows, key=lambda r: -r[1]):
        depth = (len(name) - len(name.lstrip())) // 2
        if depth <= 2 and c >= 5000:
            print(f"  {c / 1e3:8.1f} ms cumulative {s / 1e3:7.1f} ms own  {name}")
    print("largest own times:")
    for s, c, name in sorted(rows, key=lambda r: -r[0])[:20]:
        print(f"  {s / 1e3:8.1f} ms own  {name.strip()}")
    prof = ("import cProfile, pstats, io; pr = cProfile.Profile(); pr.enable(); import cupy; pr.disable(); "
            "s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats('tottime').print_stats(25); print(s.getvalue())")
    print(subprocess.run([sys.executable, "-c", prof], check=True, capture_output=True, text=True).stdout)
    print(subprocess.run([sys.executable, "-c", LIBS], check=True, capture_output=True, text=True).stdout)
    return 0


# Each shared library CuPy's import opens (ctypes.CDLL: its name, seconds, and the innermost caller
# outside ctypes), each importlib.metadata scan, and the cumulative profile of the calls that do them.
LIBS = r"""
import ctypes, importlib.metadata as md, time, traceback, cProfile, pstats, io
rows = []
init = ctypes.CDLL.__init__
def cdll(self, name, *a, **k):
    t = time.perf_counter()
    try:
        return init(self, name, *a, **k)
    finally:
        caller = [f for f in traceback.extract_stack()[:-1] if "ctypes" not in f.filename][-1]
        rows.append((time.perf_counter() - t, "dlopen " + str(name), f"{caller.filename.split('site-packages/')[-1]}:{caller.lineno}"))
ctypes.CDLL.__init__ = cdll
dists = md.distributions
def distributions(*a, **k):
    t = time.perf_counter()
    out = list(dists(*a, **k))
    caller = traceback.extract_stack()[-2]
    rows.append((time.perf_counter() - t, f"metadata.distributions{k or ''} -> {len(out)}", f"{caller.filename.split('site-packages/')[-1]}:{caller.lineno}"))
    return iter(out)
md.distributions = distributions
t = time.perf_counter()
pr = cProfile.Profile(); pr.enable()
import cupy
pr.disable()
print(f"import cupy {time.perf_counter() - t:.3f} s (profiled)")
for s, what, where in rows:
    print(f"  {s * 1e3:7.1f} ms  {what}  ({where})")
out = io.StringIO()
st = pstats.Stats(pr, stream=out).sort_stats("cumulative")
st.print_stats(r"(_environment|pathfinder|metadata|cupy/__init__|_core/__init__|cuda/__init__)", 40)
print(out.getvalue())
"""


if __name__ == "__main__":
    sys.exit(main())
