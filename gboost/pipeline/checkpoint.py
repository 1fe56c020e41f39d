"""Per-tile checkpoints of a long scan, so that --resume continues after kill -9, a power cut or
Cancel and ends with outputs identical to an uninterrupted run.

The ledger is one append-only file in the output directory. A writer thread appends the finished
tiles as framed records (magic, tile count, payload length, CRC-32, then the compact payload of
_RECORD: survivors without their tables, summary partials merged into runs of SNPs); a record cut
short by a crash fails its length or CRC check and is dropped on replay, and the file is truncated
back to the last good record. ``checkpoint.json`` beside it pins what the ledger belongs to (study
shape, SNP IDs, thresholds, tile size, part); resuming with anything else is refused rather than
silently mixing two scans.
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

from gboost.errors import InputError
from gboost.pipeline.tiles import SummaryPartial, Tile, TileResult, merge_runs

LEDGER = "checkpoint.ledger"
MANIFEST = "checkpoint.json"
# --perm's finished permutations (gboost/pipeline/permute.py PermLedger), under this ledger's manifest
PERM_LEDGER = "checkpoint.perm"
_HEAD = struct.Struct("<4sIQI")  # magic, tiles in the record (GBT1: the tile's index), payload bytes, crc32
_MAGIC = b"GBT2"
_MAGIC_V1 = b"GBT1"
_CLOSE = object()  # queued by close() to have the writer thread end the ledger itself (sync, close)
_BATCH_TILES = 256  # at most this many tiles in one record (bounds a record's size)  # one tile per record as an .npz (read on --resume of a scan begun by an older gboost)


def study_content_hash(study, planes=None) -> str:
    """SHA-256 of what the screen's results depend on, cheap enough for 500k SNPs: every SNP's
    genotype counts per class, the samples (IDs and status, in plane order) and the bit planes of
    every 16th SNP (and the last). Two studies with the same SNP IDs and class sizes but other
    genotypes differ in their counts or in the sampled planes (tests/invariants/test_nothing_lost.py).
    ``planes``: the study's gboost.data.planes.PlaneSource (None: its planes are complete)."""
    # Hashed once the background encoder is done (a new ledger hashes on its own thread), not
    # beside it: building the samples' text holds the GIL, which the encoder takes between its
    # blocks; at millions of samples the fingerprint beside it slowed the encoder several-fold and
    # the GPU waited for its first tile for as long.
    arr = study.planes if planes is None else planes.read()
    h = hashlib.sha256()
    # The arrays' own buffers, not tobytes() copies (60 MB of planes at 500k SNPs, copied holding
    # the GIL; hashlib releases it while hashing a buffer): the same bytes, the same digest.
    h.update(np.ascontiguousarray(study.counts, dtype=np.int64))
    _hash_samples(h, study.samples)
    p = study.n_snps
    if p:
        pick = np.unique(np.r_[np.arange(0, p, 16), p - 1])
        h.update(np.ascontiguousarray(arr[pick]))
    return h.hexdigest()


def _hash_samples(h, s) -> None:
    """Feed ``h`` the lines "FID IID status" of the samples joined by newlines (UTF-8), the bytes
    the first ledgers hashed, in runs of 32k samples with C-level joins: one generator of
    f-strings holds the GIL for seconds at millions of samples, the runs take far less and free it
    between runs."""
    status = s.status.tolist()
    text = {v: str(int(v)) for v in set(status)}  # a few distinct codes: str() once each
    fid, iid = s.fid.astype(str).tolist(), s.iid.astype(str).tolist()  # str, as the f-string gave
    run = 1 << 15
    for k in range(0, len(status), run):
        if k:
            h.update(b"\n")
        lines = zip(fid[k:k + run], iid[k:k + run], [text[v] for v in status[k:k + run]])
        h.update("\n".join(map(" ".join, lines)).encode())


