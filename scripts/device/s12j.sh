#!/usr/bin/env bash
# Device run (lead, 2026-11-27, eleventh session): test_gpu_tensor.py after its CPU-engine comparison was
# factored into one helper (no GPU code changed since s12h/s12i).
. scripts/device/env.sh
timeout 280 python3 -m pytest -q -m gpu tests/test_gpu_tensor.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
