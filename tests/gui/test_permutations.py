"""The Run panel's label permutations (gboost scan --perm, --perm-seed, --within): the controls
give the CLI's arguments, the CLI's refusals come back as the usual one-line dialog, a --perm scan
shows EMP2, the family-wise line and its summary, and Cancel during the permutations keeps them
for Resume, which gives the uninterrupted run's files."""
import json
import threading
import time

import numpy as np
import pytest
from PySide6.QtCore import Qt

from gboost.cli import build_parser, main
from gboost.outputs.results import render_outputs
from gui import checkpoints
from guihelpers import EPI1, load, scan

N_PERM = 20  # the fewest that give a family-wise 0.05 threshold is 19: a small, quick run that has one
SEED = 3
PERM_FILES = ("pairs.tsv", "perm.tsv", "pairs.epi.cc", "marginal.tsv")


def cli_error(argv, capsys) -> str:
    """The one line `gboost scan` prints for a refused command line (exit 2), without its prefix."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.strip().removeprefix("gboost: error: ")


def set_perm(win, n=N_PERM, seed=SEED, within=""):
    rp = win.run_panel
    rp.epi1.setText(EPI1)
    rp.calibration.setValue(0)
    rp.perm.setValue(n)
    rp.perm_seed.setValue(seed)
    rp.file_edits["within"].setText(within)


@pytest.fixture(scope="module")
def clusters(study_prefix, tmp_path_factory):
    """A --within file of the test study: its samples in three clusters."""
    path = tmp_path_factory.mktemp("within") / "clusters.txt"
    with open(study_prefix + ".fam") as f:
        path.write_text("".join(f"{l.split()[0]} {l.split()[1]} c{k % 3}\n" for k, l in enumerate(f)))
    return str(path)


@pytest.fixture(scope="module")
def cli_perm_dir(study_prefix, clusters, tmp_path_factory):
    """The CLI's --perm run of the test study, with the settings :func:`set_perm` gives the panel."""
    out = tmp_path_factory.mktemp("cliperm") / "out"
    assert main(["scan", "--bfile", study_prefix, "--out", str(out), "--device", "cpu", "--epi1", EPI1,
                 "--calibration-pairs", "0", "--perm", str(N_PERM), "--perm-seed", str(SEED), "--within", clusters,
                 "--quiet"]) == 0
    return out


def test_the_controls_are_the_clis_arguments(window, clusters):
    rp = window.run_panel
    opts = rp.run_options()
    p = opts.params
    assert (p.perm, p.perm_seed, p.within) == (0, 0, None) and "--perm" not in opts.cli_args()
    set_perm(window, 250, 17, clusters)
    opts = rp.run_options()
    p = opts.params
    assert (p.perm, p.perm_seed, p.within) == (250, 17, clusters)
    args = opts.cli_args()
    assert args[args.index("--perm"):][:6] == ["--perm", "250", "--perm-seed", "17", "--within", clusters]
    # the command the log writes parses, with the CLI's own parser, to the same settings
    parsed = build_parser().parse_args(["scan", "--bfile", "study", "--out", "o", *args])
    assert (parsed.perm, parsed.perm_seed, parsed.within) == (250, 17, clusters)
    rp.perm_seed.setValue(0)  # the CLI's default seed: not written
    assert "--perm-seed" not in rp.run_options().cli_args()
    # the permutation count and the seed are remembered like the other Run settings; the clusters
    # with the study (its samples'), as --keep is
    rp.save_settings()
    rp.restore_defaults()
    assert (rp.perm.value(), rp.perm_seed.value(), rp.file_edits["within"].text()) == (0, 0, "")
    rp.load_settings()
    assert (rp.perm.value(), rp.perm_seed.value()) == (250, 0)
    from gui.state import STUDY_INPUTS

    assert STUDY_INPUTS["within"] == "" and rp.study_inputs()["within"] == ""
    for w in (rp.perm, rp.perm_seed, rp.file_edits["within"]):
        assert "--perm" in w.toolTip()


