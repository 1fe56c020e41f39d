"""streamed host planes page-locked in pieces on a thread (gboost/engines/gpu/pinning.py)
instead of one cudaHostRegister in the engine's prepare.

On the CPU: the piece plan, the cutting of a block's copies at piece edges, the watermark, the
thread's stop and failure, close() unregistering every piece once (register / unregister calls
injected, as the runner passes the driver's), the gate that keeps registrations out of a block's
copies, one pinner shared by the runners of several GPUs, and the runner's block upload
(DeviceRunner._upload) against a stand-in for CuPy. On a GPU (``gpu`` marker): prepare returns before any piece is
registered, a scan streaming through a forced budget with small pieces and copies from both
pageable and page-locked rows writes the CPU engine's bytes, and close() leaves nothing registered.
"""
from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from gboost.engines.gpu import pinning
from gboost.engines.gpu.pinning import HostPinner, copy_ranges, piece_rows, plan_pieces, registrations, split_bytes
from gboost.pipeline.tiles import plan_tiles


# -- the plan -----------------------------------------------------------------------------------
def test_pieces_are_whole_rows_of_about_the_asked_size_and_at_least_a_page():
    assert piece_rows(288, 10_000) == 34  # 9792 bytes: whole rows, not more than asked
    assert piece_rows(288, 100) == 15  # never less than a page (4096 bytes: 15 rows of 288)
    assert piece_rows(288, 100, page=1) == 1  # nor than one row
    assert piece_rows(8192, 100) == 1
    assert piece_rows(3 * 8 * 36_250) == pinning.PIN_PIECE_BYTES // (3 * 8 * 36_250) > 100  # 2.32M samples
    assert plan_pieces(10, 3) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert plan_pieces(9, 3) == [(0, 3), (3, 6), (6, 9)]
    assert plan_pieces(2, 5) == [(0, 2)]
    assert plan_pieces(0, 5) == []


def test_registrations_are_disjoint_cover_the_rows_and_cut_on_pages():
    base, row = 10 * 4096 + 16, 288  # numpy's large arrays start a little past a page
    pieces = plan_pieces(100, 15)
    got = registrations(base, row, pieces)
    assert got[0][0] == base and got[-1][1] == base + 100 * row  # exactly the rows' bytes at both ends
    assert [s for s, _ in got[1:]] == [e for _, e in got[:-1]]  # contiguous, disjoint
    for (a, _), (s, e) in zip(pieces[1:], got[1:]):
        assert s % 4096 == 0 and s <= base + a * row < s + 4096  # the page of the piece's first byte
        assert e > s
    assert registrations(base, row, [(0, 3)]) == [(base, base + 3 * row)]
    assert registrations(base, row, []) == []
    assert registrations(0, 8, plan_pieces(10, 3), page=1) == [(0, 24), (24, 48), (48, 72), (72, 80)]


def test_a_copy_is_cut_at_every_registration_start_inside_it():
    starts = [100, 4096, 8192, 12288]
    assert split_bytes(100, 4096, starts) == [(100, 4096)]
    assert split_bytes(4000, 9000, starts) == [(4000, 4096), (4096, 8192), (8192, 9000)]
    assert split_bytes(8192, 8200, starts) == [(8192, 8200)]
    assert split_bytes(50, 120, starts) == [(50, 100), (100, 120)]
    assert split_bytes(13000, 14000, starts) == [(13000, 14000)]
    assert split_bytes(5, 5, starts) == []


@pytest.mark.parametrize("a, b, step, rows, want", [
    (0, 10, 4, 100, [(0, 4), (4, 8), (8, 10)]),  # one piece: the chunks alone
    (0, 10, 100, 3, [(0, 3), (3, 6), (6, 9), (9, 10)]),  # large chunks: cut at every piece edge
    (5, 17, 4, 6, [(5, 6), (6, 10), (10, 12), (12, 16), (16, 17)]),  # both, from inside a piece
    (6, 12, 6, 6, [(6, 12)]),  # exactly one piece
    (7, 7, 4, 3, []),
])
def test_copies_never_cross_a_piece_edge(a, b, step, rows, want):
    assert list(copy_ranges(a, b, step, rows)) == want


