"""How soon could a scan's first tile start if the read needed no numba (issue 24)? A fresh process that
imports NumPy and CuPy only: CuPy (without its cuTENSOR preload, gboost/engines/cupy_import.py) on a
thread while the main thread reads the .fam's classes and the .bim's line count and chromosome column with
NumPy, then the .bed into page-locked memory in 32 MB blocks, each block uploaded as it is read and its
rows' genotype codes counted per class on the GPU (one warp a row, a RawKernel). What the CLI does
instead (numba's import and target, the compiled parse and counting pass, the encoder's first rows:
the first tile at 1.40 s on the H100 host, docs/PERFORMANCE.md, nineteenth session) is the comparison.

The counts are checked against a NumPy count of a few rows. Not a loader: no IDs, no QC, no planes (the
GPU's decode of .bed rows into planes, gb_decode_bed, would come after the counts).

    python bench/probe_gpu_first.py PREFIX [--runs 5]

Each run is a fresh process; prints its marks (seconds from the process's start) and the medians.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

_KERNEL = r"""
extern "C" __global__ void count_rows(const unsigned char* bed, long long row0, int rows, int row_bytes,
                                      const unsigned char* cls, int n, unsigned int* out) {
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (warp >= rows) return;
    const unsigned char* r = bed + (long long)warp * row_bytes;
    unsigned int c[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    for (int b = lane; b < row_bytes; b += 32) {
        const unsigned int v = r[b];
        for (int k = 0; k < 4; ++k) {
            const int s = 4 * b + k;
            if (s < n) {
                const int q = cls[s];
                if (q < 2) c[q][(v >> (2 * k)) & 3] += 1;
            }
        }
    }
    for (int q = 0; q < 2; ++q)
        for (int t = 0; t < 4; ++t) {
            unsigned int x = c[q][t];
            for (int o = 16; o; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
            if (lane == 0) out[(row0 + warp) * 8 + q * 4 + t] = x;
        }
}
"""


def child(prefix: str) -> None:
    from gboost.stages import process_age

    t0 = time.perf_counter() - process_age()
    marks = []

    def mark(what):
        marks.append((what, round(time.perf_counter() - t0, 4)))

    mark("python up")
    import threading

    import numpy as np

    mark("numpy imported")
    box = {}

    def gpu():
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "gb_cupy_import", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gboost",
                                           "engines", "cupy_import.py"))
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        cp = m.import_cupy()
        box["cupy_s"] = time.perf_counter() - t0
        cp.cuda.Device(0).use()
        cp.zeros(1).sum()  # the context made current, a first kernel run
        box["kernel"] = cp.RawKernel(_KERNEL, "count_rows")
        box["kernel"].compile()
        box["ready_s"] = time.perf_counter() - t0
        box["cp"] = cp

    th = threading.Thread(target=gpu)
    th.start()
    fam = np.frombuffer(open(prefix + ".fam", "rb").read(), dtype=np.uint8)
    nl = np.flatnonzero(fam == 10)
    n = len(nl)
    ends = nl - (fam[nl - 1] == 13)
    pheno = fam[ends - 1]  # the last column's last byte: 1 control, 2 case (the probe's filesets)
    cls = np.where(pheno == ord("2"), 1, np.where(pheno == ord("1"), 0, 2)).astype(np.uint8)
    bim = np.frombuffer(open(prefix + ".bim", "rb").read(), dtype=np.uint8)
    bnl = np.flatnonzero(bim == 10)
    p = len(bnl)
    starts = np.concatenate([[0], bnl[:-1] + 1])
    chrom = bim[starts].copy()  # the chromosome column's first byte
    mark(f"fam ({n} samples) and bim ({p} lines) read by NumPy")
    row_bytes = (n + 3) // 4
    th.join()
    mark("GPU ready (CuPy, context, kernel)")
    cp = box["cp"]
    kern = box["kernel"]
    dcls = cp.asarray(cls)
    out = cp.zeros(p * 8, dtype=cp.uint32)
    block_rows = max(1, (32 << 20) // row_bytes)
    bufs = [cp.cuda.alloc_pinned_memory(block_rows * row_bytes) for _ in range(2)]
    dev = [cp.empty(block_rows * row_bytes, dtype=cp.uint8) for _ in range(2)]
    stream = cp.cuda.Stream(non_blocking=True)
    events = [None, None]
    with open(prefix + ".bed", "rb", buffering=0) as fh:
        fh.read(3)
        row, k = 0, 0
        while row < p:
            rows = min(block_rows, p - row)
            if events[k] is not None:
                events[k].synchronize()
            host = np.frombuffer(bufs[k], dtype=np.uint8, count=rows * row_bytes)
            fh.readinto(memoryview(host))
            with stream:
                dev[k][: rows * row_bytes].set(host, stream=stream)
                kern(((rows * 32 + 255) // 256,), (256,),
                     (dev[k], np.int64(row), np.int32(rows), np.int32(row_bytes), dcls, np.int32(n), out))
                events[k] = stream.record()
            row += rows
            k ^= 1
    stream.synchronize()
    mark("the .bed read, uploaded and counted on the GPU")
    got = out.reshape(p, 2, 4).get()
    raw = np.fromfile(prefix + ".bed", dtype=np.uint8, offset=3, count=3 * row_bytes).reshape(3, row_bytes)
    codes = ((raw[:, :, None] >> (2 * np.arange(4))) & 3).reshape(3, -1)[:, :n]
    want = np.array([[[(codes[r][cls == q] == t).sum() for t in range(4)] for q in range(2)] for r in range(3)])
    assert (got[:3] == want).all(), (got[:3], want)
    print(json.dumps({"marks": marks, "cupy_s": round(box["cupy_s"], 4), "p": p, "n": n,
                      "chrom_bytes": int(len(np.unique(chrom)))}))


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefix")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.prefix)
        return 0
    runs = []
    for _ in range(a.runs + 1):  # the first fills CuPy's kernel cache
        r = subprocess.run([sys.executable, os.path.abspath(__file__), a.prefix, "--child"], capture_output=True,
                           text=True)
        if r.returncode:
            print(r.stderr[-2000:])
            return 1
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(runs[-1]["marks"], "cupy imported at", runs[-1]["cupy_s"])
    keys = [m[0] for m in runs[1]["marks"]]
    print("medians of", a.runs, "runs after the first:")
    for i, k in enumerate(keys):
        print(f"  {statistics.median(r['marks'][i][1] for r in runs[1:]):7.3f}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
