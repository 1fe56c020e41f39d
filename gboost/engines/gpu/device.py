"""One GPU's runner: the study's small arrays and (when they fit) its planes on the device, its
kernels (through a counting strategy, counting.py), a stream and two slots of tile buffers, and
the memory policy: planes resident or streamed through an LRU cache of blocks, and the
out-of-memory back-off (halve the tile edge and the survivor buffer, screen the tile again as
sub-tiles and merge their results, which gives the same result)."""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from gboost.engines.base import SummaryPartial, Thresholds, Tile, TileResult
from gboost.engines.gpu.config import KernelConfig, MmaConfig
from gboost.engines.gpu import missing_lists
from gboost.engines.gpu.counting import MmaCounting, counting_for
from gboost.engines.gpu.cuda import cupy, device_name, host_register, host_unregister, is_oom
from gboost.engines.gpu.kernel_args import PARTIALS
from gboost.engines.gpu.pinning import GateHold, HostPinner, copy_ranges, piece_rows, split_bytes
from gboost.engines.gpu.upload import PlaneUpload
from gboost.stats.fastksa import xlogx_table
from gboost.data.planes import PlaneSource
from gboost.data.study import Study

# Planes stay resident when they take at most this share of a device's memory budget.
RESIDENT_FRACTION = 0.5
# Planes go up in chunks of about this much (SNP-major staging).
UPLOAD_CHUNK_BYTES = 64 << 20
MIN_EDGE = 8  # back-off floor of the tile edge, in SNPs
MIN_CAPACITY = 16  # back-off floor of the survivor buffer
_REDUCE_THREADS = 256
# A slot's partials (rows' sig, tot, best, partner, then the columns'), as the kernels' arguments name them.
PARTIAL_NAMES = tuple(name for name, _ in PARTIALS)


@dataclass
class DeviceStats:
    """What one GPU measured while it screened a study; the engine keeps it after close()."""

    kernel_seconds: float = 0.0  # device time of the screen and reduce kernels (CUDA events)
    # Device time between the end of set-up (or of the last tile) and the start of a tile's
    # kernels: the GPU waiting for planes or for the host to queue the tile.
    idle_gaps: list = field(default_factory=list)  # (tile index, seconds idle before it), in stream order
    backoffs: int = 0  # out-of-memory back-offs
    streaming: bool = False  # planes streamed through the device rather than resident
    # Streaming: the host planes page-locked in pieces on a thread (pinning.py) and the block
    # copies that went from page-locked or from pageable memory (rows not yet registered).
    pin_seconds: float = 0.0  # the pinner's time in cudaHostRegister (off the critical path)
    pinned_bytes: int = 0  # host plane bytes it registered (by the time the runner closed)
    pin_failure: str | None = None  # why it stopped early (the rest stayed pageable), or None
    copied_pinned_bytes: int = 0
    copied_pageable_bytes: int = 0
    # Streaming: .bed bytes of blocks decoded on the GPU (the host's encoder had not reached their
    # rows, decode.py) and the host's seconds in those decodes.
    decoded_bytes: int = 0
    decode_seconds: float = 0.0
    table_in_shared_memory: bool | None = None  # the c ln c table read from shared memory
    listed_snps: int = 0  # SNPs whose missing calls are counted by correction (missing_lists.py)


