#!/usr/bin/env bash
# Eighteenth session: A/B on one machine, the break-even rule's tree (this one) against the tree before it
# (ab_pre18: mode 4 for every block of listed SNPs, commit of s18c), rounds alternating, the screen's kernel
# time at 0 and 1 % missing calls, corrected and direct: does the rule's mode function slow the kernels?
. scripts/device/env.sh
for r in 1 2; do
  echo "== round $r: pre (ab_pre18)"; timeout 150 python3 ab_pre18/bench/bench_popc_missing.py --p 200000 --missing 0,0.01 --variants corrected,direct 2>&1 | tail -3
  echo "== round $r: now"; timeout 150 python3 bench/bench_popc_missing.py --p 200000 --missing 0,0.01 --variants corrected,direct 2>&1 | tail -3
done 2>&1 | tee $OUT/ab_rule.txt
