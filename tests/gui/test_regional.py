"""The regional (LocusZoom-style) view: the SNPs around each SNP of a pair, coloured by their LD
with it, reached from the table, kept in the application state, cleared by a new study, and
written by Export all."""
import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage

from gboost.data.simulate import PlantedPair, simulate_study
from guihelpers import load, non_white_fraction, scan

N_PER_CHROM = 150
SPACING = 15_000  # bp between neighbours: a ±250 kb region holds about 33 SNPs
# LocusZoom's classes, written out here rather than read from gui.regional: the view must draw these
CLASSES = ((0.8, "#d43f3a"), (0.6, "#eea236"), (0.4, "#5cb85c"), (0.2, "#46b8da"), (0.0, "#357ebd"))
NONE = "#a0a0a0"


@pytest.fixture(scope="module")
def ld_sim():
    """300 SNPs 15 kb apart on chromosomes 1 and 2, in LD blocks of 12, one planted pair across them."""
    chrom = ["1"] * N_PER_CHROM + ["2"] * N_PER_CHROM
    bp = [100_000 + SPACING * (k % N_PER_CHROM) for k in range(2 * N_PER_CHROM)]
    return simulate_study(2 * N_PER_CHROM, 300, 300, seed=11, positions=(chrom, bp), ld_block=12, ld_rho=0.95,
                          maf_range=(0.25, 0.5),
                          missing_rate=0.01, planted=[PlantedPair(40, 220, "xor", 6.0)])


@pytest.fixture(scope="module")
def ld_prefix(ld_sim, tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("ld") / "ld")
    ld_sim.write(prefix)
    return prefix


@pytest.fixture
def ld_window(qtbot, window, ld_prefix):
    load(qtbot, window, ld_prefix)
    window.run_panel.epi1.setText("1e-3")
    scan(qtbot, window)
    assert len(window.reported)
    return window


def bim(prefix):
    rows = [line.split() for line in open(prefix + ".bim")]
    return [r[0] for r in rows], [r[1] for r in rows], np.array([int(r[3]) for r in rows])


def expected_region(prefix, snp_id, half_width):
    """SNP IDs within ``half_width`` of ``snp_id`` on its chromosome, read from the .bim."""
    chrom, ids, bp = bim(prefix)
    k = ids.index(snp_id)
    return {ids[m] for m in range(len(ids)) if chrom[m] == chrom[k] and abs(bp[m] - bp[k]) <= half_width}


def direct_r2(g1, g2):
    both = (g1 >= 0) & (g2 >= 0)
    a, b = g1[both].astype(float), g2[both].astype(float)
    if a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1] ** 2)


def colour_class(r2):
    if not np.isfinite(r2):
        return NONE
    return next(c for lo, c in CLASSES if r2 >= lo)


def double_click_row(qtbot, win, view_row):
    table = win.pairs.table
    rect = table.visualRect(win.pairs.proxy.index(view_row, 1))
    assert table.viewport().rect().contains(rect.center())
    # a press first, as a user's: the view's double-click acts on the index the press was on
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


@pytest.mark.slow
def test_double_clicking_a_pair_shows_the_snps_around_each_of_its_snps(qtbot, ld_window, ld_prefix):
    win = ld_window
    double_click_row(qtbot, win, 0)
    row = win.pairs.proxy.pair_row(0)
    i, j = int(win.reported.i[row]), int(win.reported.j[row])
    assert win.state.region is not None and win.state.region.snps == (i, j)
    assert win.tabs.currentWidget() is win.regional
    v = win.result.study.variants
    for n, k in enumerate((i, j)):
        snps, x, colours = win.regional.shown(n)
        assert snps[0] == k and colours[0] == "#9632b8"  # the pair's SNP first, the purple diamond
        assert {str(v.snp[s]) for s in snps} == expected_region(ld_prefix, str(v.snp[k]), 250_000)
        assert len(snps) > 20
        np.testing.assert_array_equal(x, v.bp[snps])
        # every point inside the panel's visible x range, which is the ±250 kb around the SNP
        (x0, x1), _ = win.regional.panels[n].getViewBox().viewRange()
        assert x0 <= v.bp[k] - 250_000 and v.bp[k] + 250_000 <= x1 and x1 - x0 < 600_000
        assert str(v.snp[k]) in win.regional.panels[n].titleLabel.text
    # a narrower region: fewer SNPs, the ones within 100 kb
    win.regional.width_box.setValue(100)
    assert win.state.region.half_width_bp == 100_000
    snps, _, _ = win.regional.shown(0)
    assert {str(v.snp[s]) for s in snps} == expected_region(ld_prefix, str(v.snp[i]), 100_000)
    # the next region keeps the width; one chosen while none is shown counts as well
    assert win.show_region_of_snp(j) and win.state.region.half_width_bp == 100_000
    win.state.clear_region()
    win.regional.width_box.setValue(60)
    assert win.show_region_of_pair(row) and win.state.region.half_width_bp == 60_000