def test_a_checkpoint_is_kept_per_permutation_setting(window, study_prefix, clusters):
    rp = window.run_panel
    qc = rp.qc_options()
    set_perm(window, n=0, seed=0)
    plain = checkpoints.directory_for(study_prefix, qc, rp.scan_params())
    rp.perm.setValue(N_PERM)
    keyed = {checkpoints.directory_for(study_prefix, qc, rp.scan_params())}
    rp.perm_seed.setValue(SEED)
    keyed.add(checkpoints.directory_for(study_prefix, qc, rp.scan_params()))
    rp.file_edits["within"].setText(clusters)
    keyed.add(checkpoints.directory_for(study_prefix, qc, rp.scan_params()))
    rp.perm.setValue(0)
    rp.perm_seed.setValue(0)
    rp.file_edits["within"].clear()
    assert checkpoints.directory_for(study_prefix, qc, rp.scan_params()) == plain  # without --perm: as before
    assert len(keyed) == 3 and plain not in keyed


@pytest.fixture
def covar_file(study_prefix, tmp_path):
    path = tmp_path / "covar.txt"
    with open(study_prefix + ".fam") as f:
        path.write_text("FID IID age\n" + "".join(f"{l.split()[0]} {l.split()[1]} {30 + k % 40}\n"
                                                  for k, l in enumerate(f)))
    return str(path)


def assert_one_line_dialog(win, title, message):
    box = win.error_box
    assert box is not None and box.windowTitle() == title
    assert box.text() == message and "\n" not in message
    assert box.detailedText() == "" and box.informativeText() == ""  # not reported as a bug


def test_the_clis_refusals_are_one_line_dialogs(qtbot, window, study_prefix, covar_file, tmp_path, capsys):
    load(qtbot, window, study_prefix)
    rp = window.run_panel
    cli = ["scan", "--bfile", study_prefix, "--out", str(tmp_path / "o"), "--quiet"]
    # --perm with --covar: the labels are not exchangeable
    set_perm(window)
    rp.file_edits["covar"].setText(covar_file)
    assert not window.start_scan()
    want = cli_error(cli + ["--perm", str(N_PERM), "--covar", covar_file], capsys)
    assert "not exchangeable" in want
    assert_one_line_dialog(window, "Invalid setting", want)
    assert not window.busy and window.result is None
    # the other two, a seed or clusters without --perm, in the CLI's words where settings say so
    # (the panel cannot: its seed and clusters are off while --perm is)
    from dataclasses import replace

    from gboost.pipeline.scan import ScanParams

    rp.file_edits["covar"].clear()
    opts = rp.run_options()
    opts.params = replace(opts.params, perm=0)
    with pytest.raises(ValueError) as seed_alone:
        opts.check_perm()
    assert str(seed_alone.value) == cli_error(cli + ["--perm-seed", str(SEED)], capsys)
    with pytest.raises(ValueError) as within_alone:
        ScanParams(within=covar_file)  # the library's own refusal
    assert str(within_alone.value) == cli_error(cli + ["--within", covar_file], capsys)


def test_without_perm_the_seed_and_clusters_are_off_and_not_the_scans(window, clusters):
    rp = window.run_panel
    set_perm(window, within=clusters)
    assert rp.perm_seed.isEnabled() and rp.file_edits["within"].isEnabled() and rp.file_buttons["within"].isEnabled()
    rp.perm.setValue(0)
    assert not (rp.perm_seed.isEnabled() or rp.file_edits["within"].isEnabled() or rp.file_buttons["within"].isEnabled())
    opts = rp.run_options()  # no refusal: a scan without permutations
    assert (opts.params.perm, opts.params.perm_seed, opts.params.within) == (0, 0, None)
    assert not {"--perm", "--perm-seed", "--within"} & set(opts.cli_args())
    assert rp.perm_seed.value() == SEED and rp.file_edits["within"].text() == clusters  # kept for later
    rp.perm.setValue(5)
    assert rp.run_options().params.within == clusters and rp.run_options().params.perm_seed == SEED


def test_a_bad_within_file_is_refused_before_the_scan(qtbot, window, study_prefix, tmp_path):
    load(qtbot, window, study_prefix)
    bad = tmp_path / "clusters.txt"
    with open(study_prefix + ".fam") as f:
        bad.write_text("".join(f"{l.split()[0]} {l.split()[1]} c1\n" for l in list(f)[:-1]))  # the last sample left out
    set_perm(window, within=str(bad))
    screened = []
    window.scanProgress.connect(screened.append)
    with qtbot.waitSignal(window.taskFailed, timeout=30000) as failed:
        assert window.start_scan()
    title, message = failed.args
    assert title == "Problem with the input" and message.startswith(f"{bad}: sample ")
    assert "has no cluster" in message
    assert_one_line_dialog(window, title, message)
    assert screened == [] and window.result is None  # refused before any tile


