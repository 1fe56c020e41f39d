#!/usr/bin/env bash
# Device run (lead, 2026-11-27, eleventh session): the GPU suite beyond the two files s12h ran on 6ee5ea2
# (the later commit only re-indents boost_mma.cu: byte-identical cubins offline), then issue 18's rows at
# n = 50k and 20k with the mma ceiling and the counting-only kernel in the same run.
. scripts/device/env.sh
timeout 300 python3 -m pytest -q -m gpu tests --ignore=tests/test_gpu_engine.py --ignore=tests/test_gpu_tensor.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
for n in 50000 20000; do
  timeout 100 python3 bench/bench_gpu.py --sizes 60000 --n $n --missing 0 --countings mma --no-cpu --roofline-size 60000 2>&1 | tee $OUT/rows_n$n.txt | grep -E "^gpu mma|^roofline|ceiling:"
done
