// Compiled by bench/gpu_variants.py after boost_common.cu and boost_screen.cu (bench/bench_gpu.py).

// The popcount ceiling of the device (bench/): AND + popcount of every word of `a` with every
// word of `b`, streamed from registers, one counter per thread. Nothing but the two operations.
extern "C" __global__ void gb_popc_ceiling(const gb_u64* __restrict__ a, const gb_u64* __restrict__ b, int reps,
                                           gb_u32* __restrict__ out) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    gb_u64 x[8], y[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) { x[q] = a[(tid * 8 + q) & 1023]; y[q] = b[(tid * 8 + q + 3) & 1023]; }
    gb_u32 acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int r = 0; r < reps; ++r) {
#pragma unroll
        for (int q = 0; q < 8; ++q) {
#pragma unroll
            for (int u = 0; u < 8; ++u) acc[q] += (gb_u32)__popcll(x[q] & y[u]);
            x[q] = (x[q] << 1) | (x[q] >> 63);  // keep the compiler from hoisting the loop body
        }
    }
    gb_u32 s = 0;
#pragma unroll
    for (int q = 0; q < 8; ++q) s += acc[q];
    out[tid] = s;
}
