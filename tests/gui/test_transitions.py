"""State across actions in the window: what one action leaves must be what the next one shows
(a second study, a covariate scan, settings per study, the selection, export, shortcuts, the log)."""
import os
import shlex

import numpy as np
import pytest
from PySide6.QtCore import QRect, Qt

from guihelpers import EPI1, load, scan
from gboost.data.simulate import PlantedPair, simulate_study
from gboost.pipeline.progress import Progress
from gui import settings
from gui.loading import canonical
from gui.models import ADJ_COLUMNS, COLUMNS, FULL_TEXT_ROLE


@pytest.fixture(scope="module")
def second_prefix(tmp_path_factory) -> str:
    """Another study: one chromosome, 50 SNPs (the first has three and 240)."""
    sim = simulate_study(50, 120, 120, seed=77, chromosomes=1, missing_rate=0.0,
                         planted=[PlantedPair(3, 30, "xor", 5.0)])
    prefix = str(tmp_path_factory.mktemp("second") / "second")
    sim.write(prefix)
    return prefix


@pytest.fixture
def covar_file(study_prefix, tmp_path):
    path = tmp_path / "covar.txt"
    with open(study_prefix + ".fam") as fam:
        rows = [line.split() for line in fam]
    rng = np.random.default_rng(5)
    path.write_text("FID IID age pc1\n" + "".join(f"{r[0]} {r[1]} {30 + k % 40} {rng.normal():.4f}\n"
                                                for k, r in enumerate(rows)))
    return str(path)


def test_opening_a_second_study_leaves_nothing_of_the_first_on_screen(qtbot, scanned, second_prefix):
    win = scanned
    k = int(win.reported.i[0])
    win.select_snp(k)
    win.manhattan.readout.setText("snp21 chr1:… (hovered)")
    assert "240 SNPs" in win.manhattan.plot.titleLabel.text and win.interactions.grid_lines
    load(qtbot, win, second_prefix)
    assert win.result is None and win.reported is None and win.graph is None and win.selected_snp is None
    m = win.manhattan
    # the second study's own single-locus test (one chromosome, in Mb), none of the first's
    assert m.plot.titleLabel.text.startswith("Manhattan plot: single-locus test of 50 SNPs") and m.selected is None
    np.testing.assert_array_equal(m.plotted_snps(), np.arange(50))
    assert m.plot.getAxis("bottom").labelText == "Position on chromosome 1 (Mb)"
    assert m.plot.getAxis("bottom")._tickLevels is None and not len(m.interaction_track()[0])
    assert win.qq.plot.titleLabel.text == "QQ plot of the single-locus test"
    assert win.qq.iplot.titleLabel.text == "QQ plot of the interaction test" and not win.qq.exp.size
    assert not win.interactions.grid_lines and win.interactions.plot.getAxis("bottom")._tickLevels is None
    assert win.pathways.graph is None and win.pathways.plot.titleLabel.text == "Pathway graph"
    assert all(p.readout.text().strip() == "" for p in win.plots.values())  # no info line of the old SNPs
    assert win.pairs.model.pairs is None and not win.pairs.chip.isVisible()
    assert win.summary.fields["Reported pairs"].text() == "–"
    assert win.summary.fields["SNPs"].text() == "50" and win.windowTitle() == "gboost: second"


def test_a_covariate_scan_shows_the_adjusted_test_and_its_covariates_stay_with_their_study(
        qtbot, window, study_prefix, second_prefix, covar_file):
    from gui.export import render

    load(qtbot, window, study_prefix)
    window.run_panel.epi1.setText(EPI1)
    window.run_panel.file_edits["covar"].setText(covar_file)
    result = scan(qtbot, window)
    model = window.pairs.model
    assert model.columns == COLUMNS + ADJ_COLUMNS
    header = [window.pairs.proxy.headerData(c, Qt.Orientation.Horizontal) for c in range(window.pairs.proxy.columnCount())]
    assert header[-3:] == list(ADJ_COLUMNS)
    lines = render(result, "pairs_tsv").splitlines()
    proxy = window.pairs.proxy
    assert ["\t".join(proxy.index(r, c).data(FULL_TEXT_ROLE) for c in range(proxy.columnCount()))
            for r in range(proxy.rowCount())] == lines[1:]
    p_adj = len(COLUMNS) + 2
    window.pairs.table.sortByColumn(p_adj, Qt.SortOrder.AscendingOrder)
    shown = [float(proxy.index(r, p_adj).data(FULL_TEXT_ROLE)) for r in range(proxy.rowCount())]
    assert shown == sorted(shown) and len(shown) == len(result.reported)
    window.show_pair(0)
    assert "P_ADJ" in window.interactions.readout.text()
    # the covariates are this study's: another study opens without them, this one gets them back
    load(qtbot, window, second_prefix)
    assert window.run_panel.file_edits["covar"].text() == ""
    assert window.run_panel.run_options().covar is None
    load(qtbot, window, study_prefix)
    assert window.run_panel.file_edits["covar"].text() == covar_file


