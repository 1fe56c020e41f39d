// Shared device code of the screen kernels (boost_screen.cu: CUDA-core popcounts; boost_mma.cu:
// binary tensor cores): KSA and DF exactly as gboost/stats/fastksa.py:ksa_df_lookup, the per-SNP
// terms of fully called blocks, PLINK's partner order, and the fold of per-block partial summaries.
// gboost/engines/gpu/compile.py compiles this file in front of either kernel file (one NVRTC module each).

typedef unsigned long long gb_u64;
typedef unsigned int gb_u32;
typedef unsigned long long gb_size;  // 64-bit indexing (NVRTC has no size_t without headers)

__device__ __forceinline__ double gb_neg_inf() { return __longlong_as_double(0xfff0000000000000ULL); }

// Larger value wins, ties go to the smaller partner. Within one partial every partner lies on the
// same side of the SNP (after it for a row, before it for a column), where PLINK's order
// (gboost.pipeline.tiles.better, docs/DESIGN.md §4) comes down to exactly this.
__device__ __forceinline__ bool gb_better(double v, int q, double bv, int bq) {
    return v > bv || (v == bv && q < bq);
}

// tau * N = sum_ab n_ab / (n_a n_b) * sum_k n_ak n_bk / n_k, term by term in the order (a, b) =
// (0,0), (0,1), ..., (2,2), exactly as fastksa.ksa_df_lookup sums it. ak[a][k] = n_ak, bk[b][k] = n_bk,
// ra / rb the reciprocals of n_a / n_b, i0 / i1 those of n_0 / n_1.
__device__ __forceinline__ double gb_tau(const int* t, const int (&ak)[3][2], const int (&bk)[3][2],
                                         const double (&ra)[3], const double (&rb)[3], double i0, double i1) {
    typedef long long ll;  // products of two counts need 64 bits beyond 46k samples
    double tau = 0.0;
#pragma unroll
    for (int a = 0; a < 3; ++a)
#pragma unroll
        for (int b = 0; b < 3; ++b)
            tau += (double)(t[a * 6 + b * 2] + t[a * 6 + b * 2 + 1]) * ra[a] * rb[b] *
                   ((double)((ll)ak[a][0] * (ll)bk[b][0]) * i0 + (double)((ll)ak[a][1] * (ll)bk[b][1]) * i1);
    return tau;
}

