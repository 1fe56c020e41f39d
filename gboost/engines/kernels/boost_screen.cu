// BOOST screen of one tile of the SNP-pair triangle (GBOOST's kernel; docs/DESIGN.md §3.3, §3.5).
//
// Compiled at run time by NVRTC through CuPy (gboost/engines/gpu/compile.py), once per device and
// parameter set; the parameters below arrive as -D options. No headers: NVRTC has what we use.
//
// Work layout. A block of GB_THREADS threads screens GB_BI row SNPs x GB_BJ column SNPs; each
// thread owns a 2 x 2 micro-tile of pairs. The words of the block's bit planes are staged in
// shared memory GB_KW words at a time (type-major, SNP fastest: the global loads are coalesced,
// GBOOST Fig. S5), so a plane word is read from device memory once per block and reused by all
// the pairs of that row or column; the next chunk is fetched into registers while the current one
// is counted. The row SNPs' words come from planes_r (stride_r SNPs per word row; the tile's row r
// is plane column off_r + r), the column SNPs' from planes_c: the study's planes twice when they
// are resident on the device, or the two blocks the host streamed in for this tile. Counts and
// missing-call flags are indexed by global SNP.
//
// Counting. Cells of the 3x3x2 table come from AND + popcount. A block's mode <NA, NB> says how
// many genotype types of its row / column SNPs are counted directly: 2 when no SNP of that side
// of the block has a missing call (the third type follows by subtraction from the per-SNP
// counts, BOOST), 3 otherwise (PLINK 1.9's direct counting, so a sample missing at either SNP is
// in no cell). <2,2> is the 4-cells-per-class case of the CPU engine, <3,3> its 9-cell case;
// <2,3> and <3,2> count 6 cells and subtract along the fully called side. All give the same
// integer table.
//
// Popcounts (GB_HS=1): POPC issues at a quarter of the rate of logic ops, so each cell keeps a
// carry-save bit vector `ones`: per 64-bit word, ones + lo + hi = 2 * carry + ones' bit by bit
// (a full adder: two LOP3) and only the carry is popcounted into acc. That halves the POPCs and
// balances the POPC and logic pipes; cell = 2 * acc + popc(ones). GB_HS=0 is the plain form, one
// popcount per 32-bit half.
// The kernel argument `one` is 1: multiplying the popcount by a value the compiler cannot see
// makes the accumulation an IMAD (the FMA pipe) instead of an IADD3 on the busy logic pipe.
//
// Statistics. KSA and DF follow gboost/stats/fastksa.py:ksa_df_lookup operation for operation in
// float64 (compiled with --fmad=false), with c ln c from a table, so KSA and the screen decision
// equal the CPU engine's (up to one ulp of log). The table sits in shared memory when it fits
// (n_tab > 0): a pair makes 27 to 47 lookups at scattered indices, slow through L1. In a block of
// fully called SNPs the per-SNP terms (margin sums, reciprocals) are computed once per SNP.
//
// Output. Survivors (KSA > screen threshold for the pair's DF) are appended through an atomic
// counter to a bounded buffer; past its capacity only the counter grows, so the host sees the
// overflow and re-runs the tile with a larger buffer. Each block writes, for its rows and for its
// columns, a partial per-SNP summary over its non-surviving valid pairs; gb_reduce_partials folds
// the blocks' partials into one per SNP of the tile.

#ifndef GB_BI
#define GB_BI 32
#endif
#ifndef GB_BJ
#define GB_BJ 32
#endif
#ifndef GB_KW
#define GB_KW 8
#endif
#ifndef GB_HS
#define GB_HS 1
#endif

#ifndef GB_MINB22  // blocks per SM the register allocation aims at, per mode kernel
#define GB_MINB22 3
#endif
#ifndef GB_MINB23
#define GB_MINB23 2
#endif
#ifndef GB_MINB33
#define GB_MINB33 2
#endif

#define GB_TI 2
#define GB_TJ 2
#define GB_TX (GB_BJ / GB_TJ)
#define GB_TY (GB_BI / GB_TI)
#define GB_THREADS (GB_TX * GB_TY)

static_assert(GB_THREADS >= GB_BI + GB_BJ && GB_THREADS <= 1024, "a block needs a thread per row and per column SNP");
static_assert(GB_KW >= 3, "the per-SNP KSA terms reuse the plane buffers: GB_KW >= 3");

