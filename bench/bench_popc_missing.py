"""The CUDA-core path on data with missing calls: blocks counted by correction (mode 4,
gboost/engines/gpu/missing_lists.py) against the direct count of 9 products (the modes <2,3>, <3,2>,
<3,3>, which the engine takes where no SNP is listed), kernel seconds of the whole screen: the
engine's kernels alone on SPEC section 7's CUDA-core popcount row with missing calls. Needs a GPU.

    python bench/bench_popc_missing.py --p 200000 --n 5000 --missing 0,0.001,0.01,0.05
    python bench/bench_popc_missing.py ... --json rows.json   # the rows as JSON too (nothing is written otherwise)

Studies are simulated on the GPU (bench_gpu.simulate_study: Hardy-Weinberg, MAF uniform in 0.05-0.5,
missing calls at random). Each row is the screen alone (``screen_kernel_seconds``: every tile, no exact
tests) with the default CUDA-core build; "direct" is the same build with no SNP listed
(missing_lists.LIST_MAX = -1 in this process, the engine's path for SNPs with long lists), and
"minb2" the mode-4 kernel compiled for 2 blocks per SM (GB_MINB2C=2) instead of 3. Variants alternate
over ``--rounds``. The survivors of each variant must equal the default's (the GPU tests compare the
tables themselves). Prints one table, a line per rate, variant and round: kernel seconds,
pair·samples/s over them, SNPs listed, survivors.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gpu import simulate_study  # noqa: E402
from gpu_variants import BenchKernelConfig  # noqa: E402

from gboost.engines.gpu import GpuEngine, KernelConfig  # noqa: E402
from gboost.engines.gpu import missing_lists as ml  # noqa: E402
from gboost.pipeline.scan import ScanParams, scan_thresholds  # noqa: E402
from gboost.pipeline.tiles import plan_tiles  # noqa: E402


def screen(study, variant: str, params: ScanParams) -> dict:
    old = ml.LIST_MAX
    if variant == "direct":
        ml.LIST_MAX = -1
    config = BenchKernelConfig(defines=("GB_MINB2C=2",)) if variant == "minb2" else KernelConfig()
    eng = GpuEngine(counting="popc", config=config, gpus=[0])
    try:
        t0 = time.perf_counter()
        eng.prepare(study, scan_thresholds(params))
        surv = 0
        for res in eng.run_tiles(plan_tiles(study.n_snps, eng.tile_snps())):
            surv += len(res.surv_i)
        wall = time.perf_counter() - t0
        return dict(kernel_s=eng.kernel_seconds, wall_s=wall, survivors=surv, listed=eng.listed_snps)
    finally:
        eng.close()
        ml.LIST_MAX = old


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--p", type=int, default=200_000)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--missing", default="0,0.001,0.01,0.05")
    ap.add_argument("--variants", default="corrected,direct,minb2")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--epi1", type=float, default=5e-6)
    ap.add_argument("--json", default=None, metavar="PATH", help="also write the rows as JSON to PATH")
    a = ap.parse_args(argv)
    params = ScanParams(epi1=a.epi1)
    rows = []
    print(f"{'missing':>8} {'variant':>10} {'kernel s':>9} {'pair*samples/s':>15} {'listed':>8} {'survivors':>10}")
    for miss in (float(x) for x in a.missing.split(",")):
        study = simulate_study(a.p, a.n, a.n // 2, (0.05, 0.5), miss, seed=1)
        ps = a.p * (a.p - 1) // 2 * a.n
        variants = a.variants.split(",") if miss > 0 else ["corrected"]
        for r in range(a.rounds):
            for v in variants:
                row = dict(missing=miss, variant=v, round=r, **screen(study, v, params))
                row["ps_per_s"] = ps / row["kernel_s"]
                rows.append(row)
                print(f"{miss:>8} {v:>10} {row['kernel_s']:>9.3f} {row['ps_per_s']:>15.3e} {row['listed']:>8} "
                      f"{row['survivors']:>10}", flush=True)
        same = {row["survivors"] for row in rows if row["missing"] == miss}
        assert len(same) == 1, f"variants disagree on the survivors at missing {miss}: {same}"
        del study
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
