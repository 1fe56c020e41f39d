"""One GPU vs all GPUs of a host, through the built-in tile queue and through Dask (issue 7).

    python bench/bench_multigpu.py --snps 400000 --n 5000            # Dask on a running cluster
    python bench/bench_multigpu.py --snps 400000 --n 5000 --local-cluster   # Dask via local:N

Simulates a study on the GPU (as bench_gpu.py), then times run_scan with GpuEngine(gpus=[0]),
GpuEngine() (every visible GPU, one shared tile queue), and DaskEngine with one and with G worker
processes (one per GPU; worker k takes GPU k, see distributed._worker_gpu).

By default the Dask rows mirror real use (`--dask ADDRESS`, cluster already running): a
`distributed.LocalCluster` is started and warmed with a small scan (imports, kernels compiled)
OUTSIDE the timed region, and DaskEngine gets its scheduler address; the timed wall then holds the
scatter of the study and every worker's prepare (timings["prepare"]) and the screen. With
--local-cluster the Dask rows use DaskEngine('local:N') instead, which starts (and stops) its
cluster inside the timed wall.

Checks that every configuration gives the same pairs and summary, and prints wall, prepare and
screen times and the speed-ups of wall and screen over the 1-GPU row of the same kind.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _dask_cluster(workers: int):
    """A running local cluster of ``workers`` processes, one thread each (one GPU each)."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                        silence_logs=40)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snps", type=int, default=400_000)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--no-dask", action="store_true", help="built-in queue rows only")
    ap.add_argument("--external-cluster", dest="external", action="store_true", default=True,
                    help="Dask rows on a LocalCluster started and warmed outside the timing (default)")
    ap.add_argument("--local-cluster", dest="external", action="store_false",
                    help="Dask rows via DaskEngine('local:N'): cluster start-up inside the timing")
    a = ap.parse_args()

    import cupy as cp
    from bench_gpu import simulate_study

    from gboost.engines.distributed import DaskEngine
    from gboost.engines.gpu import GpuEngine
    from gboost.io.results import format_epi_cc, format_summary
    from gboost.scan import ScanParams, run_scan

    g = cp.cuda.runtime.getDeviceCount()
    params = ScanParams(calibration_pairs=0)
    warm = simulate_study(2000, a.n, a.n // 2, (0.05, 0.5), 0.0, 99)
    for gpus in ([0], None):
        run_scan(warm, params, engine=GpuEngine(gpus=gpus))
    study = simulate_study(a.snps, a.n, a.n // 2, (0.05, 0.5), 0.0, 1)

    # (label, kind, Dask workers or None)
    configs = [("built-in queue, 1 GPU", "built-in", None), (f"built-in queue, {g} GPUs", "built-in", None)]
    if not a.no_dask:
        configs += [("Dask, 1 worker", "Dask", 1), (f"Dask, {g} workers", "Dask", g)]
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
                engine = DaskEngine(f"local:{workers}", device="gpu")
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
                     f" {engine.last_tiles_per_task} tiles/task")
        print(f"# {label}: wall {wall:.2f} s, prepare {prep:.2f} s, screen {screen:.2f} s, identical {same}{extra}",
              flush=True)

    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    pairs = a.snps * (a.snps - 1) // 2
    mode = "" if a.no_dask else ("; Dask on a running LocalCluster (start-up untimed)" if a.external
                                 else "; Dask via local:N (cluster start-up timed)")
    print(f"\n{g} x {name}; {a.snps} SNPs x {a.n} samples = {pairs:.3g} pairs{mode}; "
          f"{time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"{'configuration':<26}{'wall s':>9}{'prepare s':>11}{'screen s':>10}{'pair*smp/s':>12}"
          f"{'wall x':>8}{'screen x':>10}{'same output':>13}")
    base = {}
    for label, kind, wall, prep, screen, same in rows:
        bw, bs = base.setdefault(kind, (wall, screen))  # the 1-GPU row of the same kind
        print(f"{label:<26}{wall:>9.2f}{prep:>11.2f}{screen:>10.2f}{pairs * a.n / wall:>12.3g}"
              f"{bw / wall:>8.2f}{bs / screen:>10.2f}{str(same):>13}")
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
