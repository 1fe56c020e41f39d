"""Per-tile checkpoints of a long scan, so that --resume continues after kill -9, a power cut or
Cancel and ends with outputs identical to an uninterrupted run.

The ledger is one append-only file in the output directory. Each finished tile is a framed record
(magic, tile index, payload length, CRC-32, then the tile's survivors and summary partials as an
uncompressed .npz); a record cut short by a crash fails its length or CRC check and is dropped on
replay, and the file is truncated back to the last good record. ``checkpoint.json`` beside it pins
what the ledger belongs to (study shape, SNP IDs, thresholds, tile size, part); resuming with
anything else is refused rather than silently mixing two scans.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import time
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np

from gboost.engines.base import SummaryPartial, Tile, TileResult
from gboost.errors import InputError

LEDGER = "checkpoint.ledger"
MANIFEST = "checkpoint.json"
_HEAD = struct.Struct("<4sIQI")  # magic, tile index, payload bytes, crc32 of payload
_MAGIC = b"GBT1"


def study_content_hash(study) -> str:
    """SHA-256 of what the screen's results depend on, cheap enough for 500k SNPs: every SNP's
    genotype counts per class, the samples (IDs and status, in plane order) and the bit planes of
    every 16th SNP (and the last). Two studies with the same SNP IDs and class sizes but other
    genotypes differ in their counts or in the sampled planes (tests/test_nothing_lost.py)."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(study.counts, dtype=np.int64).tobytes())
    s = study.samples
    h.update("\n".join(f"{f} {i} {int(st)}" for f, i, st in zip(s.fid, s.iid, s.status)).encode())
    p = study.n_snps
    if p:
        pick = np.unique(np.r_[np.arange(0, p, 16), p - 1])
        h.update(np.ascontiguousarray(study.planes[pick]).tobytes())
    return h.hexdigest()


def _fingerprint(study, params) -> dict:
    ids = hashlib.sha256("\n".join(map(str, study.variants.snp)).encode()).hexdigest()
    return {"snps": int(study.n_snps), "cases": int(study.layout.n_case), "controls": int(study.layout.n_ctrl),
            "snp_ids_sha256": ids, "genotypes_sha256": study_content_hash(study), "epi1": params.epi1,
            "epi2": params.epi2, "part": list(params.part) if params.part else None}


_WHAT = {"snps": "the number of SNPs", "cases": "the number of cases", "controls": "the number of controls",
         "snp_ids_sha256": "the SNP IDs", "genotypes_sha256": "the genotypes or samples", "epi1": "--epi1",
         "epi2": "--epi2", "part": "--part"}


def _differences(saved: dict, now: dict) -> list[str]:
    return [_WHAT.get(k, k) for k in now if saved.get(k) != now[k]] or ["the checkpoint's format"]


def _encode(res: TileResult) -> bytes:
    t = res.tile
    buf = io.BytesIO()
    np.savez(buf, tile=np.array([t.index, t.i0, t.i1, t.j0, t.j1], np.int64), n_valid=np.int64(res.n_valid),
             surv_i=res.surv_i, surv_j=res.surv_j, surv_ksa=res.surv_ksa, surv_tables=res.surv_tables,
             **{f"{side}_{f}": getattr(part, f) for side, part in (("r", res.rows), ("c", res.cols))
                for f in ("n_sig", "n_tot", "best", "best_partner")},
             starts=np.array([res.rows.start, res.cols.start], np.int64))
    return buf.getvalue()


def _decode(payload: bytes) -> TileResult:
    d = np.load(io.BytesIO(payload))
    idx, i0, i1, j0, j1 = (int(x) for x in d["tile"])
    parts = [SummaryPartial(int(d["starts"][k]), d[f"{side}_n_sig"], d[f"{side}_n_tot"], d[f"{side}_best"],
                            d[f"{side}_best_partner"]) for k, side in enumerate(("r", "c"))]
    return TileResult(Tile(idx, i0, i1, j0, j1), d["surv_i"], d["surv_j"], d["surv_ksa"], d["surv_tables"],
                      int(d["n_valid"]), parts[0], parts[1])


