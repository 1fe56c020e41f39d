#!/usr/bin/env bash
# Device run (lead): Nsight Compute on one launch of a screen kernel (KERNEL, default gm_screen_33)
# of bench/ncu_target.py (ARGS). Usage: [KERNEL=gm_screen_33] [ARGS="--p 20000 --missing 0.01"] bash scripts/device/ncu.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
mkdir -p $OUT
KERNEL=${KERNEL:-gm_screen_33}
python3 bench/ncu_target.py ${ARGS:-} >/dev/null 2>&1  # NVRTC and numba caches warm, outside the profile
ncu --clock-control none -k regex:$KERNEL -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis_Tables \
    --section LaunchStats --section Occupancy \
    python3 bench/ncu_target.py ${ARGS:-} > $OUT/ncu_$KERNEL.txt 2>&1
grep -vE "^==PROF==|^\s*$|----" $OUT/ncu_$KERNEL.txt | grep -E "Throughput|Pipe|Stall|Issue|Warp Cycles|Executed Ipc|Bank|Registers|Achieved|Duration|Eligible|No Eligible|Active Warps|Shared|MIO|LG|Spill|Local|Instructions|Occupancy" | head -70
