// BOOST screen of one tile of the SNP-pair triangle on binary tensor cores (docs/DESIGN.md §3.3, §3.5, §3.6).
//
// Compiled by NVRTC through CuPy after boost_common.cu (KSA, DF, per-SNP terms, partner order,
// partial fold), once per device and parameter set; needs sm_80 or newer for the b1 mma.
//
// Counting as binary Gram tiles. mma.sync.m16n8k256 .b1 .and.popc multiplies a 16 x 256-bit A by
// a 256 x 8-bit B into 16 x 8 int32 sums of popc(a_row & b_col). A "unit" is 8 rows of the Gram
// matrix: one genotype type t of 8 SNPs. An A fragment stacks two row units (top: rows 0-7,
// bottom: rows 8-15), a B fragment is one column unit, so one mma gives the cell (ta, tb) of 64
// pairs, or two cells of 32 pairs. A warp owns GM_TR row tiles of 16 SNPs x 16 column SNPs (GM_TR = 2
// by default: the block is 128 x 64 SNPs); in each tile of 16 x 16, with NA (NB) types
// counted for its rows (columns) its fragments are the 2 NA row units (SNP group ri of 8, type ta:
// unit ri * NA + ta, fragment f = unit / 2) times the NB column units of each group of 8 columns,
// so every cell of every pair of the warp comes out of the accumulators, and each thread holds
// all the cells of its own pairs: rows ri * 8 + g and columns cj * 8 + 2 q + e (g = lane / 4,
// q = lane % 4, e = 0, 1). Modes <NA, NB> are those of boost_screen.cu: 2 types and subtraction
// from the per-SNP counts where a side of the block has no missing call, 3 types counted directly
// otherwise. <2,2> counts both 8-column groups of both row tiles in one pass (64 accumulators, both
// classes packed, GM_KC); the others count one tile and one group per pass so that their 36 to 48
// packed accumulators (72 to 96 with the classes apart) fit in registers.
//
// Plane layout (gm_layout): [type][k-step][SNP][4 words], the samples of each class padded with
// zero bits to whole k-steps of 256 (controls in k-steps [0, ks0), cases in [ks0, KS)). A warp's
// load of one unit and k-step is 8 SNPs x 32 bytes, contiguous: lane (g, q) reads word q of SNP
// g. The low half of that word goes to the fragment register the PTX ISA puts at k-word q, the
// high half to the one at k-word q + 4, for A and B alike; any permutation of k applied to both
// operands leaves popc(a & b) unchanged, so no shuffling is needed. The next k-step's words are
// loaded while the current one is multiplied. Fully called blocks with the float32 pre-screen stage
// GM_STAGES k-steps instead, once per block in shared memory (cp.async), every warp reading its
// fragments from there with ldmatrix (gm_count22_block; its own permutation of k, the same for A and B).
// A resident study with missing calls also has the planes' fragment-native copy after them, for the
// per-warp loads of the modes with missing calls at the rows (gm_count_class, gm_screen_32f / 33f).
//
// Fully called blocks (<2,2>) take the float32 pre-screen described at gm_pairs22_f32 below, with
// float64 only for the pairs whose decision needs it; the other modes, and builds with GM_F32=0,
// run the float64 epilogue for every pair:
// Epilogue, per pair and fused: the 18 cells from the accumulators (and subtraction), DF and KSA
// by gb_ksa_df / gb_ksa_fixed (operation for operation fastksa.ksa_df_lookup, c ln c from a table
// in shared memory), survivors appended to the bounded buffer (the host re-runs a tile whose
// buffer overflowed), per-SNP partial summaries of the non-survivors reduced with warp shuffles
// and then across the block's warps, written in the layout gb_reduce_partials folds. Nothing per
// pair is written to device memory.
//
// Blocks are persistent: a grid sized to the device loops over the tile's GM_BI x GM_BJ blocks, so
// the c ln c table is staged in shared memory once per thread block, not once per block of 4,096 pairs.

#ifndef GM_WI
#define GM_WI 4  // warps along the rows of a block (16 row SNPs each)
#endif
#ifndef GM_WJ
#define GM_WJ 4  // warps along the columns (16 column SNPs each)
#endif
#ifndef GM_TR  // row tiles of 16 SNPs a warp owns (1 or 2): 2 where every class has fewer than 2^16 samples
#define GM_TR 1
#endif
#ifndef GM_MINB22  // blocks per SM the register allocation aims at
#define GM_MINB22 1
#endif
#ifndef GM_MINB33
#define GM_MINB33 1
#endif
#ifndef GM_COUNT_ONLY  // set only by bench/gpu_variants.py: count and fill the tables, skip KSA and survivors (wrong results)
#define GM_COUNT_ONLY 0
#endif
#ifndef GM_F32  // <2,2> blocks: float32 pre-screen with a proven error bound, float64 only where it can matter
#define GM_F32 1
#endif

#define GM_WARPS (GM_WI * GM_WJ)
#define GM_THREADS (32 * GM_WARPS)
#define GM_BI (16 * GM_TR * GM_WI)
#define GM_BJ (16 * GM_WJ)

static_assert(GM_THREADS >= GM_BI + GM_BJ && GM_THREADS <= 1024, "a block needs a thread per row and per column SNP");
static_assert(GM_TR == 1 || GM_TR == 2, "a warp owns one or two row tiles of 16 SNPs");

// d += popc(A & B) over 256 bits: a[0..3] the A fragment (rows g and g + 8 at k-word q, then at
// k-word q + 4), b0, b1 the B fragment (column g at k-words q and q + 4).
__device__ __forceinline__ void gm_mma4(gb_u32 (&d)[4], const gb_u32 (&a)[4], gb_u32 b0, gb_u32 b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
// The same with the A fragment as this lane's 64-bit words of its rows in the two row units (top,
// bot: low half at k-word q, high half at k-word q + 4) and b the word of its column.
__device__ __forceinline__ void gm_mma(gb_u32 (&d)[4], gb_u64 top, gb_u64 bot, gb_u64 b) {
    const gb_u32 a[4] = {(gb_u32)top, (gb_u32)bot, (gb_u32)(top >> 32), (gb_u32)(bot >> 32)};
    gm_mma4(d, a, (gb_u32)b, (gb_u32)(b >> 32));
}

// Counts of one warp and one class k: acc[f][v][c] for A fragment f (row units 2f, 2f + 1), column
// unit v = cj * NB + tb, accumulator c (0, 1: top unit, columns 2q, 2q + 1; 2, 3: bottom unit).
// prow: plane column of the warp's first row SNP, nrow of its 16 rows exist; pcol, ncol the same
// for the 8 * CJ columns of this pass (nrow, ncol >= 1).
// Instruction count is what bounds this loop, so: a row or column that does not exist reads the
// first one instead (its accumulators belong to pairs nobody reads: every caller skips r >= ni,
// c >= nj); the k-steps run in pairs with two sets of operand registers (the next step loads while
// this one multiplies, no copies between them); and a load's address is its type's base plus a
// 32-bit word offset that each k-step advances, one IMAD.WIDE.U32 a load. With 64-bit offsets formed
// per load (k-step x stride) the loop issued ~7 other instructions per mma, most of them address
// arithmetic and reloads of the kernel's pointer arguments (Nsight Compute's SASS view).
// The offsets need each type's planes of one side to span fewer than 2^32 words: the engine never
// hands this kernel a larger plane array (MmaCounting.max_snps streams such a study in blocks).
// ZERO false: add to acc as it is (the classes packed into one word, gm_count_packed).
//
// Which A fragment and register pair hold the row unit (ri, ta) (rows ri * 8 + g, type ta): with
// NA == 2 fragment ri, the two types in its rows g and g + 8 (as the <2,2> ring's); with NA == 3
// fragment ta, the two row halves in its rows g and g + 8, as the fragment-native copy holds them
// (FAST below). Accumulator c of fragment f and column unit v: rows g (c < 2) and g + 8, column 2q + (c & 1).
template <int NA> __device__ __forceinline__ constexpr int gm_frag(int ri, int ta) { return NA == 3 ? ta : ri; }
template <int NA> __device__ __forceinline__ constexpr int gm_half(int ri, int ta) { return NA == 3 ? ri : ta; }

// The fragment-native copy of the planes (MmaCounting.frag; gm_layout writes it after the plane layout,
// at planes + 3 KS stride 4 words, types 0-2, the same k-steps and stride, the stride a multiple of 16):
// for each type, k-step and group of 16 SNPs (16 G to 16 G + 15 of the array), 128 32-bit words, lane
// l = g * 4 + q's 16 bytes at 16 l: [SNP g at k-word 2q, SNP g + 8 at 2q, SNP g at 2q + 1, SNP g + 8 at
// 2q + 1] = the A fragment of those 16 SNPs in the mma's register order, one 16-byte load a type where
// the standard layout takes four 4-byte loads and two addresses (the counting of the missing-call modes
// takes measurably less time so). B's fragment of column g of a
// group's half h is that lane's words h and h + 2. Used where the tile's rows and columns start at
// multiples of 16 (the engine's default tiles; --part or an odd --tile take the standard loads).
template <int NA, int NB, int CJ, bool ZERO = true, bool FAST = false>
__device__ __forceinline__ void gm_count_class(gb_u32 (&acc)[NA][CJ * NB][4], int k,
                                               const gb_u64* __restrict__ planes_r, int stride_r, int prow, int nrow,
                                               const gb_u64* __restrict__ planes_c, int stride_c, int pcol, int ncol,
                                               int KS, int ks0, int lane, int bhalf = 0) {
    const int g = lane >> 2, q = lane & 3;
    if constexpr (ZERO) {
#pragma unroll
        for (int f = 0; f < NA; ++f)
#pragma unroll
            for (int v = 0; v < CJ * NB; ++v)
#pragma unroll
                for (int c = 0; c < 4; ++c) acc[f][v][c] = 0u;
    }
    const int kb = k ? ks0 : 0, ke = k ? KS : ks0;
    if (kb >= ke) return;
    const gb_u32 kstep_r = (gb_u32)stride_r * 4u, kstep_c = (gb_u32)stride_c * 4u;
    static_assert(!FAST || (NA == 3 && CJ == 1), "the fragment-native loads serve rows of three types, one pass");
    // Each type's planes (in the fragment-native copy: FAST), and the word offsets of this lane's top
    // and bottom row and its column(s) at the next k-step (FAST: of its 16 bytes in the row tile's and
    // the column pass's group, one offset each).
    const gb_size cr = FAST ? 3 : 0;
    const gb_u64* tr[NA];
    const gb_u64* tc[NB];
#pragma unroll
    for (int t = 0; t < NA; ++t) tr[t] = planes_r + (cr + t) * (gb_size)KS * kstep_r;
#pragma unroll
    for (int t = 0; t < NB; ++t) tc[t] = planes_c + (cr + t) * (gb_size)KS * kstep_c;
    gb_u32 ur[2], uc[CJ];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = h * 8 + g < nrow ? h * 8 + g : 0;
        ur[h] = FAST ? (gb_u32)prow * 4u + (gb_u32)lane * 2u + (gb_u32)kb * kstep_r
                     : (gb_u32)(prow + row) * 4u + (gb_u32)q + (gb_u32)kb * kstep_r;
    }
#pragma unroll
    for (int c = 0; c < CJ; ++c) {
        const int col = c * 8 + g < ncol ? c * 8 + g : 0;
        uc[c] = FAST ? (gb_u32)(pcol & ~15) * 4u + (gb_u32)lane * 2u + (gb_u32)kb * kstep_c
                     : (gb_u32)(pcol + col) * 4u + (gb_u32)q + (gb_u32)kb * kstep_c;
    }
    // The A fragments as the mma takes them (rows g and g + 8 at k-word q, then at q + 4), each word
    // loaded into its place: from 64-bit loads the compiler assembled each fragment by four moves
    // before every mma that used it (~3.5 moves an mma).
    gb_u32 a0[NA][4], a1[NA][4];
    gb_u64 b0[CJ * NB], b1[CJ * NB];
    auto load = [&](gb_u32 (&a)[NA][4], gb_u64 (&b)[CJ * NB]) {  // the next k-step's operands
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int t = 0; t < NA; ++t) {
                const gb_u32* w = (const gb_u32*)(tr[t] + ur[h]);
                a[gm_frag<NA>(h, t)][gm_half<NA>(h, t)] = __ldg(w);
                a[gm_frag<NA>(h, t)][2 + gm_half<NA>(h, t)] = __ldg(w + 1);
            }
#pragma unroll
        for (int v = 0; v < CJ * NB; ++v) b[v] = __ldg(tc[v % NB] + uc[v / NB]);
#pragma unroll
        for (int h = 0; h < 2; ++h) ur[h] += kstep_r;
#pragma unroll
        for (int c = 0; c < CJ; ++c) uc[c] += kstep_c;
    };
    auto mma = [&](const gb_u32 (&a)[NA][4], const gb_u64 (&b)[CJ * NB]) {
#pragma unroll
        for (int f = 0; f < NA; ++f)
#pragma unroll
            for (int v = 0; v < CJ * NB; ++v) gm_mma4(acc[f][v], a[f], (gb_u32)b[v], (gb_u32)(b[v] >> 32));
    };
    auto run = [&](auto&& ld) {  // the k-steps, the next one's operands loaded while the current one multiplies
        ld(a0, b0);
        int ks = kb;
        for (; ks + 1 < ke; ks += 2) {
            ld(a1, b1);
            mma(a0, b0);
            if (ks + 2 < ke) ld(a0, b0);
            mma(a1, b1);
        }
        if (ks < ke) mma(a0, b0);
    };
    if constexpr (FAST) {  // the fragment-native copy: one 16-byte load a type and operand
        run([&](gb_u32 (&a)[NA][4], gb_u64 (&b)[CJ * NB]) {
#pragma unroll
            for (int t = 0; t < NA; ++t) {
                const uint4 x = __ldg((const uint4*)(tr[t] + ur[0]));
                a[t][0] = x.x; a[t][1] = x.y; a[t][2] = x.z; a[t][3] = x.w;
            }
#pragma unroll
            for (int t = 0; t < NB; ++t) {
                const uint4 y = __ldg((const uint4*)(tc[t] + uc[0]));
                b[t] = bhalf ? ((gb_u64)y.y | ((gb_u64)y.w << 32)) : ((gb_u64)y.x | ((gb_u64)y.z << 32));
            }
            ur[0] += kstep_r;
            uc[0] += kstep_c;
        });
    } else {
        run(load);
    }
}

