#!/usr/bin/env bash
# Seventeenth session, 2026-11-27, on two GPUs (nvidia-h100-x2): the GPU tests that need two GPUs, which every
# one-GPU suite since the fifth session (s5d, f8e9ae6) skipped: the engine on both, Dask local:gpus, the QT
# engine on two devices and its --gpus 0,1 command, parts and a resumed scan, the shared pinner.
. scripts/device/env.sh
nvidia-smi -L
( time python3 -m gboost.cli warm ) 2>&1 | tail -4
timeout 420 python3 -m pytest -q -rfEs -m gpu -p no:cacheprovider \
  "tests/test_dask.py::test_local_gpus_on_two_gpus_equals_one_gpu_in_one_process" \
  "tests/test_gpu_engine.py::test_two_gpus_give_the_same_as_one" \
  "tests/test_pinned_pieces.py::test_two_gpus_streaming_share_one_pinner_and_write_the_cpu_engines_bytes" \
  "tests/test_qt_gpu.py::test_gpu_two_devices_write_the_files_of_one" \
  "tests/test_qt_gpu.py::test_cli_gpus_0_1_equals_cpu_and_records_both_devices" \
  "tests/test_qt_parts.py::test_two_gpus_parts_and_a_resumed_scan_write_the_cpu_engines_files" \
  2>&1 | tee $OUT/gpu_tests_2gpu.txt | tail -15
