"""The GPU engine against the CPU engine on random realistic studies and random flags, byte for byte.

The GPU tests (tests/ marked `gpu`) pin chosen studies; this sweep draws new ones, as
bench/parity_sweep.py draws them for the comparison with plink1.9 (its plain draws: LD blocks, 0, 1 or
5 % missing calls, X, unknown sex, rare alleles, duplicated SNPs, tiny studies left by --mind, and
--allow-no-sex/--maf/--geno/--hwe/--mind/--epi1/--epi2). Each seed's study is scanned by
`gboost scan --device cpu` and `--device gpu` with the same flags, and all four data files
(pairs.epi.cc, its summary, pairs.tsv, marginal.tsv) must be byte-identical. Needs a GPU.

    python bench/gpu_cpu_sweep.py --seeds 1-40 [--work /tmp/gcsweep]

Prints a line per seed and a last line "identical K of N"; exits 1 on any difference.
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.parity.sweep import draw  # noqa: E402

FILES = ("pairs.epi.cc", "pairs.epi.cc.summary", "pairs.tsv", "marginal.tsv")


def one(k: int, work: str) -> tuple[bool, str]:
    d = os.path.join(work, f"s{k}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    sim, flags = draw(k)[:2]
    gb = [sys.executable, "-m", "gboost.cli"]
    made = subprocess.run([*gb, "simulate", "--out", f"{d}/s", *sim], cwd=ROOT, capture_output=True, text=True)
    if made.returncode:
        return False, f"simulate failed: {made.stderr.strip()[-300:]}"
    runs = {dev: subprocess.run([*gb, "scan", "--bfile", f"{d}/s", "--out", f"{d}/{dev}", "--device", dev, "--quiet",
                                 *flags], cwd=ROOT, capture_output=True, text=True) for dev in ("cpu", "gpu")}
    rc = {dev: r.returncode for dev, r in runs.items()}
    if rc["cpu"] or rc["gpu"]:
        if rc["cpu"] == rc["gpu"] == 2 and runs["cpu"].stderr == runs["gpu"].stderr:
            shutil.rmtree(d)
            return True, f"both refuse {flags}: {runs['cpu'].stderr.strip().splitlines()[-1]}"
        return False, f"exit cpu {rc['cpu']} gpu {rc['gpu']} {flags}: {runs['gpu'].stderr.strip()[-300:]}"
    differ = [f for f in FILES if not filecmp.cmp(f"{d}/cpu/{f}", f"{d}/gpu/{f}", shallow=False)]
    if differ:
        return False, f"differ {differ} {flags}"
    rows = sum(1 for _ in open(f"{d}/cpu/pairs.epi.cc")) - 1
    # SNPs whose missing calls the CUDA-core path counted by correction (GBOOST_GPU_COUNTING=popc; mode 4)
    with open(f"{d}/gpu/run.json") as fh:
        listed = json.load(fh).get("engine_info", {}).get("listed_snps", 0)
    shutil.rmtree(d)
    return True, f"identical ({rows} .epi.cc rows, {listed} SNPs listed) {flags}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-40", help="A-B or a comma list")
    ap.add_argument("--work", default="/tmp/gcsweep")
    a = ap.parse_args()
    seeds = (range(int(a.seeds.split("-")[0]), int(a.seeds.split("-")[1]) + 1) if "-" in a.seeds
             else [int(x) for x in a.seeds.split(",")])
    good = 0
    for k in seeds:
        ok, what = one(k, a.work)
        good += ok
        print(f"seed {k}: {'ok' if ok else 'DIFFERS'} {what}", flush=True)
    print(f"identical {good} of {len(seeds)}")
    return 0 if good == len(seeds) else 1


if __name__ == "__main__":
    sys.exit(main())