// Both classes: acc[k][f][v][c].
template <int NA, int NB, int CJ>
__device__ __forceinline__ void gm_count(gb_u32 (&acc)[2][NA][CJ * NB][4], const gb_u64* __restrict__ planes_r,
                                         int stride_r, int prow, int nrow, const gb_u64* __restrict__ planes_c,
                                         int stride_c, int pcol, int ncol, int KS, int ks0, int lane) {
#pragma unroll
    for (int k = 0; k < 2; ++k)
        gm_count_class<NA, NB, CJ>(acc[k], k, planes_r, stride_r, prow, nrow, planes_c, stride_c, pcol, ncol, KS,
                                   ks0, lane);
}

// Both classes of one pass into one set of accumulators, each word (cases << 16) | controls, the
// parked layout of the pre-screen (gm_pairs_f32m): the cases counted, the words shifted by 16, the
// controls counted on top (an mma adds integers; every class count is below 2^16 wherever the
// pre-screen runs, so no carry crosses the halves). Against one class at a time, parked as counted,
// this zeroes once and parks once, without reading back the first class's words.
template <int NA, int NB, bool FAST>
__device__ __forceinline__ void gm_count_packed(gb_u32 (&acc)[NA][NB][4], const gb_u64* __restrict__ planes_r,
                                                int stride_r, int prow, int nrow, const gb_u64* __restrict__ planes_c,
                                                int stride_c, int pcol, int ncol, int KS, int ks0, int lane, int bhalf) {
    gm_count_class<NA, NB, 1, true, FAST>(acc, 1, planes_r, stride_r, prow, nrow, planes_c, stride_c, pcol, ncol, KS,
                                          ks0, lane, bhalf);
#pragma unroll
    for (int f = 0; f < NA; ++f)
#pragma unroll
        for (int v = 0; v < NB; ++v)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[f][v][c] <<= 16;
    gm_count_class<NA, NB, 1, false, FAST>(acc, 0, planes_r, stride_r, prow, nrow, planes_c, stride_c, pcol, ncol, KS,
                                           ks0, lane, bhalf);
}

#ifndef GM_STAGES  // k-steps in flight in the <2,2> pre-screen kernel's block ring (0, 1: registers, one ahead)
#define GM_STAGES 8
#endif

#if GM_STAGES > 1
__device__ __forceinline__ void gm_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void gm_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// One stage of the block's ring: the A units of its GM_WI * GM_TR row tiles of 16 SNPs (unit (wy * GM_TR
// + h) * 4 + ri * 2 + type for row tile h of warp row wy) and the B units of its GM_WJ warp columns
// (GM_AUNITS + wx * 4 + cj * 2 + type), each 32 lanes x 8 bytes in the order gm_count reads them (as
// 16-byte halves, gm_ring_off).
#define GM_AUNITS (4 * GM_WI * GM_TR)
#define GM_RING_UNITS (GM_AUNITS + 4 * GM_WJ)
#define GM_STAGE_WORDS (GM_RING_UNITS * 32)
#define GM_RING_CHUNKS (GM_RING_UNITS * 16)  // 16-byte copies a stage
#define GM_RING_COPIES ((GM_RING_CHUNKS + GM_THREADS - 1) / GM_THREADS)
#ifndef GM_BAR_STEPS  // k-steps a block barrier of the ring covers
#define GM_BAR_STEPS 4
#endif
static_assert((GM_STAGES & (GM_STAGES - 1)) == 0, "the block ring's stage count must be a power of two");
static_assert(GM_STAGES % GM_BAR_STEPS == 0 && GM_STAGES >= 2 * GM_BAR_STEPS,
              "the ring holds at least two groups of GM_BAR_STEPS k-steps");

