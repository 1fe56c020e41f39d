"""What was left of an afternoon's use once each view had its own test: a resumed scan leaves no
selection of the old result, the QQ and pathway tabs keep readable plots in a small window, and
``gboost-gui``'s scripted start (``--epi1``, ``--covar``, ``--then``) that the screenshots use."""
import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from gboost.data.simulate import PlantedPair, simulate_study
from gui import app
from gui.models import ADJ_COLUMNS, COLUMNS
from guihelpers import EPI1, HeldTiles, cancel_at_first_progress, load


@pytest.fixture(scope="module")
def second_prefix(tmp_path_factory) -> str:
    sim = simulate_study(60, 100, 100, seed=31, chromosomes=2, missing_rate=0.0,
                         planted=[PlantedPair(5, 40, "xor", 5.0)])
    prefix = str(tmp_path_factory.mktemp("second") / "second")
    sim.write(prefix)
    return prefix


def covar_file_for(prefix, path):
    with open(prefix + ".fam") as fam:
        rows = [line.split() for line in fam]
    rng = np.random.default_rng(3)
    path.write_text("FID IID AGE SEXC\n" + "".join(f"{r[0]} {r[1]} {30 + k % 45} {rng.integers(0, 2)}\n"
                                                 for k, r in enumerate(rows)))
    return str(path)


def test_a_resumed_scan_leaves_no_selection_of_the_result_it_replaces(qtbot, scanned, monkeypatch):
    win = scanned
    k = int(win.reported.i[0])
    win.select_snp(k)
    assert win.manhattan.selected == k and win.pathways.selected_snp == k and win.pairs.chip.isVisible()
    win.run_panel.tile.setValue(16)  # another plan: a scan of its own, cancelled after a tile
    cancel_at_first_progress(qtbot, win, HeldTiles(monkeypatch, free=1))
    assert win.selected_snp == k  # the cancelled scan left the previous result, its selection with it
    with qtbot.waitSignal(win.scanFinished, timeout=60000):
        assert win.start_scan(resume=True)
    assert "Resuming the interrupted scan" in win.log_view.toPlainText()
    assert win.selected_snp is None and win.manhattan.selected is None and win.pathways.selected_snp is None
    assert not win.pairs.chip.isVisible() and win.pairs.proxy.partner_snp is None
    assert all(p.readout.text().strip() == "" for p in win.plots.values())


def sized_window(qtbot, size):
    """A window as ``gboost-gui --size WxH`` opens it: that size, the docks in proportion to it."""
    from gui.main_window import MainWindow

    win = MainWindow(gpu_info=(False, "no GPU in tests"))
    qtbot.addWidget(win)
    win.run_panel.engine.setCurrentIndex(win.run_panel.engine.findData("cpu"))
    win.resize(*size)
    win._fit_docks_on_show = True
    win.show()
    return win


def title_fits(panel, plot) -> bool:
    """The title's text lies inside the plot widget (a long one ran past its right edge)."""
    item = plot.titleLabel.item
    box = item.mapRectToScene(item.boundingRect())
    return box.left() >= 0 and box.right() <= panel.plot_widget.viewport().width()


@pytest.mark.parametrize("size", [(1280, 720), (1366, 768)])
def test_the_qq_and_pathway_tabs_keep_readable_plots_in_a_small_window(qtbot, study_prefix, size):
    win = sized_window(qtbot, size)
    load(qtbot, win, study_prefix)
    win.run_panel.epi1.setText(EPI1)
    with qtbot.waitSignal(win.scanFinished, timeout=60000):
        assert win.start_scan()
    for widget in (win.qq, win.pathways):
        win.tabs.setCurrentWidget(widget)
        QApplication.processEvents()
    for plot in (win.qq.plot, win.qq.iplot):  # both side by side, each title whole
        r = plot.getViewBox().sceneBoundingRect()
        assert r.width() >= 250 and r.height() >= 200, (plot.titleLabel.text, size, r)
        assert title_fits(win.qq, plot), (plot.titleLabel.text, size)
    # the pathway graph: no 150-pixel knot under its controls and key
    r = win.pathways.plot.getViewBox().sceneBoundingRect()
    assert r.width() >= 500 and r.height() >= 200, (size, r)
    assert win.wait_idle(30000)