// KSA and PLINK 1.9's DF of the table t[a*6 + b*2 + k], the same operations in the same order as
// gboost/stats/fastksa.py:ksa_df_lookup (the CPU engine's): integer margins, reciprocals for tau,
// no floating-point work for an invalid pair (df = 0). Keep the two in step: the GPU tests compare
// KSA to 1e-10 and the screen decisions exactly.
__device__ __forceinline__ double gb_ksa_df(const int* t, const double* tab, int& df) {
    const int a00 = t[0] + t[2] + t[4], a01 = t[1] + t[3] + t[5];  // n_ak: SNP1 type a, class k
    const int a10 = t[6] + t[8] + t[10], a11 = t[7] + t[9] + t[11];
    const int a20 = t[12] + t[14] + t[16], a21 = t[13] + t[15] + t[17];
    const int b00 = t[0] + t[6] + t[12], b01 = t[1] + t[7] + t[13];  // n_bk: SNP2 type b, class k
    const int b10 = t[2] + t[8] + t[14], b11 = t[3] + t[9] + t[15];
    const int b20 = t[4] + t[10] + t[16], b21 = t[5] + t[11] + t[17];
    const int na0 = a00 + a01, na1 = a10 + a11, na2 = a20 + a21;
    const int nb0 = b00 + b01, nb1 = b10 + b11, nb2 = b20 + b21;
    const int empty_a = (na0 == 0) + (na1 == 0) + (na2 == 0);
    const int empty_b = (nb0 == 0) + (nb1 == 0) + (nb2 == 0);
    if (empty_a > 1 || empty_b > 1) {
        df = 0;
        return 0.0;
    }
    df = 4 >> (empty_a + empty_b);
    const int n0 = a00 + a10 + a20, n1 = a01 + a11 + a21;
    const int total = n0 + n1;
    double s = 0.0;
#pragma unroll
    for (int q = 0; q < 9; ++q) {
        const int c0 = t[2 * q], c1 = t[2 * q + 1];
        s += tab[c0] + tab[c1] - tab[c0 + c1];
    }
    s -= tab[a00] + tab[a01] + tab[a10] + tab[a11] + tab[a20] + tab[a21];
    s -= tab[b00] + tab[b01] + tab[b10] + tab[b11] + tab[b20] + tab[b21];
    s += tab[na0] + tab[na1] + tab[na2] + tab[nb0] + tab[nb1] +
         tab[nb2] + tab[n0] + tab[n1];
    const double i0 = n0 > 0 ? 1.0 / (double)n0 : 0.0, i1 = n1 > 0 ? 1.0 / (double)n1 : 0.0;
    const double ra0 = na0 > 0 ? 1.0 / (double)na0 : 0.0, ra1 = na1 > 0 ? 1.0 / (double)na1 : 0.0;
    const double ra2 = na2 > 0 ? 1.0 / (double)na2 : 0.0;
    const double rb0 = nb0 > 0 ? 1.0 / (double)nb0 : 0.0, rb1 = nb1 > 0 ? 1.0 / (double)nb1 : 0.0;
    const double rb2 = nb2 > 0 ? 1.0 / (double)nb2 : 0.0;
    const int ak[3][2] = {{a00, a01}, {a10, a11}, {a20, a21}}, bk[3][2] = {{b00, b01}, {b10, b11}, {b20, b21}};
    const double ra[3] = {ra0, ra1, ra2}, rb[3] = {rb0, rb1, rb2};
    const double tau = gb_tau(t, ak, bk, ra, rb, i0, i1);
    const double ftotal = (double)total;
    return 2.0 * (s + ftotal * log(tau / ftotal));
}

// Per-SNP terms of gb_ksa_df for a block whose SNPs are all fully called (mode <2,2>): there the
// margins n_ak, n_bk, n_a, n_b, n_k of every pair's table are the SNPs' own counts, so their
// c ln c sums and reciprocals are computed once per SNP (gb_snp_terms) instead of once per pair.
// gb_ksa_fixed then does the pair's part with the same operations in the same order as
// gb_ksa_df, so the two agree bit for bit. Layout in shared memory: field f of SNP k at
// [f * B + k]; rows: S_a, R_a, 1/n_a0..2, empties; columns: S_b, x(n_b0..2), 1/n_b0..2, empties;
// then the class constants x(n_0), x(n_1), 1/n_0, 1/n_1 after the row fields.
#define GB_ROW_FIELDS 6
#define GB_COL_FIELDS 8
__device__ __forceinline__ double gb_recip(int n) { return n > 0 ? 1.0 / (double)n : 0.0; }

__device__ __forceinline__ void gb_snp_terms(const int* __restrict__ counts, int g, const double* tab, double* out,
                                             int stride, bool as_row, double* consts) {
    int c[6];
#pragma unroll
    for (int q = 0; q < 6; ++q) c[q] = __ldg(counts + (gb_size)g * 6 + q);  // [type * 2 + class]
    const int n0 = c[0] + c[1], n1 = c[2] + c[3], n2 = c[4] + c[5];  // per type, both classes
    out[0 * stride] = tab[c[0]] + tab[c[1]] + tab[c[2]] + tab[c[3]] + tab[c[4]] + tab[c[5]];
    const int empty = (n0 == 0) + (n1 == 0) + (n2 == 0);
    if (as_row) {
        out[1 * stride] = tab[n0] + tab[n1] + tab[n2];
        out[2 * stride] = gb_recip(n0);
        out[3 * stride] = gb_recip(n1);
        out[4 * stride] = gb_recip(n2);
        out[5 * stride] = (double)empty;
        if (consts != 0) {  // class totals: the same for every fully called SNP
            const int k0 = c[0] + c[2] + c[4], k1 = c[1] + c[3] + c[5];
            consts[0] = tab[k0];
            consts[1] = tab[k1];
            consts[2] = gb_recip(k0);
            consts[3] = gb_recip(k1);
        }
    } else {
        out[1 * stride] = tab[n0];
        out[2 * stride] = tab[n1];
        out[3 * stride] = tab[n2];
        out[4 * stride] = gb_recip(n0);
        out[5 * stride] = gb_recip(n1);
        out[6 * stride] = gb_recip(n2);
        out[7 * stride] = (double)empty;
    }
}