// 16 bytes global -> shared (32-bit shared address), asynchronously, bypassing L1 (each word is
// staged once per block, so L1 has no reuse to catch); zeros where !valid.
__device__ __forceinline__ void gm_cp16(unsigned dst, const gb_u64* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
// Four 8 x 16-byte matrices from shared memory (ldmatrix; lane l gives the address of row l % 8 of
// matrix l / 8): register i of lane (g, q) gets 32-bit word q of row g of matrix i. Used as a plain
// data move: with matrices (top unit, k-half 0), (bottom unit, half 0), (top, half 1), (bottom, half 1)
// it yields an A fragment in the mma's register order, and with (unit, half 0), (unit, half 1) two B
// fragments, so the ring's reads need no register moves (k-word q <-> word q of half 0, k-word q + 4
// <-> word q of half 1: the same permutation of k for both operands).
__device__ __forceinline__ void gm_ldsm4(gb_u32 (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// A stage's unit is 8 SNPs x 32 bytes; SNP r keeps its two 16-byte halves swapped when (r / 4) is odd,
// so that the 8 rows of an ldmatrix matrix (one half of 8 SNPs, 32 bytes apart) fall in distinct banks.
__device__ __forceinline__ unsigned gm_ring_off(int unit, int r, int half) {
    return (unsigned)((unit * 8 + r) * 32 + ((half ^ ((r >> 2) & 1)) * 16));
}

// The <2,2> ring's accumulators, acc[GM_KC][2 * GM_TR][4][4] (A fragment f: row SNPs 8 f to 8 f + 7 of
// the warp, both types; column unit v = cj * 2 + type). GM_TR == 1: both classes apart (GM_KC == 2),
// exact for any class size. GM_TR == 2: a warp owns 32 rows, so each ldmatrix of B feeds twice the
// mmas (at large n the counting is bound by feeding fragments through shared memory), and the 64
// accumulators that allows hold both classes, (controls << 16) | cases: the
// controls counted, shifted at the first cases' k-step, the cases added (an mma adds integers; exact
// while every class has fewer than 2^16 samples, which the host ensures: gboost/engines/gpu/config.py,
// MmaConfig.for_classes).
#define GM_KC (GM_TR == 1 ? 2 : 1)
// Class k's count of an accumulator word (the low half is the cases' where both are packed).
__device__ __forceinline__ gb_u32 gm_class_of(gb_u32 w, int k) {
    return GM_KC == 2 ? w : (k ? (w & 0xffffu) : (w >> 16));
}
// acc[k][f][v][c] of the <2,2> accumulators, either layout.
__device__ __forceinline__ gb_u32 gm_cell22(const gb_u32 (&acc)[GM_KC][2 * GM_TR][4][4], int k, int f, int v, int c) {
    return gm_class_of(acc[GM_KC == 2 ? k : 0][f][v][c], k);
}

// gm_count<2, 2, 2> of every warp of the block, with the k-steps staged once per block: the per-warp
// ring copied each warp's 2 KB of operands a k-step through L1 into its own ring, 8 warps x 2 KB where
// the block needs only (GM_WI + GM_WJ) KB of distinct words, and those copies, their address arithmetic
// and the ring reads were most of the counting's shared-memory traffic and instructions (ncu: shared
// wavefronts bound the kernel). Here the block's threads copy each distinct 16 bytes once (one copy a
// thread and k-step for 4 x 4 warps) and every warp reads its fragments from the shared stage; one
// block barrier every GM_BAR_STEPS k-steps orders the copies of those steps before their reads and
// the reads of the slots it refills (each barrier waits for the block's slowest warp, so fewer of
// them). Every warp of the block must call this (barriers); `live` warps multiply.
// Ends with a block barrier: the parking areas may share the ring's memory (MmaConfig.f32_smem).
template <class F>
__device__ __forceinline__ void gm_count22_block(gb_u32 (&acc)[GM_KC][2 * GM_TR][4][4], const gb_u64* __restrict__ planes_r,
                                                 int stride_r, int off_r, const gb_u64* __restrict__ planes_c,
                                                 int stride_c, int off_c, int bi0, int ni, int bj0, int nj, int KS,
                                                 int ks0, int tid, bool live, gb_u64* ring, F&& while_loading) {
    constexpr unsigned STAGE_BYTES = GM_STAGE_WORDS * 8;
    const int lane = tid & 31, warp = tid >> 5, wy = warp / GM_WJ, wx = warp % GM_WJ;
    const unsigned ring_s = (unsigned)__cvta_generic_to_shared(ring);
    // This thread's copies: the source of the next k-step to issue, its k-step stride, the destination
    // in stage 0 (shared address), whether the row or column exists.
    const gb_u64* src[GM_RING_COPIES];
    gb_size kst[GM_RING_COPIES];
    unsigned dst[GM_RING_COPIES];
    bool val[GM_RING_COPIES], on[GM_RING_COPIES];
#pragma unroll
    for (int m = 0; m < GM_RING_COPIES; ++m) {
        // Chunk c lands at byte 16 c of the stage (cheap to recompute where registers are short) and
        // holds what gm_ring_off puts there: unit U, SNP g, half (c & 1) ^ ((g >> 2) & 1).
        const int c = tid + m * GM_THREADS;
        const int U = c >> 4, g = (c >> 1) & 7, qq = ((c & 1) ^ ((g >> 2) & 1)) * 2;
        on[m] = GM_RING_CHUNKS % GM_THREADS == 0 || c < GM_RING_CHUNKS;  // (every thread's, where they divide)
        dst[m] = ring_s + (unsigned)c * 16u;
        if (U < GM_AUNITS) {
            const int r = (U >> 2) * 16 + ((U >> 1) & 1) * 8 + g, ty = U & 1;
            kst[m] = (gb_size)stride_r * 4;
            val[m] = bi0 + r < ni;
            src[m] = planes_r + (gb_size)ty * KS * kst[m] + (gb_size)(off_r + bi0 + (val[m] ? r : 0)) * 4 + qq;
        } else {
            const int V = U - GM_AUNITS;
            const int cl = (V >> 2) * 16 + ((V >> 1) & 1) * 8 + g, ty = V & 1;
            kst[m] = (gb_size)stride_c * 4;
            val[m] = bj0 + cl < nj;
            src[m] = planes_c + (gb_size)ty * KS * kst[m] + (gb_size)(off_c + bj0 + (val[m] ? cl : 0)) * 4 + qq;
        }
    }
    // Issues the group of GM_BAR_STEPS k-steps from k0 (a multiple of GM_BAR_STEPS; groups in order, so
    // the sources just advance), each step's destination its stage's offset plus an immediate; only
    // the study's last group tests whether its steps exist.
#pragma unroll
    for (int m = 0; m < GM_RING_COPIES; ++m) asm volatile("" : "+r"(dst[m]));  // (kept, not recomputed per step)
    auto issue_group = [&](int k0) {
        const unsigned og = (unsigned)(k0 & (GM_STAGES - 1)) * STAGE_BYTES;
        const bool whole = k0 + GM_BAR_STEPS <= KS;
#pragma unroll
        for (int b = 0; b < GM_BAR_STEPS; ++b) {
            if (!whole && k0 + b >= KS) break;
#pragma unroll
            for (int m = 0; m < GM_RING_COPIES; ++m) {
                if (on[m]) gm_cp16(dst[m] + og + (unsigned)b * STAGE_BYTES, src[m], val[m]);
                src[m] += kst[m];
            }
        }
    };
#pragma unroll
    for (int k = 0; k < GM_KC; ++k)
#pragma unroll
        for (int f = 0; f < 2 * GM_TR; ++f)
#pragma unroll
            for (int v = 0; v < 4; ++v)
#pragma unroll
                for (int c = 0; c < 4; ++c) acc[k][f][v][c] = 0u;
    auto shift = [&]() {  // packed classes: the controls to the high half before the first cases' k-step
#pragma unroll
        for (int f = 0; f < 2 * GM_TR; ++f)
#pragma unroll
            for (int v = 0; v < 4; ++v)
#pragma unroll
                for (int c = 0; c < 4; ++c) acc[0][f][v][c] <<= 16;
    };
    constexpr int G = GM_STAGES / GM_BAR_STEPS;  // groups of GM_BAR_STEPS k-steps the ring holds
#pragma unroll
    for (int gr = 0; gr < G - 1; ++gr) {
        if (gr * GM_BAR_STEPS < KS) issue_group(gr * GM_BAR_STEPS);
        gm_cp_commit();  // empty groups too: the wait below counts groups
    }
    while_loading();  // (the first barrier orders its shared writes before any later read)
    // This lane's ldmatrix row addresses in stage 0: A fragment 0 (units wy * GM_TR * 4 + type, matrix
    // i = type + 2 * half; fragment f is 2 f units = 512 f bytes on) and B units 0 and 1 (matrix i =
    // unit * 2 + half; units 2 and 3 are 512 bytes on). Made opaque to the compiler (the empty asm): ptxas otherwise
    // recomputed them from the shared window's base at every k-step, ~20 integer instructions a step
    // against 4 ldmatrix and 8 mma (SASS of the counting-only build), so each step then costs
    // only its stage's offset, an immediate.
    const int mi = lane >> 3, mr = lane & 7;
    unsigned ra = ring_s + gm_ring_off(wy * GM_TR * 4 + (mi & 1), mr, mi >> 1);
    unsigned rb = ring_s + gm_ring_off(GM_AUNITS + wx * 4 + (mi >> 1), mr, mi & 1);
    asm volatile("" : "+r"(ra), "+r"(rb));
    // k-step b of the group whose stage offset is og: the stage's operands, 8 GM_TR mmas into ac.
    auto step = [&](gb_u32 (&ac)[2 * GM_TR][4][4], unsigned a0, unsigned b0, int b) {
        gb_u32 a[2 * GM_TR][4], bb[2][4];
#pragma unroll
        for (int f = 0; f < 2 * GM_TR; ++f) gm_ldsm4(a[f], a0 + (unsigned)b * STAGE_BYTES + f * 512u);
#pragma unroll
        for (int p = 0; p < 2; ++p) gm_ldsm4(bb[p], b0 + (unsigned)b * STAGE_BYTES + p * 512u);
#pragma unroll
        for (int f = 0; f < 2 * GM_TR; ++f)
#pragma unroll
            for (int v = 0; v < 4; ++v) gm_mma4(ac[f][v], a[f], bb[v >> 1][(v & 1) * 2], bb[v >> 1][(v & 1) * 2 + 1]);
    };
    // One barrier a GM_BAR_STEPS k-steps: it orders the copies of those steps before their reads and
    // the reads of the GM_BAR_STEPS steps before them before their slots are refilled. A group lies
    // in one class but where it holds the first cases' step (or the last step): only there is the
    // class tested step by step.
    for (int kk = 0; kk < KS; kk += GM_BAR_STEPS) {
        gm_cp_wait<G - 2>();  // this thread's copies of steps kk, kk + 1, ... are done ...
        __syncthreads();      // ... and everyone's; everyone has read the steps before kk
        if (kk + (G - 1) * GM_BAR_STEPS < KS) issue_group(kk + (G - 1) * GM_BAR_STEPS);
        gm_cp_commit();
        if (live) {
            const unsigned og = (unsigned)(kk & (GM_STAGES - 1)) * STAGE_BYTES;  // (kk is a multiple of GM_BAR_STEPS)
            const unsigned a0 = ra + og, b0 = rb + og;
            if (kk + GM_BAR_STEPS <= ks0) {
#pragma unroll
                for (int b = 0; b < GM_BAR_STEPS; ++b) step(acc[0], a0, b0, b);
            } else if ((GM_KC == 2 ? kk >= ks0 : kk > ks0) && kk + GM_BAR_STEPS <= KS) {
#pragma unroll
                for (int b = 0; b < GM_BAR_STEPS; ++b) step(acc[GM_KC - 1], a0, b0, b);
            } else {
#pragma unroll
                for (int b = 0; b < GM_BAR_STEPS; ++b) {
                    const int ks = kk + b;
                    if (ks < ks0) step(acc[0], a0, b0, b);  // controls' k-steps, then the cases'
                    else if (ks < KS) {
                        if (GM_KC == 1 && ks == ks0) shift();
                        step(acc[GM_KC - 1], a0, b0, b);
                    }
                }
            }
        }
    }
    if (GM_KC == 1 && live && ks0 >= KS) shift();  // (no cases' k-step: the layout all the same)
    gm_cp_wait<0>();
    __syncthreads();  // every warp's last reads of the ring are done
}
#endif

// The cells of class k that were not counted: where the column SNP is fully called (NB == 2) its
// third type along each row, where the row SNP is (NA == 2) its third type along each column, by
// subtraction from the SNPs' counts cr[(type * 2 + k) * rs] (row) and cc[(type * 2 + k) * cs] (column).
template <int NA, int NB>
__device__ __forceinline__ void gm_subtract(int (&t)[18], const int* cr, int rs, const int* cc, int cs, int k) {
    if (NB == 2) {
#pragma unroll
        for (int a = 0; a < NA; ++a) t[a * 6 + 4 + k] = cr[(a * 2 + k) * rs] - t[a * 6 + k] - t[a * 6 + 2 + k];
    }
    if (NA == 2) {
#pragma unroll
        for (int b = 0; b < 3; ++b) t[12 + b * 2 + k] = cc[(b * 2 + k) * cs] - t[b * 2 + k] - t[6 + b * 2 + k];
    }
}

// The 18 cells of the pair (row ri * 8 + g, column cj * 8 + 2 q + e of the pass) from a warp's
// accumulators, the uncounted third types by subtraction from the SNPs' counts (global SNPs gi, gj).
// cell(k, f, v, c): class k's count in accumulator c of A fragment f and column unit v (gm_acc_cells).
template <int NA, int NB, int CJ, class Cell>
__device__ __forceinline__ void gm_table_acc(int (&t)[18], Cell cell, int ri, int cj, int e,
                                             const int* __restrict__ counts, int gi, int gj) {
    int ci[6], cn[6];
#pragma unroll
    for (int x = 0; x < 6; ++x) {
        ci[x] = (NA == 2 || NB == 2) ? __ldg(counts + (gb_size)gi * 6 + x) : 0;
        cn[x] = (NA == 2 || NB == 2) ? __ldg(counts + (gb_size)gj * 6 + x) : 0;
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
#pragma unroll
        for (int ta = 0; ta < NA; ++ta)
#pragma unroll
            for (int tb = 0; tb < NB; ++tb) {
                t[ta * 6 + tb * 2 + k] = (int)cell(k, gm_frag<NA>(ri, ta), cj * NB + tb, gm_half<NA>(ri, ta) * 2 + e);
            }
        gm_subtract<NA, NB>(t, ci, 1, cn, 1, k);
    }
}

// The cells of accumulators acc[class][fragment][column unit][4], as gm_table_acc reads them.
template <int NA, int V>
__device__ __forceinline__ auto gm_acc_cells(const gb_u32 (&acc)[2][NA][V][4]) {
    return [&acc](int k, int f, int v, int c) { return acc[k][f][v][c]; };
}

// Running summary of one thread: its 2 rows (ri) and its 4 columns (cc * 2 + e).
typedef gb_summary<2, 4> gm_summ;

// Fold the summary of the lane `mask` away into this lane's (both end with the same).
__device__ __forceinline__ void gm_fold(int& sig, int& tot, double& best, int& bp, int mask) {
    const int osig = __shfl_xor_sync(0xffffffffu, sig, mask);
    const int otot = __shfl_xor_sync(0xffffffffu, tot, mask);
    const double obest = __shfl_xor_sync(0xffffffffu, best, mask);
    const int obp = __shfl_xor_sync(0xffffffffu, bp, mask);
    sig += osig;
    tot += otot;
    if (obp >= 0 && gb_better(obest, obp, best, bp)) {
        best = obest;
        bp = obp;
    }
}

// The tables, KSA, survivors and summaries of this thread's pairs counted in one pass.
// r_blk0 / c_blk0: block-local row / column of the warp's first row / column; pass: the column
// group (0, 1) when CJ == 1.
template <int NA, int NB, int CJ, class Cell>
__device__ __forceinline__ void gm_pairs(gm_summ& sm, Cell cell, int pass,
                                         const int* __restrict__ counts, const double* tab,
                                         const double* __restrict__ thr, const double* rterm, const double* cterm,
                                         const double* consts, int i0, int ni, int j0, int nj, int diag, int bi0,
                                         int bj0, int r_blk0, int c_blk0, int lane, gb_u32* __restrict__ surv_n,
                                         int surv_cap, int* __restrict__ surv_ij, double* __restrict__ surv_ksa,
                                         int* __restrict__ surv_tab) {
    const int g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int ri = 0; ri < 2; ++ri) {
        const int rl = r_blk0 + ri * 8 + g, r = bi0 + rl;
#pragma unroll
        for (int cj = 0; cj < CJ; ++cj) {
            const int cc = CJ == 2 ? cj : pass;
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int cl = c_blk0 + cc * 8 + 2 * q + e, c = bj0 + cl;
                if (r >= ni || c >= nj) continue;
                const int gi = i0 + r, gj = j0 + c;
                if (diag && gi >= gj) continue;
                int t[18];
                gm_table_acc<NA, NB, CJ>(t, cell, ri, cj, e, counts, gi, gj);
#if GM_COUNT_ONLY
                {
                    int s = 0;
#pragma unroll
                    for (int w = 0; w < 18; ++w) s += t[w];
                    sm.rsig[ri] += s;
                    continue;
                }
#endif
                int df;
                const double v = (NA == 2 && NB == 2)
                                     ? gb_ksa_fixed(t, tab, rterm + rl, GM_BI, cterm + cl, GM_BJ, consts, df)
                                     : gb_ksa_df(t, tab, df);
                if (df <= 0) continue;
                const int x = cc * 2 + e;
                sm.rtot[ri] += 1;
                sm.ctot[x] += 1;
                if (v > __ldg(thr + df))
                    gb_append(v, gi, gj, t, surv_n, surv_cap, surv_ij, surv_ksa, surv_tab);
                else
                    gb_credit(sm, v, __ldg(thr + 5 + df), ri, x, gi, gj);
            }
        }
    }
}

#if GM_F32 && !GM_COUNT_ONLY
// ---- Float32 pre-screen of fully called blocks (mode <2,2>) ---------------------------------------
//
// Every pair's KSA in float64 (gb_ksa_fixed) was half of the kernel's time: 27 scattered 8-byte
// lookups in shared memory, a float64 log and ~100 float64 operations per pair. But a pair's exact
// value matters only if it can survive the screen, count in N_SIG, or be its row's or column's best
// partner; for the other ~90 % of pairs only "valid" (DF > 0, exact from integer margins) counts.
// So each pair first gets v32, KSA in float32 rearranged so that no sum has large terms, and a
// bound E with |v32 - KSA| <= E, hence an interval [L, U] = [v32 - E, v32 + E] that holds the
// float64 value. A pair is a candidate when U > the screen threshold, U >= the summary threshold,
// or U >= the largest L of its row (column) among the warp's certain non-survivors (U <= screen
// threshold): the true best partner always is one. Candidates are compacted into a per-warp queue
// in shared memory and evaluated 32 at a time by gb_ksa_fixed with the unchanged float64 decision
// code, so the outputs are bit for bit those of the float64-only kernel (GM_F32=0 keeps that kernel
// for the tests to compare).
//
// The rearrangement (N samples; x(c) = c ln c; fully called SNPs so margins are per SNP):
//   KSA/2 = sum_q [x(t_q0) + x(t_q1) - x(t_q0 + t_q1)]            each term in [-(t_q0+t_q1) ln 2, 0]
//         + [x(n_a0) + x(n_a1) + x(n_a2) - sum_ak x(n_ak)]          row SNP, in [0, N ln 2]
//         + [x(n_b0) + x(n_b1) + x(n_b2) - sum_bk x(n_bk)]          column SNP, in [0, N ln 2]
//         + [x(n_0) + x(n_1) - x(N)]                                study, in [-N ln 2, 0]
//         + N ln tau,   tau = sum_ab n_ab * sum_k P_ak Q_bk,  P_ak = n_ak / n_a,  Q_bk = n_bk / (n_b n_k)
// (the three bracketed constants are formed in float64 once per SNP, then rounded). First-order
// error, u = 2^-24: table entries 2u N ln N; the nine cell terms u (N ln N + N ln 2); twelve
// additions of partial sums below 4 N ln 2: 33.3 u N; rounding the constants 2.1 u N; tau: 13 u
// relative (P, Q rounded, 2 products, 9 fused accumulations of positive terms); logf 1 ulp; the
// last fma u (4 N ln 2 + N |ln tau|). In all u (3 N ln N + 52 N + 3 N |ln tau|) for KSA/2; E takes
// twice that for KSA, times a safety factor of 2: E = 4u (3 N ln N + 52 N) + 12 u N |ln tau|
// (0.09 at N = 5,000). tests/gpu/test_gpu_tensor.py checks the kernel against the float64 one and
// gboost.stats.f32screen (the same formula in NumPy float32) against the bound.

#define GM_R32_FIELDS 7  // row SNP: K_a, P_00, P_01, P_10, P_11, P_20, P_21
#define GM_C32_FIELDS 7  // column SNP: K_b, Q_00, Q_01, Q_10, Q_11, Q_20, Q_21

// Per-SNP float32 terms and counts of a fully called SNP g into out32[f * stride] / cnt[x * stride]
// (cnt may be null).
__device__ __forceinline__ void gm_snp_terms32(const int* __restrict__ counts, int g, const double* tab, float* out32,
                                               int* cnt, int stride, bool as_row) {
    int c[6];
#pragma unroll
    for (int x = 0; x < 6; ++x) {
        c[x] = __ldg(counts + (gb_size)g * 6 + x);
        if (cnt) cnt[x * stride] = c[x];
    }
    const int n0 = c[0] + c[1], n1 = c[2] + c[3], n2 = c[4] + c[5];
    const double k = tab[n0] + tab[n1] + tab[n2] -
                     (tab[c[0]] + tab[c[1]] + tab[c[2]] + tab[c[3]] + tab[c[4]] + tab[c[5]]);
    out32[0] = (float)k;
    const int nt[3] = {n0, n1, n2};
    if (as_row) {
#pragma unroll
        for (int a = 0; a < 3; ++a)
#pragma unroll
            for (int q = 0; q < 2; ++q) out32[(1 + a * 2 + q) * stride] = (float)((double)c[a * 2 + q] * gb_recip(nt[a]));
    } else {
        const int k0 = c[0] + c[2] + c[4], k1 = c[1] + c[3] + c[5];
        const double ik[2] = {gb_recip(k0), gb_recip(k1)};
#pragma unroll
        for (int b = 0; b < 3; ++b)
#pragma unroll
            for (int q = 0; q < 2; ++q)
                out32[(1 + b * 2 + q) * stride] = (float)((double)c[b * 2 + q] * gb_recip(nt[b]) * ik[q]);
    }
}

// The counted cells of a <2,2> tile of 16 x 16 pairs, parked in shared memory as soon as the mmas are
// done so that the accumulator registers are free for the epilogue (with them live it spilled heavily):
// slot s = ri * 4 + cj * 2 + e of each lane, 8 counts as 16-bit halves (class k, types ta, tb at
// k * 4 + ta * 2 + tb; counts < 2^16 wherever the pre-screen runs: its table must fit in shared memory).
// cell(k, f, v, c) as gm_table_acc's, f = ri.
template <class Cell>
__device__ __forceinline__ void gm_park22(uint4* cells, Cell cell, int lane) {
#pragma unroll
    for (int ri = 0; ri < 2; ++ri)
#pragma unroll
        for (int cj = 0; cj < 2; ++cj)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                // class k, fragment ri, column unit cj * 2 + tb, row unit ta: accumulator 2 * ta + e
                uint4 w;
                w.x = cell(0, ri, cj * 2 + 0, 0 + e) | (cell(0, ri, cj * 2 + 1, 0 + e) << 16);
                w.y = cell(0, ri, cj * 2 + 0, 2 + e) | (cell(0, ri, cj * 2 + 1, 2 + e) << 16);
                w.z = cell(1, ri, cj * 2 + 0, 0 + e) | (cell(1, ri, cj * 2 + 1, 0 + e) << 16);
                w.w = cell(1, ri, cj * 2 + 0, 2 + e) | (cell(1, ri, cj * 2 + 1, 2 + e) << 16);
                cells[(ri * 4 + cj * 2 + e) * 32 + lane] = w;
            }
}

