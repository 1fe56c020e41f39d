#!/usr/bin/env bash
# Sixteenth session, 2026-11-27: the founders' counts from the counting pass (dff3440) against the tree before
# it (ab_pre16 = 5919cbd's gboost/, carried), on the realistic fileset of s16c (2 % unknown sex: founders who
# are not scanned), trees alternating, the command as a subprocess (bench_cli --no-engine).
. scripts/device/env.sh
python3 -m gboost.cli warm 2>&1 | tail -1
PYTHONPATH=$PWD/ab_pre16:$PYTHONPATH python3 -m gboost.cli warm 2>&1 | tail -1
C=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
for round in 1 2; do
  for tree in ab_pre16 .; do
    echo "== round $round tree $tree"
    GBOOST_COMMIT=$C python3 bench/bench_cli.py --repo $tree --sizes 500000 --n 5000 --missing 0,0.01 --device gpu \
        --maker realistic --repeat 2 --no-engine --dir /tmp/gbr --json $OUT/ab_${round}_$(basename $(realpath $tree)).json 2>&1 \
        | tee -a $OUT/ab_founders.txt | grep -A3 "cmd 1st s"
  done
done
python3 - <<'PY' | tee -a $OUT/ab_founders.txt
import glob, json, os
out = os.environ["OUT"]
for f in sorted(glob.glob(f"{out}/ab_*.json")):
    d = json.load(open(f)); rows = d["rows"] if isinstance(d, dict) else d
    for r in rows:
        bg = r["background"]
        print(os.path.basename(f), r["missing"], f"cmd {r['second_s']:.3f} scan {r['scan_s']:.3f} ratio {r['ratio']:.3f}",
              "host_work", round(bg.get("host_work", 0), 3), "encode", round(bg.get("encode", 0), 3),
              "read", round(r["stages"].get("read", 0), 3), "upload", round(r["stages"].get("upload", 0), 3))
PY
