"""Ctrl-C of a quantitative trait scan keeps its promise: "finished tiles are checkpointed: rerun
with --resume" is true, and the resumed scan writes one run's files byte for byte. A Ctrl-C lands
where it lands: during a row block's statistics (raised as the kernel returns), or inside the fold
of a block or the addition of a tile into the totals, which must then run whole."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from gboost.pipeline.checkpoint import LEDGER, MANIFEST, tiles_recorded
from gboost.cli import main
from gboost.engines import qt_cpu
from gboost.engines.qt_cpu import QTCPUEngine
from gboost.engines.qt_cpu import QTTotals, tile_pairs_per_snp
from gboost.engines.qt_gpu import QTGPUEngine
from gboost.data.inputs import open_input
from gboost.outputs.qt_results import render_qt_outputs
from gboost.data.load import load_study
from gboost.pipeline.qt_scan import QTParams, run_qt_scan
from gboost.data.simulate import simulate_qt_study

FILES = ("pairs.epi.qt", "pairs.epi.qt.summary", "pairs.tsv", "marginal.tsv")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("qtint") / "q")
    simulate_qt_study(70, 260, seed=9, missing_rate=0.03, ld_block=6, ld_rho=0.95,
                      effects=[(2, 40, 0.6), (10, 60, 0.5)]).write(prefix)
    return prefix


def _ctrl_c_at(calls: list, k: int) -> None:
    """A real SIGINT at the k-th call (the handler runs at Python's next check, as a Ctrl-C's does)."""
    calls.append(1)
    if len(calls) == k:
        signal.raise_signal(signal.SIGINT)


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(qt_cpu, "_ZBUF_BYTES", 8 * 70 * 4)  # CPU row blocks of 4 SNPs: 18 blocks


@pytest.mark.parametrize("where", ["_stat_block", "fold_cols"])
def test_cpu_engine_interrupted_anywhere_in_a_tile_records_the_finished_tiles(prefix, tmp_path, monkeypatch,
                                                                              small_blocks, where):
    study = load_study(open_input(bfile=prefix))
    params = QTParams(epi1=0.01, epi2=0.1)
    want = render_qt_outputs(run_qt_scan(study, params, engine=QTCPUEngine()))
    real = getattr(qt_cpu, where)
    calls: list = []

    def interrupted(*a):
        if where == "fold_cols":  # inside the fold: after fold_rows changed the totals
            _ctrl_c_at(calls, 4)
        real(*a)
        if where == "_stat_block":  # during the statistics: the kernel then returns
            _ctrl_c_at(calls, 4)

    monkeypatch.setattr(qt_cpu, where, interrupted)
    out = tmp_path / "o"
    with pytest.raises(KeyboardInterrupt):
        run_qt_scan(study, params, engine=QTCPUEngine(), checkpoint_dir=out)
    assert tiles_recorded(out) == 3  # the tiles finished before the Ctrl-C (the 4th, cut short, is not one)
    monkeypatch.setattr(qt_cpu, where, real)
    stats = []
    monkeypatch.setattr(qt_cpu, "_stat_block", lambda *a: (stats.append(1), real_stat(*a)))
    got = render_qt_outputs(run_qt_scan(study, params, engine=QTCPUEngine(), checkpoint_dir=out, resume=True))
    assert len(stats) == 18 - 3  # the recorded tiles are not screened again
    for name in FILES:
        assert got[name] == want[name], name


real_stat = qt_cpu._stat_block


def test_gpu_engine_interrupted_inside_a_tiles_addition_records_it_whole(prefix, tmp_path, monkeypatch):
    study = load_study(open_input(bfile=prefix))
    params = QTParams(epi1=0.01, epi2=0.1)
    want = render_qt_outputs(run_qt_scan(study, params, engine=QTCPUEngine()))
    real_add = QTTotals.add
    calls: list = []

    def add(self, res):  # QTTotals.add with a Ctrl-C between the summary and the kept pairs
        self.summary.merge_partial(res.rows)
        self.summary.merge_partial(res.cols)
        _ctrl_c_at(calls, 3)
        rows, cols = tile_pairs_per_snp(res.tile)
        self.pairs[res.tile.i0:res.tile.i1] += rows
        self.pairs[res.tile.j0:res.tile.j1] += cols
        self.surv_i.append(res.surv_i)
        self.surv_j.append(res.surv_j)
        self.n_valid += res.n_valid
        self.tiles_done.add(res.tile.index)

    monkeypatch.setattr(QTTotals, "add", add)
    out = tmp_path / "o"
    with pytest.raises(KeyboardInterrupt):
        run_qt_scan(study, params, engine=QTGPUEngine(tile=16, xp=np), checkpoint_dir=out)
    assert tiles_recorded(out) == 3  # the third tile's addition ran whole, and was recorded
    monkeypatch.setattr(QTTotals, "add", real_add)
    got = render_qt_outputs(run_qt_scan(study, params, engine=QTGPUEngine(tile=16, xp=np), checkpoint_dir=out,
                                        resume=True))
    for name in FILES:
        assert got[name] == want[name], name


def test_cli_ctrl_c_of_a_qt_scan_then_resume_writes_one_runs_files(prefix, tmp_path, monkeypatch, small_blocks,
                                                                   capsys):
    one = tmp_path / "one"
    assert main(["scan", "--bfile", prefix, "--out", str(one), "--quiet", "--device", "cpu", "--epi1", "0.01"]) == 0
    calls: list = []

    def interrupted(*a):
        real_stat(*a)
        _ctrl_c_at(calls, 5)

    monkeypatch.setattr(qt_cpu, "_stat_block", interrupted)
    out = tmp_path / "o"
    capsys.readouterr()
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--quiet", "--device", "cpu", "--epi1", "0.01"]) == 130
    assert "finished tiles are checkpointed: rerun with --resume" in capsys.readouterr().err
    assert (out / MANIFEST).exists() and (out / LEDGER).exists()  # the promise
    monkeypatch.setattr(qt_cpu, "_stat_block", real_stat)
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--epi1", "0.01", "--resume"]) == 0
    assert "--resume: taking up the interrupted scan" in capsys.readouterr().err
    for name in FILES:
        assert (out / name).read_bytes() == (one / name).read_bytes(), name
    assert not (out / MANIFEST).exists() and not (out / LEDGER).exists()


@pytest.mark.slow  # gboost in a subprocess
def test_a_real_sigint_to_the_command_then_resume(tmp_path):
    """The command in a process of its own, SIGINT sent once its first row block is reported."""
    prefix = str(tmp_path / "big")
    simulate_qt_study(6000, 300, seed=9, missing_rate=0.03, effects=[(2, 40, 0.6)]).write(prefix)
    env = {**os.environ, "PYTHONPATH": ROOT}
    cmd = [sys.executable, "-m", "gboost.cli", "scan", "--bfile", prefix, "--device", "cpu"]
    out = tmp_path / "o"
    proc = subprocess.Popen([*cmd, "--out", str(out)], stderr=subprocess.PIPE, env=env)
    seen = b""
    while not seen.endswith(b" pairs") or b"% of" not in seen:  # the progress line after the first row block:
        c = proc.stderr.read(1)
        assert c, seen.decode()
        seen += c
    proc.send_signal(signal.SIGINT)  # then the next block's statistics run (seconds)
    err = (seen + proc.stderr.read()).decode()
    rc = proc.wait()
    if rc == 0:
        pytest.skip("the scan finished before the interrupt arrived")
    assert rc == 130, err
    assert "finished tiles are checkpointed: rerun with --resume" in err
    assert (out / MANIFEST).exists() and (out / LEDGER).exists(), err
    assert subprocess.run([*cmd, "--out", str(out), "--resume", "--quiet"], env=env).returncode == 0
    one = tmp_path / "one"
    assert subprocess.run([*cmd, "--out", str(one), "--quiet"], env=env).returncode == 0
    for name in FILES:
        assert (out / name).read_bytes() == (one / name).read_bytes(), name


def test_a_checkpoint_of_one_test_is_not_taken_up_by_the_other(prefix, tmp_path, small_blocks, capsys):
    """One ledger format for both tests, its fingerprint naming the test: an interrupted
    case-control scan's checkpoint does not resume as a quantitative trait's scan, nor the other
    way round, and the refusal is one line naming the folder."""
    from gboost.data.simulate import simulate_study

    cc = str(tmp_path / "cc")
    simulate_study(70, 130, 130, seed=9).write(cc)
    qt_out, cc_out = tmp_path / "qt", tmp_path / "ccout"
    calls: list = []

    def interrupted(*a):
        real_stat(*a)
        _ctrl_c_at(calls, 2)

    qt_cpu_stat = qt_cpu._stat_block
    qt_cpu._stat_block = interrupted
    try:
        assert main(["scan", "--bfile", prefix, "--out", str(qt_out), "--quiet", "--device", "cpu"]) == 130
    finally:
        qt_cpu._stat_block = qt_cpu_stat
    assert tiles_recorded(qt_out) == 1
    from gboost.pipeline.checkpoint import Ledger
    from gboost.pipeline.params import ScanParams

    led = Ledger(cc_out, load_study(open_input(bfile=cc)), ScanParams(epi1=0.01), resume=False)
    led.start(tile=16, tiles=15)
    led.close()
    capsys.readouterr()
    for bfile, out, was, now in ((cc, qt_out, "a quantitative trait's scan", "a case-control scan"),
                                 (prefix, cc_out, "a case-control scan", "a quantitative trait's scan")):
        assert main(["scan", "--bfile", bfile, "--out", str(out), "--quiet", "--device", "cpu", "--resume"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"was {was}, not {now}" in err[0] and str(out) in err[0], err


def _covariates(study, seed=4):
    rng = np.random.default_rng(seed)
    cov = np.column_stack([rng.normal(50, 10, study.n_samples), rng.normal(size=study.n_samples)])
    cov[::29, 0] = np.nan
    return cov, ["age", "pc1"]


def test_an_adjusted_scan_interrupted_resumes_to_one_runs_files_and_pins_its_covariates(prefix, tmp_path,
                                                                                          monkeypatch, small_blocks):
    """With --covar the tiles recorded are the adjusted test's: a resume gives one run's files, and
    a checkpoint of other covariates (or none) is refused, naming them."""
    from gboost.engines import qt_covar
    from gboost.errors import InputError

    study = load_study(open_input(bfile=prefix))
    params = QTParams(epi1=0.01, epi2=0.1)
    cov = _covariates(study)
    want = render_qt_outputs(run_qt_scan(study, params, engine=QTCPUEngine(), covariates=cov))
    real = qt_covar.stat_block
    calls: list = []

    def interrupted(*a):
        real(*a)
        _ctrl_c_at(calls, 4)

    monkeypatch.setattr(qt_covar, "stat_block", interrupted)
    out = tmp_path / "o"
    with pytest.raises(KeyboardInterrupt):
        run_qt_scan(study, params, engine=QTCPUEngine(), covariates=cov, checkpoint_dir=out)
    assert tiles_recorded(out) == 3
    monkeypatch.setattr(qt_covar, "stat_block", real)
    for other in (None, _covariates(study, seed=5)):
        with pytest.raises(InputError, match=r"the covariates \(--covar\)"):
            run_qt_scan(study, params, engine=QTCPUEngine(), covariates=other, checkpoint_dir=out, resume=True)
    stats = []
    monkeypatch.setattr(qt_covar, "stat_block", lambda *a: (stats.append(1), real(*a)))
    got = render_qt_outputs(run_qt_scan(study, params, engine=QTCPUEngine(), covariates=cov, checkpoint_dir=out,
                                        resume=True))
    assert len(stats) == 18 - 3  # the recorded tiles are not screened again
    for name in FILES:
        assert got[name] == want[name], name
