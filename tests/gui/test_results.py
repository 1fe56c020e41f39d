"""The scan from the window: the pair table, its sorting/filtering/copy, and cancel."""

import numpy as np
import pytest
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import QApplication

from guihelpers import HeldTiles, cancel_at_first_progress, load
from gboost.engines.cpu import CpuEngine
from gui.models import COLUMNS, FULL_TEXT_ROLE


def table_lines(view, role=FULL_TEXT_ROLE) -> list[str]:
    """What the table holds, row by row, as tab-joined text (the file's text; DisplayRole: as shown)."""
    m = view.proxy
    return ["\t".join(m.index(r, c).data(role) for c in range(m.columnCount())) for r in range(m.rowCount())]


def test_the_table_holds_exactly_the_pairs_of_the_cli_pairs_tsv(scanned, cli_dir):
    lines = (cli_dir / "pairs.tsv").read_text().splitlines()
    assert lines[0].split("\t") == list(COLUMNS)
    assert len(lines) > 20  # the planted pairs and, at this loose epi1, many more
    assert table_lines(scanned.pairs) == lines[1:]
    # shown at 4 significant digits, P values in one notation; the file's numbers on copy
    shown = [line.split("\t") for line in table_lines(scanned.pairs, Qt.ItemDataRole.DisplayRole)]
    for row, line in zip(shown, lines[1:]):
        full = line.split("\t")
        for name in ("KSA", "STAT", "P", "Q", "R2"):
            k = COLUMNS.index(name)
            assert float(row[k]) == pytest.approx(float(full[k]), rel=5e-4), name
            digits = row[k].split("e")[0].replace("-", "").replace(".", "").lstrip("0")
            assert len(digits) <= 4, (name, row[k])
        assert row[COLUMNS.index("P")] == f"{float(full[COLUMNS.index('P')]):.3e}"
        assert row[:6] == full[:6] and row[COLUMNS.index("DF")] == full[COLUMNS.index("DF")]
    assert scanned.result.engine == "cpu"
    assert scanned.pairs.count.text() == f"{len(lines) - 1:,} pairs"


@pytest.mark.slow
def test_sorting_a_column_orders_by_value_not_text(scanned):
    view, proxy = scanned.pairs, scanned.pairs.proxy
    p_col = COLUMNS.index("P")
    view.table.sortByColumn(p_col, Qt.SortOrder.AscendingOrder)
    shown = [float(proxy.index(r, p_col).data()) for r in range(proxy.rowCount())]
    assert shown == sorted(shown) and len(shown) == len(scanned.reported)
    view.table.sortByColumn(COLUMNS.index("BP2"), Qt.SortOrder.DescendingOrder)
    bp = [int(proxy.index(r, COLUMNS.index("BP2")).data()) for r in range(proxy.rowCount())]
    assert bp == sorted(bp, reverse=True)


def test_search_by_snp_id_keeps_only_its_pairs(qtbot, scanned):
    rep = scanned.reported
    snp = str(scanned.result.study.variants.snp[rep.j[0]])
    scanned.pairs.search.setText(snp)
    scanned.pairs.apply_search(snp)
    rows = table_lines(scanned.pairs)
    expected = sum(1 for a, b in zip(rep.i, rep.j)
                   if snp.lower() in str(scanned.result.study.variants.snp[a]).lower()
                   or snp.lower() in str(scanned.result.study.variants.snp[b]).lower())
    assert 0 < len(rows) == expected < len(rep) + 1
    assert all(snp in line.split("\t")[1] or snp in line.split("\t")[4] for line in rows)
    scanned.pairs.apply_search("no-such-snp")
    assert scanned.pairs.proxy.rowCount() == 0
    scanned.pairs.apply_search("")
    assert scanned.pairs.proxy.rowCount() == len(rep)


@pytest.mark.slow
def test_copy_puts_the_selected_rows_as_tsv_on_the_clipboard(scanned, cli_dir):
    table = scanned.pairs.table
    sel = table.selectionModel()
    for r in (0, 1):
        sel.select(scanned.pairs.proxy.index(r, 0),
                   QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows)
    scanned.pairs.copy_action.trigger()
    lines = (cli_dir / "pairs.tsv").read_text().splitlines()
    assert QApplication.clipboard().text() == "\n".join(lines[:3]) + "\n"


def test_cancel_mid_run_leaves_the_previous_results(qtbot, scanned, monkeypatch):
    before = scanned.result
    shown_before = table_lines(scanned.pairs)
    y_before = scanned.manhattan.y.copy()

    # Many small tiles, the second held until the cancel is clicked, so the scan is surely mid-run
    # when the first progress event reaches the window; a looser epi1 would report more pairs.
    real = CpuEngine.run_tile
    held = HeldTiles(monkeypatch, free=1)
    scanned.run_panel.tile.setValue(16)
    scanned.run_panel.epi1.setText("1e-2")

    def buttons_while_running():
        assert scanned.run_panel.cancel_button.isEnabled() and not scanned.run_panel.run_button.isEnabled()

    seen = cancel_at_first_progress(qtbot, scanned, held, during=buttons_while_running)
    assert 0 < seen[0].fraction < 1
    assert scanned.result is before
    assert table_lines(scanned.pairs) == shown_before
    np.testing.assert_array_equal(scanned.manhattan.y, y_before)
    assert "Cancelled" in scanned.run_panel.rate_label.text()
    assert scanned.run_panel.run_button.isEnabled() and not scanned.run_panel.cancel_button.isEnabled()

    # The same settings run to the end give more pairs: the cancelled run really was different.
    monkeypatch.setattr(CpuEngine, "run_tile", real)
    with qtbot.waitSignal(scanned.scanFinished, timeout=60000) as blocker:
        assert scanned.start_scan(resume=False)  # start over: no question about the checkpoint
    after = blocker.args[0]
    assert len(after.reported) > len(before.reported)


