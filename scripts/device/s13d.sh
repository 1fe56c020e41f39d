#!/usr/bin/env bash
# Device run (lead, 2026-11-27, twelfth session): the whole GPU suite on the session's last kernel edit
# (4f4e058: gm_ksa32m's counts from the parked words; gm_xlr as in 26202a0).
. scripts/device/env.sh
timeout 560 python3 -m pytest -q -m gpu tests -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -4
