"""GPU engine: the GBOOST kernel through CuPy, tiles of the pair triangle screened on the device.

A tile is screened by one launch per counting mode present in it: tables counted, PLINK's DF,
KSA from a ``c ln c`` table, survivors appended to a bounded buffer, and per-SNP partial
summaries over the non-surviving pairs reduced on the device. Only the survivors (with their
tables) and the per-SNP partials come back to the host. A survivor buffer that overflows is
grown and the tile screened again, so no pair is ever dropped.

Two ways of counting, with the same epilogue and the same results:

* ``"mma"``: binary tensor cores (``kernels/boost_mma.cu``): the planes of a block of row SNPs
  times those of a block of column SNPs, per class, as binary Gram tiles of
  ``mma.sync.m16n8k256 .b1 .and.popc``; compute capability 8.0 or newer;
* ``"popc"``: AND + popcount on the CUDA cores (``kernels/boost_screen.cu``), GBOOST's kernel;
  the fallback and the reference.

``GpuEngine(counting="auto")`` (the default; the environment variable ``GBOOST_GPU_COUNTING``
overrides it) takes the tensor cores where the device has them.

Memory. The study's bit planes stay resident on each GPU when they fit in half of its memory
budget (``memory_limit_bytes``, else its free memory); otherwise they stay on the host, page-locked,
and each tile's row block and column block are uploaded as it needs them (an LRU cache of
blocks within the budget), so device memory is bounded by the tile size, not by p. A device
out-of-memory error during a tile halves the tile edge (the tile is screened as sub-tiles and
their results merged, which gives the same result) and the survivor buffer, frees the pool and
goes on. Any other CUDA error in a tile stops the scan with a RuntimeError naming the device and
the tile; the pipeline has checkpointed every finished tile, so the scan can be resumed.

CuPy is imported only when an engine is prepared or described: ``import gboost.engines.gpu``
works on a machine without it.

Tiles run one of two ways:

* :meth:`GpuEngine.run_tile` screens one tile on the first GPU (the :class:`Engine` interface);
* :meth:`GpuEngine.run_tiles` screens many from a shared queue, one host thread per GPU, each
  keeping two tiles in flight (the next tile's kernels run while the last one's results are
  copied back), and yields the results in completion order.
"""
from __future__ import annotations


import math
import os
import queue
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from importlib import resources
from typing import Callable, Iterable, Iterator

import numpy as np

from gboost.engines.base import Engine, SummaryPartial, Thresholds, Tile, TileResult
from gboost.stats.fastksa import xlogx_table
from gboost.study import Study

KERNEL_FILE = "boost_screen.cu"
COMMON_FILE = "boost_common.cu"
MMA_KERNEL_FILE = "boost_mma.cu"
COUNTING_ENV = "GBOOST_GPU_COUNTING"
COUNTINGS = ("auto", "mma", "popc")
# Aim for launches of about this long, so that a GPU that also drives a display stays usable.
LAUNCH_TARGET_S = 0.05
DEFAULT_SURVIVOR_CAPACITY = 1 << 16
# Largest c ln c table staged in shared memory (8 bytes per entry, n_samples + 1 entries). The
# CUDA-core kernel: 64 KiB keeps two blocks per SM beside their 32-44 KiB of plane and reduction
# buffers. The tensor-core kernel stages it once per persistent block, so it can take more; its
# float32 pre-screen (float32 table, parked cells, operand ring) may use this much per 256 threads
# of a block (a default block of 512 threads is alone on an SM).
TABLE_SMEM_MAX = 64 << 10
MMA_TABLE_SMEM_MAX = 100 << 10
# Planes stay resident when they take at most this share of a device's memory budget.
RESIDENT_FRACTION = 0.5
# Planes go up in chunks of about this much (SNP-major staging).
UPLOAD_CHUNK_BYTES = 64 << 20
# Resident planes go up on a host thread while the first tiles run (_PlaneUpload), through two
# page-locked buffers of this size: the first tile waits only for its own SNPs' chunks. (Pageable
# 64 MB chunks beside the tiles ran at ~2.5 GB/s on the H100 host: the first two tiles waited
# 0.12 s for them, docs/PERFORMANCE.md.)
PRELOAD_CHUNK_BYTES = 8 << 20
MIN_EDGE = 8  # back-off floor of the tile edge, in SNPs
MIN_CAPACITY = 16  # back-off floor of the survivor buffer
_MODE_KERNELS = ("gb_screen_22", "gb_screen_23", "gb_screen_32", "gb_screen_33")
_MMA_MODE_KERNELS = ("gm_screen_22", "gm_screen_23", "gm_screen_32", "gm_screen_33")
_REDUCE_THREADS = 256
_LAYOUT_THREADS = 256
_CUDA_OOM = 2  # cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY


def _cupy():
    import cupy  # noqa: PLC0415 - lazily, so that gboost never needs CuPy to import

    return cupy


def _read_kernel(name: str) -> str:
    return (resources.files("gboost.engines") / "kernels" / name).read_text(encoding="utf-8")


def kernel_source() -> str:
    """The CUDA source of the CUDA-core screen kernels (package data)."""
    return _read_kernel(COMMON_FILE) + "\n" + _read_kernel(KERNEL_FILE)


def mma_kernel_source() -> str:
    """The CUDA source of the tensor-core screen kernels (package data)."""
    return _read_kernel(COMMON_FILE) + "\n" + _read_kernel(MMA_KERNEL_FILE)