// The 18 cells of a parked pair, the third types by subtraction from the SNPs' counts (as gm_pairs).
__device__ __forceinline__ void gm_table_parked(int (&t)[18], uint4 w, const int* cr, const int* cc) {
    const unsigned c8[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int k = 0; k < 2; ++k) {
#pragma unroll
        for (int ta = 0; ta < 2; ++ta)
#pragma unroll
            for (int tb = 0; tb < 2; ++tb) t[ta * 6 + tb * 2 + k] = (int)((c8[k * 2 + ta] >> (16 * tb)) & 0xffffu);
        gm_subtract<2, 2>(t, cr, GM_BI, cc, GM_BJ, k);
    }
}

#ifndef GM_PROBE  // set only by bench/gpu_variants.py: 1 no candidates in the missing-call pre-screen, 2 all of them
#define GM_PROBE 0
#endif
#ifndef GM_XBAR  // the pre-screen's best-partner bars across blocks (bar[SNP], gm_pairs22_f32)
#define GM_XBAR 1
#endif
#ifndef GM_FASTLOG  // ln tau of the pre-screen from the SFU (__logf) instead of logf
#define GM_FASTLOG 1
#endif
#ifndef GM_SFU  // which x(c) of the pre-screen come from the SFU (lg2): 0 none, 1 the nine x(n_ab), 2 brackets by shares
#define GM_SFU 1
#endif
// Whether the <2,2> kernel's float32 pre-screen stages its float32 c ln c table in shared memory: not
// with GM_SFU 2 (brackets by shares, gm_xlr), which the host takes where the table does not fit. The
// kernels with missing calls read none (gm_ksa32m).
#define GM_TABF (GM_SFU < 2)
// x(c) = c ln c of a count for the float32 pre-screen. The 27 table lookups a pair are random
// addresses in shared memory (~3.5 wavefronts each from bank conflicts; ncu: the shared-memory pipe
// bounds the kernel), so with GM_SFU some or all of them come from the SFU's lg2 instead, a pipe of
// its own: relative error <= 7u (lg2 2 ulp = 4u, the constant ln 2 and two roundings), which the
// bound E accounts for: the N ln N coefficient 3 (2u for table roundings, u for the cell terms'
// additions) becomes 9 with GM_SFU 1 (u + 7u + u). GM_SFU 2 reads no table: each cell bracket by
// shares (gm_xlr below), whose error has no N ln N term.
// lg2.approx with denormals flushed: what __log2f computes for a normal x (the pre-screen's counts
// and tau), without the 3 extra instructions (test, scale, correct) __log2f spends on denormal
// inputs in a build without -ftz (~30 a pair, 10 % of the epilogue's instructions); a denormal tau
// reads as 0, so ln tau = -inf and the pair goes to float64 like any tau <= 0.
__device__ __forceinline__ float gm_lg2(float x) {
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// A count (0 <= c < 2^23) as a float, exactly, by two full-rate instructions: the integer to float
// conversion (I2F) runs at a quarter of the rate on sm_90, and the pre-screen converts ~60 counts a pair.
__device__ __forceinline__ float gm_i2f(int c) { return __int_as_float(0x4B000000 | c) - 8388608.f; }

// 1/x of a count x > 0 from the SFU (rcp.approx: relative error <= 2^-23 = 2u), one instruction
// instead of __frcp_rn's correctly rounded sequence; the bound of gm_pairs_f32m accounts for it.
__device__ __forceinline__ float gm_rcp(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

template <bool SFU>
__device__ __forceinline__ float gm_xlx(const float* tabf, int c) {
    if constexpr (SFU) {
        // f + 1e-30 is f for every count f >= 1 and keeps lg2 finite at 0 (0 x -99.7 = 0): no
        // compare and select (integer-pipe work) for c <= 1.
        const float f = gm_i2f(c);
        return f * (gm_lg2(f + 1e-30f) * 0.69314718f);
    } else {
        return tabf[c];
    }
}

// f0 ln r0 + f1 ln r1 of counts f0, f1 and their shares r0, r1 of the sum (n_ab, or a margin): with
// GM_SFU 2 (no table) a bracket's x(c0) + x(c1) - x(c0 + c1) is taken in this form, without the
// cancellation of three terms up to c ln c each, so its error is bounded by the bracket's size (at most
// (c0 + c1) ln 2), not by c ln c: per bracket, r = f (1 / s) is off by 3u relative (rcp 2u, the product
// u), lg2 by 4u (|lg2 r| + 1) (CUDA guide, __log2f: 2^-22 absolute in [0.5, 2], else 2 ulp), so
// f |lg2 r| (5u) + f (8.33u) over both shares, plus the sum and ln 2: <= 11.3 u s nats with
// sum_k f_k |lg2 r_k| <= s. Over the nine cells (or the margins of a pair) that is 11.3 u N, against
// 15 u N ln N for x ln x from lg2 (gm_study_f32 and gm_bound_m take 12 u N). An empty share: 0 x
// lg2(1e-30) = 0; an empty sum: 1 / (0 + 1e-30) = 1e30 and shares 0.
// Both return bits (log2 units): their callers sum them and multiply the sum by ln 2 once (one FMUL
// a pair instead of one a bracket; the bound counts that product's rounding once a bracket, with room).
// The share of a count from its product with 1 / s fused with the + 1e-30 (one rounding, not two).
__device__ __forceinline__ float gm_xlr_shares(float f0, float r0, float f1, float r1) {
    return fmaf(f1, gm_lg2(r1 + 1e-30f), f0 * gm_lg2(r0 + 1e-30f));
}
// gm_xlrf: the same of two counts already floats (f0 + f1 exact: the counts are integers below 2^24).
__device__ __forceinline__ float gm_xlrf(float f0, float f1) {
    const float r = gm_rcp((f0 + f1) + 1e-30f);
    return fmaf(f1, gm_lg2(fmaf(f1, r, 1e-30f)), f0 * gm_lg2(fmaf(f0, r, 1e-30f)));
}
// gm_xlr: of two int counts, the sum's reciprocal from their int sum (taken from the float sum instead, the
// <2,2> pre-screen without its table was slightly slower).
__device__ __forceinline__ float gm_xlr(int c0, int c1) {
    const float f0 = gm_i2f(c0), f1 = gm_i2f(c1), r = gm_rcp(gm_i2f(c0 + c1) + 1e-30f);
    return fmaf(f1, gm_lg2(fmaf(f1, r, 1e-30f)), f0 * gm_lg2(fmaf(f0, r, 1e-30f)));
}

// v32 (see above) and ln tau of a table; r32 / c32 point at the SNPs' fields (strides GM_BI / GM_BJ).
__device__ __forceinline__ float gm_ksa32(const int (&t)[18], const float* tabf, const float* r32, const float* c32,
                                          float cst, float fn, float& lt) {
    // Three independent partial sums per quantity (one per row type a): the dependent chains of one
    // long sum left the pipes waiting (ncu: "wait" the first stall reason); the bound above covers
    // any order of the additions.
    float sa[3], ta[3];
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const float p0 = r32[(1 + a * 2) * GM_BI], p1 = r32[(2 + a * 2) * GM_BI];
        sa[a] = 0.f;
        ta[a] = 0.f;
#pragma unroll
        for (int b = 0; b < 3; ++b) {
            const int c0 = t[a * 6 + b * 2], c1 = t[a * 6 + b * 2 + 1];
#if GM_SFU >= 2
            sa[a] += gm_xlr(c0, c1);
#else
            sa[a] += (gm_xlx<false>(tabf, c0) + gm_xlx<false>(tabf, c1)) - gm_xlx<(GM_SFU >= 1)>(tabf, c0 + c1);
#endif
            const float q0 = c32[(1 + b * 2) * GM_BJ], q1 = c32[(2 + b * 2) * GM_BJ];
            ta[a] = fmaf(gm_i2f(c0 + c1), fmaf(p0, q0, p1 * q1), ta[a]);
        }
    }
#if GM_SFU >= 2
    const float s = (((sa[0] + sa[1]) + sa[2]) * 0.69314718f + cst) + (r32[0] + c32[0]);  // (gm_xlr: bits)
#else
    const float s = ((sa[0] + sa[1]) + (sa[2] + cst)) + (r32[0] + c32[0]);
#endif
    const float tau = (ta[0] + ta[1]) + ta[2];
#if GM_FASTLOG
    lt = gm_lg2(tau) * 0.69314718f;  // __logf's own computation: ~20 instructions fewer than logf a pair;
                                     // its error is in E (see gm_study_f32)
#else
    lt = logf(tau);
#endif
    return 2.f * fmaf(fn, lt, s);
}

// The float32 pre-screen's constants of a study with k0 controls and k1 cases (float64 formed, then
// rounded): N, ea and eb of the bound E = ea + eb |ln tau| (gboost.stats.f32screen.bound; with
// GM_FASTLOG __logf's error, CUDA guide: absolute <= 2^-21.41 for tau in [0.5, 2], else 3 ulp <= 6u
// |ln tau|, times N, doubled for KSA and by the safety factor: + 4N 2^-21.41 <= 25uN to ea (52 -> 59
// inside the 4u bracket, with room) and + 24uN to eb (12 -> 36)), and x(n_0) + x(n_1) - x(N).
__device__ __forceinline__ void gm_study_f32(const double* tab, int k0, int k1, float* f32c) {
    const int n = k0 + k1;
    const double u = 1.0 / 16777216.0, xn = tab[n];
    f32c[0] = (float)n;
    // (GM_SFU 2: the cells by gm_xlr, 12 u N in place of the N ln N term)
    f32c[1] = (float)(4.0 * u * ((GM_SFU >= 2 ? 0.0 : GM_SFU == 1 ? 9.0 : 3.0) * xn +
                                 ((GM_FASTLOG ? 59.0 : 52.0) + (GM_SFU >= 2 ? 12.0 : 0.0)) * n) * 1.0001);
    f32c[2] = (float)((GM_FASTLOG ? 36.0 : 12.0) * u * n * 1.0001);
    f32c[3] = (float)(tab[k0] + tab[k1] - xn);
}

// Per warp, gboost/engines/gpu/config.py (MmaConfig.park_bytes, cells22_bytes) sizes the dynamic shared
// memory by them: the parked cells and a queue of 32 candidates (their slot * 32 + lane, then their
// float64 KSA). Each kernel has its own, so that the modes with missing calls, whose per-warp loads
// hit L1, do not give up L1 to the larger <2,2> area (the two share an SM's 256 KB).
struct gm_park {  // the modes with missing calls: one pass's 4 slots, gm_pairs_f32m
    gb_u32 mcells[9 * 4 * 32];  // word w (cells 2w, 2w + 1) of slot s at [(w * 4 + s) * 32 + l]
    int idx[32];
    double v[32];
};
struct gm_cells22 {  // <2,2>: the cells of every row tile of the warp, 256 pairs a tile
    uint4 cells[8 * 32 * GM_TR];  // slot s of row tile h and lane l at [(h * 8 + s) * 32 + l]
    int idx[32];
    double v[32];
};

// The interval step of a pre-screened valid pair (both pre-screens): slot s of the lane, DF df, v32
// and ln tau from gm_ksa32 / gm_ksa32m, the bound E = ea + eb |ln tau|. U = v32 + E goes to up[s]
// (+inf where it is NaN or overflows, tau <= 0: float64 decides), the pair is counted in its row's
// and column's totals, and where it is certainly not a survivor (U <= the screen threshold) its
// L = v32 - E may raise the row's and column's bars. Returns whether it is surely in N_SIG (also
// L >= the summary threshold: KSA >= L). (Returned, not or-ed into the caller's mask here: with the
// mask written through a reference the missing-call kernels spilled 4 bytes more, nvcc 13.0 sm_90.)
template <int S>
__device__ __forceinline__ bool gm_interval(float (&up)[S], unsigned& valid, int& dfs, int& rtot, int& ctot,
                                            float& rl_max, float& cl_max, int s, int df, float v, float lt, float ea,
                                            float eb, const double* __restrict__ thr) {
    const float err = fmaf(eb, fabsf(lt), ea);
    float u = v + err;
    const float l = v - err;
    if (!(u <= 3.0e38f)) u = __int_as_float(0x7f800000);
    up[s] = u;
    valid |= 1u << s;
    dfs |= df << (3 * s);
    rtot += 1;
    ctot += 1;
    if ((double)u <= __ldg(thr + df) && l == l) {
        rl_max = fmaxf(rl_max, l);
        cl_max = fmaxf(cl_max, l);
        return (double)l >= __ldg(thr + 5 + df);
    }
    return false;
}

// Which of a lane's S pre-screened pairs need their float64 KSA: slot s is row ri = s >> RSHIFT and
// column x = s & (2^RSHIFT - 1) of the lane's (summary column col0 + x); U = up[s]. A candidate may
// survive, may count in N_SIG (unless surely so) or may be its row's or column's best partner (U at
// or above the bar). A pair surely in N_SIG and no candidate is counted here, without its value.
template <int S, int RSHIFT, int NC>
__device__ __forceinline__ unsigned gm_candidates(gm_summ& sm, const float (&up)[S], unsigned valid, unsigned sure,
                                                  int dfs, const double* __restrict__ thr, const float (&rl_max)[2],
                                                  const float (&cl_max)[NC], int col0) {
    unsigned cand = 0u;
#pragma unroll
    for (int s = 0; s < S; ++s) {
        if (!((valid >> s) & 1u)) continue;
        const int df = (dfs >> (3 * s)) & 7, ri = s >> RSHIFT, x = s & ((1 << RSHIFT) - 1);
        const double u = (double)up[s];
        const bool s_sure = (sure >> s) & 1u;
        if (u > __ldg(thr + df) || (u >= __ldg(thr + 5 + df) && !s_sure) || up[s] >= rl_max[ri] || up[s] >= cl_max[x])
            cand |= 1u << s;
        else if (s_sure) {
            sm.rsig[ri] += 1;
            sm.csig[col0 + x] += 1;
        }
    }
    return cand;
}

// The candidates of a warp (bit s of `cand`: this lane's slot s, S slots a lane) through the
// float64 test 32 at a time: each lane's candidates take positions pre, pre + 1, ... of the warp's
// list; `exact(id)` (id = slot * 32 + owner lane) returns the float64 KSA of a queued pair and
// appends it if it survives; then each owner gets `credit(s, v)` for its queued pairs.
template <int S, class Park, class Exact, class Credit>
__device__ __forceinline__ void gm_queue(Park& pk, unsigned cand, int lane, Exact exact, Credit credit) {
    const int cnt = __popc(cand);
    int pre = cnt;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const int o = __shfl_up_sync(0xffffffffu, pre, d);
        if (lane >= d) pre += o;
    }
    const int total = __shfl_sync(0xffffffffu, pre, 31);
    pre -= cnt;
    for (int base = 0; base < total; base += 32) {
        int k = pre - base;
#pragma unroll
        for (int s = 0; s < S; ++s) {
            if (!((cand >> s) & 1u)) continue;
            if (k >= 0 && k < 32) pk.idx[k] = s * 32 + lane;
            ++k;
        }
        __syncwarp();
        if (lane < total - base) pk.v[lane] = exact(pk.idx[lane]);
        __syncwarp();
        k = pre - base;
#pragma unroll
        for (int s = 0; s < S; ++s) {
            if (!((cand >> s) & 1u)) continue;
            if (k >= 0 && k < 32) credit(s, pk.v[k]);
            ++k;
        }
        __syncwarp();
    }
}

