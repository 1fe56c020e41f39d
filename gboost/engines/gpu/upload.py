"""Resident planes uploaded on a host thread while the first tiles run (one GPU's runner starts it)."""
from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from gboost.errors import InputError

# Resident planes go up on a host thread while the first tiles run (_PlaneUpload), through two
# page-locked buffers of this size: the first tile waits only for its own SNPs' chunks. (Pageable
# large chunks beside the tiles copied slowly enough that the first tiles waited for them.)
PRELOAD_CHUNK_BYTES = 8 << 20


class PlaneUpload:
    """Resident planes going up chunk by chunk, in SNP order, on a host thread and a stream of their
    own, while the first tiles run (a pageable copy holds its calling thread until it is staged, so
    the copies must not sit on the thread that queues the tiles).

    :meth:`wait` (on the tile-queuing thread) makes the current stream wait for the chunks that hold
    SNPs [a, b); a chunk the stream has waited for once needs no second wait (later work on that
    stream is ordered after it). Tiles go row block by row block, and the first needs only its own
    columns' chunks, so the upload stays ahead of the tiles. While a background encode still writes
    the host planes (``DeviceRunner.plane_source``), each chunk first waits for its rows to be encoded.

    The runner hands over what the upload reads and calls, and nothing else: ``host_planes`` (the
    SNP-major host planes, ``(p, 3, n_words)``), ``wait_rows(b, stop)`` (returns once rows [0, b) are
    encoded, raising the encoder's error) and ``lay_out(x, planes, a)`` (the chunk ``x`` of SNPs from
    ``a`` on into the device planes' kernel layout, on the current stream).
    """

    def __init__(self, cp, device_id: int, host_planes: np.ndarray, planes, *,
                 wait_rows: Callable[..., None], lay_out: Callable[..., None]):
        self.cp = cp
        self.device_id, self.host_planes = device_id, host_planes
        self.p, self.n_words = host_planes.shape[0], host_planes.shape[2]
        self._wait_rows, self._lay_out = wait_rows, lay_out
        # Whole groups of 32 SNPs a chunk: the missing-call lists' sample-major copy is built a group at a
        # time (missing_lists.DeviceLists.add).
        step = max(32, PRELOAD_CHUNK_BYTES // max(1, 3 * 8 * self.n_words) // 32 * 32)
        self.starts = list(range(0, self.p, step))
        self.step = step
        self.ready = [threading.Event() for _ in self.starts]
        self.events = [cp.cuda.Event(disable_timing=True) for _ in self.starts]
        self.waited = [False] * len(self.starts)
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._planes = planes
        self._stream = cp.cuda.Stream(non_blocking=True)
        self._thread = threading.Thread(target=self._run, name=f"gboost-upload{device_id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        cp = self.cp
        try:
            with cp.cuda.Device(self.device_id), self._stream:
                # Two page-locked staging buffers: the host fills one while the other is copied up.
                shape = (self.step, 3, self.n_words)
                stage = [np.frombuffer(cp.cuda.alloc_pinned_memory(max(1, int(np.prod(shape))) * 8), np.uint64,
                                       int(np.prod(shape))).reshape(shape) for _ in range(2)]
                sent = [cp.cuda.Event(disable_timing=True) for _ in range(2)]
                for k, a in enumerate(self.starts):
                    if self._stop.is_set():  # closed mid-way: the chunks not sent must not pass for sent
                        self.error = RuntimeError("the upload was stopped (engine closed)")
                        break
                    self._send(k, a, min(self.p, a + self.step), stage[k % 2], sent[k % 2])
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
        cp = self.cp
        # A background encode (gboost/data/load.py) may still be writing these rows: wait for them (an
        # encoder's error is raised here and reaches the tile that waits for this chunk).
        self._wait_rows(b, stop=self._stop.is_set)
        sent.synchronize()  # the copy that last read this buffer is done
        n = b - a
        np.copyto(buf[:n], self.host_planes[a:b])
        x = cp.empty((n, 3, self.n_words), dtype=np.uint64)
        x.set(buf[:n], stream=self._stream)  # page-locked source: an asynchronous DMA
        sent.record(self._stream)
        self._lay_out(x, self._planes, a)
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
                if isinstance(self.error, InputError):  # the .bed's background encode failed: its own message
                    raise self.error
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
