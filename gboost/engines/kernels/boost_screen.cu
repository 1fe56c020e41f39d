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
// Missing calls by correction (mode 4, gb_screen_2c): missing calls are sparse (~1 % on real chips),
// so a block whose SNPs all have short lists of missing samples counts the 4 cells of <2,2> (exact
// with missing calls: a missing call sets no plane bit) and takes the rest from five counts a pair and
// class, each a sum over one SNP's list: c_t = #(row SNP of type t at the column SNP's missing samples),
// t = 0, 1, 2, and d_t = #(column SNP of type t at the row SNP's missing samples), t = 0, 1
// (gb_fill_corrected). They are summed 32 SNPs at a time in bit-sliced counters from a sample-major copy
// of the planes (gt, gb_transpose_planes) at the samples of each SNP's list (lst, gb_miss_lists):
// a few dozen loads and adds a list instead of 5 more dense products per word (the 9 of <3,3>).
// miss[] holds 0 (fully called), 1 (listed) or GB_UNLISTED = 2 (missing calls, not listed: the direct modes).
// The references: gboost/engines/gpu/missing_lists.py.
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
#define GB_UNLISTED 2  // miss[] of a SNP with missing calls that is not listed (missing_lists.UNLISTED)
#ifndef GB_MINB2C  // the mode-4 kernel (counting by correction): three blocks per SM, as <2,2>. Its correction
#define GB_MINB2C GB_MINB22  // loop is latency-bound: faster than with two (bench/bench_popc_missing.py, minb2)
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
typedef gb_summary<GB_TI, GB_TJ> gb_summ;

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



// ---- Counting by correction (mode 4) ----------------------------------------------------------------
// Both classes' corrections in the plane buffers once the counting is done with them, one byte a count
// (a list holds at most 255 samples, gboost/engines/gpu/missing_lists.py): cC[k][t][c][r] in sA (t = 0,
// 1, 2), cR[k][t][r][c] in sB (t = 0, 1). A column's row counts are whole words XOR-swizzled by the
// column (GB_CSW), and a row's column counts take 4 bytes more than the block's columns, so that a
// warp's reads of its pairs' counts fall on distinct banks (two-way at most).
#define GB_CROW GB_BI
#define GB_RROW (GB_BJ + 4)
#define GB_CSW(c) ((((GB_BI / 4) & (GB_BI / 4 - 1)) == 0) ? (((c) >> 1) & (GB_BI / 4 - 1)) : 0)
#define GB_CORR_FITS (GB_BI % 4 == 0 && GB_BJ % 4 == 0 && 6 * GB_BJ * GB_CROW <= 3 * GB_KW * GB_BI * 8 && \
                      4 * GB_BI * GB_RROW <= 3 * GB_KW * GB_BJ * 8)
#define GB_CBITS 8  // bits of a bit-sliced counter: counts up to 255
// Samples of a list an iteration of gb_corrections (even). 8 was slower with missing calls: its registers
// spilled more, and few lists are longer than 4 iterations of 4.
#define GB_CSTEP 4

// v += a + b for 32 counters at once (bit q of v[b] is bit b of counter q): a full adder at the lowest
// bit, its carry rippled up.
__device__ __forceinline__ void gb_vadd2(gb_u32 (&v)[GB_CBITS], gb_u32 a, gb_u32 b) {
    gb_u32 c = gb_maj(v[0], a, b);
    v[0] = gb_xor3(v[0], a, b);
#pragma unroll
    for (int q = 1; q < GB_CBITS; ++q) {
        const gb_u32 t = v[q] & c;
        v[q] ^= c;
        c = t;
    }
}

// Counters 4m .. 4m + 3 as the bytes of one word (m a compile-time constant where unrolled). The
// multiply spreads a nibble's bits to bits 0, 8, 16, 24 without carries.
__device__ __forceinline__ gb_u32 gb_vbytes4(const gb_u32 (&v)[GB_CBITS], int m) {
    gb_u32 w = 0u;
#pragma unroll
    for (int b = 0; b < GB_CBITS; ++b) w |= (((v[b] >> (4 * m)) & 0xFu) * 0x00204081u & 0x01010101u) << b;
    return w;
}

