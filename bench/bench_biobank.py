"""Biobank scale on one GPU: the command a user runs on 200k SNPs x 200k samples (SPEC section 7's
row "200k SNPs x 200k samples, 1 % missing", goal <= 25 s on an H100), timed as a subprocess.

    python bench/bench_biobank.py --quick          # 20k x 20k: under 2 minutes, to try first
    python bench/bench_biobank.py                  # 200k x 200k (a 10 GB .bed), 1 % missing calls

Steps, each printed as it ends and summed up in one table at the end (a line per figure, its goal
beside it); nothing is written but the filesets and outputs in ``--dir``:

1. The study: bench/make_bed.py with 1 % missing calls, LD blocks (50 SNPs, rho 0.9), 22
   chromosomes and a planted interacting pair (odds ratio chosen from n so that its statistic is
   about 300 at any size); skipped when the fileset is there already (its .planted file names the
   pair). Its seconds are the writer's speed.
2. `gboost scan --bfile ... --device gpu` as a subprocess under `/usr/bin/time -v` (without it:
   the child's VmHWM, polled), its stderr on
   a pseudo-terminal so that the progress bar draws: wall, run.json's stages, the rate
   (pair·samples/s over the wall), peak RSS over the .bed's size (goal <= 2), the ETA shown at the
   first redraw at or past 10 % against the time the bar then took to reach 100 % (goal: within
   20 %) and against the command's end, and whether the planted pair is in pairs.tsv (its rank).
3. The forced budget: a smaller study (100k x 50k; --quick 20k x 10k) scanned once as it is and
   once with GBOOST_GPU_MEMORY_LIMIT set to its planes' size (the engine keeps planes resident
   only within half its budget, so they stream from page-locked host memory): the screen's rate
   (run.json's screen seconds) of each and their ratio (goal >= 80 %).
4. GPU = CPU on a sub-block: --extract of 2 x 1000 SNPs around the planted SNPs of the big study,
   scanned by both engines; pairs.tsv, pairs.epi.cc, .summary and marginal.tsv byte for byte, and
   the planted pair found there too.
5. Only with ``--over``: a real study whose planes are larger than the GPU's memory (default 100k
   SNPs x 2.2M samples: a 55 GB .bed, 82.5 GB of planes against an H100's 80 GB; ``--over-size``),
   scanned as it is, with no forced budget, then a quarter of its SNPs (--extract around the planted
   pair: planes that stay resident) from the same fileset: the screen's rate of each (goal: the
   whole study >= 80 % of the quarter's), peak RSS, the planted pair. The device's 64 GB disk holds
   one such fileset; ``--over-write-only`` writes it and stops (so that a second command on the
   same machine scans it within its own time limit).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pty
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import make_bed  # noqa: E402  (bench/make_bed.py)

OUTPUTS = ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv")
BAR = re.compile(r"\[[#.]+\]\s+([\d.]+)%.*?ETA (\d+:\d\d(?::\d\d)?|--:--)")


def effect_for(n: int) -> float:
    """Odds ratio per a*b copy of the planted pair giving a statistic near 300 at n samples (29
    at n = 4000 for 1.5, measured; the statistic grows as n ln(R)^2)."""
    return float(min(3.0, math.exp(math.log(1.5) * math.sqrt(300 / 29 * 4000 / n))))


def make_study(prefix: str, snps: int, samples: int, missing: float) -> dict:
    bed = Path(prefix + ".bed")
    if bed.exists() and bed.stat().st_size == 3 + snps * ((samples + 3) // 4) and Path(prefix + ".planted").exists():
        return {"seconds": None, "planted": Path(prefix + ".planted").read_text().split()[:2]}
    for ext in (".bed", ".bim", ".fam", ".planted"):
        Path(prefix + ext).unlink(missing_ok=True)
    make_bed.warm()
    info = make_bed.write(prefix, snps, samples, missing, seed=21, chromosomes=22, ld_block=50, ld_rho=0.9,
                          plant=effect_for(samples))
    print(f"  wrote {prefix}.bed ({bed.stat().st_size / 1e9:.2f} GB): {info['seconds']['total']:.1f} s "
          f"(.bed {info['seconds']['bed']:.1f} s, {snps * samples / info['seconds']['bed']:.3g} calls/s)", flush=True)
    return info


def _env(extra: dict | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (str(ROOT), os.environ.get("PYTHONPATH")) if x)}
    env.pop("GBOOST_GPU_MEMORY_LIMIT", None)
    env.update(extra or {})
    return env


def scan(prefix: str, out: Path, device: str, args: list[str] = (), env: dict | None = None) -> dict:
    """`gboost scan` as a subprocess under /usr/bin/time -v, stderr on a pty (the progress bar)."""
    shutil.rmtree(out, ignore_errors=True)
    timefile = out.with_suffix(".time")
    timed = os.path.exists("/usr/bin/time")  # else the child's VmHWM, polled (its last reading)
    cmd = (["/usr/bin/time", "-v", "-o", str(timefile)] if timed else []) + [
        sys.executable, "-m", "gboost.cli", "scan", "--bfile", prefix, "--out", str(out), "--device", device, *args]
    master, slave = pty.openpty()
    chunks: list[tuple[float, str]] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append((time.perf_counter(), data.decode(errors="replace")))

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=slave)
    os.close(slave)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    hwm = 0
    while not timed and proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as fh:
                hwm = max(hwm, next(int(x.split()[1]) for x in fh if x.startswith("VmHWM")))
        except (OSError, StopIteration):
            pass
        time.sleep(0.05)
    rc = proc.wait()
    wall = time.perf_counter() - t0
    reader.join(5)
    os.close(master)
    text = "".join(c for _, c in chunks)
    if rc != 0:
        raise SystemExit(f"gboost scan failed (exit {rc}):\n{text[-3000:]}")
    rss_kb = hwm or None
    for line in (timefile.read_text().splitlines() if timed else []):
        if "Maximum resident set size" in line:
            rss_kb = int(line.split(":")[1])
    bars = []  # (seconds since start, percent, eta seconds or None)
    for t, chunk in chunks:
        for m in BAR.finditer(chunk):
            eta = None if m.group(2) == "--:--" else sum(int(x) * 60 ** k for k, x in enumerate(reversed(m.group(2).split(":"))))
            bars.append((t - t0, float(m.group(1)), eta))
    return {"wall": wall, "rss": (rss_kb or 0) * 1024, "run": json.loads((out / "run.json").read_text()), "bars": bars,
            "log": text}


def eta_check(res: dict) -> dict:
    """The ETA at the first redraw at or past 10 % against what followed."""
    bars = res["bars"]
    first = next((b for b in bars if b[1] >= 10.0 and b[2] is not None), None)
    done = next((b for b in bars if b[1] >= 100.0), None)
    if first is None or done is None or done[0] <= first[0]:
        return {"at": None, "shown": None, "to_100": None, "to_end": None, "err": None, "err_end": None, "redraws": len(bars)}
    to_100, to_end = done[0] - first[0], res["wall"] - first[0]
    return {"at": first[1], "shown": first[2], "to_100": to_100, "to_end": to_end,
            "err": first[2] / to_100 - 1.0, "err_end": first[2] / to_end - 1.0, "redraws": len(bars)}


def planted_rank(out: Path, pair: list[str]) -> tuple[int | None, str | None]:
    """1-based row of the planted pair in pairs.tsv (STAT descending) and its P."""
    with open(out / "pairs.tsv") as fh:
        head = fh.readline().rstrip("\n").split("\t")
        s1, s2, pc = head.index("SNP1"), head.index("SNP2"), head.index("P")
        for k, line in enumerate(fh, 1):
            f = line.rstrip("\n").split("\t")
            if {f[s1], f[s2]} == set(pair):
                return k, f[pc]
    return None, None


def rate(run: dict, seconds: float) -> float:
    c = run["counts"]
    return c["pairs"] * c["samples"] / seconds if seconds > 0 else float("nan")


def stages(run: dict) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in run.get("command_s", {}).get("stages", {}).items())


def gpu_info(run: dict) -> str:
    """run.json's engine_info in words: where the planes were, and how long the GPU waited before
    and between tiles against the mean tile (the goal: never idle for more than a tile)."""
    e = run.get("engine_info")
    if not e:
        return "no engine_info in run.json"
    return (f"planes {e['planes']}, {e['tiles']} tiles (mean {e['mean_tile_kernel_s']:.3f} s of kernel); GPU idle "
            f"{e['gpu_idle_s']:.2f} s in all, {e['gpu_idle_longest_s']:.3f} s at most once")


def planes_bytes(prefix: str) -> int:
    """Bytes of the study's bit planes (every SNP kept): 3 planes x words of each class x 8."""
    status = [line.split()[5] for line in open(prefix + ".fam")]
    w = -(-status.count("1") // 64) + -(-status.count("2") // 64)
    snps = sum(1 for _ in open(prefix + ".bim"))
    return snps * 3 * w * 8


def over_step(work: Path, a) -> list[tuple[str, str]]:
    """Step 5: the study larger than the GPU's memory, then a resident quarter of it (same fileset)."""
    snps, samples = (int(x) for x in a.over_size.split("x"))
    prefix = str(work / f"over_{snps}x{samples}")
    info = make_study(prefix, snps, samples, a.missing)
    bed_bytes = os.path.getsize(prefix + ".bed")
    rows = [("over: study", f"{snps} x {samples}: .bed {bed_bytes / 1e9:.1f} GB, planes {planes_bytes(prefix) / 1e9:.1f} GB"
                            + (f"; written in {info['seconds']['bed']:.0f} s" if info["seconds"] else "; present"))]
    if a.over_write_only:
        return rows
    pair = info["planted"]
    common = ["--calibration-pairs", "0"]
    whole = scan(prefix, work / "out_over", a.device, common)
    run = whole["run"]
    rank, p = planted_rank(work / "out_over", pair)
    idx = [int(x[3:]) for x in pair]
    q = snps // 8
    keep = sorted({j for c in idx for j in range(max(0, c - q // 2), min(snps, c + q // 2))})
    extract = work / "over_extract.txt"
    extract.write_text("".join(f"snp{j}\n" for j in keep))
    part = scan(prefix, work / "out_over_quarter", a.device, common + ["--extract", str(extract)])
    r_w = rate(run, run["timings_s"]["screen"])
    r_q = rate(part["run"], part["run"]["timings_s"]["screen"])
    # The quarter is a tile or two: its screen stage is mostly the wait for its planes before the
    # first tile, so its kernel rate (run.json engine_info) is the resident rate to compare with.
    k_q = rate(part["run"], part["run"].get("engine_info", {}).get("kernel_s", float("nan")))
    rows += [
        ("over: device", run["device"]),
        ("over: whole", f"wall {whole['wall']:.1f} s, screen {run['timings_s']['screen']:.1f} s = {r_w:.3g} "
                        f"pair*samples/s; {gpu_info(run)}; stages {stages(run)}"),
        ("over: peak RSS", f"{whole['rss'] / 1e9:.1f} GB = {whole['rss'] / bed_bytes:.2f} x the .bed (goal <= 2)"),
        ("over: quarter", f"{len(keep)} SNPs: wall {part['wall']:.1f} s, screen {part['run']['timings_s']['screen']:.1f} s "
                          f"= {r_q:.3g} pair*samples/s; {gpu_info(part['run'])}"),
        ("over: ratio", f"whole screen {r_w / k_q:.0%} of the quarter's resident kernel rate {k_q:.3g} (goal >= 80 %); "
                        f"{r_w / r_q:.0%} of its screen stage"),
        ("over: planted", f"{'/'.join(pair)}: " + (f"row {rank} of pairs.tsv, P {p}" if rank else "NOT FOUND")),
    ]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/tmp/gboost_biobank", help="where the filesets and outputs go (~12 GB)")
    ap.add_argument("--snps", type=int, default=200_000)
    ap.add_argument("--samples", type=int, default=200_000)
    ap.add_argument("--stream-snps", type=int, default=100_000)
    ap.add_argument("--stream-samples", type=int, default=50_000)
    ap.add_argument("--sub", type=int, default=1000, help="SNPs each side of a planted SNP in the GPU = CPU sub-block")
    ap.add_argument("--missing", type=float, default=0.01)
    ap.add_argument("--budget", type=float, default=1.0, metavar="X",
                    help="forced GPU budget as a multiple of the planes' size (below 2 they stream; default 1)")
    ap.add_argument("--quick", action="store_true", help="20k x 20k, forced budget on 20k x 10k: under 2 minutes")
    ap.add_argument("--device", default="gpu", help="engine of the big and budget scans (cpu: to try the bench "
                                                    "itself on a small study without a GPU)")
    ap.add_argument("--skip", default="", help="comma-separated steps to leave out: big, stream, sub")
    ap.add_argument("--over", action="store_true", help="step 5: a study larger than the GPU's memory")
    ap.add_argument("--over-size", default="100000x2200000", help="SNPs x samples of step 5")
    ap.add_argument("--over-write-only", action="store_true", help="write step 5's fileset and stop")
    a = ap.parse_args()
    if a.quick:
        a.snps, a.samples, a.stream_snps, a.stream_samples = 20_000, 20_000, 20_000, 10_000
    skip = set(filter(None, a.skip.split(",")))
    work = Path(a.dir)
    work.mkdir(parents=True, exist_ok=True)
    big = str(work / f"bb_{a.snps}x{a.samples}")
    rows: list[tuple[str, str]] = []
    t_all = time.perf_counter()
    print(f"# bench_biobank {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
          f"{a.snps} x {a.samples}, {a.missing:.0%} missing", flush=True)

    t = time.perf_counter()  # numba's caches (and NVRTC's) filled first: no scan below is charged for them
    subprocess.run([sys.executable, "-m", "gboost.cli", "warm"], cwd=ROOT, env=_env(), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows.append(("gboost warm", f"{time.perf_counter() - t:.1f} s (before the timed runs)"))
    info = make_study(big, a.snps, a.samples, a.missing)
    pair = info["planted"]
    bed_bytes = os.path.getsize(big + ".bed")
    if info["seconds"] is not None:
        s = info["seconds"]
        rows.append(("write .bed", f"{s['bed']:.1f} s for {bed_bytes / 1e9:.2f} GB ({a.snps * a.samples / s['bed']:.3g} "
                                   f"calls/s; all files {s['total']:.1f} s)"))
    else:
        rows.append(("write .bed", "present, not rewritten"))

    if "big" not in skip:
        out = work / "out_big"
        res = scan(big, out, a.device)
        run = res["run"]
        eta = eta_check(res)
        rank, p = planted_rank(out, pair)
        print(f"  big scan: wall {res['wall']:.1f} s; device {run['device']}\n  stages: {stages(run)}", flush=True)
        rows += [
            ("device", run["device"]),
            ("big: wall", f"{res['wall']:.1f} s (goal <= 60 s)"),
            ("big: rate", f"{rate(run, res['wall']):.3g} pair*samples/s over the wall; screen alone "
                          f"{rate(run, run['timings_s']['screen']):.3g} ({run['timings_s']['screen']:.1f} s)"),
            ("big: stages", stages(run)),
            ("big: GPU", gpu_info(run)),
            ("big: peak RSS", f"{res['rss'] / 1e9:.2f} GB = {res['rss'] / bed_bytes:.2f} x the .bed (goal <= 2)"),
            ("big: ETA", "no redraw at >= 10 % with an ETA (too fast?)" if eta["err"] is None else
             f"at {eta['at']:.1f} %: {eta['shown']} s shown (whole seconds), bar reached 100 % {eta['to_100']:.1f} s later "
             f"({eta['err']:+.0%}), command ended {eta['to_end']:.1f} s later ({eta['err_end']:+.0%}); goal within 20 %"),
            ("big: planted pair", f"{'/'.join(pair)}: " + (f"row {rank} of pairs.tsv, P {p}" if rank else "NOT FOUND")),
        ]

    if "stream" not in skip:
        small = str(work / f"bb_{a.stream_snps}x{a.stream_samples}")
        make_study(small, a.stream_snps, a.stream_samples, a.missing)
        budget = int(a.budget * planes_bytes(small))
        common = ["--quiet", "--calibration-pairs", "0"]
        normal = scan(small, work / "out_resident", a.device, common)
        forced = scan(small, work / "out_stream", a.device, common, env={"GBOOST_GPU_MEMORY_LIMIT": str(budget)})
        r_in = rate(normal["run"], normal["run"]["timings_s"]["screen"])
        r_st = rate(forced["run"], forced["run"]["timings_s"]["screen"])
        same = all((work / "out_resident" / f).read_bytes() == (work / "out_stream" / f).read_bytes() for f in OUTPUTS)
        rows += [
            ("budget: study", f"{a.stream_snps} x {a.stream_samples}, planes {planes_bytes(small) / 1e9:.2f} GB; forced budget "
                              f"GBOOST_GPU_MEMORY_LIMIT={budget}"),
            ("budget: in memory", f"screen {normal['run']['timings_s']['screen']:.2f} s, {r_in:.3g} pair*samples/s; "
                                  f"wall {normal['wall']:.1f} s"),
            ("budget: streaming", f"screen {forced['run']['timings_s']['screen']:.2f} s, {r_st:.3g} pair*samples/s; "
                                  f"wall {forced['wall']:.1f} s; {gpu_info(forced['run'])}"),
            ("budget: ratio", f"{r_st / r_in:.0%} of the in-memory rate (goal >= 80 %); outputs "
                              f"{'identical' if same else 'DIFFER'}"),
        ]

    if "sub" not in skip:
        extract = work / "sub_extract.txt"
        idx = [int(x[3:]) for x in pair]
        snps = sorted({j for c in idx for j in range(max(0, c - a.sub), min(a.snps, c + a.sub))})
        extract.write_text("".join(f"snp{j}\n" for j in snps))
        common = ["--quiet", "--extract", str(extract)]
        g = scan(big, work / "out_sub_gpu", a.device, common)
        c = scan(big, work / "out_sub_cpu", "cpu", common)
        diff = [f for f in OUTPUTS if (work / "out_sub_gpu" / f).read_bytes() != (work / "out_sub_cpu" / f).read_bytes()]
        rank, p = planted_rank(work / "out_sub_gpu", pair)
        rows += [
            ("sub-block", f"{len(snps)} SNPs x {a.samples} (--extract around the planted SNPs): GPU {g['wall']:.1f} s, "
                          f"CPU {c['wall']:.1f} s; {len(OUTPUTS) - len(diff)}/{len(OUTPUTS)} outputs byte-identical"
                          + (f" (DIFFER: {', '.join(diff)})" if diff else "")),
            ("sub-block: planted", f"row {rank} of pairs.tsv, P {p}" if rank else "NOT FOUND"),
        ]

    if a.over:
        rows += over_step(work, a)

    print(f"\n# biobank scale; total {time.perf_counter() - t_all:.0f} s")
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