struct __align__(16) gb_pair64 {
    gb_u64 x, y;
};

// One LOP3 each. Written as inline PTX because the compiler otherwise splits the majority into
// two or three logic ops, and logic ops are what bounds the carry-save count.
__device__ __forceinline__ gb_u32 gb_maj(gb_u32 a, gb_u32 b, gb_u32 c) {
#ifdef __CUDA_ARCH__
    gb_u32 d;
    asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
#else
    return (a & b) | (a & c) | (b & c);
#endif
}

__device__ __forceinline__ gb_u32 gb_xor3(gb_u32 a, gb_u32 b, gb_u32 c) {
#ifdef __CUDA_ARCH__
    gb_u32 d;
    asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
#else
    return a ^ b ^ c;
#endif
}

// Per-thread running summary of its 2 rows (over its 2 columns) and its 2 columns (over its 2 rows).
struct gb_summ {
    int rsig[GB_TI], rtot[GB_TI], rbp[GB_TI];
    double rbest[GB_TI];
    int csig[GB_TJ], ctot[GB_TJ], cbp[GB_TJ];
    double cbest[GB_TJ];
};

// Words [wb, wb + GB_KW) of NT plane types of SNPs [g0, g0 + B), as laid out in shared memory
// s[t][kw][B] (element e = (t * GB_KW + kw) * B + sn), fetched into registers by load() one chunk
// ahead of store(): the next chunk's global loads are in flight while the current one is counted.
// Words past `we` and SNPs past `nvalid` read as zero (they add nothing to any popcount).
template <int NT, int B>
struct gb_stager {
    static const int TOTAL = NT * GB_KW * B;
    static const int PER = (TOTAL + GB_THREADS - 1) / GB_THREADS;
    gb_u64 r[PER];

    __device__ __forceinline__ void load(const gb_u64* __restrict__ planes, int p, int W, int g0, int nvalid,
                                         int wb, int we, int tid) {
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int e = tid + q * GB_THREADS;
            const int sn = e % B, kw = (e / B) % GB_KW, t = e / (B * GB_KW);
            gb_u64 v = 0;
            if (e < TOTAL && wb + kw < we && sn < nvalid)
                v = __ldg(planes + ((gb_size)t * (gb_size)W + (gb_size)(wb + kw)) * (gb_size)p + (gb_size)(g0 + sn));
            r[q] = v;
        }
    }

    __device__ __forceinline__ void store(gb_u64* s, int tid) const {
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int e = tid + q * GB_THREADS;
            if (e < TOTAL) s[e] = r[q];
        }
    }
};

