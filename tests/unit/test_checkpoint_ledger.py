"""The compact checkpoint ledger (gboost/pipeline/checkpoint.py): a batch of tiles written as one record and
read back gives the accumulator that adding the tiles themselves gives (survivors, recounted
tables, per-SNP summary, counts), whatever the batching; records of the older .npz format still
resume; a record is several times smaller than the .npz it replaces."""
from __future__ import annotations

import numpy as np
import pytest

from gboost.pipeline import checkpoint as C
from gboost.engines.cpu import CpuEngine
from gboost.data.load import load_study
from gboost.pipeline.accumulate import Accumulator
from gboost.pipeline.scan import ScanParams, finalize, scan_thresholds, screen
from gboost.pipeline.tiles import plan_tiles
from gboost.data.simulate import PlantedPair, simulate_study
from gboost.data.study import QCOptions


@pytest.fixture(scope="module")
def study():
    sim = simulate_study(260, 120, 140, seed=31, chromosomes=2, missing_rate=0.02,
                         planted=[PlantedPair(3, 200, "threshold", 8.0)])
    return load_study(sim.source(), QCOptions())


@pytest.fixture(scope="module")
def tiles(study):
    eng = CpuEngine(tile=48)
    eng.prepare(study, scan_thresholds(ScanParams(epi1=0.02, epi2=0.2)))
    return [eng.run_tile(t) for t in plan_tiles(study.n_snps, 48)]


def accumulate(study, results) -> Accumulator:
    acc = Accumulator(study.n_snps)
    for r in results:
        acc.add(r)
    return acc


def same_accumulators(a: Accumulator, b: Accumulator) -> None:
    for x, y in zip(a.survivors(), b.survivors()):
        np.testing.assert_array_equal(x, y)
    for f in ("n_sig", "n_tot", "best", "best_partner"):
        np.testing.assert_array_equal(getattr(a.summary, f), getattr(b.summary, f))
    assert (a.n_valid, a.pairs_done, a.tiles_done) == (b.n_valid, b.pairs_done, b.tiles_done)


@pytest.mark.parametrize("batch", [1, 2, 5, 1000])
def test_batches_read_back_as_the_tiles_themselves(study, tiles, batch):
    assert sum(len(r.surv_i) for r in tiles) > 50  # survivors whose tables must be recounted
    rng = np.random.default_rng(batch)
    order = rng.permutation(len(tiles))  # tiles finish in any order on several GPUs
    shuffled = [tiles[k] for k in order]
    back = []
    for k in range(0, len(shuffled), batch):
        back += C._decode(C._encode(shuffled[k:k + batch]), study)
    assert [r.tile for r in back] == [r.tile for r in shuffled]
    same_accumulators(accumulate(study, back), accumulate(study, shuffled))


def test_a_record_is_a_fraction_of_the_npz(study, tiles):
    with_survivors = [r for r in tiles if len(r.surv_i)]
    compact = sum(len(C._encode([r])) for r in with_survivors)
    npz = sum(len(C._encode_v1(r)) for r in with_survivors)
    assert compact * 3 < npz, (compact, npz)
    # One row block's tiles in one record carry its rows once and its columns as one run.
    row0 = [r for r in tiles if r.tile.i0 == 0]
    assert len(C._segments([p for r in row0 for p in (r.rows, r.cols)])) == 1
    assert len(C._encode(row0)) < sum(len(C._encode([r])) for r in row0)


