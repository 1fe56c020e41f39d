"""The two ways of counting a tile's tables, as strategy objects the device runner calls instead of
branching on the counting's name: their kernels and shared-memory plan, the planes' device layout
and the launch. Both give the same results (the epilogue is the same; tests/gpu/test_gpu_engine.py).

* :class:`PopcCounting` (``"popc"``): AND + popcount on the CUDA cores (``kernels/boost_screen.cu``),
  GBOOST's kernel; planes [type][word][SNP]; one thread block per block of pairs.
* :class:`MmaCounting` (``"mma"``): binary tensor cores (``kernels/boost_mma.cu``), compute
  capability 8.0+; planes [type][k-step][SNP][4 words] (``gm_layout``), for a resident study with
  missing calls followed by their fragment-native copy (``MmaCounting.frag``); persistent blocks; the
  float32 pre-screen where its table and parking areas fit in shared memory.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gboost.engines.gpu.compile import LIST_MODE_KERNEL, MMA_FAST_KERNELS, MMA_MODE_KERNELS, MODE_KERNELS, kernels
from gboost.engines.gpu.config import KernelConfig, MmaConfig
from gboost.engines.gpu.kernel_args import flat, pack

# Largest c ln c table staged in shared memory (8 bytes per entry, n_samples + 1 entries). The
# CUDA-core kernel: 64 KiB keeps two blocks per SM beside their 32-44 KiB of plane and reduction
# buffers. The tensor-core kernel stages it once per persistent block, so it can take more; its
# float32 pre-screen (float32 table, parked cells, operand ring) may use this much per 256 threads
# of a block (a default block of 512 threads is alone on an SM).
TABLE_SMEM_MAX = 64 << 10
MMA_TABLE_SMEM_MAX = 100 << 10
_LAYOUT_THREADS = 256


@dataclass
class Build:
    """The kernels a device runs a study with, and their shared-memory plan."""

    k: dict  # kernel name -> CuPy function
    n_tab: int  # c ln c entries staged in shared memory (0: read from global memory); see table_staged
    use_f32: bool  # the tensor cores' float32 pre-screen
    dyn_smem: dict  # mode kernel name -> dynamic shared memory of its launch (bytes)
    grid_blocks: dict  # mode kernel name -> blocks of a persistent launch (tensor cores only)
    # False where the float32 pre-screen forms its brackets by shares (no table; n_tab is then the
    # study's n + 1, which its bound reads)
    table_staged: bool = True


class _Counting:
    name: str
    label: str  # in GpuEngine.describe()
    mode_kernels: tuple[str, ...]
    lists = False  # whether its kernels count blocks with missing calls by correction (mode 4)
    # Whether the plane arrays also hold a fragment-native copy (only MmaCounting makes one; the runner
    # clears it where the copy does not fit, DeviceRunner._setup).
    frag = False

    def __init__(self, config, n_words: int, w_ctrl: int):
        self.config = config
        self.n_words, self.w_ctrl = n_words, w_ctrl
        self.ks0 = -(-w_ctrl // 4)
        self.n_ks = self.ks0 + -(-(n_words - w_ctrl) // 4)

    @property
    def max_snps(self) -> int:
        """The most SNPs one plane array handed to the kernels may hold (no limit here)."""
        return 1 << 62

    def kernel_name(self, mode: int, row_off: int, col_off: int) -> str:
        """The kernel that screens ``mode``'s blocks of a tile (MmaCounting may take another)."""
        return self.mode_kernels[mode]

    @staticmethod
    def _static_smem(k: dict, names) -> int:
        return max(k[name].shared_size_bytes for name in names)

    def _table(self, n_samples: int, cap: int) -> int:
        """The c ln c table in shared memory when it fits beside the kernel's own (about 45 scattered
        lookups per pair: from shared memory, not L1); else 0, read from global memory."""
        return n_samples + 1 if (n_samples + 1) * 8 <= cap else 0

    @staticmethod
    def _reserve(k: dict, dyn: dict) -> None:
        for name, need in dyn.items():
            if need and k[name].max_dynamic_shared_size_bytes < need:
                k[name].max_dynamic_shared_size_bytes = need


