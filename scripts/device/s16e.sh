#!/usr/bin/env bash
# Sixteenth session, 2026-11-27, the last device call: the whole GPU suite on the session's final code (the
# founders' counts from the counting pass; the helper's PLINK skip of SNPs with fewer than two genotypes, in
# load.py's passes), then the GPU engine against the CPU engine on random realistic studies and flags
# (bench/gpu_cpu_sweep.py) for as long as the call allows.
. scripts/device/env.sh
timeout 480 python3 -m pytest -q -rfE -m gpu tests -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
timeout 45 python3 bench/gpu_cpu_sweep.py --seeds 1-40 2>&1 | tee $OUT/gpu_cpu_sweep.txt | tail -4
