#!/usr/bin/env bash
# Nineteenth session: the whole GPU suite after the DeviceLists clean-up (a363be8), after gboost warm.
. scripts/device/env.sh
export GBOOST_COMMIT=$(cat .commit 2>/dev/null || echo "?")
( time python3 -m gboost.cli warm ) 2>&1 | tail -4
timeout 470 python3 -m pytest -q -m gpu tests 2>&1 | tail -15 | tee $OUT/gpu_suite.txt
