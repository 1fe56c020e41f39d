"""One GPU vs all GPUs of a host, through the built-in tile queue and through Dask: the engine alone
(``run_scan`` in this process; no SPEC section 7 row, its scaling across GPUs). Needs several GPUs.

    python bench/bench_multigpu.py --snps 1300000 --n 5000 --missing 0.01   # Dask on a running cluster
    python bench/bench_multigpu.py --snps 400000 --n 5000 --local-cluster   # Dask via local:gpus

Simulates a study on the GPU (as bench_gpu.py; 1 % missing calls by default), then times run_scan
with GpuEngine(gpus=[0]), GpuEngine() (every visible GPU, one shared tile queue), and DaskEngine
with one worker (GPU 0) and with one worker per GPU, each worker seeing only its GPU
(gboost.engines.distributed.local_gpu_cluster, what `--dask local:gpus` starts).

By default the Dask rows mirror real use (`--dask ADDRESS`, cluster already running): the cluster
is started and warmed with a small scan (imports, kernels compiled) OUTSIDE the timed region, and
DaskEngine gets its scheduler address; the timed wall then holds the probe every worker prepares on
(timings["prepare"]), the super-blocks sent beside the first tasks, and the screen. With
--local-cluster the Dask rows use DaskEngine('local:gpus') instead, which starts (and stops) its
cluster inside the timed wall.

Checks that every configuration gives the same pairs and summary, and prints wall, prepare and
screen times and the speed-ups of wall and screen over the 1-GPU row of the same kind, in one table.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


@contextlib.contextmanager
def _dask_cluster(workers: int):
    """A running cluster of ``workers`` processes, one a GPU (GPUs 0..workers-1), two threads each."""
    import os

    from gboost.engines.distributed import local_gpu_cluster

    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(k) for k in range(workers))
    try:
        cluster = local_gpu_cluster()
    finally:
        if before is None:
            del os.environ["CUDA_VISIBLE_DEVICES"]
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before
    with cluster:
        yield cluster


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snps", type=int, default=400_000)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--missing", type=float, default=0.01, help="missing-call rate (default 0.01, as real chips)")
    ap.add_argument("--no-dask", action="store_true", help="built-in queue rows only")
    ap.add_argument("--skip", default="", help="comma-separated row labels' kinds to leave out: "
                    "builtin1, builtin, dask1, dask")
    ap.add_argument("--external-cluster", dest="external", action="store_true", default=True,
                    help="Dask rows on a LocalCluster started and warmed outside the timing (default)")
    ap.add_argument("--local-cluster", dest="external", action="store_false",
                    help="Dask rows via DaskEngine('local:N'): cluster start-up inside the timing")
    a = ap.parse_args()

    import cupy as cp
    from bench_gpu import simulate_study

    from gboost.engines.distributed import DaskEngine
    from gboost.engines.gpu import GpuEngine
    from gboost.outputs.results import format_epi_cc, format_summary
    from gboost.pipeline.scan import ScanParams, run_scan

    g = cp.cuda.runtime.getDeviceCount()
    params = ScanParams(calibration_pairs=0)
    warm = simulate_study(2000, a.n, a.n // 2, (0.05, 0.5), 0.0, 99)
    for gpus in ([0], None):
        run_scan(warm, params, engine=GpuEngine(gpus=gpus))
    t_sim = time.perf_counter()
    study = simulate_study(a.snps, a.n, a.n // 2, (0.05, 0.5), a.missing, 1)
    print(f"# simulated {a.snps} x {a.n}, {a.missing:.1%} missing calls, in {time.perf_counter() - t_sim:.1f} s",
          flush=True)

    # (label, kind, Dask workers or None)
    configs = [("built-in queue, 1 GPU", "built-in", None, "builtin1"),
               (f"built-in queue, {g} GPUs", "built-in", None, "builtin")]
    if not a.no_dask:
        configs += [("Dask, 1 worker", "Dask", 1, "dask1"), (f"Dask, {g} workers", "Dask", g, "dask")]
    skip = set(filter(None, a.skip.split(",")))
    configs = [c[:3] for c in configs if c[3] not in skip]
    rows, ref = [], None
    for label, kind, workers in configs:
        with contextlib.ExitStack() as stack:
            if workers is None:
                engine = GpuEngine(gpus=[0] if label.endswith("1 GPU") else None)
            elif a.external:
                cluster = stack.enter_context(_dask_cluster(workers))
                # A running cluster has imported gboost and compiled its kernels long ago.
                run_scan(warm, params, engine=DaskEngine(cluster.scheduler_address, device="gpu"))
                engine = DaskEngine(cluster.scheduler_address, device="gpu")
            else:
                engine = DaskEngine("local:gpus", device="gpu")
            t0 = time.perf_counter()
            res = run_scan(study, params, engine=engine)
            wall = time.perf_counter() - t0
        text = format_epi_cc(res) + format_summary(res)
        same = ref is None or text == ref
        ref = ref or text
        prep, screen = res.timings.get("prepare", float("nan")), res.timings.get("screen", float("nan"))
        rows.append((label, kind, wall, prep, screen, same))
        extra = ""
        if workers is not None:
            extra = (f", {len(engine.prepared_workers)} workers prepared in prepare,"
                     f" {engine.last_units} grid blocks a super-block, {engine.last_tasks} tasks,"
                     f" blocks sent over {engine.scatter_seconds:.2f} s beside the tasks")
        print(f"# {label}: wall {wall:.2f} s, prepare {prep:.2f} s, screen {screen:.2f} s, identical {same}{extra}",
              flush=True)

    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    pairs = a.snps * (a.snps - 1) // 2
    mode = "" if a.no_dask else ("; Dask on a running LocalCluster (start-up untimed)" if a.external
                                 else "; Dask via local:N (cluster start-up timed)")
    print(f"\n{g} x {name}; {a.snps} SNPs x {a.n} samples, {a.missing:.1%} missing = {pairs:.3g} pairs{mode}; "
          f"{time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"{'configuration':<26}{'wall s':>9}{'prepare s':>11}{'screen s':>10}{'pair*smp/s':>12}"
          f"{'wall x':>8}{'screen x':>10}{'same output':>13}")
    base = {}
    first = rows[0] if rows else None
    for label, kind, wall, prep, screen, same in rows:
        bw, bs = base.setdefault(kind, (wall, screen))  # the 1-GPU row of the same kind
        print(f"{label:<26}{wall:>9.2f}{prep:>11.2f}{screen:>10.2f}{pairs * a.n / wall:>12.3g}"
              f"{bw / wall:>8.2f}{bs / screen:>10.2f}{str(same):>13}")
    if first is not None and first[0].endswith("1 GPU"):
        print(f"(wall x, screen x: over the 1-GPU row of the same kind; {rows[-1][0]} over built-in 1 GPU: "
              f"wall {first[2] / rows[-1][2]:.2f}x, screen {first[4] / rows[-1][4]:.2f}x)")
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
