#!/usr/bin/env bash
# Device run (lead, 2026-11-26, ninth session), issue 18: the <3,3> pre-screen reading each lane's own
# cells from its accumulators instead of back from the parking area (this tree) against 435587b
# (ab_old_435587b/): kernel seconds (CUDA events), each tree in its own process, trees alternating, best
# of 2 per process. Rows: 200k x 5k and 500k x 5k at 1 % missing (default build). Then the GPU suite.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT
cat > /tmp/kern.py <<'PY'
import sys
from bench_gpu import simulate_study, screen_kernel_seconds
from gboost.engines.gpu import GpuEngine
from gboost.scan import ScanParams
params = ScanParams(epi1=5e-6, epi2=0.01, calibration_pairs=0)
rows = [(200000, 5000, 0.01), (500000, 5000, 0.01)]
out = []
screen_kernel_seconds(simulate_study(300, 5000, 2500, (0.05, 0.5), 0.01, 2), params, GpuEngine(counting="mma"))
for p, n, m in rows:
    study = simulate_study(p, n, n // 2, (0.05, 0.5), m, 1)
    out.append(min(screen_kernel_seconds(study, params, GpuEngine(counting="mma")) for _ in range(2)))
    del study
print(sys.argv[1], " ".join(f"{x:.4f}" for x in out), flush=True)
PY
echo "tree: 200k/1% 500k/1% (kernel s)"
for r in 1 2; do
  for tree in . ab_old_435587b; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/bench:/tmp/site timeout 150 python3 /tmp/kern.py $tree) 2>&1 | tail -1 | tee -a $OUT/kernels.txt
  done
done
export PYTHONPATH=$PWD:$PWD/tests:/tmp/site
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 270 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu --ignore=tests/gui tests/ > $OUT/gpu_tests.txt 2>&1; grep -E "passed|failed|FAILED|ERROR" $OUT/gpu_tests.txt | tail -15