@pytest.mark.slow
def test_window_stays_responsive_while_scanning(qtbot, window, study_prefix, monkeypatch):
    import threading

    from PySide6.QtCore import QTimer

    load(qtbot, window, study_prefix)
    real = CpuEngine.run_tile
    ticks = []
    ticked = threading.Condition()
    tiles = []

    def paced_tile(self, tile):
        # Each tile waits for one more tick of the GUI thread's timer: the scan goes on only while
        # the GUI thread runs its timers, and lasts at least a tick (20 ms) a tile, whatever the load.
        with ticked:
            tiles.append(tile)
            assert ticked.wait_for(lambda: len(ticks) >= len(tiles), timeout=120), "the GUI thread stopped"
        return real(self, tile)

    def tick():
        with ticked:
            ticks.append(window.run_panel.progress.value())
            ticked.notify_all()

    monkeypatch.setattr(CpuEngine, "run_tile", paced_tile)
    window.run_panel.tile.setValue(16)
    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(20)
    with qtbot.waitSignal(window.scanFinished, timeout=300000):
        window.start_scan()
    timer.stop()
    # The GUI thread ran its own timers throughout and saw the bar move in between.
    assert len(ticks) >= len(tiles) >= 5
    assert len({t for t in ticks if 0 < t < 1000}) >= 2


@pytest.mark.slow
def test_models_sort_and_filter_a_million_rows_without_calling_back_per_row(qtbot, monkeypatch):
    from gboost.pipeline.scan import Pairs
    from gboost.data.study import VariantTable
    from gui.pairs_view import PairsView
    from gui.models import PairsTableModel

    rng = np.random.default_rng(0)
    p, m = 2000, 1_000_000
    v = VariantTable(np.array([str(1 + k // 100) for k in range(p)], dtype=object),
                     np.array([f"rs{k}" for k in range(p)], dtype=object), np.zeros(p),
                     np.arange(p, dtype=np.int64) * 1000 + 1, np.full(p, "A", dtype=object), np.full(p, "G", dtype=object))
    i = rng.integers(0, p - 1, m)
    j = i + 1 + rng.integers(0, 50, m) % (p - 1 - i)
    stat = rng.chisquare(4, m) + 30
    pairs = Pairs(i, j, stat + 0.1, stat, np.full(m, 4, np.int8), np.exp(-stat / 2) * (1 + stat / 2),
                  np.ones(m, bool), np.ones((m, 3, 3, 2), np.int8))
    calls = []
    real_data = PairsTableModel.data
    monkeypatch.setattr(PairsTableModel, "data", lambda self, idx, role=Qt.ItemDataRole.DisplayRole: (calls.append(1), real_data(self, idx, role))[1])
    view = PairsView()
    qtbot.addWidget(view)
    view.resize(800, 400)
    view.show()
    view.model.set_pairs(v, pairs)
    calls.clear()
    view.table.sortByColumn(COLUMNS.index("STAT"), Qt.SortOrder.DescendingOrder)
    view.filter_partners(int(i[0]), "rs")
    view.apply_search("rs1")
    assert len(calls) < 5000  # only cells on screen were asked for, never a million
    keep = ((i == i[0]) | (j == i[0])) & (np.char.find(v.snp.astype(str)[i], "rs1") >= 0) | \
        ((i == i[0]) | (j == i[0])) & (np.char.find(v.snp.astype(str)[j], "rs1") >= 0)
    assert view.proxy.rowCount() == int(keep.sum())
    shown = view.model.view
    assert np.all(np.diff(stat[shown]) <= 0)


@pytest.mark.slow
def test_every_column_sorts_by_its_meaning(scanned):
    from gui.plots.genome import chrom_sort_key

    proxy, view = scanned.pairs.proxy, scanned.pairs.table

    def as_key(name, text):
        if name.startswith("CHR"):
            return chrom_sort_key(text)
        if name.startswith("SNP"):
            return text
        return float("inf") if text == "NA" else float(text)  # NA (DIST across chromosomes) last

    for c, name in enumerate(COLUMNS):
        for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
            view.sortByColumn(c, order)
            keys = [as_key(name, proxy.index(r, c).data()) for r in range(proxy.rowCount())]
            expected = sorted(keys, reverse=order == Qt.SortOrder.DescendingOrder)
            assert keys == expected, name
            assert proxy.rowCount() == len(scanned.reported)