def test_an_older_ledger_resumes_to_the_same_result(study, tiles, tmp_path):
    params = ScanParams(epi1=0.02, epi2=0.2, device="cpu", tile=48)
    want = finalize(study, params, _screen(study, params))
    led = C.Ledger(tmp_path, study, params, resume=False)
    led.start(tile=48, tiles=len(tiles))
    led.close()  # the manifest written, the writer thread ended (it was left running: a thread at the suite's exit)
    with open(tmp_path / C.LEDGER, "wb") as fh:  # the first half of the tiles, as gboost 0.1 wrote them
        for r in tiles[: len(tiles) // 2]:
            payload = C._encode_v1(r)
            fh.write(C._HEAD.pack(C._MAGIC_V1, r.tile.index, len(payload), C.zlib.crc32(payload)) + payload)
    assert C.tiles_recorded(tmp_path) == len(tiles) // 2
    led = C.Ledger(tmp_path, study, params, resume=True)
    got = finalize(study, params, _screen(study, params, led))
    led.close()
    assert C.tiles_recorded(tmp_path) == len(tiles)  # old records kept, the rest appended compactly
    for f in ("i", "j", "ksa", "stat", "df", "p"):
        np.testing.assert_array_equal(getattr(got.screened, f), getattr(want.screened, f))
    np.testing.assert_array_equal(got.screened.tables, want.screened.tables)
    for f in ("n_sig", "n_tot", "best", "best_partner"):
        np.testing.assert_array_equal(getattr(got.summary, f), getattr(want.summary, f))


def test_the_ledger_times_the_callers_share(study, tmp_path):
    params = ScanParams(epi1=0.02, epi2=0.2, device="cpu", tile=48)
    led = C.Ledger(tmp_path, study, params, resume=False)
    _screen(study, params, led)
    led.close()
    assert led.records >= 1 and led.seconds > 0 and led.writer_seconds > 0
    assert C.tiles_recorded(tmp_path) == len(plan_tiles(study.n_snps, 48))


def _screen(study, params, ledger=None):
    return screen(study, params, engine=CpuEngine(tile=48), checkpoint=ledger)


def test_a_tile_recorded_twice_counts_once(study, tiles, tmp_path):
    """A rerun Dask task hands the same tile over twice; the accumulator counts it once, and so
    must the ledger, whose records merge their tiles' partials."""
    params = ScanParams(epi1=0.02, epi2=0.2, device="cpu", tile=48)
    led = C.Ledger(tmp_path, study, params, resume=False)
    led.start(tile=48, tiles=len(tiles))
    for r in tiles[:5] + tiles[2:4] + tiles[5:]:
        led.record(r)
    led.close()
    assert C.tiles_recorded(tmp_path) == len(tiles)
    led = C.Ledger(tmp_path, study, params, resume=True)
    same_accumulators(accumulate(study, led.replay()), accumulate(study, tiles))
    led.record(tiles[0])  # already in the ledger: not written again
    led.close()
    assert C.tiles_recorded(tmp_path) == len(tiles)


def test_the_snp_id_hash_is_the_one_of_the_joined_ids():
    """ids_sha256 hashes in runs of 32k IDs (the GIL free between them) the bytes one join gave, so
    checkpoints written before it still resume."""
    import hashlib

    from gboost.pipeline.checkpoint import ids_sha256

    rng = np.random.default_rng(3)
    many = np.array([f"rs{k}" if k % 7 else f"é{k}" for k in rng.integers(0, 10**9, 70000)])
    for ids in (many, many[:0], many[:1], many[:1 << 15], many[:(1 << 15) + 1], many.astype(object),
                np.array([1, "a b", 2.5], dtype=object), ["x", "y"]):
        assert ids_sha256(ids) == hashlib.sha256("\n".join(map(str, ids)).encode()).hexdigest()


@pytest.mark.parametrize("background", [False, True])
def test_a_finished_screens_ledger_ends_on_its_writer_thread(study, tiles, tmp_path, background):
    """flush(wait=False) + close() with finish_in_background (gboost/cli/__init__.py): close returns at once
    and the writer thread writes the last records, syncs and closes; join() waits for it and the
    ledger then replays every tile, as a ledger closed by the caller does."""
    import threading

    params = ScanParams(epi1=0.02, epi2=0.2, device="cpu", tile=48)
    led = C.Ledger(tmp_path, study, params, resume=False, batch_seconds=5.0)
    led.finish_in_background = background
    led.start(tile=48, tiles=len(tiles))
    list(led.replay())
    gate = threading.Event()
    real = C._encode
    try:  # the writer is held in its first record until close() has returned
        C._encode = lambda batch: (gate.wait(30), real(batch))[1]
        for r in tiles:
            led.record(r)
        if not background:
            gate.set()  # (flush waits for the writer here)
        led.flush(wait=False)
        if background:
            led.close()
            assert led._closing is not None and led._closing.is_alive()  # the writer is still at it
            gate.set()
            assert led.join() is None
        else:
            led.close()
    finally:
        gate.set()
        C._encode = real
    assert led._fh is None and led._thread is None and led._closing is None
    assert C.tiles_recorded(tmp_path) == len(tiles)
    again = C.Ledger(tmp_path, study, params, resume=True)
    again.start(tile=48, tiles=len(tiles))
    same_accumulators(accumulate(study, list(again.replay())), accumulate(study, tiles))
    again.close()


def test_the_genotype_hash_is_the_one_of_the_arrays_bytes(study):
    """study_content_hash hashes the arrays' own buffers (no tobytes copies): the digest of their
    bytes as before, so checkpoints written before it still resume."""
    import hashlib

    h = hashlib.sha256()
    h.update(np.ascontiguousarray(study.counts, dtype=np.int64).tobytes())
    s = study.samples
    h.update("\n".join(f"{f} {i} {int(st)}" for f, i, st in zip(s.fid, s.iid, s.status)).encode())
    pick = np.unique(np.r_[np.arange(0, study.n_snps, 16), study.n_snps - 1])
    h.update(np.ascontiguousarray(study.planes[pick]).tobytes())
    assert C.study_content_hash(study) == h.hexdigest()


@pytest.mark.parametrize("n", [0, 1, 3, (1 << 15) + 5])
def test_the_samples_hash_the_same_bytes_as_the_first_ledgers(n):
    """_hash_samples (runs of C-level joins) feeds the bytes the first ledgers hashed, across a
    run's boundary, with non-ASCII IDs and every status code."""
    import hashlib
    from types import SimpleNamespace

    rng = np.random.default_rng(n)
    fid = np.array([f"fam{k}é" for k in range(n)], dtype=str)
    iid = np.array([f"ind_{k}" for k in range(n)], dtype=str)
    status = rng.choice(np.array([-9, 0, 1, 2], dtype=np.int8), n)
    first = hashlib.sha256("\n".join(f"{f} {i} {int(st)}" for f, i, st in zip(fid, iid, status)).encode())
    h = hashlib.sha256()
    C._hash_samples(h, SimpleNamespace(fid=fid, iid=iid, status=status))
    assert h.hexdigest() == first.hexdigest()


def test_the_genotype_hash_waits_for_the_encoder_before_hashing_anything(study, monkeypatch):
    """The fingerprint's Python work (the samples' text) holds the GIL, which the background encoder
    needs between blocks: it starts only once the encoder is done (beside it, the
    encoder ran 6x slower at 2.32M samples)."""
    import threading

    from gboost.data.planes import PlaneSource

    ready = PlaneSource(study.planes, 0)
    touched = threading.Event()
    hash_samples = C._hash_samples
    monkeypatch.setattr(C, "_hash_samples", lambda h, s: (touched.set(), hash_samples(h, s)))
    out = []
    worker = threading.Thread(target=lambda: out.append(C.study_content_hash(study, ready)))
    worker.start()
    worker.join(0.3)
    assert worker.is_alive() and not touched.is_set()  # waiting, nothing hashed yet
    ready.advance(study.n_snps)
    worker.join(5)
    assert touched.is_set() and out == [C.study_content_hash(study)]
