"""GPU engine: the GBOOST kernel through CuPy, tiles of the pair triangle screened on the device.

The study's bit planes go to every GPU once, in the type-major SNP-fastest layout (SPEC §3). A
tile is screened by one launch per counting mode present in it (``kernels/boost_screen.cu``):
tables by AND + popcount, PLINK's DF, KSA from a ``c ln c`` table, survivors appended to a bounded
buffer, and per-SNP partial summaries over the non-surviving pairs reduced on the device. Only the
survivors (with their tables) and the per-SNP partials come back to the host. A survivor buffer
that overflows is grown and the tile screened again, so no pair is ever dropped.

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
import queue
import threading
from dataclasses import dataclass
from importlib import resources
from typing import Callable, Iterable, Iterator

import numpy as np

from gboost.engines.base import Engine, SummaryPartial, Thresholds, Tile, TileResult
from gboost.stats.fastksa import xlogx_table
from gboost.study import Study

KERNEL_FILE = "boost_screen.cu"
# Aim for launches of about this long, so that a GPU that also drives a display stays usable.
LAUNCH_TARGET_S = 0.05
DEFAULT_SURVIVOR_CAPACITY = 1 << 16
# Largest c ln c table staged in shared memory (8 bytes per entry, n_samples + 1 entries): 64 KiB
# keeps two blocks per SM beside their 32-44 KiB of plane and reduction buffers.
TABLE_SMEM_MAX = 64 << 10
_MODE_KERNELS = ("gb_screen_22", "gb_screen_23", "gb_screen_32", "gb_screen_33")
_REDUCE_THREADS = 256


def _cupy():
    import cupy  # noqa: PLC0415 - lazily, so that gboost never needs CuPy to import

    return cupy


def kernel_source() -> str:
    """The CUDA source of the screen kernels (package data)."""
    return (resources.files("gboost.engines") / "kernels" / KERNEL_FILE).read_text(encoding="utf-8")


@dataclass(frozen=True)
class KernelConfig:
    """Compile-time parameters of the screen kernels; one compiled module per device and config.

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


_KERNELS: dict[tuple[int, KernelConfig], dict] = {}
_KERNELS_LOCK = threading.Lock()


def kernels(device_id: int, config: KernelConfig) -> dict:
    """The compiled kernels for ``device_id`` and ``config``, compiled (NVRTC) on first use only."""
    key = (device_id, config)
    with _KERNELS_LOCK:
        got = _KERNELS.get(key)
        if got is None:
            cp = _cupy()
            with cp.cuda.Device(device_id):
                module = cp.RawModule(code=kernel_source(), options=config.options())
                names = (*_MODE_KERNELS, "gb_reduce_partials", "gb_popc_ceiling")
                got = {name: module.get_function(name) for name in names}
            _KERNELS[key] = got
    return got


