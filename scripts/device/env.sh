# Sourced first by a device script (scripts/device/s11*.sh and later; run from the repository root on the
# device): the wheels the device lacks (carried in .whl, see the device tool's README) onto PYTHONPATH
# beside the tree and tests/, unbuffered output, Qt offscreen, the GPU named, $OUT made.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=offscreen
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
mkdir -p "$OUT"
