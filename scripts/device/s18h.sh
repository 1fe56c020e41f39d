#!/usr/bin/env bash
# Eighteenth session: the whole GPU suite on the final code (mode 4 with the study-level rule), after gboost warm.
. scripts/device/env.sh
export GBOOST_COMMIT=$(cat .commit 2>/dev/null || echo "?")
( time python3 -m gboost.cli warm ) 2>&1 | tail -4
timeout 520 python3 -m pytest -q -m gpu tests 2>&1 | tail -15 | tee $OUT/gpu_suite.txt
