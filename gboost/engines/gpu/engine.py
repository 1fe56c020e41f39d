"""The GPU engine: devices chosen and described, one runner per GPU (device.py), tiles from a shared
queue, results in completion order, and each GPU's statistics kept after close()."""
from __future__ import annotations

import math
import os
import queue
import threading
from typing import Callable, Iterable, Iterator

import numpy as np

from gboost.engines.base import Engine, Thresholds, Tile, TileResult
from gboost.errors import ScanCancelled
from gboost.engines.gpu.compile import kernels
from gboost.engines.gpu.config import KernelConfig, MmaConfig
from gboost.engines.gpu.counting import MmaCounting, PopcCounting
from gboost.engines.gpu.cuda import (compute_capability, cupy, device_name, end_context, is_cuda_error, is_oom,
                                     release_driver_files)
from gboost.engines.gpu.device import MIN_EDGE, DeviceRunner, DeviceStats
from gboost.data.planes import PlaneSource
from gboost.data.study import Study

COUNTING_ENV = "GBOOST_GPU_COUNTING"
COUNTINGS = ("auto", "mma", "popc")
# Aim for launches of about this long, so that a GPU that also drives a display stays usable.
LAUNCH_TARGET_S = 0.05
DEFAULT_SURVIVOR_CAPACITY = 1 << 16
_LABELS = {c.name: c.label for c in (MmaCounting, PopcCounting)}

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
        self.plane_source: PlaneSource | None = None
        self._runners: list[DeviceRunner] = []
        self._devices_used: list[int] = []  # GPUs whose contexts end_contexts ends
        self._describe: str | None = None
        self._choice: dict[int, tuple[str, str | None]] = {}
        self._stats: list[DeviceStats] = []  # of each GPU since prepare; kept after close()
        self._active: list = []  # (stop event, worker threads) of run_tiles iterators still running

    # -- devices -------------------------------------------------------------------------------
    def device_ids(self) -> list[int]:
        from gboost.engines.devices import select_gpus

        return select_gpus(self._gpus, cupy().cuda.runtime.getDeviceCount())

    def counting_for(self, device_id: int) -> tuple[str, str | None]:
        """(``"mma"`` or ``"popc"``, why the tensor cores are not used or None) on ``device_id``."""
        got = self._choice.get(device_id)
        if got is not None:
            return got
        cp = cupy()
        cc = compute_capability(cp, device_id)
        if self.counting == "popc":
            got = ("popc", "counting='popc' asked for")
        elif cc < 80:
            if self.counting == "mma":
                raise RuntimeError(f"GPU {device_id} ({device_name(cp, device_id)}): counting='mma' needs compute "
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
            cp = cupy()
            ids = self.device_ids()
            names = [device_name(cp, d) for d in ids]
            head = names[0] if len(set(names)) == 1 else ", ".join(names)
            if len(ids) > 1 and len(set(names)) == 1:
                head = f"{len(ids)} x {head}"
            ways = [self.counting_for(d) for d in ids]
            kinds = sorted({w for w, _ in ways})
            how = " + ".join(_LABELS[w] for w in kinds)
            why = next((y for w, y in ways if w == "popc" and y and self.counting == "auto"), None)
            tail = f"; {why}" if why else ""
            self._describe = f"{head} (GPU {','.join(map(str, ids))}; CuPy {cp.__version__}; {how} counting{tail})"
        return self._describe

    def probe(self) -> None:
        """Check that every selected GPU can run the engine: build its kernels and run one.

        Raises RuntimeError naming the device and the cause (no usable device, an NVRTC or
        driver failure); :func:`gboost.engines.make_engine` then falls back to the CPU.
        """
        cp = cupy()
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
    def prepare(self, study: Study, thresholds: Thresholds, planes: PlaneSource | None = None) -> None:
        if planes is None and self._runners and not self._active and all(r.can_restudy(study) for r in self._runners):
            # Another study of the same shape (a permutation's relabelled planes, prepared without a
            # close between): the runners keep their kernels, buffers and plane arrays, and only the
            # planes, counts and thresholds go up again.
            self.study = study
            self.plane_source = PlaneSource.complete(study.planes)
            try:
                for r in self._runners:
                    r.restudy(study, thresholds, self.plane_source)
            except BaseException:
                self.close()
                raise
            self._stats = [r.stats for r in self._runners]
            return
        self.close()
        self.study = study
        # The host planes as a background encode writes them (gboost/data/planes.py): the tiles and
        # the runners read them through it.
        self.plane_source = planes if planes is not None else PlaneSource.complete(study.planes)
        self._stats = []
        runners = []
        try:
            for d in self.device_ids():
                counting, _ = self.counting_for(d)
                runners.append(DeviceRunner(d, study, thresholds, counting, self._config_for(counting),
                                             self.survivor_capacity, self.memory_limit_bytes,
                                             planes=self.plane_source))
        except BaseException:
            for r in runners:
                r.close()
            raise
        self._runners = runners
        self._stats = [r.stats for r in runners]
        self._devices_used = sorted(set(self._devices_used) | {r.device_id for r in runners})

    def tile_snps(self) -> int:
        if self._tile:  # (never past what a plane array of the kernels may hold: MmaCounting.max_snps)
            return min([self._tile] + [r.way.max_snps for r in self._runners])
        s = self.study
        p = max(1, s.n_snps)
        cp = cupy()
        sms = min(cp.cuda.runtime.getDeviceProperties(r.device_id)["multiProcessorCount"] for r in self._runners)
        cells = 9 if s.has_missing.any() else 4
        # The CUDA cores set the pace where any GPU counts with them.
        ways = {type(r.way): r.way for r in self._runners}
        way = ways.get(PopcCounting) or next(iter(ways.values()))
        pairs_per_s = way.pairs_per_second(sms, cells)
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
        self.plane_source.wait(tile.j1)  # a background encode (gboost/data/load.py)
        runner = self._runner0()
        cp = cupy()
        try:
            return runner.finish(runner.try_submit(tile, runner.slots[0]))
        except Exception as exc:
            if is_cuda_error(cp, exc) and not is_oom(cp, exc):
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
        cp = cupy()
        # Taken lazily, under a lock: the pipeline's order may depend on when a tile is taken (while a
        # background encode runs, gboost.pipeline.scan.stream_order picks tiles whose SNPs are encoded).
        work = iter(tiles)
        taking = threading.Lock()
        out: queue.SimpleQueue = queue.SimpleQueue()
        stop = threading.Event()
        source = self.plane_source
        decoding = all(r.decodes for r in runners)

        def halted() -> bool:
            return stop.is_set() or (cancel is not None and cancel())

        def next_tile() -> Tile | None:
            if halted():
                stop.set()
                return None
            with taking:
                tile = next(work, None)
            if tile is not None:
                # Every path reads host planes of SNPs < j1 (the resident upload waits too, per chunk;
                # the streamed path copies the tile's rows and columns): wait for the encoder to write
                # them. Its error is raised here (the consumer raises it); a cancel meanwhile ends the
                # worker as between tiles.
                try:
                    if not decoding:
                        source.wait(tile.j1, stop=halted)
                    else:
                        # A runner that decodes reads the .bed for rows not encoded, so it does not
                        # wait; a failed encoder still stops the scan here, at the next tile.
                        source.check()
                except ScanCancelled:
                    stop.set()
                    return None
            return tile

        def worker(runner: DeviceRunner) -> None:
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
                if isinstance(exc, Exception) and is_cuda_error(cp, exc) and not is_oom(cp, exc):
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
        return self._stats[0].table_in_shared_memory if self._stats else None

    @property
    def listed_snps(self) -> int:
        """SNPs whose missing calls the first GPU counts by correction (0 before prepare; missing_lists.py)."""
        return self._stats[0].listed_snps if self._stats else 0

    @property
    def kernel_seconds(self) -> float:
        """Device time of the screen and reduce kernels since prepare (CUDA events), summed over GPUs."""
        return sum(st.kernel_seconds for st in self._stats)

    @property
    def idle_seconds(self) -> float:
        """Device time between set-up and the first tile and between tiles (waiting for plane chunks
        or for the host), summed over GPUs; the bench prints it beside kernel_seconds."""
        return sum(gap for _, gap in self.idle_gaps)

    def screen_info(self) -> dict:
        """run.json's "engine_info": where the planes were (resident on every GPU, or streamed
        through them from page-locked host memory: studies larger than half a GPU's budget,
        docs/DESIGN.md), the tiles, the device time of the kernels, and how long the GPUs waited
        before and between tiles (for plane chunks, the encoder or the host) in all and at most once,
        beside the mean tile (the longest wait should stay below a tile's time). Streamed planes add what
        the page-locking thread did (device.py, pinning.py; complete once the engine is closed):
        its seconds in cudaHostRegister, the bytes it locked, and the block copies' bytes from
        page-locked and from pageable host memory (rows not locked yet when a tile needed them)."""
        if not self._stats:
            return {}
        modes = {bool(st.streaming) for st in self._stats}
        gaps = [g for _, g in self.idle_gaps]
        tiles = sum(len(st.idle_gaps) for st in self._stats)
        info = {
            "planes": "streamed" if modes == {True} else "resident" if modes == {False} else "mixed",
            "tiles": tiles,
            "kernel_s": round(self.kernel_seconds, 6),
            "mean_tile_kernel_s": round(self.kernel_seconds / tiles, 6) if tiles else None,
            "gpu_idle_s": round(sum(gaps), 6),
            "gpu_idle_longest_s": round(max(gaps), 6) if gaps else 0.0,
            # SNPs with missing calls counted by correction on the CUDA cores (missing_lists.py), on the first GPU
            "listed_snps": int(self._stats[0].listed_snps),
        }
        streamed = [st for st in self._stats if st.streaming]
        if streamed:
            info["pin_s"] = round(sum(st.pin_seconds for st in streamed), 6)
            info["pinned_bytes"] = sum(st.pinned_bytes for st in streamed)
            info["upload_pinned_bytes"] = sum(st.copied_pinned_bytes for st in streamed)
            info["upload_pageable_bytes"] = sum(st.copied_pageable_bytes for st in streamed)
            info["decoded_bytes"] = sum(st.decoded_bytes for st in streamed)
            info["decode_s"] = round(sum(st.decode_seconds for st in streamed), 6)
            failures = [f"GPU {k}: {st.pin_failure}" for k, st in enumerate(self._stats) if st.pin_failure]
            if failures:
                info["pin_failure"] = "; ".join(failures)
        return info

    @property
    def idle_gaps(self) -> list[tuple[int, float]]:
        """(tile index, seconds) of each idle gap in :attr:`idle_seconds`."""
        return [g for st in self._stats for g in st.idle_gaps]

    @property
    def streaming(self) -> bool | None:
        """Whether the planes are streamed through the device rather than resident (None before prepare)."""
        return any(st.streaming for st in self._stats) if self._stats else None

    @property
    def backoffs(self) -> int:
        """Out-of-memory back-offs since prepare, summed over GPUs."""
        return sum(st.backoffs for st in self._stats)

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
        cp = cupy()
        ids = [r.device_id for r in self._runners]
        for r in self._runners:
            r.close()
        self._runners = []
        for d in ids:
            try:
                with cp.cuda.Device(d):
                    cp.get_default_memory_pool().free_all_blocks()
                    cp.get_default_pinned_memory_pool().free_all_blocks()
            except Exception:  # noqa: BLE001 - after a CUDA error the context may be unusable
                pass

    def end_contexts(self) -> None:
        """Close, then end the CUDA contexts of every GPU this engine used (gboost/engines/gpu/cuda.py,
        ``end_context``): the last step of a process that exits right after, as the CLI's scan
        does; nothing CUDA may be used after it in this process (CuPy's pools still hold the old
        contexts' pointers). Then the driver's files are released (``release_driver_files``), so
        that the kernel's end of the process's GPU connection runs on this thread too, beside the
        formatting, not after the process's last instruction."""
        self.close()
        for d in self._devices_used:
            end_context(d)
        if self._devices_used:
            release_driver_files()
        self._devices_used = []

    def _runner0(self) -> DeviceRunner:
        if not self._runners:
            raise RuntimeError("GpuEngine.run_tile before prepare()")
        return self._runners[0]
