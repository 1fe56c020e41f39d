"""GPU engine throughput: whole scans of simulated studies, the kernel's share, the device's ceilings.

    python bench/bench_gpu.py                      # p = 10k, 100k, 500k; n = 5,000; both counting paths
    python bench/bench_gpu.py --sizes 10000,50000 --n 2000 --missing 0.01 --countings mma
    python bench/bench_gpu.py --sizes 500000 --missing 0.01 --countings popc --no-cpu   # the CUDA-core path
    python bench/bench_gpu.py ... --json rows.json   # the rows as JSON too (nothing is written otherwise)

The engine alone, the figure SPEC section 7 reports beside the command's (bench/bench_cli.py), its
CUDA-core popcount row (``--countings popc``) and the device ceilings it cites: pair·samples/s =
p(p-1)/2 x n / wall time of the whole scan (``run_scan``: screen + exact test + summaries + marginal
tests; simulation and loading excluded). Needs a GPU.

Studies are simulated on the GPU (Hardy-Weinberg genotypes, MAF uniform in ``--maf``, optional
missing calls, no planted signal), so even 500k x 5k takes seconds to make. Besides the scan the
script measures:

* kernel s: device time of the screen kernels (CUDA events, ``GpuEngine.kernel_seconds``);
* prep s: the engine's set-up (planes uploaded and laid out, tables, kernels already compiled);
* marg s, exact s, calib s: what finalize still waits for after the screen (with a GPU engine the
  marginal tests, the calibration's 200,000 exact tests of random pairs and the survivors' exact
  tests run in the background during the screen); exact s includes the summary fold;
* both counting paths in the same run (``--countings``): binary tensor cores ("mma") and
  CUDA-core popcounts ("popc");
* the popcount ceiling of the device: a kernel that does nothing but AND + 64-bit popcount from
  registers, expressed as the pair·samples/s a one-popcount-per-cell 4-cell count would reach;
* the tensor-core ceiling: m16n8k256 b1 AND+POPC mmas from registers (bit-ops/s, one bit-op = one
  AND+POPC of a bit pair), and the roofline of the tensor-core kernel at ``--roofline-size``: its
  bit-ops/s against that ceiling, and the share of the per-pair epilogue (the kernel timed again
  with counting only, no KSA);
* the CPU engine on the smallest size (``--cpu-size``), for comparison.

Prints a line of JSON per row as it ends (``#``-prefixed), then the device, both ceilings, one table
(a row per engine and size: wall, its parts, kernel seconds, pair·samples/s over the wall and over
the kernel time, the kernel's share of its path's ceiling), each row's idle gaps and the roofline.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gboost.data.encode import ClassLayout  # noqa: E402
from gboost.engines.base import Thresholds  # noqa: E402
from gboost.engines.cpu import CpuEngine  # noqa: E402
from gboost.engines.gpu import GpuEngine, KernelConfig, MmaConfig  # noqa: E402
from gboost.pipeline.scan import ScanParams, run_scan, scan_thresholds  # noqa: E402
from gboost.pipeline.tiles import plan_tiles  # noqa: E402
from gboost.data.study import QCReport, SampleTable, Study, VariantTable  # noqa: E402
from gpu_variants import BenchMmaConfig, mma_ceiling_kernel, popc_ceiling_kernel  # noqa: E402


# Kernel configurations compared with the defaults at --variant-size.
VARIANTS = {
    "popc plain": dict(counting="popc", config=KernelConfig(carry_save=False)),
    "mma 1 blk/SM": dict(counting="mma", mma_config=MmaConfig(min_blocks=(1, 1))),
    "mma 4x2 warps": dict(counting="mma", mma_config=MmaConfig(warps_rows=4, warps_cols=2)),
    "mma f64 epilogue": dict(counting="mma", mma_config=MmaConfig(f32_screen=False)),
    "mma unstaged": dict(counting="mma", mma_config=MmaConfig(stages=0)),
    "mma sfu 0 (table)": dict(counting="mma", mma_config=MmaConfig(sfu_xlogx=0)),
    "mma sfu 1 x(n_ab)": dict(counting="mma", mma_config=MmaConfig(sfu_xlogx=1)),
    "mma logf": dict(counting="mma", mma_config=MmaConfig(fast_log=False)),
    "mma 4 stages 1 step/bar": dict(counting="mma", mma_config=MmaConfig(stages=4, bar_steps=1)),
    "mma 8 stages 1 step/bar": dict(counting="mma", mma_config=MmaConfig(stages=8, bar_steps=1)),
    "mma 8 stages 2 steps/bar": dict(counting="mma", mma_config=MmaConfig(stages=8, bar_steps=2)),
    "mma 4 stages 2 steps/bar": dict(counting="mma", mma_config=MmaConfig(stages=4, bar_steps=2)),
    "mma default again": dict(counting="mma", mma_config=MmaConfig()),  # run-to-run spread
    "mma 2x4 warps": dict(counting="mma", mma_config=MmaConfig(warps_rows=2, warps_cols=4, min_blocks=(2, 1),
                                                                stages=4, bar_steps=2)),
    "mma 2x8 warps": dict(counting="mma", mma_config=MmaConfig(warps_cols=8, min_blocks=(1, 1))),
    "mma 4x4 warps": dict(counting="mma", mma_config=MmaConfig(warps_rows=4, warps_cols=4, min_blocks=(1, 1))),
    "mma no xbar": dict(counting="mma", mma_config=BenchMmaConfig(defines=("GM_XBAR=0",))),
    # Probes of the missing-call pre-screen (wrong results; timing only): its float32 work without any
    # float64 candidate, and with every valid pair a candidate.
    "mma probe f32 only": dict(counting="mma", mma_config=BenchMmaConfig(defines=("GM_PROBE=1",))),
    "mma probe all cand": dict(counting="mma", mma_config=BenchMmaConfig(defines=("GM_PROBE=2",))),
}


def simulate_study(p: int, n: int, n_case: int, maf: tuple[float, float], missing: float, seed: int) -> Study:
    """Random Hardy-Weinberg genotypes, bit-packed on the GPU in chunks of SNPs."""
    import cupy as cp

    layout = ClassLayout(n - n_case, n_case)
    planes = np.empty((p, 3, layout.n_words), np.uint64)
    counts = np.empty((p, 3, 2), np.int64)
    f_all = np.random.default_rng(seed).uniform(*maf, p)
    rs = cp.random.RandomState(seed)
    shifts = cp.arange(64, dtype=cp.uint64)
    chunk = max(1, min(p, (1 << 27) // max(n, 1)))
    for s0 in range(0, p, chunk):
        m = min(chunk, p - s0)
        f = cp.asarray(f_all[s0:s0 + m], dtype=cp.float32)[:, None]
        u = rs.random_sample((m, n), dtype=cp.float32)
        g = (u < f * f).astype(cp.int8) + (u < f * f + 2 * f * (1 - f)).astype(cp.int8)
        if missing > 0:
            g[rs.random_sample((m, n), dtype=cp.float32) < missing] = -1
        w = 0
        for k, (c0, c1) in enumerate(((0, layout.n_ctrl), (layout.n_ctrl, n))):
            words = -(-(c1 - c0) // 64)
            for t in range(3):
                bits = cp.zeros((m, words * 64), dtype=cp.uint64)
                bits[:, : c1 - c0] = g[:, c0:c1] == t
                counts[s0:s0 + m, t, k] = bits.sum(axis=1).get()
                packed = (bits.reshape(m, words, 64) << shifts).sum(axis=2)  # distinct bits: sum = OR
                planes[s0:s0 + m, t, w:w + words] = packed.get()
            w += words
    variants = VariantTable(np.full(p, "1", dtype=object), np.array([f"rs{k + 1}" for k in range(p)], dtype=object),
                            np.zeros(p), np.arange(1, p + 1, dtype=np.int64) * 100,
                            np.full(p, "A", dtype=object), np.full(p, "G", dtype=object))
    ids = np.array([f"s{k + 1}" for k in range(n)], dtype=object)
    status = np.r_[np.ones(n - n_case, np.int8), np.full(n_case, 2, np.int8)]
    samples = SampleTable(ids, ids.copy(), np.zeros(n, np.int8), status)
    return Study(variants=variants, samples=samples, layout=layout, planes=planes, counts=counts,
                 qc=QCReport(samples_in=n, snps_in=p))


def popc_ceiling(device_id: int = 0) -> float:
    """64-bit AND+popcounts per second of the device, from registers (the kernel gb_popc_ceiling)."""
    import cupy as cp

    with cp.cuda.Device(device_id):
        k = popc_ceiling_kernel(device_id)
        rng = np.random.default_rng(7)
        a = cp.asarray(rng.integers(0, 2**63, 1024, dtype=np.uint64))
        b = cp.asarray(rng.integers(0, 2**63, 1024, dtype=np.uint64))
        sms = cp.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
        grid, block = (sms * 16, 1, 1), (256, 1, 1)
        out = cp.empty(grid[0] * block[0], dtype=cp.uint32)
        reps = 2000
        k(grid, block, (a, b, np.int32(reps), out))  # warm-up
        best = float("inf")
        for _ in range(5):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            k(grid, block, (a, b, np.int32(reps), out))
            e1.record()
            e1.synchronize()
            best = min(best, cp.cuda.get_elapsed_time(e0, e1) / 1000.0)
        assert int(out.get().max()) > 0
        return grid[0] * block[0] * reps * 64 / best


def mma_ceiling(device_id: int = 0) -> float:
    """Binary tensor-core bit-ops/s of the device (m16n8k256 AND+POPC from registers, gm_mma_ceiling)."""
    import cupy as cp

    with cp.cuda.Device(device_id):
        k = mma_ceiling_kernel(device_id)
        sms = cp.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
        grid, block = (sms * 8, 1, 1), (256, 1, 1)
        out = cp.empty(grid[0] * block[0], dtype=cp.uint32)
        reps = 4096
        k(grid, block, (np.int32(reps), out))  # warm-up
        best = float("inf")
        for _ in range(5):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            k(grid, block, (np.int32(reps), out))
            e1.record()
            e1.synchronize()
            best = min(best, cp.cuda.get_elapsed_time(e0, e1) / 1000.0)
        assert int(out.get().max()) > 0
        warps = grid[0] * block[0] // 32
        return warps * reps * 8 * 16 * 8 * 256 / best


def screen_kernel_seconds(study: Study, params: ScanParams, engine) -> float:
    """Kernel time of the screen alone (no pipeline), e.g. for the counting-only variant."""
    engine.prepare(study, scan_thresholds(params))
    try:
        for _ in engine.run_tiles(plan_tiles(study.n_snps, engine.tile_snps())):
            pass
        return engine.kernel_seconds
    finally:
        engine.close()


def scan_row(study: Study, params: ScanParams, engine, label: str) -> dict:
    t0 = time.perf_counter()
    res = run_scan(study, params, engine=engine)
    wall = time.perf_counter() - t0
    p, n = study.n_snps, study.n_samples
    pairs = p * (p - 1) // 2
    row = dict(label=label, p=p, n=n, pairs=pairs, wall_s=wall, screen_s=res.timings["screen"],
               exact_s=res.timings["exact"], marginal_s=res.timings["marginal"], prepare_s=res.timings["prepare"],
               calibration_s=res.timings.get("calibration", 0.0),
               screen_call_s=res.timings.get("screen_call", float("nan")),
               finalize_call_s=res.timings.get("finalize_call", float("nan")),
               exact_split=tuple(res.timings.get(k, float("nan")) for k in ("exact_wait", "exact_join", "exact_fold")),
               kernel_s=getattr(engine, "kernel_seconds", float("nan")),
               idle_s=getattr(engine, "idle_seconds", float("nan")),
               idle_gaps=list(getattr(engine, "idle_gaps", [])),
               survivors=int(len(res.screened)), valid=int(res.n_valid), device=res.device)
    row["ps_per_s"] = pairs * n / wall
    row["kernel_ps_per_s"] = pairs * n / row["kernel_s"] if row["kernel_s"] == row["kernel_s"] else float("nan")
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,500000", help="comma-separated SNP counts")
    ap.add_argument("--n", type=int, default=5000, help="samples (half cases unless --cases)")
    ap.add_argument("--cases", type=int, default=None)
    ap.add_argument("--maf", default="0.05,0.5", help="MAF range, uniform")
    ap.add_argument("--missing", type=float, default=0.0, help="missing-call rate")
    ap.add_argument("--epi1", type=float, default=5e-6)
    ap.add_argument("--epi2", type=float, default=0.01)
    ap.add_argument("--cpu-size", type=int, default=None, help="SNPs for the CPU engine row (default: smallest)")
    ap.add_argument("--no-cpu", action="store_true")
    ap.add_argument("--variant-size", type=int, default=None,
                    help="also scan this many SNPs with other kernel configurations (VARIANTS)")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="which VARIANTS to scan at --variant-size (comma-separated labels)")
    ap.add_argument("--countings", default="mma,popc", help="counting paths to scan with, in this order")
    ap.add_argument("--roofline-size", type=int, default=None,
                    help="SNPs for the tensor-core roofline (counting-only kernel time; default: the largest)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None, metavar="PATH", help="also write the rows as JSON to PATH")
    args = ap.parse_args(argv)

    import cupy as cp

    sizes = [int(x) for x in args.sizes.split(",") if x]
    n = args.n
    n_case = args.cases if args.cases is not None else n // 2
    maf = tuple(float(x) for x in args.maf.split(","))
    params = ScanParams(epi1=args.epi1, epi2=args.epi2)

    countings = [c for c in args.countings.split(",") if c]
    roof_p = args.roofline_size or max(sizes)
    count_only = BenchMmaConfig(count_only=True)

    # Warm-up: NVRTC and numba compilation stay out of the timings.
    warm = simulate_study(300, n, n_case, maf, args.missing, args.seed + 99)
    for c in countings:
        run_scan(warm, params, engine=GpuEngine(counting=c))
    # ... and along the survivors' path (exact tests, the fold, the sorted sink): at PLINK's default
    # thresholds 300 SNPs leave no survivor, and a first scan of p = 100k would compile them inside
    # its timing (numba's on-disk cache spares a user's later runs the same).
    if countings:
        run_scan(warm, ScanParams(epi1=0.05, epi2=0.2), engine=GpuEngine(counting=countings[0]))
    variants = {k: VARIANTS[k] for k in args.variants.split(",") if k}
    if args.variant_size:
        for kw in variants.values():
            run_scan(warm, params, engine=GpuEngine(**kw))
    if "mma" in countings:
        screen_kernel_seconds(warm, params, GpuEngine(counting="mma", mma_config=count_only))
    if not args.no_cpu:
        run_scan(warm, params, engine=CpuEngine())

    ceiling = popc_ceiling()
    mma_ceil = mma_ceiling() if "mma" in countings else float("nan")
    rows = []
    roof = None
    for p in sizes:
        t0 = time.perf_counter()
        study = simulate_study(p, n, n_case, maf, args.missing, args.seed)
        print(f"# simulated {p} x {n} in {time.perf_counter() - t0:.1f} s", flush=True)
        for c in countings:
            rows.append(scan_row(study, params, GpuEngine(counting=c), f"gpu {c}"))
            print("#", json.dumps(rows[-1]), flush=True)
        if args.variant_size == p:
            for label, kw in variants.items():
                rows.append(scan_row(study, params, GpuEngine(**kw), f"gpu {label}"))
                print("#", json.dumps(rows[-1]), flush=True)
        if p == roof_p and "mma" in countings:
            full = next(r for r in rows if r["p"] == p and r["label"] == "gpu mma")
            counting_s = screen_kernel_seconds(study, params, GpuEngine(counting="mma", mma_config=count_only))
            ks = -(-study.layout.w_ctrl // 4) + -(-study.layout.w_case // 4)
            cells = 9 if study.has_missing.any() else 4
            bitops = full["pairs"] * cells * ks * 256
            roof = dict(p=p, kernel_s=full["kernel_s"], counting_s=counting_s, bitops=bitops,
                        bitops_per_s=bitops / full["kernel_s"], counting_bitops_per_s=bitops / counting_s,
                        epilogue_share=1.0 - counting_s / full["kernel_s"])
            print("# roofline", json.dumps(roof), flush=True)
        if not args.no_cpu and p == (args.cpu_size or min(sizes)):
            rows.append(scan_row(study, params, CpuEngine(), "cpu"))
            print("#", json.dumps(rows[-1]), flush=True)
        del study

    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"\ndevice: {name}; CuPy {cp.__version__}; {platform.node()}; commit {commit or '?'}; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(f"study: n = {n} ({n_case} cases), MAF {maf[0]}-{maf[1]}, missing {args.missing}; "
          f"epi1 {args.epi1}, epi2 {args.epi2}")
    print(f"popcount ceiling: {ceiling:.3e} AND+popc64/s = {16 * ceiling:.3e} pair·samples/s for a 4-cell count "
          f"with one popcount per 64-bit cell-word")
    print(f"tensor-core ceiling: {mma_ceil:.3e} bit-ops/s (m16n8k256 b1 AND+POPC) = {mma_ceil / 4:.3e} "
          f"pair·samples/s for a 4-cell count")
    hdr = (f"{'engine':<18} {'p':>7} {'n':>5} {'pairs':>9} {'wall s':>8} {'prep s':>6} {'screen s':>8} {'kernel s':>8} "
           f"{'marg s':>6} {'exact s':>7} {'calib s':>7} {'surv':>7} {'pair·smp/s':>10} {'kernel/s':>9} {'ceil%':>6}")
    print(hdr)
    for r in rows:
        if r["label"].startswith("gpu mma"):
            ceil_pct = 100 * r["kernel_ps_per_s"] / (mma_ceil / 4)
        elif r["label"].startswith("gpu"):
            ceil_pct = 100 * r["kernel_ps_per_s"] / (16 * ceiling)
        else:
            ceil_pct = float("nan")
        print(f"{r['label']:<18} {r['p']:>7} {r['n']:>5} {r['pairs']:>9.3g} {r['wall_s']:>8.2f} {r['prepare_s']:>6.2f} "
              f"{r['screen_s']:>8.2f} {r['kernel_s']:>8.2f} {r['marginal_s']:>6.2f} {r['exact_s']:>7.2f} {r['calibration_s']:>7.2f} {r['survivors']:>7} "
              f"{r['ps_per_s']:>10.3g} {r['kernel_ps_per_s']:>9.3g} {ceil_pct:>6.0f}")
    for r in rows:
        print(f"  {r['label']}: screen() {r['screen_call_s']:.2f} s, finalize() {r['finalize_call_s']:.2f} s, "
              f"rest of the wall {r['wall_s'] - r['screen_call_s'] - r['finalize_call_s']:.2f} s; GPU idle before and "
              f"between tiles {r['idle_s']:.3f} s; exact s = "
              "wait for the last row blocks {:.3f} + join them {:.3f} + fold into the summary {:.3f}".format(*r["exact_split"]))
    for r in rows:
        gaps = r.get("idle_gaps") or []
        if gaps:
            top = sorted(gaps, key=lambda g: -g[1])[:6]
            print(f"  {r['label']} p={r['p']}: {len(gaps)} tiles; GPU idle before tile (index: ms) "
                  + ", ".join(f"{k}: {1e3 * s:.1f}" for k, s in top) + f"; median {1e3 * float(np.median([s for _, s in gaps])):.2f} ms")
    print("pair·smp/s = pairs x n / wall of run_scan (screen + exact + summary + marginal + calibration); "
          "kernel/s = the same over kernel time; ceil% = kernel rate / the ceiling of its path (popcount or mma)")
    if roof:
        print(f"roofline p={roof['p']}: tensor-core kernel {roof['kernel_s']:.2f} s = {roof['bitops_per_s']:.3e} bit-ops/s "
              f"({100 * roof['bitops_per_s'] / mma_ceil:.1f}% of the mma ceiling); counting alone {roof['counting_s']:.2f} s "
              f"= {roof['counting_bitops_per_s']:.3e} bit-ops/s ({100 * roof['counting_bitops_per_s'] / mma_ceil:.1f}%); "
              f"epilogue share {100 * roof['epilogue_share']:.0f}% of the kernel time")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(device=name, ceiling_popc64_per_s=ceiling, ceiling_mma_bitops_per_s=mma_ceil,
                                                   roofline=roof, rows=rows), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