class HeldPermutations:
    """Counts the permutations the scan computes (``calls``); past the first ``free``, each waits
    until ``release()`` (a test cancels while one is held, so the cancel surely lands mid-run).
    The free ones take at least ``pace`` seconds each: the window draws at most 20 progress
    events a second (gui/worker.py), so at this pace it draws each permutation's."""

    def __init__(self, monkeypatch, free=None, pace=0.0):
        from gboost.pipeline import permute

        self.calls = 0
        self.free = free
        self.released = threading.Event()
        self.holding = threading.Event()
        if free is None:
            self.released.set()
        real = permute.relabelled_maximum
        held = self

        def relabelled_maximum(*args, **kwargs):
            held.calls += 1  # (one worker thread runs them, in order)
            if held.calls > (held.free or 0):
                held.holding.set()
                assert held.released.wait(120), "the test never released the held permutations"
            elif pace:
                time.sleep(pace)
            return real(*args, **kwargs)

        monkeypatch.setattr(permute, "relabelled_maximum", relabelled_maximum)

    def release(self) -> None:
        self.released.set()


def cli_files(out) -> dict:
    return {name: (out / name).read_bytes() for name in PERM_FILES}


def gui_files(result) -> dict:
    files = render_outputs(result)
    return {name: files[name].encode() for name in PERM_FILES}


def test_a_perm_scan_shows_emp2_the_family_wise_line_and_the_summary(qtbot, window, study_prefix, clusters,
                                                                    cli_perm_dir, monkeypatch):
    from gboost.stats.pvalues import chi2_sf

    counter = HeldPermutations(monkeypatch)
    load(qtbot, window, study_prefix)
    set_perm(window, within=clusters)
    events = []
    window.scanProgress.connect(lambda ev: events.append((ev.unit, ev.pairs_done, ev.pairs_total)))
    result = scan(qtbot, window, timeout=120000)
    assert counter.calls == N_PERM
    # the progress counted the permutations, to the last
    perms = [e for e in events if e[0] == "permutations"]
    assert perms and perms[-1] == ("permutations", N_PERM, N_PERM)
    assert [e[1] for e in perms] == sorted(e[1] for e in perms)
    # the files are the CLI's --perm run's, byte for byte (EMP2 in pairs.tsv, the maxima in perm.tsv)
    assert gui_files(result) == cli_files(cli_perm_dir)
    run = json.loads(render_outputs(result)["run.json"])["permutations"]
    cli_run = json.loads((cli_perm_dir / "run.json").read_text())["permutations"]
    assert (run["n"], run["seed"], run["strata"], run["threshold_0.05"]) == \
        (N_PERM, SEED, 3, cli_run["threshold_0.05"])
    # the table: EMP2 last, as pairs.tsv has it, each cell the file's text
    model = window.pairs.model
    assert model.columns[-1] == "EMP2"
    tsv = (cli_perm_dir / "pairs.tsv").read_text().splitlines()
    assert tsv[0].split("\t")[-1] == "EMP2"
    col = model.columns.index("EMP2")
    cli_emp2 = [line.split("\t")[-1] for line in tsv[1:]]
    assert [model.cell_text(model.pair_row(r), "EMP2") for r in range(model.rowCount())] == cli_emp2
    assert model.headerData(col, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole).startswith("Family-wise P")
    # ... sorted by it as numbers, and filtered by it
    window.pairs.proxy.sort(col, Qt.SortOrder.AscendingOrder)
    shown = [float(model.cell_text(model.pair_row(r), "EMP2")) for r in range(model.rowCount())]
    assert shown == sorted(float(x) for x in cli_emp2)
    window.pairs.set_significance("emp2", 0.05)
    n_sig = sum(float(x) <= 0.05 for x in cli_emp2)
    assert 0 < n_sig < len(cli_emp2) and window.pairs.proxy.rowCount() == n_sig
    window.pairs.set_significance("all")
    # the selected pair's read-out gives its EMP2
    top = int(np.argmin(result.reported.emp2))
    assert window.interactions.describe_point(top).endswith(f"   EMP2 = {result.reported.emp2[top]:.4g}")
    # the Manhattan's interaction track: the permutations' line at the threshold's 4-df P, captioned
    t05 = cli_run["threshold_0.05"]
    line = window.manhattan.perm_line
    assert line.isVisible()
    assert line.value() == pytest.approx(-np.log10(chi2_sf(t05, 4)), rel=1e-9)
    assert line.value() == pytest.approx(-np.log10(cli_run["threshold_0.05_p_by_df"]["4"]), rel=1e-9)
    caption = line.label.toPlainText()
    assert caption == f"family-wise 0.05, {N_PERM} permutations (STAT > {t05:.4g})"
    assert window.manhattan.bonferroni_line.isVisible()  # beside Bonferroni's, not instead
    # the upper line's caption above it, the lower's below: neither caption crosses the other line
    bonf = window.manhattan.bonferroni_line
    upper, lower = (line, bonf) if line.value() >= bonf.value() else (bonf, line)
    assert upper.label.anchors[0][1] == 1 and lower.label.anchors[0][1] == 0
    lo, hi = window.manhattan.pair_plot.getViewBox().viewRange()[1]
    assert lo < line.value() < hi  # in view
    # the summary and the status line say what the permutations found
    text = window.summary.fields["Permutations"].text()
    assert text.startswith(f"{N_PERM} permutations, family-wise 0.05 threshold STAT > {t05:.4g} (P < ")
    assert text.endswith(f"; {n_sig} reported pair{'s' if n_sig != 1 else ''} with EMP2 ≤ 0.05")
    assert "3 clusters" in window.summary.fields["Permutations"].toolTip()
    assert f"{N_PERM} permutations, family-wise" in window.run_panel.rate_label.text()
    log = window.log_view.toPlainText()
    assert f"--perm {N_PERM} --perm-seed {SEED} --within {clusters}" in log  # the command that repeats it
    assert "within 3 clusters" in log
    # Export all writes the CLI's perm.tsv too
    out = window.export_all  # (the window's Export all, through its task)
    with qtbot.waitSignal(window.exportFinished, timeout=30000):
        assert out(str(cli_perm_dir.parent / "gui_export"))
    assert (cli_perm_dir.parent / "gui_export" / "perm.tsv").read_bytes() == (cli_perm_dir / "perm.tsv").read_bytes()