@pytest.mark.slow
def test_ld_colours_are_the_classes_of_a_direct_r2_from_the_genotypes(qtbot, ld_window, ld_sim):
    win = ld_window
    v = win.result.study.variants
    ids = list(ld_sim.variants.snp)
    seen = set()
    # the strongest pair (its SNPs are planted, outside the LD blocks), then a SNP inside a block
    for show in (lambda: win.show_region_of_pair(int(np.argmax(win.reported.stat))),
                 lambda: win.show_region_of_snp(int(np.flatnonzero(v.snp == "snp101")[0]))):
        assert show()
        for n, k in enumerate(win.state.region.snps):
            snps, _, colours = win.regional.shown(n)
            g_k = ld_sim.genotypes[ids.index(str(v.snp[k]))]
            for s, colour in zip(snps[1:], colours[1:]):
                want = colour_class(direct_r2(g_k, ld_sim.genotypes[ids.index(str(v.snp[s]))]))
                assert colour == want, (str(v.snp[k]), str(v.snp[s]))
                seen.add(colour)
    assert len(seen) >= 3  # the LD blocks give several classes: the comparison is not of one colour


@pytest.mark.slow
def test_best_interaction_heights_are_the_summary_and_the_single_locus_the_marginal_test(qtbot, ld_window):
    from gboost.stats.pvalues import neglog10_p

    win = ld_window
    win.show_region_of_snp(int(win.reported.i[0]))
    pts = win.regional.points[0]
    _, y = pts.getData()
    others = np.asarray(pts.data["data"], np.int64)  # the SNP of each point, in drawing order
    assert len(others) > 20
    want = neglog10_p(np.maximum(win.result.summary.best[others], 0), np.full(len(others), 4))
    np.testing.assert_allclose(y, want, rtol=1e-9)
    # the strongest pair's SNP stands at that pair's own exact P (BOOST's 4 df)
    row = int(np.argmax(win.reported.stat))
    win.show_region_of_pair(row)
    reg = win.regional.regions[0]
    centre = int(np.flatnonzero(reg.snps == reg.centre)[0])
    assert reg.best[centre] == pytest.approx(-np.log10(win.reported.p[row]), rel=1e-6)
    _, cy = win.regional.centres[0].getData()
    assert cy[0] == pytest.approx(reg.best[centre])
    win.regional.y_box.setCurrentIndex(win.regional.y_box.findData("single"))
    pts = win.regional.points[0]
    _, y = pts.getData()
    others = np.asarray(pts.data["data"], np.int64)
    np.testing.assert_allclose(y, -np.log10(win.result.marginal_p[others]), rtol=1e-9)
    assert "genotype LR" in win.regional.plot.getAxis("left").labelText


@pytest.mark.slow
def test_a_new_study_clears_the_regional_view(qtbot, ld_window, study_prefix):
    win = ld_window
    assert win.show_region_of_pair(0)
    old = win.regional.plot.titleLabel.text
    load(qtbot, win, study_prefix)
    assert win.state.region is None and not win.regional.regions and win.regional.result is None
    for item in (*win.regional.points, *win.regional.centres):
        assert len(item.getData()[0]) == 0
    assert win.regional.plot.titleLabel.text == "Regional view" and win.regional.plot.titleLabel.text != old
    assert not win.regional.plot2.isVisible()
    assert not win.show_region_of_snp(0)  # no result of the new study yet: nothing to show
    assert win.state.region is None


@pytest.mark.slow
def test_a_new_scan_clears_the_regional_view(qtbot, ld_window):
    win = ld_window
    assert win.show_region_of_pair(0)
    win.run_panel.epi1.setText("1e-4")
    scan(qtbot, win)
    assert win.state.region is None and not win.regional.regions


@pytest.mark.slow
def test_the_button_and_the_context_menu_show_the_selection(qtbot, ld_window):
    win = ld_window
    k = int(win.reported.j[0])
    win.select_snp(k)
    qtbot.mouseClick(win.regional.show_button, Qt.MouseButton.LeftButton)
    assert win.state.region.snps == (k,) and len(win.regional.regions) == 1
    assert not win.regional.plot2.isVisible()
    win.clear_selection()  # the table shows every pair again
    win.pairs.table.selectRow(1)
    win.pairs.region_action.trigger()
    row = win.pairs.proxy.pair_row(1)
    assert win.state.region.snps == (int(win.reported.i[row]), int(win.reported.j[row]))
    assert win.state.region.pair == row