def _intact_records(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(end offset, payload) of each intact record; stops at the first torn or foreign one."""
    pos = 0
    while pos + _HEAD.size <= len(data):
        magic, _, size, crc = _HEAD.unpack_from(data, pos)
        payload = data[pos + _HEAD.size: pos + _HEAD.size + size]
        if magic != _MAGIC or len(payload) != size or zlib.crc32(payload) != crc:
            return
        pos += _HEAD.size + size
        yield pos, payload


def tiles_recorded(directory: str | os.PathLike) -> int:
    """Finished tiles an interrupted scan in ``directory`` has recorded intact (what --resume keeps)."""
    path = Path(directory) / LEDGER
    return sum(1 for _ in _intact_records(path.read_bytes())) if path.exists() else 0


class Ledger:
    """Checkpoint of one scan in ``directory``; see the module docstring.

    ``resume=False`` starts a new ledger (an old one is discarded); ``resume=True`` keeps the tiles
    of a matching interrupted run. ``sync_every`` bounds how much finished work a power cut can
    lose (fsync at most that often; records are framed, so a torn write is never mistaken for
    data).
    """

    def __init__(self, directory: str | os.PathLike, study, params, *, resume: bool, sync_every: float = 2.0):
        self.dir = Path(directory)
        self.fingerprint = _fingerprint(study, params)
        self.sync_every = sync_every
        self.tile: int | None = None
        self._fh = None
        self._last_sync = 0.0
        self._good_bytes = 0
        self._thread = None
        self._queue = None
        self._error: OSError | None = None
        manifest = self.dir / MANIFEST
        if resume and manifest.exists():
            try:
                saved = json.loads(manifest.read_text())
                saved_fp, saved_tile = saved["fingerprint"], int(saved["tile"])
                if not isinstance(saved_fp, dict):
                    raise TypeError
            except (ValueError, KeyError, TypeError, OSError):
                raise InputError(manifest, "is not a gboost checkpoint (damaged?); use --overwrite to start "
                                           "a new scan") from None
            if saved_fp != self.fingerprint:
                what = ", ".join(_differences(saved_fp, self.fingerprint))
                raise InputError(self.dir, f"the interrupted scan here was of another study or other settings "
                                           f"({what} differ); use --overwrite to start a new scan")
            self.tile = saved_tile
        elif not resume:
            for name in (LEDGER, MANIFEST):
                (self.dir / name).unlink(missing_ok=True)

    @staticmethod
    def exists(directory: str | os.PathLike) -> bool:
        return (Path(directory) / MANIFEST).exists()

    def start(self, *, tile: int, tiles: int) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.tile = tile
        tmp = self.dir / (MANIFEST + ".tmp")
        try:
            tmp.write_text(json.dumps({"fingerprint": self.fingerprint, "tile": tile, "tiles": tiles}, indent=1))
            os.replace(tmp, self.dir / MANIFEST)
        except OSError as exc:  # a full disk: leave nothing that would block a rerun, name the file
            tmp.unlink(missing_ok=True)
            raise OSError(exc.errno, exc.strerror or str(exc), str(tmp)) from None

    def replay(self) -> Iterator[TileResult]:
        """Tiles already finished, in file order; a torn trailing record is dropped."""
        path = self.dir / LEDGER
        good = 0
        if path.exists():
            for good, payload in _intact_records(path.read_bytes()):
                yield _decode(payload)
        self._good_bytes = good
        self._open()

    def _open(self) -> None:
        if self._fh is None:
            self._fh = open(self.dir / LEDGER, "ab")
            self._fh.truncate(self._good_bytes)  # drop a torn tail before appending
            self._fh.seek(self._good_bytes)

    def record(self, res: TileResult) -> None:
        """Queue a finished tile for the ledger. A writer thread encodes and appends it, so the
        scan never waits for the disk (at 500k SNPs the inline writes cost 15 s of a 54 s
        command: issue 24). A kill before a queued record reaches the disk only means that tile
        is screened again on --resume; framing and CRCs still drop a torn tail."""
        self._open()
        if self._error is not None:
            raise self._error
        if self._thread is None:
            import queue
            import threading

            self._queue = queue.Queue(maxsize=256)  # bounded: a slow disk slows the scan, never fills RAM
            self._thread = threading.Thread(target=self._writer, name="gboost-ledger", daemon=True)
            self._thread.start()
        self._queue.put(res)

    def _writer(self) -> None:
        while True:
            res = self._queue.get()
            if res is None:
                return
            if self._error is not None:
                continue
            try:
                payload = _encode(res)
                self._fh.write(_HEAD.pack(_MAGIC, res.tile.index, len(payload), zlib.crc32(payload)) + payload)
                now = time.monotonic()
                if now - self._last_sync >= self.sync_every:
                    self._fh.flush()
                    os.fsync(self._fh.fileno())
                    self._last_sync = now
            except OSError as exc:  # a full disk: reported by the next record() or by close()
                self._error = OSError(exc.errno, exc.strerror or str(exc), str(self.dir / LEDGER))

    def _drain(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def flush(self) -> None:
        self._drain()
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def close(self) -> None:
        """Write what is queued, sync, close (re-raising a write error of the writer thread)."""
        if self._fh is not None:
            try:
                self.flush()
            finally:
                self._fh.close()
                self._fh = None