def test_a_scan_without_perm_has_no_emp2_nor_line(qtbot, scanned):
    win = scanned
    assert "EMP2" not in win.pairs.model.columns
    assert not win.manhattan.perm_line.isVisible()
    assert win.manhattan.bonferroni_line.label.anchors[0][1] == 1  # alone: its caption above it
    assert win.summary.fields["Permutations"].text() == "none (--perm off)"
    emp2 = win.pairs.sig_mode.model().item(win.pairs.sig_mode.findData("emp2"))
    assert not emp2.isEnabled()


def test_too_few_permutations_draw_no_line_and_say_why(qtbot, window, study_prefix):
    load(qtbot, window, study_prefix)
    set_perm(window, n=3)
    result = scan(qtbot, window)
    assert result.perm.n == 3 and result.perm.threshold(0.05) is None
    assert window.pairs.model.columns[-1] == "EMP2"
    assert not window.manhattan.perm_line.isVisible()
    assert window.summary.fields["Permutations"].text() == \
        "3 permutations, too few for a family-wise 0.05 threshold (19 or more)"
    # EMP2 is shown beside P (the file has it last, beyond the window's width)
    hh, cols = window.pairs.table.horizontalHeader(), window.pairs.model.columns
    assert hh.visualIndex(cols.index("EMP2")) == hh.visualIndex(cols.index("P")) + 1
    # the next scan, without --perm: no EMP2, the file's order again
    window.run_panel.perm.setValue(0)
    scan(qtbot, window)
    assert "EMP2" not in window.pairs.model.columns
    hh = window.pairs.table.horizontalHeader()
    assert [hh.visualIndex(k) for k in range(hh.count())] == list(range(hh.count()))