@dataclass(frozen=True)
class KernelConfig:
    """Compile-time parameters of the CUDA-core screen kernels; one compiled module per device and config.

    ``block_rows`` x ``block_cols`` SNPs per thread block (each thread a 2 x 2 micro-tile of
    pairs), ``chunk_words`` plane words staged in shared memory at a time, ``carry_save`` the
    full-adder popcount (about 1.8x fewer cycles per cell than one popcount per half-word).
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

    def options(self) -> tuple[str, ...]:
        # --fmad=false: no fused multiply-adds, so KSA rounds exactly as the CPU engine's numba code.
        # CuPy adds -arch=sm_XY for the device the module is compiled on.
        return ("-std=c++17", "--fmad=false", f"-DGB_BI={self.block_rows}", f"-DGB_BJ={self.block_cols}",
                f"-DGB_KW={self.chunk_words}", f"-DGB_HS={int(self.carry_save)}",
                *(f"-DGB_MINB{m}={b}" for m, b in zip((22, 23, 33), self.min_blocks)))


@dataclass(frozen=True)
class MmaConfig:
    """Compile-time parameters of the tensor-core screen kernels.

    A block is ``warps_rows`` x ``warps_cols`` warps, each warp 16 x 16 SNPs; ``min_blocks`` the
    blocks per SM the register allocation aims at for the <2,2> kernel and for the others.
    """

    # 4 x 4 warps (64 x 64 SNPs, one block of 512 threads an SM at 128 registers) was 4 % faster at
    # 500k than 2 x 4 (two blocks an SM): the per-block costs (per-SNP terms, barriers, the fold)
    # spread over twice the pairs (docs/PERFORMANCE.md).
    warps_rows: int = 4
    warps_cols: int = 4
    min_blocks: tuple[int, int] = (1, 1)
    count_only: bool = False  # bench/ only: the counting alone, no KSA or survivors (wrong results)
    # Every block (fully called and with missing calls): KSA first in float32 with a proven error bound,
    # float64 only for the pairs whose decision it can change (boost_mma.cu, "Float32 pre-screen" and
    # "The pre-screen of blocks with missing calls"); False: float64 for every pair.
    f32_screen: bool = True
    # k-steps in flight in the <2,2> pre-screen kernel's counting loop, staged once per block in shared
    # memory (cp.async; a power of two; one block barrier every bar_steps k-steps); 0 or 1: each
    # warp's register prefetch of one k-step.
    stages: int = 8
    # k-steps a block barrier of that ring covers (stages a multiple of it, at least twice it). On an
    # H100 at 500k: 8 stages with a barrier every 4 k-steps, kernel 4.68 s; 4 and 2, 4.99 s; 4 and 1,
    # 5.32 s (docs/PERFORMANCE.md): every barrier waits for the block's slowest warp.
    bar_steps: int = 4
    # Which c ln c of the pre-screen come from the SFU (lg2) instead of the shared-memory table:
    # 0 none, 1 the nine x(n_ab) a pair, 2 all 27 (boost_mma.cu, gm_xlx). 1 was the fastest in every
    # run on an H100 (2.4-3.8 % of kernel time against 0, docs/PERFORMANCE.md).
    sfu_xlogx: int = 1
    # ln tau of the pre-screen from the SFU (__logf) instead of logf; its error is in the bound.
    fast_log: bool = True
    # bench/ only: extra -D macro definitions ("NAME=VALUE"), for experiments with the kernel's switches.
    defines: tuple[str, ...] = ()

    def __post_init__(self):
        if self.warps_rows < 1 or self.warps_cols < 1 or self.threads > 1024:
            raise ValueError(f"MmaConfig: {self.warps_rows} x {self.warps_cols} warps is not a valid block")
        if len(self.min_blocks) != 2 or min(self.min_blocks) < 1:
            raise ValueError(f"MmaConfig.min_blocks must be two positive counts, got {self.min_blocks}")
        if self.stages > 1 and (self.stages & (self.stages - 1) or self.bar_steps < 1
                                or self.stages % self.bar_steps or self.stages < 2 * self.bar_steps):
            raise ValueError(f"MmaConfig: stages must be 0, 1 or a power of two holding at least two groups of "
                             f"bar_steps k-steps, got stages={self.stages}, bar_steps={self.bar_steps}")

    @property
    def block_rows(self) -> int:
        return 16 * self.warps_rows

    @property
    def block_cols(self) -> int:
        return 16 * self.warps_cols

    @property
    def threads(self) -> int:
        return 32 * self.warps_rows * self.warps_cols

    def options(self) -> tuple[str, ...]:
        return ("-std=c++17", "--fmad=false", f"-DGM_WI={self.warps_rows}", f"-DGM_WJ={self.warps_cols}",
                f"-DGM_MINB22={self.min_blocks[0]}", f"-DGM_MINB33={self.min_blocks[1]}",
                f"-DGM_COUNT_ONLY={int(self.count_only)}", f"-DGM_F32={int(self.f32_screen)}",
                f"-DGM_STAGES={self.stages}", f"-DGM_BAR_STEPS={self.bar_steps}", f"-DGM_SFU={int(self.sfu_xlogx)}",
                f"-DGM_FASTLOG={int(self.fast_log)}",
                *(f"-D{d}" for d in self.defines))

    @property
    def park_bytes(self) -> int:
        """sizeof(gm_park) in boost_mma.cu: a warp's parked cells (the larger layout of the union: one
        pass of the modes with missing calls), queue and values (4,992 bytes)."""
        return max(8 * 32 * 16, 9 * 4 * 32 * 4) + 32 * 4 + 32 * 8

    @property
    def ring_bytes(self) -> int:
        """The block ring (``stages`` > 1): ``stages`` stages of 4 (warps_rows + warps_cols) units of
        32 lanes x 8 bytes, after the parking areas."""
        return self.stages * 4 * (self.warps_rows + self.warps_cols) * 32 * 8 if self.stages > 1 else 0


_KERNELS: dict[tuple[int, object], dict] = {}
_KERNELS_LOCK = threading.Lock()


def kernels(device_id: int, config: KernelConfig | MmaConfig) -> dict:
    """The compiled kernels for ``device_id`` and ``config``, compiled (NVRTC) on first use only."""
    key = (device_id, config)
    with _KERNELS_LOCK:
        got = _KERNELS.get(key)
        if got is None:
            cp = _cupy()
            if isinstance(config, MmaConfig):
                code, names = mma_kernel_source(), (*_MMA_MODE_KERNELS, "gb_reduce_partials", "gm_layout",
                                                     "gm_mma_ceiling")
            else:
                code, names = kernel_source(), (*_MODE_KERNELS, "gb_reduce_partials", "gb_popc_ceiling")
            with cp.cuda.Device(device_id):
                module = cp.RawModule(code=code, options=config.options())
                got = {name: module.get_function(name) for name in names}
            _KERNELS[key] = got
    return got


def _reduce_geometry(n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    return (max(1, -(-n // _REDUCE_THREADS)), 1, 1), (_REDUCE_THREADS, 1, 1)


def _device_name(cp, device_id: int) -> str:
    name = cp.cuda.runtime.getDeviceProperties(device_id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def _compute_capability(cp, device_id: int) -> int:
    props = cp.cuda.runtime.getDeviceProperties(device_id)
    return 10 * int(props["major"]) + int(props["minor"])


def _is_oom(cp, exc: BaseException) -> bool:
    if isinstance(exc, cp.cuda.memory.OutOfMemoryError):
        return True
    errors = (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError)
    return isinstance(exc, errors) and getattr(exc, "status", None) == _CUDA_OOM


def _is_cuda_error(cp, exc: BaseException) -> bool:
    return isinstance(exc, (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError))


class _Slot:
    """Device and pinned host buffers of one tile in flight (allocated on first use)."""

    def __init__(self, cp):
        self.cp = cp
        self.surv_n = cp.zeros(1, dtype=np.uint32)
        self.h_n = self._pinned(1, np.uint32)
        self.done = cp.cuda.Event()
        self.t0 = cp.cuda.Event()
        self.t1 = cp.cuda.Event()
        self.release()

    def release(self) -> None:
        """Drop the tile-sized buffers (after an out-of-memory back-off)."""
        self.cap = 0
        self.surv_ij = self.surv_ksa = self.surv_tab = None
        self.shape = (0, 0, 0, 0)
        self.part = None
        self.out_r = self.out_c = self.host_r = self.host_c = None
        self.refs = None

    def _pinned(self, n: int, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        mem = self.cp.cuda.alloc_pinned_memory(max(1, n) * dtype.itemsize)
        return np.frombuffer(mem, dtype, max(1, n))

    def _survivors(self, capacity: int) -> None:
        cp = self.cp
        c = int(capacity)
        ij = cp.empty((c, 2), dtype=np.int32)
        ksa = cp.empty(c, dtype=np.float64)
        tab = cp.empty((c, 18), dtype=np.int32)
        self.surv_ij, self.surv_ksa, self.surv_tab, self.cap = ij, ksa, tab, c

    def grow(self, needed: int) -> None:
        self._survivors(max(2 * self.cap, needed + needed // 4 + 64))

    def ensure(self, ni: int, nj: int, block_rows: int, block_cols: int, capacity: int) -> None:
        """Buffers for a tile of ``ni`` x ``nj`` SNPs in blocks of ``block_rows`` x ``block_cols``."""
        if self.surv_ij is None:
            self._survivors(capacity)
        e_i, e_j, b_i, b_j = self.shape
        if ni <= e_i and nj <= e_j and (b_i, b_j) == (block_rows, block_cols):
            return
        cp = self.cp
        if (b_i, b_j) == (block_rows, block_cols):
            ni, nj = max(ni, e_i), max(nj, e_j)
        nbx, nby = -(-nj // block_cols), -(-ni // block_rows)
        part, outs, hosts = {}, {}, {}
        for side, n, nb in (("r", ni, nbx), ("c", nj, nby)):
            part[side] = (cp.empty(nb * n, dtype=np.int32), cp.empty(nb * n, dtype=np.int32),
                          cp.empty(nb * n, dtype=np.float64), cp.empty(nb * n, dtype=np.int32))
            outs[side] = (cp.empty(n, dtype=np.int32), cp.empty(n, dtype=np.int32), cp.empty(n, dtype=np.float64),
                          cp.empty(n, dtype=np.int32))
            hosts[side] = tuple(self._pinned(n, a.dtype) for a in outs[side])
        self.part = part
        self.out_r, self.out_c = outs["r"], outs["c"]
        self.host_r, self.host_c = hosts["r"], hosts["c"]
        self.shape = (ni, nj, block_rows, block_cols)


@dataclass
class _Pending:
    tile: Tile
    slot: _Slot | None  # None: to be screened synchronously (after a back-off)
    epoch: int = 0


class _DeviceRunner:
    """One GPU: the study's small arrays and (when they fit) its planes on it, its kernels, a
    stream, two slots, and the memory policy (streaming, back-off)."""

    def __init__(self, device_id: int, study: Study, thresholds: Thresholds, counting: str,
                 config: KernelConfig | MmaConfig, capacity: int, memory_limit: int | None):
        cp = _cupy()
        self.cp = cp
        self.device_id = device_id
        self.counting = counting
        self.config = config
        self.study = study
        self.p = study.n_snps
        lay = study.layout
        self.n_words, self.w_ctrl = lay.n_words, lay.w_ctrl
        self.ks0 = -(-lay.w_ctrl // 4)
        self.n_ks = self.ks0 + -(-(lay.n_words - lay.w_ctrl) // 4)
        self.block_rows, self.block_cols = config.block_rows, config.block_cols
        self.bytes_per_snp = 3 * 8 * (4 * self.n_ks if counting == "mma" else self.n_words)
        self.has_missing = np.asarray(study.has_missing, dtype=bool)
        self.capacity = int(capacity)
        self.kernel_seconds = 0.0
        # Device time between the end of set-up (or of the last tile) and the start of a tile's
        # kernels: the GPU waiting for planes or for the host to queue the tile.
        self.idle_gaps: list[tuple[int, float]] = []  # (tile index, seconds idle before it), in stream order
        self._last_end = None  # CUDA event: end of set-up, then end of the last collected tile
        self.max_edge: int | None = None  # sub-tile edge after an out-of-memory back-off
        self.backoffs = 0
        self.epoch = 0
        self.streaming = False
        self.planes = None
        self._uploading: _PlaneUpload | None = None  # resident planes still going up
        self.where: Tile | None = None
        self._host = np.ascontiguousarray(study.planes, dtype=np.uint64)
        assert self._host.shape == (self.p, 3, self.n_words)
        self._registered = False
        self._cache: OrderedDict = OrderedDict()
        self._cache_bytes = 0
        self._old_limit: int | None = None
        self.slots: tuple[_Slot, _Slot] = ()
        with cp.cuda.Device(device_id):
            self.pool = cp.get_default_memory_pool()
            self._used0 = int(self.pool.used_bytes())  # the process's own arrays, outside our budget
            if memory_limit is not None:
                self._old_limit = int(self.pool.get_limit())
                self.pool.set_limit(size=int(memory_limit))
            try:
                self._setup(thresholds, memory_limit)
            except BaseException:
                self.close()
                raise

    # -- set-up --------------------------------------------------------------------------------
    def _setup(self, thresholds: Thresholds, memory_limit: int | None) -> None:
        cp, study, d = self.cp, self.study, self.device_id
        props = cp.cuda.runtime.getDeviceProperties(d)
        self.props = props
        names = _MMA_MODE_KERNELS if self.counting == "mma" else _MODE_KERNELS
        self.mode_kernels = names
        optin = int(props.get("sharedMemPerBlockOptin", 48 << 10))

        def fit(config) -> int:
            """Compile for ``config``; the c ln c table in shared memory when it fits beside the kernel's
            own (about 45 scattered lookups per pair: from shared memory, not L1); else read from
            global memory. Returns the kernels' static shared memory."""
            self.k = kernels(d, config)
            static = max(self.k[name].shared_size_bytes for name in names)
            cap = min(MMA_TABLE_SMEM_MAX if self.counting == "mma" else TABLE_SMEM_MAX, optin - static)
            self.n_tab = study.n_samples + 1 if (study.n_samples + 1) * 8 <= cap else 0
            return static

        static = fit(self.config)
        # The tensor-core kernels' float32 pre-screen: a float32 copy of the table and a
        # parking area per warp in dynamic shared memory (the float64 table then stays in global memory).
        # (The parked cells are 16-bit: counts below 2^16, which the table's fit implies today.)
        # Its room: MMA_TABLE_SMEM_MAX per 256 threads of a block (two default blocks share an SM;
        # a block of 512 threads is alone on one). A build with it runs it in every block, so where it
        # does not fit the kernels are compiled without it (boost_mma.cu, gm_screen).
        cap_f32 = min(MMA_TABLE_SMEM_MAX * max(1, self.config.threads // 256), optin - static) \
            if self.counting == "mma" else 0
        self.use_f32 = bool(self.counting == "mma" and self.n_tab and self.config.f32_screen
                            and not self.config.count_only and self._f32_smem() <= cap_f32
                            and study.n_samples < 1 << 16)
        if self.counting == "mma" and self.config.f32_screen and not self.use_f32:
            fit(replace(self.config, f32_screen=False))
        for name in names:
            need = self._dyn_smem(name)
            if need and self.k[name].max_dynamic_shared_size_bytes < need:
                self.k[name].max_dynamic_shared_size_bytes = need
        self.grid_blocks = {name: self._resident_blocks(name) for name in names} if self.counting == "mma" else {}
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.copy_stream = cp.cuda.Stream(non_blocking=True)
        with self.stream:
            self.counts = cp.asarray(np.ascontiguousarray(study.counts.reshape(self.p, 6), dtype=np.int32))
            self.miss = cp.asarray(self.has_missing.astype(np.uint8))
            self.xlx = cp.asarray(xlogx_table(study.n_samples))
            self.thr = cp.asarray(np.concatenate([thresholds.screen, thresholds.summary]).astype(np.float64))
            self._setup_bars()
        assert self.thr.shape == (10,)
        free, _total = cp.cuda.runtime.memGetInfo()
        self.budget = (int(min(free, memory_limit - self._used0)) if memory_limit is not None
                       else int(0.9 * free))
        # Two survivor buffers (88 bytes a survivor) take at most a twentieth of the budget.
        self.capacity = max(MIN_CAPACITY, min(self.capacity, int(0.05 * self.budget) // (2 * 88)))
        chunk = min(self.p, self._chunk_snps())
        resident_bytes = self.p * self.bytes_per_snp + chunk * 3 * 8 * self.n_words
        if resident_bytes <= RESIDENT_FRACTION * self.budget:
            try:
                with self.stream:
                    self.planes = self._alloc_planes(self.p)
            except Exception as exc:
                if not _is_oom(cp, exc):
                    raise
                self.planes = None
                self.backoffs += 1
                self.pool.free_all_blocks()
        if self.planes is None:
            self._start_streaming()
        self.slots = (_Slot(cp), _Slot(cp))
        # Uploads from pageable memory may still be in flight, on this stream or the legacy one.
        cp.cuda.Device(self.device_id).synchronize()
        if self.planes is not None:
            self._uploading = _PlaneUpload(self, self.planes)
        self._last_end = cp.cuda.Event()
        self._last_end.record(self.stream)

    def _setup_bars(self) -> None:
        """The float32 pre-screen's best-partner bars across blocks (boost_mma.cu, gm_pairs22_f32): two
        floats a SNP (its row and its column partials), zeroed (none yet) for a tile's SNPs before the tile runs, so that a bar comes from
        the tile's own pairs and each tile's partial summary is exactly the CPU engine's (a bar from
        another tile could leave a tile's own best partner of a SNP unevaluated)."""
        self.bar = self.cp.zeros(2 * self.p if self.use_f32 else 2, np.float32)  # rows, then columns

    def _f32_smem(self, ring: bool = True) -> int:
        return (-(-self.n_tab * 4 // 16) * 16 + (self.config.threads // 32) * self.config.park_bytes
                + (self.config.ring_bytes if ring else 0))

    def _dyn_smem(self, name: str) -> int:
        """Dynamic shared memory of kernel ``name``: the c ln c table (float64), or with the float32
        pre-screen its float32 copy and the warps' parking areas (and, for <2,2>, the operand ring)."""
        if self.use_f32:
            return self._f32_smem(ring=name == _MMA_MODE_KERNELS[0])
        return self.n_tab * 8

    def _resident_blocks(self, name: str) -> int:
        """Blocks of the persistent tensor-core kernel ``name`` that fit on the device at once."""
        f, props = self.k[name], self.props
        threads = self.config.threads
        warps = threads // 32
        regs_per_warp = -(-max(1, f.num_regs) * 32 // 256) * 256
        by_regs = int(props.get("regsPerMultiprocessor", 65536)) // (regs_per_warp * warps)
        smem = f.shared_size_bytes + self._dyn_smem(name) + 1024
        by_smem = int(props.get("sharedMemPerMultiprocessor", 228 << 10)) // smem
        by_threads = int(props.get("maxThreadsPerMultiProcessor", 2048)) // threads
        per_sm = max(1, min(by_regs, by_smem, by_threads, 32))
        return per_sm * int(props["multiProcessorCount"])

    def _start_streaming(self) -> None:
        """Planes stay on the host: page-lock them (so block uploads are asynchronous DMA) and
        cache uploaded blocks within a share of the budget."""
        cp = self.cp
        self.streaming = True
        if self._host.nbytes:
            try:
                cp.cuda.runtime.hostRegister(self._host.ctypes.data, self._host.nbytes, 0)
                self._registered = True
            except Exception:  # noqa: BLE001 - pageable copies are slower, not wrong
                self._registered = False
        self.cache_budget = int(0.25 * self.budget)

    def _chunk_snps(self) -> int:
        return max(1, UPLOAD_CHUNK_BYTES // max(1, 3 * 8 * self.n_words))

    def _alloc_planes(self, n: int):
        cp = self.cp
        if self.counting == "mma":
            return cp.empty((3, self.n_ks, n, 4), dtype=np.uint64)
        return cp.empty((3, self.n_words, n), dtype=np.uint64)

    def _upload(self, a: int, b: int, out, off: int) -> None:
        """Host planes of SNPs [a, b) into ``out`` (kernel layout) from SNP ``off`` on, on the
        current stream, through SNP-major chunks that are laid out on the device."""
        cp = self.cp
        step = self._chunk_snps()
        for c0 in range(a, b, step):
            c1 = min(b, c0 + step)
            x = cp.empty((c1 - c0, 3, self.n_words), dtype=np.uint64)
            x.set(self._host[c0:c1], stream=cp.cuda.get_current_stream())
            self._lay_out(x, out, off + c0 - a)
            del x

    def _lay_out(self, x, out, o: int) -> None:
        """SNP-major planes ``x`` (on the device) into ``out`` in kernel layout, from SNP ``o`` on
        (current stream)."""
        n = x.shape[0]
        if self.counting == "mma":
            total = n * 3 * self.n_ks * 4
            grid = (-(-total // _LAYOUT_THREADS), 1, 1)
            self.k["gm_layout"](grid, (_LAYOUT_THREADS, 1, 1),
                                (x, np.int32(n), np.int32(self.n_words), np.int32(self.w_ctrl),
                                 np.int32(self.ks0), np.int32(self.n_ks), out, np.int64(out.shape[2]), np.int64(o)))
        else:
            out[:, :, o:o + n] = x.transpose(1, 2, 0)

    def _block(self, a: int, b: int, keep: tuple[int, int] | None = None):
        """Kernel-layout planes of SNPs [a, b) on the device (streaming), from the LRU cache."""
        key = (a, b)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        arr = self._alloc_planes(b - a)
        self._upload(a, b, arr, 0)
        self._cache[key] = arr
        self._cache_bytes += arr.nbytes
        for old in list(self._cache):
            if self._cache_bytes <= self.cache_budget:
                break
            if old in (key, keep):
                continue
            self._cache_bytes -= self._cache.pop(old).nbytes
        return arr

    def _planes_for(self, a: int, b: int, keep: tuple[int, int] | None = None):
        """(planes, stride in SNPs, plane column of SNP a) for SNPs [a, b); work queued on the
        current stream after this call finds them there."""
        if self.planes is not None:
            if self._uploading is not None and self._uploading.wait(a, b):
                self._uploading.close(sync=False)  # done: the current stream already waits for every chunk
                self._uploading = None
            return self.planes, self.p, a
        return self._block(a, b, keep), b - a, 0

    # -- memory budget ------------------------------------------------------------------------
    def max_tile_edge(self) -> int:
        """Largest tile edge whose buffers (and, streaming, blocks) fit the device's budget."""
        per_e2 = 2 * 20 * (1.0 / self.block_rows + 1.0 / self.block_cols)  # two slots of partials
        with self.cp.cuda.Device(self.device_id):
            used = int(self.pool.used_bytes()) - self._used0
        avail = min(self._free_bytes(), self.budget - used)
        if not self.streaming:
            return max(MIN_EDGE, int(math.sqrt(max(0.0, 0.25 * avail) / per_e2)))
        # Streaming: up to four blocks held by the two slots, one upload chunk, the partials.
        per_e = 4 * self.bytes_per_snp + 3 * 8 * self.n_words + 2 * 40
        room = 0.8 * avail - 2 * 88 * self.capacity
        if room <= 0:
            return MIN_EDGE
        edge = (-per_e + math.sqrt(per_e * per_e + 4 * per_e2 * room)) / (2 * per_e2)
        return max(MIN_EDGE, int(edge))

    def _free_bytes(self) -> int:
        with self.cp.cuda.Device(self.device_id):
            return int(self.cp.cuda.runtime.memGetInfo()[0])

    def back_off(self, exc: BaseException, tile: Tile) -> None:
        """After a device out-of-memory error: halve the tile edge and the survivor buffer,
        drop every tile-sized buffer and cached block, free the pool. Work in flight is
        abandoned (``epoch``) and screened again."""
        cp = self.cp
        cur = self.max_edge or max(tile.i1 - tile.i0, tile.j1 - tile.j0)
        if cur <= MIN_EDGE and self.capacity <= MIN_CAPACITY:
            raise MemoryError(
                f"GPU {self.device_id} ({_device_name(cp, self.device_id)}): out of device memory even for tiles "
                f"of {cur} SNPs (tile {tile.index}); free device memory or use --device cpu") from exc
        self.backoffs += 1
        self.epoch += 1
        self.max_edge = max(MIN_EDGE, cur // 2)
        self.capacity = max(MIN_CAPACITY, self.capacity // 2)
        with cp.cuda.Device(self.device_id):
            try:
                self.stream.synchronize()
            finally:
                for slot in self.slots:
                    slot.release()
                self._cache.clear()
                self._cache_bytes = 0
                if self.streaming:
                    self.cache_budget = max(0, self.cache_budget // 2)
                self.pool.free_all_blocks()
                cp.get_default_pinned_memory_pool().free_all_blocks()

    # -- one tile ------------------------------------------------------------------------------
    def _modes(self, tile: Tile) -> list[int]:
        """Counting modes (2 * rows-have-missing + columns-have-missing) of the tile's blocks."""

        def flags(start: int, n: int, b: int) -> set[bool]:
            m = self.has_missing[start:start + n]
            return set((np.add.reduceat(m, np.arange(0, n, b)) > 0).tolist()) if n else {False}

        rows = flags(tile.i0, tile.i1 - tile.i0, self.block_rows)
        cols = flags(tile.j0, tile.j1 - tile.j0, self.block_cols)
        return sorted({2 * int(a) + int(b) for a in rows for b in cols})

    def submit(self, tile: Tile, slot: _Slot) -> _Pending:
        """Queue the tile's uploads (streaming), kernels and result copies; returns at once."""
        cp = self.cp
        self.where = tile
        ni, nj = tile.i1 - tile.i0, tile.j1 - tile.j0
        with cp.cuda.Device(self.device_id), self.stream:
            slot.refs = None
            rows = self._planes_for(tile.i0, tile.i1)
            cols = self._planes_for(tile.j0, tile.j1, keep=(tile.i0, tile.i1))
            slot.ensure(ni, nj, self.block_rows, self.block_cols, self.capacity)
            slot.refs = (rows[0], cols[0])  # the blocks stay alive while the tile is in flight
            nbx, nby = -(-nj // self.block_cols), -(-ni // self.block_rows)
            rp, cpart = slot.part["r"], slot.part["c"]
            slot.t0.record(self.stream)
            slot.surv_n.fill(0)
            if self.use_f32:  # bars from this tile's blocks only: each tile's summary stays its own, exact
                self.bar[tile.i0:tile.i1] = 0
                self.bar[self.p + tile.j0:self.p + tile.j1] = 0
            for k, mode in enumerate(self._modes(tile)):
                self._launch(mode, k == 0, tile, slot, rows, cols, nbx, nby)
            for side, n, nb, part in (("r", ni, nbx, rp), ("c", nj, nby, cpart)):
                out = getattr(slot, f"out_{side}")
                rgrid, rblock = _reduce_geometry(n)
                self.k["gb_reduce_partials"](rgrid, rblock, (np.int32(n), np.int32(nb), *part, *out))
            # A new event a tile: the next tile's collect reads this one (idle gap) after the slot is re-used.
            slot.t1 = cp.cuda.Event()
            slot.t1.record(self.stream)
            slot.surv_n.get(stream=self.stream, out=slot.h_n, blocking=False)
            for side, n in (("r", ni), ("c", nj)):
                for dev, host in zip(getattr(slot, f"out_{side}"), getattr(slot, f"host_{side}")):
                    dev[:n].get(stream=self.stream, out=host[:n], blocking=False)
            slot.done.record(self.stream)
        return _Pending(tile, slot, self.epoch)

    def _launch(self, mode: int, first: bool, tile: Tile, slot: _Slot, rows, cols, nbx: int, nby: int) -> None:
        (pr, sr, orr), (pc, sc, oc) = rows, cols
        ni, nj = tile.i1 - tile.i0, tile.j1 - tile.j0
        head = (pr, np.int32(sr), np.int32(orr), pc, np.int32(sc), np.int32(oc), self.counts, self.miss, self.xlx,
                self.thr)
        if self.counting == "mma":
            shape = (np.int32(self.n_ks), np.int32(self.ks0))
        else:
            shape = (np.int32(self.n_words), np.int32(self.w_ctrl))
        args = (*head, *shape, np.int32(tile.i0), np.int32(ni), np.int32(tile.j0), np.int32(nj),
                np.int32(tile.diagonal), np.int32(first), np.int32(self.n_tab), slot.surv_n, np.int32(slot.cap),
                slot.surv_ij, slot.surv_ksa, slot.surv_tab, *slot.part["r"], *slot.part["c"])
        name = self.mode_kernels[mode]
        if self.counting == "mma":
            half = self.bar.size // 2
            args = (*args, self.bar[:half], self.bar[half:])
            # While planes still go up, one SM is left to the upload's layout kernels: a persistent
            # kernel holds every SM for its whole tile, and a chunk's layout would wait for the
            # tile's end (the first tiles then wait for their chunks; measured, docs/PERFORMANCE.md).
            blocks = self.grid_blocks[name]
            if self._uploading is not None and blocks > 1:
                blocks -= max(1, blocks // int(self.props["multiProcessorCount"]))
            grid = (max(1, min(nbx * nby, blocks)), 1, 1)
            self.k[name](grid, (self.config.threads, 1, 1), args, shared_mem=self._dyn_smem(name))
        else:
            self.k[name]((nbx, nby, 1), (self.config.threads, 1, 1), (*args, np.int32(1)), shared_mem=self.n_tab * 8)

    def collect(self, pend: _Pending) -> TileResult:
        """Wait for a submitted tile; re-screen it with a larger buffer if survivors overflowed."""
        cp, slot, tile = self.cp, pend.slot, pend.tile
        self.where = tile
        slot.done.synchronize()
        n = int(slot.h_n[0])
        while n > slot.cap:
            with cp.cuda.Device(self.device_id), self.stream:
                slot.grow(n)
            self.submit(tile, slot)
            slot.done.synchronize()
            n = int(slot.h_n[0])
        self.kernel_seconds += cp.cuda.get_elapsed_time(slot.t0, slot.t1) / 1000.0
        if self._last_end is not None:
            # Tiles are collected in the order they were queued on the one stream, so this is the gap before this tile.
            gap = max(0.0, cp.cuda.get_elapsed_time(self._last_end, slot.t0) / 1000.0)
            self.idle_gaps.append((tile.index, gap))
        self._last_end = slot.t1
        ni, nj = tile.i1 - tile.i0, tile.j1 - tile.j0
        with cp.cuda.Device(self.device_id):
            ij = slot.surv_ij[:n].get(stream=self.copy_stream)
            ksa = slot.surv_ksa[:n].get(stream=self.copy_stream)
            tab = slot.surv_tab[:n].get(stream=self.copy_stream)
        slot.refs = None
        order = np.lexsort((ij[:, 1], ij[:, 0]))
        rows = _partial(tile.i0, ni, slot.host_r)
        cols = _partial(tile.j0, nj, slot.host_c)
        return TileResult(tile, ij[order, 0].astype(np.int64), ij[order, 1].astype(np.int64), ksa[order],
                          tab[order].astype(np.int64).reshape(n, 3, 3, 2), int(rows.n_tot.sum()), rows, cols)

    # -- with the memory policy ---------------------------------------------------------------
    def try_submit(self, tile: Tile, slot: _Slot) -> _Pending:
        """submit(), or a pending entry to be screened synchronously after an out-of-memory back-off."""
        if self.max_edge is not None:
            return _Pending(tile, None, self.epoch)
        try:
            return self.submit(tile, slot)
        except Exception as exc:
            if not _is_oom(self.cp, exc):
                raise
            self.back_off(exc, tile)
            return _Pending(tile, None, self.epoch)

    def finish(self, pend: _Pending) -> TileResult:
        """The result of a pending tile, screening it again (in sub-tiles) where memory ran out."""
        if pend.slot is None or pend.epoch != self.epoch:
            return self.run_sync(pend.tile)
        try:
            return self.collect(pend)
        except Exception as exc:
            if not _is_oom(self.cp, exc):
                raise
            self.back_off(exc, pend.tile)
            return self.run_sync(pend.tile)

    def run_sync(self, tile: Tile) -> TileResult:
        """Screen one tile now, in sub-tiles of at most ``max_edge`` SNPs, backing off further on
        out-of-memory errors."""
        while True:
            try:
                return self._run_split(tile)
            except Exception as exc:
                if not _is_oom(self.cp, exc):
                    raise
                self.back_off(exc, tile)

    def _run_split(self, tile: Tile) -> TileResult:
        e = self.max_edge
        slot = self.slots[0]
        if e is None or (tile.i1 - tile.i0 <= e and tile.j1 - tile.j0 <= e):
            return self.collect(self.submit(tile, slot))
        parts = []
        for a in range(tile.i0, tile.i1, e):
            for b in range(tile.j0, tile.j1, e):
                sub = Tile(tile.index, a, min(a + e, tile.i1), b, min(b + e, tile.j1))
                if sub.n_pairs:
                    parts.append(self.collect(self.submit(sub, slot)))
        self.where = tile
        return merge_tile_results(tile, parts)

    def fault(self, exc: BaseException) -> RuntimeError:
        """The error a CUDA failure in a tile is reported as."""
        t = self.where
        where = (f"tile {t.index} (row SNPs {t.i0}-{t.i1 - 1} x column SNPs {t.j0}-{t.j1 - 1})"
                 if t is not None else "a tile")
        try:
            name = _device_name(self.cp, self.device_id)
        except Exception:  # noqa: BLE001 - the device may be gone
            name = "?"
        return RuntimeError(
            f"GPU {self.device_id} ({name}): CUDA error in {where}: {type(exc).__name__}: {exc}. The tiles "
            f"finished before it are checkpointed: run the scan again with --resume (or with --device cpu).")

    def close(self) -> None:
        """Release this device's memory and restore its pool limit; never raises (it also runs
        after a CUDA error, when the context may be unusable)."""
        cp = self.cp
        try:
            with cp.cuda.Device(self.device_id):
                if hasattr(self, "stream"):
                    self.stream.synchronize()
        except Exception:  # noqa: BLE001
            pass
        if self._uploading is not None:
            self._uploading.close()
            self._uploading = None
        self.planes = None
        self.bar = None
        self._cache.clear()
        for slot in self.slots:
            slot.release()
        if self._registered:
            try:
                cp.cuda.runtime.hostUnregister(self._host.ctypes.data)
            except Exception:  # noqa: BLE001
                pass
            self._registered = False
        try:
            with cp.cuda.Device(self.device_id):
                if self._old_limit is not None:
                    self.pool.set_limit(size=self._old_limit)
                    self._old_limit = None
        except Exception:  # noqa: BLE001
            pass


class _PlaneUpload:
    """Resident planes going up chunk by chunk, in SNP order, on a host thread and a stream of their
    own, while the first tiles run (a pageable copy holds its calling thread until it is staged, so
    the copies must not sit on the thread that queues the tiles).

    :meth:`wait` (on the tile-queuing thread) makes the current stream wait for the chunks that hold
    SNPs [a, b); a chunk the stream has waited for once needs no second wait (later work on that
    stream is ordered after it). Tiles go row block by row block, and the first needs only its own
    columns' chunks, so the upload stays ahead of the tiles.
    """

    def __init__(self, runner: "_DeviceRunner", planes):
        cp = runner.cp
        self.cp = cp
        step = max(1, PRELOAD_CHUNK_BYTES // max(1, 3 * 8 * runner.n_words))
        self.starts = list(range(0, runner.p, step))
        self.step = step
        self.ready = [threading.Event() for _ in self.starts]
        self.events = [cp.cuda.Event(disable_timing=True) for _ in self.starts]
        self.waited = [False] * len(self.starts)
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._runner, self._planes = runner, planes
        self._stream = cp.cuda.Stream(non_blocking=True)
        self._thread = threading.Thread(target=self._run, name=f"gboost-upload{runner.device_id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        r, cp = self._runner, self.cp
        try:
            with cp.cuda.Device(r.device_id), self._stream:
                # Two page-locked staging buffers: the host fills one while the other is copied up.
                shape = (self.step, 3, r.n_words)
                stage = [np.frombuffer(cp.cuda.alloc_pinned_memory(max(1, int(np.prod(shape))) * 8), np.uint64,
                                       int(np.prod(shape))).reshape(shape) for _ in range(2)]
                sent = [cp.cuda.Event(disable_timing=True) for _ in range(2)]
                for k, a in enumerate(self.starts):
                    if self._stop.is_set():  # closed mid-way: the chunks not sent must not pass for sent
                        self.error = RuntimeError("the upload was stopped (engine closed)")
                        break
                    self._send(k, a, min(r.p, a + self.step), stage[k % 2], sent[k % 2])
                    self.ready[k].set()
                self._stream.synchronize()  # the staging buffers outlive their last copies
        except BaseException as exc:  # noqa: BLE001 - raised where a tile waits for the chunk
            self.error = exc
            try:
                self._stream.synchronize()  # no copy may still read a staging buffer when it is freed
            except Exception:  # noqa: BLE001 - after a CUDA error the context may be unusable
                pass
        finally:
            for ev in self.ready:  # no waiter may hang on a chunk that will never come
                ev.set()

    def _send(self, k: int, a: int, b: int, buf: np.ndarray, sent) -> None:
        """Chunk ``k`` (SNPs [a, b)) through staging buffer ``buf``, whose last copy ``sent`` marks."""
        r, cp = self._runner, self.cp
        sent.synchronize()  # the copy that last read this buffer is done
        n = b - a
        np.copyto(buf[:n], r._host[a:b])
        x = cp.empty((n, 3, r.n_words), dtype=np.uint64)
        x.set(buf[:n], stream=self._stream)  # page-locked source: an asynchronous DMA
        sent.record(self._stream)
        r._lay_out(x, self._planes, a)
        self.events[k].record(self._stream)

    def wait(self, a: int, b: int) -> bool:
        """Order the current stream after the chunks holding SNPs [a, b); True once the stream has
        waited for every chunk (the upload is then of no further concern)."""
        stream = self.cp.cuda.get_current_stream()
        for k in range(a // self.step, -(-b // self.step)):
            if self.waited[k]:
                continue
            self.ready[k].wait()
            if self.error is not None:
                # Not an out-of-memory error even where it was one: the tile's back-off cannot help.
                raise RuntimeError(f"uploading the genotype planes failed: {type(self.error).__name__}: "
                                   f"{self.error}") from self.error
            stream.wait_event(self.events[k])
            self.waited[k] = True
        return all(self.waited)

    def close(self, *, sync: bool = True) -> None:
        """Stop after the chunk in hand; with ``sync`` also wait for the copies already queued
        (before the planes may be freed)."""
        self._stop.set()
        self._thread.join()
        if sync:
            try:
                self._stream.synchronize()
            except Exception:  # noqa: BLE001 - after a CUDA error the context may be unusable
                pass


def _partial(start: int, n: int, host) -> SummaryPartial:
    sig, tot, best, partner = host
    return SummaryPartial(start, sig[:n].astype(np.int64), tot[:n].astype(np.int64), best[:n].copy(),
                          partner[:n].astype(np.int64))


def merge_tile_results(tile: Tile, parts: list[TileResult]) -> TileResult:
    """One tile's result from those of sub-tiles that cover its pairs (each pair in one sub-tile)."""
    rows = SummaryPartial.empty(tile.i0, tile.i1 - tile.i0)
    cols = SummaryPartial.empty(tile.j0, tile.j1 - tile.j0)
    for res in parts:  # PLINK's partner rule, once (gboost/tiles.py)
        rows.merge_partial(res.rows)
        cols.merge_partial(res.cols)
    if parts:
        i = np.concatenate([r.surv_i for r in parts])
        j = np.concatenate([r.surv_j for r in parts])
        ksa = np.concatenate([r.surv_ksa for r in parts])
        tab = np.concatenate([r.surv_tables for r in parts])
    else:
        i = j = np.zeros(0, np.int64)
        ksa, tab = np.zeros(0), np.zeros((0, 3, 3, 2), np.int64)
    order = np.lexsort((j, i))
    return TileResult(tile, i[order], j[order], ksa[order], tab[order], sum(r.n_valid for r in parts), rows, cols)


_DONE = object()


class GpuEngine(Engine):
    """Screens tiles on one or more NVIDIA GPUs through CuPy.

    Parameters
    ----------
    gpus
        Device indices to use; ``None`` means every visible GPU.
    tile
        Tile edge in SNPs; ``None`` sizes tiles so that one launch takes about
        :data:`LAUNCH_TARGET_S`, every GPU gets several tiles and the buffers fit.
    survivor_capacity
        Initial survivors per tile the device buffer holds (it grows on overflow).
    config
        Compile-time parameters of the CUDA-core kernels.
    counting
        ``"mma"`` (binary tensor cores, compute capability 8.0+), ``"popc"`` (CUDA cores) or
        ``"auto"`` (tensor cores where the device has them); ``None`` reads the environment
        variable ``GBOOST_GPU_COUNTING`` (default ``"auto"``).
    mma_config
        Compile-time parameters of the tensor-core kernels.
    memory_limit_bytes
        Device memory the engine may take on each GPU (CuPy's pool is capped at it while the
        engine is prepared); ``None``: the free memory.
    """

    name = "gpu"
    overlaps_host_work = True  # its host threads only drive CuPy: finalize's host work runs beside the screen

    def __init__(self, gpus: list[int] | None = None, tile: int | None = None, *,
                 survivor_capacity: int = DEFAULT_SURVIVOR_CAPACITY, config: KernelConfig | None = None,
                 counting: str | None = None, mma_config: MmaConfig | None = None,
                 memory_limit_bytes: int | None = None):
        if tile is not None and tile < 1:
            raise ValueError(f"tile must be >= 1 SNP, got {tile}")
        if survivor_capacity < 1:
            raise ValueError(f"survivor_capacity must be >= 1, got {survivor_capacity}")
        if counting is None:
            counting = os.environ.get(COUNTING_ENV, "").strip().lower() or "auto"
        if counting not in COUNTINGS:
            raise ValueError(f"counting must be one of {', '.join(COUNTINGS)}, got {counting!r}")
        if memory_limit_bytes is not None and memory_limit_bytes < 1:
            raise ValueError(f"memory_limit_bytes must be positive, got {memory_limit_bytes}")
        self._gpus = None if gpus is None else [int(g) for g in gpus]
        self._tile = tile
        self.survivor_capacity = int(survivor_capacity)
        self.config = config or KernelConfig()
        self.mma_config = mma_config or MmaConfig()
        self.counting = counting
        self.memory_limit_bytes = None if memory_limit_bytes is None else int(memory_limit_bytes)
        self.study: Study | None = None
        self._runners: list[_DeviceRunner] = []
        self._describe: str | None = None
        self._choice: dict[int, tuple[str, str | None]] = {}
        self._kernel_s = 0.0
        self._idle_gaps: list = []
        self._backoffs = 0
        self._streaming: bool | None = None
        self._active: list = []  # (stop event, worker threads) of run_tiles iterators still running
        self._table_smem: bool | None = None

    # -- devices -------------------------------------------------------------------------------
    def device_ids(self) -> list[int]:
        cp = _cupy()
        n = cp.cuda.runtime.getDeviceCount()
        if self._gpus is None:
            if n == 0:
                raise RuntimeError("no CUDA device is visible")
            return list(range(n))
        bad = [g for g in self._gpus if not 0 <= g < n]
        if bad or not self._gpus:
            raise ValueError(f"--gpus {self._gpus}: {n} CUDA device(s) visible (indices 0..{n - 1})")
        return list(dict.fromkeys(self._gpus))

    def counting_for(self, device_id: int) -> tuple[str, str | None]:
        """(``"mma"`` or ``"popc"``, why the tensor cores are not used or None) on ``device_id``."""
        got = self._choice.get(device_id)
        if got is not None:
            return got
        cp = _cupy()
        cc = _compute_capability(cp, device_id)
        if self.counting == "popc":
            got = ("popc", "counting='popc' asked for")
        elif cc < 80:
            if self.counting == "mma":
                raise RuntimeError(f"GPU {device_id} ({_device_name(cp, device_id)}): counting='mma' needs compute "
                                   f"capability 8.0 or newer (binary mma), this device has {cc // 10}.{cc % 10}")
            got = ("popc", f"compute capability {cc // 10}.{cc % 10} has no binary mma")
        elif self.counting == "auto":
            try:
                kernels(device_id, self.mma_config)
                got = ("mma", None)
            except Exception as exc:  # noqa: BLE001 - an NVRTC or driver failure: the CUDA cores still work
                got = ("popc", f"the tensor-core kernels did not build ({type(exc).__name__}: {exc})")
        else:
            got = ("mma", None)
        self._choice[device_id] = got
        return got

    def _config_for(self, counting: str) -> KernelConfig | MmaConfig:
        return self.mma_config if counting == "mma" else self.config

    def describe(self) -> str:
        if self._describe is None:
            cp = _cupy()
            ids = self.device_ids()
            names = [_device_name(cp, d) for d in ids]
            head = names[0] if len(set(names)) == 1 else ", ".join(names)
            if len(ids) > 1 and len(set(names)) == 1:
                head = f"{len(ids)} x {head}"
            ways = [self.counting_for(d) for d in ids]
            kinds = sorted({w for w, _ in ways})
            how = " + ".join("tensor-core b1 mma" if w == "mma" else "CUDA-core popcount" for w in kinds)
            why = next((y for w, y in ways if w == "popc" and y and self.counting == "auto"), None)
            tail = f"; {why}" if why else ""
            self._describe = f"{head} (GPU {','.join(map(str, ids))}; CuPy {cp.__version__}; {how} counting{tail})"
        return self._describe

    def probe(self) -> None:
        """Check that every selected GPU can run the engine: build its kernels and run one.

        Raises RuntimeError naming the device and the cause (no usable device, an NVRTC or
        driver failure); :func:`gboost.engines.make_engine` then falls back to the CPU.
        """
        cp = _cupy()
        for d in self.device_ids():
            try:
                counting, _ = self.counting_for(d)
                k = kernels(d, self._config_for(counting))
                with cp.cuda.Device(d):
                    ints = [cp.zeros(1, dtype=np.int32) for _ in range(6)]
                    dbl = [cp.zeros(1, dtype=np.float64) for _ in range(2)]
                    args = (np.int32(1), np.int32(0), ints[0], ints[1], dbl[0], ints[2], ints[3], ints[4], dbl[1],
                            ints[5])
                    k["gb_reduce_partials"]((1, 1, 1), (32, 1, 1), args)
                    cp.cuda.Device(d).synchronize()
                    if int(ints[5].get()[0]) != -1:
                        raise RuntimeError("a test kernel gave a wrong result")
            except Exception as exc:
                raise RuntimeError(f"GPU {d}: {type(exc).__name__}: {exc}") from exc

    # -- Engine interface ----------------------------------------------------------------------
    def prepare(self, study: Study, thresholds: Thresholds) -> None:
        self.close()
        self.study = study
        self._kernel_s = 0.0
        self._idle_gaps: list = []
        self._backoffs = 0
        runners = []
        try:
            for d in self.device_ids():
                counting, _ = self.counting_for(d)
                runners.append(_DeviceRunner(d, study, thresholds, counting, self._config_for(counting),
                                             self.survivor_capacity, self.memory_limit_bytes))
        except BaseException:
            for r in runners:
                r.close()
            raise
        self._runners = runners

    def tile_snps(self) -> int:
        if self._tile:
            return self._tile
        s = self.study
        p = max(1, s.n_snps)
        cp = _cupy()
        sms = min(cp.cuda.runtime.getDeviceProperties(r.device_id)["multiProcessorCount"] for r in self._runners)
        cells = 9 if s.has_missing.any() else 4
        if all(r.counting == "mma" for r in self._runners):
            # Tensor cores: the counting is cheap; the per-pair epilogue (about 8 SM-cycles with 4
            # cells and the per-SNP terms, twice that with 9) sets the pace.
            pairs_per_s = sms * 1.8e9 / (8 if cells == 4 else 16)
        else:
            # Measured on an H100 (docs/PERFORMANCE.md): about 7 table cells x 64-bit words per SM and
            # cycle, in both counting modes; count 8 at 1.8 GHz.
            pairs_per_s = sms * 8 * 1.8e9 / (max(1, s.layout.n_words) * cells)
        edge = int(math.sqrt(pairs_per_s * LAUNCH_TARGET_S))
        ngpu = len(self._runners)
        if ngpu > 1:  # enough tiles that the shared queue keeps every GPU busy to the end
            k = math.ceil(math.sqrt(8 * ngpu))
            edge = min(edge, -(-p // k))
        edge = min([edge] + [r.max_tile_edge() for r in self._runners])
        step = max(max(r.block_rows, r.block_cols) for r in self._runners)
        edge = max(step, edge // step * step) if edge >= step else max(MIN_EDGE, edge)
        return min(edge, -(-p // step) * step)

    def run_tile(self, tile: Tile) -> TileResult:
        runner = self._runner0()
        cp = _cupy()
        try:
            return runner.finish(runner.try_submit(tile, runner.slots[0]))
        except Exception as exc:
            if _is_cuda_error(cp, exc) and not _is_oom(cp, exc):
                raise runner.fault(exc) from exc
            raise

    def run_tiles(self, tiles: Iterable[Tile], cancel: Callable[[], bool] | None = None) -> Iterator[TileResult]:
        """Screen ``tiles`` on every prepared GPU; yield results in completion order.

        One host thread per GPU takes tiles from a shared queue and keeps two in flight. Workers
        stop taking tiles once ``cancel()`` is true, or when the iterator is closed or the engine
        closed; tiles already in flight finish and are dropped. A CUDA error stops every worker
        and is raised here as a RuntimeError naming the device and the tile.
        """
        runners = list(self._runners)
        if not runners:
            raise RuntimeError("GpuEngine.run_tiles before prepare()")
        cp = _cupy()
        work: queue.SimpleQueue = queue.SimpleQueue()
        for t in tiles:
            work.put(t)
        out: queue.SimpleQueue = queue.SimpleQueue()
        stop = threading.Event()

        def next_tile() -> Tile | None:
            if stop.is_set() or (cancel is not None and cancel()):
                stop.set()
                return None
            try:
                return work.get_nowait()
            except queue.Empty:
                return None

        def worker(runner: _DeviceRunner) -> None:
            try:
                pending, k = None, 0
                while True:
                    tile = next_tile()
                    nxt = runner.try_submit(tile, runner.slots[k]) if tile is not None else None
                    if pending is not None:
                        res = runner.finish(pending)
                        if not stop.is_set():
                            out.put(res)
                    if nxt is None:
                        break
                    pending, k = nxt, k ^ 1
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
                stop.set()
                if isinstance(exc, Exception) and _is_cuda_error(cp, exc) and not _is_oom(cp, exc):
                    err = runner.fault(exc)
                    err.__cause__ = exc
                    exc = err
                out.put(exc)
            finally:
                out.put(_DONE)

        threads = [threading.Thread(target=worker, args=(r,), name=f"gboost-gpu{r.device_id}", daemon=True)
                   for r in runners]
        self._active.append((stop, threads))
        for t in threads:
            t.start()
        try:
            finished = 0
            while finished < len(threads):
                item = out.get()
                if item is _DONE:
                    finished += 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:
            stop.set()
            for t in threads:
                t.join()
            self._active.remove((stop, threads))

    @property
    def table_in_shared_memory(self) -> bool | None:
        """Whether the kernels read the c ln c table from shared memory (None before prepare)."""
        return bool(self._runners[0].n_tab) if self._runners else self._table_smem

    @property
    def kernel_seconds(self) -> float:
        """Device time of the screen and reduce kernels since prepare (CUDA events), summed over GPUs."""
        return self._kernel_s + sum(r.kernel_seconds for r in self._runners)

    @property
    def idle_seconds(self) -> float:
        """Device time between set-up and the first tile and between tiles (waiting for plane chunks
        or for the host), summed over GPUs; the bench prints it beside kernel_seconds."""
        return sum(gap for _, gap in self.idle_gaps)

    @property
    def idle_gaps(self) -> list[tuple[int, float]]:
        """(tile index, seconds) of each idle gap in :attr:`idle_seconds`."""
        return self._idle_gaps + [g for r in self._runners for g in r.idle_gaps]

    @property
    def streaming(self) -> bool | None:
        """Whether the planes are streamed through the device rather than resident (None before prepare)."""
        return any(r.streaming for r in self._runners) if self._runners else self._streaming

    @property
    def backoffs(self) -> int:
        """Out-of-memory back-offs since prepare, summed over GPUs."""
        return self._backoffs + sum(r.backoffs for r in self._runners)

    @property
    def countings(self) -> list[str]:
        """The counting path of each prepared GPU (``"mma"`` or ``"popc"``)."""
        return [r.counting for r in self._runners]

    def close(self) -> None:
        for stop, threads in list(self._active):  # a run_tiles iterator abandoned mid-way
            stop.set()
            for t in threads:
                t.join()
        if not self._runners:
            return
        cp = _cupy()
        ids = [r.device_id for r in self._runners]
        self._table_smem = bool(self._runners[0].n_tab)
        self._streaming = any(r.streaming for r in self._runners)
        for r in self._runners:
            r.close()
            self._kernel_s += r.kernel_seconds
            self._idle_gaps += r.idle_gaps
            self._backoffs += r.backoffs
        self._runners = []
        for d in ids:
            try:
                with cp.cuda.Device(d):
                    cp.get_default_memory_pool().free_all_blocks()
                    cp.get_default_pinned_memory_pool().free_all_blocks()
            except Exception:  # noqa: BLE001 - after a CUDA error the context may be unusable
                pass

    def _runner0(self) -> _DeviceRunner:
        if not self._runners:
            raise RuntimeError("GpuEngine.run_tile before prepare()")
        return self._runners[0]