def launch_geometry(ni: int, nj: int, config: KernelConfig) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Grid and block of a screen launch over ``ni`` row SNPs x ``nj`` column SNPs."""
    return (-(-nj // config.block_cols), -(-ni // config.block_rows), 1), (config.threads, 1, 1)


def _reduce_geometry(n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    return (max(1, -(-n // _REDUCE_THREADS)), 1, 1), (_REDUCE_THREADS, 1, 1)


def _device_name(cp, device_id: int) -> str:
    name = cp.cuda.runtime.getDeviceProperties(device_id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


class _Slot:
    """Device and pinned host buffers of one tile in flight."""

    def __init__(self, cp, capacity: int):
        self.cp = cp
        self.edge_i = self.edge_j = 0
        self.cap = 0
        self.surv_n = cp.zeros(1, dtype=np.uint32)
        self.h_n = self._pinned(1, np.uint32)
        self.done = cp.cuda.Event()
        self.t0 = cp.cuda.Event()
        self.t1 = cp.cuda.Event()
        self._survivors(capacity)

    def _pinned(self, n: int, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        mem = self.cp.cuda.alloc_pinned_memory(max(1, n) * dtype.itemsize)
        return np.frombuffer(mem, dtype, max(1, n))

    def _survivors(self, capacity: int) -> None:
        cp = self.cp
        self.cap = int(capacity)
        self.surv_ij = cp.empty((self.cap, 2), dtype=np.int32)
        self.surv_ksa = cp.empty(self.cap, dtype=np.float64)
        self.surv_tab = cp.empty((self.cap, 18), dtype=np.int32)

    def grow(self, needed: int) -> None:
        self._survivors(max(2 * self.cap, needed + needed // 4 + 1024))

    def ensure(self, ni: int, nj: int, config: KernelConfig) -> None:
        """Size the partial-summary buffers for a tile of ``ni`` x ``nj`` SNPs."""
        if ni <= self.edge_i and nj <= self.edge_j:
            return
        cp = self.cp
        ni, nj = max(ni, self.edge_i), max(nj, self.edge_j)
        nbx, nby = -(-nj // config.block_cols), -(-ni // config.block_rows)
        self.part = {}
        for side, n, nb in (("r", ni, nbx), ("c", nj, nby)):
            self.part[side] = (cp.empty(nb * n, dtype=np.int32), cp.empty(nb * n, dtype=np.int32),
                               cp.empty(nb * n, dtype=np.float64), cp.empty(nb * n, dtype=np.int32))
            out = (cp.empty(n, dtype=np.int32), cp.empty(n, dtype=np.int32), cp.empty(n, dtype=np.float64),
                   cp.empty(n, dtype=np.int32))
            host = tuple(self._pinned(n, a.dtype) for a in out)
            setattr(self, f"out_{side}", out)
            setattr(self, f"host_{side}", host)
        self.edge_i, self.edge_j = ni, nj


@dataclass
class _Pending:
    tile: Tile
    slot: _Slot


class _DeviceRunner:
    """One GPU: the study's arrays on it, its kernels, a stream and two slots."""

    def __init__(self, device_id: int, study: Study, thresholds: Thresholds, config: KernelConfig, capacity: int):
        cp = _cupy()
        self.cp = cp
        self.device_id = device_id
        self.config = config
        self.study = study
        self.p = study.n_snps
        self.n_words = study.layout.n_words
        self.w_ctrl = study.layout.w_ctrl
        self.has_missing = np.asarray(study.has_missing, dtype=bool)
        self.kernel_seconds = 0.0
        host_planes = np.ascontiguousarray(study.planes, dtype=np.uint64)
        assert host_planes.shape == (self.p, 3, self.n_words)
        with cp.cuda.Device(device_id):
            free, _total = cp.cuda.runtime.memGetInfo()
            if 2 * host_planes.nbytes > 0.8 * free:
                raise MemoryError(
                    f"GPU {device_id} ({_device_name(cp, device_id)}): the study's bit planes need "
                    f"{host_planes.nbytes / 2**30:.2f} GiB (twice that while they are laid out) and "
                    f"{free / 2**30:.2f} GiB are free; streaming planes through the device is not "
                    f"implemented yet (use --device cpu, or fewer SNPs)")
            self.k = kernels(device_id, config)
            # The c ln c table in shared memory when it fits beside the kernel's own (about 45
            # scattered lookups per pair: from shared memory, not L1); else read from global memory.
            tab_bytes = (study.n_samples + 1) * 8
            optin = int(cp.cuda.runtime.getDeviceProperties(device_id).get("sharedMemPerBlockOptin", 48 << 10))
            static = max(self.k[name].shared_size_bytes for name in _MODE_KERNELS)
            self.n_tab = study.n_samples + 1 if tab_bytes <= min(TABLE_SMEM_MAX, optin - static) else 0
            for name in _MODE_KERNELS:
                if self.n_tab and self.k[name].max_dynamic_shared_size_bytes < tab_bytes:
                    self.k[name].max_dynamic_shared_size_bytes = tab_bytes
            # Upload the CPU layout (p, 3, W) and transpose on the device to the type-major,
            # SNP-fastest (3, W, p) the kernels read (gboost.encode.to_gpu_layout, done where it is fast).
            snp_major = cp.asarray(host_planes)
            self.planes = cp.ascontiguousarray(snp_major.transpose(1, 2, 0))
            del snp_major
            assert self.planes.dtype == np.uint64 and self.planes.flags.c_contiguous
            assert self.planes.shape == (3, self.n_words, self.p)
            self.counts = cp.asarray(np.ascontiguousarray(study.counts.reshape(self.p, 6), dtype=np.int32))
            self.miss = cp.asarray(self.has_missing.astype(np.uint8))
            self.xlx = cp.asarray(xlogx_table(study.n_samples))
            self.thr = cp.asarray(np.concatenate([thresholds.screen, thresholds.summary]).astype(np.float64))
            assert self.thr.shape == (10,)
            self.stream = cp.cuda.Stream(non_blocking=True)
            self.copy_stream = cp.cuda.Stream(non_blocking=True)
            self.slots = (_Slot(cp, capacity), _Slot(cp, capacity))
            # The uploads above ran on the legacy default stream, which a non-blocking stream does
            # not wait for: finish them before any kernel of self.stream reads the arrays.
            cp.cuda.Device(device_id).synchronize()

    def _modes(self, tile: Tile) -> list[int]:
        """Counting modes (2 * rows-have-missing + columns-have-missing) of the tile's blocks."""
        cfg = self.config

        def flags(start: int, n: int, b: int) -> set[bool]:
            m = self.has_missing[start:start + n]
            return set((np.add.reduceat(m, np.arange(0, n, b)) > 0).tolist()) if n else {False}

        rows = flags(tile.i0, tile.i1 - tile.i0, cfg.block_rows)
        cols = flags(tile.j0, tile.j1 - tile.j0, cfg.block_cols)
        return sorted({2 * int(a) + int(b) for a in rows for b in cols})

    def submit(self, tile: Tile, slot: _Slot) -> _Pending:
        """Queue the tile's kernels and the copies of its summaries; returns at once."""
        cp, cfg = self.cp, self.config
        ni, nj = tile.i1 - tile.i0, tile.j1 - tile.j0
        with cp.cuda.Device(self.device_id), self.stream:
            slot.ensure(ni, nj, cfg)
            grid, block = launch_geometry(ni, nj, cfg)
            rp, cpart = slot.part["r"], slot.part["c"]
            slot.t0.record(self.stream)
            slot.surv_n.fill(0)
            for k, mode in enumerate(self._modes(tile)):
                args = (self.planes, self.counts, self.miss, self.xlx, self.thr,
                        np.int32(self.p), np.int32(self.n_words), np.int32(self.w_ctrl),
                        np.int32(tile.i0), np.int32(ni), np.int32(tile.j0), np.int32(nj),
                        np.int32(tile.diagonal), np.int32(k == 0), np.int32(self.n_tab),
                        slot.surv_n, np.int32(slot.cap), slot.surv_ij, slot.surv_ksa, slot.surv_tab,
                        *rp, *cpart, np.int32(1))
                self.k[_MODE_KERNELS[mode]](grid, block, args, shared_mem=self.n_tab * 8)
            for side, n, nb, part in (("r", ni, grid[0], rp), ("c", nj, grid[1], cpart)):
                out = getattr(slot, f"out_{side}")
                rgrid, rblock = _reduce_geometry(n)
                self.k["gb_reduce_partials"](rgrid, rblock, (np.int32(n), np.int32(nb), *part, *out))
            slot.t1.record(self.stream)
            slot.surv_n.get(stream=self.stream, out=slot.h_n, blocking=False)
            for side, n in (("r", ni), ("c", nj)):
                for dev, host in zip(getattr(slot, f"out_{side}"), getattr(slot, f"host_{side}")):
                    dev[:n].get(stream=self.stream, out=host[:n], blocking=False)
            slot.done.record(self.stream)
        return _Pending(tile, slot)

    def collect(self, pend: _Pending) -> TileResult:
        """Wait for a submitted tile; re-screen it with a larger buffer if survivors overflowed."""
        cp, slot, tile = self.cp, pend.slot, pend.tile
        slot.done.synchronize()
        n = int(slot.h_n[0])
        while n > slot.cap:
            with cp.cuda.Device(self.device_id):
                slot.grow(n)
            self.submit(tile, slot)
            slot.done.synchronize()
            n = int(slot.h_n[0])
        self.kernel_seconds += cp.cuda.get_elapsed_time(slot.t0, slot.t1) / 1000.0
        ni, nj = tile.i1 - tile.i0, tile.j1 - tile.j0
        with cp.cuda.Device(self.device_id):
            ij = slot.surv_ij[:n].get(stream=self.copy_stream)
            ksa = slot.surv_ksa[:n].get(stream=self.copy_stream)
            tab = slot.surv_tab[:n].get(stream=self.copy_stream)
        order = np.lexsort((ij[:, 1], ij[:, 0]))
        rows = _partial(tile.i0, ni, slot.host_r)
        cols = _partial(tile.j0, nj, slot.host_c)
        return TileResult(tile, ij[order, 0].astype(np.int64), ij[order, 1].astype(np.int64), ksa[order],
                          tab[order].astype(np.int64).reshape(n, 3, 3, 2), int(rows.n_tot.sum()), rows, cols)