def test_copy_ranges_cover_the_range_in_order_on_every_shape():
    rng = np.random.default_rng(21)
    for _ in range(500):
        a = int(rng.integers(0, 50))
        b = a + int(rng.integers(0, 80))
        step, rows = int(rng.integers(1, 20)), int(rng.integers(1, 20))
        got = list(copy_ranges(a, b, step, rows))
        assert [c0 for c0, _ in got] == ([a] + [c1 for _, c1 in got[:-1]] if b > a else [])  # contiguous, in order
        assert (got[-1][1] if got else a) == b
        for c0, c1 in got:
            assert 0 < c1 - c0 <= step
            assert c0 // rows == (c1 - 1) // rows  # within one piece


# -- the thread ---------------------------------------------------------------------------------
class FakeDriver:
    """cudaHostRegister / cudaHostUnregister over a set of ranges: registering an overlapping range
    or unregistering an unknown pointer fails as CUDA does; ``gate`` (an Event) holds each
    registration until set; ``fail_at``: the k-th registration raises (the OS refusing to lock)."""

    def __init__(self, gate: threading.Event | None = None, fail_at: int | None = None):
        self.ranges: dict[int, int] = {}
        self.calls: list[tuple[str, int, int]] = []
        self.gate, self.fail_at = gate, fail_at
        self.lock = threading.Lock()

    def register(self, ptr: int, nbytes: int) -> None:
        if self.gate is not None:
            self.gate.wait()
        with self.lock:
            self.calls.append(("register", ptr, nbytes))
            if self.fail_at is not None and sum(c[0] == "register" for c in self.calls) == self.fail_at:
                raise MemoryError("cudaErrorMemoryAllocation: out of memory")
            for p, n in self.ranges.items():
                if p < ptr + nbytes and ptr < p + n:
                    raise RuntimeError("cudaErrorHostMemoryAlreadyRegistered")
            self.ranges[ptr] = nbytes

    def unregister(self, ptr: int) -> None:
        with self.lock:
            self.calls.append(("unregister", ptr, 0))
            if ptr not in self.ranges:
                raise RuntimeError("cudaErrorHostMemoryNotRegistered")
            del self.ranges[ptr]


def test_the_pinner_registers_every_piece_in_order_and_close_unregisters_each_once():
    drv = FakeDriver()
    base, row = 1 << 20, 288
    pin = HostPinner(base, 10, row, 3, drv.register, drv.unregister, page=1)
    assert pin.wait(5)
    assert pin.failure is None and pin.pinned_upto == 10 and pin.pinned_end == base + 10 * row
    assert [c[1:] for c in drv.calls] == [(base, 3 * row), (base + 3 * row, 3 * row), (base + 6 * row, 3 * row),
                                          (base + 9 * row, row)]
    assert pin.pinned(base, base + 10 * row) and pin.pinned(base + 9 * row, base + 10 * row)
    assert not pin.pinned(base, base + 10 * row + 1)
    pin.close()
    assert drv.ranges == {} and pin.locked_bytes == 10 * row  # (kept for run.json)
    assert sorted(c[1] for c in drv.calls if c[0] == "unregister") == [base + k * 3 * row for k in range(4)]
    assert pin.pinned_upto == 0 and not pin.pinned(base, base + 1)
    pin.close()  # twice: nothing more unregistered, nothing raised
    assert sum(c[0] == "unregister" for c in drv.calls) == 4


