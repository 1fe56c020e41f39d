"""Compile-time parameters of the screen kernels: the production knobs only. Every configuration
these classes can express gives the same outputs (the GPU tests compare them); builds for
measurement only, which give wrong results, are made in bench/ (bench/gpu_variants.py)."""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class KernelConfig:
    """Compile-time parameters of the CUDA-core screen kernels; one compiled module per device and config.

    ``block_rows`` x ``block_cols`` SNPs per thread block (each thread a 2 x 2 micro-tile of
    pairs), ``chunk_words`` plane words staged in shared memory at a time, ``carry_save`` the
    full-adder popcount (about 1.8x fewer cycles per cell than one popcount per half-word;
    bench/bench_gpu.py --variant-size P, its "popc plain" row).
    """

    block_rows: int = 32
    block_cols: int = 32
    chunk_words: int = 8
    carry_save: bool = True
    # Blocks per SM the register allocation aims at, for the <2,2>, <2,3>/<3,2> and <3,3> kernels.
    min_blocks: tuple[int, int, int] = (3, 2, 2)

    def __post_init__(self):
        for name in ("block_rows", "block_cols"):
            v = getattr(self, name)
            if v < 2 or v % 2:
                raise ValueError(f"KernelConfig.{name} must be an even number >= 2, got {v}")
        if self.threads > 1024 or self.threads < self.block_rows + self.block_cols:
            raise ValueError(f"KernelConfig: {self.threads} threads per block do not fit this block shape")
        if self.chunk_words < 3:
            raise ValueError("KernelConfig.chunk_words must be >= 3")
        if len(self.min_blocks) != 3 or min(self.min_blocks) < 1:
            raise ValueError(f"KernelConfig.min_blocks must be three positive counts, got {self.min_blocks}")

    @property
    def threads(self) -> int:
        return (self.block_rows // 2) * (self.block_cols // 2)

    @property
    def corrects(self) -> bool:
        """Whether blocks with missing calls may count by correction (boost_screen.cu, mode 4): both
        classes' correction counts fit the plane buffers (GB_CORR_FITS, the same test)."""
        bi, bj, kw = self.block_rows, self.block_cols, self.chunk_words
        return (bi % 4 == 0 and bj % 4 == 0 and 6 * bj * bi <= 3 * kw * bi * 8
                and 4 * bi * (bj + 4) <= 3 * kw * bj * 8)

    def options(self) -> tuple[str, ...]:
        # --fmad=false: no fused multiply-adds, so KSA rounds exactly as the CPU engine's numba code.
        # CuPy adds -arch=sm_XY for the device the module is compiled on.
        return ("-std=c++17", "--fmad=false", f"-DGB_BI={self.block_rows}", f"-DGB_BJ={self.block_cols}",
                f"-DGB_KW={self.chunk_words}", f"-DGB_HS={int(self.carry_save)}",
                *(f"-DGB_MINB{m}={b}" for m, b in zip((22, 23, 33), self.min_blocks)))


@dataclass(frozen=True)
class MmaConfig:
    """Compile-time parameters of the tensor-core screen kernels.

    A block is ``warps_rows`` x ``warps_cols`` warps, each warp ``warp_rows`` x 16 SNPs; ``min_blocks``
    the blocks per SM the register allocation aims at for the <2,2> kernel and for the others.
    """

    # 4 x 4 warps (one block of 512 threads an SM at 128 registers) is a few percent faster at 500k
    # than 2 x 4 (two blocks an SM): the per-block costs (per-SNP terms, barriers, the fold) spread
    # over twice the pairs (bench/bench_gpu.py --variant-size 500000 --variants "mma 4x4 warps,mma 2x4
    # warps"). With 32 rows a warp a block is 128 x 64 SNPs.
    warps_rows: int = 4
    warps_cols: int = 4
    # Row SNPs a warp owns: 32 (two tiles of 16) lets each ldmatrix of the <2,2> ring's column operands
    # feed twice the mmas, with both classes packed into one accumulator (boost_mma.cu, GM_KC), which
    # needs every class below 2^16 samples: for_classes() gives 16 beyond that. Against 16 it shortens
    # the kernel at every size measured, most without missing calls (where counting is the larger
    # share of the kernel), least with them.
    warp_rows: int = 32
    min_blocks: tuple[int, int] = (1, 1)
    # Every block (fully called and with missing calls): KSA first in float32 with a proven error bound,
    # float64 only for the pairs whose decision it can change (boost_mma.cu, "Float32 pre-screen" and
    # "The pre-screen of blocks with missing calls"); False: float64 for every pair.
    f32_screen: bool = True
    # k-steps in flight in the <2,2> kernel's counting loop, staged once per block in shared memory
    # (cp.async; a power of two; one block barrier every bar_steps k-steps), with or without the
    # pre-screen; 0 or 1: each warp's register prefetch of one k-step.
    stages: int = 8
    # k-steps a block barrier of that ring covers (stages a multiple of it, at least twice it). Fewer
    # barriers are faster, 8 stages and a barrier every 4 k-steps the fastest of those tried
    # (bench/bench_gpu.py --variant-size P, its "stages ... steps/bar" rows): every barrier waits for
    # the block's slowest warp.
    bar_steps: int = 4
    # Which c ln c of the pre-screen come from the SFU (lg2) instead of the shared-memory table:
    # 0 none, 1 the nine x(n_ab) a pair (boost_mma.cu, gm_xlx). 1 is a few percent faster than 0
    # (bench/bench_gpu.py --variant-size P, its "mma sfu" rows). 2: no table, each
    # bracket x(c0) + x(c1) - x(c0 + c1) by shares (boost_mma.cu, gm_xlr; slower than the table):
    # the build takes it where the table does not fit. (The kernels with missing calls always take
    # their brackets by shares.)
    sfu_xlogx: int = 1
    # ln tau of the pre-screen from the SFU (__logf) instead of logf; its error is in the bound.
    fast_log: bool = True

    def __post_init__(self):
        if self.warps_rows < 1 or self.warps_cols < 1 or self.threads > 1024:
            raise ValueError(f"MmaConfig: {self.warps_rows} x {self.warps_cols} warps is not a valid block")
        if self.warp_rows not in (16, 32):
            raise ValueError(f"MmaConfig.warp_rows must be 16 or 32, got {self.warp_rows}")
        if self.threads < self.block_rows + self.block_cols:
            raise ValueError(f"MmaConfig: {self.threads} threads cannot fold a block of {self.block_rows} x "
                             f"{self.block_cols} SNPs (a thread per row and per column)")
        if len(self.min_blocks) != 2 or min(self.min_blocks) < 1:
            raise ValueError(f"MmaConfig.min_blocks must be two positive counts, got {self.min_blocks}")
        if self.stages > 1 and (self.stages & (self.stages - 1) or self.bar_steps < 1
                                or self.stages % self.bar_steps or self.stages < 2 * self.bar_steps):
            raise ValueError(f"MmaConfig: stages must be 0, 1 or a power of two holding at least two groups of "
                             f"bar_steps k-steps, got stages={self.stages}, bar_steps={self.bar_steps}")

    # Largest class (cases or controls) whose counts fit the 16-bit halves of packed accumulators.
    PACKED_CLASS_MAX = (1 << 16) - 1

    def for_classes(self, n_ctrl: int, n_case: int) -> "MmaConfig":
        """This configuration for a study of these classes: 16 rows a warp where a class has 2^16
        samples or more (its counts would carry out of a packed accumulator's half)."""
        if self.warp_rows == 32 and max(n_ctrl, n_case) > self.PACKED_CLASS_MAX:
            return replace(self, warp_rows=16)
        return self

    def builds(self) -> tuple["MmaConfig", ...]:
        """Every configuration the engine may compile from this one (MmaCounting.build, after
        for_classes), whatever the study: 16 rows a warp where a class has 2^16 samples or more; with
        the pre-screen, it without its table (sfu_xlogx 2); the float64 build (this sfu_xlogx), with
        and without the <2,2> kernel's block ring (stages 0). tests/unit/test_kernel_compile.py
        compiles each with nvcc."""
        out = []
        for c in (self, self.for_classes(self.PACKED_CLASS_MAX + 1, 0)):
            f64 = replace(c, f32_screen=False)
            out += ([c, replace(c, sfu_xlogx=2)] if c.f32_screen else []) + [f64, replace(f64, stages=0)]
        return tuple(dict.fromkeys(out))

    @property
    def block_rows(self) -> int:
        return self.warp_rows * self.warps_rows

    @property
    def block_cols(self) -> int:
        return 16 * self.warps_cols

    @property
    def threads(self) -> int:
        return 32 * self.warps_rows * self.warps_cols

    def options(self) -> tuple[str, ...]:
        return ("-std=c++17", "--fmad=false", f"-DGM_WI={self.warps_rows}", f"-DGM_WJ={self.warps_cols}",
                f"-DGM_TR={self.warp_rows // 16}",
                f"-DGM_MINB22={self.min_blocks[0]}", f"-DGM_MINB33={self.min_blocks[1]}",
                f"-DGM_F32={int(self.f32_screen)}", f"-DGM_STAGES={self.stages}", f"-DGM_BAR_STEPS={self.bar_steps}",
                f"-DGM_SFU={int(self.sfu_xlogx)}", f"-DGM_FASTLOG={int(self.fast_log)}")

    @property
    def park_bytes(self) -> int:
        """sizeof(gm_park) in boost_mma.cu, the parking area of a warp in the kernels with missing calls:
        one pass's cells, the queue and its values (4,992 bytes)."""
        return 9 * 4 * 32 * 4 + 32 * 4 + 32 * 8

    @property
    def cells22_bytes(self) -> int:
        """sizeof(gm_cells22), a warp's in the <2,2> kernel: the cells of its row tiles, the queue and
        its values (8,576 bytes with 32 rows a warp, 4,480 with 16)."""
        return 8 * 32 * 16 * (self.warp_rows // 16) + 32 * 4 + 32 * 8

    @property
    def ring_bytes(self) -> int:
        """The block ring (``stages`` > 1): ``stages`` stages of 4 (warps_rows * warp_rows / 16 +
        warps_cols) units of 32 lanes x 8 bytes."""
        units = 4 * (self.warps_rows * (self.warp_rows // 16) + self.warps_cols)
        return self.stages * units * 32 * 8 if self.stages > 1 else 0

    def f32_smem(self, n_tab: int, ring: bool = True) -> int:
        """Dynamic shared memory of the float32 pre-screen with a table of ``n_tab`` entries: the
        float32 table (16-byte aligned), then per warp the <2,2> kernel's cells (``ring``: that kernel),
        which its ring shares (a block parks only after its ring's last reads: boost_mma.cu, gm_screen),
        or the other kernels' parking area. Only the <2,2> kernel reads the table, and not with every
        bracket by shares (``sfu_xlogx`` 2; boost_mma.cu, GM_TABF)."""
        warps = self.threads // 32
        area = max(warps * self.cells22_bytes, self.ring_bytes) if ring else warps * self.park_bytes
        table = 0 if self.sfu_xlogx >= 2 or not ring else -(-n_tab * 4 // 16) * 16
        return table + area