def ids_sha256(ids) -> str:
    """SHA-256 of the IDs joined by newlines (UTF-8), as ``"\\n".join(map(str, ids))`` gives it,
    in pieces: one join of all IDs holds the GIL throughout (``str`` of each NumPy string), against
    the thread that feeds the GPU; ``tolist`` and runs of 32k IDs give the same bytes in a fraction
    of the time, with the GIL free between runs."""
    h = hashlib.sha256()
    items = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
    for k in range(0, len(items), 1 << 15):
        if k:
            h.update(b"\n")
        h.update("\n".join(map(str, items[k:k + (1 << 15)])).encode())
    return h.hexdigest()


BOOST = "boost"  # the case-control test (PLINK's --fast-epistasis boost); a QT scan's is "linear"


def trait_sha256(study) -> str:
    """SHA-256 of a quantitative trait and the SNPs' A1 orientation (what a QT tile depends on
    besides the genotypes)."""
    flip = study.a1_flip if study.a1_flip is not None else np.zeros(study.n_snps, bool)
    return hashlib.sha256(np.ascontiguousarray(study.trait, np.float64).tobytes()
                          + np.ascontiguousarray(flip, bool).tobytes()).hexdigest()


def _fingerprint(study, params, plan: dict | None = None, planes=None) -> dict:
    """What the ledger's tiles depend on: the study, the test and exactly its screen's settings
    (``params.checkpoint_settings()``: the case-control :class:`gboost.pipeline.params.ScreenParams`, or a
    quantitative trait's thresholds and part; engine and report options never change a tile's
    result). A QT scan adds its trait and A1s, and ``plan``: its engine's tiles (CPU row blocks or
    GPU tiles of one edge), since a record's tile is an index into that plan."""
    test, settings = params.checkpoint_settings()
    ids = ids_sha256(study.variants.snp)
    fp = {"test": test, "snps": int(study.n_snps), "cases": int(study.layout.n_case),
          "controls": int(study.layout.n_ctrl), "snp_ids_sha256": ids, "genotypes_sha256": study_content_hash(study, planes)}
    if test != BOOST:
        fp["trait_sha256"] = trait_sha256(study)
    if getattr(study, "rect", None) is not None:  # a candidate-set scan: which SNPs are rows, which columns
        fp["sets"] = study.rect.key()
    fp.update(settings)
    if plan is not None:
        fp["plan"] = plan
    return fp


_TESTS = {BOOST: "a case-control scan", "linear": "a quantitative trait's scan"}
_WHAT = {"snps": "the number of SNPs", "cases": "the number of cases", "controls": "the number of controls",
         "snp_ids_sha256": "the SNP IDs", "genotypes_sha256": "the genotypes or samples", "epi1": "--epi1",
         "epi2": "--epi2", "part": "--part", "trait_sha256": "the trait or A1 alleles",
         "plan": "the engine (--device) or its --tile", "covariates": "the covariates (--covar)",
         "sets": "the candidate sets (--set/--make-set, set-by-all/set-by-set)",
         "perm": "--perm, --perm-seed or the --within file"}


def _differences(saved: dict, now: dict) -> list[str]:
    # (keys of either: a QT scan's covariates are pinned only where it has some)
    keys = list(now) + [k for k in saved if k not in now]
    return ([_WHAT.get(k, k) for k in keys if k != "test" and saved.get(k) != now.get(k)]
            or ["the checkpoint's format"])


def _encode_v1(res: TileResult) -> bytes:
    """The first record format (one tile as an .npz); kept so tests can write an old ledger."""
    t = res.tile
    buf = io.BytesIO()
    np.savez(buf, tile=np.array([t.index, t.i0, t.i1, t.j0, t.j1], np.int64), n_valid=np.int64(res.n_valid),
             surv_i=res.surv_i, surv_j=res.surv_j, surv_ksa=res.surv_ksa, surv_tables=res.surv_tables,
             **{f"{side}_{f}": getattr(part, f) for side, part in (("r", res.rows), ("c", res.cols))
                for f in ("n_sig", "n_tot", "best", "best_partner")},
             starts=np.array([res.rows.start, res.cols.start], np.int64))
    return buf.getvalue()


