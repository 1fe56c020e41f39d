"""Finalize's host work overlapping the screen (gboost.pipeline.scan.HostWork): same outputs, chunked exact
tests by row block, clean cancel and errors. A stand-in GPU engine (name "gpu", tiles computed beforehand by
the CPU engine, so no numba runs on the scan's thread while it screens) gets the overlap."""
import threading
import time

import numpy as np
import pytest

from gboost.pipeline import hostwork
from gboost.pipeline.hostwork import HostWork
from gboost.pipeline.workers import ScanWorkers
from gboost.engines.base import Engine
from gboost.engines.cpu import CpuEngine
from gboost.errors import ScanCancelled
from gboost.outputs.results import format_epi_cc, format_marginal_tsv, format_pairs_tsv, format_summary, render_outputs
from gboost.data.load import load_study
from gboost.pipeline.scan import ScanParams, finalize, run_scan, scan_thresholds, screen
from gboost.pipeline.tiles import part_rows, plan_tiles
from gboost.data.simulate import PlantedPair, simulate_study

TILE = 16


@pytest.fixture(scope="module")
def study():
    sim = simulate_study(150, 200, 220, seed=5, chromosomes=2, missing_rate=0.01,
                         planted=[PlantedPair(3, 90, "threshold", 8.0)])
    return load_study(sim.source())


def params(**kw):
    return ScanParams(**{"epi1": 0.01, "device": "cpu", "tile": TILE, "calibration_pairs": 3000, **kw})


class FakeGpuEngine(Engine):
    """Replays tiles the CPU engine computed beforehand; ``on_tile(k)`` runs before the k-th yield."""

    name = "gpu"
    overlaps_host_work = True  # as GpuEngine: host work runs beside its screen

    def __init__(self, study, prm, on_tile=None):
        cpu = CpuEngine(tile=TILE)
        cpu.prepare(study, scan_thresholds(prm))
        rows = part_rows(study.n_snps, *prm.part) if prm.part else None
        self.results = {(t.i0, t.j0): cpu.run_tile(t) for t in plan_tiles(study.n_snps, TILE, rows)}
        self.on_tile = on_tile
        self.closed = False

    def describe(self):
        return "fake GPU"

    def prepare(self, study, thresholds, planes=None):
        pass

    def tile_snps(self):
        return TILE

    def run_tile(self, tile):
        return self.results[(tile.i0, tile.j0)]

    def run_tiles(self, tiles, cancel=None):
        for k, tile in enumerate(tiles):
            if cancel is not None and cancel():
                return
            if self.on_tile is not None:
                self.on_tile(k, len(tiles))
            yield self.run_tile(tile)

    def close(self):
        self.closed = True


def host_threads():
    return [t for t in threading.enumerate() if t.name.startswith("gboost-host")]


def wait_until(cond, timeout=30.0):
    end = time.monotonic() + timeout
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)
    return bool(cond())


@pytest.fixture
def chunks(monkeypatch):
    """A record of each row-block job: (its first SNP1, its survivors, its thread)."""
    seen = []
    real = hostwork._sorted_block

    def spy(p, i, j, ksa, tables, **kw):
        out = real(p, i, j, ksa, tables, **kw)
        seen.append((int(out[0][0]) if len(out[0]) else -1, len(out[0]), threading.current_thread().name))
        return out

    monkeypatch.setattr(hostwork, "_sorted_block", spy)
    return seen


def outputs(res):
    """The files by each formatter, and by the writer's path (render_outputs: what a background
    screen prepared, the SNP texts and marginal.tsv, is used there)."""
    files = {k: v for k, v in render_outputs(res).items() if k != "run.json"}
    return {"epi.cc": format_epi_cc(res), "summary": format_summary(res), "pairs": format_pairs_tsv(res),
            "marginal": format_marginal_tsv(res), **files}