// KSA and DF of a pair of fully called SNPs from its table and the SNPs' precomputed terms.
__device__ __forceinline__ double gb_ksa_fixed(const int* t, const double* tab, const double* row, int rs,
                                               const double* col, int cs, const double* consts, int& df) {
    const int empty_a = (int)row[5 * rs], empty_b = (int)col[7 * cs];
    if (empty_a > 1 || empty_b > 1) {
        df = 0;
        return 0.0;
    }
    df = 4 >> (empty_a + empty_b);
    const int a00 = t[0] + t[2] + t[4], a01 = t[1] + t[3] + t[5];
    const int a10 = t[6] + t[8] + t[10], a11 = t[7] + t[9] + t[11];
    const int a20 = t[12] + t[14] + t[16], a21 = t[13] + t[15] + t[17];
    const int b00 = t[0] + t[6] + t[12], b01 = t[1] + t[7] + t[13];
    const int b10 = t[2] + t[8] + t[14], b11 = t[3] + t[9] + t[15];
    const int b20 = t[4] + t[10] + t[16], b21 = t[5] + t[11] + t[17];
    const int total = a00 + a10 + a20 + a01 + a11 + a21;
    double s = 0.0;
#pragma unroll
    for (int q = 0; q < 9; ++q) {
        const int c0 = t[2 * q], c1 = t[2 * q + 1];
        s += tab[c0] + tab[c1] - tab[c0 + c1];
    }
    s -= row[0];
    s -= col[0];
    s += row[1 * rs] + col[1 * cs] + col[2 * cs] + col[3 * cs] + consts[0] + consts[1];
    const double i0 = consts[2], i1 = consts[3];
    const double ra0 = row[2 * rs], ra1 = row[3 * rs], ra2 = row[4 * rs];
    const double rb0 = col[4 * cs], rb1 = col[5 * cs], rb2 = col[6 * cs];
    const int ak[3][2] = {{a00, a01}, {a10, a11}, {a20, a21}}, bk[3][2] = {{b00, b01}, {b10, b11}, {b20, b21}};
    const double ra[3] = {ra0, ra1, ra2}, rb[3] = {rb0, rb1, rb2};
    const double tau = gb_tau(t, ak, bk, ra, rb, i0, i1);
    const double ftotal = (double)total;
    return 2.0 * (s + ftotal * log(tau / ftotal));
}

// Append a survivor (pair gi < gj, KSA v, table t) to the bounded buffer; the host re-runs a tile
// whose buffer overflowed (it reads the count, which keeps growing past the capacity).
__device__ __forceinline__ void gb_append(double v, int gi, int gj, const int* t, gb_u32* __restrict__ surv_n,
                                          int surv_cap, int* __restrict__ surv_ij, double* __restrict__ surv_ksa,
                                          int* __restrict__ surv_tab) {
    const gb_u32 slot = atomicAdd(surv_n, 1u);
    if (slot < (gb_u32)surv_cap) {
        surv_ij[2 * (gb_size)slot] = gi;
        surv_ij[2 * (gb_size)slot + 1] = gj;
        surv_ksa[slot] = v;
#pragma unroll
        for (int w = 0; w < 18; ++w) surv_tab[(gb_size)slot * 18 + w] = t[w];
    }
}

