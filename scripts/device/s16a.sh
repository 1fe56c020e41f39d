#!/usr/bin/env bash
# Part 1 of 2 (each call is at most 600 s): `gboost warm` and the whole GPU suite.
# Device run prepared in the fifteenth session (2026-11-27, which had no device time) for the next one:
# 1. the whole GPU suite on the code since s15f (CuPy through import_cupy at every site, d7daaee; the host
#    thread's alike-SNP classes and the BEST_SNP tie repair after a GPU screen, 2b0cf5c; its GPU test
#    tests/test_best_ties.py::test_the_gpu_summary_equals_the_cpu_one_on_ties);
# 2. issue 24's rows again (bench_cli, 500k x 5k, 1 % and no missing calls): the repair's classes run beside
#    the screen, so the command should not move;
# 3. the split-read probe (bench/probe_split_read.py): when the counts and the GPU are both ready, in this
#    process (as the CLI) and with the read in a forked second process. The VM's 2 cores could not decide it.
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 520 python3 -m pytest -q -m gpu tests -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