class PopcCounting(_Counting):
    """AND + popcount on the CUDA cores."""

    name = "popc"
    label = "CUDA-core popcount"
    # mode 4: counting by correction (missing_lists.py)
    mode_kernels = (*MODE_KERNELS, LIST_MODE_KERNEL)
    lists = True  # whether its kernels can count blocks with missing calls by correction

    @property
    def bytes_per_snp(self) -> int:
        return 3 * 8 * self.n_words

    def build(self, device_id: int, props: dict, n_samples: int) -> Build:
        optin = int(props.get("sharedMemPerBlockOptin", 48 << 10))
        k = kernels(device_id, self.config)
        n_tab = self._table(n_samples, min(TABLE_SMEM_MAX, optin - self._static_smem(k, self.mode_kernels)))
        dyn = {name: n_tab * 8 for name in self.mode_kernels}
        self._reserve(k, dyn)
        return Build(k, n_tab, False, dyn, {})

    def alloc_planes(self, cp, n: int):
        return cp.empty((3, self.n_words, n), dtype=np.uint64)

    def lay_out(self, k: dict, x, out, o: int) -> None:
        n = x.shape[0]
        out[:, :, o:o + n] = x.transpose(1, 2, 0)

    def shape_args(self) -> tuple:
        return np.int32(self.n_words), np.int32(self.w_ctrl)

    # Mode 4's fields of gb_params where another mode's kernel runs (it never reads them).
    _NO_LISTS = dict(gt=None, S=0, G=0, lst=None, L1=0)

    def launch(self, b: Build, name: str, args: dict, nbx: int, nby: int, *, bar, props, uploading: bool,
               lists: dict | None = None) -> None:
        """Launch ``name`` on ``args`` (the tile's fields, kernel_args.TILE) and, for mode 4, ``lists``'s."""
        params = pack("gb_params", dict(t=args, one=1, **(lists or self._NO_LISTS)))
        b.k[name]((nbx, nby, 1), (self.config.threads, 1, 1), (params,), shared_mem=b.dyn_smem[name])

    def pairs_per_second(self, sms: int, cells: int) -> float:
        # Measured on an H100: about 7 table cells x 64-bit words per SM and cycle, in both counting
        # modes (bench/bench_gpu.py prints the rate); count 8 at 1.8 GHz.
        return sms * 8 * 1.8e9 / (max(1, self.n_words) * cells)


