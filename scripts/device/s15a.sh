#!/usr/bin/env bash
# Device run (lead, 2026-11-27, fourteenth session): where CuPy's import goes (issue 24's GPU start), the current
# start-up timeline at 500k x 5k, and the runner's streaming tests after bytes_per_snp became the counting's own.
. scripts/device/env.sh
t=$(date +%s); python3 -m gboost.cli warm > $OUT/warm.txt 2>&1; echo "warm rc=$? $(( $(date +%s) - t )) s"
python3 bench/probe_cupy_import.py --runs 3 2>&1 | tee $OUT/cupy_import.txt
for i in 1 2 3; do python3 bench/probe_driver_start.py; done | tee $OUT/driver_start.txt
python3 bench/make_bed.py --out /tmp/f500 --snps 500000 --samples 5000 --missing 0 | tail -1
python3 bench/bench_start.py /tmp/f500 2>&1 | tee $OUT/start_500k.txt
timeout 300 python3 -m pytest -q -m gpu tests/test_gpu_engine.py -k "stream or resident or fragment" -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