def test_overlapped_outputs_are_identical_and_exact_tests_run_by_row_block_during_the_screen(study, chunks):
    prm = params()
    serial = run_scan(study, prm)
    assert "host_overlapped" not in serial.timings
    assert chunks and all(name == threading.current_thread().name for *_, name in chunks)  # CPU: no thread
    chunks.clear()

    during = []  # row blocks finished before the screen's last tile: proof of overlap
    engine = FakeGpuEngine(study, prm, on_tile=lambda k, n: k == n - 1 and during.append(wait_until(lambda: chunks)))
    with ScanWorkers(study) as workers:  # run_pipeline's way (the CLI's and the GUI's)
        sr = screen(study, prm, engine=engine, workers=workers)
        assert workers.host is not None and engine.closed
        # The screen's result is a plain record: the host work running beside it is the workers'.
        assert not any(isinstance(v, (HostWork, ScanWorkers)) for v in vars(sr).values())
        res = finalize(study, prm, sr, workers=workers)
        assert during == [True]
        assert workers.host is None and not host_threads()
    # made beside the screen only: the SNP texts and marginal.tsv, each row block's output rows
    assert set(res.prepared) == {"outputs", "formatted"} and not serial.prepared
    assert len(res.prepared["formatted"]) == -(-study.n_snps // TILE)

    assert outputs(res) == outputs(serial)
    for f in ("i", "j", "ksa", "stat", "df", "p", "converged", "tables"):
        a, b = getattr(res.screened, f), getattr(serial.screened, f)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), f
    for f in ("n_sig", "n_tot", "best", "best_partner"):
        assert getattr(res.summary, f).tobytes() == getattr(serial.summary, f).tobytes()
    assert res.marginal_stat.tobytes() == serial.marginal_stat.tobytes()
    assert res.marginal_p.tobytes() == serial.marginal_p.tobytes()
    assert res.calibration.lam == serial.calibration.lam
    assert res.calibration.stat.tobytes() == serial.calibration.stat.tobytes()
    assert res.n_valid == serial.n_valid

    # One job per row block of tiles, all on the one background thread, each holding its block's
    # survivors (sorted, disjoint SNP1 ranges) and together every survivor once.
    n_blocks = -(-study.n_snps // TILE)
    assert len(chunks) == n_blocks
    sizes = [n for _, n, _ in chunks]
    assert sum(sizes) == len(res.screened) > 50
    firsts = [i for i, n, _ in chunks if n]
    assert firsts == sorted(firsts)  # blocks completed in row order (one engine, tiles in plan order)
    assert all(i // TILE == k for k, (i, n, _) in enumerate(chunks) if n)
    assert {name for *_, name in chunks} == {"gboost-host_0"}
    assert {"prepare", "screen", "exact", "marginal", "calibration", "total", "host_overlapped"} <= set(res.timings)
    assert res.timings["host_overlapped"] > 0


def test_run_scan_overlaps_with_a_gpu_like_engine_and_not_with_parts(study, chunks):
    prm = params(epi1=1e-3)
    cov = (np.random.default_rng(1).normal(size=(study.n_samples, 1)), ["AGE"])
    res = run_scan(study, prm, engine=FakeGpuEngine(study, prm), covariates=cov)
    assert "host_overlapped" in res.timings
    serial = run_scan(study, prm, covariates=cov)
    assert outputs(res) == outputs(serial)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(res.screened.adj, serial.screened.adj))
    # A --part is finalized by `gboost merge`, not here: nothing starts in the background.
    part = params(part=(1, 2))
    with ScanWorkers(study) as workers:
        screen(study, part, engine=FakeGpuEngine(study, part), workers=workers)
        assert workers.host is None and not host_threads()


@pytest.mark.parametrize("kw", [{"max_r2": 0.001}, {"min_distance_kb": 60000.0}, {"epi1": 0.5}])
def test_rows_formatted_beside_the_screen_with_rows_set_aside_give_the_same_files(study, kw):
    """The row blocks' pairs.tsv rows are formatted beside the screen before --max-r2 and
    --min-distance set pairs aside (and with most pairs reported): the writer splices the rows it
    keeps, in STAT order, into the same files as the serial scan's."""
    prm = params(**kw)
    res = run_scan(study, prm, engine=FakeGpuEngine(study, prm))
    serial = run_scan(study, prm)
    assert "formatted" in res.prepared
    assert outputs(res) == outputs(serial)
    if "epi1" not in kw:  # the option set some reported pairs aside
        assert 0 < res.n_reported < int((res.screened.p <= prm.epi1).sum())


@pytest.mark.slow
@pytest.mark.parametrize("epi1", [1e-3, 0.05])
def test_rows_formatted_beside_the_screen_on_an_ld_rich_study(epi1):
    """The row blocks' .epi.cc and pairs.tsv rows formatted beside the screen, on a study shaped
    like a chip (LD blocks, 1 % missing calls, X, unknown sex, rare alleles; the PLINK parity
    tests' shape): the same files as the serial scan, whose .epi.cc and .summary equal plink1.9's
    (tests/parity/test_plink_parity_ld.py)."""
    from tests.helpers import ld_study

    ld = load_study(ld_study(n_snps=1600, n_cases=300, n_controls=300, seed=4).source())
    prm = params(epi1=epi1)
    res = run_scan(ld, prm, engine=FakeGpuEngine(ld, prm))
    serial = run_scan(ld, prm)
    assert "formatted" in res.prepared and len(res.screened) > 20
    assert outputs(res) == outputs(serial)


def test_resume_from_a_checkpoint_with_overlap_gives_the_same_outputs(study, chunks, tmp_path):
    from gboost.pipeline.checkpoint import Ledger

    prm = params()
    reference = outputs(run_scan(study, prm))
    led = Ledger(tmp_path, study, prm, resume=False)
    seen = []
    with pytest.raises(ScanCancelled):
        screen(study, prm, engine=FakeGpuEngine(study, prm), checkpoint=led, progress=seen.append,
               cancel=lambda: len(seen) >= 30, workers=ScanWorkers(study))
    led.close()
    assert not host_threads()
    chunks.clear()
    led = Ledger(tmp_path, study, prm, resume=True)
    with ScanWorkers(study) as workers:
        sr = screen(study, prm, engine=FakeGpuEngine(study, prm), checkpoint=led, workers=workers)
        led.close()
        res = finalize(study, prm, sr, workers=workers)
    assert outputs(res) == reference
    assert sum(n for _, n, _ in chunks) == len(res.screened)
    # The accumulator still holds every survivor, as the ledger and --part need.
    assert len(sr.acc.survivors()[0]) == len(res.screened)


def test_cancel_leaves_no_background_thread(study, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    ran = []
    real = hostwork.marginal_tests
    dropped = threading.Event()

    class Pool(ThreadPoolExecutor):
        def shutdown(self, wait=True, *, cancel_futures=False):
            super().shutdown(wait=False, cancel_futures=cancel_futures)  # the jobs not started dropped
            dropped.set()
            super().shutdown(wait=wait)

    def held_marginal(*a, **kw):  # busy in the background when the cancel comes, until the close
        assert dropped.wait(120), "the host work was never closed"
        return real(*a, **kw)

    monkeypatch.setattr(hostwork, "ThreadPoolExecutor", Pool)
    monkeypatch.setattr(hostwork, "marginal_tests", held_marginal)
    monkeypatch.setattr("gboost.stats.calibration.calibrate", lambda *a, **kw: ran.append("calibration"))
    prm = params()
    engine = FakeGpuEngine(study, prm)
    with pytest.raises(ScanCancelled):
        screen(study, prm, engine=engine, cancel=lambda: bool(host_threads()), workers=ScanWorkers(study))
    assert not host_threads()
    assert ran == []  # the queued job never started
    assert engine.closed


def test_a_failing_screen_stops_the_background_work(study):
    prm = params()

    def boom(k, n):
        if k == 2:
            raise RuntimeError("device lost")

    with pytest.raises(RuntimeError, match="device lost"):
        screen(study, prm, engine=FakeGpuEngine(study, prm, on_tile=boom), workers=ScanWorkers(study))
    assert not host_threads()


@pytest.mark.parametrize("where", ["exact", "marginal"])
def test_an_error_in_the_background_surfaces_from_finalize(study, chunks, monkeypatch, where):
    def fail(*a, **kw):
        raise ValueError(f"bad {where}")

    if where == "exact":
        calls = []

        real = hostwork._sorted_block

        def fail_second(*args, **kw):
            calls.append(1)
            if len(calls) == 2:
                fail()
            return real(*args, **kw)

        monkeypatch.setattr(hostwork, "_sorted_block", fail_second)
    else:
        monkeypatch.setattr(hostwork, "marginal_tests", fail)
    prm = params()
    workers = ScanWorkers(study)
    sr = screen(study, prm, engine=FakeGpuEngine(study, prm), workers=workers)
    with pytest.raises(ValueError, match=f"bad {where}"):
        finalize(study, prm, sr, workers=workers)
    assert not host_threads()


def test_finalize_without_the_screens_params_runs_serially(study):
    prm = params()
    workers = ScanWorkers(study)
    sr = screen(study, prm, engine=FakeGpuEngine(study, prm), workers=workers)
    other = params(allelic=True)
    res = finalize(study, other, sr, workers=workers)
    assert "host_overlapped" not in res.timings and not host_threads()
    assert res.marginal_df == 1


def test_background_kernels_release_the_gil():
    from gboost.stats import exact, marginal

    assert exact._exact_batch.targetoptions.get("nogil")
    assert marginal._sf_many.targetoptions.get("nogil")
    assert hostwork._fold_loop.targetoptions.get("nogil")


def test_tiles_out_of_row_order_give_the_same_outputs(study, chunks):
    """Row blocks that complete out of order (several GPUs, Dask workers) wait for the blocks
    before them; the result is the serial one, byte for byte."""
    prm = params()
    serial = run_scan(study, prm)
    chunks.clear()

    class Reversed(FakeGpuEngine):
        def run_tiles(self, tiles, cancel=None):
            yield from super().run_tiles(list(reversed(list(tiles))), cancel)

    res = run_scan(study, prm, engine=Reversed(study, prm))
    assert "host_overlapped" in res.timings
    firsts = [i for i, n, _ in chunks if n]
    assert firsts == sorted(firsts, reverse=True)  # the last row block finished first
    assert outputs(res) == outputs(serial)
    for f in ("i", "j", "ksa", "stat", "df", "p", "converged", "tables"):
        assert getattr(res.screened, f).tobytes() == getattr(serial.screened, f).tobytes(), f


def _block(rows, p=1000, seed=0):
    rng = np.random.default_rng(seed)
    i = np.sort(rng.choice(np.arange(*rows), 5, replace=False)).astype(np.int64)
    j = i + 1 + rng.integers(0, 50, 5)
    m = len(i)
    return (i, j, rng.random(m), rng.random(m), np.full(m, 4, np.int64), rng.random(m), np.ones(m, bool),
            rng.integers(0, 9, (m, 3, 3, 2)))


def test_sorted_sink_joins_blocks_in_row_order_and_grows():
    sink = hostwork._SortedSink()
    for r in range(0, 100, 10):
        sink.plan(r, 1)  # a projection of ~1 survivor per pair: far too few, so the arrays must grow
    blocks = {r: _block((r, r + 10), seed=r) for r in range(0, 100, 10)}
    for r in (30, 0, 10, 20, 50, 40, 90, 60, 70):  # 80 never comes
        sink.put(r, blocks[r])
    parts = sink.parts()
    assert sink.n == 5 * 8 and len(parts) == 2  # 0..70 joined; 90 waits for 80
    joined = hostwork._join_blocks(parts, 1000)
    want = hostwork._join_blocks([blocks[r] for r in (0, 10, 20, 30, 40, 50, 60, 70, 90)], 1000)
    for g, w in zip(joined, want):
        np.testing.assert_array_equal(g, w)
    assert np.all(np.diff(joined[0] * 1000 + joined[1]) > 0)
    # The head is views of the sink's arrays: finalize copies nothing.
    assert all(np.shares_memory(a, b) for a, b in zip(parts[0], sink._fields))


def test_sorted_sink_grows_geometrically_when_its_projection_falls_short():
    """Row 0 holds nearly all pairs but few survivors, later rows the survivors: every projection
    falls short, yet the arrays are reallocated O(log n) times, not once a block."""
    sink = hostwork._SortedSink()
    rows = list(range(0, 2000, 10))
    sink.plan(0, 10**9)
    for r in rows[1:]:
        sink.plan(r, 1)
    allocations = set()
    for r in rows:
        m = 3 if r == 0 else 2000
        i = np.full(m, r, np.int64)
        block = (i, np.arange(r + 1, r + 1 + m, dtype=np.int64), np.zeros(m), np.zeros(m), np.full(m, 4, np.int64),
                 np.zeros(m), np.ones(m, bool), np.zeros((m, 3, 3, 2), np.int64))
        sink.put(r, block)
        allocations.add(len(sink._fields[0]))  # the room only ever grows: one value an allocation
    assert sink.n == 3 + 2000 * (len(rows) - 1)
    assert len(allocations) <= 15  # ~log_1.5(4e5 / 1e3) + a few; one a block would be 200
