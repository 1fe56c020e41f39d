"""Issue 21: streamed host planes page-locked in pieces on a thread (gboost/engines/gpu/pinning.py)
instead of one cudaHostRegister in the engine's prepare.

On the CPU: the piece plan, the cutting of a block's copies at piece edges, the watermark, the
thread's stop and failure, close() unregistering every piece once (register / unregister calls
injected, as the runner passes CuPy's), and the runner's block upload (DeviceRunner._upload)
against a stand-in for CuPy. On a GPU (``gpu`` marker): prepare returns before any piece is
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
from gboost.engines.gpu.pinning import HostPinner, copy_ranges, piece_rows, plan_pieces
from gboost.tiles import plan_tiles


# -- the plan -----------------------------------------------------------------------------------
def test_pieces_are_whole_rows_of_about_the_asked_size():
    assert piece_rows(288, 1000) == 3  # 864 bytes: whole rows, not more than asked
    assert piece_rows(288, 100) == 1  # never less than one row
    assert piece_rows(3 * 8 * 36_250) == (512 << 20) // (3 * 8 * 36_250)  # 2.32M samples: the default size
    assert plan_pieces(10, 3) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert plan_pieces(9, 3) == [(0, 3), (3, 6), (6, 9)]
    assert plan_pieces(2, 5) == [(0, 2)]
    assert plan_pieces(0, 5) == []


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
    pin = HostPinner(base, 10, row, 3, drv.register, drv.unregister)
    assert pin.wait(5)
    assert pin.failure is None and pin.pinned_upto == 10 and pin.pinned_bytes == 10 * row
    assert [c[1:] for c in drv.calls] == [(base, 3 * row), (base + 3 * row, 3 * row), (base + 6 * row, 3 * row),
                                          (base + 9 * row, row)]
    assert pin.pinned(0, 10) and pin.pinned(9, 10) and pin.pinned(4, 4)
    pin.close()
    assert drv.ranges == {} and pin.locked_bytes == 10 * row  # (kept for run.json)
    assert sorted(c[1] for c in drv.calls if c[0] == "unregister") == [base + k * 3 * row for k in range(4)]
    assert pin.pinned_upto == 0 and not pin.pinned(0, 1)
    pin.close()  # twice: nothing more unregistered, nothing raised
    assert sum(c[0] == "unregister" for c in drv.calls) == 4


def test_the_watermark_rises_piece_by_piece_as_registrations_finish():
    drv = FakeDriver()
    entered, release = threading.Semaphore(0), threading.Semaphore(0)

    def register(ptr, n):  # one registration at a time, when the test says so
        entered.release()
        release.acquire()
        drv.register(ptr, n)

    pin = HostPinner(0, 7, 8, 2, register, drv.unregister)
    try:
        for k, upto in enumerate([2, 4, 6, 7]):
            assert entered.acquire(timeout=5)
            assert pin.pinned_upto == 2 * k  # the piece in hand does not count yet
            assert not pin.pinned(2 * k, 2 * k + 1) and (k == 0 or pin.pinned(0, 2 * k))
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
    pin = HostPinner(4096, 1000, 8, 1, drv.register, drv.unregister)  # 1000 pieces
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
    pin = HostPinner(0, 10, 8, 2, drv.register, drv.unregister)
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

    pin = HostPinner(0, 6, 8, 2, drv.register, unregister)
    assert pin.wait(5)
    pin.close()  # every piece still tried
    assert sum(c[0] == "unregister" for c in drv.calls) == 3


def test_the_same_memory_is_refused_while_a_pinner_holds_it_and_taken_after_close():
    """Two runners on one host array (two GPUs): the second's first registration overlaps the
    first's pieces and is refused (its copies stay pageable); once the first closes, the memory
    registers again."""
    drv = FakeDriver()
    one = HostPinner(0, 6, 8, 2, drv.register, drv.unregister)
    assert one.wait(5)
    two = HostPinner(0, 6, 8, 2, drv.register, drv.unregister)
    assert two.wait(5)
    assert two.pinned_upto == 0 and "AlreadyRegistered" in two.failure
    two.close()
    one.close()
    three = HostPinner(0, 6, 8, 2, drv.register, drv.unregister)
    assert three.wait(5) and three.pinned_upto == 6 and three.failure is None
    three.close()
    assert drv.ranges == {}


# -- the runner's block upload, against a stand-in for CuPy --------------------------------------
class _FakeDeviceArray:
    def __init__(self, shape, log):
        self.data = np.zeros(shape, np.uint64)
        self.log = log

    def set(self, src, stream=None):
        self.log.append((src.ctypes.data, src.nbytes))
        self.data[...] = src


def _fake_runner(planes: np.ndarray, pinner: HostPinner | None, chunk_rows: int):
    from gboost.engines.gpu.device import DeviceStats

    log: list[tuple[int, int]] = []
    cp = SimpleNamespace(empty=lambda shape, dtype: _FakeDeviceArray(shape, log),
                         cuda=SimpleNamespace(get_current_stream=lambda: None))

    def lay_out(x, out, o):  # SNP-major stand-in for the kernels' layout
        out[o:o + x.data.shape[0]] = x.data

    runner = SimpleNamespace(cp=cp, _pinner=pinner, host_planes=planes, n_words=planes.shape[2], p=planes.shape[0],
                             stats=DeviceStats(streaming=True), lay_out=lay_out, _chunk_snps=lambda: chunk_rows)
    return runner, log


@pytest.mark.parametrize("pinned_rows", [0, 6, 12, 29])
def test_a_block_upload_copies_the_right_rows_and_no_copy_crosses_a_piece(pinned_rows):
    from gboost.engines.gpu.device import DeviceRunner

    planes = np.random.default_rng(3).integers(0, 2**63, (29, 3, 5), dtype=np.uint64)
    row = planes[0].nbytes
    drv = FakeDriver()
    pin = HostPinner(planes.ctypes.data, 29, row, 6, drv.register, drv.unregister)
    assert pin.wait(5)
    with pin._lock:  # the watermark where the test wants it: pieces [0, pinned_rows) registered
        pin._upto = pinned_rows
    runner, log = _fake_runner(planes, pin, chunk_rows=4)
    for a, b in [(0, 29), (3, 17), (11, 13), (24, 29)]:
        out = np.zeros((b - a + 2, 3, 5), np.uint64)
        log.clear()
        DeviceRunner._upload(runner, a, b, out, 2)
        np.testing.assert_array_equal(out[2:], planes[a:b])
        assert not out[:2].any()
        assert sum(n for _, n in log) == (b - a) * row
        for ptr, n in log:
            r0, r1 = (ptr - planes.ctypes.data) // row, (ptr - planes.ctypes.data + n) // row
            assert r0 // 6 == (r1 - 1) // 6, (r0, r1)  # one piece's rows
            assert r1 - r0 <= 4
    st = runner.stats
    total = sum(b - a for a, b in [(0, 29), (3, 17), (11, 13), (24, 29)]) * row
    assert st.copied_pinned_bytes + st.copied_pageable_bytes == total
    want_pinned = sum(max(0, min(b, pinned_rows) - a) for a, b in [(0, 29), (3, 17), (11, 13), (24, 29)]) * row
    assert st.copied_pinned_bytes == want_pinned  # pieces end on multiples of 6: a copy is all in or all out
    pin.close()


# -- on a GPU -------------------------------------------------------------------------------------
def _small_pieces(monkeypatch, rows_per_piece: int, rows_per_chunk: int, row_bytes: int):
    from gboost.engines.gpu import device

    monkeypatch.setattr(pinning, "PIN_PIECE_BYTES", rows_per_piece * row_bytes)
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

    from tests.helpers import gpu_engine, gpu_study
    from tests.test_gpu_engine import LOOSE, STREAMED, _pool_baseline

    study = gpu_study(**STREAMED)
    row = 3 * 8 * study.layout.n_words
    _small_pieces(monkeypatch, 7, 5, row)
    gate = threading.Event()
    calls = _recording(monkeypatch, gate)
    eng = gpu_engine(tile=48, memory_limit_bytes=_pool_baseline() + (320 << 10))
    try:
        eng.prepare(study, LOOSE)  # would hang on the gate if prepare waited for the pinner
        assert eng.streaming is True
        runner = eng._runners[0]
        assert calls["register"] == [] and runner._pinner.pinned_upto == 0 and not runner._registered
    finally:
        gate.set()
    try:
        assert runner._pinner.wait(30)
        assert runner._pinner.pinned_upto == study.n_snps and runner._registered
        assert len(list(eng.run_tiles(plan_tiles(study.n_snps, 48)))) == len(plan_tiles(study.n_snps, 48))
    finally:
        eng.close()
    n_pieces = -(-study.n_snps // 7)
    assert len(calls["register"]) == n_pieces
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
    from gboost.io.plink_bed import open_bfile
    from gboost.load import load_study
    from gboost.simulate import simulate_study

    prefix = str(tmp_path / "s")
    simulate_study(4000, 1000, 1000, seed=7, chromosomes=2, missing_rate=0.01, ld_block=20).write(prefix)
    study = load_study(open_bfile(prefix))
    row = 3 * 8 * study.layout.n_words
    _small_pieces(monkeypatch, 37, 50, row)
    gate = threading.Event()
    calls = _recording(monkeypatch, gate)
    real_upload = DeviceRunner._upload

    def upload(self, a, b, out, off):
        real_upload(self, a, b, out, off)
        gate.set()  # the first block went up before any piece was registered

    monkeypatch.setattr(DeviceRunner, "_upload", upload)
    monkeypatch.setenv("GBOOST_GPU_MEMORY_LIMIT", str(int(1.5 * study.planes.nbytes)))
    common = ["--bfile", prefix, "--quiet", "--epi1", "1e-3", "--calibration-pairs", "0"]
    assert main(["scan", *common, "--out", str(tmp_path / "gpu"), "--device", "gpu"]) == 0
    monkeypatch.delenv("GBOOST_GPU_MEMORY_LIMIT")
    assert main(["scan", *common, "--out", str(tmp_path / "cpu"), "--device", "cpu"]) == 0
    for name in ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv"):
        assert (tmp_path / "gpu" / name).read_bytes() == (tmp_path / "cpu" / name).read_bytes(), name
    info = json.loads((tmp_path / "gpu" / "run.json").read_text())["engine_info"]
    assert info["planes"] == "streamed"
    assert info["upload_pageable_bytes"] > 0 and info["upload_pinned_bytes"] > 0, info
    assert len(calls["register"]) >= 2 and "pin_failure" not in info
    assert sorted(calls["unregister"]) == sorted(p for p, _ in calls["register"])