def _partial(start: int, n: int, host) -> SummaryPartial:
    sig, tot, best, partner = host
    return SummaryPartial(start, sig[:n].astype(np.int64), tot[:n].astype(np.int64), best[:n].copy(),
                          partner[:n].astype(np.int64))


_DONE = object()


class GpuEngine(Engine):
    """Screens tiles on one or more NVIDIA GPUs through CuPy.

    Parameters
    ----------
    gpus
        Device indices to use; ``None`` means every visible GPU.
    tile
        Tile edge in SNPs; ``None`` sizes tiles so that one launch takes about
        :data:`LAUNCH_TARGET_S` and every GPU gets several tiles.
    survivor_capacity
        Initial survivors per tile the device buffer holds (it grows on overflow).
    config
        Kernel compile-time parameters.
    """

    name = "gpu"

    def __init__(self, gpus: list[int] | None = None, tile: int | None = None, *,
                 survivor_capacity: int = DEFAULT_SURVIVOR_CAPACITY, config: KernelConfig | None = None):
        if tile is not None and tile < 1:
            raise ValueError(f"tile must be >= 1 SNP, got {tile}")
        if survivor_capacity < 1:
            raise ValueError(f"survivor_capacity must be >= 1, got {survivor_capacity}")
        self._gpus = None if gpus is None else [int(g) for g in gpus]
        self._tile = tile
        self.survivor_capacity = int(survivor_capacity)
        self.config = config or KernelConfig()
        self.study: Study | None = None
        self._runners: list[_DeviceRunner] = []
        self._describe: str | None = None
        self._kernel_s = 0.0
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

    def describe(self) -> str:
        if self._describe is None:
            cp = _cupy()
            ids = self.device_ids()
            names = [_device_name(cp, d) for d in ids]
            head = names[0] if len(set(names)) == 1 else ", ".join(names)
            if len(ids) > 1 and len(set(names)) == 1:
                head = f"{len(ids)} x {head}"
            self._describe = f"{head} (GPU {','.join(map(str, ids))}; CuPy {cp.__version__})"
        return self._describe

    # -- Engine interface ----------------------------------------------------------------------
    def prepare(self, study: Study, thresholds: Thresholds) -> None:
        self.close()
        self.study = study
        self.thr = thresholds
        self._kernel_s = 0.0
        self._runners = [_DeviceRunner(d, study, thresholds, self.config, self.survivor_capacity)
                         for d in self.device_ids()]

    def tile_snps(self) -> int:
        if self._tile:
            return self._tile
        s = self.study
        p = max(1, s.n_snps)
        cp = _cupy()
        sms = min(cp.cuda.runtime.getDeviceProperties(r.device_id)["multiProcessorCount"] for r in self._runners)
        cells = 9 if s.has_missing.any() else 4
        # Measured on an H100 (docs/PERFORMANCE.md): about 7 table cells x 64-bit words per SM and
        # cycle, in both counting modes; count 8 at 1.8 GHz.
        pairs_per_s = sms * 8 * 1.8e9 / (max(1, s.layout.n_words) * cells)
        edge = int(math.sqrt(pairs_per_s * LAUNCH_TARGET_S))
        ngpu = len(self._runners)
        if ngpu > 1:  # enough tiles that the shared queue keeps every GPU busy to the end
            k = math.ceil(math.sqrt(8 * ngpu))
            edge = min(edge, -(-p // k))
        # Two slots of partial summaries, about 2 x 20 bytes x edge^2 / 32 each: a quarter of free memory.
        free = min(self._free_bytes(r.device_id) for r in self._runners)
        edge = min(edge, int(math.sqrt(0.25 * free / 2.5)))
        step = max(self.config.block_rows, self.config.block_cols)
        edge = max(step, edge // step * step)
        return min(edge, -(-p // step) * step)

    def run_tile(self, tile: Tile) -> TileResult:
        runner = self._runner0()
        return runner.collect(runner.submit(tile, runner.slots[0]))

    def run_tiles(self, tiles: Iterable[Tile], cancel: Callable[[], bool] | None = None) -> Iterator[TileResult]:
        """Screen ``tiles`` on every prepared GPU; yield results in completion order.

        One host thread per GPU takes tiles from a shared queue and keeps two in flight. Workers
        stop taking tiles once ``cancel()`` is true, or when the iterator is closed or the engine
        closed; tiles already in flight finish and are dropped.
        """
        runners = list(self._runners)
        if not runners:
            raise RuntimeError("GpuEngine.run_tiles before prepare()")
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
                    nxt = runner.submit(tile, runner.slots[k]) if tile is not None else None
                    if pending is not None:
                        res = runner.collect(pending)
                        if not stop.is_set():
                            out.put(res)
                    if nxt is None:
                        break
                    pending, k = nxt, k ^ 1
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
                stop.set()
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

    def close(self) -> None:
        for stop, threads in list(self._active):  # a run_tiles iterator abandoned mid-way
            stop.set()
            for t in threads:
                t.join()
        if not self._runners:
            return
        cp = _cupy()
        ids = [r.device_id for r in self._runners]
        for r in self._runners:
            with cp.cuda.Device(r.device_id):
                r.stream.synchronize()
            self._kernel_s += r.kernel_seconds
        self._table_smem = bool(self._runners[0].n_tab)
        self._runners = []
        for d in ids:
            with cp.cuda.Device(d):
                cp.get_default_memory_pool().free_all_blocks()
                cp.get_default_pinned_memory_pool().free_all_blocks()

    @staticmethod
    def _free_bytes(device_id: int) -> int:
        cp = _cupy()
        with cp.cuda.Device(device_id):
            return int(cp.cuda.runtime.memGetInfo()[0])

    def _runner0(self) -> _DeviceRunner:
        if not self._runners:
            raise RuntimeError("GpuEngine.run_tile before prepare()")
        return self._runners[0]