def user_double_click(qtbot, widget, pos):
    """What a window gets from a user's double click: press, release, a double-click event in
    place of the second press, release (QTest's mouseDClick sends a second press as well, and
    pyqtgraph's scene then hands the plots a single click)."""
    from PySide6.QtCore import QEvent, QPointF
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QApplication

    left = Qt.MouseButton.LeftButton
    qtbot.mouseClick(widget, left, pos=pos)
    ev = QMouseEvent(QEvent.Type.MouseButtonDblClick, QPointF(pos), QPointF(widget.mapToGlobal(pos)), left, left,
                     Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, ev)
    qtbot.mouseRelease(widget, left, pos=pos)


@pytest.mark.slow
def test_a_double_click_in_the_manhattan_plot_shows_the_snps_region(qtbot, ld_window):
    win = ld_window
    m = win.manhattan
    win.tabs.setCurrentWidget(m)
    m.plot_widget.resize(1000, 600)
    m.reset_view()
    qtbot.wait(50)
    k = int(np.nanargmax(m.y))  # the highest point: no other under the cursor
    with qtbot.waitSignal(m.snpDoubleClicked, timeout=5000) as blocker:
        user_double_click(qtbot, m.plot_widget.viewport(), m.view_to_widget(m.x[k], m.y[k]))
    assert blocker.args == [k]
    assert win.state.region.snps == (k,) and win.tabs.currentWidget() is win.regional


@pytest.mark.slow
def test_export_all_writes_the_regional_view_as_png(qtbot, ld_window, tmp_path):
    win = ld_window
    with qtbot.waitSignal(win.exportFinished, timeout=30000):
        win.export_all(str(tmp_path / "plain"))
    assert not (tmp_path / "plain" / "regional.png").exists()  # no region shown: the CLI's files only
    assert win.show_region_of_pair(0)
    with qtbot.waitSignal(win.exportFinished, timeout=30000):
        win.export_all(str(tmp_path / "with"))
    names = sorted(p.name for p in (tmp_path / "with").iterdir())
    assert names == sorted([p.name for p in (tmp_path / "plain").iterdir()] + ["regional.png"])
    img = QImage(str(tmp_path / "with" / "regional.png"))
    assert not img.isNull() and img.width() >= 1400 and non_white_fraction(img) > 0.01
    arr = img.convertToFormat(QImage.Format.Format_RGB32)
    px = np.frombuffer(arr.constBits(), np.uint8).reshape(arr.height(), arr.bytesPerLine() // 4, 4)
    px = px[:, : arr.width(), :3]
    c = QColor("#9632b8")
    purple = (np.abs(px.astype(int) - [c.blue(), c.green(), c.red()]).max(axis=2) <= 30).sum()
    assert purple > 50  # the pair's SNPs' diamonds (and the legend's)
    # exported again over it with no region shown: the old image goes with the old set
    win.state.clear_region()
    with qtbot.waitSignal(win.exportFinished, timeout=30000):
        win.export_all(str(tmp_path / "with"), overwrite=True)
    names = sorted(p.name for p in (tmp_path / "with").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "plain").iterdir())


def test_the_state_keeps_a_region_only_of_its_result():
    from types import SimpleNamespace

    from gui.state import AppState

    class Store:
        def load(self, key):
            return {}

        def save(self, key, values):
            pass

    st = AppState(Store())
    events = []
    st.events.region.connect(lambda: events.append(st.region))
    assert not st.show_region((0,))  # no result
    study = SimpleNamespace(n_snps=10)
    reported = type("R", (), {"i": np.array([1]), "j": np.array([7]), "__len__": lambda self: 1})()
    result = SimpleNamespace(study=study, reported=reported)
    st.study = study
    st.scanned(result, SimpleNamespace())
    assert st.show_region(pair=0) and st.region.snps == (1, 7) and st.region.half_width_bp == 250_000
    assert not st.show_region(pair=3) and not st.show_region((10,)) and st.region.snps == (1, 7)
    assert st.set_region_width(50_000) and st.region.snps == (1, 7) and st.region.half_width_bp == 50_000
    assert st.show_region((4,)) and st.region.half_width_bp == 50_000  # the width stays
    st.open("p", "k", study, None, None, {})
    assert st.region is None and events[-1] is None