def test_the_progress_names_the_last_stage_instead_of_sitting_at_100_percent(window):
    rp = window.run_panel
    rp.show_progress(Progress(9, 10, 90, 100, 9.0))
    assert rp.progress.value() == 900 and "ETA" in rp.rate_label.text()
    rp.show_progress(Progress(10, 10, 100, 100, 10.0))
    assert rp.progress.maximum() == 0  # a busy bar: the work goes on
    assert "finishing" in rp.rate_label.text() and "ETA 00:00" not in rp.rate_label.text()
    rp.set_running(False)
    assert rp.progress.maximum() == 1000


def test_cancel_in_the_last_stage_is_honoured_and_resume_gives_the_result(qtbot, window, study_prefix, monkeypatch):
    from gui import scan_actions

    real = scan_actions.run_pipeline

    def pressed_after_the_last_tile(*args, **kwargs):
        result = real(*args, **kwargs)
        window.task.cancel()  # Cancel pressed while the exact tests and outputs ran
        return result

    monkeypatch.setattr(scan_actions, "run_pipeline", pressed_after_the_last_tile)
    load(qtbot, window, study_prefix)
    window.run_panel.epi1.setText(EPI1)
    with qtbot.waitSignal(window.scanCancelled, timeout=60000):
        assert window.start_scan()
    assert window.result is None
    monkeypatch.setattr(scan_actions, "run_pipeline", real)
    with qtbot.waitSignal(window.scanFinished, timeout=60000):
        assert window.start_scan(resume=True)
    assert "Resuming the interrupted scan" in window.log_view.toPlainText()


def test_a_typed_epi1_stays_when_another_study_opens_even_at_a_default_value(qtbot, window, study_prefix,
                                                                            second_prefix):
    load(qtbot, window, study_prefix)
    window.run_panel.epi1.setText("1e-4")  # the linear test's default, typed for a case-control study
    load(qtbot, window, second_prefix)
    assert window.run_panel.epi1.text() == "1e-4"
    window.run_panel.restore_defaults()
    assert window.run_panel.epi1.text() == "5e-6" and not window.run_panel.epi1_typed


def test_a_refused_study_leaves_the_loaded_ones_settings(qtbot, window, nosex_copy):
    loaded = nosex_copy("kept")
    refused = nosex_copy("refused")
    settings.set_study_allow_no_sex(canonical(loaded), True)
    load(qtbot, window, loaded)
    assert window.run_panel.allow_no_sex.isChecked()
    with qtbot.waitSignal(window.taskFailed, timeout=30000) as failed:
        assert window.open_path(refused)
    assert "--allow-no-sex" in failed.args[1]
    assert window.run_panel.allow_no_sex.isChecked()  # still the loaded study's setting
    assert window.path == loaded and window.study.layout.n_case > 0
    assert not settings.study_allow_no_sex(canonical(refused))


