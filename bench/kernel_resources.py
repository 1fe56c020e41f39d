"""The tensor-core kernels' registers, spills and shared memory, compiled here with nvcc (no GPU
needed) from the same source and options the engine gives NVRTC (gboost/engines/gpu/compile.py,
config.py): a first look at a kernel change before device time is spent on it (the <3,3> kernel is
bound by instructions issued, and spills cost). No SPEC section 7 row: a static check.

    python bench/kernel_resources.py                    # the default build, sm_90
    python bench/kernel_resources.py --no-f32 --arch sm_90a -D GM_STAGES=4

Prints one table, a line per kernel: registers, bytes of spill stores and loads, shared memory.
What ptxas reports, statically: the local nvcc may be another CUDA release than the device's NVRTC
(CuPy's) and allocate a little differently; the kernel seconds on the device (bench/bench_gpu.py)
remain the measure of what a change does.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from gboost.engines.gpu.compile import mma_kernel_source
from gboost.engines.gpu.config import MmaConfig


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--no-f32", action="store_true", help="the float64-epilogue build (MmaConfig(f32_screen=False))")
    ap.add_argument("-D", action="append", default=[], metavar="NAME=VALUE", help="an extra define (a variant to compare)")
    a = ap.parse_args()
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("nvcc not found: install the CUDA toolkit (only the compiler is needed, no GPU)", file=sys.stderr)
        return 2
    options = [o for o in MmaConfig(f32_screen=not a.no_f32).options()] + [f"-D{d}" for d in a.D]
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp) / "mma.cu", Path(tmp) / "mma.cubin"
        src.write_text(mma_kernel_source())
        run = subprocess.run([nvcc, f"-arch={a.arch}", "-cubin", "-o", str(cubin), *options, "-Xptxas", "-v", str(src)],
                             capture_output=True, text=True)
        if run.returncode:
            print(run.stderr, file=sys.stderr)
            return 1
        rows, name = {}, None
        for line in run.stderr.splitlines():
            m = re.search(r"Compiling entry function '(\w+)'", line)
            if m:
                name = m.group(1)
                rows[name] = {}
                continue
            if name is None:
                continue
            for key, pat in (("spill_st", r"(\d+) bytes spill stores"), ("spill_ld", r"(\d+) bytes spill loads"),
                             ("regs", r"Used (\d+) registers"), ("smem", r"(\d+) bytes smem")):
                m = re.search(pat, line)
                if m:
                    rows[name][key] = int(m.group(1))
    print(f"# {a.arch}, options: {' '.join(options)}")
    print(f"{'kernel':20} {'regs':>5} {'spill st':>9} {'spill ld':>9} {'smem':>7}")
    for name, r in rows.items():
        print(f"{name:20} {r.get('regs', 0):5} {r.get('spill_st', 0):9} {r.get('spill_ld', 0):9} {r.get('smem', 0):7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
