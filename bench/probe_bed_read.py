"""How many threads should read a .bed's blocks (issues 21, 24): for 1, 2, 4, 8 readers
(``gboost.io.plink_bed.BED_READERS``), the .bed read alone (``iter_bed_rows``, page cache), the
loader's counting pass (``load_study(..., background_encode=True)``: ``timings["encode"]``) and the
background encoder that follows it (``study.planes_ready.seconds``). Readers interleaved, each
figure the best of ``--repeat``; the .bed is read once first so that it is in the page cache.
With ``--kernels``, first the two compiled passes alone on the whole .bed in memory
(``bed_class_counts``, ``bed_encode``) at 1, 2, 4, ... numba threads, and the counting kernel fed
block by block by ``iter_bed_rows`` without the loader's verdicts: what bounds each pass.

    python bench/probe_bed_read.py PREFIX [--readers 1,2,4,8] [--repeat 3] [--kernels]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefix")
    ap.add_argument("--readers", default="1,2,4,8")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kernels", action="store_true")
    ap.add_argument("--grid", action="store_true",
                    help="only the counting and encoding kernels fed by iter_bed_rows, at readers x numba threads")
    a = ap.parse_args()
    from gboost.io import plink_bed
    from gboost.load import load_study

    bed = a.prefix + ".bed"
    size = os.path.getsize(bed)
    subprocess.run(["cat", bed], stdout=subprocess.DEVNULL, check=True)
    src = plink_bed.open_bfile(a.prefix)
    load_study(src, background_encode=True).wait_planes()  # numba's functions loaded once, not timed
    if a.grid:
        grid(src, a.repeat, [int(x) for x in a.readers.split(",")])
        return 0
    if a.kernels:
        kernels(src, a.repeat)
    readers = [int(x) for x in a.readers.split(",")]
    best = {r: [float("inf")] * 3 for r in readers}
    for _ in range(a.repeat):
        for r in readers:
            plink_bed.BED_READERS = r
            t = time.perf_counter()
            for _start, _data in src.iter_bed_rows(None):
                pass
            read_s = time.perf_counter() - t
            timings: dict = {}
            study = load_study(src, timings=timings, background_encode=True)
            study.wait_planes()
            ready = study.planes_ready
            enc = ready.seconds if ready is not None else float("nan")
            b = best[r]
            best[r] = [min(b[0], read_s), min(b[1], timings["encode"]), min(b[2], enc)]
    print(f"{bed}: {size / 1e9:.2f} GB, {os.cpu_count()} CPUs; best of {a.repeat}")
    print(f"{'readers':>7} {'read s':>7} {'GB/s':>6} {'counting s':>10} {'GB/s':>6} {'encoder s':>9} {'GB/s':>6}")
    for r in readers:
        rd, cnt, enc = best[r]
        print(f"{r:>7} {rd:>7.3f} {size / rd / 1e9:>6.2f} {cnt:>10.3f} {size / cnt / 1e9:>6.2f} {enc:>9.3f} "
              f"{size / enc / 1e9:>6.2f}")
    return 0


def grid(src, repeat: int, readers: list[int]) -> None:
    """The two compiled passes fed block by block by ``iter_bed_rows``, per (readers, numba
    threads): how the readers' copying and the kernels' threads share the cores."""
    import numba as nb
    import numpy as np

    from gboost.encode import bed_class_counts, bed_encode, bed_plan
    from gboost.io import plink_bed

    n = len(src.samples)
    is_case = src.samples.status == 1
    plan = bed_plan(np.r_[np.flatnonzero(~is_case), np.flatnonzero(is_case)],
                    np.r_[is_case[~is_case], is_case[is_case]], n)
    planes = np.empty((len(src.variants), 3, plan.layout.n_words), np.uint64)
    counts = np.empty((len(src.variants), 3, 2), np.int64)
    size = os.path.getsize(src.path)
    cores = nb.config.NUMBA_NUM_THREADS
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '')!r}; fed by iter_bed_rows, best of {repeat}")
    print(f"{'readers':>7} {'threads':>7} {'count s':>7} {'GB/s':>6} {'encode s':>8} {'GB/s':>6}")
    for r in readers:
        plink_bed.BED_READERS = r
        for t in sorted({max(1, min(cores, x)) for x in (cores // 2, cores - r, cores - r // 2, cores - 1, cores)}):
            nb.set_num_threads(t)
            best = [float("inf")] * 2
            for _ in range(repeat):
                s = time.perf_counter()
                for start, data in src.iter_bed_rows(None):
                    bed_class_counts(data, np.arange(len(data)), plan)
                c = time.perf_counter() - s
                s = time.perf_counter()
                for start, data in src.iter_bed_rows(None):
                    bed_encode(data, plan, np.arange(len(data)), planes[start:start + len(data)],
                               counts[start:start + len(data)])
                e = time.perf_counter() - s
                best = [min(best[0], c), min(best[1], e)]
            print(f"{r:>7} {t:>7} {best[0]:>7.3f} {size / best[0] / 1e9:>6.2f} "
                  f"{best[1]:>8.3f} {size / best[1] / 1e9:>6.2f}")
    nb.set_num_threads(cores)


def kernels(src, repeat: int) -> None:
    import numba as nb
    import numpy as np

    from gboost.encode import bed_class_counts, bed_encode, bed_plan

    n = len(src.samples)
    raw = np.fromfile(src.path, np.uint8, offset=3).reshape(len(src.variants), (n + 3) // 4)
    is_case = src.samples.status == 1
    plan = bed_plan(np.r_[np.flatnonzero(~is_case), np.flatnonzero(is_case)],
                    np.r_[is_case[~is_case], is_case[is_case]], n)
    rows = np.arange(raw.shape[0])
    planes = np.empty((len(rows), 3, plan.layout.n_words), np.uint64)
    counts = np.empty((len(rows), 3, 2), np.int64)
    print(f"numba {nb.__version__}, threading layer after a first kernel: ", end="")
    bed_class_counts(raw[:64], rows[:64], plan)
    print(nb.threading_layer())
    print(f"{'threads':>7} {'counting s':>10} {'GB/s':>6} {'encode s':>8} {'GB/s':>6} {'blocks s':>8} {'GB/s':>6}")
    t = 1
    while t <= nb.config.NUMBA_NUM_THREADS:
        nb.set_num_threads(t)
        best = [float("inf")] * 3
        for _ in range(repeat):
            s = time.perf_counter()
            bed_class_counts(raw, rows, plan)
            c = time.perf_counter() - s
            s = time.perf_counter()
            bed_encode(raw, plan, rows, planes, counts)
            e = time.perf_counter() - s
            s = time.perf_counter()
            for start, data in src.iter_bed_rows(None):
                bed_class_counts(data, np.arange(len(data)), plan)
            k = time.perf_counter() - s
            best = [min(best[0], c), min(best[1], e), min(best[2], k)]
        print(f"{t:>7} " + " ".join(f"{x:>{w}.3f} {raw.nbytes / x / 1e9:>6.2f}" for x, w in zip(best, (10, 8, 8))))
        cores = nb.config.NUMBA_NUM_THREADS
        t = t * 2 if t * 2 <= cores or t == cores else cores  # 1, 2, 4, ... and every core
    nb.set_num_threads(nb.config.NUMBA_NUM_THREADS)


if __name__ == "__main__":
    raise SystemExit(main())
