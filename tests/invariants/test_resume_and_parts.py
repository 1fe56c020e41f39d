"""Interrupted scans resume to identical outputs; --part k/n merged equals a single run."""
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from gboost.pipeline.checkpoint import LEDGER
from gboost.cli import main
from gboost.data.simulate import PlantedPair, simulate_study

from tests.helpers import ROOT
COMPARED = ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("rp") / "s")
    simulate_study(700, 300, 300, seed=11, chromosomes=3, missing_rate=0.01,
                   planted=[PlantedPair(1, 500, "threshold", 10.0)]).write(prefix)
    return prefix


@pytest.fixture(scope="module")
def reference(study, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "single"
    assert main(["scan", "--bfile", study, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "1e-3",
                 "--tile", "32"]) == 0
    return out


def same_outputs(a, b):
    return all(open(os.path.join(a, f), "rb").read() == open(os.path.join(b, f), "rb").read() for f in COMPARED)


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_parts_merged_equal_a_single_run(study, reference, tmp_path, n):
    dirs = []
    for k in range(1, n + 1):
        d = tmp_path / f"part{k}"
        # Parts may use different tile sizes: the split is by rows, not by tiles.
        assert main(["scan", "--bfile", study, "--out", str(d), "--device", "cpu", "--quiet", "--epi1", "1e-3",
                     "--part", f"{k}/{n}", "--tile", str(16 + 8 * k)]) == 0
        dirs.append(str(d))
    out = tmp_path / "merged"
    assert main(["merge", *dirs, "--out", str(out), "--quiet"]) == 0
    assert same_outputs(out, reference)


def test_merge_refuses_missing_or_duplicate_parts(study, tmp_path, capsys):
    for k in (1, 2):
        main(["scan", "--bfile", study, "--out", str(tmp_path / f"p{k}"), "--device", "cpu", "--quiet",
              "--part", f"{k}/3"])
    assert main(["merge", str(tmp_path / "p1"), str(tmp_path / "p2"), "--out", str(tmp_path / "m")]) == 2
    assert "3/3" in capsys.readouterr().err
    assert main(["merge", str(tmp_path / "p1"), str(tmp_path / "p1"), "--out", str(tmp_path / "m")]) == 2
    assert "twice" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def _scan_cmd(study, out):
    return [sys.executable, "-m", "gboost.cli", "scan", "--bfile", study, "--out", str(out), "--device", "cpu",
            "--quiet", "--epi1", "1e-3", "--tile", "32", "--threads", "1"]


@pytest.fixture(scope="module")
def big_study(tmp_path_factory):
    """Large enough that a single-threaded scan lasts seconds, so the kills land mid-run."""
    prefix = str(tmp_path_factory.mktemp("big") / "s")
    simulate_study(2500, 300, 300, seed=12, chromosomes=2, missing_rate=0.01).write(prefix)
    out = tmp_path_factory.mktemp("bigref") / "single"
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "1e-3",
                 "--tile", "32"]) == 0
    return prefix, out


