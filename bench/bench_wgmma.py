"""Is Hopper's warpgroup b1 AND+POPC (wgmma) a faster counting core than the mma.sync the kernel uses?
The device ceilings SPEC section 7 cites (``mma.sync`` and ``wgmma`` b1 AND+POPC bit-MACs/s).

    python3 bench/bench_wgmma.py              # on an sm_90 GPU (H100/H200); prints a short table

Whether a ``wgmma`` b1 AND+POPC path has a higher ceiling than ``mma.sync.m16n8k256`` on sm_90a,
measured before building a kernel on it. This script measures, in one run on one device:

* the layout check: one ``wgmma.mma_async.m64n8k256.s32.b1.b1.and.popc`` of known 64 x 256-bit A
  and 8 x 256-bit B rows, both K-major in shared memory without swizzle (core matrices of 8 rows x
  16 bytes), under each reading of the descriptor's two byte offsets; the product is compared with
  NumPy's popcount(a & b), exactly, so the one that matches is the layout a kernel must use;
* the wgmma ceiling: back-to-back m64nNk256 wgmmas from shared memory (N = 64, 128, 256), two
  warpgroups a block, two blocks an SM, bit-ops/s (one bit-op = one AND+POPC of a bit pair, as
  bench/bench_gpu.py counts them);
* the mma.sync ceiling of the same device in the same run (bench/bench_gpu.py ``mma_ceiling``:
  m16n8k256 from registers), and the ratio.

The kernels are generated here (the m64n256 accumulator list has 128 registers) and compiled by
NVRTC for sm_90a; nothing of this is used by gboost itself. Prints the device, the layout check's
verdict per reading, the mma.sync ceiling and each wgmma ceiling with its ratio to it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

COMMON = r"""
typedef unsigned long long u64;
// The sm_90 shared-memory matrix descriptor: start address, leading and stride byte offsets (all
// in 16-byte units), base offset 0, no swizzle (layout type 0 in bits 62-63).
__device__ __forceinline__ u64 gw_desc(const void* p, unsigned lbo, unsigned sbo) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    return (u64)((a >> 4) & 0x3FFFu) | ((u64)((lbo >> 4) & 0x3FFFu) << 16) | ((u64)((sbo >> 4) & 0x3FFFu) << 32);
}
__device__ __forceinline__ void gw_fence_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void gw_arrive() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void gw_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void gw_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
"""


def _wgmma(n: int, name: str = "d") -> str:
    """The inline asm of one m64n{n}k256 b1 AND+POPC wgmma accumulating into unsigned ``name``[n/2]."""
    regs = n // 2
    outs = ", ".join(f"%{k}" for k in range(regs))
    cons = ", ".join(f'"+r"({name}[{k}])' for k in range(regs))
    return (f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, 0;\\n'
            f'wgmma.mma_async.sync.aligned.m64n{n}k256.s32.b1.b1.and.popc {{{outs}}}, %{regs}, %{regs + 1}, p;\\n}}\\n"'
            f' : {cons} : "l"(da), "l"(db) : "memory");')


def source() -> str:
    check = r"""
// One warpgroup: A (64 rows) and B (8 rows) of 32 bytes each, placed in shared memory as core
// matrices of 8 rows x 16 bytes: row r, byte kb at (r / 8) * gstride + (kb / 16) * kstride +
// (r % 8) * 16 + kb % 16; the descriptor gets (lbo, sbo). out[r * 8 + c] = D[r][c].
extern "C" __global__ void gw_check(const unsigned char* __restrict__ A, const unsigned char* __restrict__ B,
                                    int kstride, int gstride, int lbo, int sbo, int* __restrict__ out) {
    __shared__ __align__(1024) unsigned char sa[4096];
    __shared__ __align__(1024) unsigned char sb[4096];
    for (int i = threadIdx.x; i < 64 * 32; i += blockDim.x) {
        const int r = i / 32, kb = i % 32;
        sa[(r / 8) * gstride + (kb / 16) * kstride + (r % 8) * 16 + kb % 16] = A[i];
    }
    for (int i = threadIdx.x; i < 8 * 32; i += blockDim.x) {
        const int r = i / 32, kb = i % 32;
        sb[(kb / 16) * kstride + r * 16 + kb % 16] = B[i];
    }
    gw_fence_smem();
    __syncthreads();
    const u64 da = gw_desc(sa, lbo, sbo), db = gw_desc(sb, lbo, sbo);
    unsigned d[4] = {0u, 0u, 0u, 0u};
    gw_arrive();
    """ + _wgmma(8) + r"""
    gw_commit();
    gw_wait0();
    const int t = threadIdx.x, w = t / 32, g = (t % 32) / 4, q = t % 4;
    out[(16 * w + g) * 8 + 2 * q] = (int)d[0];
    out[(16 * w + g) * 8 + 2 * q + 1] = (int)d[1];
    out[(16 * w + g + 8) * 8 + 2 * q] = (int)d[2];
    out[(16 * w + g + 8) * 8 + 2 * q + 1] = (int)d[3];
}
"""
    parts = [COMMON, check]
    for n in (64, 128, 256):
        parts.append(r"""
