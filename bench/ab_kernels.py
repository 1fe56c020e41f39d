"""Kernel seconds of several source trees side by side (an A/B of a GPU kernel change): each tree's
scan kernels timed in a process of its own (its own gboost on the path, its own NVRTC build), the
trees alternating, best of ``--reps`` launches per process, rows of simulated studies.

    python3 bench/ab_kernels.py --trees . ab_old_435587b --rows 200000:5000:0.01 500000:5000:0.01
    python3 bench/ab_kernels.py --trees . ab_old_X --rows 60000:50000:0 --count-only --rounds 2

Prints one line per tree and round: the tree, then the kernel seconds (CUDA events) of each row. A
row is P:N:MISSING (SNPs, samples with half of them cases, rate of missing calls). The device scripts
of the ninth session (scripts/device/s10d, s10f, s10i, s10j) ran this loop inline.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def one_tree(rows: list[tuple[int, int, float]], count_only: bool, reps: int) -> list[float]:
    """In the tree's own process: the kernel seconds of each row (the first, small study warms the builds)."""
    from bench_gpu import screen_kernel_seconds, simulate_study
    from gpu_variants import BenchMmaConfig

    from gboost.engines.gpu import GpuEngine
    from gboost.scan import ScanParams

    params = ScanParams(epi1=5e-6, epi2=0.01, calibration_pairs=0)
    cfg = BenchMmaConfig(count_only=count_only)
    out = []
    for p, n, m in rows:
        screen_kernel_seconds(simulate_study(300, n, n // 2, (0.05, 0.5), m, 2), params,
                              GpuEngine(counting="mma", mma_config=cfg))
        study = simulate_study(p, n, n // 2, (0.05, 0.5), m, 1)
        out.append(min(screen_kernel_seconds(study, params, GpuEngine(counting="mma", mma_config=cfg))
                       for _ in range(reps)))
        del study
    return out


def parse_row(text: str) -> tuple[int, int, float]:
    p, n, m = text.split(":")
    return int(p), int(n), float(m)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", nargs="+", default=["."], help="source trees (each with gboost/ and bench/)")
    ap.add_argument("--rows", nargs="+", type=parse_row, required=True, metavar="P:N:MISSING")
    ap.add_argument("--count-only", action="store_true", help="the counting-only build (wrong results, timing only)")
    ap.add_argument("--reps", type=int, default=2, help="launches per row and process (the best is kept)")
    ap.add_argument("--rounds", type=int, default=2, help="times each tree runs, alternating")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a tree's process may take")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)  # (the per-tree process)
    a = ap.parse_args()
    if a.inner:  # (run in the tree: its bench helpers before this script's own folder)
        sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "bench")]
        print(" ".join(f"{x:.4f}" for x in one_tree(a.rows, a.count_only, a.reps)), flush=True)
        return 0
    print("tree: " + " ".join(f"{p}x{n}/{m:g}" for p, n, m in a.rows) + (" (counting only)" if a.count_only else "")
          + " kernel s", flush=True)
    rc = 0
    for _ in range(a.rounds):
        for tree in a.trees:
            root = os.path.abspath(tree)
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                x for x in (root, os.path.join(root, "bench"), os.environ.get("PYTHONPATH")) if x)}
            cmd = [sys.executable, os.path.join(HERE, "ab_kernels.py"), "--inner", "--reps", str(a.reps), "--rows",
                   *(f"{p}:{n}:{m}" for p, n, m in a.rows), *(["--count-only"] if a.count_only else [])]
            try:
                r = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=a.timeout)
                line = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else \
                    f"failed ({r.returncode}): {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}"
                rc |= r.returncode != 0
            except subprocess.TimeoutExpired:
                line, rc = f"timed out after {a.timeout:.0f} s", 1
            print(f"{tree} {line}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
