#!/usr/bin/env bash
# The benchmark table on the GPU machine: `gboost warm` (WARM=0 skips it), then bench/bench_cli.py (the
# command as a user runs it, timed as a subprocess, beside the engine alone) on SIZES x N samples with
# MISSING rates of missing calls, then the optional rows asked for below, and one short table at the
# end. Each benchmark's whole output goes to $OUT/<name>.txt (bench_cli's rows also to $OUT/*.json).
#   bash scripts/device/bench_table.sh                        # 100k and 500k x 5k, 0 and 1 % missing (~3 min)
#   SIZES=500000 MISSING=0.01 REPEAT=3 bash scripts/device/bench_table.sh
#   POPC=1 QT=1 BIOBANK=1 bash scripts/device/bench_table.sh  # and optional rows
# Main rows:     SIZES (100000,500000), N (5000), MISSING (0,0.01), MAKER (fast; realistic, simulate),
#                REPEAT (1: warm runs, the fastest shown), NO_ENGINE=1 (skip the engine-only column),
#                DEVICE (gpu; cpu to try the script on small SIZES), DIR (/tmp/gboost-bench: the filesets).
# Optional rows: POPC=1      the CUDA-core popcount path (GBOOST_GPU_COUNTING=popc) on POPC_SIZES (500000), 1 %;
#                ENGINE=1    bench/bench_gpu.py: the engine alone, both paths, ceilings (ENGINE_SIZES, 500000);
#                QT=1        bench/bench_qt.py (QT_ARGS, default --gpu --quick --no-plink);
#                BIOBANK=1   bench/bench_biobank.py (BIOBANK_ARGS, default --quick);
#                CPU=1       bench/bench_cpu_vs_plink.py (CPU_ARGS; PLINK=path of plink1.9, its libraries on LD_LIBRARY_PATH);
#                MULTIGPU=P  bench/bench_multigpu.py --snps P (several GPUs; MULTIGPU_ARGS);
#                SWEEP=A-B   bench/gpu_cpu_sweep.py --seeds A-B (GPU = CPU byte for byte);
#                PERM=1      bench/bench_perm.py (PERM_ARGS, default 1,000 permutations of 100k x 5k: ~6 min);
#                SETS=1      bench/bench_sets.py (SETS_ARGS, default 1,000 candidates x 500k x 5k, no triangle).
cd "$(dirname "$0")/../.."
. scripts/device/env.sh
set -o pipefail
if [ "${WARM:-1}" = 1 ]; then
  ( time python3 -m gboost.cli warm ) 2>&1 | tail -4
fi
W=${DIR:-/tmp/gboost-bench}  # the filesets, kept for the next run
rm -f "$OUT"/bench_*.txt "$OUT"/bench_cli*.json "$OUT"/gpu_cpu_sweep.txt  # no stale rows in the table
SIZES=${SIZES:-100000,500000} N=${N:-5000} MISSING=${MISSING:-0,0.01} MAKER=${MAKER:-fast} REPEAT=${REPEAT:-1}
cli() {  # cli NAME bench_cli-args...: one bench_cli run, its JSON kept for the table
  local name=$1; shift
  python3 bench/bench_cli.py --n "$N" --device "${DEVICE:-gpu}" --maker "$MAKER" --repeat "$REPEAT" --dir "$W" \
    ${NO_ENGINE:+--no-engine} --json "$OUT/$name.json" "$@" > "$OUT/$name.txt" 2>&1 \
    || { echo "$name FAILED:"; tail -n 8 "$OUT/$name.txt"; }
}
extra() {  # extra NAME command...: an optional row, its last lines kept for the table
  local name=$1; shift
  "$@" > "$OUT/$name.txt" 2>&1 || echo "(exit $?)" >> "$OUT/$name.txt"
}
cli bench_cli --sizes "$SIZES" --missing "$MISSING"
if [ "${POPC:-0}" = 1 ]; then GBOOST_GPU_COUNTING=popc cli bench_cli_popc --sizes "${POPC_SIZES:-500000}" --missing 0.01; fi
if [ "${ENGINE:-0}" = 1 ]; then
  extra bench_gpu python3 bench/bench_gpu.py --sizes "${ENGINE_SIZES:-500000}" --n "$N" --missing 0.01 --no-cpu \
    --countings mma,popc