// Credit a non-survivor with KSA v to a thread's running summaries of its row r and column c (any
// summary struct with rsig, rbest, rbp, csig, cbest, cbp arrays): N_SIG at the summary threshold,
// best partner by gb_better.
template <class Summ>
__device__ __forceinline__ void gb_credit(Summ& sm, double v, double thr_sig, int r, int c, int gi, int gj) {
    if (v >= thr_sig) {
        sm.rsig[r] += 1;
        sm.csig[c] += 1;
    }
    if (gb_better(v, gj, sm.rbest[r], sm.rbp[r])) {
        sm.rbest[r] = v;
        sm.rbp[r] = gj;
    }
    if (gb_better(v, gi, sm.cbest[c], sm.cbp[c])) {
        sm.cbest[c] = v;
        sm.cbp[c] = gi;
    }
}

// One SNP's summary from the W partial summaries of a block's threads or warps (shared memory rows).
template <int W>
__device__ __forceinline__ void gb_fold_row(const int (&sig)[W], const int (&tot)[W], const double (&best)[W],
                                            const int (&bp)[W], int& sg, int& tt, double& bv, int& bq) {
    sg = 0;
    tt = 0;
    bq = -1;
    bv = gb_neg_inf();
#pragma unroll
    for (int w = 0; w < W; ++w) {
        sg += sig[w];
        tt += tot[w];
        if (bp[w] >= 0 && gb_better(best[w], bp[w], bv, bq)) {
            bv = best[w];
            bq = bp[w];
        }
    }
}

// A thread's running summaries of its R rows and C columns over the pairs it evaluates (credited by
// gb_credit), the same struct for both counting paths.
template <int R, int C>
struct gb_summary {
    int rsig[R], rtot[R], rbp[R];
    double rbest[R];
    int csig[C], ctot[C], cbp[C];
    double cbest[C];

    __device__ __forceinline__ void reset_rows() {
#pragma unroll
        for (int x = 0; x < R; ++x) { rsig[x] = 0; rtot[x] = 0; rbp[x] = -1; rbest[x] = gb_neg_inf(); }
    }
    __device__ __forceinline__ void reset_cols() {
#pragma unroll
        for (int x = 0; x < C; ++x) { csig[x] = 0; ctot[x] = 0; cbp[x] = -1; cbest[x] = gb_neg_inf(); }
    }
};

// The per-SNP partial summaries of a tile's blocks in device memory (what gb_reduce_partials folds): a
// row's at [block column][row], a column's at [block row][column]; rbase / cbase the block's first.
struct gb_partials_out {
    int* rp_sig;
    int* rp_tot;
    double* rp_best;
    int* rp_partner;
    int* cp_sig;
    int* cp_tot;
    double* cp_best;
    int* cp_partner;
};

// A tile's arguments, what both counting paths take, in the order of gboost/engines/gpu/kernel_args.py's
// description (TILE), which is also the tensor-core kernels' argument list (generated from it). The
// CUDA-core kernels take it inside one struct by value (gb_params, boost_screen.cu): compile.py appends
// a static_assert of every field's offset and of the size, generated from that description, so a
// layout that differs does not compile.
struct gb_tile_args {
    // Planes: the tile's row r is plane column off_r + r of planes_r (stride_r SNPs a row), its
    // columns the same in planes_c.
    const gb_u64* planes_r;
    int stride_r, off_r;
    const gb_u64* planes_c;
    int stride_c, off_c;
    const int* counts;  // (SNP, type, class) called-genotype counts, by global SNP
    const unsigned char* miss;  // per SNP: 0 fully called, else how its missing calls are counted
    const double* xlx;  // the c ln c table (n_tab entries staged in shared memory when n_tab > 0)
    const double* thr;  // screen thresholds by DF [0, 5), then the summary's
    // The samples as plane units: k-steps of 256 samples (tensor cores) or 64-bit words (CUDA
    // cores), n_k in all, the controls' first k_ctrl.
    int n_k, k_ctrl;
    int i0, ni, j0, nj;  // the tile: rows [i0, i0 + ni), columns [j0, j0 + nj) (global SNPs)
    int diag, write_empty, n_tab;
    gb_u32* surv_n;  // the survivors' count (atomic), their pairs, KSA and tables (surv_cap of each)
    int surv_cap;
    int* surv_ij;
    double* surv_ksa;
    int* surv_tab;
    gb_partials_out part;
};

