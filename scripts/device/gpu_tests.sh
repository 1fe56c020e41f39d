#!/usr/bin/env bash
# The GPU test suite on the GPU machine: `gboost warm` (WARM=0 skips it), every test marked gpu, then
# the GPU engine's host-side tests (the finalize overlap and the tile merge, which a stand-in GPU
# engine exercises; HOST=0 skips them). Tests are selected by marker, not by file name; the two-GPU
# tests skip on one GPU. The log goes to $OUT/gpu_tests.txt, its last lines are printed; the exit
# status is pytest's.
#   bash scripts/device/gpu_tests.sh                      # the whole GPU suite (about 6 minutes on an H100)
#   bash scripts/device/gpu_tests.sh -k missing_lists -x  # pytest arguments go to the gpu-marked run
#   TESTS=tests/gpu bash scripts/device/gpu_tests.sh      # where to collect from (default tests/)
#   TIMEOUT=540 TAIL=15                                   # the gpu run's time limit (s), lines shown
cd "$(dirname "$0")/../.."
. scripts/device/env.sh
set -o pipefail
LOG=$OUT/gpu_tests.txt
: > "$LOG"
if [ "${WARM:-1}" = 1 ]; then
  ( time python3 -m gboost.cli warm ) 2>&1 | tail -4
fi
rc=0
timeout "${TIMEOUT:-540}" python3 -m pytest -q -rs -p no:cacheprovider -m gpu ${TESTS:-tests/} "$@" 2>&1 \
  | tee -a "$LOG" | tail -n "${TAIL:-15}" || rc=$?
if [ "${HOST:-1}" = 1 ]; then
  host=$(find tests -name test_overlap.py -o -name test_tiles.py | sort)  # wherever the layout keeps them
  if [ -n "$host" ]; then
    python3 -m pytest -q -rs -p no:cacheprovider $host 2>&1 | tee -a "$LOG" | tail -n 3 || rc=$?
  else
    echo "host-side tests (test_overlap.py, test_tiles.py) not found under tests/" | tee -a "$LOG"; rc=1
  fi
fi
echo "(log in $LOG)"
exit $rc
