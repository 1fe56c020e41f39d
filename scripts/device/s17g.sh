#!/usr/bin/env bash
# Seventeenth session, 2026-11-27, the last device call: the whole GPU suite on the session's final code (the tie
# re-choice among every partner in small studies runs in finalize for both engines).
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 520 python3 -m pytest -q -rfE -m gpu tests -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -4