// Bits at sample s of plane t of the 32 SNPs from global SNP g * 32 + sh on (bit q: SNP g * 32 + sh + q).
// gt is [group][type][sample]: one 32-bit word a group of 32 SNPs; SNPs past the study read as zero.
__device__ __forceinline__ gb_u32 gb_tword(const gb_u32* __restrict__ gt, gb_size S, int G, int g, int sh, int t,
                                           int s) {
    const gb_u32 lo = g < G ? __ldg(gt + ((gb_size)g * 3 + t) * S + (gb_size)s) : 0u;
    if (sh == 0) return lo;
    const gb_u32 hi = g + 1 < G ? __ldg(gt + ((gb_size)(g + 1) * 3 + t) * S + (gb_size)s) : 0u;
    return __funnelshift_r(lo, hi, sh);
}

// Both classes' corrections of every pair of the block into cC and cR. Tasks: (column SNP, 32 rows) for
// types 0 and 1, the same for type 2, (row SNP, 32 columns) for types 0 and 1; a task walks its SNP's
// list of each class (lst[g][k]: the count, then the samples, class-relative; class 1's plane bits
// start at 64 w_ctrl).
__device__ void gb_corrections(unsigned char* cC, unsigned char* cR, const unsigned short* __restrict__ lst, int L1,
                               const gb_u32* __restrict__ gt, gb_size S, int G, int w_ctrl, int i0, int ni,
                               int j0, int nj, int bi0, int bj0, int tid) {
    const int nqr = (GB_BI + 31) / 32, nqc = (GB_BJ + 31) / 32;
    const int n_col = GB_BJ * nqr, n_row = GB_BI * nqc;
    for (int task = tid; task < 2 * n_col + n_row; task += GB_THREADS) {
        int role, snp, q;
        if (task < 2 * n_col) {
            role = task < n_col ? 0 : 1;
            const int u = task - role * n_col;
            snp = u % GB_BJ;
            q = u / GB_BJ;
        } else {
            role = 2;
            const int u = task - 2 * n_col;
            snp = u % GB_BI;
            q = u / GB_BI;
        }
        const bool col = role < 2;
        const int gs = col ? (bj0 + snp < nj ? j0 + bj0 + snp : -1) : (bi0 + snp < ni ? i0 + bi0 + snp : -1);
        const int gbase = col ? i0 + bi0 + 32 * q : j0 + bj0 + 32 * q;
        const int g = gbase >> 5, sh = gbase & 31;
        const int ta = role == 1 ? 2 : 0;
        const bool two = role != 1;
#pragma unroll 1
        for (int k = 0; k < 2; ++k) {
            gb_u32 va[GB_CBITS], vb[GB_CBITS];
#pragma unroll
            for (int b = 0; b < GB_CBITS; ++b) va[b] = vb[b] = 0u;
            if (gs >= 0) {
                // GB_CSTEP samples an iteration, the next ones' places loaded one iteration ahead: the
                // loop is bound by the latency of its scattered loads, so each round trip carries
                // as many as it can (a sample past the list reads as no bits).
                const unsigned short* L = lst + ((gb_size)gs * 2 + k) * (gb_size)L1 + 1;
                const int m = __ldg(L - 1), s0 = k ? 64 * w_ctrl : 0;
                int nx[GB_CSTEP];
#pragma unroll
                for (int e = 0; e < GB_CSTEP; ++e) nx[e] = e < m ? s0 + __ldg(L + e) : -1;
                for (int x = 0; x < m; x += GB_CSTEP) {
                    int cur[GB_CSTEP];
#pragma unroll
                    for (int e = 0; e < GB_CSTEP; ++e) {
                        cur[e] = nx[e];
                        nx[e] = x + GB_CSTEP + e < m ? s0 + __ldg(L + (x + GB_CSTEP + e)) : -1;
                    }
                    gb_u32 wa[GB_CSTEP], wb[GB_CSTEP];
#pragma unroll
                    for (int e = 0; e < GB_CSTEP; ++e) {
                        wa[e] = cur[e] >= 0 ? gb_tword(gt, S, G, g, sh, ta, cur[e]) : 0u;
                        wb[e] = two && cur[e] >= 0 ? gb_tword(gt, S, G, g, sh, 1, cur[e]) : 0u;
                    }
#pragma unroll
                    for (int e = 0; e < GB_CSTEP; e += 2) {
                        gb_vadd2(va, wa[e], wa[e + 1]);
                        if (two) gb_vadd2(vb, wb[e], wb[e + 1]);
                    }
                }
            }
            if (col) {
                gb_u32* oa = reinterpret_cast<gb_u32*>(cC + ((k * 3 + ta) * GB_BJ + snp) * GB_CROW);
                gb_u32* ob = reinterpret_cast<gb_u32*>(cC + ((k * 3 + 1) * GB_BJ + snp) * GB_CROW);
                const int sw = GB_CSW(snp);
#pragma unroll
                for (int m = 0; m < 8; ++m) {
                    if (32 * q + 4 * m < GB_BI) {
                        oa[(8 * q + m) ^ sw] = gb_vbytes4(va, m);
                        if (two) ob[(8 * q + m) ^ sw] = gb_vbytes4(vb, m);
                    }
                }
            } else {
                gb_u32* oa = reinterpret_cast<gb_u32*>(cR + ((k * 2) * GB_BI + snp) * GB_RROW);
                gb_u32* ob = reinterpret_cast<gb_u32*>(cR + ((k * 2 + 1) * GB_BI + snp) * GB_RROW);
#pragma unroll
                for (int m = 0; m < 8; ++m) {
                    if (32 * q + 4 * m < GB_BJ) {
                        oa[8 * q + m] = gb_vbytes4(va, m);
                        ob[8 * q + m] = gb_vbytes4(vb, m);
                    }
                }
            }
        }
    }
}