// gm_pairs for mode <2,2> with the float32 pre-screen, over the cells of one 16 x 16 tile parked in pk
// (at `cells`: the row tile's 8 slots). tab: the float64
// c ln c table (global memory: only candidates read it), tabf its float32 copy in shared memory; f32c:
// N, 4u(3 N ln N + 52 N), 12 u N, the study constant x(n_0) + x(n_1) - x(N).
__device__ __forceinline__ void gm_pairs22_f32(gm_summ& sm, gm_cells22& pk, const uint4* cells, const double* __restrict__ tab,
                                               const float* tabf, const double* __restrict__ thr,
                                               const double* rterm, const double* cterm, const double* consts,
                                               const float* r32, const float* c32, const int* rcnt, const int* ccnt,
                                               const float* f32c, int i0, int ni, int j0, int nj, int diag, int bi0,
                                               int bj0, int r_blk0, int c_blk0, int lane, gb_u32* __restrict__ surv_n,
                                               int surv_cap, int* __restrict__ surv_ij, double* __restrict__ surv_ksa,
                                               int* __restrict__ surv_tab, float* __restrict__ bar,
                                               float* barc, const float* bar_r, const float* bar_c) {
    const int g = lane >> 2, q = lane & 3;
    const float fn = f32c[0], ea = f32c[1], eb = f32c[2], cst = f32c[3];
    const float ninf = __int_as_float(0xff800000);
    float up[8];  // U of slot s = ri * 4 + cj * 2 + e
    unsigned valid = 0u, cand = 0u, sure = 0u;  // sure: certainly a non-survivor with KSA >= the summary threshold
    int dfs = 0;  // 3 bits a slot: the pair's DF
    float rl_max[2] = {ninf, ninf}, cl_max[4] = {ninf, ninf, ninf, ninf};
#pragma unroll
    for (int ri = 0; ri < 2; ++ri) {
        const int rl = r_blk0 + ri * 8 + g, r = bi0 + rl;
#pragma unroll
        for (int cj = 0; cj < 2; ++cj)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int s = ri * 4 + cj * 2 + e, x = cj * 2 + e;
                const int cl = c_blk0 + cj * 8 + 2 * q + e, c = bj0 + cl;
                up[s] = ninf;
                if (r >= ni || c >= nj) continue;
                if (diag && i0 + r >= j0 + c) continue;
                const int e_a = (int)rterm[rl + 5 * GM_BI], e_b = (int)cterm[cl + 7 * GM_BJ];
                if (e_a > 1 || e_b > 1) continue;
                const int df = 4 >> (e_a + e_b);
                int t[18];
                gm_table_parked(t, cells[s * 32 + lane], rcnt + rl, ccnt + cl);
                float lt;
                const float v = gm_ksa32(t, tabf, r32 + rl, c32 + cl, cst, fn, lt);
                if (gm_interval(up, valid, dfs, sm.rtot[ri], sm.ctot[x], rl_max[ri], cl_max[x], s, df, v, lt, ea, eb, thr))
                    sure |= 1u << s;
            }
    }
    // The bars over the warp's 16 columns of each row (lanes q) and 16 rows of each column (lanes g).
#pragma unroll
    for (int ri = 0; ri < 2; ++ri) {
        rl_max[ri] = fmaxf(rl_max[ri], __shfl_xor_sync(0xffffffffu, rl_max[ri], 1));
        rl_max[ri] = fmaxf(rl_max[ri], __shfl_xor_sync(0xffffffffu, rl_max[ri], 2));
    }
#pragma unroll
    for (int x = 0; x < 4; ++x) {
        cl_max[x] = fmaxf(cl_max[x], __shfl_xor_sync(0xffffffffu, cl_max[x], 4));
        cl_max[x] = fmaxf(cl_max[x], __shfl_xor_sync(0xffffffffu, cl_max[x], 8));
        cl_max[x] = fmaxf(cl_max[x], __shfl_xor_sync(0xffffffffu, cl_max[x], 16));
    }
    // The bars across blocks: bar[SNP] (barc[SNP]) holds the largest L of a certain non-survivor of that
    // SNP as a row (column) seen in any block of this tile so far (0: none; only positive L are kept;
    // the host zeroes a tile's SNPs before it runs, so each tile's partial summary is exact on its own),
    // so a pair whose U is below it cannot be that SNP's best partner in the tile's row (column)
    // partial (that pair's KSA >= L > U). One bar for both roles would leave a diagonal tile's row
    // partial without its best where the SNP's best is a column pair: the merged summary right, the
    // tile's partials not the CPU engine's. The true best always
    // has U >= every L, so it stays a candidate. With the warp-local bars alone every row and column of a warp
    // tile had its own best evaluated in float64 (~9.6 % of pairs); with them, after the first blocks
    // of a row, only pairs near a threshold are (the N_SIG test below needs float64 only for pairs with
    // L < the summary threshold <= U).
    if (GM_XBAR) {
        const int gr = i0 + bi0 + r_blk0 + g, gc = j0 + bj0 + c_blk0 + 2 * q;
#pragma unroll
        for (int ri = 0; ri < 2; ++ri) {
            if (bi0 + r_blk0 + ri * 8 + g >= ni) continue;
            const float f = bar_r[r_blk0 + ri * 8 + g];  // (read at the block's start)
            if (q == 0 && rl_max[ri] > f && rl_max[ri] > 0.f)
                atomicMax((int*)(bar + gr + ri * 8), __float_as_int(rl_max[ri]));  // positive floats order as ints
            if (f > 0.f) rl_max[ri] = fmaxf(rl_max[ri], f);
        }
#pragma unroll
        for (int x = 0; x < 4; ++x) {
            const int cl = c_blk0 + (x >> 1) * 8 + 2 * q + (x & 1);
            if (bj0 + cl >= nj) continue;
            const float f = bar_c[cl];
            if (g == 0 && cl_max[x] > f && cl_max[x] > 0.f)
                atomicMax((int*)(barc + gc + (x >> 1) * 8 + (x & 1)), __float_as_int(cl_max[x]));
            if (f > 0.f) cl_max[x] = fmaxf(cl_max[x], f);
        }
    }
    cand = gm_candidates<8, 2>(sm, up, valid, sure, dfs, thr, rl_max, cl_max, 0);
    gm_queue<8>(
        pk, cand, lane,
        [&](int id) {  // the float64 KSA of a queued candidate; survivors appended here
            const int s = id >> 5, o = id & 31;
            const int rl = r_blk0 + (s >> 2) * 8 + (o >> 2), cl = c_blk0 + ((s >> 1) & 1) * 8 + 2 * (o & 3) + (s & 1);
            int t[18], df;
            gm_table_parked(t, cells[id], rcnt + rl, ccnt + cl);
            const double v = gb_ksa_fixed(t, tab, rterm + rl, GM_BI, cterm + cl, GM_BJ, consts, df);
            if (v > __ldg(thr + df)) gb_append(v, i0 + bi0 + rl, j0 + bj0 + cl, t, surv_n, surv_cap, surv_ij, surv_ksa, surv_tab);
            return v;
        },
        [&](int s, double v) {  // each owner credits its queued non-survivors
            const int ri = s >> 2, x = s & 3, df = (dfs >> (3 * s)) & 7;
            const int gi = i0 + bi0 + r_blk0 + ri * 8 + g, gj = j0 + bj0 + c_blk0 + (x >> 1) * 8 + 2 * q + (x & 1);
            if (v <= __ldg(thr + df)) gb_credit(sm, v, __ldg(thr + 5 + df), ri, x, gi, gj);
        });
}

// ---- The pre-screen of blocks with missing calls (modes <2,3>, <3,2>, <3,3>) -----------------------
//
// Real chips have missing calls at nearly every SNP, so nearly every block takes these modes, where a
// pair's margins n_ak, n_bk, n_a, n_b, n_k and its total N' are its own (the samples called at both
// SNPs), not the SNPs'. The same rearranged formula as above holds with them, all formed per pair:
//   KSA/2 = sum_q [x(t_q0) + x(t_q1) - x(t_q0 + t_q1)]      + sum_a [x(n_a) - x(n_a0) - x(n_a1)]
//         + sum_b [x(n_b) - x(n_b0) - x(n_b1)]                + [x(n_0) + x(n_1) - x(N')] + N' ln tau
// (each bracket in [-N ln 2, N ln 2]), P_ak = n_ak (1/n_a), Q_bk = n_bk (1/n_b) (1/n_k), reciprocals
// from the SFU (gm_rcp, relative error <= 2u). Every bracket is formed by shares (gm_xlr: n_a0 ln(n_a0 /
// n_a) + n_a1 ln(n_a1 / n_a) for x(n_a0) + x(n_a1) - x(n_a), the margins' shares being P_ak and
// n_bk / n_b), so no table is read and each bracket's error is bounded by its size: 11.3 u N for each
// of the four kinds (cells, rows, columns, class). Had the 21 x(t) come from the float32 table and the
// 27 others from lg2 (an earlier build), E = 4u (42 N ln N + 126 N) + ...: against that, E is 2.8x
// smaller at N = 5,000 and 5.4x at 50,000, so fewer pairs go to float64, and the kernels with missing
// calls are a little faster. Further first-order error of KSA/2 (u = 2^-24,
// N the study's samples, N' <= N): 35 further additions of partial sums below 4 N ln 2, 97 u N; tau
// 20 u relative (P 3u, Q 6u, product and fma 2u, 3 accumulations, 2 sums: 16u, with room), 20 u N;
// __logf 2^-21.41 absolute, 6 u N, and 6 u relative; the last fma u (4 N ln 2 + N |ln tau|). So
// |v32 - KSA| <= E = 4u (172 N) + 28 u N |ln tau| (KSA = 2 x KSA/2, then a safety factor of 2; 0.2
// at N = 5,000, 2.05 at 50,000), checked in NumPy by gboost.stats.f32screen.
// ksa32_missing on tables with missing calls. The decisions then follow gm_pairs22_f32: candidates
// (open survivor, N_SIG or best-partner decision) get gb_ksa_df in float64, the same as gm_pairs.

// v32 and ln tau of a table with its own margins, from the pair's nine parked words w[a * 3 + b] =
// (n_ab1 << 16) | n_ab0 (gm_park_packed). Every count becomes a float straight from its half of a word
// (gm_lo2f, gm_hi2f: one integer instruction and one add each), and each margin is summed once on the
// packed words (both classes in one add: every class count is below 2^16, so no carry crosses the
// halves) and then converted. The floats are the same exact integers the earlier form took by unpacking
// every count to an int, summing the margins per class and converting each sum (~60 instructions a pair
// more), so every float operation below has the same operands: gboost.stats.f32screen.ksa32_missing
// models it unchanged. valid: the table has at most one empty row and one empty column type (DF > 0,
// as gb_ksa_df); df its degrees of freedom.
__device__ __forceinline__ float gm_lo2f(gb_u32 v) { return __int_as_float(0x4B000000u | (v & 0xffffu)) - 8388608.f; }
__device__ __forceinline__ float gm_hi2f(gb_u32 v) {  // (bytes: v's upper two, then 0x00, 0x4B)
    return __int_as_float(__byte_perm(v, 0x4B000000u, 0x7632)) - 8388608.f;
}

