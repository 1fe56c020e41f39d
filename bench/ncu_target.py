"""A short GPU scan for Nsight Compute (scripts/device/ncu.sh): one simulated study, one engine.

    python bench/ncu_target.py --p 20000 --n 5000 --missing 0.01 [--f64]

The kernels of interest (gm_screen_22 without missing calls, gm_screen_33 with them) are picked by
ncu's -k filter; this script only runs the scan (compiling first, outside the profiled launch).
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from bench_gpu import simulate_study  # noqa: E402
from gpu_variants import BenchMmaConfig  # noqa: E402

from gboost.engines.gpu import GpuEngine  # noqa: E402
from gboost.scan import ScanParams, run_scan  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--p", type=int, default=20000)
ap.add_argument("--n", type=int, default=5000)
ap.add_argument("--missing", type=float, default=0.01)
ap.add_argument("--f64", action="store_true", help="the float64-epilogue build")
ap.add_argument("--count-only", action="store_true", help="the counting-only build (wrong results)")
ap.add_argument("--define", action="append", default=[], help="extra -D NAME=VALUE (bench-only switches)")
ap.add_argument("--lineinfo", action="store_true", help="compile with -lineinfo (ncu's SASS lines name source lines)")
a = ap.parse_args()
study = simulate_study(a.p, a.n, a.n // 2, (0.05, 0.5), a.missing, 1)
cfg = BenchMmaConfig(f32_screen=not a.f64, count_only=a.count_only, defines=tuple(a.define),
                     extra=("-lineinfo",) if a.lineinfo else ())
run_scan(study, ScanParams(calibration_pairs=0), engine=GpuEngine(counting="mma", mma_config=cfg))
