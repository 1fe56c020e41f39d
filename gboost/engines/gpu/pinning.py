"""Streamed host planes page-locked in pieces on a host thread, in SNP order, off the critical path.

Registering a biobank's planes with one ``cudaHostRegister`` held the engine's prepare for 28.8 s
(87 GB on the H100 host, docs/PERFORMANCE.md) before the first tile. :class:`HostPinner` registers
them piece by piece (whole SNP rows) on a thread, in the order the tiles read them, and keeps a
watermark: SNPs [0, ``pinned_upto``) lie in registered pieces. A copy whose rows lie below it is an
asynchronous DMA; one above it goes from pageable memory (synchronous, through the driver's
staging buffer: slower, never wrong). :func:`copy_ranges` cuts a block's copies at piece
boundaries, since a copy's source must lie within one registration to be treated as page-locked.

Nothing here knows CUDA: the runner passes the register / unregister calls (device.py), so the
piece plan, the splitting and the thread are tested on the CPU (tests/test_pinned_pieces.py).
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Iterator

# About this much host memory a registration: large enough that the calls' fixed cost is small,
# small enough that the first tiles' rows are registered within a fraction of a second and that
# close() stops promptly between pieces.
PIN_PIECE_BYTES = 512 << 20


def piece_rows(row_bytes: int, piece_bytes: int | None = None) -> int:
    """SNP rows of one piece: whole rows of ``row_bytes`` each, about ``piece_bytes`` in all
    (default :data:`PIN_PIECE_BYTES`, read at the call: tests shrink it), at least one row."""
    size = PIN_PIECE_BYTES if piece_bytes is None else piece_bytes
    return max(1, int(size) // max(1, int(row_bytes)))


def plan_pieces(p: int, rows: int) -> list[tuple[int, int]]:
    """SNP ranges [a, b) of the pieces of ``p`` SNPs, ``rows`` a piece (the last may be shorter),
    in SNP order."""
    return [(a, min(p, a + rows)) for a in range(0, p, max(1, rows))]


def copy_ranges(a: int, b: int, step: int, rows: int) -> Iterator[tuple[int, int]]:
    """SNP ranges covering [a, b) in order, each at most ``step`` SNPs and none crossing a piece
    boundary (a multiple of ``rows``)."""
    step, rows = max(1, step), max(1, rows)
    c0 = a
    while c0 < b:
        c1 = min(b, c0 + step, (c0 // rows + 1) * rows)
        yield c0, c1
        c0 = c1


class HostPinner:
    """Registers the pieces of host memory ``[base, base + p * row_bytes)`` on a thread of its own.

    ``register(ptr, nbytes)`` and ``unregister(ptr)`` do the work (cudaHostRegister and
    cudaHostUnregister on the runner's device). A registration that fails (the OS refuses to lock
    more memory, the range already registered) stops the thread: the rest stays pageable, which is
    slower, not wrong (:attr:`failure` says why). :meth:`close` stops it between pieces, joins it
    and unregisters every piece it registered, each by its own base pointer; it never raises.
    """

    def __init__(self, base: int, p: int, row_bytes: int, rows: int, register: Callable[[int, int], None],
                 unregister: Callable[[int], None], *, name: str = "gboost-pin"):
        self.base, self.row_bytes, self.rows = int(base), int(row_bytes), max(1, int(rows))
        self.pieces = plan_pieces(int(p), self.rows)
        self._register, self._unregister = register, unregister
        self._lock = threading.Lock()
        self._upto = 0
        self._done: list[int] = []  # base pointers of the registered pieces, in order
        self.failure: str | None = None
        self.seconds = 0.0  # the thread's time in register calls
        self.locked_bytes = 0  # bytes it registered (kept after close, for run.json)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def pinned_upto(self) -> int:
        """SNPs [0, pinned_upto) lie in registered pieces (they are registered in SNP order)."""
        with self._lock:
            return self._upto

    @property
    def pinned_bytes(self) -> int:
        with self._lock:
            return self._upto * self.row_bytes

    @property
    def registered(self) -> list[int]:
        """Base pointers of the pieces registered now."""
        with self._lock:
            return list(self._done)

    def pinned(self, a: int, b: int) -> bool:
        """Whether SNPs [a, b) all lie in registered pieces."""
        return b <= self.pinned_upto or a >= b

    def _run(self) -> None:
        for a, b in self.pieces:
            if self._stop.is_set():
                return
            ptr = self.base + a * self.row_bytes
            t0 = time.perf_counter()
            try:
                self._register(ptr, (b - a) * self.row_bytes)
            except Exception as exc:  # noqa: BLE001 - the rest stays pageable: slower copies, not wrong ones
                self.failure = f"SNPs {a}-{b - 1}: {type(exc).__name__}: {exc}"
                return
            finally:
                self.seconds += time.perf_counter() - t0
            with self._lock:
                self._done.append(ptr)
                self._upto = b
                self.locked_bytes = b * self.row_bytes

    def wait(self, timeout: float | None = None) -> bool:
        """Join the thread (tests, benches); True once it has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self) -> None:
        """Stop after the piece in hand, join the thread, unregister every registered piece. The
        caller has made sure that no copy still reads them (its stream synchronized)."""
        self._stop.set()
        self._thread.join()
        with self._lock:
            done, self._done, self._upto = self._done, [], 0
        for ptr in done:
            try:
                self._unregister(ptr)
            except Exception:  # noqa: BLE001 - close also runs after CUDA errors
                pass
