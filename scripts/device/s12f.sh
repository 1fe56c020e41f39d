#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eleventh session): issue 18's rows on 672f7c2's kernels: bench_gpu.py at
# 60k SNPs x n = 50k and 20k without missing calls with the mma ceiling and the counting-only kernel in
# the same run (goal 2), the 5k rows with 0 / 0.1 / 1 / 5 % missing calls (goal 1), and what the warps of
# the no-table pre-screen's gm_screen_22 at 8k x 50k wait on (Nsight Compute stall reasons).
. scripts/device/env.sh
for n in 50000 20000; do
  timeout 100 python3 bench/bench_gpu.py --sizes 60000 --n $n --missing 0 --countings mma --no-cpu --roofline-size 60000 2>&1 | tee $OUT/rows_n$n.txt | grep -E "^gpu mma|^roofline|ceiling:"
done
timeout 150 python3 bench/ab_kernels.py --trees . --rows 200000:5000:0 200000:5000:0.001 200000:5000:0.01 200000:5000:0.05 --rounds 1 2>&1 | tee $OUT/ab_missing.txt | tail -2
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
python3 bench/ncu_target.py --p 8000 --n 50000 --missing 0 >/dev/null 2>&1
timeout 80 ncu --clock-control none -k regex:gm_screen_22 -c 1 --metrics "$M,gpu__time_duration.sum,sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed" python3 bench/ncu_target.py --p 8000 --n 50000 --missing 0 > $OUT/stalls_22_n50000.txt 2>&1
grep -E "stalled|duration|imma|pipe_xu|wavefronts" $OUT/stalls_22_n50000.txt | awk '{print $1, $NF}' | sort -k2 -g -r | head -14
