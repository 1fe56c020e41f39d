#!/usr/bin/env bash
# Device run (lead, 2026-11-27, fourteenth session): the whole GPU suite on the session's final GPU code
# (bfa4ba2, GPU code of 3a5efc8: CuPy without its cuTENSOR preload, the runner's bytes_per_snp read from its counting).
. scripts/device/env.sh
timeout 560 python3 -m pytest -q -m gpu tests -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