// Class k's cells of pair (r, c) of the block from the 4 counted ones (types 0 and 1 of both SNPs) and
// its corrections (the header's c_t, d_t): each further cell is a SNP's count of its type less the cells
// of that type counted and those at the other SNP's missing samples.
__device__ __forceinline__ void gb_fill_corrected(int* t, const gb_u32 (&c)[2][2], const unsigned char* cC,
                                                  const unsigned char* cR, int r, int cl, const int* ci,
                                                  const int* cj, int k) {
    const int rb = (((r >> 2) ^ GB_CSW(cl)) << 2) + (r & 3);  // the swizzled byte of row r in column cl's counts
    const int c0 = cC[((k * 3) * GB_BJ + cl) * GB_CROW + rb];
    const int c1 = cC[((k * 3 + 1) * GB_BJ + cl) * GB_CROW + rb];
    const int c2 = cC[((k * 3 + 2) * GB_BJ + cl) * GB_CROW + rb];
    const int d0 = cR[((k * 2) * GB_BI + r) * GB_RROW + cl];
    const int d1 = cR[((k * 2 + 1) * GB_BI + r) * GB_RROW + cl];
    t[k] = (int)c[0][0];
    t[2 + k] = (int)c[0][1];
    t[6 + k] = (int)c[1][0];
    t[8 + k] = (int)c[1][1];
    t[4 + k] = ci[k] - t[k] - t[2 + k] - c0;           // row type 0, column type 2
    t[10 + k] = ci[2 + k] - t[6 + k] - t[8 + k] - c1;  // row type 1, column type 2
    t[12 + k] = cj[k] - t[k] - t[6 + k] - d0;          // row type 2, column type 0
    t[14 + k] = cj[2 + k] - t[2 + k] - t[8 + k] - d1;  // row type 2, column type 1
    t[16 + k] = ci[4 + k] - t[12 + k] - t[14 + k] - c2;
}

