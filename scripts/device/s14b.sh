#!/usr/bin/env bash
# Device run (lead, 2026-11-27, thirteenth session): issue 18's rows on the final code, one machine, one call:
# kernel seconds at 200k x 5k with 0 / 0.1 / 1 / 5 % missing calls, the counting-only build at 0 and 1 %,
# then n = 50k, 20k and 5k without missing calls with the mma ceiling and the roofline in the same run.
. scripts/device/env.sh
timeout 190 python3 bench/ab_kernels.py --trees . --rows 200000:5000:0 200000:5000:0.001 200000:5000:0.01 200000:5000:0.05 --rounds 1 --reps 2 2>&1 | tee $OUT/rows.txt | tail -2
timeout 110 python3 bench/ab_kernels.py --trees . --rows 200000:5000:0 200000:5000:0.01 --rounds 1 --reps 2 --count-only 2>&1 | tee $OUT/rows_count.txt | tail -2
for spec in 60000:50000 60000:20000 200000:5000; do
  p=${spec%%:*}; n=${spec##*:}
  timeout 90 python3 bench/bench_gpu.py --sizes $p --n $n --missing 0 --countings mma --no-cpu --roofline-size $p 2>&1 | tee $OUT/rows_n$n.txt | grep -E "^gpu mma|^roofline|ceiling:"
done
