"""Streamed SNP blocks decoded on the GPU from the .bed's own bytes, where the host's encoder has not
reached them yet.

At biobank scale the host encodes a block of planes slower than the GPU screens it: with millions of
samples the first tile waited seconds for the encoder's first block (beside the page-locking of the
same rows), while four threads read those bytes from the page cache several times faster
(bench/bench_biobank.py times the command at that scale). So a block whose rows the encoder has not
written is read here instead — a chunk of .bed rows at a time into one of two page-locked staging
buffers, copied up, decoded by one kernel (``gb_decode_bed``, boost_common.cu; the GPU tests hold it
equal to ``encode.decode_bed_rows``, which the CPU tests check against ``encode.bed_encode``) and
laid out in the kernels' layout. The counts of the decoded rows are checked against the counting
pass's (a .bed changed since is refused, as the encoder refuses it). The host's encoder goes on
beside: the host planes still serve the checkpoint, the exact tests and every later block it has
reached.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gboost.data.encode import WORD_BITS
from gboost.engines.gpu.pinning import GateHold
from gboost.readers.plink_bed import BED_READERS

# .bed bytes a chunk at most (the staging buffers' size): at 2.32M samples 115 SNPs.
DECODE_CHUNK_BYTES = 64 << 20
# The decode's memory on the GPU per plane bit of a chunk's row: the raw row (a quarter byte a file
# sample) and the three planes (3/8 byte): at most 1 byte. A chunk takes at most a 32nd of the
# runner's budget (a forced test budget of a few MB: a few rows a chunk).
DECODE_TEMP_BYTES_PER_BIT = 1
_ROWS_MAX = 65535  # a chunk's rows are the kernel's grid.y
_THREADS = 256


def decode_columns(cp, cols: np.ndarray):
    """``encode.bed_columns`` (the .bed column of each plane bit, -1 padding) as the kernel reads
    it: int32, transposed to [bit of the word][word]."""
    return cp.asarray(np.ascontiguousarray(cols.reshape(-1, WORD_BITS).T, dtype=np.int32))


def decode_rows(kernel, raw, cols_t, n_words: int, w_ctrl: int, planes, counts) -> None:
    """Raw .bed rows ``raw`` (``(n, row_bytes)`` uint8, on the device) into ``planes`` (``(n, 3,
    n_words)`` uint64) and their counts into ``counts`` (``(n, 3, 2)`` int64, zeroed here) by
    ``gb_decode_bed`` (``kernel``), on the current stream: what ``encode.decode_bed_rows`` gives."""
    n = raw.shape[0]
    counts.fill(0)
    if n == 0:
        return
    kernel((-(-n_words // _THREADS), n, 1), (_THREADS, 1, 1),
           (raw, np.int64(raw.shape[1]), np.int32(n_words), np.int32(w_ctrl), cols_t, planes, counts))


class BedDecoder:
    """One GPU's decoder of a study's .bed rows (``gboost.data.load.BedRows``) into plane blocks."""

    def __init__(self, runner, bed_rows):
        cp = runner.cp
        self.cp, self.runner, self.bed = cp, runner, bed_rows
        cols = bed_rows.columns()
        self.cols_t = decode_columns(cp, cols)
        self.n_words = len(cols) // WORD_BITS
        self.kernel = runner.k["gb_decode_bed"]
        row = bed_rows.row_bytes
        per_row = DECODE_TEMP_BYTES_PER_BIT * len(cols)
        self.step = max(1, min(DECODE_CHUNK_BYTES // max(1, row), runner.budget // 32 // per_row, _ROWS_MAX))
        size = self.step * row
        self.stage = [np.frombuffer(cp.cuda.alloc_pinned_memory(max(1, size)), np.uint8, size).reshape(self.step, row)
                      for _ in range(2)]
        self.sent = [cp.cuda.Event(disable_timing=True) for _ in range(2)]
        self.pool = ThreadPoolExecutor(BED_READERS, thread_name_prefix=f"gboost-decode{runner.device_id}")
        self.decoded_bytes = 0  # .bed bytes decoded here
        self.seconds = 0.0  # host time in decode(): reading, queuing, the counts' check

    def decode(self, a: int, b: int, out, off: int, gate=None) -> None:
        """Planes of SNPs [a, b) into ``out`` (kernel layout) from SNP ``off`` on, on the current
        stream; returns once they are queued and their counts checked. ``gate``: the pinner's
        (pinning.CopyGate), held for the whole block. Held only while each chunk was queued, it let
        the pinner start a registration during each chunk's read, which the chunk's copy then
        waited for: the first block of a study too large for the GPU then took several times longer."""
        with GateHold(gate) as held:
            held.hold(True)
            self._decode(a, b, out, off)

    def _decode(self, a: int, b: int, out, off: int) -> None:
        cp, t0 = self.cp, time.perf_counter()
        stream = cp.cuda.get_current_stream()
        counts = cp.empty((b - a, 3, 2), dtype=np.int64)
        for k, c0 in enumerate(range(a, b, self.step)):
            c1 = min(b, c0 + self.step)
            buf, sent = self.stage[k % 2], self.sent[k % 2]
            sent.synchronize()  # the copy that last read this buffer is done
            self.bed.read(c0, c1, buf[: c1 - c0], self.pool)
            raw = cp.empty((c1 - c0, buf.shape[1]), dtype=np.uint8)
            raw.set(buf[: c1 - c0], stream=stream)  # page-locked source: an asynchronous DMA
            sent.record(stream)
            planes = cp.empty((c1 - c0, 3, self.n_words), dtype=np.uint64)
            decode_rows(self.kernel, raw, self.cols_t, self.n_words, self.bed.w_ctrl, planes,
                        counts[c0 - a : c1 - a])
            self.runner.lay_out(planes, out, off + c0 - a)
            del raw, planes
        self.bed.check(a, cp.asnumpy(counts, stream=stream))  # waits for this block's decode
        self.decoded_bytes += (b - a) * self.stage[0].shape[1]
        self.seconds += time.perf_counter() - t0

    def close(self) -> None:
        try:
            for ev in self.sent:  # no copy may still read a staging buffer when it is freed
                ev.synchronize()
        except Exception:  # noqa: BLE001 - after a CUDA error the context may be unusable
            pass
        self.pool.shutdown(wait=True)