fi
if [ "${QT:-0}" = 1 ]; then extra bench_qt python3 bench/bench_qt.py ${QT_ARGS:---gpu --quick --no-plink}; fi
if [ "${BIOBANK:-0}" = 1 ]; then extra bench_biobank python3 bench/bench_biobank.py ${BIOBANK_ARGS:---quick}; fi
if [ "${CPU:-0}" = 1 ]; then
  extra bench_cpu_vs_plink python3 bench/bench_cpu_vs_plink.py ${CPU_ARGS:---snps 20000 --samples 5000 --threads $(nproc)} \
    ${PLINK:+--plink "$PLINK"}
fi
if [ -n "${MULTIGPU:-}" ]; then
  extra bench_multigpu python3 bench/bench_multigpu.py --snps "$MULTIGPU" --n "$N" --missing 0.01 ${MULTIGPU_ARGS:-}
fi
if [ -n "${SWEEP:-}" ]; then extra gpu_cpu_sweep python3 bench/gpu_cpu_sweep.py --seeds "$SWEEP"; fi
if [ "${PERM:-0}" = 1 ]; then
  extra bench_perm python3 bench/bench_perm.py ${PERM_ARGS:---snps 100000 --n $N --perms 1000 --device ${DEVICE:-gpu}} \
    --dir "$W/perm"
fi
if [ "${SETS:-0}" = 1 ]; then
  extra bench_sets python3 bench/bench_sets.py ${SETS_ARGS:---snps 500000 --n $N --candidates 1000 --device ${DEVICE:-gpu} --no-triangle} \
    --dir "$W/sets"
fi

python3 - "$OUT" <<'PY'
import json, os, sys
from pathlib import Path
out = Path(sys.argv[1])
print(f"\n# the command (bench_cli.py, a subprocess, start to exit) beside the engine alone; commit "
      f"{os.environ.get('GBOOST_COMMIT', '?')}; full output in {out}")
print(f"{'path':<5} {'p':>7} {'n':>5} {'miss':>5} {'cmd 1st s':>9} {'cmd s':>6} {'cmd pair·smp/s':>14} "
      f"{'scan s':>6} {'engine s':>8} {'engine pair·smp/s':>17}")
rows = {}
for name, path in (("bench_cli", "main"), ("bench_cli_popc", "popc")):
    f = out / f"{name}.json"
    for r in json.loads(f.read_text()) if f.exists() else []:
        rows[(path, r["p"], r["missing"])] = r
        print(f"{path:<5} {r['p']:>7} {r['n']:>5} {r['missing']:>5} {r['first_s']:>9.2f} {r['second_s']:>6.2f} "
              f"{r['command_ps']:>14.3g} {r['scan_s']:>6.2f} {r['engine_s']:>8.2f} {r['engine_ps']:>17.3g}")
for (path, p, m), r in rows.items():
    if m > 0 and (path, p, 0.0) in rows:
        print(f"{path} p={p}: missing {m} / none = {r['second_s'] / rows[(path, p, 0.0)]['second_s']:.2f}x the command's time")
for name, lines in (("bench_gpu", 12), ("bench_qt", 12), ("bench_biobank", 16), ("bench_cpu_vs_plink", 6),
                    ("bench_multigpu", 12), ("gpu_cpu_sweep", 3), ("bench_perm", 14), ("bench_sets", 12)):
    f = out / f"{name}.txt"
    if f.exists():
        print(f"\n# {name} (last lines of {f})")
        kept = [ln for ln in f.read_text().splitlines() if ln.strip() and not ln.startswith(("#", "INFO", "WARNING"))]
        print("\n".join(kept[-lines:]))
PY
