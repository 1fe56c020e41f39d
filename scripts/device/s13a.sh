#!/usr/bin/env bash
# Device run (lead, 2026-11-27, twelfth session): the eleventh session's `gboost warm` change (three wide
# studies, one per build of the tensor-core kernels) on a GPU: its GPU test (first scans of 14,500, 90,000 and
# 150,000 samples build no NVRTC module after warm), then `gboost warm` itself on a fresh machine and again.
. scripts/device/env.sh
timeout 400 python3 -m pytest -q -m gpu tests/test_warm.py -p no:cacheprovider 2>&1 | tee $OUT/warm_tests.txt | tail -4
for i in 1 2; do /usr/bin/time -f "warm $i: %e s wall" python3 -m gboost.cli warm 2>&1 | tail -2; done | tee $OUT/warm.txt
