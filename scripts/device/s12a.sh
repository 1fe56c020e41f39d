#!/usr/bin/env bash
# Device run (lead, 2026-11-26, eleventh session): the float64 build's <2,2> epilogue from cells parked
# over the ring (scripts/device/pending/f64_parked_cells.patch of 84b8189, applied in the working
# tree) A/B against HEAD 105a133 (ab_old_base), the two GPU test files on the patched tree, then what the
# warps wait on (Nsight Compute stall reasons per issued instruction) in the new build: gm_screen_22 float64
# at 8k x 50k and gm_screen_33 at 20k x 5k with 1 % missing calls (issue 18).
# Prediction: epilogue at 60k x 50k 0.104-0.11 s -> ~0.084 s, kernel 0.245 -> ~0.23 s.
. scripts/device/env.sh
timeout 200 python3 bench/ab_kernels.py --trees . ab_old_base --rows 60000:50000:0 60000:20000:0 200000:5000:0 --rounds 2 2>&1 | tee $OUT/ab.txt | tail -6
timeout 230 python3 -m pytest -q -x -m gpu tests/test_gpu_engine.py tests/test_gpu_tensor.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -4
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
for spec in "gm_screen_22|--p 8000 --n 50000 --missing 0 --f64" "gm_screen_33|--p 20000 --n 5000 --missing 0.01"; do
  k=${spec%%|*}; a=${spec#*|}
  python3 bench/ncu_target.py $a >/dev/null 2>&1
  timeout 80 ncu --clock-control none -k regex:$k -c 1 --metrics "$M,gpu__time_duration.sum,sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum" python3 bench/ncu_target.py $a > $OUT/stalls_$k.txt 2>&1
  echo "== $k $a"; grep -E "stalled|duration|imma|bank" $OUT/stalls_$k.txt | awk '{print $1, $NF}' | sort -k2 -g -r | head -14
done