@pytest.mark.slow
def test_kill_9_then_resume_gives_identical_outputs(big_study, tmp_path):
    study, reference = big_study
    rnd = random.Random(7)
    out = tmp_path / "killed"
    killed_mid_run = 0
    for attempt in range(3):
        cmd = _scan_cmd(study, out) + (["--resume"] if attempt else [])
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Wait for the ledger to start growing, then kill at a random moment.
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None and not (out / LEDGER).exists():
            time.sleep(0.05)
        time.sleep(rnd.uniform(0.05, 0.4))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            killed_mid_run += 1
        proc.wait()
        if proc.returncode == 0:
            break
    assert killed_mid_run >= 1
    if not (out / "pairs.tsv").exists():
        r = subprocess.run(_scan_cmd(study, out) + ["--resume"], cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    assert same_outputs(out, reference)
    assert not (out / LEDGER).exists()  # the finished outputs replace the checkpoint


@pytest.mark.slow
def test_tiles_on_record_at_a_kill_9_are_kept_by_resume(big_study, tmp_path):
    """The ledger's writer thread hands each record to the kernel as soon as it is encoded: what
    it had written before kill -9 is still there, and --resume screens only the rest."""
    from gboost.pipeline.checkpoint import tiles_recorded

    study, reference = big_study
    out = tmp_path / "k"
    proc = subprocess.Popen(_scan_cmd(study, out), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and tiles_recorded(out) < 3:
        time.sleep(0.02)
    assert proc.poll() is None, "the scan ended before it was killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = tiles_recorded(out)
    assert kept >= 3
    r = subprocess.run(_scan_cmd(study, out) + ["--resume"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert same_outputs(out, reference)


@pytest.mark.slow
def test_torn_ledger_record_is_dropped_on_resume(study, reference, tmp_path):
    out = tmp_path / "torn"
    seen = []
    # Cancel in-process after a few tiles through the library, as the GUI does.
    from gboost.pipeline.checkpoint import Ledger
    from gboost.errors import ScanCancelled
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study
    from gboost.pipeline.scan import ScanParams, screen

    st = load_study(open_bfile(study))
    params = ScanParams(epi1=1e-3, device="cpu", tile=32)
    led = Ledger(out, st, params, resume=False)
    with pytest.raises(ScanCancelled):
        screen(st, params, progress=seen.append, cancel=lambda: len(seen) >= 20, checkpoint=led)
    led.close()
    data = (out / LEDGER).read_bytes()
    (out / LEDGER).write_bytes(data[:-37])  # a power cut in the middle of the last record
    r = subprocess.run(_scan_cmd(study, out) + ["--resume"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert same_outputs(out, reference)


@pytest.mark.slow
def test_interrupted_scan_needs_resume_or_overwrite(study, tmp_path):
    out = tmp_path / "int"
    from gboost.pipeline.checkpoint import Ledger
    from gboost.errors import ScanCancelled
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study
    from gboost.pipeline.scan import ScanParams, screen

    st = load_study(open_bfile(study))
    params = ScanParams(device="cpu", tile=32)
    led = Ledger(out, st, params, resume=False)
    with pytest.raises(ScanCancelled):
        screen(st, params, cancel=lambda: True, checkpoint=led)
    led.close()
    r = subprocess.run(_scan_cmd(study, out), cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "--resume" in r.stderr
    # Resuming with other thresholds is refused, not mixed.
    r = subprocess.run(_scan_cmd(study, out)[:-6] + ["--epi1", "1e-2", "--resume"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "--epi1" in r.stderr


def test_resume_of_a_finished_scan_says_there_is_nothing_to_resume(study, reference, tmp_path, capsys):
    """--resume asks whether there is a scan to continue: a finished one is named as such (not
    sent to --overwrite as if the folder were someone else's), and its files stay as they were."""
    import hashlib
    import shutil

    from gboost.data.simulate import simulate_qt_study

    q = str(tmp_path / "q")
    simulate_qt_study(40, 60, seed=3, missing_rate=0.01).write(q)
    qout = tmp_path / "qt"
    assert main(["scan", "--bfile", q, "--out", str(qout), "--device", "cpu", "--quiet"]) == 0
    done = tmp_path / "done"
    shutil.copytree(reference, done)
    for out, prefix in ((done, study), (qout, q)):
        before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.iterdir()}
        capsys.readouterr()
        assert main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--quiet", "--resume"]) == 2
        assert capsys.readouterr().err.strip().splitlines() == [
            f"gboost: error: {out}: holds a finished scan (run.json), not an interrupted one: there is nothing to "
            "resume, its outputs are complete (use --overwrite to scan again)"]
        assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.iterdir()} == before
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    assert main(["scan", "--bfile", study, "--out", str(other), "--device", "cpu", "--quiet", "--resume"]) == 2
    assert "holds no interrupted scan of gboost's to resume" in capsys.readouterr().err
    assert [p.name for p in other.iterdir()] == ["notes.txt"] and (other / "notes.txt").read_text() == "mine\n"
