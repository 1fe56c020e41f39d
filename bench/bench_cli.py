"""The command a user runs, timed as a subprocess, beside the engine alone: SPEC section 7's figure of
merit (pair·samples/s of `gboost scan` from start to exit) and its missing-calls row (1 % vs none).

    python bench/bench_cli.py --sizes 100000,500000 --n 5000 --missing 0,0.01 --device gpu --maker fast
    python bench/bench_cli.py --sizes 10000 --n 2000 --missing 0,0.01 --device cpu      # a CPU-sized study
    python bench/bench_cli.py ... --json rows.json      # the rows as JSON too (nothing is written otherwise)

For each size and missing-call rate: a PLINK fileset (``--maker simulate``: `gboost simulate
--missing`, the case-control model with a planted pair; ``--maker fast``: bench/make_bed.py, random
HWE genotypes, seconds at 500k x 5k; ``--maker realistic``: bench/make_bed.py as a real cohort's chip
looks, LD blocks of 20 SNPs at rho 0.9, 22 autosomes and an X where males are homozygous, MAF down to
0.005, 2 % of the samples of unknown sex, so that they are founders but not scanned; the default takes
the first up to 1e8 genotypes), then
`gboost scan --bfile … --out …` as a subprocess, the .bed in the page cache: once with the caches
as earlier runs left them, then ``--repeat`` warm runs of which the fastest is shown. Prints a line
of JSON per row as it ends (``#``-prefixed), then one table, a row per size and rate:

* cmd 1st s, cmd s: wall of the subprocess, start to exit, first and second run; pair·samples/s
  of the second (the figure of merit);
* scan s: run.json's scan stage (timings_s "total": prepare + screen + exact + marginal), and the
  ratio command / scan (goal <= 1.25);
* engine s: `run_scan` in this process on the study already loaded (the engine alone), and its
  pair·samples/s;
* covered: run.json's command_s stages summed, over the wall measured here (goal: within 2 %);
* then the second run's stages (command_s, gboost/pipeline/stages.py) and each output file's seconds.

``--repo DIR`` times another checkout's gboost (e.g. an older commit unpacked with git archive),
for before/after figures on the same machine. The filesets stay in ``--dir`` for the next run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_fileset(prefix: str, p: int, n: int, missing: float, maker: str, repo: Path) -> None:
    if Path(prefix + ".bed").exists():
        return
    if maker in ("fast", "realistic"):
        cmd = [sys.executable, str(ROOT / "bench" / "make_bed.py"), "--out", prefix, "--snps", str(p),
               "--samples", str(n), "--missing", str(missing)]
        if maker == "realistic":
            cmd += ["--ld-block", "20", "--ld-rho", "0.9", "--chromosomes", "23", "--x", "--maf-min", "0.005",
                    "--unknown-sex", "0.02", "--seed", "24"]
    else:
        cmd = [sys.executable, "-m", "gboost.cli", "simulate", "--out", prefix, "--snps", str(p), "--cases",
               str(n // 2), "--controls", str(n - n // 2), "--seed", "24", "--missing", str(missing),
               "--chromosomes", "22", "--plant", f"10:{p // 2}:xor:3"]
    subprocess.run(cmd, check=True, cwd=ROOT, env=_env(ROOT), stdout=subprocess.DEVNULL)


def _env(repo: Path) -> dict:
    """This environment with ``repo`` first on the path (packages installed elsewhere stay)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (str(repo), os.environ.get("PYTHONPATH")) if x)}


def command(prefix: str, out: Path, device: str, epi1: float, repo: Path) -> tuple[float, dict]:
    return scan(prefix, out, device, ["--epi1", str(epi1)], repo)


def ld_fileset(folder: Path, p: int, n: int) -> str:
    """The prefix of bench/make_bed.py's fileset of ``p`` SNPs x ``n`` samples in ``folder`` (random HWE
    genotypes, LD blocks of 20 SNPs at rho 0.9, 1 % missing calls), written on first use: the
    permutation and candidate-set benchmarks' study."""
    folder.mkdir(parents=True, exist_ok=True)
    prefix = str(folder / f"ld_{p}_{n}")
    if not Path(prefix + ".bed").exists():
        subprocess.run([sys.executable, str(ROOT / "bench" / "make_bed.py"), "--out", prefix, "--snps", str(p),
                        "--samples", str(n), "--missing", "0.01", "--ld-block", "20", "--ld-rho", "0.9"],
                       check=True, cwd=ROOT, env=_env(ROOT), stdout=subprocess.DEVNULL)
    return prefix


def scan(prefix: str, out: Path, device: str, extra: list[str], repo: Path = ROOT) -> tuple[float, dict]:
    """`gboost scan --bfile prefix --out out --device device --quiet *extra` of the tree ``repo`` as a
    subprocess: (wall seconds, its run.json)."""
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gboost.cli", "scan", "--bfile", prefix, "--out", str(out), "--device",
                    device, "--quiet", *extra], check=True, cwd=repo, env=_env(repo))
    return time.perf_counter() - t, json.loads((out / "run.json").read_text())


