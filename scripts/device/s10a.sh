#!/usr/bin/env bash
# Device run (lead, 2026-11-26, ninth session), issue 18 goal 2: the <2,2> kernel's block shape and
# ring at large n, no code change. Kernel seconds (CUDA events) of the default build (float64
# epilogue at these n) and the counting-only build, for several MmaConfig (warps, blocks per SM,
# stages / bar_steps), 60k SNPs at n = 20k and 50k without missing calls; best of 2, alternating.
# Then Nsight Compute on the counting-only gm_screen_22 at n = 50k (what bounds the ring).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/bench:/tmp/site || exit
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT
timeout 420 python3 - <<'PY' 2>&1 | tee $OUT/sweep.txt
from bench_gpu import simulate_study, screen_kernel_seconds
from gpu_variants import BenchMmaConfig
from gboost.engines.gpu import GpuEngine
from gboost.scan import ScanParams
params = ScanParams(epi1=5e-6, epi2=0.01, calibration_pairs=0)
shapes = {
    "4x4 8/4 (default)": dict(),
    "4x4 8/2": dict(stages=8, bar_steps=2),
    "4x4 4/2": dict(stages=4, bar_steps=2),
    "2x4 x2 8/4": dict(warps_rows=2, warps_cols=4, min_blocks=(2, 1)),
    "4x2 x2 8/4": dict(warps_rows=4, warps_cols=2, min_blocks=(2, 1)),
    "2x2 x4 8/4": dict(warps_rows=2, warps_cols=2, min_blocks=(4, 1)),
}
for n in (20000, 50000):
    study = simulate_study(60000, n, n // 2, (0.05, 0.5), 0.0, 1)
    small = simulate_study(300, n, n // 2, (0.05, 0.5), 0.0, 2)
    cfgs = {}
    for k, kw in shapes.items():
        for co in (False, True):
            cfgs[(k, co)] = BenchMmaConfig(count_only=co, **kw)
    for cfg in cfgs.values():  # warm-up: NVRTC builds
        screen_kernel_seconds(small, params, GpuEngine(counting="mma", mma_config=cfg))
    times = {k: [] for k in cfgs}
    for rep in range(2):
        for k, cfg in cfgs.items():
            times[k].append(screen_kernel_seconds(study, params, GpuEngine(counting="mma", mma_config=cfg)))
    for k in shapes:
        print(f"n={n} p=60000 {k:20s} kernel {min(times[(k, False)]):.4f} s  counting-only {min(times[(k, True)]):.4f} s", flush=True)
PY
ncu --clock-control none -k regex:gm_screen_22 -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis_Tables \
    --section LaunchStats --section Occupancy \
    python3 bench/ncu_target.py --p 8000 --n 50000 --missing 0 --count-only > $OUT/ncu22_count_n50k.txt 2>&1
grep -vE "^==PROF==|^\s*$|----" $OUT/ncu22_count_n50k.txt | grep -E "Throughput|Pipe|Stall|Issue|Warp Cycles|Executed Ipc|Bank|Registers|Achieved|Duration|Eligible|Active Warps|Shared|MIO|LG|Instructions|Occupancy|Barrier|Long|Short" | head -60
