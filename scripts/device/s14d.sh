#!/usr/bin/env bash
# Device run (lead, 2026-11-27, thirteenth session): where the GPU's own start goes (issue 24's floor):
# persistence mode, then bench/probe_driver_start.py in five fresh processes.
. scripts/device/env.sh
nvidia-smi -q | grep -i -E "persistence mode|^\s+Product Name|Driver Version" | head -5
for i in 1 2 3 4 5; do python3 bench/probe_driver_start.py; done | tee $OUT/driver_start.txt