def engine_only(prefix: str, device: str, epi1: float, repeat: int = 1) -> float:
    from gboost.engines import make_engine
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study
    from gboost.pipeline.scan import ScanParams, run_scan

    study = load_study(open_bfile(prefix))
    params = ScanParams(epi1=epi1, device=device)
    run_scan(study, params, engine=make_engine(device))  # warm: kernels, numba, device context
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        run_scan(study, params, engine=make_engine(device))
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,500000", help="SNP counts, comma-separated")
    ap.add_argument("--n", type=int, default=5000, help="samples")
    ap.add_argument("--missing", default="0,0.01", help="missing-call rates, comma-separated")
    ap.add_argument("--device", default="gpu", choices=("cpu", "gpu", "auto"))
    ap.add_argument("--maker", default="auto", choices=("auto", "simulate", "fast", "realistic"),
                    help="how the filesets are written (simulate: gboost simulate; fast: bench/make_bed.py; "
                         "realistic: bench/make_bed.py with LD, X, rare alleles and unknown sex; "
                         "auto: simulate up to 1e8 genotypes, fast beyond)")
    ap.add_argument("--epi1", type=float, default=5e-6)
    ap.add_argument("--dir", default="/tmp/gboost-bench")
    ap.add_argument("--repo", default=str(ROOT), help="the gboost checkout to time (default: this one)")
    ap.add_argument("--repeat", type=int, default=1, help="warm runs of the command; the fastest is shown")
    ap.add_argument("--no-engine", action="store_true", help="skip the in-process run_scan column")
    ap.add_argument("--json", default=None, metavar="PATH", help="also write the rows as JSON to PATH")
    a = ap.parse_args()
    repo = Path(a.repo).resolve()
    sys.path.insert(0, str(repo))
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    rows = []
    for p in (int(x) for x in a.sizes.split(",")):
        for m in (float(x) for x in a.missing.split(",")):
            maker = a.maker if a.maker != "auto" else ("simulate" if p * a.n <= 1e8 else "fast")
            prefix = str(d / f"{maker}_p{p}_n{a.n}_m{m}")
            make_fileset(prefix, p, a.n, m, maker, repo)
            subprocess.run(["cat", prefix + ".bed"], stdout=subprocess.DEVNULL, check=True)  # page cache
            first, _ = command(prefix, d / "out", a.device, a.epi1, repo)
            # The warm run with the least wall (a shared machine's noise only ever adds time).
            second, rec = min((command(prefix, d / "out", a.device, a.epi1, repo) for _ in range(a.repeat)),
                              key=lambda x: x[0])
            scan_s = rec["timings_s"]["total"]
            cmd = rec.get("command_s") or {}
            eng = engine_only(prefix, a.device, a.epi1, a.repeat) if not a.no_engine else float("nan")
            # The pairs and samples the scan tested (the realistic maker's X SNPs and unknown-sex samples
            # are not scanned, as in PLINK); p (p - 1) / 2 x n for the other makers.
            ps = rec["counts"]["pairs"] * rec["counts"]["samples"]
            row = dict(p=p, n=a.n, missing=m, device=rec["device"], first_s=first, second_s=second, scan_s=scan_s,
                       ratio=second / scan_s, command_ps=ps / second, engine_s=eng, engine_ps=ps / eng,
                       covered=cmd.get("stages_sum", float("nan")) / second, stages=cmd.get("stages", {}),
                       files=cmd.get("files", {}), background=cmd.get("background", {}), timings=rec["timings_s"],
                       survivors=rec["counts"]["screened_survivors"])
            rows.append(row)
            print("#", json.dumps(row), flush=True)
    # GBOOST_COMMIT: set by the caller where the checkout's .git is not this tree's (the device's copy)
    commit = os.environ.get("GBOOST_COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                                               text=True, cwd=repo).stdout.strip()
    print(f"\n{rows[0]['device'] if rows else ''}; gboost at {repo} (commit {commit or '?'}); {os.cpu_count()} CPUs; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(f"{'p':>7} {'n':>5} {'miss':>5} {'cmd 1st s':>9} {'cmd s':>7} {'scan s':>7} {'cmd/scan':>8} "
          f"{'cmd pair·smp/s':>14} {'engine s':>8} {'engine pair·smp/s':>17} {'covered':>7} {'surv':>7}")
    for r in rows:
        print(f"{r['p']:>7} {r['n']:>5} {r['missing']:>5} {r['first_s']:>9.2f} {r['second_s']:>7.2f} {r['scan_s']:>7.2f} "
              f"{r['ratio']:>8.2f} {r['command_ps']:>14.3g} {r['engine_s']:>8.2f} {r['engine_ps']:>17.3g} "
              f"{100 * r['covered']:>6.1f}% {r['survivors']:>7}")
    for r in rows:
        print(f"  p={r['p']} missing={r['missing']}: " + ", ".join(f"{k} {v:.3f}" for k, v in r["stages"].items()))
        if r["files"]:
            print("    files: " + ", ".join(f"{k} {v.get('format', 0):.3f}+{v.get('write', 0):.3f} s"
                                          for k, v in r["files"].items()))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
