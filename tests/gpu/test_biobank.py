"""At biobank scale: the progress's ETA, the GPU memory budget override, and (on a GPU) a
scan whose planes stream through a forced small budget giving the CPU engine's bytes.

The memory pre-check's tests are in tests/unit/test_load.py; the loader's reader and encoder in
tests/unit/test_io.py and tests/unit/test_encode.py.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

from gboost.engines.base import Engine
from gboost.data.load import load_study
from gboost.pipeline.progress import Progress, TextProgress
from gboost.pipeline.scan import ScanParams, screen
from gboost.data.simulate import simulate_study
from gboost.pipeline.tiles import SummaryPartial, TileResult


class Clock:
    """The scan's clock in these tests (gboost.pipeline.scan reads time.perf_counter): it moves only when a
    tile says it took time, so the ETA's arithmetic is checked whatever the machine's load."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class PairTimedEngine(Engine):
    """Screens nothing; a tile takes ``seconds_per_pair`` x its pairs (plus ``first_s`` for the
    first tile: a start-up cost, as a GPU's first launch has) on ``clock``."""

    name = "fake"

    def __init__(self, seconds_per_pair: float, tile: int, first_s: float = 0.0, clock=time):
        self.spp, self.tile, self.first_s, self.clock = seconds_per_pair, tile, first_s, clock
        self.seen = 0

    def describe(self):
        return "fake engine, time per tile proportional to its pairs"

    def prepare(self, study, thresholds, planes=None):
        pass

    def tile_snps(self):
        return self.tile

    def run_tile(self, t):
        self.clock.sleep(self.spp * t.n_pairs + (self.first_s if self.seen == 0 else 0.0))
        self.seen += 1
        empty = np.zeros(0, np.int64)
        return TileResult(t, empty, empty, np.zeros(0), np.zeros((0, 3, 3, 2), np.int64), t.n_pairs,
                          SummaryPartial.empty(t.i0, t.i1 - t.i0), SummaryPartial.empty(t.j0, t.j1 - t.j0))


@pytest.fixture(scope="module")
def wide_study():
    return load_study(simulate_study(1200, 20, 20, seed=21).source())


@pytest.mark.parametrize("part, tile, first_s", [(None, 60, 0.0), ((2, 3), 60, 0.0), (None, 250, 0.0),
                                                  (None, 60, 0.5)])
def test_the_eta_is_right_within_20_percent_from_the_first_10_percent_of_the_work(wide_study, part, tile, first_s,
                                                                                  monkeypatch):
    """The ETA weighs tiles by their pairs (x samples, the same for every tile of a scan): a
    diagonal tile holds half the pairs of the others and takes half the time, and the rows of a
    --part end where the pair count says, not the tile count. A first tile that carries a one-off
    cost (half the scan's time here: kernels compiled, planes going up) does not set the pace."""
    import gboost.pipeline.scan as scan_mod

    events = []
    clock = Clock()
    monkeypatch.setattr(scan_mod, "time", clock)
    engine = PairTimedEngine(4e-6, tile, first_s, clock=clock)
    screen(wide_study, ScanParams(device="cpu", tile=tile, part=part, calibration_pairs=0), engine=engine,
           progress=events.append)
    total = events[-1].elapsed
    assert events[-1].fraction == 1.0 and total > 0.5
    late = [e for e in events if e.fraction >= 0.1 and e.fraction < 1.0]
    assert len(late) >= 4
    errors = [abs(e.elapsed + e.eta - total) / total for e in late]
    assert max(errors) <= 0.2, (max(errors), len(late))


def test_the_eta_of_a_resumed_scan_counts_only_the_pairs_this_run_did():
    # 600 of 1000 pairs replayed from the checkpoint; this run did 100 in 10 s after its first tile
    ev = Progress(tiles_done=8, tiles_total=10, pairs_done=800, pairs_total=1000, elapsed=12.0,
                  base_pairs=700, base_elapsed=2.0)
    assert ev.pairs_per_s == 10.0 and ev.eta == 20.0
    assert Progress(1, 10, 100, 1000, 5.0).eta == 45.0  # no base: from the start
    assert Progress(10, 10, 1000, 1000, 5.0, 900, 4.0).eta == 0.0


def test_the_text_progress_shows_the_eta_of_the_pairs_done():
    class Tty:
        def __init__(self):
            self.text = ""

        def isatty(self):
            return True

        def write(self, s):
            self.text += s

        def flush(self):
            pass

    tty = Tty()
    bar = TextProgress(stream=tty, interval=0.0, n_samples=1000)
    bar(Progress(tiles_done=3, tiles_total=40, pairs_done=250, pairs_total=1000, elapsed=10.0))
    assert "25.0%" in tty.text and "ETA 00:30" in tty.text
    assert "2.5e+04 pair*samples/s" in tty.text


def test_gpu_memory_limit_comes_from_the_environment(monkeypatch):
    """GBOOST_GPU_MEMORY_LIMIT reaches GpuEngine(memory_limit_bytes=...): the bench forces the
    streaming path with it (bench/bench_biobank.py)."""
    import gboost.engines as engines
    import gboost.engines.devices as devices

    monkeypatch.setattr(devices, "gpu_available", lambda: (True, "1 x Some GPU"))
    monkeypatch.delenv("GBOOST_GPU_MEMORY_LIMIT", raising=False)
    assert engines.make_engine("gpu").memory_limit_bytes is None
    monkeypatch.setenv("GBOOST_GPU_MEMORY_LIMIT", "1.5e9")
    assert engines.make_engine("gpu").memory_limit_bytes == 1_500_000_000
    monkeypatch.setenv("GBOOST_GPU_MEMORY_LIMIT", "lots")
    with pytest.raises(RuntimeError, match="GBOOST_GPU_MEMORY_LIMIT"):
        engines.make_engine("gpu")


@pytest.mark.gpu
def test_a_scan_streaming_through_a_forced_gpu_budget_writes_the_cpu_engines_bytes(tmp_path, monkeypatch):
    """The command with GBOOST_GPU_MEMORY_LIMIT below twice the planes (so they stay on the host
    and stream block by block) writes what the CPU engine writes, byte for byte (run.json aside)."""
    from gboost.cli import main
    from gboost.engines import make_engine
    from gboost.readers.plink_bed import open_bfile

    prefix = str(tmp_path / "s")
    simulate_study(4000, 1000, 1000, seed=7, chromosomes=2, missing_rate=0.01, ld_block=20).write(prefix)
    study = load_study(open_bfile(prefix))
    budget = int(1.5 * study.planes.nbytes)  # planes stay resident only within half the budget
    monkeypatch.setenv("GBOOST_GPU_MEMORY_LIMIT", str(budget))
    engine = make_engine("gpu")
    engine.prepare(study, ScanParams().thresholds())
    try:
        assert engine.streaming, "the forced budget did not make the planes stream"
    finally:
        engine.close()
    common = ["--bfile", prefix, "--quiet", "--epi1", "1e-3", "--calibration-pairs", "0"]
    assert main(["scan", *common, "--out", str(tmp_path / "gpu"), "--device", "gpu"]) == 0
    monkeypatch.delenv("GBOOST_GPU_MEMORY_LIMIT")
    assert main(["scan", *common, "--out", str(tmp_path / "cpu"), "--device", "cpu"]) == 0
    for name in ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv"):
        assert (tmp_path / "gpu" / name).read_bytes() == (tmp_path / "cpu" / name).read_bytes(), name
