"""Streamed host planes page-locked in pieces on a host thread, in SNP order, off the critical path.

Registering a biobank's planes with one ``cudaHostRegister`` holds the engine's prepare for tens of
seconds before the first tile. :class:`HostPinner` registers
them piece by piece on a thread, in the order the tiles read them, behind a watermark (the end of
the registered bytes). A copy below it is an asynchronous DMA; one above it goes from pageable
memory (synchronous, through the driver's staging buffer: slower, never wrong).

The pieces are whole SNP rows (about :data:`PIN_PIECE_BYTES`), but their registrations are cut at
the page boundary below each piece's first row (:func:`registrations`): the pinning is by whole
pages, so two registrations cut mid-page would share one, and CUDA may refuse the second as
already registered. A block's copies are cut at those byte boundaries (:func:`split_bytes`),
since a copy's source must lie within one registration to be treated as page-locked.

While a tile's calls are being queued a registration must not run: a registration holds the
driver, and every CUDA call of the tile thread waits for the one in hand (tens of milliseconds a
piece), so a tile's block took most of a second to queue instead of a few milliseconds and the
GPU waited for its first tile (run.json's gpu_idle_s shows such waits). The runner
queues a tile (its block copies, buffers, launches) inside :meth:`CopyGate.copying`; the pinner
registers each piece inside :meth:`CopyGate.registering`,
which waits while a copier copies or waits to (a plain lock starved the copier: the pinner
released and took it again before the waiting thread woke, so the first block waited for every
piece to be registered).

The runners of several GPUs stream from one host array: they share one pinner
(:meth:`HostPinner.shared`; registrations are portable, device.py), which unregisters its pieces
when the last of them closes it. (Each pinning on its own, the second's registrations overlapped
the first's and were refused: its copies all went from pageable memory.)

Nothing here knows CUDA: the runner passes the register / unregister calls (device.py), so the
plan, the cutting and the thread are tested on the CPU (tests/gpu/test_pinned_pieces.py).
"""
from __future__ import annotations

import bisect
import contextlib
import threading
import time
from typing import Callable, Iterator

# About this much host memory a registration (a small fraction of a second): large enough that
# the calls' fixed cost is small, small enough that the first rows are registered soon, that
# close() stops promptly between pieces, and that a registration holds the driver (if it holds it
# from the tile thread's launches and copies) only briefly.
PIN_PIECE_BYTES = 256 << 20
PAGE_BYTES = 4096  # the host's page (registrations are cut on page boundaries)
# Pinners running now, by (base address, bytes) of their rows (HostPinner.shared).
_LIVE: dict[tuple[int, int], "HostPinner"] = {}
_LIVE_LOCK = threading.Lock()


class GateHold:
    """A copier's hold of a :class:`CopyGate` (or of none) over some stretches of a loop: a block's
    copies from page-locked rows are queued inside the gate, its pageable copies outside it. A
    pageable copy is synchronous and slow, and holding the gate through it kept the pinner from
    the very rows still to be locked, so that later blocks went pageable too (a study too large for
    the GPU then copied nearly everything from pageable memory once the GPU's decode ran ahead)."""

    def __init__(self, gate: CopyGate | None):
        self.gate = gate
        self._held = None

    def hold(self, on: bool) -> None:
        """Hold the gate (``on``) or let it go; either may already be so."""
        if self.gate is None or on == (self._held is not None):
            return
        if on:
            cm = self.gate.copying()
            cm.__enter__()
            self._held = cm
        else:
            cm, self._held = self._held, None
            cm.__exit__(None, None, None)

    def __enter__(self) -> "GateHold":
        return self

    def __exit__(self, *exc) -> None:
        self.hold(False)


