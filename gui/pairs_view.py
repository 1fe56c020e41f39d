"""The reported pairs: a table view with SNP search, the plot selection filter, and copy."""
from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QTableView,
                               QToolButton, QVBoxLayout, QWidget)

from gui.models import COLUMNS, PairsProxyModel, PairsTableModel, format_rows


class PairsView(QWidget):
    """Emits ``pairActivated(row)`` (row of the reported pairs) on double-click or Enter."""

    pairActivated = Signal(int)
    partnerFilterCleared = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model = PairsTableModel(self)
        self.proxy = PairsProxyModel(self)
        self.proxy.setSourceModel(self.model)

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search SNP IDs (e.g. rs123 or several words: rs12, rs99)…")
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip("Show only pairs where either SNP's ID contains the text (case-insensitive)")
        self._search_timer = QTimer(self, singleShot=True, interval=200)
        self._search_timer.timeout.connect(lambda: self.apply_search(self.search.text()))
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.search.returnPressed.connect(lambda: self.apply_search(self.search.text()))

        self.chip = QLabel("")
        self.chip.setStyleSheet("QLabel { background: #fff3c4; border: 1px solid #e0c050; border-radius: 3px; padding: 1px 6px; }")
        self.chip.setVisible(False)
        self.chip_clear = QToolButton()
        self.chip_clear.setText("✕")
        self.chip_clear.setToolTip("Show the pairs of every SNP again (Esc)")
        self.chip_clear.setVisible(False)
        self.chip_clear.clicked.connect(self.partnerFilterCleared)
        self.count = QLabel("No results yet")

        top = QHBoxLayout()
        top.addWidget(self.search, 2)
        top.addWidget(self.chip)
        top.addWidget(self.chip_clear)
        top.addStretch(1)
        top.addWidget(self.count)

        self.table = QTableView()
        self.table.setModel(self.proxy)
        # File order (STAT descending, as pairs.tsv) until the user clicks a column header.
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSortIndicatorShown(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        vh = self.table.verticalHeader()
        vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # uniform rows: fast at millions of rows
        vh.setDefaultSectionSize(self.fontMetrics().height() + 6)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        hh.setStretchLastSection(True)
        hh.setResizeContentsPrecision(200)  # size columns from the first rows only: fast at any size
        self._set_widths()
        self.table.doubleClicked.connect(lambda idx: self.pairActivated.emit(self.proxy.pair_row(idx.row())))

        copy = QAction("Copy rows", self)
        copy.setShortcut(QKeySequence.StandardKey.Copy)
        copy.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        copy.triggered.connect(lambda _checked=False: self.copy_selection())
        self.table.addAction(copy)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.copy_action = copy

        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(self.table, 1)

    def _set_widths(self) -> None:
        fm = self.fontMetrics()
        widths = {"CHR1": 5, "CHR2": 5, "SNP1": 14, "SNP2": 14, "BP1": 11, "BP2": 11, "KSA": 12, "STAT": 12, "DF": 4,
                  "P": 16, "Q": 12, "R2": 7, "DIST": 11}
        for c, name in enumerate(COLUMNS):
            self.table.setColumnWidth(c, fm.horizontalAdvance("0") * widths.get(name, 10) + 18)

    # -- content --------------------------------------------------------------------------------
    def set_result(self, result, reported=None) -> None:
        """Show ``reported`` (default ``result.reported``, which the core recomputes per access)."""
        self.model.set_pairs(result.study.variants, result.reported if reported is None else reported)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.proxy.set_partner_filter(None)
        self.proxy.set_search(self.search.text())
        self.set_partner_label(None)
        self._update_count()
        self.table.resizeColumnsToContents()

    def clear(self) -> None:
        self.model.clear()
        self.set_partner_label(None)
        self.count.setText("No results yet")

    def apply_search(self, text: str) -> None:
        self._search_timer.stop()
        self.proxy.set_search(text)
        self._update_count()

    def filter_partners(self, snp: int | None, label: str = "") -> None:
        """Show only the pairs of SNP ``snp`` (``None``: all pairs)."""
        self.proxy.set_partner_filter(snp)
        self.set_partner_label(label if snp is not None else None)
        self._update_count()

    def set_partner_label(self, label: str | None) -> None:
        self.chip.setText(f"Pairs of {label}" if label else "")
        self.chip.setVisible(bool(label))
        self.chip_clear.setVisible(bool(label))

    def _update_count(self) -> None:
        shown, total = self.proxy.rowCount(), self.model.n_total
        self.count.setText(f"{shown:,} of {total:,} pairs" if shown != total else f"{total:,} pairs")

    def select_pair_row(self, pair_row: int) -> None:
        """Select and scroll to the table row showing ``pair_row`` of the pairs, if shown."""
        import numpy as np

        hits = np.flatnonzero(self.model.view == pair_row)
        if hits.size:
            src = self.model.index(int(hits[0]), 0)
            idx = self.proxy.mapFromSource(src)
            self.table.selectRow(idx.row())
            self.table.scrollTo(idx)

    # -- copy -----------------------------------------------------------------------------------
    def selected_pair_rows(self):
        """Rows of the pairs selected in the table, in display order (from selection ranges:
        no per-row index objects even when a million rows are selected)."""
        import numpy as np

        parts = [np.arange(r.top(), r.bottom() + 1) for r in self.table.selectionModel().selection()]
        if not parts:
            return np.zeros(0, np.int64)
        proxy_rows = np.unique(np.concatenate(parts))
        # The proxy passes rows through in the source's order (filters and sort live in the source).
        return self.model.view[proxy_rows]

    def copy_selection(self) -> str:
        """Copy the selected rows (with a header line) as tab-separated text; returns it."""
        rows = self.selected_pair_rows()
        if not len(rows):
            return ""
        text = format_rows(self.model.variants, self.model.pairs, rows)
        QGuiApplication.clipboard().setText(text)
        return text
