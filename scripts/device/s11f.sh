#!/usr/bin/env bash
# Device run (lead, 2026-11-26, tenth session), issue 18's rows on the kept build (cdcfc1f and later,
# kernel unchanged): n = 50k and 20k without missing calls with the mma ceiling and the counting-only
# roofline measured in the same run (bench_gpu.py), then 0.1 % and 5 % missing calls at 200k x 5k.
. scripts/device/env.sh
for n in 50000 20000; do
  timeout 90 python3 bench/bench_gpu.py --sizes 60000 --n $n --missing 0 --countings mma --no-cpu --roofline-size 60000 2>&1 | tee $OUT/rows_n$n.txt | grep -E "^gpu mma|^roofline|ceiling:"
done
timeout 80 python3 bench/ab_kernels.py --trees . --rows 200000:5000:0.001 200000:5000:0.05 --rounds 1 2>&1 | tee $OUT/ab_missing.txt | tail -2