def _decode_v1(payload: bytes) -> list[TileResult]:
    d = np.load(io.BytesIO(payload))
    idx, i0, i1, j0, j1 = (int(x) for x in d["tile"])
    parts = [SummaryPartial(int(d["starts"][k]), d[f"{side}_n_sig"], d[f"{side}_n_tot"], d[f"{side}_best"],
                            d[f"{side}_best_partner"]) for k, side in enumerate(("r", "c"))]
    return [TileResult(Tile(idx, i0, i1, j0, j1), d["surv_i"], d["surv_j"], d["surv_ksa"], d["surv_tables"],
                       int(d["n_valid"]), parts[0], parts[1])]


# The compact record (GBT2): one batch of finished tiles, as raw little-endian arrays, largest items
# first so every array is aligned in the payload:
#   counts      int64 [3]                 tiles k, survivors m, summary segments s
#   tiles       int64 [k, 7]              index, i0, i1, j0, j1, valid pairs, survivors of the tile
#   segments    int64 [s, 2]              first SNP, length (L = the lengths' sum)
#   ksa         float64 [m]
#   best        float64 [L]
#   i, j        int32 [m] each            survivors in tile order
#   n_sig, n_tot uint32 [L] each
#   partner     int32 [L]
# Survivors carry no tables: a pair's table is a pure function of the study's planes (the same
# integers on every engine; gboost/engines/cpu.py tables_of recounts them on replay), and the
# 144-byte table was 6/7 of a survivor's record. The tiles' summary partials are merged into
# disjoint segments (merges are order-free: gboost/pipeline/tiles.py), so a batch of one row block
# carries its rows once and its columns as one run, not two arrays per tile.
_RECORD = [("ksa", np.float64, "m"), ("best", np.float64, "L"), ("i", np.int32, "m"), ("j", np.int32, "m"),
           ("n_sig", np.uint32, "L"), ("n_tot", np.uint32, "L"), ("partner", np.int32, "L")]