// Cells acc[ii][jj][ta][tb] (ta < NA, tb < NB) of one class over words [w0, w1).
template <int NA, int NB>
__device__ __forceinline__ void gb_count_class(gb_u32 (&acc)[GB_TI][GB_TJ][NA][NB], gb_u64* sA, gb_u64* sB,
                                               const gb_u64* __restrict__ planes_r, int stride_r,
                                               const gb_u64* __restrict__ planes_c, int stride_c, int W,
                                               int gi0, int ni_blk, int gj0, int nj_blk,
                                               int w0, int w1, int tid, int tx, int ty, gb_u32 one) {
#if GB_HS
    gb_u32 ones[GB_TI][GB_TJ][NA][NB];
#endif
#pragma unroll
    for (int ii = 0; ii < GB_TI; ++ii)
#pragma unroll
        for (int jj = 0; jj < GB_TJ; ++jj)
#pragma unroll
            for (int ta = 0; ta < NA; ++ta)
#pragma unroll
                for (int tb = 0; tb < NB; ++tb) {
                    acc[ii][jj][ta][tb] = 0u;
#if GB_HS
                    ones[ii][jj][ta][tb] = 0u;
#endif
                }
    gb_stager<NA, GB_BI> stage_a;
    gb_stager<NB, GB_BJ> stage_b;
    if (w0 < w1) {
        stage_a.load(planes_r, stride_r, W, gi0, ni_blk, w0, w1, tid);
        stage_b.load(planes_c, stride_c, W, gj0, nj_blk, w0, w1, tid);
    }
    for (int wb = w0; wb < w1; wb += GB_KW) {
        const int nk = min(GB_KW, w1 - wb);
        __syncthreads();  // everyone is done with the previous chunk
        stage_a.store(sA, tid);
        stage_b.store(sB, tid);
        __syncthreads();
        if (wb + GB_KW < w1) {  // the next chunk's loads overlap this chunk's counting
            stage_a.load(planes_r, stride_r, W, gi0, ni_blk, wb + GB_KW, w1, tid);
            stage_b.load(planes_c, stride_c, W, gj0, nj_blk, wb + GB_KW, w1, tid);
        }
#pragma unroll 2
        for (int kw = 0; kw < nk; ++kw) {
            gb_u64 a[NA][GB_TI], b[NB][GB_TJ];
#pragma unroll
            for (int ta = 0; ta < NA; ++ta) {
                const gb_pair64 v = *reinterpret_cast<const gb_pair64*>(sA + (ta * GB_KW + kw) * GB_BI + ty * GB_TI);
                a[ta][0] = v.x;
                a[ta][1] = v.y;
            }
#pragma unroll
            for (int tb = 0; tb < NB; ++tb) {
                const gb_pair64 v = *reinterpret_cast<const gb_pair64*>(sB + (tb * GB_KW + kw) * GB_BJ + tx * GB_TJ);
                b[tb][0] = v.x;
                b[tb][1] = v.y;
            }
#pragma unroll
            for (int ii = 0; ii < GB_TI; ++ii)
#pragma unroll
                for (int jj = 0; jj < GB_TJ; ++jj)
#pragma unroll
                    for (int ta = 0; ta < NA; ++ta)
#pragma unroll
                        for (int tb = 0; tb < NB; ++tb) {
                            const gb_u64 m = a[ta][ii] & b[tb][jj];
#if GB_HS
                            // Full adder: o + lo + hi = 2 * carry + ones' per bit (majority, xor3: one LOP3 each).
                            const gb_u32 lo = (gb_u32)m, hi = (gb_u32)(m >> 32);
                            const gb_u32 o = ones[ii][jj][ta][tb];
                            ones[ii][jj][ta][tb] = gb_xor3(o, lo, hi);
                            const gb_u32 carry = gb_maj(o, lo, hi);
                            acc[ii][jj][ta][tb] += (gb_u32)__popc(carry) * one;
#else
                            acc[ii][jj][ta][tb] += (gb_u32)__popcll(m);
#endif
                        }
        }
    }
#if GB_HS
#pragma unroll
    for (int ii = 0; ii < GB_TI; ++ii)
#pragma unroll
        for (int jj = 0; jj < GB_TJ; ++jj)
#pragma unroll
            for (int ta = 0; ta < NA; ++ta)
#pragma unroll
                for (int tb = 0; tb < NB; ++tb)
                    acc[ii][jj][ta][tb] = 2u * acc[ii][jj][ta][tb] + (gb_u32)__popc(ones[ii][jj][ta][tb]);
#endif
}

// Fill the class-k cells of t[a*6 + b*2 + k] from the counted cells and the per-SNP counts.
template <int NA, int NB>
__device__ __forceinline__ void gb_fill_class(int* t, const gb_u32 (&c)[NA][NB], const int* ci, const int* cj, int k) {
#pragma unroll
    for (int a = 0; a < NA; ++a)
#pragma unroll
        for (int b = 0; b < NB; ++b) t[a * 6 + b * 2 + k] = (int)c[a][b];
    if (NB == 2) {  // column SNP fully called: its third type by subtraction along the row
#pragma unroll
        for (int a = 0; a < NA; ++a) t[a * 6 + 4 + k] = ci[a * 2 + k] - t[a * 6 + k] - t[a * 6 + 2 + k];
    }
    if (NA == 2) {  // row SNP fully called: its third type by subtraction along the column
#pragma unroll
        for (int b = 0; b < 3; ++b) t[12 + b * 2 + k] = cj[b * 2 + k] - t[b * 2 + k] - t[6 + b * 2 + k];
    }
}