def _reduce_geometry(n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    return (max(1, -(-n // _REDUCE_THREADS)), 1, 1), (_REDUCE_THREADS, 1, 1)


class Slot:
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
class Pending:
    tile: Tile
    slot: Slot | None  # None: to be screened synchronously (after a back-off)
    epoch: int = 0


class DeviceRunner:
    """One GPU: the study's small arrays and (when they fit) its planes on it, its kernels, a
    stream, two slots, and the memory policy (streaming, back-off)."""

    def __init__(self, device_id: int, study: Study, thresholds: Thresholds, counting: str,
                 config: KernelConfig | MmaConfig, capacity: int, memory_limit: int | None, *,
                 planes: PlaneSource | None = None):
        cp = cupy()
        self.cp = cp
        self.device_id = device_id
        self.counting = counting  # "mma" or "popc"
        self.study = study
        # The host planes as a background encode writes them (gboost/data/planes.py): the resident
        # upload and the streamed blocks read them through it, or decode the .bed's rows it has not reached.
        self.plane_source = planes if planes is not None else PlaneSource.complete(study.planes)
        self.p = study.n_snps
        lay = study.layout
        if isinstance(config, MmaConfig):  # (packed accumulators need classes below 2^16 samples)
            config = config.for_classes(lay.n_ctrl, lay.n_case)
        self.config = config
        self.n_words = lay.n_words
        self.way = counting_for(counting, config, lay.n_words, lay.w_ctrl)
        self.block_rows, self.block_cols = config.block_rows, config.block_cols
        self.has_missing = np.asarray(study.has_missing, dtype=bool)
        self.capacity = int(capacity)
        self.stats = DeviceStats()
        self._last_end = None  # CUDA event: end of set-up, then end of the last collected tile
        self.max_edge: int | None = None  # sub-tile edge after an out-of-memory back-off
        self.epoch = 0
        self.planes = None
        # Blocks with missing calls counted by correction (CUDA cores, resident planes): the device lists,
        # and each SNP's flag (missing_lists.ListPlan: 0 fully called, UNLISTED, else listed), set by
        # _setup_lists.
        self.lists: missing_lists.DeviceLists | None = None
        self._uploading: PlaneUpload | None = None  # resident planes still going up
        self.where: Tile | None = None
        self.host_planes = np.ascontiguousarray(study.planes, dtype=np.uint64)
        assert self.host_planes.shape == (self.p, 3, self.n_words)
        self._pinner: HostPinner | None = None  # streaming: page-locks the host planes in pieces
        self._decoder = None  # streaming beside a background encode: decodes blocks it has not reached
        self._cache: OrderedDict = OrderedDict()
        self._cache_bytes = 0
        self._old_limit: int | None = None
        self.slots: tuple[Slot, Slot] = ()
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

    @property
    def streaming(self) -> bool:
        return self.stats.streaming

    @property
    def use_f32(self) -> bool:
        """Whether the kernels run the tensor cores' float32 pre-screen."""
        return self.build.use_f32

    # -- set-up --------------------------------------------------------------------------------
    def _setup(self, thresholds: Thresholds, memory_limit: int | None) -> None:
        cp, study, d = self.cp, self.study, self.device_id
        props = cp.cuda.runtime.getDeviceProperties(d)
        self.props = props
        self.build = self.way.build(d, props, study.n_samples)
        self.k = self.build.k
        self.n_tab = self.build.n_tab
        self.stats.table_in_shared_memory = bool(self.n_tab) and self.build.table_staged
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.copy_stream = cp.cuda.Stream(non_blocking=True)
        # Streamed blocks go up on a stream of their own while the tile before runs (the compute
        # stream waits for them by event): on the compute stream each tile's block left the GPU idle
        # while it copied (run.json's gpu_idle_s counts such gaps).
        self.upload_stream = cp.cuda.Stream(non_blocking=True)
        with self.stream:
            self._upload_counts(thresholds)
            self.xlx = cp.asarray(xlogx_table(study.n_samples))
            self._setup_bars()
        assert self.thr.shape == (10,)
        free, _total = cp.cuda.runtime.memGetInfo()
        self.budget = (int(min(free, memory_limit - self._used0)) if memory_limit is not None
                       else int(0.9 * free))
        # Two survivor buffers (88 bytes a survivor) take at most a twentieth of the budget.
        self.capacity = max(MIN_CAPACITY, min(self.capacity, int(0.05 * self.budget) // (2 * 88)))
        chunk = min(self.p, self._chunk_snps())
        plan = self._plan_lists()

        def resident_bytes() -> int:
            return (self.p * self.way.bytes_per_snp + chunk * 3 * 8 * self.n_words
                    + missing_lists.device_bytes(self.p, self.n_words, plan.width))

        # The fragment-native copy (MmaCounting.frag) for the float32 pre-screen's modes with missing
        # calls at the rows, where the planes stay resident with it; a study streamed in blocks keeps
        # one copy (its blocks would be half as wide).
        if isinstance(self.way, MmaCounting) and self.use_f32 and bool(self.has_missing.any()):
            self.way.frag = True
            if not (resident_bytes() <= RESIDENT_FRACTION * self.budget and -(-self.p // 16) * 16 <= self.way.max_snps):
                self.way.frag = False
        if plan.listed and resident_bytes() > RESIDENT_FRACTION * self.budget:
            plan = missing_lists.unlisted(plan)  # resident planes without the lists rather than streamed ones
        if resident_bytes() <= RESIDENT_FRACTION * self.budget and self.p <= self.way.max_snps:
            self.planes = self._resident_planes()
        if self.planes is None:  # (frag is False here: the copy is only asked for where it stays resident)
            plan = missing_lists.unlisted(plan)  # (the lists are built as resident planes land)
            self._start_streaming()
        self._setup_lists(plan)
        self.slots = (Slot(cp), Slot(cp))
        # Uploads from pageable memory may still be in flight, on this stream or the legacy one.
        cp.cuda.Device(self.device_id).synchronize()
        self._begin_planes()
        if self.streaming:
            # Last: a registration holds the driver, so each CUDA call of the set-up above would
            # wait for the one in hand (the engine's prepare took several times longer).
            self._start_pinning()

    def can_restudy(self, study: Study) -> bool:
        """Whether :meth:`restudy` can take ``study``: one of this runner's shape (the SNPs, the classes'
        sizes, which SNPs have missing calls at all) whose planes this runner holds resident, so that its
        kernels, buffers and plane array serve it as they are (a permutation's relabelled study)."""
        old = self.study
        return (self.planes is not None and self._decoder is None and study.n_snps == self.p
                and study.layout == old.layout and study.n_samples == old.n_samples
                and np.array_equal(np.asarray(study.has_missing, dtype=bool), self.has_missing))

    def restudy(self, study: Study, thresholds: Thresholds, planes: PlaneSource) -> None:
        """Take ``study`` (:meth:`can_restudy`) in place of the one set up: its planes go up into the
        resident array as at set-up (the missing-call lists rebuilt as they land), its counts and
        ``thresholds`` replace the old; the kernels, streams, slots and device arrays stay. The stats
        start again. Work of the old study still queued is waited for first."""
        cp = self.cp
        with cp.cuda.Device(self.device_id):
            self.stream.synchronize()
            self.upload_stream.synchronize()
            if self._uploading is not None:
                self._uploading.close()
                self._uploading = None
            self.study, self.plane_source = study, planes
            self.host_planes = np.ascontiguousarray(study.planes, dtype=np.uint64)
            self.stats = DeviceStats(table_in_shared_memory=self.stats.table_in_shared_memory)
            self.where = None
            with self.stream:
                self._upload_counts(thresholds)
            plan = self._plan_lists()
            if self.lists is None:  # none at set-up (they did not fit): none now
                plan = missing_lists.unlisted(plan)
            elif not plan.listed or plan.width != self.lists.width:
                self.lists = None  # (a list of another width is allocated anew)
            self._setup_lists(plan)
            self.stream.synchronize()
            self._begin_planes()

    def _upload_counts(self, thresholds: Thresholds) -> None:
        """The study's per-SNP counts and the run's thresholds on the device (on the current stream)."""
        cp = self.cp
        self.counts = cp.asarray(np.ascontiguousarray(self.study.counts.reshape(self.p, 6), dtype=np.int32))
        self.thr = cp.asarray(np.concatenate([thresholds.screen, thresholds.summary]).astype(np.float64))

    def _plan_lists(self) -> missing_lists.ListPlan:
        """Which SNPs the study's missing-call lists would hold, where this counting way and the
        configuration's correction use lists at all."""
        lay = self.study.layout
        return missing_lists.plan_lists(self.study.counts, lay.n_ctrl, lay.n_case, self.has_missing,
                                        enabled=self.way.lists and self.config.corrects)

    def _begin_planes(self) -> None:
        """Start the resident planes' upload (a streamed study uploads its blocks per tile) and mark
        the end of set-up, from which the first tile's idle gap counts."""
        cp = self.cp
        if self.planes is not None:
            self._uploading = PlaneUpload(cp, self.device_id, self.host_planes, self.planes,
                                          wait_rows=self.plane_source.wait, lay_out=self.lay_out)
        self._last_end = cp.cuda.Event()
        self._last_end.record(self.stream)

    def _setup_lists(self, plan: missing_lists.ListPlan) -> None:
        """The SNPs' flags on the device (every kernel's ``miss``) and, where some are listed, the lists
        and the sample-major copy (missing_lists.DeviceLists), filled as the planes' chunks land. Where
        they do not fit, no SNP is listed (the direct modes count every block with missing calls)."""
        cp, lay = self.cp, self.study.layout
        if plan.listed and self.lists is None:  # (a restudy keeps lists of the same width: rewritten as chunks land)
            try:
                with self.stream:
                    self.lists = missing_lists.DeviceLists(cp, self.k, plan, self.p, self.n_words, lay.w_ctrl,
                                                           lay.n_ctrl, lay.n_case)
            except Exception as exc:
                if not is_oom(cp, exc):
                    raise
                self.stats.backoffs += 1
                self.lists = None
                self.pool.free_all_blocks()
                plan = missing_lists.unlisted(plan)
        self.flags = plan.flags
        self.stats.listed_snps = int(missing_lists.is_listed(plan.flags).sum())
        with self.stream:
            self.miss = cp.asarray(plan.flags)

    def _resident_planes(self):
        """The planes' resident array, or None where the device cannot hold it (the study then streams).
        An array with the fragment-native copy that does not fit is tried again without it: the planes
        then stay resident and take the standard kernels, as a streamed study would, without its blocks'
        uploads (the copy saves a few percent of the missing-call kernel, less than streaming would cost)."""
        cp = self.cp
        while True:
            try:
                with self.stream:
                    return self.way.alloc_planes(cp, self.p)
            except Exception as exc:
                if not is_oom(cp, exc):
                    raise
                self.stats.backoffs += 1
                self.pool.free_all_blocks()
                if not self.way.frag:
                    return None
                self.way.frag = False

    def _setup_bars(self) -> None:
        """The float32 pre-screen's best-partner bars across blocks (boost_mma.cu, gm_pairs22_f32): two
        floats a SNP (its row and its column partials), zeroed (none yet) for a tile's SNPs before the
        tile runs, so that a bar comes from the tile's own pairs and each tile's partial summary is
        exactly the CPU engine's (a bar from another tile could leave a tile's own best partner of a
        SNP unevaluated)."""
        self.bar = self.cp.zeros(2 * self.p if self.use_f32 else 2, np.float32)  # rows, then columns

    def _start_streaming(self) -> None:
        """Planes stay on the host (page-locked in pieces once the set-up is done:
        :meth:`_start_pinning`); uploaded blocks are cached within a share of the budget."""
        self.stats.streaming = True
        self.cache_budget = int(0.25 * self.budget)
        ready = self.plane_source
        if ready.bed_rows is not None and not ready.done():
            from gboost.engines.gpu.decode import BedDecoder

            self._decoder = BedDecoder(self, ready.bed_rows)

    @property
    def decodes(self) -> bool:
        """Whether this runner decodes blocks the host's encoder has not reached (so the tiles need
        not wait for it)."""
        return self._decoder is not None

    def _start_pinning(self) -> None:
        """Page-lock the host planes in pieces on a thread, in SNP order (block uploads from
        registered rows are asynchronous DMA, the others pageable copies). Registering the whole
        array at once holds prepare for tens of seconds at biobank size; the thread lets the
        first tile start. One pinner serves every GPU's runner (the same host array): the first
        starts it."""
        if self.host_planes.nbytes:
            row = 3 * 8 * self.n_words
            self._pinner = HostPinner.shared(self.host_planes.ctypes.data, self.p, row, piece_rows(row),
                                             self._host_register, self._host_unregister,
                                             name=f"gboost-pin{self.device_id}")

    def _host_register(self, ptr: int, nbytes: int) -> None:
        host_register(self.device_id, ptr, nbytes)

    def _host_unregister(self, ptr: int) -> None:
        host_unregister(self.device_id, ptr)

    def _chunk_snps(self) -> int:
        return max(1, UPLOAD_CHUNK_BYTES // max(1, 3 * 8 * self.n_words))

    def _upload(self, a: int, b: int, out, off: int) -> None:
        """Host planes of SNPs [a, b) into ``out`` (kernel layout) from SNP ``off`` on, on the
        current stream, through SNP-major chunks that are laid out on the device. Each chunk's
        bytes go in one copy per page-locked piece they touch (pinning.py: a copy's source must
        lie within one registration to go as DMA); rows not registered yet go from pageable memory
        (synchronous, correct). No registration runs while the copies from registered rows are
        queued (the pinner's gate): each copy call would wait for it. A pageable chunk is copied
        outside the gate, so that the pinner may lock rows meanwhile (pinning.GateHold)."""
        cp, pin = self.cp, self._pinner
        row, base = 3 * 8 * self.n_words, self.host_planes.ctypes.data
        stream = cp.cuda.get_current_stream()
        with GateHold(pin.gate if pin is not None else None) as gate:
            for c0, c1 in copy_ranges(a, b, self._chunk_snps(), pin.rows if pin is not None else self.p):
                x = cp.empty((c1 - c0, 3, self.n_words), dtype=np.uint64)
                s, e = base + c0 * row, base + c1 * row
                parts = split_bytes(s, e, pin.starts) if pin is not None else [(s, e)]
                for u, v in parts:
                    dma = pin is not None and pin.pinned(u, v)
                    gate.hold(dma)
                    if dma:
                        self.stats.copied_pinned_bytes += v - u
                    else:
                        self.stats.copied_pageable_bytes += v - u
                    cp.cuda.runtime.memcpyAsync(x.data.ptr + (u - s), u, v - u, cp.cuda.runtime.memcpyHostToDevice,
                                                stream.ptr)
                self.lay_out(x, out, off + c0 - a)
                del x

    def lay_out(self, x, out, o: int) -> None:
        """SNP-major planes ``x`` (on the device) into ``out`` in kernel layout, from SNP ``o`` on
        (current stream); a chunk of the resident planes also into the missing-call lists."""
        self.way.lay_out(self.k, x, out, o)
        if self.lists is not None and out is self.planes:
            self.lists.add(x, o, self.miss)

    def _block(self, a: int, b: int, keep: tuple[int, int] | None = None):
        """Kernel-layout planes of SNPs [a, b) on the device (streaming), from the LRU cache."""
        key = (a, b)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        cp = self.cp
        # On the upload stream, so that the copies overlap the tile in flight; the current (compute)
        # stream waits for them. A block is freed (evicted) only while no tile in flight holds it
        # (Slot.refs), so memory reused from the pool here is read by no queued kernel.
        with self.upload_stream:
            arr = self.way.alloc_planes(cp, b - a)
            if self._decoder is not None and self.plane_source.rows < b:
                pin = self._pinner  # no registration while the decode's copies are queued (pinning.py)
                self._decoder.decode(a, b, arr, 0, pin.gate if pin is not None else None)
                self.stats.decoded_bytes = self._decoder.decoded_bytes
                self.stats.decode_seconds = self._decoder.seconds
            else:
                self.plane_source.wait(b)  # (at once: the tile waited for them, or the decoder is off)
                self._upload(a, b, arr, 0)
            sent = cp.cuda.Event(disable_timing=True)
            sent.record(self.upload_stream)
        cp.cuda.get_current_stream().wait_event(sent)
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
            return self.planes, self.planes.shape[2], a  # (the copy rounds the stride up to 16 SNPs)
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
        return min(self._streaming_edge(avail, per_e2), self.way.max_snps)  # a block is at most a tile edge

    def _streaming_edge(self, avail: int, per_e2: float) -> int:
        # Streaming: up to four blocks held by the two slots, one upload chunk, the partials.
        per_e = 4 * self.way.bytes_per_snp + 3 * 8 * self.n_words + 2 * 40
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
                f"GPU {self.device_id} ({device_name(cp, self.device_id)}): out of device memory even for tiles "
                f"of {cur} SNPs (tile {tile.index}); free device memory or use --device cpu") from exc
        self.stats.backoffs += 1
        self.epoch += 1
        self.max_edge = max(MIN_EDGE, cur // 2)
        self.capacity = max(MIN_CAPACITY, self.capacity // 2)
        with cp.cuda.Device(self.device_id):
            try:
                self.stream.synchronize()
                self.upload_stream.synchronize()
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
        """Counting modes of the tile's blocks, as the kernels derive them (missing_lists.block_modes)."""
        return sorted(missing_lists.block_modes(self.flags[tile.i0:tile.i1], self.flags[tile.j0:tile.j1],
                                                self.block_rows, self.block_cols))

    def submit(self, tile: Tile, slot: Slot) -> Pending:
        """Queue the tile's uploads (streaming), kernels and result copies; returns at once."""
        cp = self.cp
        self.where = tile
        ni, nj = tile.i1 - tile.i0, tile.j1 - tile.j0
        # No registration while the tile's calls are queued: each would wait for the one in hand
        # (queueing the first streamed tiles took over ten times their uploads' time while pinning ran).
        # The streamed blocks' uploads and decodes hold the gate themselves: an upload only while
        # it queues copies from page-locked memory (not through a pageable copy), a decode
        # throughout (decode.py says why).
        gate = GateHold(self._pinner.gate if self._pinner is not None else None)
        with gate, cp.cuda.Device(self.device_id), self.stream:
            slot.refs = None
            rows = self._planes_for(tile.i0, tile.i1)
            cols = self._planes_for(tile.j0, tile.j1, keep=(tile.i0, tile.i1))
            gate.hold(True)
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
        return Pending(tile, slot, self.epoch)

    def _launch(self, mode: int, first: bool, tile: Tile, slot: Slot, rows, cols, nbx: int, nby: int) -> None:
        (pr, sr, orr), (pc, sc, oc) = rows, cols
        ni, nj = tile.i1 - tile.i0, tile.j1 - tile.j0
        n_k, k_ctrl = self.way.shape_args()
        # the tile's fields of the kernels' arguments (kernel_args.TILE; each counting adds its own)
        args = dict(planes_r=pr, stride_r=sr, off_r=orr, planes_c=pc, stride_c=sc, off_c=oc, counts=self.counts,
                    miss=self.miss, xlx=self.xlx, thr=self.thr, n_k=n_k, k_ctrl=k_ctrl, i0=tile.i0, ni=ni,
                    j0=tile.j0, nj=nj, diag=int(tile.diagonal), write_empty=int(first), n_tab=self.n_tab,
                    surv_n=slot.surv_n, surv_cap=slot.cap, surv_ij=slot.surv_ij, surv_ksa=slot.surv_ksa,
                    surv_tab=slot.surv_tab, part=dict(zip(PARTIAL_NAMES, (*slot.part["r"], *slot.part["c"]))))
        self.way.launch(self.build, self.way.kernel_name(mode, orr, oc), args, nbx, nby, bar=self.bar, props=self.props,
                        uploading=self._uploading is not None, lists=self.lists.args if mode == 4 else None)

    def collect(self, pend: Pending) -> TileResult:
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
        self.stats.kernel_seconds += cp.cuda.get_elapsed_time(slot.t0, slot.t1) / 1000.0
        if self._last_end is not None:
            # Tiles are collected in the order they were queued on the one stream, so this is the gap before this tile.
            gap = max(0.0, cp.cuda.get_elapsed_time(self._last_end, slot.t0) / 1000.0)
            self.stats.idle_gaps.append((tile.index, gap))
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
    def try_submit(self, tile: Tile, slot: Slot) -> Pending:
        """submit(), or a pending entry to be screened synchronously after an out-of-memory back-off."""
        if self.max_edge is not None:
            return Pending(tile, None, self.epoch)
        try:
            return self.submit(tile, slot)
        except Exception as exc:
            if not is_oom(self.cp, exc):
                raise
            self.back_off(exc, tile)
            return Pending(tile, None, self.epoch)

    def finish(self, pend: Pending) -> TileResult:
        """The result of a pending tile, screening it again (in sub-tiles) where memory ran out."""
        if pend.slot is None or pend.epoch != self.epoch:
            return self.run_sync(pend.tile)
        try:
            return self.collect(pend)
        except Exception as exc:
            if not is_oom(self.cp, exc):
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
                if not is_oom(self.cp, exc):
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
            name = device_name(self.cp, self.device_id)
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
                if hasattr(self, "upload_stream"):
                    self.upload_stream.synchronize()
        except Exception:  # noqa: BLE001
            pass
        if self._uploading is not None:
            self._uploading.close()
            self._uploading = None
        if self._decoder is not None:  # after the streams' sync above: no copy still reads its staging
            dec, self._decoder = self._decoder, None
            dec.close()
        self.planes = None
        self.lists = None
        self.bar = None
        self._cache.clear()
        for slot in self.slots:
            slot.release()
        if self._pinner is not None:  # after the stream's sync above: no copy still reads a piece
            pin, self._pinner = self._pinner, None
            # The last runner's close stops it, joins, unregisters each piece (never raises) and
            # reports the pinner's work, once for all the runners that shared it.
            if pin.close():
                self.stats.pin_seconds = pin.seconds
                self.stats.pinned_bytes = pin.locked_bytes
                self.stats.pin_failure = pin.failure
        try:
            with cp.cuda.Device(self.device_id):
                if self._old_limit is not None:
                    self.pool.set_limit(size=self._old_limit)
                    self._old_limit = None
        except Exception:  # noqa: BLE001
            pass


def _partial(start: int, n: int, host) -> SummaryPartial:
    sig, tot, best, partner = host
    return SummaryPartial(start, sig[:n].astype(np.int64), tot[:n].astype(np.int64), best[:n].copy(),
                          partner[:n].astype(np.int64))


def merge_tile_results(tile: Tile, parts: list[TileResult]) -> TileResult:
    """One tile's result from those of sub-tiles that cover its pairs (each pair in one sub-tile)."""
    rows = SummaryPartial.empty(tile.i0, tile.i1 - tile.i0)
    cols = SummaryPartial.empty(tile.j0, tile.j1 - tile.j0)
    for res in parts:  # PLINK's partner rule, once (gboost/pipeline/tiles.py)
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
