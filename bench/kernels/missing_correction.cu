// Issue 18, goal 1 (bench only, not used by gboost): what the sparse correction of missing calls would
// cost on the CUDA cores. A block with missing calls now counts 9 products of bit planes on the tensor
// cores (G1, G2, M of each SNP against the same of the other), 2.25x the 4 of a fully called block.
// The 4 products G_a(i) & G_b(j) (a, b in {1, 2}) are exact with missing calls too (a missing call has
// no bit in G1 or G2); what else a pair's table needs is 5 counts a class:
//   c_a(i, j) = popc(G_a(i) & M(j)),  d_b(i, j) = popc(M(i) & G_b(j)),  e(i, j) = popc(M(i) & M(j)).
// M is sparse (1 % missing calls: ~25 samples a class and SNP at 5,000 samples), so each is a sum over
// a short list: c_a(i, j) = sum over the missing samples s of j of bit i of G_a at s. This kernel takes
// them for a block of 128 x 64 SNPs (the tensor-core kernel's) as bit-sliced ("vertical") counters: a
// thread adds, for each missing sample s of its column SNP j, the word of 32 row SNPs' bits at s (from a
// sample-major copy of the planes) into BITS words, one per bit of the count; then the counts are
// extracted into shared memory, where the pair's epilogue would read them. Each thread then reads its
// pairs' 10 counts as the epilogue would (a checksum, or all counts in WRITE mode for the test).
//
// gt:  [3][n][pw] words, plane G1, G2, M, sample s, SNPs 32w..32w+31 (bit i % 32 of word i / 32)
// lst: [p][2][lmax] each SNP's missing samples of class k (controls, cases), cnt: [p][2] their number
// out: (WRITE) [p][p][2][5] bytes c1, c2, d1, d2, e of pair (i, j), class k, i < j; chk: one word a block
typedef unsigned int u32;

template <int BITS>
__device__ __forceinline__ void mc_add(u32 (&v)[BITS], u32 x) {
#pragma unroll
    for (int b = 0; b < BITS; ++b) {
        const u32 t = v[b] & x;
        v[b] ^= x;
        x = t;
    }
}

// Counts of rows r, r + 1, r + 2, r + 3 as the bytes of one word.
template <int BITS>
__device__ __forceinline__ u32 mc_get4(const u32 (&v)[BITS], int r) {
    u32 w = 0;
#pragma unroll
    for (int b = 0; b < BITS; ++b) {
        const u32 x = v[b] >> r;  // bits r .. r + 3 of bit plane b, to byte lanes 0..3 at bit b
        w |= ((x & 1u) | ((x & 2u) << 7) | ((x & 4u) << 14) | ((x & 8u) << 21)) << b;
    }
    return w;
}

#define MC_CROW 33  // words a row of the column side's counts (128 bytes + 4: rows on distinct banks)
#define MC_DROW 17  // words a row of the row side's counts (64 bytes + 4)

