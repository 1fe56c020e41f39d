"""``gboost scan --part k/n``, ``gboost merge`` and ``--resume`` on a quantitative trait:
the merged or resumed files are one run's byte for byte, whichever engine ran and however many
parts or devices; parts of another scan, of other data, given twice or missing, and a resume with
other settings are refused in one line."""
from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from gboost.cli import main as gboost_main
from gboost.engines.qt_cpu import QTCPUEngine
from gboost.engines.qt_gpu import QTGPUEngine
from gboost.data.inputs import open_input
from gboost.outputs.qt_results import render_qt_outputs
from gboost.data.load import load_study
from gboost.pipeline.parts import merge_parts, write_qt_part
from gboost.pipeline.qt_scan import QTParams, run_qt_scan
from gboost.data.simulate import simulate_qt_study

FILES = ("pairs.epi.qt", "pairs.epi.qt.summary", "pairs.tsv", "marginal.tsv")


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    # LD (pairs that fail, ties of best partners within blocks), missing calls, planted pairs
    st = simulate_qt_study(70, 260, seed=9, missing_rate=0.03, ld_block=6, ld_rho=0.95,
                           effects=[(2, 40, 0.6), (10, 60, 0.5)])
    prefix = str(tmp_path_factory.mktemp("qtparts") / "q")
    st.write(prefix)
    return prefix


def _files(directory):
    return {name: (directory / name).read_bytes() for name in FILES}


@pytest.mark.parametrize("n", [2, 3, 7])
@pytest.mark.parametrize("flags", [[], ["--epi1", "1"], ["--epi1", "0.05", "--epi2", "0.2", "--genotypic"]],
                         ids=["default", "every-pair", "genotypic"])
def test_parts_merged_by_the_cli_equal_one_run(prefix, tmp_path, n, flags):
    one = tmp_path / "one"
    assert gboost_main(["scan", "--bfile", prefix, "--out", str(one), "--quiet", "--device", "cpu", *flags]) == 0
    parts = []
    for k in range(1, n + 1):
        d = tmp_path / f"part{k}"
        assert gboost_main(["scan", "--bfile", prefix, "--out", str(d), "--quiet", "--device", "cpu",
                            "--part", f"{k}/{n}", *flags]) == 0
        assert not (d / "pairs.epi.qt").exists()  # a part holds part.npz and run.json only
        assert json.loads((d / "run.json").read_text())["part"] == [k, n]
        parts.append(str(d))
    merged = tmp_path / "merged"
    assert gboost_main(["merge", *reversed(parts), "--out", str(merged), "--quiet"]) == 0
    assert _files(merged) == _files(one)
    run, run1 = (json.loads((d / "run.json").read_text()) for d in (merged, one))
    assert run["counts"]["valid_tests"] == run1["counts"]["valid_tests"]
    assert run["merged_parts"] == [str(p) for p in reversed(parts)]


@pytest.mark.parametrize("gpus", [[0], [0, 1]])
def test_parts_of_the_gpu_engine_merge_to_the_cpu_engines_run(prefix, tmp_path, gpus):
    """The GPU engine's tile math (numpy) on each part's rows, parts merged: the CPU's one run."""
    study = load_study(open_input(bfile=prefix))
    params = dict(epi1=0.01, epi2=0.1)
    want = render_qt_outputs(run_qt_scan(study, QTParams(**params), engine=QTCPUEngine()))
    dirs = []
    for k in range(1, 4):
        res = run_qt_scan(study, QTParams(**params, part=(k, 3)), engine=QTGPUEngine(tile=16, xp=np, gpus=gpus))
        dirs.append(tmp_path / f"p{k}")
        write_qt_part(dirs[-1], res)
    got = render_qt_outputs(merge_parts(dirs))
    for name in FILES:
        assert got[name] == want[name], name


