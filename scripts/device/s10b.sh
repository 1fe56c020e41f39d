#!/usr/bin/env bash
# Device run (lead, 2026-11-26, ninth session), issue 24: the driver's end of the process. `gboost
# scan` of a 200k x 5k fileset in-process (bench/probe_release.py), alternating without and with the
# driver's files released beside the formatting; process ages inside, the wall from outside.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:/tmp/site || exit
export PYTHONUNBUFFERED=1
python3 -m gboost.cli warm 2>&1 | tail -1
python3 bench/make_bed.py --out /tmp/s --snps 200000 --samples 5000 --missing 0 > /dev/null 2>&1; cat /tmp/s.bed > /dev/null
python3 - <<'PY'
import json, subprocess, time, sys, hashlib
def run(flag):
    subprocess.run(["rm", "-rf", "/tmp/o"])
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "bench/probe_release.py", *flag, "--bfile", "/tmp/s", "--out", "/tmp/o", "--device", "gpu", "--quiet"],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    j = json.load(open("/tmp/o/run.json"))
    h = hashlib.sha256(open("/tmp/o/pairs.epi.cc", "rb").read()).hexdigest()[:12]
    probe = "; ".join(l[7:] for l in r.stderr.splitlines() if l.startswith("probe:"))
    print(f"{'release' if flag else 'baseline':8s} rc {r.returncode} outside {wall:.3f} s, run.json wall {j['command_s']['wall']:.3f} s, "
          f"covered {j['command_s']['wall'] / wall:.4f}; epi.cc {h}; {probe}", flush=True)
for i in range(4):
    run([])
    run(["--release"])
PY
