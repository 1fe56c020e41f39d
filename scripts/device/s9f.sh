#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eighth session), issue 18 goal 2: the block ring's depth in the float64
# build at large n (no table, no parking areas: room for 16 stages). Kernel seconds (CUDA events) of
# the same studies with MmaConfig(stages, bar_steps) = (8, 4) (the default), (16, 8), (16, 4), each
# scanned twice after a warm-up, alternating; no GPU code changes, so no GPU suite.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/bench:/tmp/site || exit
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

python3 - <<'PY'
from bench_gpu import simulate_study, screen_kernel_seconds
from gboost.engines.gpu import GpuEngine, MmaConfig
from gboost.scan import ScanParams
params = ScanParams(epi1=5e-6, epi2=0.01, calibration_pairs=0)
configs = {"8/4 (default)": MmaConfig(), "16/8": MmaConfig(stages=16, bar_steps=8), "16/4": MmaConfig(stages=16, bar_steps=4)}
for n, p in ((20000, 60000), (50000, 60000)):
    study = simulate_study(p, n, n // 2, (0.05, 0.5), 0.0, 1)
    for cfg in configs.values():  # warm-up: NVRTC builds
        screen_kernel_seconds(simulate_study(300, n, n // 2, (0.05, 0.5), 0.0, 2), params, GpuEngine(counting="mma", mma_config=cfg))
    times = {k: [] for k in configs}
    for rep in range(2):
        for k, cfg in configs.items():
            times[k].append(screen_kernel_seconds(study, params, GpuEngine(counting="mma", mma_config=cfg)))
    print(f"n={n} p={p}: " + ", ".join(f"{k} {min(v):.4f} s" for k, v in times.items()), flush=True)
PY
