#!/usr/bin/env bash
# Device run (lead) on a host of several GPUs: the Dask GPU test, a quick multi-GPU bench that
# must pass before the long one, then the long one (screen >= 60 s on one GPU).
# Usage on the device: QUICK=200000 SNPS=1300000 bash scripts/device/multigpu.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT
git log -1 --format='# device copy HEAD %h (may be stale; the lead records the local commit)' 2>/dev/null
if [ "${TESTS:-1}" = 1 ]; then
  python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu tests/test_dask.py ${EXTRA_TESTS:-} 2>&1 | tee $OUT/gpu_tests.txt | tail -8
fi
set -o pipefail
if [ -n "${QUICK:-}" ]; then
  python3 bench/bench_multigpu.py --snps $QUICK --n 5000 --missing 0.01 --skip dask1 2>&1 | tee $OUT/multigpu_quick.txt | grep -v "^INFO\|^WARNING\|^$" | tail -12 || exit 1
fi
if [ -n "${SNPS:-}" ]; then
  python3 bench/bench_multigpu.py --snps $SNPS --n 5000 --missing 0.01 ${SKIP:+--skip $SKIP} 2>&1 | tee $OUT/multigpu.txt | grep -v "^INFO\|^WARNING\|^$" | tail -14
fi