// A block's partials where it holds no pair (wholly on or below a diagonal tile's diagonal): written
// once per tile, by the first mode kernel the host launches (write_empty).
template <int BI, int BJ>
__device__ __forceinline__ void gb_empty_partials(const gb_partials_out o, gb_size rbase, gb_size cbase, int tid,
                                                  int bi0, int ni, int bj0, int nj) {
    if (tid < BI && bi0 + tid < ni) {
        o.rp_sig[rbase + tid] = 0; o.rp_tot[rbase + tid] = 0;
        o.rp_best[rbase + tid] = gb_neg_inf(); o.rp_partner[rbase + tid] = -1;
    }
    if (tid < BJ && bj0 + tid < nj) {
        o.cp_sig[cbase + tid] = 0; o.cp_tot[cbase + tid] = 0;
        o.cp_best[cbase + tid] = gb_neg_inf(); o.cp_partner[cbase + tid] = -1;
    }
}

// The block reduction of both counting paths, in shared memory: each of a block's BI rows gets WR partial
// summaries (one per thread or warp along the columns), each of its BJ columns WC; after a block barrier
// a thread per row and per column folds them (gb_fold_row) and writes the block's partial. The arrays
// are the kernel's own __shared__ ones (declared apart, not as one struct: with one struct ptxas
// allocated the tensor-core kernels' registers differently and some spilled more), referred to here.
template <int BI, int BJ, int WR, int WC>
struct gb_block_partials {
    int (&rsig)[BI][WR];
    int (&rtot)[BI][WR];
    int (&rbp)[BI][WR];
    double (&rbest)[BI][WR];
    int (&csig)[BJ][WC];
    int (&ctot)[BJ][WC];
    int (&cbp)[BJ][WC];
    double (&cbest)[BJ][WC];

    template <class Summ>
    __device__ __forceinline__ void put_row(int r, int w, const Summ& sm, int x) const {
        rsig[r][w] = sm.rsig[x]; rtot[r][w] = sm.rtot[x];
        rbest[r][w] = sm.rbest[x]; rbp[r][w] = sm.rbp[x];
    }
    template <class Summ>
    __device__ __forceinline__ void put_col(int c, int w, const Summ& sm, int x) const {
        csig[c][w] = sm.csig[x]; ctot[c][w] = sm.ctot[x];
        cbest[c][w] = sm.cbest[x]; cbp[c][w] = sm.cbp[x];
    }
    // (after the barrier that follows every put)
    __device__ __forceinline__ void write(const gb_partials_out o, gb_size rbase, gb_size cbase, int tid, int bi0,
                                          int ni, int bj0, int nj) const {
        if (tid < BI) {
            const int r = tid;
            int sg, tt, bp;
            double bv;
            gb_fold_row<WR>(rsig[r], rtot[r], rbest[r], rbp[r], sg, tt, bv, bp);
            if (bi0 + r < ni) {
                o.rp_sig[rbase + r] = sg; o.rp_tot[rbase + r] = tt; o.rp_best[rbase + r] = bv; o.rp_partner[rbase + r] = bp;
            }
        } else if (tid < BI + BJ) {
            const int c = tid - BI;
            int sg, tt, bp;
            double bv;
            gb_fold_row<WC>(csig[c], ctot[c], cbest[c], cbp[c], sg, tt, bv, bp);
            if (bj0 + c < nj) {
                o.cp_sig[cbase + c] = sg; o.cp_tot[cbase + c] = tt; o.cp_best[cbase + c] = bv; o.cp_partner[cbase + c] = bp;
            }
        }
    }
};