template <int NA, int NB>
__device__ __forceinline__ void gb_block_pairs(
    gb_summ& sm, gb_u64* sA, gb_u64* sB, const gb_u64* __restrict__ planes_r, int stride_r, int off_r,
    const gb_u64* __restrict__ planes_c, int stride_c, int off_c, const int* __restrict__ counts,
    const double* tab, const double* __restrict__ thr, int W, int w_ctrl, int i0, int ni,
    int j0, int nj, int diag, int bi0, int bj0, int tid, int tx, int ty, gb_u32* __restrict__ surv_n,
    int surv_cap, int* __restrict__ surv_ij, double* __restrict__ surv_ksa, int* __restrict__ surv_tab, gb_u32 one) {
    gb_u32 c0[GB_TI][GB_TJ][NA][NB], c1[GB_TI][GB_TJ][NA][NB];
    const int ni_blk = min(GB_BI, ni - bi0), nj_blk = min(GB_BJ, nj - bj0);
    gb_count_class<NA, NB>(c0, sA, sB, planes_r, stride_r, planes_c, stride_c, W, off_r + bi0, ni_blk, off_c + bj0,
                           nj_blk, 0, w_ctrl, tid, tx, ty, one);
    gb_count_class<NA, NB>(c1, sA, sB, planes_r, stride_r, planes_c, stride_c, W, off_r + bi0, ni_blk, off_c + bj0,
                           nj_blk, w_ctrl, W, tid, tx, ty, one);
    // Fully called block: per-SNP terms of KSA into the (now free) plane buffers.
    double* rterm = reinterpret_cast<double*>(sA);
    double* cterm = reinterpret_cast<double*>(sB);
    double* consts = rterm + GB_ROW_FIELDS * GB_BI;
    if (NA == 2 && NB == 2) {
        __syncthreads();  // everyone is done counting from sA / sB
        if (tid < GB_BI) {
            if (tid < ni_blk) gb_snp_terms(counts, i0 + bi0 + tid, tab, rterm + tid, GB_BI, true, tid == 0 ? consts : 0);
        } else if (tid < GB_BI + GB_BJ) {
            const int c = tid - GB_BI;
            if (c < nj_blk) gb_snp_terms(counts, j0 + bj0 + c, tab, cterm + c, GB_BJ, false, 0);
        }
        __syncthreads();
    }
#pragma unroll
    for (int ii = 0; ii < GB_TI; ++ii) {
#pragma unroll
        for (int jj = 0; jj < GB_TJ; ++jj) {
            const int r = bi0 + ty * GB_TI + ii, c = bj0 + tx * GB_TJ + jj;
            if (r >= ni || c >= nj) continue;
            const int gi = i0 + r, gj = j0 + c;
            if (diag && gi >= gj) continue;
            int ci[6], cj[6], t[18];
#pragma unroll
            for (int q = 0; q < 6; ++q) {
                ci[q] = __ldg(counts + (gb_size)gi * 6 + q);
                cj[q] = __ldg(counts + (gb_size)gj * 6 + q);
            }
            gb_fill_class<NA, NB>(t, c0[ii][jj], ci, cj, 0);
            gb_fill_class<NA, NB>(t, c1[ii][jj], ci, cj, 1);
            int df;
            const double v = (NA == 2 && NB == 2)
                                 ? gb_ksa_fixed(t, tab, rterm + ty * GB_TI + ii, GB_BI, cterm + tx * GB_TJ + jj, GB_BJ,
                                                consts, df)
                                 : gb_ksa_df(t, tab, df);
            if (df <= 0) continue;
            sm.rtot[ii] += 1;
            sm.ctot[jj] += 1;
            if (v > __ldg(thr + df))
                gb_append(v, gi, gj, t, surv_n, surv_cap, surv_ij, surv_ksa, surv_tab);
            else
                gb_credit(sm, v, __ldg(thr + 5 + df), ii, jj, gi, gj);
        }
    }
}

// Which <NA, NB> a block runs: 2 when no SNP of that side of the block has a missing call.
// Both kernels below derive it the same way; the host launches one gb_screen per mode present.
__device__ __forceinline__ int gb_block_mode(const unsigned char* __restrict__ miss, int i0, int ni, int j0,
                                             int nj, int bi0, int bj0, int tid) {
    int f = 0;
    if (tid < GB_BI && bi0 + tid < ni) f = miss[i0 + bi0 + tid];
    const int any_a = __syncthreads_or(f);
    f = 0;
    if (tid < GB_BJ && bj0 + tid < nj) f = miss[j0 + bj0 + tid];
    const int any_b = __syncthreads_or(f);
    return (any_a ? 2 : 0) + (any_b ? 1 : 0);
}