__device__ __forceinline__ float gm_ksa32m(const gb_u32 (&w)[9], float& lt, bool& valid, int& df) {
    gb_u32 pa_w[3], pb_w[3];  // the row type a's and column type b's margins, both classes packed
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        pa_w[a] = w[a * 3] + w[a * 3 + 1] + w[a * 3 + 2];
        pb_w[a] = w[a] + w[3 + a] + w[6 + a];
    }
    const int ea = (pa_w[0] == 0u) + (pa_w[1] == 0u) + (pa_w[2] == 0u);
    const int eb = (pb_w[0] == 0u) + (pb_w[1] == 0u) + (pb_w[2] == 0u);
    valid = ea <= 1 && eb <= 1;
    df = 4 >> (ea + eb);
    const gb_u32 nw = pa_w[0] + pa_w[1] + pa_w[2];
    const float n0 = gm_lo2f(nw), n1 = gm_hi2f(nw);
    const float i0 = n0 > 0.f ? gm_rcp(n0) : 0.f, i1 = n1 > 0.f ? gm_rcp(n1) : 0.f;
    float pa[3][2], qb[3][2];
    float mr = 0.f, mc = 0.f;  // the row and column margin brackets
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const float fa0 = gm_lo2f(pa_w[a]), fa1 = gm_hi2f(pa_w[a]), fb0 = gm_lo2f(pb_w[a]), fb1 = gm_hi2f(pb_w[a]);
        const float na = fa0 + fa1, nb = fb0 + fb1;  // (exact)
        const float ra = na > 0.f ? gm_rcp(na) : 0.f, rb = nb > 0.f ? gm_rcp(nb) : 0.f;
        pa[a][0] = fa0 * ra;
        pa[a][1] = fa1 * ra;
        const float sb0 = fb0 * rb, sb1 = fb1 * rb;
        qb[a][0] = sb0 * i0;
        qb[a][1] = sb1 * i1;
        mr -= gm_xlr_shares(fa0, pa[a][0], fa1, pa[a][1]);  // (the shares of the margins: P, n_bk / n_b)
        mc -= gm_xlr_shares(fb0, sb0, fb1, sb1);
    }
    const float kc = gm_xlrf(n0, n1);
    float sa[3], ta[3];
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        sa[a] = 0.f;
        ta[a] = 0.f;
#pragma unroll
        for (int b = 0; b < 3; ++b) {
            const float c0 = gm_lo2f(w[a * 3 + b]), c1 = gm_hi2f(w[a * 3 + b]);
            sa[a] += gm_xlrf(c0, c1);
            ta[a] = fmaf(c0 + c1, fmaf(pa[a][0], qb[b][0], pa[a][1] * qb[b][1]), ta[a]);
        }
    }
    const float sm = (((sa[0] + sa[1]) + (sa[2] + kc)) + (mr + mc)) * 0.69314718f;  // (bits to nats once)
    const float tau = (ta[0] + ta[1]) + ta[2];
    lt = gm_lg2(tau) * 0.69314718f;
    return 2.f * fmaf(n0 + n1, lt, sm);
}

// gm_pairs for the modes with missing calls, one pass (8 columns) with the pre-screen: the pass's
// tables parked, each pair's interval, the bars (row bars rl_max carried over the passes), and the
// candidates' float64 KSA. tab: the float64 table (global memory);
// em: the bound's E = em[0] + em[1] |ln tau|.
// The counted cells of one pass (both classes packed, gm_count_packed) into the parking area: word
// ta * 3 + tb of slot s = ri * 2 + e, class k in the half k (16 bits: counts < 2^16 wherever the
// pre-screen runs).
template <int NA, int NB>
__device__ __forceinline__ void gm_park_packed(gm_park& pk, const gb_u32 (&acc)[NA][NB][4], int lane) {
#pragma unroll
    for (int ri = 0; ri < 2; ++ri)
#pragma unroll
        for (int e = 0; e < 2; ++e)
#pragma unroll
            for (int ta = 0; ta < NA; ++ta)
#pragma unroll
                for (int tb = 0; tb < NB; ++tb) {
                    const int s = ri * 2 + e;
                    pk.mcells[((ta * 3 + tb) * 4 + s) * 32 + lane] = acc[gm_frag<NA>(ri, ta)][tb][gm_half<NA>(ri, ta) * 2 + e];
                }
}

template <int NA, int NB>
__device__ __forceinline__ void gm_pairs_f32m(gm_summ& sm, gm_park& pk, int pass,
                                              const int* __restrict__ counts, const double* __restrict__ tab,
                                              const double* __restrict__ thr, const float (&em)[2],
                                              int i0, int ni, int j0, int nj, int diag, int bi0, int bj0, int r_blk0,
                                              int c_blk0, int lane, gb_u32* __restrict__ surv_n, int surv_cap,
                                              int* __restrict__ surv_ij, double* __restrict__ surv_ksa,
                                              int* __restrict__ surv_tab, float* __restrict__ bar,
                                              float* __restrict__ barc, float (&rl_max)[2]) {
    const int g = lane >> 2, q = lane & 3;
    const float ninf = __int_as_float(0xff800000);
    // The pairs of this lane (slot s = ri * 2 + e); in modes <2,3> and <3,2> their third types by
    // subtraction (gm_subtract), written back beside the counted cells.
    unsigned live = 0u;
#pragma unroll
    for (int ri = 0; ri < 2; ++ri)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int r = bi0 + r_blk0 + ri * 8 + g, c = bj0 + c_blk0 + pass * 8 + 2 * q + e;
            if (r >= ni || c >= nj || (diag && i0 + r >= j0 + c)) continue;
            const int s = ri * 2 + e;
            live |= 1u << s;
            if (NA == 3 && NB == 3) continue;
            int t[18], ci[6], cn[6];
#pragma unroll
            for (int x = 0; x < 6; ++x) {
                ci[x] = __ldg(counts + (gb_size)(i0 + r) * 6 + x);
                cn[x] = __ldg(counts + (gb_size)(j0 + c) * 6 + x);
            }
#pragma unroll
            for (int ta = 0; ta < NA; ++ta)
#pragma unroll
                for (int tb = 0; tb < NB; ++tb) {
                    const gb_u32 v = pk.mcells[((ta * 3 + tb) * 4 + s) * 32 + lane];
                    t[ta * 6 + tb * 2] = (int)(v & 0xffffu);
                    t[ta * 6 + tb * 2 + 1] = (int)(v >> 16);
                }
#pragma unroll
            for (int k = 0; k < 2; ++k) gm_subtract<NA, NB>(t, ci, 1, cn, 1, k);
#pragma unroll
            for (int w = 0; w < 9; ++w)
                if (w / 3 >= NA || w % 3 >= NB)
                    pk.mcells[(w * 4 + s) * 32 + lane] = (gb_u32)t[2 * w] | ((gb_u32)t[2 * w + 1] << 16);
        }
    auto unpark = [&](int (&t)[18], int s, int l) {
#pragma unroll
        for (int w = 0; w < 9; ++w) {
            const gb_u32 v = pk.mcells[(w * 4 + s) * 32 + l];
            t[2 * w] = (int)(v & 0xffffu);
            t[2 * w + 1] = (int)(v >> 16);
        }
    };
    float up[4];
    unsigned valid = 0u, cand = 0u, sure = 0u;
    int dfs = 0;
    float cl_max[2] = {ninf, ninf};
    // Two slots at a time, their pre-screens in one straight run without branches (a slot that is no
    // pair, or whose table is invalid, is computed on counts all the same and its result dropped):
    // the two chains of dependent float32 work interleave. One slot at a time behind its tests, each
    // ran alone, ~440 instructions of latency the warp's 4 warps a scheduler could not hide (ncu:
    // waits on fixed-latency results and long scoreboards first).
#pragma unroll
    for (int s2 = 0; s2 < 4; s2 += 2) {
        float v[2], lt[2];
        int df[2];
        bool ok[2];
#pragma unroll
        for (int x = 0; x < 2; ++x) {
            const int s = s2 + x;
            gb_u32 w[9];
#pragma unroll
            for (int u = 0; u < 9; ++u) w[u] = pk.mcells[(u * 4 + s) * 32 + lane];
            bool table_ok;
            v[x] = gm_ksa32m(w, lt[x], table_ok, df[x]);
            ok[x] = ((live >> s) & 1u) && table_ok;  // invalid (DF 0): not counted, as gb_ksa_df
        }
#pragma unroll
        for (int x = 0; x < 2; ++x) {
            const int s = s2 + x;
            up[s] = ninf;
            if (ok[x] && gm_interval(up, valid, dfs, sm.rtot[s >> 1], sm.ctot[pass * 2 + (s & 1)], rl_max[s >> 1],
                                     cl_max[s & 1], s, df[x], v[x], lt[x], em[0], em[1], thr))
                sure |= 1u << s;
        }
    }
    // The bars: over the warp (rows: lanes q; columns: lanes g), then across the tile's blocks through
    // bar[SNP] in global memory, as gm_pairs22_f32 (each warp reads its own SNPs' bars: no block barrier).
#pragma unroll
    for (int ri = 0; ri < 2; ++ri) {
        rl_max[ri] = fmaxf(rl_max[ri], __shfl_xor_sync(0xffffffffu, rl_max[ri], 1));
        rl_max[ri] = fmaxf(rl_max[ri], __shfl_xor_sync(0xffffffffu, rl_max[ri], 2));
        const int r = bi0 + r_blk0 + ri * 8 + g;
        if (GM_XBAR && r < ni) {
            const float f = __ldcg(bar + i0 + r);
            if (q == 0 && rl_max[ri] > f && rl_max[ri] > 0.f) atomicMax((int*)(bar + i0 + r), __float_as_int(rl_max[ri]));
            if (f > 0.f) rl_max[ri] = fmaxf(rl_max[ri], f);
        }
    }
#pragma unroll
    for (int e = 0; e < 2; ++e) {
        cl_max[e] = fmaxf(cl_max[e], __shfl_xor_sync(0xffffffffu, cl_max[e], 4));
        cl_max[e] = fmaxf(cl_max[e], __shfl_xor_sync(0xffffffffu, cl_max[e], 8));
        cl_max[e] = fmaxf(cl_max[e], __shfl_xor_sync(0xffffffffu, cl_max[e], 16));
        const int c = bj0 + c_blk0 + pass * 8 + 2 * q + e;
        if (GM_XBAR && c < nj) {
            const float f = __ldcg(barc + j0 + c);
            if (g == 0 && cl_max[e] > f && cl_max[e] > 0.f) atomicMax((int*)(barc + j0 + c), __float_as_int(cl_max[e]));
            if (f > 0.f) cl_max[e] = fmaxf(cl_max[e], f);
        }
    }
    cand = gm_candidates<4, 1>(sm, up, valid, sure, dfs, thr, rl_max, cl_max, pass * 2);
#if GM_PROBE == 1  // bench/ only (wrong results): the float32 work alone, no candidate
    cand = 0u;
#elif GM_PROBE == 2  // bench/ only: every valid pair a candidate (the float64 work on top)
    cand = valid;
#endif
    gm_queue<4>(
        pk, cand, lane,
        [&](int id) {
            const int s = id >> 5, o = id & 31;
            const int gi = i0 + bi0 + r_blk0 + (s >> 1) * 8 + (o >> 2), gj = j0 + bj0 + c_blk0 + pass * 8 + 2 * (o & 3) + (s & 1);
            int t[18], df;
            unpark(t, s, o);
            const double v = gb_ksa_df(t, tab, df);
            if (v > __ldg(thr + df)) gb_append(v, gi, gj, t, surv_n, surv_cap, surv_ij, surv_ksa, surv_tab);
            return v;
        },
        [&](int s, double v) {
            const int ri = s >> 1, e = s & 1, df = (dfs >> (3 * s)) & 7;
            const int gi = i0 + bi0 + r_blk0 + ri * 8 + g, gj = j0 + bj0 + c_blk0 + pass * 8 + 2 * q + e;
            if (v <= __ldg(thr + df)) gb_credit(sm, v, __ldg(thr + 5 + df), ri, pass * 2 + e, gi, gj);
        });
    __syncwarp();  // the next pass parks over these cells
}

// E's constants of gm_pairs_f32m for a study of n samples (float64 formed, then rounded up a little).
__device__ __forceinline__ void gm_bound_m(int n, float (&em)[2]) {
    const double u = 1.0 / 16777216.0;
    em[0] = (float)(4.0 * u * 172.0 * n * 1.0001);  // (every bracket by gm_xlr: 4 x 11.3 u N in the 172)
    em[1] = (float)(28.0 * u * n * 1.0001);
}
#endif

// Which <NA, NB> a block runs (as gb_block_mode of boost_screen.cu, for this kernel's block shape).
__device__ __forceinline__ int gm_block_mode(const unsigned char* __restrict__ miss, int i0, int ni, int j0, int nj,
                                             int bi0, int bj0, int tid) {
    // Each warp finds the mode itself with two votes: no block barrier for it (each barrier of a
    // block iteration waits for the block's slowest warp; ncu: 0.78 cycles an instruction stalled
    // on barriers). The caller keeps one __syncthreads per block iteration for its shared memory.
    const int lane = tid & 31;
    int fa = 0, fb = 0;
    for (int r = lane; r < GM_BI; r += 32) fa |= bi0 + r < ni && miss[i0 + bi0 + r];
    for (int c = lane; c < GM_BJ; c += 32) fb |= bj0 + c < nj && miss[j0 + bj0 + c];
    return (__any_sync(0xffffffffu, fa) ? 2 : 0) + (__any_sync(0xffffffffu, fb) ? 1 : 0);
}

constexpr bool gm_f32 = GM_F32 && !GM_COUNT_ONLY;  // this build runs the float32 pre-screen