// The block's pairs: count, correct (CORR: mode 4, <2,2> counting), KSA, survivors and summaries.
template <int NA, int NB, bool CORR>
__device__ __forceinline__ void gb_block_pairs(
    gb_summ& sm, gb_u64* sA, gb_u64* sB, const gb_u64* __restrict__ planes_r, int stride_r, int off_r,
    const gb_u64* __restrict__ planes_c, int stride_c, int off_c, const int* __restrict__ counts,
    const double* tab, const double* __restrict__ thr, int W, int w_ctrl, int i0, int ni,
    int j0, int nj, int diag, int bi0, int bj0, int tid, int tx, int ty, gb_u32* __restrict__ surv_n,
    int surv_cap, int* __restrict__ surv_ij, double* __restrict__ surv_ksa, int* __restrict__ surv_tab, gb_u32 one,
    const gb_u32* __restrict__ gt, gb_size S, int G, const unsigned short* __restrict__ lst, int L1) {
    gb_u32 c0[GB_TI][GB_TJ][NA][NB], c1[GB_TI][GB_TJ][NA][NB];
    const int ni_blk = min(GB_BI, ni - bi0), nj_blk = min(GB_BJ, nj - bj0);
    gb_count_class<NA, NB>(c0, sA, sB, planes_r, stride_r, planes_c, stride_c, W, off_r + bi0, ni_blk, off_c + bj0,
                           nj_blk, 0, w_ctrl, tid, tx, ty, one);
    gb_count_class<NA, NB>(c1, sA, sB, planes_r, stride_r, planes_c, stride_c, W, off_r + bi0, ni_blk, off_c + bj0,
                           nj_blk, w_ctrl, W, tid, tx, ty, one);
    // Mode 4: the corrections into the (now free) plane buffers, after the counting so that they hold no
    // registers through its loop.
    const unsigned char* cC = reinterpret_cast<const unsigned char*>(sA);
    const unsigned char* cR = reinterpret_cast<const unsigned char*>(sB);
    if constexpr (CORR) {
        __syncthreads();  // everyone is done counting from sA / sB
        gb_corrections(reinterpret_cast<unsigned char*>(sA), reinterpret_cast<unsigned char*>(sB), lst, L1, gt, S, G,
                       w_ctrl, i0, ni, j0, nj, bi0, bj0, tid);
        __syncthreads();
    }
    // Fully called block: per-SNP terms of KSA into the (now free) plane buffers.
    double* rterm = reinterpret_cast<double*>(sA);
    double* cterm = reinterpret_cast<double*>(sB);
    double* consts = rterm + GB_ROW_FIELDS * GB_BI;
    if (NA == 2 && NB == 2 && !CORR) {
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
            if constexpr (CORR) {
                gb_fill_corrected(t, c0[ii][jj], cC, cR, r - bi0, c - bj0, ci, cj, 0);
                gb_fill_corrected(t, c1[ii][jj], cC, cR, r - bi0, c - bj0, ci, cj, 1);
            } else {
                gb_fill_class<NA, NB>(t, c0[ii][jj], ci, cj, 0);
                gb_fill_class<NA, NB>(t, c1[ii][jj], ci, cj, 1);
            }
            int df;
            const double v = (NA == 2 && NB == 2 && !CORR)
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

// Which mode a block runs: 4 (counting by correction) where some SNP of the block has missing calls and
// every such SNP is listed; else 2 * (rows have missing calls) + (columns have). Every CUDA-core kernel
// derives it the same way (and the host, missing_lists.block_modes); the host launches one kernel per mode
// present. (A rule on the block's list lengths, summed here, cost every kernel a few percent: its registers
// spilled. Where lists cost more than the direct count the host lists no SNP, missing_lists.plan_lists.)
__device__ __forceinline__ int gb_block_mode(const unsigned char* __restrict__ miss, int i0, int ni, int j0,
                                             int nj, int bi0, int bj0, int tid) {
    int fa = 0, fb = 0;
    if (tid < GB_BI && bi0 + tid < ni) fa = __ldg(miss + (i0 + bi0 + tid));
    if (tid < GB_BJ && bj0 + tid < nj) fb = __ldg(miss + (j0 + bj0 + tid));
    const int any_a = __syncthreads_or(fa);
    const int any_b = __syncthreads_or(fb);
    const int unlisted = __syncthreads_or(fa == GB_UNLISTED || fb == GB_UNLISTED);
    if ((any_a || any_b) && !unlisted) return 4;
    return (any_a ? 2 : 0) + (any_b ? 1 : 0);
}

// The CUDA-core kernels' arguments: the tile's (n_k: the plane words W, k_ctrl: the controls' w_ctrl),
// `one` (1: see the header), then mode 4's (gb_screen_2c; zeros for the other modes): gt, S (samples a
// plane row of gt: 64 x plane words), G (its groups of 32 SNPs), lst and L1 (entries a list, its count
// included) from gboost/engines/gpu/missing_lists.py.
struct gb_params {
    gb_tile_args t;
    int one;
    const gb_u32* gt;
    long long S;
    int G;
    const unsigned short* lst;
    int L1;
};

template <int NA, int NB, bool CORR>
__device__ __forceinline__ void gb_screen(const gb_params& p) {
    const gb_u64* __restrict__ planes_r = p.t.planes_r;
    const int stride_r = p.t.stride_r, off_r = p.t.off_r;
    const gb_u64* __restrict__ planes_c = p.t.planes_c;
    const int stride_c = p.t.stride_c, off_c = p.t.off_c;
    const int* __restrict__ counts = p.t.counts;
    const unsigned char* __restrict__ miss = p.t.miss;
    const double* __restrict__ xlx = p.t.xlx;
    const double* __restrict__ thr = p.t.thr;
    const int W = p.t.n_k, w_ctrl = p.t.k_ctrl;
    const int i0 = p.t.i0, ni = p.t.ni, j0 = p.t.j0, nj = p.t.nj;
    const int diag = p.t.diag, write_empty = p.t.write_empty, n_tab = p.t.n_tab;
    gb_u32* __restrict__ surv_n = p.t.surv_n;
    const int surv_cap = p.t.surv_cap;
    int* __restrict__ surv_ij = p.t.surv_ij;
    double* __restrict__ surv_ksa = p.t.surv_ksa;
    int* __restrict__ surv_tab = p.t.surv_tab;
    const int one = p.one;
    // (mode 4's inputs; the other modes never read them)
    const gb_u32* __restrict__ gt = CORR ? p.gt : 0;
    const gb_size S = CORR ? (gb_size)p.S : 0;
    const int G = CORR ? p.G : 0;
    const unsigned short* __restrict__ lst = CORR ? p.lst : 0;
    const int L1 = CORR ? p.L1 : 0;
    __shared__ __align__(16) gb_u64 sA[3 * GB_KW * GB_BI];
    __shared__ __align__(16) gb_u64 sB[3 * GB_KW * GB_BJ];
    __shared__ int s_rsig[GB_BI][GB_TX], s_rtot[GB_BI][GB_TX], s_rbp[GB_BI][GB_TX];
    __shared__ double s_rbest[GB_BI][GB_TX];
    __shared__ int s_csig[GB_BJ][GB_TY], s_ctot[GB_BJ][GB_TY], s_cbp[GB_BJ][GB_TY];
    __shared__ double s_cbest[GB_BJ][GB_TY];
    const gb_block_partials<GB_BI, GB_BJ, GB_TX, GB_TY> s_part = {s_rsig, s_rtot, s_rbp, s_rbest, s_csig, s_ctot, s_cbp, s_cbest};

    const int tid = threadIdx.x, tx = tid % GB_TX, ty = tid / GB_TX;
    const int bi0 = blockIdx.y * GB_BI, bj0 = blockIdx.x * GB_BJ;
    // Partials live at [block column][row] and [block row][column], row-/column-major in the tile.
    const gb_size rbase = (gb_size)blockIdx.x * ni + bi0, cbase = (gb_size)blockIdx.y * nj + bj0;
    const gb_partials_out& out = p.t.part;

    // A diagonal tile's blocks wholly on or below the diagonal hold no pair: empty partials, done.
    // (A diagonal tile is one whose column range overlaps its row range; it need not be square.)
    if (diag && j0 + bj0 + GB_BJ - 1 <= i0 + bi0) {  // largest j <= smallest i
        if (write_empty) gb_empty_partials<GB_BI, GB_BJ>(out, rbase, cbase, tid, bi0, ni, bj0, nj);
        return;
    }
    if (gb_block_mode(miss, i0, ni, j0, nj, bi0, bj0, tid) != (CORR ? 4 : (NA - 2) * 2 + (NB - 2))) return;

    const double* tab = xlx;
    if (n_tab > 0) {
        for (int e = tid; e < n_tab; e += GB_THREADS) gb_xlx_s[e] = __ldg(xlx + e);
        __syncthreads();
        tab = gb_xlx_s;
    }

    gb_summ sm;
    sm.reset_rows();
    sm.reset_cols();

    gb_block_pairs<NA, NB, CORR>(sm, sA, sB, planes_r, stride_r, off_r, planes_c, stride_c, off_c, counts, tab, thr,
                                 W, w_ctrl, i0, ni, j0, nj, diag, bi0, bj0,
                                 tid, tx, ty, surv_n, surv_cap, surv_ij, surv_ksa, surv_tab, (gb_u32)one, gt, S, G, lst,
                                 L1);

    // Block reduction: thread (tx, ty) holds rows ty*2 + ii over its columns, columns tx*2 + jj over its rows.
#pragma unroll
    for (int ii = 0; ii < GB_TI; ++ii) s_part.put_row(ty * GB_TI + ii, tx, sm, ii);
#pragma unroll
    for (int jj = 0; jj < GB_TJ; ++jj) s_part.put_col(tx * GB_TJ + jj, ty, sm, jj);
    __syncthreads();
    s_part.write(out, rbase, cbase, tid, bi0, ni, bj0, nj);
}

// One kernel per mode, so each gets the registers its own cell count needs: <2,2> fits three
// blocks per SM without spilling in its counting loop, the others two.
extern "C" __global__ void __launch_bounds__(GB_THREADS, GB_MINB22) gb_screen_22(const gb_params p) { gb_screen<2, 2, false>(p); }
extern "C" __global__ void __launch_bounds__(GB_THREADS, GB_MINB23) gb_screen_23(const gb_params p) { gb_screen<2, 3, false>(p); }
extern "C" __global__ void __launch_bounds__(GB_THREADS, GB_MINB23) gb_screen_32(const gb_params p) { gb_screen<3, 2, false>(p); }
extern "C" __global__ void __launch_bounds__(GB_THREADS, GB_MINB33) gb_screen_33(const gb_params p) { gb_screen<3, 3, false>(p); }
// Mode 4, counting by correction. A block shape whose corrections do not fit the plane buffers never gets a
// listed SNP (KernelConfig.corrects).
extern "C" __global__ void __launch_bounds__(GB_THREADS, GB_MINB2C) gb_screen_2c(const gb_params p) {
#if GB_CORR_FITS
    gb_screen<2, 2, true>(p);
#else
    __trap();
#endif
}

// ---- The correction's inputs, built as each chunk of the resident planes lands ----------------------
// gt[g][t][s], bit q: bit s of plane t of SNP 32 g + q; for chunk x ([n][3][W] words, SNP-major) whose
// first SNP is 32 * g0. A warp per (group, type, word): lane q loads SNP 32 g + q's word, and 64 ballots
// turn the 32 x 64 bits around. (Reference: missing_lists.transpose_ref.)
extern "C" __global__ void gb_transpose_planes(const gb_u64* __restrict__ x, int n, int W, int g0, long long S,
                                               gb_u32* __restrict__ gt) {
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    const int ng = (n + 31) >> 5;
    if (warp >= (long long)ng * 3 * W) return;  // (whole warps: blockDim is a multiple of 32)
    const int w = (int)(warp % W), t = (int)((warp / W) % 3), g = (int)(warp / (3LL * W));
    const int r = g * 32 + lane;
    const gb_u64 v = r < n ? __ldg(x + ((gb_size)r * 3 + t) * (gb_size)W + w) : 0ull;
    const gb_u32 lo = (gb_u32)v, hi = (gb_u32)(v >> 32);
    gb_u32 mlo = 0u, mhi = 0u;
#pragma unroll
    for (int b = 0; b < 32; ++b) {
        const gb_u32 a = __ballot_sync(0xffffffffu, (lo >> b) & 1u);
        const gb_u32 c = __ballot_sync(0xffffffffu, (hi >> b) & 1u);
        if (lane == b) {
            mlo = a;
            mhi = c;
        }
    }
    gb_u32* out = gt + ((gb_size)(g0 + g) * 3 + t) * (gb_size)S + (gb_size)w * 64;
    out[lane] = mlo;
    out[32 + lane] = mhi;
}

// lst[g][k] for the SNPs of chunk x (whose first SNP is o) that mode 4 may meet (all but GB_UNLISTED): the number
// of samples of class k with no call, then each one's place in its class (below 2^16). A thread per SNP
// and class.
// (Reference: missing_lists.lists_ref.)
extern "C" __global__ void gb_miss_lists(const gb_u64* __restrict__ x, int n, int W, int w_ctrl, int n_ctrl,
                                         int n_case, int o, const unsigned char* __restrict__ miss, int L1,
                                         unsigned short* __restrict__ lst) {
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= 2 * n) return;
    const int r = e >> 1, k = e & 1, g = o + r;
    if (miss[g] == GB_UNLISTED) return;  // (never in a block of mode 4)
    unsigned short* out = lst + ((gb_size)g * 2 + k) * (gb_size)L1;
    if (miss[g] == 0) {  // fully called: an empty list (mode 4's blocks hold such SNPs too)
        out[0] = 0;
        return;
    }
    const gb_u64* row = x + (gb_size)r * 3 * (gb_size)W;
    const int wa = k ? w_ctrl : 0, wb = k ? W : w_ctrl, nk = k ? n_case : n_ctrl;
    int m = 0;
    for (int w = wa; w < wb; ++w) {
        const int base = (w - wa) * 64, left = nk - base;
        const gb_u64 valid = left >= 64 ? ~0ull : (1ull << left) - 1ull;
        gb_u64 mm = ~(row[w] | row[W + w] | row[2 * W + w]) & valid;
        while (mm) {
            if (m + 1 < L1) out[1 + m] = (unsigned short)(base + __ffsll((long long)mm) - 1);
            ++m;
            mm &= mm - 1ull;
        }
    }
    out[0] = (unsigned short)min(m, L1 - 1);
}
