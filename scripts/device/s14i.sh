#!/usr/bin/env bash
# Device run (lead, 2026-11-27, thirteenth session): the GPU scans against the CPU engine's after the calibration's
# tables went parallel (d1d3df1; every GPU scan runs the calibration on its host-work thread): the scan-level
# tests of test_gpu_engine.py and the GPU LD study's.
. scripts/device/env.sh
timeout 420 python3 -m pytest -q -m gpu tests/test_gpu_engine.py tests/test_gpu_ld.py -k "scan or resume or ld or streams" -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.txt | tail -3
