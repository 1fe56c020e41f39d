"""One GPU vs all GPUs of a host, through the built-in tile queue and through Dask (issue 7).

    python bench/bench_multigpu.py --snps 400000 --n 5000

Simulates a study on the GPU (as bench_gpu.py), then times run_scan with GpuEngine(gpus=[0]),
GpuEngine() (every visible GPU, one shared tile queue), and DaskEngine('local:1'/'local:G')
(one worker process per GPU). Checks that every configuration gives the same pairs and summary
and prints wall and screen times and the speed-ups.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gpu import simulate_study  # noqa: E402

from gboost.engines.distributed import DaskEngine  # noqa: E402
from gboost.engines.gpu import GpuEngine  # noqa: E402
from gboost.io.results import format_epi_cc, format_summary  # noqa: E402
from gboost.scan import ScanParams, run_scan  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snps", type=int, default=400_000)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--no-dask", action="store_true")
    a = ap.parse_args()
    import cupy as cp

    g = cp.cuda.runtime.getDeviceCount()
    params = ScanParams(calibration_pairs=0)
    warm = simulate_study(2000, a.n, a.n // 2, (0.05, 0.5), 0.0, 99)
    for gpus in ([0], None):
        run_scan(warm, params, engine=GpuEngine(gpus=gpus))
    study = simulate_study(a.snps, a.n, a.n // 2, (0.05, 0.5), 0.0, 1)
    configs = [("built-in queue, 1 GPU", lambda: GpuEngine(gpus=[0])),
               (f"built-in queue, {g} GPUs", lambda: GpuEngine())]
    if not a.no_dask:
        configs += [("Dask, 1 worker", lambda: DaskEngine("local:1", device="gpu")),
                    (f"Dask, {g} workers", lambda: DaskEngine(f"local:{g}", device="gpu"))]
    rows, ref = [], None
    for label, make in configs:
        t0 = time.perf_counter()
        res = run_scan(study, params, engine=make())
        wall = time.perf_counter() - t0
        text = format_epi_cc(res) + format_summary(res)
        same = ref is None or text == ref
        ref = ref or text
        rows.append((label, wall, res.timings["screen"], same))
        print(f"# {label}: wall {wall:.2f} s, screen {res.timings['screen']:.2f} s, identical {same}", flush=True)
    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    pairs = a.snps * (a.snps - 1) // 2
    print(f"\n{g} x {name}; {a.snps} SNPs x {a.n} samples = {pairs:.3g} pairs; {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"{'configuration':<26}{'wall s':>9}{'screen s':>10}{'pair*smp/s':>12}{'speed-up':>10}{'same output':>13}")
    base = {"built": rows[0][1], "Dask,": rows[2][1] if len(rows) > 2 else None}
    for label, wall, screen, same in rows:
        b = base["built"] if label.startswith("built") else base["Dask,"]
        print(f"{label:<26}{wall:>9.2f}{screen:>10.2f}{pairs * a.n / wall:>12.3g}{b / wall:>10.2f}{str(same):>13}")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
