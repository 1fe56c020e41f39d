"""The reported pairs: a table view with SNP search, the plot selection filter, significance
filters (P, Q, Bonferroni, --perm's EMP2), pairs in LD tinted or hidden, and copy."""
from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QDoubleValidator, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QDoubleSpinBox, QHBoxLayout, QHeaderView,
                               QLabel, QLineEdit, QTableView, QToolButton, QVBoxLayout, QWidget)

from gui import settings
from gui.models import COLUMNS, LD_COLOUR, SIGNIFICANCE, PairsProxyModel, PairsTableModel, format_rows

# Ctrl+ these keys are the window's (Export, Run, the plot tabs, reset zoom), even in the search box.
WINDOW_KEYS = {Qt.Key.Key_E, Qt.Key.Key_R, Qt.Key.Key_0, Qt.Key.Key_1, Qt.Key.Key_2, Qt.Key.Key_3, Qt.Key.Key_4}
LD_R2_DEFAULT = 0.2  # r² above which two SNPs are taken to tag one signal (a usual LD-pruning level)
LD_KB_DEFAULT = 100.0  # same-chromosome pairs closer than this are flagged whatever their r²
SIG_TIP = ("Show only the pairs significant by the chosen measure: the interaction test's P, its Benjamini-"
           "Hochberg q value (column Q: false discovery rate over all valid tests), or Bonferroni "
           "(P ≤ α / number of valid tests, the family-wise error rate), or after a scan with --perm the "
           "permutations' family-wise EMP2.")
LD_TIP = ("Pairs whose two SNPs are in linkage disequilibrium (r² above the cutoff, column R2) or lie closer "
          "than the distance on one chromosome (column DIST) are tinted: such a pair often reflects one "
          "association signal rather than an interaction. Tick 'Hide' to leave them out of the table.")


def _float_setting(key: str, default: float) -> float:
    try:
        return float(settings.value(key, default))
    except (TypeError, ValueError):
        return default