@pytest.fixture
def perm_interrupted(qtbot, window, study_prefix, clusters, monkeypatch):
    """A window whose --perm scan was cancelled while its fourth permutation ran."""
    load(qtbot, window, study_prefix)
    set_perm(window, within=clusters)
    counter = HeldPermutations(monkeypatch, free=3, pace=0.08)
    seen = {}
    bar = window.run_panel.progress
    with qtbot.waitSignal(window.scanCancelled, timeout=60000):
        assert window.start_scan()
        qtbot.waitUntil(counter.holding.is_set, timeout=60000)  # three done, the fourth held
        qtbot.waitUntil(lambda: bar.text() == f"3 of {N_PERM} permutations", timeout=10000)
        seen["bar"], seen["label"] = bar.text(), window.run_panel.rate_label.text()
        qtbot.mouseClick(window.run_panel.cancel_button, Qt.MouseButton.LeftButton)
        counter.release()
    qtbot.waitUntil(lambda: not window.busy)
    window.counter, window.seen = counter, seen
    return window


def perm_checkpoint(win):
    return checkpoints.directory_for(win.path, win.run_panel.qc_options(), win.run_panel.scan_params())


def test_cancel_during_the_permutations_keeps_them_and_resume_continues(qtbot, perm_interrupted, cli_perm_dir):
    win = perm_interrupted
    assert win.seen["bar"] == f"3 of {N_PERM} permutations"
    assert win.seen["label"].startswith(f"Permutation 3 of {N_PERM} · ")
    found = checkpoints.interrupted(perm_checkpoint(win))
    assert found is not None and found.done == found.total  # the screen had finished
    assert found.perms_total == N_PERM and found.perms_done in (3, 4)  # the fourth: cancelled or just done
    assert f"finished tiles and {found.perms_done} of {N_PERM} permutations are kept" in win.run_panel.rate_label.text()
    assert win.result is None
    win.counter.calls = 0
    with qtbot.waitSignal(win.resumeOffered, timeout=5000) as offered:
        assert win.start_scan()
    box = offered.args[0]
    assert box.text() == (f"Resume the interrupted scan ({found.total:,} of {found.total:,} tiles and "
                          f"{found.perms_done} of {N_PERM} permutations done)?")
    assert f"--perm {N_PERM} --perm-seed {SEED}" in box.informativeText()
    with qtbot.waitSignal(win.scanFinished, timeout=60000) as finished:
        box.resume_button.click()
    result = finished.args[0]
    assert win.counter.calls == N_PERM - found.perms_done  # only the missing permutations were run
    assert result.perm.resumed == found.perms_done
    assert gui_files(result) == cli_files(cli_perm_dir)  # the uninterrupted CLI run's files
    qtbot.waitUntil(lambda: not win.busy)
    assert not perm_checkpoint(win).exists()
    assert f"{found.perms_done} resumed from the checkpoint" in win.summary.fields["Permutations"].toolTip()


@pytest.fixture(scope="module")
def qt_prefix(tmp_path_factory):
    from gboost.data.simulate import simulate_qt_study

    st = simulate_qt_study(40, 200, seed=5, chromosomes=2, effects=[(3, 30, 0.6)])
    prefix = str(tmp_path_factory.mktemp("qtperm") / "qt")
    st.write(prefix)
    return prefix


def test_a_quantitative_trait_with_perm_gets_the_librarys_answer(qtbot, window, qt_prefix, tmp_path, capsys):
    """Permutations of a quantitative trait are the library's to give: where its QT scan has none
    (QTParams without ``perm``) the window refuses as the CLI does, in one line; where it has
    them, the scan runs them."""
    import dataclasses

    from gboost.pipeline.qt_scan import QTParams

    load(qtbot, window, qt_prefix)
    set_perm(window, n=N_PERM)
    window.run_panel.epi1.setText("0.01")
    if "perm" in {f.name for f in dataclasses.fields(QTParams)}:
        result = scan(qtbot, window, timeout=120000)
        assert getattr(result, "perm", None) is not None and result.perm.n == N_PERM
        return
    with qtbot.waitSignal(window.taskFailed, timeout=30000) as failed:
        assert window.start_scan()
    title, message = failed.args
    cli = cli_error(["scan", "--bfile", qt_prefix, "--out", str(tmp_path / "o"), "--perm", str(N_PERM), "--quiet"],
                    capsys)
    assert "quantitative" in cli and message.split(": ", 1)[1] == cli.split(": ", 1)[1]
    assert_one_line_dialog(window, "Problem with the input", message)
    assert window.result is None
