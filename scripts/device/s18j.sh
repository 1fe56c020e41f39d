#!/usr/bin/env bash
# Eighteenth session, two H100s: the two-GPU tests (the CUDA-core path's lists built on each GPU), then the
# Dask and pinned-pieces two-GPU tests again with GBOOST_GPU_COUNTING=popc.
. scripts/device/env.sh
timeout 280 python3 -m pytest -q -m gpu tests -k "two_gpus or local_gpus" 2>&1 | tail -4 | tee $OUT/two_gpus.txt
GBOOST_GPU_COUNTING=popc timeout 250 python3 -m pytest -q -m gpu tests/test_dask.py tests/test_pinned_pieces.py -k "two_gpus or local_gpus" 2>&1 | tail -4 | tee $OUT/two_gpus_popc.txt
