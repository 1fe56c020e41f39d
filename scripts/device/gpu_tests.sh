#!/usr/bin/env bash
# The GPU test suite on the GPU machine: `gboost warm` (WARM=0 skips it), every test marked gpu, then
# the GPU engine's host-side tests (the finalize overlap and the tile merge, which a stand-in GPU
# engine exercises; HOST=0 skips them). Tests are selected by marker, not by file name; the two-GPU
# tests skip on one GPU. The exit status is pytest's (124: the gpu run reached its time limit).
#   bash scripts/device/gpu_tests.sh                      # the whole GPU suite (about 6 minutes on an H100)
#   bash scripts/device/gpu_tests.sh -k missing_lists -x  # pytest arguments go to the gpu-marked run
#   bash scripts/device/gpu_tests.sh -n 6 --dist worksteal  # 6 processes (pytest-xdist); worksteal: an idle
#     one takes tests queued behind a slow one (xdist's default queues the first 8 tests, both cold
#     `gboost warm` GPU tests of tests/cli/test_warm.py among them, on one process)
#   TESTS=tests/gpu bash scripts/device/gpu_tests.sh      # where to collect from (default tests/)
#   TIMEOUT=540 TAIL=15                                   # the gpu run's time limit (s), summary lines shown
# A run cut off by its time limit keeps its failures: the gpu run goes verbose (-v) into the log,
# $OUT/gpu_tests.txt, and the terminal shows each failure or error as soon as it is reported (never
# a PASSED line), then the log's last TAIL lines without PASSED ones (pytest's summary: -rfEs names
# every failure, error and skip). At the limit pytest gets SIGINT, on which it still prints that
# summary (SIGKILL 30 s later if it has not ended). $OUT/gpu_progress.txt holds each test's start and
# outcome as they happened (scripts/device/gpu_progress.py, a plugin of the run: pytest-timeout is not
# on the machine); after a run cut off at its limit, the tests still running then are listed with
# their seconds so far (a hang is the one that ran longest), and every run ends with its failures.
cd "$(dirname "$0")/../.."
. scripts/device/env.sh
set -o pipefail
LOG=$OUT/gpu_tests.txt
PROGRESS=$OUT/gpu_progress.txt
: > "$LOG"
: > "$PROGRESS"
if [ "${WARM:-1}" = 1 ]; then
  ( time python3 -m gboost.cli warm ) 2>&1 | tee -a "$LOG" | tail -4
fi
# An outcome worth seeing at once: "[gw3] [ 69%] FAILED tests/..." or "tests/... FAILED [ 69%]" (-v, with
# and without xdist), "FAILED tests/... - AssertionError" (the summary), an xdist worker that crashed.
SHOW='(^| )(FAILED|ERROR|XPASS)( |$)|INTERNALERROR|crashed|node down|KeyboardInterrupt'
GBOOST_TEST_PROGRESS=$PROGRESS PYTHONPATH=$PWD/scripts/device:$PYTHONPATH \
  timeout -s INT -k 30 "${TIMEOUT:-540}" \
  python3 -m pytest -v -rfEs --tb=short -p no:cacheprovider -p gpu_progress -m gpu ${TESTS:-tests/} "$@" 2>&1 \
  | tee -a "$LOG" | awk -v show="$SHOW" '/(^| )PASSED( |$)/ { next } $0 ~ show { print; fflush() }'
rc=${PIPESTATUS[0]}
echo "---- the gpu run's last lines (exit status $rc) ----"
grep -v -E '(^| )PASSED( |$)' "$LOG" | tail -n "${TAIL:-15}"
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  echo "the gpu run reached its time limit (${TIMEOUT:-540} s); still running then (seconds so far):" | tee -a "$LOG"
  python3 -c '
import sys, time
start, ended = {}, set()
for line in open(sys.argv[1]):
    kind, _, rest = line.rstrip("\n").partition(" ")
    if kind == "START":
        t, _, node = rest.partition(" ")
        start[node] = float(t)
    elif kind == "END":
        ended.add(rest.split(" ", 2)[2])
left = sorted((t, n) for n, t in start.items() if n not in ended)
print("\n".join(f"  {time.time() - t:6.0f} s  {n}" for t, n in left) or "  none")
' "$PROGRESS" | tee -a "$LOG"
fi
echo "failures and errors reported (from $PROGRESS):" | tee -a "$LOG"
grep -E '^END (failed|error) ' "$PROGRESS" | tee -a "$LOG" || echo "  none" | tee -a "$LOG"
if [ "${HOST:-1}" = 1 ]; then
  host=$(find tests -name test_overlap.py -o -name test_tiles.py | sort)  # wherever the layout keeps them
  if [ -n "$host" ]; then
    python3 -m pytest -q -rfEs --tb=short -p no:cacheprovider $host 2>&1 | tee -a "$LOG" | tail -n 3
    hrc=${PIPESTATUS[0]}
    if [ "$rc" = 0 ]; then rc=$hrc; fi
  else
    echo "host-side tests (test_overlap.py, test_tiles.py) not found under tests/" | tee -a "$LOG"; rc=1
  fi
fi
echo "(log in $LOG, progress in $PROGRESS)"
exit $rc