// The c ln c table staged in shared memory (dynamic size) when the host passes n_tab > 0.
#ifdef __CUDA_ARCH__
extern __shared__ double gb_xlx_s[];
#else
extern double gb_xlx_s[];  // a host compilation of this file (CPU emulation in development) defines it
#endif

// Fold nb block partials [b][e] (b < nb, e < n) into one summary per SNP e of the tile.
extern "C" __global__ void gb_reduce_partials(int n, int nb, const int* __restrict__ sig, const int* __restrict__ tot,
                                              const double* __restrict__ best, const int* __restrict__ partner,
                                              int* __restrict__ osig, int* __restrict__ otot,
                                              double* __restrict__ obest, int* __restrict__ opartner) {
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n) return;
    int sg = 0, tt = 0, bp = -1;
    double bv = gb_neg_inf();
    for (int b = 0; b < nb; ++b) {
        const gb_size q = (gb_size)b * n + e;
        sg += sig[q];
        tt += tot[q];
        const int pq = partner[q];
        if (pq >= 0 && gb_better(best[q], pq, bv, bp)) { bv = best[q]; bp = pq; }
    }
    osig[e] = sg;
    otot[e] = tt;
    obest[e] = bv;
    opartner[e] = bp;
}

// Planes (n, 3, n_words) and called-genotype counts (n, 3, 2) of n raw .bed rows, rows along
// grid.y, a thread per plane word (gboost/engines/gpu/decode.py; the reference is
// gboost.data.encode.decode_bed_rows, which the GPU tests hold it equal to). cols_t[t * n_words + w]: the
// .bed column whose 2-bit code plane bit t of word w holds, -1 for a padding bit (transposed so that
// a warp's loads of it are contiguous). Code 11 -> type 0, 10 -> type 1, 00 -> type 2; 01 (missing)
// and padding set no bit. Counts (type, class; class 0 for words < w_ctrl) are summed per warp and
// added atomically to `counts`, which the caller zeroes. One kernel in place of ~20 array operations
// a chunk, whose passes over device memory bounded the decode below the rate the .bed is read at.
extern "C" __global__ void gb_decode_bed(const unsigned char* __restrict__ raw, long long row_bytes, int n_words,
                                         int w_ctrl, const int* __restrict__ cols_t, gb_u64* __restrict__ planes,
                                         gb_u64* __restrict__ counts) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y;
    const unsigned char* row = raw + (gb_size)r * (gb_size)row_bytes;
    gb_u64 p0 = 0ull, p1 = 0ull, p2 = 0ull;
    if (w < n_words) {
#pragma unroll 8
        for (int t = 0; t < 64; ++t) {
            const int col = __ldg(cols_t + (gb_size)t * n_words + w);
            if (col >= 0) {
                const unsigned code = ((unsigned)__ldg(row + (col >> 2)) >> ((col & 3) * 2)) & 3u;
                const gb_u64 bit = 1ull << t;
                p0 |= code == 3u ? bit : 0ull;
                p1 |= code == 2u ? bit : 0ull;
                p2 |= code == 0u ? bit : 0ull;
            }
        }
        gb_u64* out = planes + (gb_size)r * 3 * n_words + w;
        out[0] = p0;
        out[n_words] = p1;
        out[2 * (gb_size)n_words] = p2;
    }
    // (no early return above: every lane takes part in the shuffles)
    const int k = w < w_ctrl ? 0 : 1;
    const unsigned c[3] = {(unsigned)__popcll(p0), (unsigned)__popcll(p1), (unsigned)__popcll(p2)};
#pragma unroll
    for (int x = 0; x < 6; ++x) {
        unsigned v = (x & 1) == k ? c[x >> 1] : 0u;
#pragma unroll
        for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
        if ((threadIdx.x & 31) == 0 && v) atomicAdd(counts + (gb_size)r * 6 + x, (gb_u64)v);
    }
}
