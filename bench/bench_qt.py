"""The quantitative-trait scan: gboost's CPU engine beside PLINK 1.9 --epistasis, and with ``--gpu``
SPEC section 7's QT row (the command on the GPU, 1 % missing calls: 500k x 5k <= 60 s, 100k x 5k <= 4 s).

    python bench/bench_qt.py --snps 3000 --samples 2000 --threads 2

Simulates a QT study (seeded, 1 % missing calls, LD blocks of 10, 5 chromosomes, two planted
interactions), writes it as a PLINK fileset, and runs ``gboost scan`` and ``plink1.9 --epistasis``
as subprocesses with the same thread count (one warm-up run each: numba's compile cache and the
page cache warm; then the fastest of ``--repeat`` runs). Prints wall time, pairs/s and
pair*samples/s of each, gboost's engine-only time (run.json), and whether ``pairs.epi.qt`` and
``pairs.epi.qt.summary`` are byte-identical to PLINK's.

With ``--gpu`` (on the GPU machine) it also runs ``gboost scan --device gpu`` on that study (its
files must equal the CPU engine's and PLINK's) and then the GPU rows: the
command as a subprocess on ``--gpu-sizes`` SNPs x ``--gpu-samples`` samples with 1 % missing
calls (bench/make_bed.py's genotypes, a normal trait written into the .fam), after one warm-up
run on a small study, and its engine-only screen time from run.json beside it. It prints each
run's figures as it ends and then one table; nothing is written outside its temporary folder.

    python bench/bench_qt.py --gpu                # 100k and 500k x 5k; PLINK and the CPU at 3000 x 2000
    python bench/bench_qt.py --gpu --quick        # under a minute on an H100: 20k x 5k, CPU-sized 1500 x 1000

With ``--after-warm`` the caches start empty (a fresh install's): ``gboost warm`` fills them, and
the first scan after it is timed as a row of its own (SPEC section 7's small-study row).

    python bench/bench_qt.py --snps 7600 --samples 950 --threads 2 --repeat 1 --after-warm

With ``--prepare`` (no GPU needed) it times only the host side of the GPU engine's set-up on
``--gpu-sizes`` SNPs x ``--gpu-samples`` samples, each in a fresh process (as a scan pays it):
the dosage decode through the engine's reused host buffer (what precedes the first tile) and the
CPU's view of the study (``qt_planes``, built on a host thread while the tiles run).

    python bench/bench_qt.py --prepare --gpu-sizes 20000,100000
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

import numpy as np  # noqa: E402

from gboost.data.simulate import simulate_qt_study  # noqa: E402


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the child's own rusage) of one run. On a
    machine shared with other work the CPU seconds are the steadier figure."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT] + [x for x in [os.environ.get("PYTHONPATH")] if x]))
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
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
    ap.add_argument("--gpu", action="store_true", help="add gboost --device gpu rows (see above)")
    ap.add_argument("--gpu-sizes", default="100000,500000", help="SNP counts of the GPU rows")
    ap.add_argument("--gpu-samples", type=int, default=5_000)
    ap.add_argument("--gpu-epi1", default="1e-4", help="--epi1 of the GPU rows (PLINK's default)")
    ap.add_argument("--tile", type=int, help="the GPU engine's tile (default: the engine's)")
    ap.add_argument("--gpus", help="the GPU rows' --gpus, e.g. 0,1 (default: every GPU, the command's default)")
    ap.add_argument("--quick", action="store_true", help="small sizes: done in under a minute on an H100")
    ap.add_argument("--prepare", action="store_true", help="time the host side of the GPU engine's set-up only")
    ap.add_argument("--after-warm", action="store_true",
                    help="first a fresh numba (and CuPy) cache filled by `gboost warm`, and the first scan after it timed")
    ap.add_argument("--prepare-one", help=argparse.SUPPRESS)  # the child process of --prepare
    args = ap.parse_args()
    if args.prepare_one:
        return prepare_one(args.prepare_one)
    if args.prepare:
        return prepare_rows(args)
    if args.quick:
        args.snps, args.samples, args.repeat, args.gpu_sizes = 1_500, 1_000, 1, "20000"

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
    out_gpu = os.path.join(work, "gboost_gpu")
    gpu_cmd = [a if a != out else out_gpu for a in gboost_cmd]
    gpu_cmd[gpu_cmd.index("--device") + 1] = "gpu"
    if args.tile:
        gpu_cmd += ["--tile", str(args.tile)]
    if args.gpu:
        tools.append(("gboost-gpu", gpu_cmd))
    table = []
    if args.after_warm:  # a fresh install's caches: what a user's first scan after setup meets
        os.environ["NUMBA_CACHE_DIR"] = os.path.join(work, "numba-cache")
        os.environ["CUPY_CACHE_DIR"] = os.path.join(work, "cupy-cache")
        for d in (os.environ["NUMBA_CACHE_DIR"], os.environ["CUPY_CACHE_DIR"]):
            shutil.rmtree(d, ignore_errors=True)
        wall, _ = timed([sys.executable, "-m", "gboost.cli", "warm", "--device", "auto" if args.gpu else "cpu"])
        print(f"gboost warm on empty caches: {wall:.1f} s")
    print(f"load average before: {os.getloadavg()}")
    for name, cmd in tools:
        first, first_cpu = timed(cmd)  # the warm-up (with --after-warm: the first scan after warm)
        if args.after_warm and name.startswith("gboost"):
            print(f"{name:9s} {first:8.2f} s wall  {first_cpu:8.2f} s CPU  (the first scan after gboost warm)")
            table.append((f"{name} first", args.snps, args.samples, first, pairs))
        wall, cpu = min(timed(cmd) for _ in range(args.repeat))
        rows.append((name, wall))
        table.append((name, args.snps, args.samples, wall, pairs))
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
    if args.gpu:
        files = ("pairs.epi.qt", "pairs.epi.qt.summary", "pairs.tsv", "marginal.tsv")
        same = all(open(os.path.join(out, f), "rb").read() == open(os.path.join(out_gpu, f), "rb").read()
                   for f in files)
        print(f"--device gpu files ({', '.join(files)}) byte-identical to --device cpu: {same}")
        gpu_rows(args, work, table)
    print_table(table)
    return 0


def qt_bed(prefix: str, snps: int, samples: int, seed: int = 22) -> None:
    """make_bed.py's genotypes (HWE, 1 % missing) and a normal trait (mean 10) in the .fam."""
    import numpy as np

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from make_bed import write

    write(prefix, snps, samples, 0.01, seed, chromosomes=5)
    y = 10.0 + np.random.default_rng(seed).standard_normal(samples)
    with open(prefix + ".fam", "w") as fh:
        fh.write("".join(f"f{i}\ti{i}\t0\t0\t{1 + i % 2}\t{y[i]:.6f}\n" for i in range(samples)))