// The tables of x ln x into shared memory, once per kernel: the float32 one where the pre-screen reads it
// (tab stays the global float64 table, read only for candidates), else the float64 one (tab then points at it).
template <int NA, int NB>
__device__ __forceinline__ void gm_load_tables(const double* __restrict__ const& xlx, const int& n_tab, const int& tid,
                                               const double*& tab
#if GM_F32 && !GM_COUNT_ONLY
                                               , gm_park* const& s_park
#endif
) {
if (n_tab > 0) {
#if GM_F32 && !GM_COUNT_ONLY
    if (gm_f32) {
        float* tf = (float*)gb_xlx_s;
        if (GM_TABF && NA == 2 && NB == 2)  // (only <2,2> reads it; not with GM_SFU 2)
            for (int e = tid; e < n_tab; e += GM_THREADS) tf[e] = (float)__ldg(xlx + e);
        if (!(NA == 2 && NB == 2)) {
            // gm_pairs_f32m computes every slot's pre-screen before it tests which are pairs, so
            // the parked words of a slot that is none must still be counts (gm_i2f takes counts
            // below 2^23): zero at first, counts of some pair after.
            gb_u32* z = (gb_u32*)s_park;
            for (int e = tid; e < GM_WARPS * (int)(sizeof(gm_park) / 4); e += GM_THREADS) z[e] = 0u;
        }
    } else
#endif
    {
        for (int e = tid; e < n_tab; e += GM_THREADS) gb_xlx_s[e] = __ldg(xlx + e);
        tab = gb_xlx_s;
    }
    __syncthreads();
}
}

// Per-SNP KSA terms of a fully called block, once per SNP; with the pre-screen also its float32
// terms and counts (other warps than the float64 terms, so both run at once), the study's
// constants, and the SNPs' cross-block bars (read before counting, so their latency hides).
__device__ __forceinline__ void gm_block_terms(const int* __restrict__ const& counts, const double* const& tab, double* s_rterm,
                                               double* s_cterm, double* const& consts,
#if GM_F32 && !GM_COUNT_ONLY
                                               float* s_r32, float* s_c32, int* s_rcnt, int* s_ccnt, float* s_f32c,
                                               float* s_bar_r, float* s_bar_c, float* __restrict__ const& bar,
                                               float* __restrict__ const& barc,
#endif
                                               const int& i0, const int& j0, const int& bi0, const int& bj0, const int& ni_blk, const int& nj_blk,
                                               const int& tid) {
    // Tasks t: [0, B) the float64 terms of row t (column t - GM_BI), [B, 2B) the float32 ones,
    // [2B, 3B) the bars, 3B the study's constants (B = GM_BI + GM_BJ; with 4 x 4 warps: warps
    // 0-3, 4-7, 8-11 and thread 384, so the two kinds of terms run at once).
    constexpr int B = GM_BI + GM_BJ;
    const int n_tasks = GM_F32 && !GM_COUNT_ONLY ? 3 * B + 1 : B;
    for (int t = tid; t < n_tasks; t += GM_THREADS) {
        const int k = t / B, e = t % B;
        const bool row = e < GM_BI;
        const int x = row ? e : e - GM_BI;
        if (row ? x >= ni_blk : x >= nj_blk) {
#if GM_F32 && !GM_COUNT_ONLY
            if (k == 2) (row ? s_bar_r[x] : s_bar_c[x]) = 0.f;
#endif
            continue;
        }
        const int snp = row ? i0 + bi0 + x : j0 + bj0 + x;
        if (k == 0) {
            if (row) gb_snp_terms(counts, snp, tab, s_rterm + x, GM_BI, true, x == 0 ? consts : 0);
            else gb_snp_terms(counts, snp, tab, s_cterm + x, GM_BJ, false, 0);
        }
#if GM_F32 && !GM_COUNT_ONLY
        else if (k == 1) {
            if (row) gm_snp_terms32(counts, snp, tab, s_r32 + x, s_rcnt + x, GM_BI, true);
            else gm_snp_terms32(counts, snp, tab, s_c32 + x, s_ccnt + x, GM_BJ, false);
        } else if (k == 2) {
            (row ? s_bar_r[x] : s_bar_c[x]) = __ldcg((row ? bar : barc) + snp);
        } else {  // any fully called SNP has the class totals
            int k0 = 0, k1 = 0;
#pragma unroll
            for (int a = 0; a < 3; ++a) {
                k0 += __ldg(counts + (gb_size)(i0 + bi0) * 6 + a * 2);
                k1 += __ldg(counts + (gb_size)(i0 + bi0) * 6 + a * 2 + 1);
            }
            gm_study_f32(tab, k0, k1, s_f32c);
        }
#endif
    }
}

// The main loops, one per way of counting a block (gm_screen picks by mode and build). The warp owns
// GM_TR row tiles of 16 SNPs and 16 columns. In the <2,2> ring its tiles are adjacent (rows r_blk0 + 16 h, staged together); the per-warp counting takes the block in
// GM_TR slices of 16 GM_WI rows, tile h of the warp at row h * 16 GM_WI + 16 wy, all warps in
// one slice at a time (a barrier between slices): the warps sharing a tile's operands then load
// them together, from L1 (with the tiles adjacent and no barrier, the kernels with missing
// calls were slower: each warp fetched its operands apart).
#if GM_STAGES > 1
// The main loop of a <2,2> block through the block ring: every warp takes part in the ring's
// barriers; live ones count and pair. The block's scalars come by reference, as the code read them
// before it was split out: by value, nvcc 13 simplified the loops apart first and allocated otherwise.
template <class Terms, class FoldRows, class TileLive>
__device__ __forceinline__ void gm_rows_ring(GM_SCREEN_ARGS, gm_summ& sm, Terms&& terms, FoldRows&& fold_rows,
                                             TileLive&& tile_live, const double* const& tab, double* const& consts,
                                             double* s_rterm, double* s_cterm,
#if GM_F32 && !GM_COUNT_ONLY
                                             const float* const& tabf, float* s_r32, float* s_c32, int* s_rcnt,
                                             int* s_ccnt, float* s_f32c, float* s_bar_r, float* s_bar_c,
                                             gm_cells22* const& s_cells,
#endif
                                             gb_u64* const& s_ring, const int& KS, const int& ks0, const int& bi0,
                                             const int& bj0, const int& r_blk0, const int& c_blk0, const bool& live,
                                             const int& tid, const int& lane, const int& warp) {
    gb_u32 acc[GM_KC][2 * GM_TR][4][4];
    gm_count22_block(acc, planes_r, stride_r, off_r, planes_c, stride_c, off_c, bi0, ni, bj0, nj, KS, ks0,
                     tid, live, s_ring, terms);
#if GM_F32 && !GM_COUNT_ONLY
    // Every row tile's cells parked at once (the accumulators then free for the pre-screen),
    // then its pairs through the float32 pre-screen.
    gm_cells22& pk = s_cells[warp];
    if (live) {
#pragma unroll
        for (int h = 0; h < GM_TR; ++h)
            gm_park22(pk.cells + h * 8 * 32,
                      [&](int k, int f, int v, int c) { return gm_cell22(acc, k, h * 2 + f, v, c); }, lane);
        __syncwarp();
    }
#pragma unroll 1
    for (int h = 0; h < GM_TR; ++h) {  // (one copy of the pre-screen's code: the row tile by its offsets)
        if (tile_live(r_blk0 + 16 * h))
            gm_pairs22_f32(sm, pk, pk.cells + h * 8 * 32, tab, tabf, thr, s_rterm, s_cterm, consts, s_r32,
                           s_c32, s_rcnt, s_ccnt, s_f32c, i0, ni, j0, nj, diag, bi0, bj0, r_blk0 + 16 * h,
                           c_blk0, lane, surv_n, surv_cap, surv_ij, surv_ksa, surv_tab, bar, barc, s_bar_r,
                           s_bar_c);
        fold_rows(r_blk0 + 16 * h);
    }
#else
    // The float64 epilogue (or, counting only, the tables): at >= ~12.8k samples the counting
    // is most of the kernel, and the per-warp loop (gm_rows_warp) waited on its loads (ncu at 50k
    // samples: the mmas' stalls for their operands, one k-step of prefetch).
#pragma unroll 1
    for (int h = 0; h < GM_TR; ++h) {  // (one copy of the float64 epilogue: each row tile moved to fragments 0, 1)
        if (tile_live(r_blk0 + 16 * h))
            gm_pairs<2, 2, 2>(sm, [&](int k, int f, int v, int c) { return gm_cell22(acc, k, f, v, c); },
                              0, counts, tab, thr, s_rterm, s_cterm, consts, i0, ni, j0, nj, diag, bi0, bj0,
                              r_blk0 + 16 * h, c_blk0, lane, surv_n, surv_cap, surv_ij, surv_ksa, surv_tab);
        fold_rows(r_blk0 + 16 * h);
        if (GM_TR == 2) {
#pragma unroll
            for (int f = 0; f < 2; ++f)
#pragma unroll
                for (int v = 0; v < 4; ++v)
#pragma unroll
                    for (int c = 0; c < 4; ++c) acc[0][f][v][c] = acc[0][(2 + f) & (2 * GM_TR - 1)][v][c];
        }
    }
#endif
}
#endif

// The main loop of a block counted warp by warp (each warp loads its own operands).
template <int NA, int NB, bool FAST, class FoldRows, class TileLive>
__device__ __forceinline__ void gm_rows_warp(GM_SCREEN_ARGS, gm_summ& sm, FoldRows&& fold_rows, TileLive&& tile_live,
                                             const double* const& tab, double* const& consts, double* s_rterm,
                                             double* s_cterm,
#if GM_F32 && !GM_COUNT_ONLY
                                             const float* const& tabf, float* s_r32, float* s_c32, int* s_rcnt,
                                             int* s_ccnt, float* s_f32c, float* s_bar_r, float* s_bar_c,
                                             gm_cells22* const& s_cells, gm_park* const& s_park, const float (&em)[2],
#endif
                                             const int& KS, const int& ks0, const int& bi0, const int& bj0,
                                             const int& wy, const int& c_blk0, const int& ncol, const int& lane,
                                             const int& warp) {
#pragma unroll 1
    for (int h = 0; h < GM_TR; ++h) {
        const int rt0 = h * 16 * GM_WI + wy * 16, nrt = min(16, ni - bi0 - rt0);  // this row tile
        if (h > 0) __syncthreads();  // (the slices in step)
        if (tile_live(rt0)) {
            if constexpr (NA == 2 && NB == 2) {  // (without the block ring: each warp loads its own operands)
                gb_u32 acc[2][NA][2 * NB][4];
                gm_count<NA, NB, 2>(acc, planes_r, stride_r, off_r + bi0 + rt0, nrt, planes_c, stride_c,
                                    off_c + bj0 + c_blk0, ncol, KS, ks0, lane);
#if GM_F32 && !GM_COUNT_ONLY
                if (gm_f32) {
                    gm_cells22& pk = s_cells[warp];
                    gm_park22(pk.cells, gm_acc_cells(acc), lane);
                    __syncwarp();
                    gm_pairs22_f32(sm, pk, pk.cells, tab, tabf, thr, s_rterm, s_cterm, consts, s_r32, s_c32, s_rcnt,
                                   s_ccnt, s_f32c, i0, ni, j0, nj, diag, bi0, bj0, rt0, c_blk0, lane, surv_n, surv_cap,
                                   surv_ij, surv_ksa, surv_tab, bar, barc, s_bar_r, s_bar_c);
                    __syncwarp();  // (the next row tile parks over these cells)
                } else
#endif
                gm_pairs<NA, NB, 2>(sm, gm_acc_cells(acc), 0, counts, tab, thr, s_rterm, s_cterm, consts, i0, ni, j0,
                                    nj, diag, bi0, bj0, rt0, c_blk0, lane, surv_n, surv_cap, surv_ij, surv_ksa, surv_tab);
            } else {
#if GM_F32 && !GM_COUNT_ONLY
                float rl_max[2] = {__int_as_float(0xff800000), __int_as_float(0xff800000)};  // row bars, both passes
#endif
#pragma unroll
                for (int pass = 0; pass < 2; ++pass) {
                    if (ncol > pass * 8) {
#if GM_F32 && !GM_COUNT_ONLY
                        if (gm_f32) {  // both classes in one set of 36 accumulators, then parked
                            gb_u32 acc[NA][NB][4];
                            gm_count_packed<NA, NB, FAST>(acc, planes_r, stride_r, off_r + bi0 + rt0, nrt,
                                                          planes_c, stride_c, off_c + bj0 + c_blk0 + pass * 8,
                                                          ncol - pass * 8, KS, ks0, lane, pass);
                            gm_park_packed<NA, NB>(s_park[warp], acc, lane);
                            __syncwarp();
                            gm_pairs_f32m<NA, NB>(sm, s_park[warp], pass, counts, xlx, thr, em,
                                                  i0, ni, j0, nj, diag, bi0, bj0, rt0, c_blk0, lane, surv_n,
                                                  surv_cap, surv_ij, surv_ksa, surv_tab, bar, barc, rl_max);
                            continue;
                        }
#endif
                        gb_u32 acc[2][NA][NB][4];
                        gm_count<NA, NB, 1>(acc, planes_r, stride_r, off_r + bi0 + rt0, nrt, planes_c, stride_c,
                                            off_c + bj0 + c_blk0 + pass * 8, ncol - pass * 8, KS, ks0, lane);
                        gm_pairs<NA, NB, 1>(sm, gm_acc_cells(acc), pass, counts, tab, thr, s_rterm, s_cterm, consts, i0,
                                            ni, j0, nj, diag, bi0, bj0, rt0, c_blk0, lane, surv_n, surv_cap, surv_ij,
                                            surv_ksa, surv_tab);
                    }
                }
            }
        }
        fold_rows(rt0);
    }
}

