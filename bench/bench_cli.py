"""The command a user runs, timed as a subprocess, beside the engine alone (issue 24; docs/PERFORMANCE.md).

    python bench/bench_cli.py --sizes 100000,500000 --n 5000 --missing 0,0.01 --device gpu
    python bench/bench_cli.py --sizes 8000 --n 5000 --missing 0.01 --device cpu      # a CPU-sized study

For each size and missing-call rate: a PLINK fileset written by bench/make_bed.py (random HWE
genotypes, the given missing rate), then `gboost scan --bfile … --out …` run twice as a subprocess
(first = caches as left by earlier runs, second = warm), the .bed in the page cache. Printed per row:

* command s: wall of the subprocess, start to exit; pair·samples/s of the command;
* scan s: run.json's scan stage (timings_s "total": prepare + screen + exact + marginal), and the
  ratio command / scan (goal <= 1.25);
* engine s: `run_scan` in this process on the study already loaded (what the older benches timed);
* covered: run.json's command_s stages summed (startup .. run.json) over the measured wall;
* the command_s stages of the second run.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def command(prefix: str, out: Path, device: str, epi1: float) -> tuple[float, dict]:
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gboost.cli", "scan", "--bfile", prefix, "--out", str(out), "--device",
                    device, "--quiet", "--epi1", str(epi1)], check=True, cwd=ROOT)
    wall = time.perf_counter() - t
    return wall, json.loads((out / "run.json").read_text())


def engine_only(prefix: str, device: str, epi1: float) -> tuple[float, float]:
    from gboost.engines import make_engine
    from gboost.io.plink_bed import open_bfile
    from gboost.load import load_study
    from gboost.scan import ScanParams, run_scan

    t = time.perf_counter()
    study = load_study(open_bfile(prefix))
    load_s = time.perf_counter() - t
    params = ScanParams(epi1=epi1, device=device)
    run_scan(study, params, engine=make_engine(device))  # warm: kernels, numba, device context
    t = time.perf_counter()
    run_scan(study, params, engine=make_engine(device))
    return time.perf_counter() - t, load_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,500000")
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--missing", default="0,0.01")
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--epi1", type=float, default=5e-6)
    ap.add_argument("--dir", default="/tmp/gboost-bench")
    ap.add_argument("--no-engine", action="store_true", help="skip the in-process run_scan column")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    rows = []
    for p in (int(x) for x in a.sizes.split(",")):
        for m in (float(x) for x in a.missing.split(",")):
            prefix = str(d / f"p{p}_n{a.n}_m{m}")
            if not Path(prefix + ".bed").exists():
                subprocess.run([sys.executable, str(ROOT / "bench" / "make_bed.py"), "--out", prefix, "--snps", str(p),
                                "--samples", str(a.n), "--missing", str(m)], check=True)
            subprocess.run(["cat", prefix + ".bed"], stdout=subprocess.DEVNULL, check=True)  # page cache
            first, _ = command(prefix, d / "out", a.device, a.epi1)
            second, rec = command(prefix, d / "out", a.device, a.epi1)
            scan_s = rec["timings_s"]["total"]
            cmd = rec.get("command_s", {})
            eng = engine_only(prefix, a.device, a.epi1) if not a.no_engine else (float("nan"), float("nan"))
            ps = p * (p - 1) / 2 * a.n
            row = dict(p=p, n=a.n, missing=m, device=rec["device"], first_s=first, second_s=second, scan_s=scan_s,
                       ratio=second / scan_s, command_ps=ps / second, engine_s=eng[0], engine_ps=ps / eng[0],
                       covered=cmd.get("wall_to_run_json", float("nan")) / second, stages=cmd,
                       timings=rec["timings_s"], survivors=rec["counts"]["screened_survivors"])
            rows.append(row)
            print("#", json.dumps(row), flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    print(f"\n{rows[0]['device'] if rows else ''}; commit {commit or '?'}; {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(f"{'p':>7} {'n':>5} {'miss':>5} {'cmd 1st s':>9} {'cmd s':>7} {'scan s':>7} {'cmd/scan':>8} "
          f"{'cmd pair·smp/s':>14} {'engine s':>8} {'engine pair·smp/s':>17} {'covered':>7} {'surv':>7}")
    for r in rows:
        print(f"{r['p']:>7} {r['n']:>5} {r['missing']:>5} {r['first_s']:>9.2f} {r['second_s']:>7.2f} {r['scan_s']:>7.2f} "
              f"{r['ratio']:>8.2f} {r['command_ps']:>14.3g} {r['engine_s']:>8.2f} {r['engine_ps']:>17.3g} "
              f"{100 * r['covered']:>6.1f}% {r['survivors']:>7}")
    for r in rows:
        print(f"  p={r['p']} missing={r['missing']}: " + ", ".join(f"{k} {v:.2f}" for k, v in r["stages"].items()))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
