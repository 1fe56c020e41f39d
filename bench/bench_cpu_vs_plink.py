"""gboost's CPU engine and PLINK 1.9 --fast-epistasis boost side by side, same study, same threads:
SPEC section 7's row "CPU engine vs plink1.9, equal threads" (goal >= 3x PLINK's throughput).

    python bench/bench_cpu_vs_plink.py --snps 10000 --samples 2000 --threads 2
    python bench/bench_cpu_vs_plink.py --snps 20000 --samples 5000 --threads 16 --plink /path/to/plink1.9

Simulates a study (seeded, 1% missing calls, 5 chromosomes), writes it as a PLINK fileset, then
runs each tool as a subprocess (after one warm-up run each, so numba's compile cache and the page
cache are warm) and prints wall time, pairs/s, pair*samples/s, peak RSS and the ratio. gboost's
scan-only time (data loaded) comes from its run.json and is printed beside the command's. The
outputs are also compared byte for byte. Nothing is written outside its temporary folder (``--keep``).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gboost.data.simulate import simulate_study  # noqa: E402




def peak_rss(cmd: list[str]) -> tuple[float, float]:
    """Run ``cmd`` under a fresh Python wrapper so RUSAGE_CHILDREN covers only it."""
    code = ("import resource,subprocess,sys,time,json;t=time.perf_counter();"
            "subprocess.run(sys.argv[1:],check=True,stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL);"
            "print(json.dumps([time.perf_counter()-t,resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024]))")
    out = subprocess.run([sys.executable, "-c", code, *cmd], check=True, capture_output=True, text=True).stdout
    wall, rss = json.loads(out)
    return wall, rss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snps", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=2_000)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--plink", default=shutil.which("plink1.9") or "plink1.9")
    ap.add_argument("--keep", help="keep the work directory here")
    args = ap.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="gboost-bench-")
    os.makedirs(work, exist_ok=True)
    prefix = os.path.join(work, "study")
    sim = simulate_study(args.snps, args.samples // 2, args.samples - args.samples // 2, seed=7,
                         chromosomes=5, missing_rate=0.01)
    sim.write(prefix)
    gboost_cmd = [sys.executable, "-m", "gboost.cli", "scan", "--bfile", prefix, "--device", "cpu",
                  "--threads", str(args.threads), "--quiet", "--overwrite"]
    plink_cmd = [args.plink, "--bfile", prefix, "--fast-epistasis", "boost", "--threads", str(args.threads),
                 "--allow-no-sex", "--silent"]

    # Warm-up: compile caches, page cache.
    small = os.path.join(work, "small")
    simulate_study(300, 100, 100, seed=1, missing_rate=0.01).write(small)
    subprocess.run([sys.executable, "-m", "gboost.cli", "scan", "--bfile", small, "--device", "cpu", "--quiet",
                    "--overwrite", "--out", os.path.join(work, "warm")], check=True)

    g_wall, g_rss = peak_rss(gboost_cmd + ["--out", os.path.join(work, "gboost")])
    p_wall, p_rss = peak_rss(plink_cmd + ["--out", os.path.join(work, "plink")])
    run = json.load(open(os.path.join(work, "gboost", "run.json")))
    scan_s = run["timings_s"]["total"]
    n = run["counts"]["samples"]
    p = run["counts"]["snps"]
    pairs = p * (p - 1) // 2

    same_cc = open(os.path.join(work, "gboost", "pairs.epi.cc")).read() == open(os.path.join(work, "plink.epi.cc")).read()
    same_sum = (open(os.path.join(work, "gboost", "pairs.epi.cc.summary")).read()
                == open(os.path.join(work, "plink.epi.cc.summary")).read())
    print(f"study: {p} SNPs x {n} samples, {pairs:.4g} pairs, {args.threads} threads, bed {os.path.getsize(prefix + '.bed') / 2**20:.1f} MiB")
    print(f"{'tool':<22}{'wall s':>9}{'pairs/s':>12}{'pair*smp/s':>13}{'peak RSS MiB':>14}")
    print(f"{'PLINK 1.9':<22}{p_wall:>9.2f}{pairs / p_wall:>12.3g}{pairs * n / p_wall:>13.3g}{p_rss:>14.0f}")
    print(f"{'gboost cpu (command)':<22}{g_wall:>9.2f}{pairs / g_wall:>12.3g}{pairs * n / g_wall:>13.3g}{g_rss:>14.0f}")
    print(f"{'gboost cpu (scan)':<22}{scan_s:>9.2f}{pairs / scan_s:>12.3g}{pairs * n / scan_s:>13.3g}{'':>14}")
    print(f"ratio gboost/PLINK throughput (whole command): {p_wall / g_wall:.2f}x; "
          f"outputs identical: .epi.cc {same_cc}, .summary {same_sum}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
