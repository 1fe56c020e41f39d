#!/usr/bin/env bash
# Device run (lead, 2026-11-26, third session): which GPU start-up steps hold the GIL, and how long a
# process takes to end after os._exit with host and device memory (bench/probe_gil_cuda.py, probe_teardown.py).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -m gboost.cli warm --device gpu 2>&1 | tail -1
for w in cupy ctypes; do echo "== $w"; python3 bench/probe_gil_cuda.py $w; done
for k in 1 2; do for w in none host gpu both; do
  t=$(date +%s%N); python3 bench/probe_teardown.py $w; echo "   outside $(( ($(date +%s%N) - t) / 1000000 )) ms"
done; done