def gpu_rows(args, work: str, table: list) -> None:
    """The GPU rows: a warm-up on a small study (CuPy's kernels compiled, numba's cache read), then
    each size once: wall time of the command and the engine's own times from run.json."""
    def cmd(prefix, out):
        c = [sys.executable, "-m", "gboost.cli", "scan", "--bfile", prefix, "--out", out, "--device", "gpu",
             "--threads", str(args.threads), "--epi1", args.gpu_epi1, "--quiet", "--overwrite"]
        return c + (["--tile", str(args.tile)] if args.tile else []) + (["--gpus", args.gpus] if args.gpus else [])

    warm = os.path.join(work, "warm")
    qt_bed(warm, 3000, args.gpu_samples)
    timed(cmd(warm, os.path.join(work, "warm_out")))
    for p in (int(x) for x in args.gpu_sizes.split(",") if x):
        prefix = os.path.join(work, f"gpu{p}")
        t = time.perf_counter()
        qt_bed(prefix, p, args.gpu_samples)
        print(f"wrote {p} SNPs x {args.gpu_samples} samples in {time.perf_counter() - t:.1f} s")
        out = os.path.join(work, f"gpu{p}_out")
        wall, _ = timed(cmd(prefix, out))
        pairs = p * (p - 1) // 2
        run = json.load(open(os.path.join(out, "run.json")))
        ts = run["timings_s"]
        print(f"gboost-gpu {p} x {args.gpu_samples}: {wall:.2f} s wall, {pairs * args.gpu_samples / wall:.3e} "
              f"pair*samples/s; engine (run.json timings_s): {json.dumps(ts)}; device: {run['device']}; "
              f"counts: {json.dumps(run['counts'])}")
        table.append(("gboost-gpu", p, args.gpu_samples, wall, pairs, ts.get("screen"), ts.get("screen.tiles"),
                      ts.get("screen.exact")))


