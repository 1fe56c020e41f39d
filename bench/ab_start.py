"""The command's start, two trees side by side (issue 24): ``gboost scan`` of each fileset through
bench/probe_cli_timeline.py, trees alternating, RUNS times each; per run the outside wall, when the
GPU's thread started, CuPy's import ended, the counting pass ended and the first tile was submitted
(seconds from the process's start); then each tree's medians.

    python bench/ab_start.py --trees . ab_old_X --bfile PREFIX [--bfile PREFIX2] --runs 8
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKS = {"gpu thread": "GPU: driver and first context (ctypes) #1 start", "cupy done": "import cupy done",
         "counted": "load_study (counting pass) #1 end", "first tile": "tile submitted #1 start",
         "screen done": "stage lap: screen", "exit": "os._exit(0)"}


def one(tree: Path, bfile: str, out: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (str(tree), os.environ.get("PYTHONPATH")) if x)}
    t = time.perf_counter()
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "probe_cli_timeline.py"), "--bfile", bfile, "--out",
                        str(out), "--device", "gpu"], env=env, capture_output=True, text=True, cwd=tree)
    got = {"wall": time.perf_counter() - t}
    for line in r.stderr.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3:
            for k, what in MARKS.items():
                if parts[2].strip() == what and k not in got:
                    got[k] = float(parts[0])
    return got


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", nargs=2, required=True)
    ap.add_argument("--bfile", action="append", required=True)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--out", default="/tmp/ab_start_out")
    a = ap.parse_args()
    keys = ["wall", *MARKS]
    for bfile in a.bfile:
        rows: dict = {t: [] for t in a.trees}
        for r in range(a.runs):
            for t in (a.trees if r % 2 == 0 else a.trees[::-1]):
                rows[t].append(one(Path(t).resolve(), bfile, Path(a.out)))
        print(f"\n{os.path.basename(bfile)}: medians of {a.runs} runs a tree (s from the process's start; wall from outside)")
        print(f"{'tree':14}" + "".join(f"{k:>12}" for k in keys))
        for t in a.trees:
            med = {k: statistics.median([x[k] for x in rows[t] if k in x]) for k in keys if any(k in x for x in rows[t])}
            print(f"{t:14}" + "".join(f"{med.get(k, float('nan')):12.3f}" for k in keys))
        for t in a.trees:
            print(f"{t:14} walls: " + " ".join(f"{x['wall']:.2f}" for x in rows[t]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
