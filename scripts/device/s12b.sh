#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eleventh session): issue 18 goal 2. The float32 pre-screen without its
# table (every x ln x from the SFU) where the table does not fit (12.8k <= n < 2^16), A/B against
# 105a133 (ab_old_base: the float64 epilogue there), the two GPU test files, then bench_gpu's rows with
# the mma ceiling measured in the same run (as s11f).
# Prediction: 60k x 50k kernel 0.245 -> ~0.17 s (epilogue 45 % of it, float32 ~3-4x cheaper a pair).
. scripts/device/env.sh
timeout 200 python3 bench/ab_kernels.py --trees . ab_old_base --rows 60000:50000:0 60000:20000:0 60000:20000:0.01 --rounds 2 2>&1 | tee $OUT/ab.txt | tail -5
timeout 260 python3 -m pytest -q -x -m gpu tests/test_gpu_tensor.py tests/test_gpu_engine.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -4
for n in 50000 20000; do
  timeout 90 python3 bench/bench_gpu.py --sizes 60000 --n $n --missing 0 --countings mma --no-cpu --roofline-size 60000 2>&1 | tee $OUT/rows_n$n.txt | grep -E "^gpu mma|^roofline|ceiling:"
done