template <int BITS, int WRITE>
__device__ __forceinline__ void mc_block(const u32* __restrict__ gt, int n, int pw, const int* __restrict__ lst,
                                         const int* __restrict__ cnt, int lmax, int p, int i0, int j0,
                                         u32* sc, u32* sd, unsigned char* __restrict__ out, u32& acc) {
    const int tid = threadIdx.x;
    // Column side: thread (jj, q), its column SNP's missing samples against 32 row SNPs' G1 and G2.
    {
        const int jj = tid & 63, q = tid >> 6, j = j0 + jj, w = i0 / 32 + q;
#pragma unroll 1
        for (int k = 0; k < 2; ++k) {
            u32 v1[BITS], v2[BITS];
#pragma unroll
            for (int b = 0; b < BITS; ++b) v1[b] = v2[b] = 0u;
            if (j < p && w < pw) {
                const int m = __ldg(cnt + j * 2 + k);
                const int* L = lst + (size_t)(j * 2 + k) * lmax;
#pragma unroll 2
                for (int x = 0; x < m; ++x) {
                    const int s = __ldg(L + x);
                    mc_add(v1, __ldg(gt + (size_t)s * pw + w));
                    mc_add(v2, __ldg(gt + ((size_t)n + s) * pw + w));
                }
            }
            u32* o1 = sc + ((k * 2 + 0) * 64 + jj) * MC_CROW + q * 8;
            u32* o2 = sc + ((k * 2 + 1) * 64 + jj) * MC_CROW + q * 8;
#pragma unroll
            for (int r = 0; r < 32; r += 4) {
                o1[r / 4] = mc_get4(v1, r);
                o2[r / 4] = mc_get4(v2, r);
            }
        }
    }
    // Row side: thread (ii, q), its row SNP's missing samples against 32 column SNPs' G1, G2 and M.
    {
        const int ii = tid & 127, q = tid >> 7, i = i0 + ii, w = j0 / 32 + q;
#pragma unroll 1
        for (int k = 0; k < 2; ++k) {
            u32 v1[BITS], v2[BITS], ve[BITS];
#pragma unroll
            for (int b = 0; b < BITS; ++b) v1[b] = v2[b] = ve[b] = 0u;
            if (i < p && w < pw) {
                const int m = __ldg(cnt + i * 2 + k);
                const int* L = lst + (size_t)(i * 2 + k) * lmax;
#pragma unroll 2
                for (int x = 0; x < m; ++x) {
                    const int s = __ldg(L + x);
                    mc_add(v1, __ldg(gt + (size_t)s * pw + w));
                    mc_add(v2, __ldg(gt + ((size_t)n + s) * pw + w));
                    mc_add(ve, __ldg(gt + ((size_t)2 * n + s) * pw + w));
                }
            }
            u32* o = sd + ((k * 3) * 128 + ii) * MC_DROW + q * 8;
#pragma unroll
            for (int r = 0; r < 32; r += 4) {
                o[r / 4] = mc_get4(v1, r);
                o[128 * MC_DROW + r / 4] = mc_get4(v2, r);
                o[2 * 128 * MC_DROW + r / 4] = mc_get4(ve, r);
            }
        }
    }
    __syncthreads();
    // The epilogue's reads: each pair's 10 counts.
    const unsigned char* cb = (const unsigned char*)sc;
    const unsigned char* db = (const unsigned char*)sd;
    for (int e = tid; e < 128 * 64; e += blockDim.x) {
        const int ii = e >> 6, jj = e & 63, i = i0 + ii, j = j0 + jj;
        if (i >= p || j >= p || i >= j) continue;
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const u32 c1 = cb[(((k * 2 + 0) * 64 + jj) * MC_CROW) * 4 + ii];
            const u32 c2 = cb[(((k * 2 + 1) * 64 + jj) * MC_CROW) * 4 + ii];
            const u32 d1 = db[(((k * 3 + 0) * 128 + ii) * MC_DROW) * 4 + jj];
            const u32 d2 = db[(((k * 3 + 1) * 128 + ii) * MC_DROW) * 4 + jj];
            const u32 ee = db[(((k * 3 + 2) * 128 + ii) * MC_DROW) * 4 + jj];
            if (WRITE) {
                unsigned char* o = out + (((size_t)i * p + j) * 2 + k) * 5;
                o[0] = (unsigned char)c1; o[1] = (unsigned char)c2; o[2] = (unsigned char)d1;
                o[3] = (unsigned char)d2; o[4] = (unsigned char)ee;
            } else {
                acc += c1 + (c2 << 3) + (d1 << 6) + (d2 << 9) + (ee << 12);
            }
        }
    }
}

// Persistent blocks over the upper triangle of 128 x 64 blocks; dynamic shared memory:
// (2 * 2 * 64 * MC_CROW + 2 * 3 * 128 * MC_DROW) words = 86,016 bytes.
#define MC_KERNEL(BITS, WRITE)                                                                              \
    extern "C" __global__ void __launch_bounds__(256) mc_corrections_##BITS##_##WRITE(                     \
        const u32* __restrict__ gt, int n, int pw, const int* __restrict__ lst, const int* __restrict__ cnt, \
        int lmax, int p, unsigned char* __restrict__ out, u32* __restrict__ chk) {                          \
        extern __shared__ u32 mc_smem[];                                                                    \
        u32* sc = mc_smem;                                                                                  \
        u32* sd = mc_smem + 2 * 2 * 64 * MC_CROW;                                                           \
        const int nbi = (p + 127) / 128, nbj = (p + 63) / 64;                                               \
        u32 acc = 0;                                                                                        \
        for (int blk = blockIdx.x; blk < nbi * nbj; blk += gridDim.x) {                                     \
            const int i0 = (blk / nbj) * 128, j0 = (blk % nbj) * 64;                                       \
            if (j0 + 63 <= i0) continue;                                                                    \
            __syncthreads();                                                                                \
            mc_block<BITS, WRITE>(gt, n, pw, lst, cnt, lmax, p, i0, j0, sc, sd, out, acc);                  \
        }                                                                                                   \
        chk[blockIdx.x * blockDim.x + threadIdx.x] = acc;                                                   \
    }
MC_KERNEL(5, 0)
MC_KERNEL(6, 0)
MC_KERNEL(7, 0)
MC_KERNEL(8, 0)
MC_KERNEL(8, 1)