template <int NA, int NB>
__device__ __forceinline__ void gb_screen(
    const gb_u64* __restrict__ planes_r, int stride_r, int off_r, const gb_u64* __restrict__ planes_c, int stride_c,
    int off_c, const int* __restrict__ counts, const unsigned char* __restrict__ miss,
    const double* __restrict__ xlx, const double* __restrict__ thr, int W, int w_ctrl, int i0, int ni,
    int j0, int nj, int diag, int write_empty, int n_tab, gb_u32* __restrict__ surv_n, int surv_cap,
    int* __restrict__ surv_ij,
    double* __restrict__ surv_ksa, int* __restrict__ surv_tab, int* __restrict__ rp_sig, int* __restrict__ rp_tot,
    double* __restrict__ rp_best, int* __restrict__ rp_partner, int* __restrict__ cp_sig, int* __restrict__ cp_tot,
    double* __restrict__ cp_best, int* __restrict__ cp_partner, int one) {
    __shared__ __align__(16) gb_u64 sA[3 * GB_KW * GB_BI];
    __shared__ __align__(16) gb_u64 sB[3 * GB_KW * GB_BJ];
    __shared__ int s_rsig[GB_BI][GB_TX], s_rtot[GB_BI][GB_TX], s_rbp[GB_BI][GB_TX];
    __shared__ double s_rbest[GB_BI][GB_TX];
    __shared__ int s_csig[GB_BJ][GB_TY], s_ctot[GB_BJ][GB_TY], s_cbp[GB_BJ][GB_TY];
    __shared__ double s_cbest[GB_BJ][GB_TY];

    const int tid = threadIdx.x, tx = tid % GB_TX, ty = tid / GB_TX;
    const int bi0 = blockIdx.y * GB_BI, bj0 = blockIdx.x * GB_BJ;
    // Partials live at [block column][row] and [block row][column], row-/column-major in the tile.
    const gb_size rbase = (gb_size)blockIdx.x * ni + bi0, cbase = (gb_size)blockIdx.y * nj + bj0;

    // A diagonal tile's blocks wholly on or below the diagonal hold no pair: empty partials, done.
    // (A diagonal tile is one whose column range overlaps its row range; it need not be square.)
    if (diag && j0 + bj0 + GB_BJ - 1 <= i0 + bi0) {  // largest j <= smallest i
        if (write_empty) {  // once per tile: by the first of the mode kernels the host launches
            if (tid < GB_BI && bi0 + tid < ni) {
                rp_sig[rbase + tid] = 0; rp_tot[rbase + tid] = 0;
                rp_best[rbase + tid] = gb_neg_inf(); rp_partner[rbase + tid] = -1;
            }
            if (tid < GB_BJ && bj0 + tid < nj) {
                cp_sig[cbase + tid] = 0; cp_tot[cbase + tid] = 0;
                cp_best[cbase + tid] = gb_neg_inf(); cp_partner[cbase + tid] = -1;
            }
        }
        return;
    }
    if (gb_block_mode(miss, i0, ni, j0, nj, bi0, bj0, tid) != (NA - 2) * 2 + (NB - 2)) return;

    const double* tab = xlx;
    if (n_tab > 0) {
        for (int e = tid; e < n_tab; e += GB_THREADS) gb_xlx_s[e] = __ldg(xlx + e);
        __syncthreads();
        tab = gb_xlx_s;
    }

    gb_summ sm;
#pragma unroll
    for (int q = 0; q < GB_TI; ++q) { sm.rsig[q] = 0; sm.rtot[q] = 0; sm.rbp[q] = -1; sm.rbest[q] = gb_neg_inf(); }
#pragma unroll
    for (int q = 0; q < GB_TJ; ++q) { sm.csig[q] = 0; sm.ctot[q] = 0; sm.cbp[q] = -1; sm.cbest[q] = gb_neg_inf(); }

    gb_block_pairs<NA, NB>(sm, sA, sB, planes_r, stride_r, off_r, planes_c, stride_c, off_c, counts, tab, thr, W,
                           w_ctrl, i0, ni, j0, nj, diag, bi0, bj0,
                           tid, tx, ty, surv_n, surv_cap, surv_ij, surv_ksa, surv_tab, (gb_u32)one);

    // Block reduction: thread (tx, ty) holds rows ty*2 + ii over its columns, columns tx*2 + jj over its rows.
#pragma unroll
    for (int ii = 0; ii < GB_TI; ++ii) {
        const int r = ty * GB_TI + ii;
        s_rsig[r][tx] = sm.rsig[ii]; s_rtot[r][tx] = sm.rtot[ii];
        s_rbest[r][tx] = sm.rbest[ii]; s_rbp[r][tx] = sm.rbp[ii];
    }
#pragma unroll
    for (int jj = 0; jj < GB_TJ; ++jj) {
        const int c = tx * GB_TJ + jj;
        s_csig[c][ty] = sm.csig[jj]; s_ctot[c][ty] = sm.ctot[jj];
        s_cbest[c][ty] = sm.cbest[jj]; s_cbp[c][ty] = sm.cbp[jj];
    }
    __syncthreads();
    if (tid < GB_BI) {
        const int r = tid;
        int sg, tt, bp;
        double bv;
        gb_fold_row<GB_TX>(s_rsig[r], s_rtot[r], s_rbest[r], s_rbp[r], sg, tt, bv, bp);
        if (bi0 + r < ni) {
            rp_sig[rbase + r] = sg; rp_tot[rbase + r] = tt; rp_best[rbase + r] = bv; rp_partner[rbase + r] = bp;
        }
    } else if (tid < GB_BI + GB_BJ) {
        const int c = tid - GB_BI;
        int sg, tt, bp;
        double bv;
        gb_fold_row<GB_TY>(s_csig[c], s_ctot[c], s_cbest[c], s_cbp[c], sg, tt, bv, bp);
        if (bj0 + c < nj) {
            cp_sig[cbase + c] = sg; cp_tot[cbase + c] = tt; cp_best[cbase + c] = bv; cp_partner[cbase + c] = bp;
        }
    }
}