def test_merge_refuses_parts_missing_twice_or_of_another_scan(prefix, tmp_path, capsys):
    def part(k, n, *flags, name=None):
        d = tmp_path / (name or f"p{k}of{n}")
        assert gboost_main(["scan", "--bfile", prefix, "--out", str(d), "--quiet", "--device", "cpu",
                            "--part", f"{k}/{n}", *flags]) == 0
        return str(d)

    p1, p2 = part(1, 2), part(2, 2)
    other = part(2, 2, "--epi1", "0.01", name="other")
    cases = [([p1], "parts 2/2 are missing"), ([p1, p1], "given twice"), ([p1, other], "different scan")]
    for dirs, msg in cases:
        out = tmp_path / "m"
        assert gboost_main(["merge", *dirs, "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], err
        assert not out.exists() or not any(p.name != ".gboost.lock" for p in out.iterdir())
    assert gboost_main(["merge", p1, p2, "--out", str(tmp_path / "ok"), "--quiet"]) == 0


def test_merge_refuses_a_case_control_part_among_qt_parts(prefix, tmp_path, capsys):
    from gboost.data.simulate import simulate_study

    cc = simulate_study(30, 100, 100, seed=1)
    cc.write(str(tmp_path / "cc"))
    assert gboost_main(["scan", "--bfile", str(tmp_path / "cc"), "--out", str(tmp_path / "ccpart"), "--quiet",
                        "--device", "cpu", "--part", "2/2"]) == 0
    assert gboost_main(["scan", "--bfile", prefix, "--out", str(tmp_path / "qt1"), "--quiet", "--device", "cpu",
                        "--part", "1/2"]) == 0
    capsys.readouterr()
    for dirs, msg in (((tmp_path / "qt1", tmp_path / "ccpart"), "a case-control part, and"),
                      ((tmp_path / "ccpart", tmp_path / "qt1"), "a quantitative trait part, and")):
        # one merge for both tests, which reads each part's recorded test: a mix is refused
        assert gboost_main(["merge", *map(str, dirs), "--out", str(tmp_path / "m"), "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0] and str(dirs[1]) in err[0], err


def test_merge_refuses_a_qt_part_of_an_older_format_in_one_line(prefix, tmp_path, capsys):
    """A part whose arrays this version does not know (here: its partners missing) is named, not a
    traceback."""
    parts = []
    for k in (1, 2):
        d = tmp_path / f"p{k}"
        assert gboost_main(["scan", "--bfile", prefix, "--out", str(d), "--quiet", "--device", "cpu",
                            "--part", f"{k}/2"]) == 0
        parts.append(d)
    with np.load(parts[1] / "part.npz") as z:
        arrays = {k: z[k] for k in z.files if k not in ("best", "best_partner")}
    np.savez(parts[1] / "part.npz", **arrays)
    capsys.readouterr()
    assert gboost_main(["merge", *map(str, parts), "--out", str(tmp_path / "m"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another version of gboost" in err[0] and "best, best_partner" in err[0], err


# --- --resume ------------------------------------------------------------------------------------

def _stop_after(k):
    calls = []
    return lambda: calls.append(1) or len(calls) > k


def _engines():
    from gboost.engines.qt_gpu import QTDeviceRunner

    screened = []

    class Counting(QTDeviceRunner):
        def screen(self, tile, alpha1, alpha2):
            screened.append(tile)
            return super().screen(tile, alpha1, alpha2)

    return screened, {"gpu1": lambda: QTGPUEngine(tile=16, xp=np, runner=Counting),
                      "gpu2": lambda: QTGPUEngine(tile=16, xp=np, gpus=[0, 1], runner=Counting),
                      "cpu": lambda: QTCPUEngine()}


@pytest.mark.parametrize("which", ["gpu1", "gpu2", "cpu"])
@pytest.mark.parametrize("part", [None, (2, 3)])
def test_a_cancelled_scan_resumed_writes_one_runs_files(prefix, tmp_path, monkeypatch, which, part):
    """Stopped after a few tiles (row blocks for the CPU engine), then resumed from the checkpoint:
    the same files as one run, and the finished tiles are not screened again."""
    from gboost.pipeline.checkpoint import LEDGER, MANIFEST
    from gboost.engines import qt_cpu
    from gboost.errors import ScanCancelled

    monkeypatch.setattr(qt_cpu, "_ZBUF_BYTES", 8 * 70 * 4)  # CPU row blocks of 4 SNPs: several blocks
    study = load_study(open_input(bfile=prefix))
    params = QTParams(epi1=0.01, epi2=0.1, part=part)
    screened, engines = _engines()
    want = run_qt_scan(study, params, engine=engines[which]())
    n_tiles = len(screened)
    screened.clear()
    out = tmp_path / "o"
    with pytest.raises(ScanCancelled):
        run_qt_scan(study, params, engine=engines[which](), checkpoint_dir=out, cancel=_stop_after(3))
    assert (out / LEDGER).exists() and (out / MANIFEST).exists()
    screened.clear()
    got = run_qt_scan(study, params, engine=engines[which](), checkpoint_dir=out, resume=True)
    if which != "cpu":  # the checkpoint holds the three tiles the cancel saw finished (later ones are dropped)
        assert len(screened) == n_tiles - 3
    for attr in ("n_sig", "n_fail", "best", "best_partner", "i", "j"):
        np.testing.assert_array_equal(getattr(got.core, attr), getattr(want.core, attr), err_msg=attr)
    if part is None:
        w, g = render_qt_outputs(want), render_qt_outputs(got)
        for name in FILES:
            assert g[name] == w[name], name


def test_periodic_checkpoints_survive_a_device_error(prefix, tmp_path):
    """A device's error is not a clean stop for the other: the checkpoint, which records each tile
    as it is added, holds whole tiles only, and the resumed scan gives one run's files."""
    from gboost.engines.qt_gpu import QTDeviceRunner

    device1_began = threading.Event()

    class FailsOnce(QTDeviceRunner):
        """Device 1 fails at its third tile. Device 0 holds its first tile until device 1 has begun
        one, so device 1 takes one of the first two row blocks (70 SNPs, tile 16: blocks of 5, 4, 3,
        2, 1 tiles), whatever the threads' start order: it fails inside that block, with two tiles of
        it done and two or more never screened. Without the hold, device 0 could take every block
        first on a loaded machine, and device 1 never fail."""
        budget = [2]

        def screen(self, tile, alpha1, alpha2):
            if self.device_id == 1:
                device1_began.set()
                FailsOnce.budget[0] -= 1
                if FailsOnce.budget[0] < 0:
                    raise RuntimeError("GPU 1: an illegal memory access")
            else:
                assert device1_began.wait(120), "device 1 never took a tile"
            return super().screen(tile, alpha1, alpha2)

    study = load_study(open_input(bfile=prefix))
    params = QTParams(epi1=0.01, epi2=0.1)
    want = render_qt_outputs(run_qt_scan(study, params, engine=QTCPUEngine()))
    out = tmp_path / "o"
    with pytest.raises(RuntimeError, match="illegal memory access"):
        run_qt_scan(study, params, engine=QTGPUEngine(tile=16, xp=np, gpus=[0, 1], runner=FailsOnce),
                    checkpoint_dir=out)
    from gboost.pipeline.checkpoint import tiles_recorded
    from gboost.engines.qt_gpu import plan_qt_tiles

    assert 2 <= tiles_recorded(out) < len(plan_qt_tiles(70, 16))  # whole tiles, not all of them
    got = render_qt_outputs(run_qt_scan(study, params, engine=QTGPUEngine(tile=16, xp=np), checkpoint_dir=out,
                                        resume=True))
    for name in FILES:
        assert got[name] == want[name], name


def test_cli_resume_finishes_the_scan_and_removes_the_checkpoint(prefix, tmp_path, capsys):
    from gboost.pipeline.checkpoint import LEDGER, MANIFEST
    from gboost.errors import ScanCancelled

    one = tmp_path / "one"
    assert gboost_main(["scan", "--bfile", prefix, "--out", str(one), "--quiet", "--device", "cpu",
                        "--epi1", "0.01"]) == 0
    out = tmp_path / "o"
    study = load_study(open_input(bfile=prefix))
    with pytest.raises(ScanCancelled):  # as the CLI's engine would leave it (--device cpu, default tile)
        run_qt_scan(study, QTParams(epi1=0.01, device="cpu"), engine=QTCPUEngine(), checkpoint_dir=out,
                    cancel=_stop_after(0))
    # nothing was finished before the cancel: the checkpoint (as a case-control scan's) holds no tile
    from gboost.pipeline.checkpoint import tiles_recorded

    assert (out / MANIFEST).exists() and tiles_recorded(out) == 0
    import gboost.engines.qt_cpu as qt_cpu

    old = qt_cpu._ZBUF_BYTES
    qt_cpu._ZBUF_BYTES = 8 * 70 * 9
    try:
        with pytest.raises(ScanCancelled):
            run_qt_scan(study, QTParams(epi1=0.01, device="cpu"), engine=QTCPUEngine(), checkpoint_dir=out,
                        cancel=_stop_after(2))
        assert (out / MANIFEST).exists()
        # a run without --resume or --overwrite is refused: the folder holds an interrupted scan
        assert gboost_main(["scan", "--bfile", prefix, "--out", str(out), "--quiet", "--device", "cpu",
                            "--epi1", "0.01"]) == 2
        assert "interrupted scan" in capsys.readouterr().err
        # another --epi1 cannot take it up
        assert gboost_main(["scan", "--bfile", prefix, "--out", str(out), "--quiet", "--device", "cpu",
                            "--epi1", "0.02", "--resume"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--epi1" in err[0] and "--overwrite" in err[0]
        assert gboost_main(["scan", "--bfile", prefix, "--out", str(out), "--quiet", "--device", "cpu",
                            "--epi1", "0.01", "--resume"]) == 0
    finally:
        qt_cpu._ZBUF_BYTES = old
    assert _files(out) == _files(one)
    assert not (out / MANIFEST).exists() and not (out / LEDGER).exists()


# --- the same on the GPU machine ------------------------------------------------------------------

def _gpu_parts_and_resume(prefix, tmp_path, gpus):
    import cupy

    from gboost.errors import ScanCancelled

    study = load_study(open_input(bfile=prefix))
    params = dict(epi1=0.01, epi2=0.1)
    want = render_qt_outputs(run_qt_scan(study, QTParams(**params), engine=QTCPUEngine()))
    dirs = []
    for k in range(1, 3):
        res = run_qt_scan(study, QTParams(**params, part=(k, 2)), engine=QTGPUEngine(tile=16, xp=cupy, gpus=gpus))
        dirs.append(tmp_path / f"p{k}")
        write_qt_part(dirs[-1], res)
    merged = render_qt_outputs(merge_parts(dirs))
    out = tmp_path / "o"
    with pytest.raises(ScanCancelled):
        run_qt_scan(study, QTParams(**params), engine=QTGPUEngine(tile=16, xp=cupy, gpus=gpus), checkpoint_dir=out,
                    cancel=_stop_after(4))
    resumed = render_qt_outputs(run_qt_scan(study, QTParams(**params), engine=QTGPUEngine(tile=16, xp=cupy, gpus=gpus),
                                            checkpoint_dir=out, resume=True))
    for name in FILES:
        assert merged[name] == want[name], name
        assert resumed[name] == want[name], name


@pytest.mark.gpu
def test_gpu_parts_and_a_resumed_scan_write_the_cpu_engines_files(prefix, tmp_path):
    _gpu_parts_and_resume(prefix, tmp_path, [0])


@pytest.mark.gpu(devices=2)
def test_two_gpus_parts_and_a_resumed_scan_write_the_cpu_engines_files(prefix, tmp_path):
    _gpu_parts_and_resume(prefix, tmp_path, [0, 1])
