"""One launch of the tensor-core <2,2> screen kernel per configuration, for Nsight Compute.

    ncu -k gm_screen_22 -c 4 --section SpeedOfLight --section Occupancy --section WarpStateStats \
        python3 bench/profile_mma_kernel.py --snps 16000

Scans a simulated fully called study (bench_gpu.simulate_study) of one tile with the default
configuration (float32 pre-screen, staged counting), the same unstaged, the float64-only epilogue
and the counting alone, in that order, so that the first four launches of gm_screen_22 are one of each. Without ncu it prints the kernel
time of each configuration.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gpu import screen_kernel_seconds, simulate_study  # noqa: E402
from gpu_variants import BenchMmaConfig  # noqa: E402

from gboost.engines.gpu import GpuEngine, MmaConfig  # noqa: E402
from gboost.scan import ScanParams  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snps", type=int, default=16000)
    ap.add_argument("--n", type=int, default=5000)
    a = ap.parse_args()
    study = simulate_study(a.snps, a.n, a.n // 2, (0.05, 0.5), 0.0, 1)
    params = ScanParams(calibration_pairs=0)
    for label, cfg in (("f32 pre-screen, staged", MmaConfig()), ("f32 pre-screen, unstaged", MmaConfig(stages=0)),
                       ("f64 epilogue", MmaConfig(f32_screen=False)),
                       ("counting only", BenchMmaConfig(count_only=True))):
        eng = GpuEngine(counting="mma", mma_config=cfg, tile=a.snps)
        s = screen_kernel_seconds(study, params, eng)
        print(f"{label}: kernel {s:.4f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
