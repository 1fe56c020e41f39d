#!/usr/bin/env bash
# First run after install vs second, on the GPU machine or any other:
# what setup detects, what `gboost doctor` reports, and the wall time of `gboost scan` on
# sample_data/sample and on a 100k-SNP study, first and second run, on fresh compile caches
#   A  without `gboost warm` (caches as a bare install leaves them),
#   B  right after `gboost warm` (what scripts/setup.sh does),
#   C  and, on fresh caches again after warm, what the first scan compiled (gboost.runtime.compile_watch).
# Fresh caches: NUMBA_CACHE_DIR and CUPY_CACHE_DIR point into an empty folder per case; nothing
# of the user's own caches is touched. About 3 minutes on an H100 with the defaults. Prints each
# line as it goes and keeps them in $OUT/first_run.txt (default OUT: /tmp/gboost-first-run).
#
# On the device (no network; the wheels gboost needs beside the image's CuPy and numba in .whl/):
#   bash scripts/device/first_run.sh
# On a small CPU machine (2 cores cannot scan 5e9 pairs in minutes: restrict the scan):
#   PY=.venv/bin/python DEVICE=cpu SAMPLES=1000 SCAN_FLAGS="--chr 1" bash scripts/device/first_run.sh
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gboost-first-run}
. scripts/device/env.sh
PY=${PY:-python3}
DEVICE=${DEVICE:-gpu}
SNPS=${SNPS:-100000}
SAMPLES=${SAMPLES:-5000}
SCAN_FLAGS=${SCAN_FLAGS:-}
W=$(mktemp -d /tmp/gboost-first-run.XXXXXX)
LOG=$OUT/first_run.txt
: > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }
fresh() {  # empty compile caches for the next case
  rm -rf "$W/numba" "$W/kernels"
  export NUMBA_CACHE_DIR=$W/numba CUPY_CACHE_DIR=$W/kernels
}
timed() {  # timed LABEL gboost-args...: one line "LABEL wall S s"
  local label=$1; shift
  local s e
  s=$(date +%s.%N)
  "$PY" -m gboost.cli "$@" >"$W/last.log" 2>&1 || { say "$label FAILED:"; tail -n 5 "$W/last.log" | tee -a "$LOG"; return 1; }
  e=$(date +%s.%N)
  say "$(printf '%-44s wall %6.2f s' "$label" "$(awk "BEGIN { print $e - $s }")")"
}
sample() { timed "$1" scan --bfile sample_data/sample --out "$W/o_sample" --overwrite --quiet --device "$DEVICE"; }
big() { timed "$1" scan --bfile "$W/big" --out "$W/o_big" --overwrite --quiet --device "$DEVICE" $SCAN_FLAGS; }

say "# first run after install: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git log -1 --format=%h 2>/dev/null || echo '?'),"\
    "$(nproc) cores, device $DEVICE"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$LOG"
say "## setup detection (PYTHON=$PY bash scripts/setup.sh --detect)"
PYTHON=$PY bash scripts/setup.sh --detect 2>&1 | tee -a "$LOG"
fresh
say "## gboost doctor, fresh caches"
"$PY" -m gboost.cli doctor 2>&1 | tee -a "$LOG"
"$PY" bench/make_bed.py --out "$W/big" --snps "$SNPS" --samples "$SAMPLES" --missing 0.01 --chromosomes 10 | tee -a "$LOG"
say "## A: fresh caches, no warm (study: $SNPS SNPs x $SAMPLES samples, 1 % missing; flags: ${SCAN_FLAGS:-none})"
fresh; sample "A sample: first"; sample "A sample: second"
fresh; big "A ${SNPS} SNPs: first"; big "A ${SNPS} SNPs: second"
say "## B: fresh caches, gboost warm, then the scans"
fresh; timed "B gboost warm" warm; cat "$W/last.log" | tee -a "$LOG"
"$PY" -m gboost.cli doctor 2>&1 | grep -A1 -E "numba:|CUDA kernels" | tee -a "$LOG"
sample "B sample: first"; sample "B sample: second"
big "B ${SNPS} SNPs: first"; big "B ${SNPS} SNPs: second"
say "## C: fresh caches, gboost warm, what the first scan of the ${SNPS}-SNP study compiled"
fresh; "$PY" -m gboost.cli warm >/dev/null 2>&1
"$PY" - "$W/big" "$W/o_c" "$DEVICE" $SCAN_FLAGS <<'PY' 2>&1 | tee -a "$LOG"
import sys
from gboost.runtime.compile_watch import CompileWatch
from gboost.cli import main
bed, out, device, *flags = sys.argv[1:]
with CompileWatch(watch_cupy=True) as w:
    rc = main(["scan", "--bfile", bed, "--out", out, "--overwrite", "--quiet", "--device", device, *flags])
print(f"C first scan after warm: exit {rc}; numba functions compiled: {len(w.numba)} {sorted(set(w.numba))}; "
      f"NVRTC modules built: {w.nvrtc}")
PY
rm -rf "$W"
say "(log in $LOG)"