// The ceiling at N = %(n)d: A (64 x 256 bits) and B (%(n)d x 256 bits) in shared memory, shared by
// the block's warpgroups; reps x 8 wgmmas into one set of accumulators, one commit per 8.
extern "C" __global__ void __launch_bounds__(256) gw_ceiling_%(n)d(int reps, unsigned* __restrict__ out) {
    extern __shared__ __align__(1024) unsigned char sm[];
    unsigned* w32 = (unsigned*)sm;
    for (int i = threadIdx.x; i < (2048 + %(n)d * 32) / 4; i += blockDim.x)
        w32[i] = 0x9E3779B9u * (unsigned)(i + 1 + blockIdx.x);
    gw_fence_smem();
    __syncthreads();
    const u64 da = gw_desc(sm, 128, 256), db = gw_desc(sm + 2048, 128, 256);
    unsigned d[%(r)d];
#pragma unroll
    for (int k = 0; k < %(r)d; ++k) d[k] = 0u;
    gw_arrive();
    for (int r = 0; r < reps; ++r) {
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            %(mma)s
        }
        gw_commit();
    }
    gw_wait0();
    unsigned s = 0u;
#pragma unroll
    for (int k = 0; k < %(r)d; ++k) s += d[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
""" % dict(n=n, r=n // 2, mma=_wgmma(n)))
    return "\n".join(parts)


def _module(cp):
    code = source()
    last = None
    for opts in (("-arch=sm_90a", "-std=c++17"), ("--gpu-architecture=sm_90a", "-std=c++17")):
        try:
            return cp.RawModule(code=code, options=opts)
        except Exception as exc:  # noqa: BLE001 - report the last compiler error
            last = exc
    raise RuntimeError(f"NVRTC could not build the wgmma kernels for sm_90a: {last}")


def layout_check(cp, mod) -> list[tuple[str, bool]]:
    rng = np.random.default_rng(18)
    a = rng.integers(0, 256, (64, 32), dtype=np.uint8)
    b = rng.integers(0, 256, (8, 32), dtype=np.uint8)
    want = np.unpackbits(a[:, None, :] & b[None, :, :], axis=2).sum(axis=2).astype(np.int32)
    k = mod.get_function("gw_check")
    ga, gb = cp.asarray(a), cp.asarray(b)
    rows = []
    # (placement: K-chunk stride, row-group stride; descriptor: lbo, sbo)
    for label, ks, gs, lbo, sbo in (("K chunks 128 B apart, row groups 256 B; lbo=128 sbo=256", 128, 256, 128, 256),
                                    ("the same placement; lbo=256 sbo=128", 128, 256, 256, 128),
                                    ("K chunks 1024 B apart, row groups 128 B; lbo=1024 sbo=128", 1024, 128, 1024, 128),
                                    ("the same placement; lbo=128 sbo=1024", 1024, 128, 128, 1024)):
        out = cp.full(64 * 8, -1, dtype=cp.int32)
        k((1,), (128,), (ga, gb, np.int32(ks), np.int32(gs), np.int32(lbo), np.int32(sbo), out))
        got = out.get().reshape(64, 8)
        rows.append((label, bool(np.array_equal(got, want))))
    return rows


def wgmma_ceiling(cp, mod, n: int, device_id: int = 0) -> float:
    k = mod.get_function(f"gw_ceiling_{n}")
    sms = cp.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
    grid, block, smem = (sms * 2,), (256,), 2048 + n * 32
    out = cp.empty(grid[0] * block[0], dtype=cp.uint32)
    reps = max(64, 2_000_000 // n)
    k(grid, block, (np.int32(reps), out), shared_mem=smem)  # warm-up
    best = float("inf")
    for _ in range(5):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        k(grid, block, (np.int32(reps), out), shared_mem=smem)
        e1.record()
        e1.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(e0, e1) / 1000.0)
    assert int(out.get().max()) > 0
    warpgroups = grid[0] * block[0] // 128
    return warpgroups * reps * 8 * 64 * n * 256 / best


def main() -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    import cupy as cp

    from bench_gpu import mma_ceiling

    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print(f"device: {name}, {props['multiProcessorCount']} SMs, compute {props['major']}.{props['minor']}")
    if (props["major"], props["minor"]) != (9, 0):
        print("wgmma needs sm_90 (H100/H200): nothing measured")
        return 0
    mod = _module(cp)
    print("layout check (64 x 8 popc(a & b) against NumPy, exact):")
    for label, ok in layout_check(cp, mod):
        print(f"  {'MATCH' if ok else 'differ'}  {label}")
    base = mma_ceiling(0)
    print(f"mma.sync m16n8k256 b1 from registers: {base:.3e} bit-ops/s")
    for n in (64, 128, 256):
        r = wgmma_ceiling(cp, mod, n)
        print(f"wgmma m64n{n}k256 b1 from shared memory: {r:.3e} bit-ops/s = {r / base:.2f} x mma.sync")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