class MmaCounting(_Counting):
    """Binary tensor cores (m16n8k256 .b1 .and.popc)."""

    name = "mma"
    label = "tensor-core b1 mma"
    mode_kernels = MMA_MODE_KERNELS
    # Whether plane arrays also hold the fragment-native copy (boost_mma.cu, gm_count_class): the <3,2> and
    # <3,3> modes of the float32 pre-screen then load each type's operand of a k-step in one 16-byte load
    # (the kernels gm_screen_32f, gm_screen_33f). Twice the planes' device memory, so the runner sets it
    # only for a study with missing calls whose planes, copy included, stay resident (DeviceRunner._setup).

    @property
    def bytes_per_snp(self) -> int:
        return 3 * 8 * 4 * self.n_ks * (2 if self.frag else 1)

    def kernel_name(self, mode: int, row_off: int, col_off: int) -> str:
        """The kernel of ``mode`` for a tile whose rows and columns start at plane columns
        ``row_off`` and ``col_off``: a fragment-native one where the copy exists and both start at a
        multiple of 16 (its 16-byte loads read whole groups of 16 SNPs)."""
        if self.frag and mode in MMA_FAST_KERNELS and row_off % 16 == 0 and col_off % 16 == 0:
            return MMA_FAST_KERNELS[mode]
        return self.mode_kernels[mode]

    def _f32_room(self, optin: int, static: int) -> int:
        """Shared memory the float32 pre-screen may take: MMA_TABLE_SMEM_MAX per 256 threads of a block
        (two default blocks share an SM; a block of 512 threads is alone on one)."""
        return min(MMA_TABLE_SMEM_MAX * max(1, self.config.threads // 256), optin - static)

    def build(self, device_id: int, props: dict, n_samples: int) -> Build:
        # The float32 pre-screen: a float32 copy of the table and a parking area per warp in dynamic
        # shared memory (the float64 table then stays in global memory). (The parked cells are 16-bit:
        # counts below 2^16, which the table's fit implies today.) A build with it runs it in every
        # block, so where it does not fit the kernels are compiled without it (boost_mma.cu, gm_screen).
        # Where the table cannot fit (n >= ~12.8k) the pre-screen forms its brackets by shares
        # (sfu_xlogx 2: no table, boost_mma.cu, gm_xlr and GM_TABF): at 50k samples the float64
        # epilogue it replaces was nearly half of the kernel (bench/bench_gpu.py --n 50000
        # --variant-size P, its "mma f64 epilogue" row).
        cfg = self.config
        optin = int(props.get("sharedMemPerBlockOptin", 48 << 10))
        n_tab_max = n_samples + 1
        f32_ok = cfg.f32_screen and n_samples < 1 << 16
        if f32_ok and not (n_tab_max * 8 <= MMA_TABLE_SMEM_MAX and cfg.f32_smem(n_tab_max) <= self._f32_room(optin, 0)):
            cfg = replace(cfg, sfu_xlogx=2)
        possible = f32_ok and cfg.f32_smem(n_tab_max) <= self._f32_room(optin, 0)
        if cfg.f32_screen and not possible:
            cfg = replace(cfg, f32_screen=False, sfu_xlogx=self.config.sfu_xlogx)  # (one float64 build)
        k = kernels(device_id, cfg)
        static = self._static_smem(k, self.mode_kernels)
        staged = not (possible and cfg.sfu_xlogx >= 2)
        n_tab = self._table(n_samples, min(MMA_TABLE_SMEM_MAX, optin - static)) if staged else n_tab_max
        use_f32 = bool(possible and n_tab and cfg.f32_smem(n_tab) <= self._f32_room(optin, static))
        if cfg.f32_screen and not use_f32:
            cfg = replace(cfg, f32_screen=False, sfu_xlogx=self.config.sfu_xlogx)
            k = kernels(device_id, cfg)
            static = self._static_smem(k, self.mode_kernels)
        if not use_f32:
            staged = True
            if cfg.stages > 1 and static + cfg.ring_bytes > optin:  # no room for the <2,2> kernel's block ring
                cfg = replace(cfg, stages=0)
                k = kernels(device_id, cfg)
                static = self._static_smem(k, self.mode_kernels)
            # the float64 table where it fits beside the ring
            n_tab = self._table(n_samples, min(MMA_TABLE_SMEM_MAX, optin - static - cfg.ring_bytes))
        # Dynamic shared memory: with the pre-screen its float32 table, parking areas and (<2,2>) ring;
        # without it the float64 table, if staged, then (<2,2>) the ring (boost_mma.cu, gm_screen).
        dyn = {name: cfg.f32_smem(n_tab, ring=name == self.mode_kernels[0]) if use_f32
               else -(-n_tab * 8 // 16) * 16 + (cfg.ring_bytes if name == self.mode_kernels[0] else 0)
               for name in self.mode_kernels}
        dyn.update({fast: dyn[self.mode_kernels[mode]] for mode, fast in MMA_FAST_KERNELS.items()})
        self._reserve(k, dyn)
        blocks = {name: self._resident_blocks(k[name], dyn[name], props) for name in dyn}
        return Build(k, n_tab, use_f32, dyn, blocks, table_staged=staged)

    def _resident_blocks(self, f, dyn: int, props: dict) -> int:
        """Blocks of a persistent kernel that fit on the device at once."""
        threads = self.config.threads
        warps = threads // 32
        regs_per_warp = -(-max(1, f.num_regs) * 32 // 256) * 256
        by_regs = int(props.get("regsPerMultiprocessor", 65536)) // (regs_per_warp * warps)
        smem = f.shared_size_bytes + dyn + 1024
        by_smem = int(props.get("sharedMemPerMultiprocessor", 228 << 10)) // smem
        by_threads = int(props.get("maxThreadsPerMultiProcessor", 2048)) // threads
        per_sm = max(1, min(by_regs, by_smem, by_threads, 32))
        return per_sm * int(props["multiProcessorCount"])

    @property
    def max_snps(self) -> int:
        """The counting loop addresses each type's planes by 32-bit word offsets (boost_mma.cu,
        gm_count_class): an array of n SNPs spans n_ks * n * 4 words a type, under 2^32. At 5,000
        samples that is 53M SNPs; at 100,000, 2.7M; at 488,000 (a whole UK Biobank), 560k. A larger
        study streams its planes in blocks of at most this many SNPs (GPU memory would not hold it
        whole on an H100 long before; an H200 could)."""
        return ((1 << 32) - 1) // (4 * self.n_ks)

    def alloc_planes(self, cp, n: int):
        """Plane array of ``n`` SNPs: [type][k-step][SNP][4 words] (stride ``out.shape[2]``), with
        ``frag`` the fragment-native copy after it (types 3-5 of the first axis) and the stride rounded
        up to 16 SNPs (whole groups; the rows past ``n`` are never counted)."""
        if self.frag:
            n16 = -(-n // 16) * 16
            assert n16 <= self.max_snps, (n16, self.max_snps)
            return cp.empty((6, self.n_ks, n16, 4), dtype=np.uint64)
        assert n <= self.max_snps, (n, self.max_snps)
        return cp.empty((3, self.n_ks, n, 4), dtype=np.uint64)

    def lay_out(self, k: dict, x, out, o: int) -> None:
        n = x.shape[0]
        total = n * 3 * self.n_ks * 4
        grid = (-(-total // _LAYOUT_THREADS), 1, 1)
        k["gm_layout"](grid, (_LAYOUT_THREADS, 1, 1),
                       (x, np.int32(n), np.int32(self.n_words), np.int32(self.w_ctrl), np.int32(self.ks0),
                        np.int32(self.n_ks), out, np.int64(out.shape[2]), np.int64(o), np.int32(out.shape[0] == 6)))

    def shape_args(self) -> tuple:
        return np.int32(self.n_ks), np.int32(self.ks0)

    def launch(self, b: Build, name: str, args: dict, nbx: int, nby: int, *, bar, props, uploading: bool,
               lists: dict | None = None) -> None:
        """Launch ``name`` on ``args`` (the tile's fields, kernel_args.TILE) and the cross-block bars."""
        assert lists is None  # (no mode 4 here)
        half = bar.size // 2
        args = flat("gm_screen", dict(t=args, bar=bar[:half], barc=bar[half:]))
        # While planes still go up, one SM is left to the upload's layout kernels: a persistent
        # kernel holds every SM for its whole tile, and a chunk's layout would wait for the
        # tile's end (the first tiles would then wait for their chunks).
        blocks = b.grid_blocks[name]
        if uploading and blocks > 1:
            blocks -= max(1, blocks // int(props["multiProcessorCount"]))
        grid = (max(1, min(nbx * nby, blocks)), 1, 1)
        b.k[name](grid, (self.config.threads, 1, 1), args, shared_mem=b.dyn_smem[name])

    def pairs_per_second(self, sms: int, cells: int) -> float:
        # Tensor cores: the counting is cheap; the per-pair epilogue (about 8 SM-cycles with 4
        # cells and the per-SNP terms, twice that with 9) sets the pace.
        return sms * 1.8e9 / (8 if cells == 4 else 16)


def counting_for(name: str, config: KernelConfig | MmaConfig, n_words: int, w_ctrl: int) -> _Counting:
    """The strategy of counting ``name`` (``"mma"`` or ``"popc"``) with its kernels' ``config``."""
    return (MmaCounting if name == "mma" else PopcCounting)(config, n_words, w_ctrl)