def test_a_pair_of_another_snp_clears_the_snp_selection_everywhere(scanned):
    win, rep = scanned, scanned.reported
    k = int(rep.i[0])
    win.select_snp(k)
    assert win.pairs.chip.isVisible() and win.pathways.selected_snp == k
    other = next(r for r in range(len(rep)) if k not in (int(rep.i[r]), int(rep.j[r])))
    win._pair_clicked(other)  # a click in the interaction map
    a, b = int(rep.i[other]), int(rep.j[other])
    assert win.selected_snp is None and not win.pairs.chip.isVisible() and win.pairs.proxy.partner_snp is None
    assert win.manhattan.selected == a and list(win.manhattan.partners) == [b]
    assert win.pathways.selected_snp == a and win.pathways.neighbour_snps == [b]
    v = win.result.study.variants
    for plot in (win.manhattan, win.interactions, win.pathways):
        assert str(v.snp[a]) in plot.readout.text() and str(v.snp[k]) not in plot.readout.text().replace(str(v.snp[a]), "")
    assert win.pairs.table.currentIndex().isValid()
    assert win.pairs.proxy.pair_row(win.pairs.table.currentIndex().row()) == other


def test_a_new_scan_leaves_no_selection_of_the_old_one(qtbot, scanned):
    win = scanned
    k = int(win.reported.i[0])
    win.select_snp(k)
    assert win.pathways.selected_snp == k and win.manhattan.selected == k
    scan(qtbot, win)
    assert win.selected_snp is None and win.manhattan.selected is None
    assert win.pathways.selected_snp is None  # the pathway graph's yellow node went too
    assert not win.pairs.chip.isVisible()
    assert all(p.readout.text().strip() == "" for p in win.plots.values())


def test_the_snp_chip_says_when_a_search_term_narrows_it_too(qtbot, scanned):
    win, rep = scanned, scanned.reported
    k = int(rep.i[0])
    v = win.result.study.variants
    win.pairs.search.setText("snp1")
    win.pairs.apply_search("snp1")
    win.select_snp(k)
    assert str(v.snp[k]) in win.pairs.chip.text() and "snp1" in win.pairs.chip.text()
    win.pairs.apply_search("")
    assert "snp1" not in win.pairs.chip.text() and str(v.snp[k]) in win.pairs.chip.text()


def test_an_export_leaves_the_run_panel_as_the_scan_left_it(qtbot, scanned, tmp_path):
    rp = scanned.run_panel
    text = rp.rate_label.text()
    assert text.startswith("Scan done") and rp.progress.value() == rp.progress.maximum()
    with qtbot.waitSignal(scanned.exportFinished, timeout=30000):
        assert scanned.export_file("pairs_tsv", str(tmp_path / "pairs.tsv"))
    assert rp.rate_label.text() == text and rp.progress.value() == rp.progress.maximum()


def test_ctrl_e_exports_from_the_search_box(qtbot, scanned, monkeypatch):
    """On X11 a line edit binds Ctrl+E (end of line) and took it from the window; the offscreen
    platform's key bindings have no Ctrl+E, so there this only shows the shortcut reaches Export."""
    from gui import export_actions

    asked = []
    monkeypatch.setattr(export_actions.QFileDialog, "getExistingDirectory",
                        staticmethod(lambda *a, **k: asked.append(a) or ""))
    scanned.activateWindow()
    scanned.pairs.search.setFocus()
    qtbot.waitUntil(lambda: scanned.pairs.search.hasFocus(), timeout=5000)
    qtbot.keyClick(scanned.pairs.search, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert len(asked) == 1


def test_the_log_writes_the_command_that_reproduces_the_scan(scanned, study_prefix):
    from gboost.cli import build_parser

    line = next(x for x in scanned.log_view.toPlainText().splitlines() if "Settings: " in x)
    args = shlex.split(line.split("Settings: ", 1)[1])
    assert args[:2] == ["gboost", "scan"]
    ns = build_parser().parse_args(args[1:])
    assert ns.bfile == study_prefix and ns.out and ns.epi1 == float(EPI1) and ns.device == "cpu"
    assert os.path.basename(ns.out) == "study_gboost"


def test_the_first_window_fits_a_1366x768_screen(qtbot, monkeypatch):
    from gui import main_window

    monkeypatch.setattr(main_window, "available_area", lambda widget: QRect(0, 0, 1366, 728))  # less a task bar
    win = main_window.MainWindow(gpu_info=(False, "no GPU in tests"))
    qtbot.addWidget(win)
    assert win.width() <= 1366 and win.height() <= 728 - 30  # room for the title bar
    assert win.x() >= 0 and win.y() >= 0
