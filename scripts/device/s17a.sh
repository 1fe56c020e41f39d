#!/usr/bin/env bash
# Seventeenth session, 2026-11-27: the GPU engine against the CPU engine on the random realistic studies and
# flags of bench/gpu_cpu_sweep.py past the seeds s16e reached (1-14), on the code of f02f756 (no GPU code
# changed since s16e's whole suite).
. scripts/device/env.sh
( time python3 -m gboost.cli warm ) 2>&1 | tail -4
timeout 330 python3 bench/gpu_cpu_sweep.py --seeds 15-120 2>&1 | tee $OUT/gpu_cpu_sweep.txt | tail -6
