// Compiled by bench/gpu_variants.py after boost_common.cu and boost_mma.cu (gm_mma; bench/bench_gpu.py).

// The tensor-core ceiling of the device (bench/): m16n8k256 AND+POPC mmas from registers, 8
// independent accumulators per warp, nothing else. Each mma is 16 x 8 x 256 = 32,768 bit-ops.
extern "C" __global__ void gm_mma_ceiling(int reps, gb_u32* __restrict__ out) {
    const gb_u64 seed = 0x9E3779B97F4A7C15ull * (gb_u64)(blockIdx.x * blockDim.x + threadIdx.x + 1);
    const gb_u64 top = seed, bot = seed ^ 0xF0F0F0F0F0F0F0F0ull;
    gb_u64 b[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) b[j] = seed * (gb_u64)(2 * j + 3);
    gb_u32 acc[8][4];
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[j][c] = 0u;
    for (int r = 0; r < reps; ++r) {
#pragma unroll
        for (int j = 0; j < 8; ++j) gm_mma(acc[j], top, bot, b[j]);
    }
    gb_u32 s = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
