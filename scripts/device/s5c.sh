#!/usr/bin/env bash
# Device run (lead, 2026-11-26, fifth session) on two GPUs of one host: the GPU tests that need two
# (the shared pinner's among them), then the 200k x 200k study streamed through a forced budget on
# both GPUs (one pinner for both runners' copies).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p $OUT /tmp/fs
python3 -m gboost.cli warm 2>&1 | tail -1
timeout 240 python3 -m pytest -q -rs -p no:cacheprovider -p no:logging -m gpu tests/test_pinned_pieces.py tests/test_gpu_engine.py tests/test_biobank.py tests/test_command_timings.py > $OUT/gpu_tests_2gpu.txt 2>&1; grep -E "passed|failed|FAILED|ERROR|SKIP" $OUT/gpu_tests_2gpu.txt | tail -12
python3 bench/make_bed.py --out /tmp/fs/bb --snps 200000 --samples 200000 --missing 0.01 --chromosomes 22 --ld-block 50 --ld-rho 0.9 2>&1 | tail -1
for g in 0 0,1; do
  rm -rf /tmp/o2; t=$(date +%s%N)
  GBOOST_GPU_MEMORY_LIMIT=15004800000 timeout 120 python3 -m gboost.cli scan --bfile /tmp/fs/bb --out /tmp/o2 --device gpu --gpus $g --quiet --calibration-pairs 0
  echo "gpus $g: rc $? wall $(( ($(date +%s%N) - t) / 1000000 )) ms"
  python3 -c "import json; d=json.load(open('/tmp/o2/run.json')); print(' ', d['engine_info']); print('  screen', round(d['timings_s']['screen'], 2), 'device', d['device'])"
done