// The epilogue of a block: columns cc * 8 + 2q + e are shared by the 8 groups (g): fold across those
// lanes, then across the block's warps in shared memory, and the block's partials written.
template <class Part>
__device__ __forceinline__ void gm_block_end(gm_summ& sm, const Part& s_part, const gb_partials_out o, gb_size rbase,
                                             gb_size cbase, int tid, int bi0, int ni, int bj0, int nj, int c_blk0,
                                             int wy, int g, int q) {
#pragma unroll
    for (int x = 0; x < 4; ++x) {
        gm_fold(sm.csig[x], sm.ctot[x], sm.cbest[x], sm.cbp[x], 4);
        gm_fold(sm.csig[x], sm.ctot[x], sm.cbest[x], sm.cbp[x], 8);
        gm_fold(sm.csig[x], sm.ctot[x], sm.cbest[x], sm.cbp[x], 16);
        if (g == 0) s_part.put_col(c_blk0 + (x >> 1) * 8 + 2 * q + (x & 1), wy, sm, x);
    }
    __syncthreads();
    s_part.write(o, rbase, cbase, tid, bi0, ni, bj0, nj);
}

// GM_SCREEN_ARGS / GM_SCREEN_PASS: the tensor-core kernels' argument list and its forwarding, generated
// by compile.py from gboost/engines/gpu/kernel_args.py (gm_screen: the tile's fields, gb_tile_args,
// then the pre-screen's cross-block bars bar and barc), the one place they are written.
// The kernel: its shared memory, the tables, then the tile order, each block of this kernel's mode
// counted by the main loop (gm_rows_ring, gm_rows_warp) and closed by gm_block_end.
// FAST (gm_screen_32f, gm_screen_33f): the missing-call modes count from the fragment-native copy
// (gm_count_class), launched by the host where it made one and the tile's rows and columns start at
// multiples of 16 in the plane arrays (every warp's row tile and column pass then does). A kernel of
// its own: with both loops in one kernel, gm_screen_33 spilled 136 bytes a thread against 48.
template <int NA, int NB, bool FAST = false>
__device__ __forceinline__ void gm_screen(GM_SCREEN_ARGS) {
    const int KS = n_k, ks0 = k_ctrl;  // k-steps of 256 samples, the controls' first
    __shared__ double s_rterm[GB_ROW_FIELDS * GM_BI + 4];  // + the class constants
    __shared__ double s_cterm[GB_COL_FIELDS * GM_BJ];
    __shared__ int s_rsig[GM_BI][GM_WJ], s_rtot[GM_BI][GM_WJ], s_rbp[GM_BI][GM_WJ];
    __shared__ double s_rbest[GM_BI][GM_WJ];
    __shared__ int s_csig[GM_BJ][GM_WI], s_ctot[GM_BJ][GM_WI], s_cbp[GM_BJ][GM_WI];
    __shared__ double s_cbest[GM_BJ][GM_WI];
    const gb_block_partials<GM_BI, GM_BJ, GM_WJ, GM_WI> s_part = {s_rsig, s_rtot, s_rbp, s_rbest, s_csig, s_ctot, s_cbp, s_cbest};
#if GM_F32 && !GM_COUNT_ONLY
    // The float32 pre-screen (<2,2> only, where the host found room for it): per-SNP terms, counts
    // and the study's constants.
    __shared__ float s_r32[GM_R32_FIELDS * GM_BI], s_c32[GM_C32_FIELDS * GM_BJ], s_f32c[4];
    __shared__ int s_rcnt[6 * GM_BI], s_ccnt[6 * GM_BJ];
    __shared__ float s_bar_r[GM_BI], s_bar_c[GM_BJ];  // bar[] of the block's SNPs, read at its start
    // Dynamic shared memory (sized by the host): the float32 table, then a gm_park (gm_cells22) per warp; the float64
    // table stays in global memory, read only for candidates. A build with the pre-screen runs it in every
    // block (the host compiles one without it, GM_F32=0, where its table or cells do not fit): with the
    // float64 paths compiled beside it, the <3,3> kernel spilled ~900 bytes a thread into the pre-screen's
    // loops (ncu: local memory traffic), against ~200 alone.
    const float* tabf = (const float*)gb_xlx_s;
    gm_park* s_park = (gm_park*)gb_xlx_s;  // (the modes with missing calls: no table, gm_ksa32m)
    gm_cells22* s_cells = (gm_cells22*)((char*)gb_xlx_s + (((GM_TABF ? n_tab : 0) * 4 + 15) & ~15));  // (<2,2>)
#if GM_STAGES > 1
    // GM_STAGES x GM_STAGE_WORDS over the parking areas: a block parks only after its ring's last reads
    // (gm_count22_block ends with a barrier) and refills it only after every warp's pre-screen (the
    // barrier before the block's fold and the one at the next block's start).
    gb_u64* s_ring = (gb_u64*)s_cells;
#endif
#elif GM_STAGES > 1
    // Without the pre-screen (a study of >= ~12.8k samples, whose table does not fit; the float64
    // build; the counting-only one): the ring after the float64 table, when that is staged.
    gb_u64* s_ring = (gb_u64*)((char*)gb_xlx_s + ((n_tab * 8 + 15) & ~15));
#endif

    constexpr bool kBlockRing = GM_STAGES > 1;  // the <2,2> blocks count through the block ring
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wy = warp / GM_WJ, wx = warp % GM_WJ, g = lane >> 2, q = lane & 3;
    const double* tab = xlx;
    gm_load_tables<NA, NB>(xlx, n_tab, tid, tab
#if GM_F32 && !GM_COUNT_ONLY
                           , s_park
#endif
    );
#if GM_F32 && !GM_COUNT_ONLY
    float em[2];  // the bound of the modes with missing calls (gm_pairs_f32m)
    gm_bound_m(n_tab - 1, em);
#endif
    const int nbx = (nj + GM_BJ - 1) / GM_BJ, nby = (ni + GM_BI - 1) / GM_BI;
    const int nblk = nbx * nby;
    for (int blk = blockIdx.x; blk < nblk; blk += gridDim.x) {
        const int bx = blk % nbx, by = blk / nbx;
        const int bi0 = by * GM_BI, bj0 = bx * GM_BJ;
        // Partials live at [block column][row] and [block row][column], as in boost_screen.cu.
        const gb_size rbase = (gb_size)bx * ni + bi0, cbase = (gb_size)by * nj + bj0;
        if (diag && j0 + bj0 + GM_BJ - 1 <= i0 + bi0) {  // wholly on or below the diagonal: no pair
            if (write_empty) gb_empty_partials<GM_BI, GM_BJ>({rp_sig, rp_tot, rp_best, rp_partner, cp_sig, cp_tot, cp_best, cp_partner}, rbase, cbase, tid, bi0, ni, bj0, nj);
            continue;
        }
        if (gm_block_mode(miss, i0, ni, j0, nj, bi0, bj0, tid) != (NA - 2) * 2 + (NB - 2)) continue;
        // The previous block's readers of the shared per-SNP terms and partial summaries are done.
        __syncthreads();
        const int ni_blk = min(GM_BI, ni - bi0), nj_blk = min(GM_BJ, nj - bj0);
        double* consts = s_rterm + GB_ROW_FIELDS * GM_BI;
        auto terms = [&]() {
            gm_block_terms(counts, tab, s_rterm, s_cterm, consts,
#if GM_F32 && !GM_COUNT_ONLY
                           s_r32, s_c32, s_rcnt, s_ccnt, s_f32c, s_bar_r, s_bar_c, bar, barc,
#endif
                           i0, j0, bi0, bj0, ni_blk, nj_blk, tid);
        };
        if (NA == 2 && NB == 2 && !kBlockRing) {  // (the block ring does it while its first loads fly)
            terms();
            __syncthreads();
        }

        gm_summ sm;
        sm.reset_rows();
        sm.reset_cols();
        // Rows ri * 8 + g of a row tile are shared by the 4 lanes of a group (q): folded across those
        // lanes into the block's shared partials after each row tile, then the row summaries reset.
        auto fold_rows = [&](int rt0) {
#pragma unroll
            for (int ri = 0; ri < 2; ++ri) {
                gm_fold(sm.rsig[ri], sm.rtot[ri], sm.rbest[ri], sm.rbp[ri], 1);
                gm_fold(sm.rsig[ri], sm.rtot[ri], sm.rbest[ri], sm.rbp[ri], 2);
                if (q == 0) s_part.put_row(rt0 + ri * 8 + g, wx, sm, ri);
            }
            sm.reset_rows();
        };

        const int r_blk0 = wy * 16 * GM_TR, c_blk0 = wx * 16;  // (the warp's row tiles: gm_rows_ring, gm_rows_warp)
        const int nrow = min(16 * GM_TR, ni - bi0 - r_blk0), ncol = min(16, nj - bj0 - c_blk0);
        // Warp-uniform: a warp (row tile) with no row, no column or only pairs on or below the diagonal skips.
        const bool live = nrow > 0 && ncol > 0 && !(diag && j0 + bj0 + c_blk0 + 15 <= i0 + bi0 + r_blk0);
        auto tile_live = [&](int rt0) {
            return ncol > 0 && bi0 + rt0 < ni && !(diag && j0 + bj0 + c_blk0 + 15 <= i0 + bi0 + rt0);
        };
#if GM_STAGES > 1
        if constexpr (NA == 2 && NB == 2)
            gm_rows_ring(GM_SCREEN_PASS, sm, terms, fold_rows, tile_live, tab, consts, s_rterm, s_cterm,
#if GM_F32 && !GM_COUNT_ONLY
                         tabf, s_r32, s_c32, s_rcnt, s_ccnt, s_f32c, s_bar_r, s_bar_c, s_cells,
#endif
                         s_ring, KS, ks0, bi0, bj0, r_blk0, c_blk0, live, tid, lane, warp);
        if constexpr (!(NA == 2 && NB == 2))
#endif
        gm_rows_warp<NA, NB, FAST>(GM_SCREEN_PASS, sm, fold_rows, tile_live, tab, consts, s_rterm, s_cterm,
#if GM_F32 && !GM_COUNT_ONLY
                                   tabf, s_r32, s_c32, s_rcnt, s_ccnt, s_f32c, s_bar_r, s_bar_c, s_cells, s_park, em,
#endif
                                   KS, ks0, bi0, bj0, wy, c_blk0, ncol, lane, warp);

        gm_block_end(sm, s_part, {rp_sig, rp_tot, rp_best, rp_partner, cp_sig, cp_tot, cp_best, cp_partner}, rbase, cbase,
                     tid, bi0, ni, bj0, nj, c_blk0, wy, g, q);
    }
}

extern "C" __global__ void __launch_bounds__(GM_THREADS, GM_MINB22) gm_screen_22(GM_SCREEN_ARGS) { gm_screen<2, 2>(GM_SCREEN_PASS); }
extern "C" __global__ void __launch_bounds__(GM_THREADS, GM_MINB33) gm_screen_23(GM_SCREEN_ARGS) { gm_screen<2, 3>(GM_SCREEN_PASS); }
extern "C" __global__ void __launch_bounds__(GM_THREADS, GM_MINB33) gm_screen_32(GM_SCREEN_ARGS) { gm_screen<3, 2>(GM_SCREEN_PASS); }
extern "C" __global__ void __launch_bounds__(GM_THREADS, GM_MINB33) gm_screen_33(GM_SCREEN_ARGS) { gm_screen<3, 3>(GM_SCREEN_PASS); }
extern "C" __global__ void __launch_bounds__(GM_THREADS, GM_MINB33) gm_screen_32f(GM_SCREEN_ARGS) { gm_screen<3, 2, true>(GM_SCREEN_PASS); }
extern "C" __global__ void __launch_bounds__(GM_THREADS, GM_MINB33) gm_screen_33f(GM_SCREEN_ARGS) { gm_screen<3, 3, true>(GM_SCREEN_PASS); }


// SNP-major planes x[s][t][w] (n SNPs, W words: controls [0, w_ctrl), cases after) into the
// kernel's layout out[t][ks][out_off + s][4] (out_stride SNPs per k-step row), each class padded
// with zero words to whole k-steps of 4 words (256 samples); with frag, also into the fragment-native
// copy after it (gm_count_class; out_stride a multiple of 16).
extern "C" __global__ void gm_layout(const gb_u64* __restrict__ x, int n, int W, int w_ctrl, int ks0, int KS,
                                     gb_u64* __restrict__ out, long long out_stride, long long out_off, int frag) {
    const gb_size e = (gb_size)blockIdx.x * blockDim.x + threadIdx.x;
    const gb_size total = (gb_size)n * 3 * (gb_size)KS * 4;
    if (e >= total) return;
    const int q = (int)(e & 3);
    const gb_size rest = e >> 2;
    const int s = (int)(rest % (gb_size)n);
    const gb_size tk = rest / (gb_size)n;
    const int ks = (int)(tk % (gb_size)KS), t = (int)(tk / (gb_size)KS);
    const bool ctrl = ks < ks0;
    const int wc = (ctrl ? ks : ks - ks0) * 4 + q;  // word within the class
    const int nw = ctrl ? w_ctrl : W - w_ctrl;
    const gb_u64 v = wc < nw ? x[((gb_size)s * 3 + t) * (gb_size)W + (ctrl ? 0 : w_ctrl) + wc] : 0ull;
    out[(((gb_size)t * KS + ks) * (gb_size)out_stride + (gb_size)out_off + s) * 4 + q] = v;
    if (frag) {
        // SNP a = out_off + s of group a >> 4, half h = (a >> 3) & 1, row g = a & 7: its k-words 2q and
        // 2q + 1 go to words h and h + 2 of lane g * 4 + q's 16 bytes of the group.
        const gb_size a = (gb_size)out_off + s;
        gb_u32* f = (gb_u32*)(out + (gb_size)3 * KS * (gb_size)out_stride * 4) +
                    (((gb_size)t * KS + ks) * (gb_size)out_stride + (a & ~(gb_size)15)) * 8 + ((a & 7) * 4 + q) * 4 +
                    ((a >> 3) & 1);
        f[0] = (gb_u32)v;
        f[2] = (gb_u32)(v >> 32);
    }
}
