"""In the GUI: a scan keeps a checkpoint; Cancel (or a crash) leaves it, the next Run of
the same study and thresholds offers to resume, and the resumed scan gives the results of an
uninterrupted one while computing only the tiles that were missing."""
import pytest

from gboost.outputs.results import render_outputs
from gui import checkpoints
from guihelpers import EPI1, HeldTiles, cancel_at_first_progress, load

TILE = 16
RESULT_FILES = ("pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv")


@pytest.fixture
def interrupted(qtbot, window, study_prefix, monkeypatch):
    """A window whose scan of the study (epi1 EPI1, 16-SNP tiles) was cancelled after a few tiles."""
    load(qtbot, window, study_prefix)
    window.run_panel.epi1.setText(EPI1)
    window.run_panel.tile.setValue(TILE)
    counter = HeldTiles(monkeypatch, free=1)  # the second tile waits for the cancel
    cancel_at_first_progress(qtbot, window, counter)
    window.tiles_before_cancel = counter.calls
    window.counter = counter
    return window


def checkpoint_of(win):
    return checkpoints.directory_for(win.path, win.run_panel.qc_options(), win.run_panel.scan_params())


def outputs(result) -> dict[str, bytes]:
    files = render_outputs(result)
    return {name: files[name].encode() for name in RESULT_FILES}


def cli_outputs(cli_dir) -> dict[str, bytes]:
    return {name: (cli_dir / name).read_bytes() for name in RESULT_FILES}


def test_cancel_keeps_the_checkpoint_of_the_finished_tiles(interrupted):
    found = checkpoints.interrupted(checkpoint_of(interrupted))
    assert found is not None
    assert found.done == interrupted.tiles_before_cancel and 0 < found.done < found.total
    n = interrupted.result_tiles = found.total
    assert n == sum(len(range(a, 240, TILE)) for a in range(0, 240, TILE))  # the 16-SNP plan of 240 SNPs
    assert "Run scan offers to resume" in interrupted.run_panel.rate_label.text()
    assert interrupted.result is None


def test_resume_offers_n_of_m_and_gives_the_uninterrupted_results(qtbot, interrupted, cli_dir):
    win = interrupted
    found = checkpoints.interrupted(checkpoint_of(win))
    win.counter.calls = 0
    with qtbot.waitSignal(win.resumeOffered, timeout=5000) as offered:
        assert win.start_scan()
    box = offered.args[0]
    assert box.isVisible() and not win.busy  # nothing runs until the user answers
    assert box.text() == f"Resume the interrupted scan ({found.done:,} of {found.total:,} tiles done)?"
    assert {b.text() for b in box.buttons()} >= {"Resume", "Start over"}
    with qtbot.waitSignal(win.scanFinished, timeout=60000) as finished:
        box.resume_button.click()
    result = finished.args[0]
    assert win.counter.calls == found.total - found.done  # only the missing tiles were computed
    assert outputs(result) == cli_outputs(cli_dir)  # byte for byte the CLI's uninterrupted scan
    qtbot.waitUntil(lambda: not win.busy)
    assert not checkpoint_of(win).exists()  # a finished scan leaves no checkpoint
    assert any("Resuming the interrupted scan" in line for line in win.log_view.toPlainText().splitlines())


@pytest.mark.slow
def test_start_over_discards_the_checkpoint_and_scans_every_tile(qtbot, interrupted, cli_dir):
    win = interrupted
    found = checkpoints.interrupted(checkpoint_of(win))
    win.counter.calls = 0
    with qtbot.waitSignal(win.resumeOffered, timeout=5000) as offered:
        win.start_scan()
    with qtbot.waitSignal(win.scanFinished, timeout=60000) as finished:
        offered.args[0].start_over_button.click()
    assert win.counter.calls == found.total
    assert outputs(finished.args[0]) == cli_outputs(cli_dir)
    qtbot.waitUntil(lambda: not win.busy)
    assert not checkpoint_of(win).exists()


def test_declining_the_offer_starts_nothing_and_keeps_the_checkpoint(qtbot, interrupted):
    from PySide6.QtWidgets import QMessageBox

    win = interrupted
    before = checkpoints.interrupted(checkpoint_of(win))
    with qtbot.waitSignal(win.resumeOffered, timeout=5000) as offered:
        win.start_scan()
    offered.args[0].button(QMessageBox.StandardButton.Cancel).click()
    qtbot.wait(50)
    assert not win.busy and win.result is None and win.counter.calls == win.tiles_before_cancel
    assert checkpoints.interrupted(checkpoint_of(win)) == before


@pytest.mark.slow
def test_a_torn_ledger_after_a_crash_still_resumes_to_the_same_results(qtbot, interrupted, cli_dir):
    """A crash mid-write leaves half a record at the end of the ledger: it is not counted as
    done, and the resumed scan recomputes that tile."""
    win = interrupted
    ckpt = checkpoint_of(win)
    before = checkpoints.interrupted(ckpt)
    with open(ckpt / "checkpoint.ledger", "ab") as f:
        f.write(b"GBT1\x05\x00\x00\x00" + b"\x00" * 7)  # a header cut short
    assert checkpoints.interrupted(ckpt).done == before.done
    win.counter.calls = 0
    with qtbot.waitSignal(win.resumeOffered, timeout=5000) as offered:
        win.start_scan()
    assert f"({before.done:,} of {before.total:,} tiles done)" in offered.args[0].text()
    with qtbot.waitSignal(win.scanFinished, timeout=60000) as finished:
        offered.args[0].resume_button.click()
    assert win.counter.calls == before.total - before.done
    assert outputs(finished.args[0]) == cli_outputs(cli_dir)


@pytest.mark.slow
def test_other_thresholds_are_another_scan_and_are_not_offered(qtbot, interrupted):
    win = interrupted
    kept = checkpoint_of(win)
    win.run_panel.epi2.setText("0.02")
    assert checkpoint_of(win) != kept
    offers = []
    win.resumeOffered.connect(offers.append)
    with qtbot.waitSignal(win.scanFinished, timeout=60000):
        assert win.start_scan()
    assert offers == [] and checkpoints.interrupted(kept) is not None  # the other scan's checkpoint stays


@pytest.mark.slow
def test_an_uninterrupted_scan_leaves_no_checkpoint(qtbot, scanned):
    root = checkpoints.root()
    assert scanned.result is not None
    assert not root.exists() or not any(root.iterdir())


@pytest.mark.slow
def test_run_option_resumes_without_asking(qtbot, interrupted, cli_dir):
    """``gboost-gui --run`` starts the scan with ``resume=True``: no dialog, only missing tiles."""
    win = interrupted
    found = checkpoints.interrupted(checkpoint_of(win))
    offers = []
    win.resumeOffered.connect(offers.append)
    win.counter.calls = 0
    with qtbot.waitSignal(win.scanFinished, timeout=60000) as finished:
        assert win.start_scan(resume=True)
    assert offers == [] and win.counter.calls == found.total - found.done
    assert outputs(finished.args[0]) == cli_outputs(cli_dir)
