#!/usr/bin/env bash
# Device run (lead, 2026-11-26, ninth session), issue 18: the <2,2> block ring's addresses kept in
# registers and its groups issued without per-step tests (this tree), against the tree before
# (5094a7f, ab_old_5094a7f/) and this tree plus the per-warp loop's type pointers made opaque
# (ab_opq/): kernel seconds (CUDA events), each tree in its own process, trees alternating, best of 2.
# Rows: 200k x 5k at 0 and 1 % missing (default build); 60k SNPs at n = 20k and 50k without missing
# calls, default and counting-only builds. (The GPU suite: the next call.)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT
cat > /tmp/kern.py <<'PY'
import sys
from bench_gpu import simulate_study, screen_kernel_seconds
from gpu_variants import BenchMmaConfig
from gboost.engines.gpu import GpuEngine
from gboost.scan import ScanParams
params = ScanParams(epi1=5e-6, epi2=0.01, calibration_pairs=0)
rows = [(200000, 5000, 0.0, False), (200000, 5000, 0.01, False), (60000, 20000, 0.0, False), (60000, 20000, 0.0, True),
        (60000, 50000, 0.0, False), (60000, 50000, 0.0, True)]
out = []
for p, n, m, co in rows:
    cfg = BenchMmaConfig(count_only=co)
    screen_kernel_seconds(simulate_study(300, n, n // 2, (0.05, 0.5), m, 2), params, GpuEngine(counting="mma", mma_config=cfg))
    study = simulate_study(p, n, n // 2, (0.05, 0.5), m, 1)
    out.append(min(screen_kernel_seconds(study, params, GpuEngine(counting="mma", mma_config=cfg)) for _ in range(2)))
    del study
print(sys.argv[1], " ".join(f"{x:.4f}" for x in out), flush=True)
PY
echo "tree: 200k/0% 200k/1% n20k n20k-count n50k n50k-count (kernel s)"
for r in 1 2; do
  for tree in . ab_old_5094a7f ab_opq; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/bench:/tmp/site timeout 100 python3 /tmp/kern.py $tree) 2>&1 | tail -1 | tee -a $OUT/kernels.txt
  done
done