def _segments(parts: list[SummaryPartial]) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The partials merged into disjoint runs of SNPs: (start, n_sig, n_tot, best, partner)."""
    return [(r.start, r.n_sig, r.n_tot, r.best, r.best_partner) for r in merge_runs(parts)]


def _encode(batch: list[TileResult]) -> bytes:
    """One GBT2 record of ``batch`` (see _RECORD)."""
    tiles = np.array([[r.tile.index, r.tile.i0, r.tile.i1, r.tile.j0, r.tile.j1, r.n_valid, len(r.surv_i)]
                      for r in batch], np.int64).reshape(-1, 7)
    segs = _segments([p for r in batch for p in (r.rows, r.cols)])
    cat = (lambda xs, dt: np.concatenate([np.asarray(x, dt) for x in xs]) if xs else np.zeros(0, dt))
    if max(max((r.tile.j1 for r in batch), default=0), max((s[0] + len(s[1]) for s in segs), default=0)) >= 2**31:
        raise ValueError("a checkpoint records SNP indices below 2^31 only")
    arrays = {"ksa": cat([r.surv_ksa for r in batch], np.float64),
              "i": cat([r.surv_i for r in batch], np.int32), "j": cat([r.surv_j for r in batch], np.int32),
              "n_sig": cat([s[1] for s in segs], np.uint32), "n_tot": cat([s[2] for s in segs], np.uint32),
              "best": cat([s[3] for s in segs], np.float64), "partner": cat([s[4] for s in segs], np.int32)}
    head = np.array([len(batch), len(arrays["i"]), len(segs)], np.int64)
    seg_table = np.array([[s[0], len(s[1])] for s in segs], np.int64).reshape(-1, 2)
    return b"".join([head.tobytes(), tiles.tobytes(), seg_table.tobytes()]
                    + [arrays[name].tobytes() for name, _, _ in _RECORD])


def _decode(payload: bytes, study, tables: bool = True, planes=None) -> list[TileResult]:
    """The tiles of one GBT2 record, survivors' tables recounted from ``study``'s planes, once
    ``planes`` (its PlaneSource; None: complete) has them all (not with ``tables`` False: a QT scan
    re-tests its survivors itself; the tables are then zeros). The
    batch's merged segments ride on its first tiles (two per tile; the rest get empty partials):
    the accumulator merges them, which gives what merging each tile's own partials gave."""
    from gboost.engines.cpu import tables_of

    k, m, s = (int(x) for x in np.frombuffer(payload, np.int64, 3))
    pos = 24
    tiles = np.frombuffer(payload, np.int64, 7 * k, pos).reshape(k, 7)
    pos += 56 * k
    seg_table = np.frombuffer(payload, np.int64, 2 * s, pos).reshape(s, 2)
    pos += 16 * s
    sizes = {"m": m, "L": int(seg_table[:, 1].sum())}
    a = {}
    for name, dt, size in _RECORD:
        n = sizes[size]
        a[name] = np.frombuffer(payload, dt, n, pos).copy()
        pos += n * np.dtype(dt).itemsize
    if pos != len(payload):
        raise ValueError("checkpoint record of the wrong size")
    i, j = a["i"].astype(np.int64), a["j"].astype(np.int64)
    if m and tables and planes is not None:
        planes.wait()  # (the pairs' SNPs lie anywhere)
    tables = (tables_of(study, i, j) if m and tables
              else np.broadcast_to(np.zeros((1, 3, 3, 2), np.int64), (m, 3, 3, 2)))
    parts, off = [], 0
    for start, n in seg_table.tolist():
        sl = slice(off, off + n)
        parts.append(SummaryPartial(start, a["n_sig"][sl].astype(np.int64), a["n_tot"][sl].astype(np.int64),
                                    a["best"][sl], a["partner"][sl].astype(np.int64)))
        off += n
    out, first = [], 0
    for t, (idx, i0, i1, j0, j1, n_valid, n_surv) in enumerate(tiles.tolist()):
        sl = slice(first, first + n_surv)
        first += n_surv
        rows, cols = (parts[2 * t + h] if 2 * t + h < len(parts) else SummaryPartial.empty(0, 0) for h in (0, 1))
        out.append(TileResult(Tile(idx, i0, i1, j0, j1), i[sl], j[sl], a["ksa"][sl], tables[sl], n_valid, rows, cols))
    return out


def _edited(directory: Path, why: str) -> InputError:
    return InputError(Path(directory) / LEDGER, f"holds a record gboost did not write ({why}: edited or from "
                                                "another build?); use --overwrite to start a new scan")


def _check_record(payload: bytes, p: int) -> None:
    """A GBT2 payload's counts and SNP indices within the study of ``p`` SNPs, read before
    :func:`_decode` recounts the survivors' tables from the planes."""
    if len(payload) < 24:
        raise ValueError("a record shorter than its counts")
    k, m, s = (int(x) for x in np.frombuffer(payload, np.int64, 3))
    if min(k, m, s) < 0 or 24 + 56 * k + 16 * s > len(payload):
        raise ValueError("counts that do not fit the record")
    seg = np.frombuffer(payload, np.int64, 2 * s, 24 + 56 * k).reshape(s, 2)
    if s and (seg.min() < 0 or (seg[:, 0] + seg[:, 1]).max() > p):
        raise ValueError("a summary run outside the study's SNPs")
    L = int(seg[:, 1].sum())
    need = 24 + 56 * k + 16 * s + m * (8 + 4 + 4) + L * (8 + 4 + 4 + 4)
    if need != len(payload):
        raise ValueError("a record of the wrong size")
    pos = 24 + 56 * k + 16 * s + 8 * m + 8 * L
    ij = np.frombuffer(payload, np.int32, 2 * m, pos)
    if m and (ij.min() < 0 or ij.max() >= p):
        raise ValueError("a pair's SNP index outside the study")