#define GB_SCREEN_ARGS                                                                                        \
    const gb_u64 *__restrict__ planes_r, int stride_r, int off_r, const gb_u64 *__restrict__ planes_c,      \
        int stride_c, int off_c, const int *__restrict__ counts, const unsigned char *__restrict__ miss,      \
        const double *__restrict__ xlx, const double *__restrict__ thr, int W, int w_ctrl, int i0,            \
        int ni, int j0, int nj, int diag, int write_empty, int n_tab, gb_u32 *__restrict__ surv_n,            \
        int surv_cap, int *__restrict__ surv_ij, double *__restrict__ surv_ksa, int *__restrict__ surv_tab,   \
        int *__restrict__ rp_sig, int *__restrict__ rp_tot, double *__restrict__ rp_best,                     \
        int *__restrict__ rp_partner, int *__restrict__ cp_sig, int *__restrict__ cp_tot,                     \
        double *__restrict__ cp_best, int *__restrict__ cp_partner, int one
#define GB_SCREEN_PASS                                                                                       \
    planes_r, stride_r, off_r, planes_c, stride_c, off_c, counts, miss, xlx, thr, W, w_ctrl, i0, ni, j0, nj,  \
        diag, write_empty, n_tab, surv_n, surv_cap,                                                           \
        surv_ij, surv_ksa, surv_tab, rp_sig, rp_tot, rp_best, rp_partner, cp_sig, cp_tot, cp_best, cp_partner, one

// One kernel per mode, so each gets the registers its own cell count needs: <2,2> fits three
// blocks per SM without spilling in its counting loop, the others two.
extern "C" __global__ void __launch_bounds__(GB_THREADS, GB_MINB22) gb_screen_22(GB_SCREEN_ARGS) { gb_screen<2, 2>(GB_SCREEN_PASS); }
extern "C" __global__ void __launch_bounds__(GB_THREADS, GB_MINB23) gb_screen_23(GB_SCREEN_ARGS) { gb_screen<2, 3>(GB_SCREEN_PASS); }
extern "C" __global__ void __launch_bounds__(GB_THREADS, GB_MINB23) gb_screen_32(GB_SCREEN_ARGS) { gb_screen<3, 2>(GB_SCREEN_PASS); }
extern "C" __global__ void __launch_bounds__(GB_THREADS, GB_MINB33) gb_screen_33(GB_SCREEN_ARGS) { gb_screen<3, 3>(GB_SCREEN_PASS); }