def piece_rows(row_bytes: int, piece_bytes: int | None = None, page: int = PAGE_BYTES) -> int:
    """SNP rows of one piece: whole rows of ``row_bytes`` each, about ``piece_bytes`` in all
    (default :data:`PIN_PIECE_BYTES`, read at the call: tests shrink it), and at least a page (so
    that no registration cut on page boundaries is empty)."""
    size = PIN_PIECE_BYTES if piece_bytes is None else piece_bytes
    row = max(1, int(row_bytes))
    return max(1, int(size) // row, -(-int(page) // row))


def plan_pieces(p: int, rows: int) -> list[tuple[int, int]]:
    """SNP ranges [a, b) of the pieces of ``p`` SNPs, ``rows`` a piece (the last may be shorter),
    in SNP order."""
    return [(a, min(p, a + rows)) for a in range(0, p, max(1, rows))]


def registrations(base: int, row_bytes: int, pieces: list[tuple[int, int]],
                  page: int = PAGE_BYTES) -> list[tuple[int, int]]:
    """Byte ranges [start, end) to register, one a piece, in order: disjoint, covering exactly
    the rows' bytes, each inner cut at the page boundary at or below the piece's first byte (the
    first starts at ``base``, the last ends at the last row's end). With pieces of at least a page
    (:func:`piece_rows`) none is empty."""
    if not pieces:
        return []
    cuts = [base] + [(base + a * row_bytes) // page * page for a, _ in pieces[1:]]
    return list(zip(cuts, cuts[1:] + [base + pieces[-1][1] * row_bytes]))


def copy_ranges(a: int, b: int, step: int, rows: int) -> Iterator[tuple[int, int]]:
    """SNP ranges covering [a, b) in order, each at most ``step`` SNPs and none crossing a piece
    boundary (a multiple of ``rows``)."""
    step, rows = max(1, step), max(1, rows)
    c0 = a
    while c0 < b:
        c1 = min(b, c0 + step, (c0 // rows + 1) * rows)
        yield c0, c1
        c0 = c1


def split_bytes(s: int, e: int, starts: list[int]) -> list[tuple[int, int]]:
    """[s, e) cut at every registration start (sorted) strictly inside it, in order."""
    out = []
    k = bisect.bisect_right(starts, s)
    while s < e:
        c = starts[k] if k < len(starts) and starts[k] < e else e
        out.append((s, c))
        s, k = c, k + 1
    return out


class CopyGate:
    """Registrations kept out of copies being queued, copiers first: any number of copiers at once
    (the runners of several GPUs), a registration only while none copies or waits to."""

    def __init__(self):
        self._cond = threading.Condition()
        self.copiers = 0  # copying or waiting to
        self._registering = False

    @contextlib.contextmanager
    def copying(self):
        with self._cond:
            self.copiers += 1
            while self._registering:  # the piece in hand (one registration at most)
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self.copiers -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def registering(self):
        with self._cond:
            while self.copiers:
                self._cond.wait()
            self._registering = True
        try:
            yield
        finally:
            with self._cond:
                self._registering = False
                self._cond.notify_all()


class HostPinner:
    """Registers the host memory of ``p`` SNP rows of ``row_bytes`` from ``base`` on, piece by
    piece (``rows`` SNPs a piece, :func:`registrations`), on a thread of its own.

    ``register(ptr, nbytes)`` and ``unregister(ptr)`` do the work (cudaHostRegister and
    cudaHostUnregister on the runner's device). A registration that fails (the OS refuses to lock
    more memory, the range already registered) stops the thread: the rest stays pageable, which is
    slower, not wrong (:attr:`failure` says why). :meth:`close` stops it between pieces, joins it
    and unregisters every piece it registered, each by its own base pointer; it never raises.
    """

    @classmethod
    def shared(cls, base: int, p: int, row_bytes: int, rows: int, register: Callable[[int, int], None],
               unregister: Callable[[int], None], *, page: int = PAGE_BYTES, name: str = "gboost-pin") -> "HostPinner":
        """The live pinner of these rows (another runner's: one more user, who must :meth:`close`
        it too; its pieces, whatever ``rows`` asks, since copies are cut at the pinner's own), or a
        new one started with these calls. The registrations must be portable (valid for every GPU's
        context), since the first user's calls make them for all."""
        key = (int(base), int(p) * int(row_bytes))
        with _LIVE_LOCK:
            pin = _LIVE.get(key)
            if pin is not None:
                pin._users += 1
                return pin
            pin = cls(base, p, row_bytes, rows, register, unregister, page=page, name=name)
            _LIVE[key] = pin
            return pin

    def __init__(self, base: int, p: int, row_bytes: int, rows: int, register: Callable[[int, int], None],
                 unregister: Callable[[int], None], *, page: int = PAGE_BYTES, name: str = "gboost-pin"):
        self.base, self.p, self.row_bytes, self.rows = int(base), int(p), int(row_bytes), max(1, int(rows))
        self.pieces = plan_pieces(self.p, self.rows)
        self.ranges = registrations(self.base, self.row_bytes, self.pieces, page)
        self.starts = [a for a, _ in self.ranges]  # where a copy must be cut (split_bytes)
        self._register, self._unregister = register, unregister
        self._lock = threading.Lock()
        self.gate = CopyGate()  # no registration while a copier queues copies
        self._users = 1
        self._end = self.base  # watermark: bytes [base, _end) lie in registered pieces
        self._done: list[int] = []  # base pointers of the registered pieces, in order
        self.failure: str | None = None
        self.seconds = 0.0  # the thread's time in register calls
        self.locked_bytes = 0  # bytes it registered (kept after close, for run.json)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def pinned_end(self) -> int:
        """Address below which (from ``base``) every byte lies in a registered piece."""
        with self._lock:
            return self._end

    @property
    def pinned_upto(self) -> int:
        """SNPs [0, pinned_upto) lie wholly in registered pieces (registered in SNP order)."""
        return min(self.p, (self.pinned_end - self.base) // max(1, self.row_bytes))

    def pinned(self, s: int, e: int) -> bool:
        """Whether the bytes [s, e) (addresses) all lie in registered pieces."""
        return e <= self.pinned_end or s >= e

    def _run(self) -> None:
        for (a, b), (s, e) in zip(self.pieces, self.ranges):
            if self._stop.is_set():
                return
            with self.gate.registering():
                t0 = time.perf_counter()
                try:
                    self._register(s, e - s)
                except Exception as exc:  # noqa: BLE001 - the rest stays pageable: slower copies, not wrong ones
                    self.failure = f"SNPs {a}-{b - 1}: {type(exc).__name__}: {exc}"
                    return
                finally:
                    self.seconds += time.perf_counter() - t0
            with self._lock:
                self._done.append(s)
                self._end = e
                self.locked_bytes += e - s

    def wait(self, timeout: float | None = None) -> bool:
        """Join the thread (tests, benches); True once it has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self) -> bool:
        """Stop after the piece in hand, join the thread, unregister every registered piece; a
        shared pinner (:meth:`shared`) does so when its last user closes it. The caller has made
        sure that no copy of its own still reads them (its stream synchronized). True from the
        close that did it (its caller reports the pinner's work)."""
        with _LIVE_LOCK:
            self._users -= 1
            if self._users > 0:
                return False
            for key, pin in list(_LIVE.items()):
                if pin is self:
                    del _LIVE[key]
        self._stop.set()
        self._thread.join()
        with self._lock:
            done, self._done, self._end = self._done, [], self.base
        for ptr in done:
            try:
                self._unregister(ptr)
            except Exception:  # noqa: BLE001 - close also runs after CUDA errors
                pass
        return True