def prepare_rows(args) -> int:
    """Each size: write the study, then time its host-side set-up in a fresh process, twice (the
    first run may compile numba's cache); the second run's figures are printed."""
    work = args.keep or tempfile.mkdtemp(prefix="gboost-bench-qt-prep-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT] + [x for x in [os.environ.get("PYTHONPATH")] if x]))
    print(f"load average before: {os.getloadavg()}")
    for p in (int(x) for x in args.gpu_sizes.split(",") if x):
        prefix = os.path.join(work, f"prep{p}")
        if not os.path.exists(prefix + ".bed"):
            qt_bed(prefix, p, args.gpu_samples)
        for _ in range(2):
            res = subprocess.run([sys.executable, __file__, "--prepare-one", prefix], check=True, env=env,
                                 capture_output=True, text=True)
        print(f"{p} x {args.gpu_samples}: {res.stdout.strip()}")
    print(f"load average after: {os.getloadavg()}")
    return 0


def prepare_one(prefix: str) -> int:
    from gboost.engines import qt_gpu
    from gboost.engines.qt_cpu import qt_planes
    from gboost.data.inputs import open_input
    from gboost.data.load import load_study

    study = load_study(open_input(bfile=prefix))
    p, n = study.n_snps, study.n_samples
    t = time.perf_counter()
    buf = np.empty((min(qt_gpu.DECODE_ROWS, p), n), np.int8)
    for r0 in range(0, p, qt_gpu.DECODE_ROWS):
        r1 = min(p, r0 + qt_gpu.DECODE_ROWS)
        qt_gpu.dosages(study, slice(r0, r1), buf[:r1 - r0])
    decode = time.perf_counter() - t
    t = time.perf_counter()
    qt_planes(study)
    planes = time.perf_counter() - t
    print(f"decode through the host buffer {decode:.3f} s (before the first tile); qt_planes {planes:.3f} s "
          f"(beside the tiles); {os.cpu_count()} CPUs")
    return 0


def print_table(table: list) -> None:
    head = f"{'tool':11s} {'SNPs':>8s} {'samples':>7s} {'wall s':>9s} {'pair*samples/s':>15s} {'screen s':>9s} " \
           f"{'tiles s':>8s} {'retest s':>8s} {'engine pair*samples/s':>22s}"
    print("\n" + head)
    for row in table:
        name, p, n, wall, pairs = row[:5]
        extra = row[5:] + (None,) * (3 - len(row[5:]))
        screen, tiles, exact = extra
        eng = f"{pairs * n / screen:22.3e}" if screen else f"{'':22s}"
        cells = [f"{v:9.2f}" if v is not None else f"{'':9s}" for v in (screen,)]
        cells += [f"{v:8.2f}" if v is not None else f"{'':8s}" for v in (tiles, exact)]
        print(f"{name:11s} {p:8d} {n:7d} {wall:9.2f} {pairs * n / wall:15.3e} {' '.join(cells)} {eng}")


if __name__ == "__main__":
    sys.exit(main())
