#!/usr/bin/env bash
# Eighteenth session: the block rule reverted (s18f: its mode function made every kernel 4-7 % slower through
# spilled registers); the study-level rule instead. The new GPU tests, then A/B against ab_pre18 (s18c's
# tree) on one machine: the screen's kernel seconds at 0, 1 and 5 % missing calls.
. scripts/device/env.sh
timeout 200 python3 -m pytest -q -x tests/test_gpu_missing_lists.py 2>&1 | tail -3 | tee $OUT/tests_lists.txt
for r in 1 2; do
  echo "== round $r: pre (ab_pre18)"; timeout 150 python3 ab_pre18/bench/bench_popc_missing.py --p 200000 --missing 0,0.01 --variants corrected,direct 2>&1 | tail -3
  echo "== round $r: now"; timeout 150 python3 bench/bench_popc_missing.py --p 200000 --missing 0,0.01,0.05 --variants corrected,direct 2>&1 | tail -5
done 2>&1 | tee $OUT/ab_rule2.txt
