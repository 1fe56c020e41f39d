# Sourced first by the GPU-machine scripts beside it (run from the repository root):
#   . scripts/device/env.sh
# The wheels the machine lacks (carried in .whl/, where there is one) installed into /tmp/site and put on
# PYTHONPATH beside the tree and tests/, unbuffered output, Qt offscreen, NVLink multicast off for NCCL,
# the GPU named, $OUT made (default /tmp/gboost-out). GBOOST_COMMIT comes from .commit where the copy
# on the machine has no .git of its own (bench_cli.py prints it).
set -u
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
  export PYTHONPATH=$PWD:$PWD/tests:/tmp/site
else
  export PYTHONPATH=$PWD:$PWD/tests${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen NCCL_NVLS_ENABLE=0
if [ -f .commit ]; then export GBOOST_COMMIT=$(cat .commit); fi
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
fi
export OUT=${OUT:-/tmp/gboost-out}
mkdir -p "$OUT"