def test_a_laptop_window_shows_six_pairs_and_its_controls_on_one_row(qtbot, study_prefix):
    """At 1366 x 768 the pairs table shows at least six whole rows (the search, the filters and the
    count on one row above it: on two rows it showed four and a half), every control whole."""
    win = sized_window(qtbot, (1366, 768))
    load(qtbot, win, study_prefix)
    win.run_panel.epi1.setText(EPI1)
    with qtbot.waitSignal(win.scanFinished, timeout=60000):
        assert win.start_scan()
    QApplication.processEvents()
    table = win.pairs.table
    rows = table.viewport().height() // table.verticalHeader().defaultSectionSize()
    assert rows >= 6, rows
    p = win.pairs
    ys = {w.mapTo(p, w.rect().center()).y() for w in (p.search, p.sig_mode, p.ld_r2, p.ld_kb, p.hide_ld, p.count)}
    assert max(ys) - min(ys) <= 4, ys  # one row
    for w in (p.search, p.sig_mode, p.sig_value, p.ld_r2, p.ld_kb, p.count):
        assert w.width() >= w.minimumSizeHint().width() or w.width() >= w.minimumWidth(), w
    assert win.wait_idle(30000)


def test_a_narrow_pairs_panel_puts_its_filters_on_a_row_of_their_own(qtbot):
    """The filters never set the window's least width: below the width of one row they move under
    the search, and back when the panel widens."""
    from gui.pairs_view import PairsView

    view = PairsView()
    qtbot.addWidget(view)
    view.resize(600, 300)
    view.show()
    qtbot.waitExposed(view)
    assert view._top.indexOf(view.filters) < 0 and view.minimumSizeHint().width() < 700
    view.resize(1200, 300)
    qtbot.waitUntil(lambda: view._top.indexOf(view.filters) >= 0, timeout=2000)
    view.resize(600, 300)
    qtbot.waitUntil(lambda: view._top.indexOf(view.filters) < 0, timeout=2000)


def test_the_scripted_start_types_epi1_opens_the_second_study_and_gives_it_the_covariates(
        qtbot, window, study_prefix, second_prefix, tmp_path):
    covar = covar_file_for(second_prefix, tmp_path / "covar.txt")
    args = app.parse_args([study_prefix, "--run", "--epi1", EPI1, "--then", second_prefix, "--covar", covar])
    window.run_panel.epi1.setText(args.epi1)
    done, scanned = [], []
    window.scanFinished.connect(lambda r: scanned.append(window.path))
    app.drive(window, args, lambda: done.append(window.path))
    assert window.open_path(args.prefix)
    qtbot.waitUntil(lambda: bool(done), timeout=120000)
    assert scanned == [study_prefix, second_prefix] and done == [second_prefix]
    assert window.windowTitle() == "gboost: second" and window.result.study.n_snps == 60
    assert window.run_panel.epi1.text() == EPI1
    assert window.pairs.model.columns == COLUMNS + ADJ_COLUMNS  # the second study's covariate scan
    header = [window.pairs.proxy.headerData(c, Qt.Orientation.Horizontal) for c in range(window.pairs.proxy.columnCount())]
    assert header[-3:] == list(ADJ_COLUMNS)
    assert "--covar" in next(x for x in window.log_view.toPlainText().splitlines()[::-1] if "Settings: " in x)
    # a study opened afterwards is the user's: it neither scans nor takes the covariates
    load(qtbot, window, study_prefix)
    qtbot.wait(300)
    assert not window.busy and window.result is None and window.run_panel.file_edits["covar"].text() == ""


def test_the_script_flags_parse():
    ns = app.parse_args(["p", "--epi1", "1e-4", "--covar", "c.txt", "--then", "q"])
    assert (ns.epi1, ns.covar, ns.then) == ("1e-4", "c.txt", "q")
    ns = app.parse_args([])
    assert ns.epi1 is None and ns.covar is None and ns.then is None


def test_after_a_covariate_scan_p_adj_is_in_view_beside_p_at_1366x768(qtbot, study_prefix, tmp_path):
    win = sized_window(qtbot, (1366, 768))
    load(qtbot, win, study_prefix)
    win.run_panel.epi1.setText(EPI1)
    win.run_panel.file_edits["covar"].setText(covar_file_for(study_prefix, tmp_path / "covar.txt"))
    with qtbot.waitSignal(win.scanFinished, timeout=60000):
        assert win.start_scan()
    QApplication.processEvents()
    cols, hh = win.pairs.model.columns, win.pairs.table.horizontalHeader()
    assert [hh.visualIndex(cols.index(c)) for c in ("P", "P_ADJ", "STAT_ADJ", "DF_ADJ")] == \
        [hh.visualIndex(cols.index("P")) + k for k in range(4)]
    p_adj = cols.index("P_ADJ")
    right = hh.sectionViewportPosition(p_adj) + hh.sectionSize(p_adj)
    assert hh.sectionViewportPosition(p_adj) >= 0 and right <= win.pairs.table.viewport().width(), \
        (right, win.pairs.table.viewport().width())
    win.show_pair(0)  # the selected pair's line under the plot: P_ADJ in it, and all of it in view
    QApplication.processEvents()
    line = win.manhattan.readout
    assert "P_ADJ = " in line.text() and line.sizeHint().width() <= line.width(), (line.text(), line.width())
    assert win.wait_idle(30000)