def _check_tile(r: TileResult, plan: list | None, p: int, seen: set, directory: Path) -> None:
    """A replayed tile is the plan's tile of its index, its survivors are its own pairs and its
    summary counts are counts of the study's SNPs."""
    t = r.tile
    if plan is not None and not (0 <= t.index < len(plan) and plan[t.index] == t):
        raise _edited(directory, f"tile {t.index} is not a tile of this scan's plan")
    if t.index in seen:
        raise _edited(directory, f"tile {t.index} twice")
    seen.add(t.index)
    if not 0 <= r.n_valid <= t.n_pairs:
        raise _edited(directory, f"tile {t.index} counts {r.n_valid} pairs of {t.n_pairs}")
    i, j = np.asarray(r.surv_i), np.asarray(r.surv_j)
    if len(i) and ((i < t.i0).any() or (i >= t.i1).any() or (j < t.j0).any() or (j >= t.j1).any() or (j <= i).any()):
        raise _edited(directory, f"tile {t.index} lists a pair outside it")
    for part in (r.rows, r.cols):
        n_sig, n_tot, partner = np.asarray(part.n_sig), np.asarray(part.n_tot), np.asarray(part.best_partner)
        if len(n_tot) and (part.start < 0 or part.start + len(n_tot) > p or (n_sig < 0).any() or (n_sig > n_tot).any()
                           or (n_tot >= p).any() or (partner < -1).any() or (partner >= p).any()):
            raise _edited(directory, f"tile {t.index}'s summary counts are not counts of this study's SNPs")


def _intact_records(data: bytes) -> Iterator[tuple[int, bytes, bytes, int]]:
    """(end offset, magic, payload, tiles) of each intact record; stops at the first torn or foreign one."""
    pos = 0
    while pos + _HEAD.size <= len(data):
        magic, tiles, size, crc = _HEAD.unpack_from(data, pos)
        payload = data[pos + _HEAD.size: pos + _HEAD.size + size]
        if magic not in (_MAGIC, _MAGIC_V1) or len(payload) != size or zlib.crc32(payload) != crc:
            return
        pos += _HEAD.size + size
        yield pos, magic, payload, (1 if magic == _MAGIC_V1 else tiles)


def tiles_recorded(directory: str | os.PathLike) -> int:
    """Finished tiles an interrupted scan in ``directory`` has recorded intact (what --resume keeps)."""
    path = Path(directory) / LEDGER
    return sum(rec[3] for rec in _intact_records(path.read_bytes())) if path.exists() else 0


