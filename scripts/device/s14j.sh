#!/usr/bin/env bash
# Device run (lead, 2026-11-27, thirteenth session): the SNP texts made on a formatting thread beside the calibration
# (this tree): `gboost warm`, the scan-level GPU tests, bench/probe_hostwork.py's timeline at 100k x 5k (1 % and 0 %,
# two runs each), then the command at 100k x 5k.
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 200 python3 -m pytest -q -m gpu tests/test_gpu_engine.py tests/test_gpu_ld.py -k "scan or resume or ld or streams" -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -2
timeout 100 python3 bench/bench_cli.py --sizes 100000 --n 5000 --missing 0.01,0 --device gpu --maker fast --repeat 3 --no-engine --dir /tmp/gb 2>&1 | tee $OUT/bench_cli.txt | grep -E "^ 100000|^  p=100000"
for m in 0.01 0.0; do
  for r in 1 2; do
    python3 bench/probe_hostwork.py scan --bfile /tmp/gb/fast_p100000_n5000_m$m --out /tmp/gb/probe --device gpu --quiet 2>&1 | tail -25
  done
done 2>&1 | tee $OUT/hostwork.txt | grep -E "screen ends|_calibrate|_prepare_outputs|exact ends|main returned"