class PairsView(QWidget):
    """Emits ``pairActivated(row)`` (row of the reported pairs) on double-click or Enter, and
    ``regionRequested(row)`` on double-click or the context menu's "Regional view"."""

    pairActivated = Signal(int)
    regionRequested = Signal(int)
    partnerFilterCleared = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model = PairsTableModel(self)
        self.proxy = PairsProxyModel(self)
        self.proxy.setSourceModel(self.model)

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search SNP IDs (rs123, or several: rs12 rs99)…")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(self.fontMetrics().horizontalAdvance("Search SNP IDs (rs123…") + 40)
        self.search.setToolTip("Show only pairs where either SNP's ID contains the text (case-insensitive)")
        self._search_timer = QTimer(self, singleShot=True, interval=200)
        self._search_timer.timeout.connect(lambda: self.apply_search(self.search.text()))
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.search.returnPressed.connect(lambda: self.apply_search(self.search.text()))
        self.search.installEventFilter(self)

        self.chip = QLabel("")
        self.chip.setStyleSheet("QLabel { background: #fff3c4; border: 1px solid #e0c050; border-radius: 3px; padding: 1px 6px; }")
        self.chip.setVisible(False)
        self.chip_clear = QToolButton()
        self.chip_clear.setText("✕")
        self.chip_clear.setToolTip("Show the pairs of every SNP again (Esc)")
        self.chip_clear.setVisible(False)
        self.chip_clear.clicked.connect(self.partnerFilterCleared)
        self.count = QLabel("No results yet")

        # The search, the filters and the count on one row where the panel is wide enough (at
        # 1366 x 768 each row of controls is a row of pairs fewer); the filters on a second row of
        # their own where it is not, so that they never set the window's least width.
        top = QHBoxLayout()
        top.addWidget(self.search, 3)
        top.addWidget(self.chip)
        top.addWidget(self.chip_clear)
        self.filters = QWidget()
        self.filters.setLayout(self._build_filters())
        self.filters.layout().setContentsMargins(12, 0, 0, 0)
        top.addStretch(1)
        top.addWidget(self.count)
        self._top = top
        self._second = QHBoxLayout()  # (first below, so that they never widen the window as it opens)
        self._second.addWidget(self.filters)
        self._second.addStretch(1)

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
        self.table.doubleClicked.connect(self._double_clicked)

        copy = QAction("Copy rows", self)
        copy.setShortcut(QKeySequence.StandardKey.Copy)
        copy.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        copy.triggered.connect(lambda _checked=False: self.copy_selection())
        self.table.addAction(copy)
        region = QAction("Regional view of this pair", self)
        region.setStatusTip("The region around each of the pair's two SNPs, coloured by LD with it")
        region.triggered.connect(lambda _checked=False: self._region_of_current())
        self.table.addAction(region)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.copy_action = copy
        self.region_action = region

        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addLayout(self._second)
        lay.addWidget(self.table, 1)
        self._apply_ld_rule()
        self._apply_significance()

    def resizeEvent(self, ev) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(ev)
        self._place_filters()

    def _place_filters(self) -> None:
        """The filters on the search's row when the row's least width fits the panel, else below it."""
        on_top = self._top.indexOf(self.filters) >= 0
        chip = self.chip.sizeHint().width() + self.chip_clear.sizeHint().width() if self.chip.isVisible() else 0
        need = (max(self.search.minimumWidth(), self.search.minimumSizeHint().width()) + chip
                + self.filters.minimumSizeHint().width() + self.count.sizeHint().width() + 24)
        fits = self.width() >= need
        if fits == on_top:
            return
        (self._top if on_top else self._second).removeWidget(self.filters)
        while self._second.count():  # the stretch beside the filters on their own row
            self._second.takeAt(0)
        if fits:
            self._top.insertWidget(self._top.indexOf(self.chip_clear) + 1, self.filters)
        else:
            self._second.addWidget(self.filters)
            self._second.addStretch(1)

    def _double_clicked(self, idx) -> None:
        row = self.proxy.pair_row(idx.row())
        self.pairActivated.emit(row)
        self.regionRequested.emit(row)

    def _region_of_current(self) -> None:
        idx = self.table.currentIndex()
        if idx.isValid() and self.proxy.rowCount():
            self.regionRequested.emit(self.proxy.pair_row(idx.row()))

    def eventFilter(self, obj, ev) -> bool:
        # A line edit takes Ctrl+E (end of line, as Emacs) before the window's shortcuts; the
        # search box has focus after a scan, so Export, Run and the tab keys must reach the window.
        if obj is self.search and ev.type() == QEvent.Type.ShortcutOverride:
            if ev.modifiers() == Qt.KeyboardModifier.ControlModifier and ev.key() in WINDOW_KEYS:
                ev.ignore()
                return True
        return super().eventFilter(obj, ev)

    def _build_filters(self) -> QHBoxLayout:
        """Significance filter and LD controls, restored from the settings."""
        row = QHBoxLayout()
        self.sig_mode = QComboBox()
        for key, (text, _) in SIGNIFICANCE.items():
            self.sig_mode.addItem(text, key)
        self.sig_mode.setToolTip(SIG_TIP)
        self.sig_value = QLineEdit()
        v = QDoubleValidator(0.0, 1.0, 12)
        v.setNotation(QDoubleValidator.Notation.ScientificNotation)
        self.sig_value.setValidator(v)
        self.sig_value.setMaximumWidth(self.fontMetrics().horizontalAdvance("0.0005") + 24)
        self.sig_value.setToolTip(SIG_TIP)
        mode = str(settings.value("pairs/significance", "all"))
        self.sig_mode.setCurrentIndex(max(0, self.sig_mode.findData(mode)))
        self.sig_value.setText(str(settings.value("pairs/significance_value", "0.05")))
        self.sig_mode.currentIndexChanged.connect(lambda _i: self._apply_significance())
        self.sig_value.editingFinished.connect(self._apply_significance)

        ld_label = QLabel(f"<span style='background:{LD_COLOUR}'>&nbsp;LD&nbsp;</span>: r² &gt;")
        ld_label.setToolTip(LD_TIP)
        self.ld_r2 = QDoubleSpinBox()
        self.ld_r2.setRange(0.0, 1.0)
        self.ld_r2.setDecimals(3)
        self.ld_r2.setSingleStep(0.05)
        self.ld_r2.setValue(_float_setting("pairs/ld_r2", LD_R2_DEFAULT))
        self.ld_r2.setToolTip(LD_TIP)
        self.ld_r2.setMaximumWidth(self.fontMetrics().horizontalAdvance("0.000") + 40)
        self.ld_kb = QDoubleSpinBox()
        self.ld_kb.setRange(0.0, 1e6)
        self.ld_kb.setDecimals(0)
        self.ld_kb.setSingleStep(50)
        self.ld_kb.setSuffix(" kb")
        self.ld_kb.setSpecialValueText("off")
        self.ld_kb.setValue(_float_setting("pairs/ld_kb", LD_KB_DEFAULT))
        self.ld_kb.setToolTip(LD_TIP + " 0 turns the distance rule off.")
        self.ld_kb.setMaximumWidth(self.fontMetrics().horizontalAdvance("1000000 kb") + 40)
        self.hide_ld = QCheckBox("Hide")
        self.hide_ld.setToolTip("Leave the pairs in LD out of the table")
        self.hide_ld.setChecked(str(settings.value("pairs/hide_ld", False)).lower() == "true")
        self.ld_count = QLabel("")
        self.ld_r2.valueChanged.connect(lambda _v: self._apply_ld_rule())
        self.ld_kb.valueChanged.connect(lambda _v: self._apply_ld_rule())
        self.hide_ld.toggled.connect(lambda _on: self._apply_ld_rule())

        row.addWidget(QLabel("Show:"))
        row.addWidget(self.sig_mode)
        row.addWidget(self.sig_value)
        row.addSpacing(12)
        row.addWidget(ld_label)
        row.addWidget(self.ld_r2)
        row.addWidget(QLabel("or closer than"))
        row.addWidget(self.ld_kb)
        row.addWidget(self.hide_ld)
        row.addWidget(self.ld_count)
        return row

    # -- filters --------------------------------------------------------------------------------
    def set_significance(self, mode: str, value: float | None = None) -> None:
        """Filter by significance: ``mode`` 'all', 'p', 'q', 'bonferroni' or 'emp2' (value: P, q, α or EMP2)."""
        self.sig_mode.setCurrentIndex(self.sig_mode.findData(mode))
        if value is not None:
            self.sig_value.setText(f"{value:g}")
        self._apply_significance()

    def set_ld_rule(self, r2_above: float, closer_than_kb: float, hide: bool | None = None) -> None:
        """Tint pairs with r² above ``r2_above`` or closer than ``closer_than_kb`` (0: rule off)."""
        for w, v in ((self.ld_r2, r2_above), (self.ld_kb, closer_than_kb)):
            w.blockSignals(True)
            w.setValue(v)
            w.blockSignals(False)
        if hide is not None:
            self.hide_ld.blockSignals(True)
            self.hide_ld.setChecked(hide)
            self.hide_ld.blockSignals(False)
        self._apply_ld_rule()

    def _apply_significance(self) -> None:
        mode = self.sig_mode.currentData()
        self.sig_value.setEnabled(mode != "all")
        try:
            value = float(self.sig_value.text())
        except ValueError:
            value = 0.05
            self.sig_value.setText("0.05")
        settings.set_value("pairs/significance", mode)
        settings.set_value("pairs/significance_value", self.sig_value.text())
        self.proxy.set_significance(mode, value)
        self._update_count()

    def _apply_ld_rule(self) -> None:
        kb = self.ld_kb.value()
        self.model.set_ld_rule(self.ld_r2.value(), kb * 1000.0 if kb > 0 else None)
        settings.set_value("pairs/ld_r2", self.ld_r2.value())
        settings.set_value("pairs/ld_kb", kb)
        settings.set_value("pairs/hide_ld", self.hide_ld.isChecked())
        self.proxy.set_hide_ld(self.hide_ld.isChecked())
        self._update_count()

    def _set_widths(self) -> None:
        fm = self.fontMetrics()
        # In characters: KSA and STAT print 4 significant digits (and P 4 in e-notation), so at
        # 1366x768 the columns up to P fit the dock beside the Run column.
        # (SNP IDs: rs and 9 digits; positions: 9 digits, chromosome 1's 249 Mb)
        widths = {"CHR1": 5, "CHR2": 5, "SNP1": 11, "SNP2": 11, "BP1": 9, "BP2": 9, "KSA": 9, "STAT": 9, "DF": 4,
                  "P": 10, "Q": 10, "R2": 7, "DIST": 11, "STAT_ADJ": 9, "DF_ADJ": 6, "P_ADJ": 10,
                  "BETA_ADJ": 10, "SE_ADJ": 10, "N_ADJ": 6, "EMP2": 8}
        for c, name in enumerate(self.model.columns):
            self.table.setColumnWidth(c, fm.horizontalAdvance("0") * widths.get(name, 10) + 18)

    # -- content --------------------------------------------------------------------------------
    def set_result(self, result, reported=None) -> None:
        """Show ``reported`` (default ``result.reported``, which the core recomputes per access)."""
        self.proxy.n_valid = result.n_valid
        bonf = self.sig_mode.findData("bonferroni")
        self.sig_mode.setItemData(bonf, f"{SIG_TIP}\nThis scan: {result.n_valid:,} valid tests, "
                                        f"Bonferroni 0.05 is P ≤ {result.bonferroni:.3g}.", Qt.ItemDataRole.ToolTipRole)
        pairs = result.reported if reported is None else reported
        has_emp2 = getattr(pairs, "emp2", None) is not None
        emp2_item = self.sig_mode.model().item(self.sig_mode.findData("emp2"))
        emp2_item.setEnabled(has_emp2)
        emp2_item.setToolTip("" if has_emp2 else "Only after a scan with --perm (Run panel: Permutations)")
        if not has_emp2 and self.sig_mode.currentData() == "emp2":
            self.sig_mode.setCurrentIndex(self.sig_mode.findData("all"))  # (this scan has no EMP2 to filter by)
        self.model.set_pairs(result.study.variants, pairs)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.proxy.set_partner_filter(None)
        self.proxy.set_search(self.search.text())
        self.set_partner_label(None)
        self._update_count()
        self.table.resizeColumnsToContents()
        # A quantitative-trait scan has no BOOST screen: its KSA column would be all NaN.
        self.table.setColumnHidden(COLUMNS.index("KSA"), getattr(result, "qt", None) is not None)
        self._place_emp2()
        self._set_widths()

    def _place_emp2(self) -> None:
        """--perm's EMP2 and the covariate-adjusted test (P_ADJ first: the P that ranks the pairs
        once covariates are in) shown right after P: pairs.tsv has them after Q, R2 and DIST, where
        a 1366-pixel window needed a scroll to see that the scan was adjusted at all; copies and
        exports keep the file's order."""
        hh = self.table.horizontalHeader()
        for logical in range(hh.count()):  # (a previous result's order undone first)
            if hh.visualIndex(logical) != logical:
                hh.moveSection(hh.visualIndex(logical), logical)
        cols = self.model.columns
        after = [c for c in ("EMP2", "P_ADJ", "STAT_ADJ", "DF_ADJ", "BETA_ADJ", "SE_ADJ", "N_ADJ") if c in cols]
        to = hh.visualIndex(cols.index("P"))
        for name in after:
            to += 1
            hh.moveSection(hh.visualIndex(cols.index(name)), to)

    def clear(self) -> None:
        self.model.clear()
        self.proxy.partner_snp = None
        self.set_partner_label(None)
        self._update_count()

    def apply_search(self, text: str) -> None:
        self._search_timer.stop()
        self.proxy.set_search(text)
        self.set_partner_label(self._partner_label)
        self._update_count()

    def filter_partners(self, snp: int | None, label: str = "") -> None:
        """Show only the pairs of SNP ``snp`` (``None``: all pairs); the same filter again changes
        nothing (the table keeps its current row)."""
        if snp == self.proxy.partner_snp and (snp is None or label == self._partner_label):
            return
        self.proxy.set_partner_filter(snp)
        self.set_partner_label(label if snp is not None else None)
        self._update_count()

    _partner_label: str | None = None

    def set_partner_label(self, label: str | None) -> None:
        """The chip says which filters narrow the table: the SNP's pairs and, with it, the search
        term (the two combine; neither is applied silently)."""
        self._partner_label = label or None
        search = self.proxy.search_text
        text = f"Pairs of {label}" if label else ""
        if label and search:
            text += f" matching “{search}”"
        self.chip.setText(text)
        self.chip.setToolTip("Only the pairs of the selected SNP" + (" whose SNP IDs also contain the search text"
                                                                    if label and search else ""))
        self.chip.setVisible(bool(label))
        self.chip_clear.setVisible(bool(label))
        self._place_filters()

    def _update_count(self) -> None:
        if not hasattr(self, "ld_count"):
            return  # still being built
        if self.model.pairs is None:
            self.count.setText("No results yet")
            self.ld_count.setText("")
            return
        shown, total = self.proxy.rowCount(), self.model.n_total
        self.count.setText(f"{shown:,} of {total:,} pairs" if shown != total else f"{total:,} pairs")
        n_ld = int(self.model.ld.sum())
        self.ld_count.setText(f"{n_ld:,} in LD" + (" (hidden)" if n_ld and self.hide_ld.isChecked() else ""))

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
