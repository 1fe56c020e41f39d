"""The quantitative-trait scan (issue 22): gboost's CPU engine beside PLINK 1.9 --epistasis.

    python bench/bench_qt.py --snps 3000 --samples 2000 --threads 2

Simulates a QT study (seeded, 1 % missing calls, LD blocks of 10, 5 chromosomes, two planted
interactions), writes it as a PLINK fileset, and runs ``gboost scan`` and ``plink1.9 --epistasis``
as subprocesses with the same thread count (one warm-up run each: numba's compile cache and the
page cache warm; then the fastest of ``--repeat`` runs). Prints wall time, pairs/s and
pair*samples/s of each, gboost's engine-only time (run.json), and whether ``pairs.epi.qt`` and
``pairs.epi.qt.summary`` are byte-identical to PLINK's.
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

from gboost.simulate import simulate_qt_study  # noqa: E402


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the child's own rusage) of one run. On a
    machine shared with other work the CPU seconds are the steadier figure."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snps", type=int, default=3_000)
    ap.add_argument("--samples", type=int, default=2_000)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--epi1", default="1e-4")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--plink", default=shutil.which("plink1.9") or "plink1.9")
    ap.add_argument("--no-plink", action="store_true", help="time gboost only (a study too large for PLINK here)")
    ap.add_argument("--keep", help="keep the work directory here")
    args = ap.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="gboost-bench-qt-")
    os.makedirs(work, exist_ok=True)
    prefix = os.path.join(work, "study")
    t = time.perf_counter()
    st = simulate_qt_study(args.snps, args.samples, seed=22, chromosomes=5, missing_rate=0.01, ld_block=10,
                           ld_rho=0.9, effects=[(10, 500 % args.snps, 0.3), (20, 900 % args.snps, 0.25)])
    st.write(prefix)
    print(f"simulated {args.snps} SNPs x {args.samples} samples in {time.perf_counter() - t:.1f} s: {work}")
    out = os.path.join(work, "gboost")
    gboost_cmd = [sys.executable, "-m", "gboost.cli", "scan", "--bfile", prefix, "--out", out, "--device", "cpu",
                  "--threads", str(args.threads), "--epi1", args.epi1, "--quiet", "--overwrite"]
    plink_out = os.path.join(work, "plink")
    plink_cmd = [args.plink, "--bfile", prefix, "--epistasis", "--epi1", args.epi1, "--threads", str(args.threads),
                 "--out", plink_out, "--silent"]
    pairs = args.snps * (args.snps - 1) // 2
    rows = []
    tools = [("gboost", gboost_cmd)] + ([] if args.no_plink else [("plink1.9", plink_cmd)])
    print(f"load average before: {os.getloadavg()}")
    for name, cmd in tools:
        timed(cmd)  # warm-up
        wall, cpu = min(timed(cmd) for _ in range(args.repeat))
        rows.append((name, wall))
        print(f"{name:9s} {wall:8.2f} s wall  {cpu:8.2f} s CPU  {pairs / wall:10.3e} pairs/s  "
              f"{pairs * args.samples / wall:10.3e} pair*samples/s")
    print(f"load average after: {os.getloadavg()}")
    run = json.load(open(os.path.join(out, "run.json")))
    print(f"gboost engine (run.json timings_s): {json.dumps(run['timings_s'])}")
    print(f"gboost command stages (command_s): {json.dumps(run.get('command_s', {}).get('stages', {}))}")
    if not args.no_plink:
        print(f"ratio plink/gboost (wall): {rows[1][1] / rows[0][1]:.2f}")
        same = all(open(os.path.join(out, f"pairs{ext}"), "rb").read() == open(plink_out + ext, "rb").read()
                   for ext in (".epi.qt", ".epi.qt.summary"))
        print(f"pairs.epi.qt and .summary byte-identical to PLINK's: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