class Ledger:
    """Checkpoint of one scan in ``directory``; see the module docstring.

    ``resume=False`` starts a new ledger (an old one is discarded); ``resume=True`` keeps the tiles
    of a matching interrupted run. ``batch_seconds`` bounds how much finished work a kill -9 can
    lose (a record gathers the tiles finished within that time; each record is handed to the
    kernel as soon as it is encoded), ``sync_every`` how much a power cut can (fsync at most that
    often). Records are framed, so a torn write is never mistaken for data.
    """

    def __init__(self, directory: str | os.PathLike, study, params, *, resume: bool, plan: dict | None = None,
                 sync_every: float = 2.0, batch_seconds: float = 0.5, planes=None):
        t = time.perf_counter()
        self.dir = Path(directory)
        self.study = study  # replay recounts the survivors' tables from its planes
        # ... read through their source (gboost.data.planes.PlaneSource: a background encode may still
        # write them), as the fingerprint's sampled planes are; None: the study's planes are complete.
        self.planes = planes
        self.test = params.checkpoint_settings()[0]  # BOOST or a QT scan's "linear" (no tables recounted)
        self._fingerprint = None
        self._fingerprinting = None
        # Seconds the caller's thread spent in the ledger (this, replay, record, flush: run.json's
        # "checkpoint" stage) and seconds the writer thread worked beside the scan.
        self.seconds = 0.0
        self.writer_seconds = 0.0
        self.records = 0
        self.sync_every = sync_every
        self.batch_seconds = batch_seconds
        self.tile: int | None = None
        self._fh = None
        self._last_sync = 0.0
        self._good_bytes = 0
        self._thread = None
        self._queue = None
        self._error: OSError | None = None
        self._recorded: set[int] = set()  # tile indices in the ledger or queued for it
        self._manifest = None  # (tile, tiles) that start() left to the writer thread
        self._saved_tiles = None  # a resumed manifest's tile count: the plan it was written for
        self._plan: list | None = None  # the tiles start() was given: what replayed records must be
        # A finished scan's last records, sync and close left to the writer thread while the caller
        # formats the outputs (gboost/cli/__init__.py sets it; see flush and close).
        self.finish_in_background = False
        self._finish_later = False
        self._closing = None  # the writer thread that is ending the ledger (join() waits for it)
        manifest = self.dir / MANIFEST
        if resume and manifest.exists():
            self._fingerprint = _fingerprint(study, params, plan, planes)  # compared with the saved one now
        else:
            # A new ledger: the fingerprint (hashing sampled planes and every SNP ID, a fraction of
            # a second at 500k SNPs) is only needed in the manifest, which the writer thread puts on
            # disk before the first record; computed on a thread meanwhile, off the caller's time.
            from concurrent.futures import ThreadPoolExecutor

            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gboost-ledger-fp")
            self._fingerprinting = pool.submit(_fingerprint, study, params, plan, planes)
            pool.shutdown(wait=False)
        if resume and manifest.exists():
            old_qt = False
            try:
                saved = json.loads(manifest.read_text())
                old_qt = isinstance(saved, dict) and saved.get("phenotype") == "quantitative"
                saved_fp, saved_tile = saved["fingerprint"], saved["tile"]
                saved_tiles = saved.get("tiles")
                if not isinstance(saved_fp, dict) or type(saved_tile) is not int or saved_tile < 1 \
                        or (saved_tiles is not None and type(saved_tiles) is not int):
                    raise TypeError
            except (ValueError, KeyError, TypeError, OSError):
                if old_qt:  # (an older gboost saved a QT scan's arrays whole, not by tile)
                    raise InputError(manifest, "is the checkpoint of an older gboost's quantitative trait scan, "
                                               "which this version cannot take up; use --overwrite to start a new "
                                               "scan") from None
                raise InputError(manifest, "is not a gboost checkpoint (damaged?); use --overwrite to start "
                                           "a new scan") from None
            saved_fp = {"test": BOOST, **saved_fp}  # (written before QT scans had ledgers: case-control)
            if saved_fp["test"] != self.fingerprint["test"]:
                was, now = (_TESTS.get(x, str(x)) for x in (saved_fp["test"], self.fingerprint["test"]))
                raise InputError(self.dir, f"the interrupted scan here was {was}, not {now}; use --overwrite to "
                                           "start a new scan")
            if saved_fp != self.fingerprint:
                what = ", ".join(_differences(saved_fp, self.fingerprint))
                raise InputError(self.dir, f"the interrupted scan here was of another study or other settings "
                                           f"({what} differ); use --overwrite to start a new scan")
            self.tile = saved_tile
            self._saved_tiles = saved_tiles
        elif not resume:
            for name in (LEDGER, MANIFEST, PERM_LEDGER):
                (self.dir / name).unlink(missing_ok=True)
        self.seconds += time.perf_counter() - t

    @property
    def fingerprint(self) -> dict:
        """What the ledger's tiles depend on (:func:`_fingerprint`), waited for if still hashing."""
        if self._fingerprint is None:
            self._fingerprint = self._fingerprinting.result()
        return self._fingerprint

    @staticmethod
    def exists(directory: str | os.PathLike) -> bool:
        return (Path(directory) / MANIFEST).exists()

    def start(self, *, tile: int, tiles: int) -> None:
        """Pin the manifest: now when the fingerprint is known (a resumed ledger), else by the
        writer thread before it appends the first record (the file order a crash sees is the
        same: the manifest, then records)."""
        t = time.perf_counter()
        if self._saved_tiles is not None and self._saved_tiles != tiles:
            raise InputError(self.dir / MANIFEST, f"the checkpoint's tile size {self.tile} gives {tiles} tiles, not "
                                                  f"the {self._saved_tiles} it was written for (edited or damaged); "
                                                  "use --overwrite to start a new scan")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.tile = tile
        self._manifest = (tile, tiles)
        if self._fingerprint is not None or self._fingerprinting.done():
            self._write_manifest()
        else:
            self._start_writer()
        self.seconds += time.perf_counter() - t

    def _write_manifest(self) -> None:
        tile, tiles = self._manifest
        self._manifest = None
        tmp = self.dir / (MANIFEST + ".tmp")
        try:
            tmp.write_text(json.dumps({"fingerprint": self.fingerprint, "tile": tile, "tiles": tiles}, indent=1))
            os.replace(tmp, self.dir / MANIFEST)
        except OSError as exc:  # a full disk: leave nothing that would block a rerun, name the file
            tmp.unlink(missing_ok=True)
            raise OSError(exc.errno, exc.strerror or str(exc), str(tmp)) from None

    def _start_writer(self) -> None:
        if self._thread is None:
            import queue
            import threading

            self._queue = queue.Queue(maxsize=256)  # bounded: a slow disk slows the scan, never fills RAM
            self._thread = threading.Thread(target=self._writer, name="gboost-ledger", daemon=True)
            self._thread.start()

    def replay(self) -> Iterator[TileResult]:
        """Tiles already finished, in file order; a torn trailing record is dropped."""
        t = time.perf_counter()
        path = self.dir / LEDGER
        good = 0
        if path.exists():
            for good, magic, payload, _ in _intact_records(path.read_bytes()):
                tiles = self._checked(magic, payload)
                self._recorded.update(r.tile.index for r in tiles)
                self.seconds += time.perf_counter() - t
                yield from tiles
                t = time.perf_counter()
        self._good_bytes = good
        self._open()
        self.seconds += time.perf_counter() - t

    def plan(self, tiles: list) -> None:
        """The scan's tiles (``plan_tiles``): every replayed record must be one of them."""
        self._plan = tiles

    def _checked(self, magic: bytes, payload: bytes) -> list[TileResult]:
        """One record's tiles, each checked against the plan and the study before anything of it
        is used: a record framed with a true CRC may still have been edited, and its SNP indices
        reach compiled code that reads the planes without bounds checks."""
        p = int(self.study.n_snps)
        try:
            if magic == _MAGIC_V1:
                tiles = _decode_v1(payload)
            else:
                _check_record(payload, p)
                tiles = _decode(payload, self.study, tables=self.test == BOOST, planes=self.planes)
        except (ValueError, KeyError, IndexError, OSError, EOFError) as exc:
            raise _edited(self.dir, str(exc)) from None
        for r in tiles:
            _check_tile(r, self._plan, p, self._recorded, self.dir)
        return tiles

    def _open(self) -> None:
        if self._fh is None:
            self._fh = open(self.dir / LEDGER, "ab")
            self._fh.truncate(self._good_bytes)  # drop a torn tail before appending
            self._fh.seek(self._good_bytes)

    def record(self, res: TileResult) -> None:
        """Queue a finished tile for the ledger. A writer thread takes whatever has queued up as
        one record (compact: see _RECORD) and appends it, so the scan never waits for the disk
        (inline writes, one per tile, took a large share of a large scan's command), and no tile
        waits for a batch to fill: a tile is on its way to the disk as soon as the writer is free.
        A kill before a queued tile reaches the file only means it is screened again on
        --resume; framing and CRCs drop a torn tail."""
        t = time.perf_counter()
        self._open()
        if self._error is not None:
            raise self._error
        if res.tile.index in self._recorded:  # a tile computed twice (a rerun Dask task) is recorded once:
            return  # its partials would otherwise be merged twice into a record's runs
        self._recorded.add(res.tile.index)
        self._start_writer()
        self._queue.put(res)
        self.seconds += time.perf_counter() - t

    def _writer(self) -> None:
        import queue

        if self._manifest is not None:
            try:
                self._write_manifest()  # before any record reaches the ledger
            except Exception as exc:  # noqa: BLE001 - reported by the next record() or by flush() / close()
                # (An InputError is the study's own: its background encode failed while hashed.)
                self._error = (exc if isinstance(exc, (OSError, InputError))
                               else OSError(None, str(exc), str(self.dir / MANIFEST)))
        done = False
        while not done:
            # A record gathers the tiles that finish within batch_seconds of its first one: a fast
            # GPU finishes dozens of tiles a second, and their column partials, merged into runs,
            # then cost a few bytes per SNP instead of 20 per SNP per tile.
            batch = [self._queue.get()]
            deadline = time.monotonic() + self.batch_seconds
            while batch[-1] is not None and batch[-1] is not _CLOSE and len(batch) < _BATCH_TILES:
                left = deadline - time.monotonic()
                try:
                    batch.append(self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait())
                except queue.Empty:
                    break
            done = batch[-1] is None or batch[-1] is _CLOSE
            closing = batch[-1] is _CLOSE
            batch = [r for r in batch if r is not None and r is not _CLOSE]
            if closing:  # the last batch, then sync and close here (close(): the caller went on)
                self._write_batch(batch)
                t = time.perf_counter()
                try:
                    if self._error is None:
                        self._fh.flush()
                        os.fsync(self._fh.fileno())
                except OSError as exc:
                    self._error = OSError(exc.errno, exc.strerror or str(exc), str(self.dir / LEDGER))
                finally:
                    self._fh.close()
                    self.writer_seconds += time.perf_counter() - t
                continue
            self._write_batch(batch)

    def _write_batch(self, batch: list) -> None:
        """Append ``batch`` as one record (on the writer thread)."""
        if not batch or self._error is not None:
            return
        t = time.perf_counter()
        try:
            payload = _encode(batch)
            self._fh.write(_HEAD.pack(_MAGIC, len(batch), len(payload), zlib.crc32(payload)) + payload)
            self._fh.flush()  # into the page cache: a kill -9 of this process loses nothing written
            now = time.monotonic()
            if now - self._last_sync >= self.sync_every:
                os.fsync(self._fh.fileno())
                self._last_sync = now
        except (OSError, ValueError) as exc:  # a full disk: reported by the next record() or by close()
            self._error = OSError(getattr(exc, "errno", None), getattr(exc, "strerror", None) or str(exc),
                                  str(self.dir / LEDGER))
        self.writer_seconds += time.perf_counter() - t
        self.records += 1

    def _drain(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def flush(self, *, wait: bool = True) -> None:
        """Wait for the queued tiles to be written, then sync the file. ``wait=False`` (a finished
        screen) with ``finish_in_background`` set: nothing now; close() then hands the last
        records, the sync and the close to the writer thread."""
        if not wait and self.finish_in_background:
            self._finish_later = True
            return
        t = time.perf_counter()
        try:
            self._drain()
            if self._fh is not None:
                self._fh.flush()
                os.fsync(self._fh.fileno())
        finally:
            self.seconds += time.perf_counter() - t
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def close(self) -> None:
        """Write what is queued, sync, close (re-raising a write error of the writer thread). After
        ``flush(wait=False)`` the writer thread does it while the caller goes on: a kill meanwhile
        leaves what a kill during the screen leaves (--resume screens the tiles not yet in the
        ledger again; a torn tail is dropped), and ``join()`` waits for it."""
        if self._finish_later and self._thread is not None and self._error is None:
            t = time.perf_counter()
            self._finish_later = False
            self._queue.put(_CLOSE)
            self._closing, self._thread = self._thread, None  # the writer closes self._fh
            self.seconds += time.perf_counter() - t
            return
        self._finish_later = False
        if self._closing is not None:  # handed to the writer already: join() waits for it
            return
        if self._fh is not None or self._thread is not None:
            try:
                self.flush()
            finally:
                if self._fh is not None:
                    self._fh.close()
                    self._fh = None

    def join(self) -> OSError | None:
        """Wait for a close handed to the writer thread (see close); returns its write error, if
        any (the caller decides: once the outputs are written, the ledger is gone anyway)."""
        if self._closing is not None:
            self._closing.join()
            self._closing, self._fh = None, None
        err, self._error = self._error, None
        return err