def test_registrations_on_page_cuts_never_overlap_in_pages():
    """With real page cuts (an unaligned base, pieces not a whole number of pages) no two
    registrations share a page, as CUDA pins whole pages; together they lock exactly the rows."""
    pages: dict[int, int] = {}

    def register(ptr, n):
        for pg in range(ptr // 4096, (ptr + n - 1) // 4096 + 1):
            assert pg not in pages, "two registrations share a page"
            pages[pg] = ptr

    base, row = 7 * 4096 + 16, 3 * 8 * 13
    pin = HostPinner(base, 1000, row, piece_rows(row, 10_000), register, lambda ptr: None)
    assert pin.wait(5) and pin.failure is None
    assert pin.pinned_upto == 1000 and pin.locked_bytes == 1000 * row and len(set(pages.values())) == len(pin.pieces) > 10
    pin.close()


def test_the_watermark_rises_piece_by_piece_as_registrations_finish():
    drv = FakeDriver()
    entered, release = threading.Semaphore(0), threading.Semaphore(0)

    def register(ptr, n):  # one registration at a time, when the test says so
        entered.release()
        release.acquire()
        drv.register(ptr, n)

    pin = HostPinner(0, 7, 8, 2, register, drv.unregister, page=1)
    try:
        for k, upto in enumerate([2, 4, 6, 7]):
            assert entered.acquire(timeout=5)
            assert pin.pinned_upto == 2 * k  # the piece in hand does not count yet
            assert not pin.pinned(16 * k, 16 * k + 1) and (k == 0 or pin.pinned(0, 16 * k))
            release.release()
            deadline = time.monotonic() + 5
            while pin.pinned_upto < upto and time.monotonic() < deadline:
                time.sleep(0.001)
            assert pin.pinned_upto == upto
        assert pin.wait(5)
    finally:
        release.release()
        pin.close()
    assert drv.ranges == {}


def test_close_stops_the_pinner_between_pieces():
    gate = threading.Event()
    drv = FakeDriver(gate=gate)
    pin = HostPinner(4096, 1000, 8, 1, drv.register, drv.unregister, page=1)  # 1000 pieces
    time.sleep(0.05)  # the thread waits inside its first registration
    closer = threading.Thread(target=pin.close)
    closer.start()
    time.sleep(0.05)
    assert closer.is_alive()  # close waits for the piece in hand...
    gate.set()
    closer.join(5)
    assert not closer.is_alive()
    registered = [c for c in drv.calls if c[0] == "register"]
    assert 1 <= len(registered) <= 2  # ...and no more start after it (one may have passed the check)
    assert drv.ranges == {}  # each one unregistered
    assert sum(c[0] == "unregister" for c in drv.calls) == len(registered)


def test_a_refused_registration_leaves_the_rest_pageable_without_an_error():
    drv = FakeDriver(fail_at=3)
    pin = HostPinner(0, 10, 8, 2, drv.register, drv.unregister, page=1)
    assert pin.wait(5)
    assert pin.pinned_upto == 4 and pin.locked_bytes == 32  # two pieces, then the refusal: no later piece tried
    assert "MemoryError" in pin.failure and "SNPs 4-5" in pin.failure
    assert sum(c[0] == "register" for c in drv.calls) == 3
    pin.close()
    assert drv.ranges == {}


def test_close_never_raises_when_unregistering_fails():
    drv = FakeDriver()

    def unregister(ptr):
        drv.calls.append(("unregister", ptr, 0))
        raise RuntimeError("cudaErrorIllegalAddress: the context is gone")

    pin = HostPinner(0, 6, 8, 2, drv.register, unregister, page=1)
    assert pin.wait(5)
    pin.close()  # every piece still tried
    assert sum(c[0] == "unregister" for c in drv.calls) == 3


def test_no_registration_starts_while_a_copier_copies():
    """A copier queues a block's copies inside ``gate.copying()``: each copy call would otherwise
    wait for the registration in hand (0.81 s to queue a 2 GB block on the H100 host)."""
    drv = FakeDriver()

    def register(ptr, n):
        time.sleep(0.001)
        drv.register(ptr, n)

    pin = HostPinner(0, 400, 8, 1, register, drv.unregister, page=1)  # 400 pieces, ~0.5 s
    try:
        with pin.gate.copying():
            before = len(drv.calls)
            time.sleep(0.05)
            assert len(drv.calls) == before and pin.pinned_upto < 400  # held between two pieces
        assert pin.wait(5) and pin.pinned_upto == 400
    finally:
        pin.close()
    assert drv.ranges == {}


def test_a_copier_lets_the_pinner_lock_rows_while_it_copies_from_pageable_memory():
    """GateHold: a block's loop holds the gate while it queues copies from locked rows and lets it
    go for a pageable copy (synchronous and slow; holding the gate through it kept the pinner from
    the rows still to lock, s7b on the H100) and while it reads the .bed (the GPU's decode)."""
    from gboost.engines.gpu.pinning import GateHold

    drv = FakeDriver()

    def register(ptr, n):
        time.sleep(0.001)
        drv.register(ptr, n)

    pin = HostPinner(0, 400, 8, 1, register, drv.unregister, page=1)
    try:
        with GateHold(pin.gate) as held:
            held.hold(True)
            held.hold(True)  # (already held: one hold)
            before = len(drv.calls)
            time.sleep(0.05)
            assert len(drv.calls) == before  # held: no registration
            held.hold(False)  # a pageable copy: the pinner goes on meanwhile
            time.sleep(0.05)
            assert len(drv.calls) > before
            held.hold(True)
            before = len(drv.calls)
            time.sleep(0.03)
            assert len(drv.calls) == before
        assert pin.gate.copiers == 0  # let go on leaving
        assert pin.wait(5) and pin.pinned_upto == 400
        with GateHold(None) as none:  # no pinner: nothing to hold
            none.hold(True)
    finally:
        pin.close()
    assert drv.ranges == {}


def test_a_waiting_copier_goes_before_the_pinners_next_piece():
    """The pinner registers piece after piece; a copier that asks meanwhile gets in after the piece
    in hand, not after the last one (a plain lock let the pinner take it again and again: the
    first block waited for all 15 GB to be registered, 2.0 s on the H100 host)."""
    drv = FakeDriver()

    def register(ptr, n):
        time.sleep(0.002)
        drv.register(ptr, n)

    pin = HostPinner(0, 500, 8, 1, register, drv.unregister, page=1)  # ~1 s of pieces
    try:
        time.sleep(0.02)
        with pin.gate.copying():
            got = pin.pinned_upto
        assert got < 100  # the piece in hand at the ask, not all 500
        assert pin.wait(10) and pin.pinned_upto == 500
    finally:
        pin.close()


def test_runners_on_one_host_array_share_one_pinner_until_the_last_closes_it():
    """Two GPUs' runners stream from the same host planes: the second gets the first's pinner (one
    set of portable registrations, no refusal), the first close leaves every piece registered (the
    other GPU may still copy), the last unregisters them and says so (it reports the work once)."""
    drv = FakeDriver()
    one = HostPinner.shared(4096, 6, 8, 2, drv.register, drv.unregister, page=1)
    two = HostPinner.shared(4096, 6, 8, 2, lambda *a: pytest.fail("a second pinner"), drv.unregister, page=1)
    assert two is one and one.wait(5) and one.pinned_upto == 6 and one.failure is None
    assert one.close() is False and len(drv.ranges) == 3 and one.pinned(4096, 4096 + 48)
    assert two.close() is True and drv.ranges == {} and one.locked_bytes == 48
    three = HostPinner.shared(4096, 6, 8, 2, drv.register, drv.unregister, page=1)  # a later scan: a new one
    assert three is not one and three.wait(5) and three.pinned_upto == 6
    assert three.close() is True and drv.ranges == {}
    assert sum(c[0] == "register" for c in drv.calls) == 6  # 3 pieces, twice: once a pinner


def test_the_same_memory_is_refused_while_a_pinner_holds_it_and_taken_after_close():
    """Two pinners of one host array (what the runners of two GPUs did before they shared one): the
    second's first registration overlaps the first's pieces and is refused (its copies stay
    pageable); once the first closes, the memory registers again."""
    drv = FakeDriver()
    one = HostPinner(0, 6, 8, 2, drv.register, drv.unregister, page=1)
    assert one.wait(5)
    two = HostPinner(0, 6, 8, 2, drv.register, drv.unregister, page=1)
    assert two.wait(5)
    assert two.pinned_upto == 0 and "AlreadyRegistered" in two.failure
    two.close()
    one.close()
    three = HostPinner(0, 6, 8, 2, drv.register, drv.unregister, page=1)
    assert three.wait(5) and three.pinned_upto == 6 and three.failure is None
    three.close()
    assert drv.ranges == {}


# -- the runner's block upload, against a stand-in for CuPy --------------------------------------
class _FakeDeviceArray:
    def __init__(self, shape):
        self.host = np.zeros(shape, np.uint64)  # "device" memory
        self.data = SimpleNamespace(ptr=self.host.ctypes.data)


def _fake_runner(planes: np.ndarray, pinner: HostPinner | None, chunk_rows: int):
    """What DeviceRunner._upload touches: CuPy's empty, current stream and memcpyAsync (a host
    memmove here, logged), the layout (SNP-major here) and the statistics."""
    import ctypes

    from gboost.engines.gpu.device import DeviceStats

    log: list[tuple[int, int]] = []

    def memcpy_async(dst, src, n, kind, stream):
        assert kind == 1 and stream == 0
        # No registration while copies from locked rows are queued; a pageable copy lets the
        # pinner go on (pinning.GateHold).
        assert pinner is None or (pinner.gate.copiers > 0) == pinner.pinned(src, src + n)
        log.append((src, n))
        ctypes.memmove(dst, src, n)

    runtime = SimpleNamespace(memcpyAsync=memcpy_async, memcpyHostToDevice=1)
    cp = SimpleNamespace(empty=lambda shape, dtype: _FakeDeviceArray(shape),
                         cuda=SimpleNamespace(get_current_stream=lambda: SimpleNamespace(ptr=0), runtime=runtime))

    def lay_out(x, out, o):
        out[o:o + x.host.shape[0]] = x.host

    runner = SimpleNamespace(cp=cp, _pinner=pinner, host_planes=planes, n_words=planes.shape[2], p=planes.shape[0],
                             stats=DeviceStats(streaming=True), lay_out=lay_out, _chunk_snps=lambda: chunk_rows)
    return runner, log


BLOCKS = [(0, 60), (3, 47), (29, 31), (11, 13), (44, 60)]


@pytest.mark.parametrize("registered", [0, 1, 2])
def test_a_block_upload_copies_the_right_rows_one_copy_per_registration_it_touches(registered):
    """Rows of 168 bytes, pieces of 30 rows (5040 bytes) cut on 4096-byte pages: a piece's last
    rows lie partly in the next registration, so a chunk is cut in bytes there. Every copy lies
    within one registration; the bytes below the watermark are counted as page-locked, the rest
    as pageable; the rows arrive whole and in place."""
    from gboost.engines.gpu.device import DeviceRunner

    buf = np.random.default_rng(3).integers(0, 2**63, 60 * 3 * 7 + 64, dtype=np.uint64)
    skip = 1 if (buf.ctypes.data + 30 * 168) % 4096 == 0 else 0  # (the first piece not ending on a page)
    planes = buf[skip:skip + 60 * 3 * 7].reshape(60, 3, 7)
    row, base = planes[0].nbytes, planes.ctypes.data
    drv = FakeDriver()
    pin = HostPinner(base, 60, row, 30, drv.register, drv.unregister)
    assert pin.wait(5) and len(pin.ranges) == 2
    assert pin.ranges[1][0] % 4096 == 0 and pin.ranges[1][0] < base + 30 * row  # a piece's tail in the next
    end = base if registered == 0 else pin.ranges[registered - 1][1]
    with pin._lock:  # the watermark where the test wants it
        pin._end = end
    runner, log = _fake_runner(planes, pin, chunk_rows=4)
    want_pinned = 0
    for a, b in BLOCKS:
        out = np.zeros((b - a + 2, 3, 7), np.uint64)
        log.clear()
        DeviceRunner._upload(runner, a, b, out, 2)
        np.testing.assert_array_equal(out[2:], planes[a:b])
        assert not out[:2].any()
        assert sum(n for _, n in log) == (b - a) * row
        for src, n in log:
            assert any(s <= src and src + n <= e for s, e in pin.ranges), "a copy spans two registrations"
            assert n <= 4 * row
        want_pinned += max(0, min(base + b * row, end) - (base + a * row))
    st = runner.stats
    assert st.copied_pinned_bytes + st.copied_pageable_bytes == sum(b - a for a, b in BLOCKS) * row
    assert st.copied_pinned_bytes == want_pinned
    assert (st.copied_pinned_bytes > 0) == (registered > 0)
    pin.close()


def test_a_block_upload_without_a_pinner_copies_whole_chunks_from_pageable_memory():
    from gboost.engines.gpu.device import DeviceRunner

    planes = np.random.default_rng(4).integers(0, 2**63, (60, 3, 7), dtype=np.uint64)
    runner, log = _fake_runner(planes, None, chunk_rows=4)
    out = np.zeros((45, 3, 7), np.uint64)
    DeviceRunner._upload(runner, 3, 47, out, 1)
    np.testing.assert_array_equal(out[1:], planes[3:47])
    assert [n // planes[0].nbytes for _, n in log] == [4] * 11  # one copy a chunk: no cuts
    assert runner.stats.copied_pageable_bytes == 44 * planes[0].nbytes and runner.stats.copied_pinned_bytes == 0


# -- on a GPU -------------------------------------------------------------------------------------
def _small_pieces(monkeypatch, rows_per_piece: int, row_bytes: int, rows_per_chunk: int | None = None):
    """Pieces (and copies) of a few SNPs. (The copy size also enters the runner's resident-or-
    streamed decision: shrink it only where the budget streams the planes anyway.)"""
    from gboost.engines.gpu import device

    monkeypatch.setattr(pinning, "PIN_PIECE_BYTES", rows_per_piece * row_bytes)
    if rows_per_chunk is not None:
        monkeypatch.setattr(device, "UPLOAD_CHUNK_BYTES", rows_per_chunk * row_bytes)


def _recording(monkeypatch, gate: threading.Event | None = None):
    """DeviceRunner's register / unregister calls recorded (the real CUDA calls still made);
    ``gate`` holds every registration until it is set."""
    from gboost.engines.gpu.device import DeviceRunner

    calls = {"register": [], "unregister": []}
    real_reg, real_unreg = DeviceRunner._host_register, DeviceRunner._host_unregister

    def register(self, ptr, n):
        if gate is not None:
            gate.wait(30)
        real_reg(self, ptr, n)
        calls["register"].append((ptr, n))

    def unregister(self, ptr):
        calls["unregister"].append(ptr)
        real_unreg(self, ptr)

    monkeypatch.setattr(DeviceRunner, "_host_register", register)
    monkeypatch.setattr(DeviceRunner, "_host_unregister", unregister)
    return calls


@pytest.mark.gpu
def test_prepare_returns_before_any_piece_is_registered_and_close_unregisters_every_piece(monkeypatch):
    import cupy

    from tests.helpers import LOOSE, STREAMED, gpu_engine, gpu_study, pool_baseline

    study = gpu_study(**STREAMED)
    row = 3 * 8 * study.layout.n_words
    _small_pieces(monkeypatch, 7, row)  # (pieces of at least a page: 15 SNPs of 288 bytes)
    gate = threading.Event()
    calls = _recording(monkeypatch, gate)
    eng = gpu_engine(tile=48, memory_limit_bytes=pool_baseline() + (320 << 10))
    try:
        eng.prepare(study, LOOSE)  # would hang on the gate if prepare waited for the pinner
        assert eng.streaming is True
        runner = eng._runners[0]
        assert calls["register"] == [] and runner._pinner.pinned_upto == 0
        pieces = runner._pinner.pieces
        assert len(pieces) > 10
    finally:
        gate.set()
    try:
        assert runner._pinner.wait(30) and runner._pinner.failure is None
        assert runner._pinner.pinned_upto == study.n_snps
        assert len(list(eng.run_tiles(plan_tiles(study.n_snps, 48)))) == len(plan_tiles(study.n_snps, 48))
    finally:
        eng.close()
    assert len(calls["register"]) == len(pieces)
    assert sorted(calls["unregister"]) == sorted(p for p, _ in calls["register"])  # each once, by its own pointer
    info = eng.screen_info()
    assert info["pinned_bytes"] == study.n_snps * row and info["pin_s"] > 0
    for ptr, n in calls["register"]:  # nothing left registered: the same memory registers again
        cupy.cuda.runtime.hostRegister(ptr, n, 0)
        cupy.cuda.runtime.hostUnregister(ptr)


@pytest.mark.gpu
def test_a_scan_streaming_through_small_pieces_writes_the_cpu_engines_bytes(tmp_path, monkeypatch):
    """GBOOST_GPU_MEMORY_LIMIT forces streaming; pieces of 37 SNPs and copies of at most 50; the
    pinner held until the first block has gone up (from pageable memory), so the scan copies from
    both pageable and page-locked rows. The files equal the CPU engine's, byte for byte, and every
    piece is unregistered at the end."""
    from gboost.cli import main
    from gboost.engines.gpu.device import DeviceRunner
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study
    from gboost.data.simulate import simulate_study

    prefix = str(tmp_path / "s")
    simulate_study(4000, 1000, 1000, seed=7, chromosomes=2, missing_rate=0.01, ld_block=20).write(prefix)
    study = load_study(open_bfile(prefix))
    row = 3 * 8 * study.layout.n_words
    _small_pieces(monkeypatch, 37, row, rows_per_chunk=50)  # (streamed under this budget whatever the copy)
    gate = threading.Event()
    calls = _recording(monkeypatch)
    real_run = pinning.HostPinner._run

    def run(self):  # held before its first piece (outside the gate, which the upload needs)
        gate.wait(30)
        real_run(self)

    monkeypatch.setattr(pinning.HostPinner, "_run", run)
    real_upload = DeviceRunner._upload

    def upload(self, a, b, out, off):
        real_upload(self, a, b, out, off)
        gate.set()  # the first block went up before any piece was registered

    monkeypatch.setattr(DeviceRunner, "_upload", upload)
    monkeypatch.setenv("GBOOST_GPU_MEMORY_LIMIT", str(int(1.5 * study.planes.nbytes)))
    common = ["--bfile", prefix, "--quiet", "--epi1", "1e-3", "--calibration-pairs", "0"]
    assert main(["scan", *common, "--out", str(tmp_path / "gpu"), "--device", "gpu",
                 "--gpus", "0"]) == 0  # one GPU's copies (on two, all blocks went up before a piece was locked)
    monkeypatch.delenv("GBOOST_GPU_MEMORY_LIMIT")
    assert main(["scan", *common, "--out", str(tmp_path / "cpu"), "--device", "cpu"]) == 0
    for name in ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv"):
        assert (tmp_path / "gpu" / name).read_bytes() == (tmp_path / "cpu" / name).read_bytes(), name
    info = json.loads((tmp_path / "gpu" / "run.json").read_text())["engine_info"]
    assert info["planes"] == "streamed"
    assert info["upload_pageable_bytes"] > 0 and info["upload_pinned_bytes"] > 0, info
    assert len(calls["register"]) >= 2 and "pin_failure" not in info
    assert sorted(calls["unregister"]) == sorted(p for p, _ in calls["register"])


@pytest.mark.gpu
def test_the_drivers_registration_is_page_locked_memory_to_the_runtime_and_undone_by_unregister():
    """The pinner registers through the driver with ctypes (the GIL released, portable): the CUDA
    runtime then sees page-locked host memory there (its copies go as DMA); unregistering undoes
    it, and a driver error names the call and the CUDA error."""
    import cupy

    from gboost.engines.gpu.cuda import DriverError, host_register, host_unregister

    # A registration lives in the device's primary context, which host_register retains for the
    # call only; the engine registers after its runner's set-up has made that context, as here (in a
    # process without one, the context made for the call would end with it, and the registration too).
    cupy.cuda.Device(0).use()
    cupy.zeros(1)
    buf = np.zeros(3 << 20, np.uint8)
    ptr, n = buf.ctypes.data, buf.nbytes
    host_register(0, ptr, n)
    try:
        attrs = cupy.cuda.runtime.pointerGetAttributes(ptr)
        assert attrs.type == 1  # cudaMemoryTypeHost
        with pytest.raises(cupy.cuda.runtime.CUDARuntimeError, match="AlreadyRegistered"):
            cupy.cuda.runtime.hostRegister(ptr, n, 0)
        d = cupy.arange(n // 8, dtype=np.uint64).view(np.uint8)
        cupy.cuda.runtime.memcpy(ptr, d.data.ptr, n, cupy.cuda.runtime.memcpyDeviceToHost)
        np.testing.assert_array_equal(buf.view(np.uint64), np.arange(n // 8, dtype=np.uint64))
    finally:
        host_unregister(0, ptr)
    assert cupy.cuda.runtime.pointerGetAttributes(ptr).type == 0  # cudaMemoryTypeUnregistered
    with pytest.raises(DriverError, match="cuMemHostUnregister: CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"):
        host_unregister(0, ptr)


@pytest.mark.gpu(devices=2)
def test_two_gpus_streaming_share_one_pinner_and_write_the_cpu_engines_bytes(tmp_path, monkeypatch):
    """Both GPUs stream through a forced budget from one host array: one pinner (portable
    registrations) locks each piece once for both runners, none is refused (two pinners' second
    registrations of the same pages were: its copies all went pageable), every piece is
    unregistered once at the end, both GPUs take tiles, and the files equal the CPU engine's."""
    from gboost.cli import main
    from gboost.engines.gpu.device import DeviceRunner
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study
    from gboost.data.simulate import simulate_study

    prefix = str(tmp_path / "s")
    simulate_study(4000, 1000, 1000, seed=9, chromosomes=2, missing_rate=0.01, ld_block=20).write(prefix)
    study = load_study(open_bfile(prefix))
    row = 3 * 8 * study.layout.n_words
    _small_pieces(monkeypatch, 37, row, rows_per_chunk=50)
    calls = _recording(monkeypatch)
    devices = []
    real_submit = DeviceRunner.submit

    def submit(self, tile, slot):
        devices.append(self.device_id)
        return real_submit(self, tile, slot)

    monkeypatch.setattr(DeviceRunner, "submit", submit)
    monkeypatch.setenv("GBOOST_GPU_MEMORY_LIMIT", str(int(1.5 * study.planes.nbytes)))
    common = ["--bfile", prefix, "--quiet", "--epi1", "1e-3", "--calibration-pairs", "0"]
    assert main(["scan", *common, "--out", str(tmp_path / "gpu"), "--device", "gpu", "--gpus", "0,1",
                 "--tile", "500"]) == 0
    monkeypatch.delenv("GBOOST_GPU_MEMORY_LIMIT")
    assert main(["scan", *common, "--out", str(tmp_path / "cpu"), "--device", "cpu"]) == 0
    for name in ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv"):
        assert (tmp_path / "gpu" / name).read_bytes() == (tmp_path / "cpu" / name).read_bytes(), name
    info = json.loads((tmp_path / "gpu" / "run.json").read_text())["engine_info"]
    assert info["planes"] == "streamed" and "pin_failure" not in info, info
    assert set(devices) == {0, 1}, devices
    ptrs = [p for p, _ in calls["register"]]
    assert len(ptrs) == len(set(ptrs)) >= 2  # each piece once, whichever runner's call made it
    assert sum(n for _, n in calls["register"]) <= study.planes.nbytes  # (the scan may end first)
    assert sorted(calls["unregister"]) == sorted(ptrs)
    assert info["upload_pinned_bytes"] > 0, info
