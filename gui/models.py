"""The pair table's Qt models: millions of rows, no per-row Python objects.

``PairsTableModel`` shows a :class:`gboost.pipeline.scan.Pairs` (the scan's reported pairs, as in
``pairs.tsv``) through a NumPy vector of row numbers, ``view``; sorting and filtering rebuild that
vector with NumPy (argsort, boolean masks) in milliseconds at 1e6 rows. ``PairsProxyModel`` is
the ``QSortFilterProxyModel`` the view talks to; its ``sort`` and filters are forwarded to the
NumPy code rather than done row by row, because Qt's own sorting and filtering call back into
Python for every row or comparison (over a second to filter 1e6 rows through
``filterAcceptsRow``, far worse to sort through ``lessThan``). Cells are formatted only when Qt
asks for a visible one, by the core's ``pairs.tsv`` writer (so the text is the file's text).
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QBrush, QColor

from types import SimpleNamespace

from gboost.outputs import results
from gboost.outputs.results import format_pairs_tsv
from gui.plots.genome import genome_layout

# The columns of pairs.tsv, as the core writes them; with --covar the adjusted test's follow, with
# --perm the family-wise EMP2 last (gboost/outputs/results.py pairs_header).
COLUMNS = tuple(getattr(results, "PAIRS_COLUMNS", ("CHR1", "SNP1", "BP1", "CHR2", "SNP2", "BP2", "KSA", "STAT", "DF", "P")))
ADJ_COLUMNS = ("STAT_ADJ", "DF_ADJ", "P_ADJ")
EMP2_COLUMN = "EMP2"
# A quantitative trait with --covar: the adjusted linear test's columns of its pairs.tsv
# (gboost/outputs/qt_results.py), carried by the reported pairs as ``qt_adj``.
QT_ADJ_COLUMNS = ("BETA_ADJ", "SE_ADJ", "STAT_ADJ", "P_ADJ", "N_ADJ", "DF_ADJ")
QT_ADJ_DIGITS = (6, 6, 6, 4, None, None)  # significant digits as the QT writer prints them (None: integer)
# The file's text of a cell, at full precision (what copy and exports write); DisplayRole shows
# the numbers at DISPLAY_DIGITS significant digits.
FULL_TEXT_ROLE = Qt.ItemDataRole.UserRole + 1
DISPLAY_DIGITS = 4
P_COLUMNS = {"P", "Q", "P_ADJ"}  # probabilities: always in scientific notation, so a column reads alike
INTEGER_COLUMNS = {"BP1", "BP2", "DF", "DIST", "DF_ADJ", "N_ADJ"}
NON_NUMERIC = {"CHR1", "SNP1", "CHR2", "SNP2"}
TOOLTIPS = {
    "CHR1": "Chromosome of the first SNP",
    "SNP1": "First SNP of the pair (earlier in the file)",
    "BP1": "Base-pair position of the first SNP",
    "CHR2": "Chromosome of the second SNP",
    "SNP2": "Second SNP of the pair",
    "BP2": "Base-pair position of the second SNP",
    "KSA": "BOOST's screening statistic (Kirkwood superposition approximation); always ≥ STAT",
    "STAT": "Interaction statistic: likelihood-ratio χ² of the log-linear model with vs without the interaction",
    "DF": "Degrees of freedom of the test (4; 2 or 1 when a genotype class is empty, as PLINK 1.9)",
    "P": "P value of the interaction test (χ² upper tail)",
    "Q": "Benjamini-Hochberg q value over all valid tests (false discovery rate)",
    "R2": "Genotypic r² between the two SNPs (linkage disequilibrium; high values: the pair may be one signal)",
    "DIST": "Distance between the two SNPs in bp (NA on different chromosomes)",
    "STAT_ADJ": "Interaction statistic adjusted for the covariates (--covar): likelihood-ratio χ² of the "
                "interaction term in a logistic model with both SNPs' genotypes and the covariates",
    "DF_ADJ": "Degrees of freedom of the covariate-adjusted test",
    "P_ADJ": "P value of the covariate-adjusted interaction test",
    "EMP2": "Family-wise P from the --perm label permutations (PLINK's max(T) EMP2): (1 + permutations whose largest "
            "STAT over all pairs is ≥ this pair's STAT) / (N + 1). EMP2 ≤ 0.05: significant genome-wide at 5 %",
}
QT_TOOLTIPS = {
    "BETA_ADJ": "Interaction coefficient of the covariate-adjusted linear model (y ~ a + b + a*b + covariates)",
    "SE_ADJ": "Standard error of BETA_ADJ",
    "STAT_ADJ": "Wald statistic of the adjusted interaction: (BETA_ADJ / SE_ADJ)²",
    "P_ADJ": "P value of the covariate-adjusted interaction test (t test)",
    "N_ADJ": "Samples in the adjusted test (both SNPs, the trait and every covariate called)",
    "DF_ADJ": "Residual degrees of freedom of the adjusted model",
}


def columns_of(pairs) -> tuple:
    """The columns of ``pairs`` in the table: pairs.tsv's, then the adjusted test's where the scan
    had covariates (a quantitative trait's six, a case-control scan's three)."""
    emp2 = (EMP2_COLUMN,) if getattr(pairs, "emp2", None) is not None else ()
    if pairs is not None and getattr(pairs, "qt_adj", None) is not None:
        return COLUMNS + emp2 + QT_ADJ_COLUMNS  # (format_rows appends the QT columns after the core's)
    return COLUMNS + (ADJ_COLUMNS if pairs is not None and getattr(pairs, "adj", None) is not None else ()) + emp2


def qt_adjusted_fields(qt_adj, rows: np.ndarray) -> list[list[str]]:
    """The QT adjusted columns of ``rows``, formatted by the core as the QT pairs.tsv writes them."""
    from gboost.readers.fastnum import format_g_bytes, int_bytes, tsv_rows_array

    rows = np.asarray(rows, np.int64)
    if not len(rows):
        return []
    cols = [format_g_bytes(c[rows], d, na="NA") if d is not None else int_bytes(c[rows])
            for c, d in zip(qt_adj, QT_ADJ_DIGITS)]
    return [line.split("\t") for line in bytes(tsv_rows_array(cols)).decode("utf-8").splitlines()]


def display_text(name: str, text: str) -> str:
    """A cell as the table shows it: the file's number at :data:`DISPLAY_DIGITS` significant
    digits (P values in scientific notation), names, integers and NA as the file writes them."""
    if name in NON_NUMERIC or name in INTEGER_COLUMNS:
        return text
    try:
        v = float(text)
    except ValueError:
        return text
    if v == 0.0 or v != v or v in (float("inf"), float("-inf")):
        return text
    if name in P_COLUMNS:
        return f"{v:.{DISPLAY_DIGITS - 1}e}"
    return f"{v:.{DISPLAY_DIGITS}g}"
SORT_ROLE = Qt.ItemDataRole.UserRole
LD_COLOUR = "#e4d4f4"  # rows of pairs in LD: a light lilac, apart from the yellow selection chip
LD_BRUSH = QBrush(QColor(LD_COLOUR))
# Significance filters of the table: (menu text, what the number means)
SIGNIFICANCE = {
    "all": ("All reported pairs", ""),
    "p": ("P ≤", "P value of the interaction test"),
    "q": ("Q ≤ (FDR)", "Benjamini-Hochberg q value (false discovery rate over all valid tests)"),
    "bonferroni": ("Bonferroni α =", "family-wise error rate: P ≤ α / number of valid tests"),
    "emp2": ("EMP2 ≤ (--perm)", "family-wise P of the label permutations (a scan with --perm)"),
}


def significance_mask(pairs, mode: str, value: float, n_valid: int) -> np.ndarray | None:
    """Rows of ``pairs`` kept by a significance filter (``None``: all).

    ``mode`` is a key of :data:`SIGNIFICANCE`; ``value`` the P, the q or the Bonferroni α.
    """
    if mode == "all" or pairs is None:
        return None
    if mode == "p":
        return pairs.p <= value
    if mode == "q":
        q = pairs.q if pairs.q is not None else np.full(len(pairs), np.nan)
        return q <= value
    if mode == "bonferroni":
        return pairs.p <= value / max(int(n_valid), 1)
    if mode == "emp2":  # (a scan without --perm has no EMP2: no pair passes)
        emp2 = getattr(pairs, "emp2", None)
        return np.zeros(len(pairs), bool) if emp2 is None else np.asarray(emp2) <= value
    raise ValueError(f"unknown significance filter {mode!r}")


def pair_distance(variants, pairs) -> np.ndarray:
    """bp between the two SNPs of each pair; NaN across chromosomes (``DIST`` = NA)."""
    return variants.distance(pairs.i, pairs.j)


def ld_flags(r2: np.ndarray, dist: np.ndarray, r2_above: float | None, closer_than_bp: float | None) -> np.ndarray:
    """Pairs counted as in LD: r² above ``r2_above`` or, on one chromosome, fewer than
    ``closer_than_bp`` bp apart (either rule off when ``None``; NaN never counts)."""
    flag = np.zeros(len(r2), bool)
    if r2_above is not None:
        flag |= np.nan_to_num(r2, nan=-1.0) > r2_above
    if closer_than_bp is not None:
        flag |= np.nan_to_num(dist, nan=np.inf) < closer_than_bp
    return flag


def format_rows(variants, pairs, rows: np.ndarray) -> str:
    """``pairs.tsv`` text (header included) of the given rows of ``pairs``, by the core's own
    writer, so the table and its exports never drift from the CLI's number formats."""
    rows = np.asarray(rows, np.int64)
    stand_in = SimpleNamespace(study=SimpleNamespace(variants=variants), reported=pairs.take(rows))
    text = format_pairs_tsv(stand_in)
    qt_adj = getattr(pairs, "qt_adj", None)
    if qt_adj is None:
        return text
    lines = text.split("\n")
    extra = qt_adjusted_fields(qt_adj, rows)
    out = [lines[0] + "\t" + "\t".join(QT_ADJ_COLUMNS)]
    out += [line + "\t" + "\t".join(f) for line, f in zip(lines[1:], extra)]
    return "\n".join(out) + "\n"


class PairsTableModel(QAbstractTableModel):
    """A :class:`gboost.pipeline.scan.Pairs` table over the study's variants, shown in ``view`` order."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.variants = None
        self.pairs = None
        self.view = np.zeros(0, np.int64)  # rows of `pairs` shown, in display order
        self.columns = COLUMNS  # pairs.tsv's columns of the pairs shown (columns_of)
        self._mask: np.ndarray | None = None
        self._sort: tuple[int, Qt.SortOrder] | None = None
        self._snp_rank = None
        self._chrom_rank = None
        self._text_cache: dict[int, list[str]] = {}
        self._r2 = None
        self._dist = None
        self.ld_rule: tuple[float | None, float | None] = (None, None)  # (r² above, closer than bp)
        self.ld = np.zeros(0, bool)  # per row of `pairs`: in LD by ld_rule

    # -- content --------------------------------------------------------------------------------
    def set_pairs(self, variants, pairs) -> None:
        """Show ``pairs`` (i, j index ``variants``), unfiltered, in their own order."""
        self.beginResetModel()
        self.variants, self.pairs = variants, pairs
        self.columns = columns_of(pairs)
        self._mask = None
        self._sort = None
        self._snp_rank = self._chrom_rank = None
        self._text_cache = {}
        self._r2 = self._dist = None
        self.view = np.arange(len(pairs) if pairs is not None else 0, dtype=np.int64)
        self._update_ld()
        self.endResetModel()

    def clear(self) -> None:
        self.set_pairs(None, None)

    @property
    def n_total(self) -> int:
        return 0 if self.pairs is None else len(self.pairs)

    @property
    def r2(self) -> np.ndarray:
        if self._r2 is None:
            self._r2 = self.pairs.r2 if self.pairs is not None else np.zeros(0)
        return self._r2

    @property
    def dist(self) -> np.ndarray:
        if self._dist is None:
            self._dist = pair_distance(self.variants, self.pairs) if self.pairs is not None else np.zeros(0)
        return self._dist

    def set_ld_rule(self, r2_above: float | None, closer_than_bp: float | None) -> None:
        """Which pairs count as in LD (tinted rows; see :func:`ld_flags`)."""
        self.ld_rule = (r2_above, closer_than_bp)
        self._update_ld()
        if len(self.view):
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.view) - 1, len(self.columns) - 1),
                                  [Qt.ItemDataRole.BackgroundRole, Qt.ItemDataRole.ToolTipRole])

    def _update_ld(self) -> None:
        self.ld = ld_flags(self.r2, self.dist, *self.ld_rule) if self.pairs is not None else np.zeros(0, bool)

    def ld_reason(self, row: int) -> str:
        r2_above, closer = self.ld_rule
        parts = []
        r2, d = self.r2[row], self.dist[row]
        if r2_above is not None and np.isfinite(r2) and r2 > r2_above:
            parts.append(f"r² = {r2:.3g} > {r2_above:g}")
        if closer is not None and np.isfinite(d) and d < closer:
            parts.append(f"{int(d):,} bp apart, closer than {closer / 1000:g} kb")
        return "In LD: " + " and ".join(parts) + " — the pair may be one signal, not an interaction"

    def set_mask(self, mask: np.ndarray | None) -> None:
        """Show only rows where ``mask`` is true (``None``: all), keeping the current sort."""
        self._mask = mask
        self._rebuild()

    def sort_by(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self._sort = None if column < 0 else (column, order)
        self._rebuild()

    def _rebuild(self) -> None:
        if self.pairs is None:
            return
        n = self.n_total
        self.beginResetModel()
        order = np.arange(n, dtype=np.int64) if self._sort is None else self._order(*self._sort)
        if self._mask is not None:
            order = order[self._mask[order]]
        self.view = order
        self.endResetModel()

    def _order(self, column: int, order: Qt.SortOrder) -> np.ndarray:
        key = np.asarray(self.sort_key(column), dtype=np.float64)  # every key is numeric
        if order == Qt.SortOrder.DescendingOrder:
            key = -key
        return np.argsort(key, kind="stable").astype(np.int64)  # ties keep the file order

    def sort_key(self, column: int) -> np.ndarray:
        """A NumPy array that sorts rows as the column should sort (numbers, not their text)."""
        pr, name = self.pairs, self.columns[column]
        snp_of = pr.i if name.endswith("1") else pr.j
        if name.startswith("CHR"):
            if self._chrom_rank is None:
                self._chrom_rank = genome_layout(self.variants).chrom_of
            return self._chrom_rank[snp_of]
        if name.startswith("SNP"):
            if self._snp_rank is None:
                names = np.asarray(self.variants.snp).astype(str)
                rank = np.empty(len(names), np.int64)
                rank[np.argsort(names, kind="stable")] = np.arange(len(names))
                self._snp_rank = rank
            return self._snp_rank[snp_of]
        if name.startswith("BP"):
            return np.asarray(self.variants.bp)[snp_of]
        if name in ("KSA", "STAT", "DF", "P"):
            return getattr(pr, name.lower())
        if name == "Q" and pr.q is not None:
            return pr.q
        if name in QT_ADJ_COLUMNS and getattr(pr, "qt_adj", None) is not None:
            col = np.asarray(pr.qt_adj[QT_ADJ_COLUMNS.index(name)], np.float64)
            return np.nan_to_num(col, nan=np.inf)  # NA last
        if name in ADJ_COLUMNS and pr.adj is not None:
            return np.nan_to_num(np.asarray(pr.adj[ADJ_COLUMNS.index(name)], np.float64), nan=np.inf)  # NA last
        if name == EMP2_COLUMN and getattr(pr, "emp2", None) is not None:
            return np.nan_to_num(np.asarray(pr.emp2, np.float64), nan=np.inf)  # NA last
        if name == "R2":
            return self.r2
        if name == "DIST":
            return np.nan_to_num(self.dist, nan=np.inf)  # NA sorts last
        return self._text_key(column)

    def _text_key(self, column: int) -> np.ndarray:
        """Fallback for a column the core added after this code: its text as a number (NaN-safe)."""
        text = format_rows(self.variants, self.pairs, np.arange(self.n_total)).splitlines()[1:]
        out = np.empty(len(text))
        for k, line in enumerate(text):
            try:
                out[k] = float(line.split("\t")[column])
            except ValueError:
                out[k] = np.inf
        return out

    # -- Qt model interface ---------------------------------------------------------------------
    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.view)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal:
            if section >= len(self.columns):
                return None
            if role == Qt.ItemDataRole.DisplayRole:
                return self.columns[section]
            if role == Qt.ItemDataRole.ToolTipRole:
                name = self.columns[section]
                if getattr(self.pairs, "qt_adj", None) is not None and name in QT_TOOLTIPS:
                    return QT_TOOLTIPS[name]
                return TOOLTIPS.get(name)
        elif role == Qt.ItemDataRole.DisplayRole:
            return str(section + 1)
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or self.pairs is None:
            return None
        name = self.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return display_text(name, self.cell_text(int(self.view[index.row()]), name))
        if role == FULL_TEXT_ROLE:
            return self.cell_text(int(self.view[index.row()]), name)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            h = Qt.AlignmentFlag.AlignLeft if name in NON_NUMERIC else Qt.AlignmentFlag.AlignRight
            return int(h | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.BackgroundRole:
            return LD_BRUSH if self.ld[self.view[index.row()]] else None
        if role == Qt.ItemDataRole.ToolTipRole:
            row = int(self.view[index.row()])
            if self.ld[row]:
                return self.ld_reason(row)
            full = self.cell_text(row, name)
            return full if full != display_text(name, full) else None  # the full number on hover
        if role == SORT_ROLE:
            v = self.sort_key(index.column())[self.view[index.row()]]
            return v.item() if hasattr(v, "item") else v
        return None

    # -- text, as pairs.tsv writes it -----------------------------------------------------------
    def cell_text(self, row: int, name: str) -> str:
        """Cell ``name`` of pairs row ``row``, exactly as ``pairs.tsv`` writes it."""
        return self.row_fields(row)[self.columns.index(name)]

    def row_fields(self, row: int) -> list[str]:
        """The fields of pairs row ``row`` in ``pairs.tsv`` (formatted by the core, cached)."""
        fields = self._text_cache.get(row)
        if fields is None:
            if len(self._text_cache) > 20000:  # only rows on screen or just copied are kept
                self._text_cache.clear()
            line = format_rows(self.variants, self.pairs, np.array([row])).split("\n")[1]
            fields = self._text_cache[row] = line.split("\t")
        return fields

    def pair_row(self, view_row: int) -> int:
        """Row of ``pairs`` shown at ``view_row``."""
        return int(self.view[view_row])


class PairsProxyModel(QSortFilterProxyModel):
    """The model the table view uses: sort and filters run in NumPy on the source model.

    Filters combine: the SNP selected in a plot (its partners only), a search text (SNP IDs
    containing it, case-insensitive; several words separated by spaces or commas match any), a
    significance filter (P, Q or Bonferroni; see :func:`significance_mask`) and, when asked,
    hiding the pairs in LD (the source's ``ld`` flags).
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.partner_snp: int | None = None
        self.search_text = ""
        self.significance: tuple[str, float] = ("all", 0.05)
        self.n_valid = 0  # valid tests of the scan (Bonferroni's denominator)
        self.hide_ld = False
        self._lower_ids = None  # (variants, lower-case SNP IDs): computed once per study

    def source(self) -> PairsTableModel:
        return self.sourceModel()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        # Not QSortFilterProxyModel.sort: that would compare rows pairwise through Python.
        self.source().sort_by(column, order)

    def set_partner_filter(self, snp: int | None) -> None:
        self.partner_snp = snp
        self._apply()

    def set_search(self, text: str) -> None:
        self.search_text = text.strip()
        self._apply()

    def set_significance(self, mode: str, value: float) -> None:
        self.significance = (mode, float(value))
        self._apply()

    def set_hide_ld(self, hide: bool) -> None:
        self.hide_ld = bool(hide)
        self._apply()

    def refresh(self) -> None:
        """Re-apply the filters (after the source got new pairs)."""
        self._apply()

    def _apply(self) -> None:
        src = self.source()
        pr = src.pairs
        if pr is None:
            return
        mask = None
        if self.partner_snp is not None:
            mask = (pr.i == self.partner_snp) | (pr.j == self.partner_snp)
        if self.search_text:
            if self._lower_ids is None or self._lower_ids[0] is not src.variants:
                self._lower_ids = (src.variants, np.char.lower(np.asarray(src.variants.snp).astype(str)))
            hit = snp_matches(self._lower_ids[1], self.search_text)
            m = hit[pr.i] | hit[pr.j]
            mask = m if mask is None else mask & m
        sig = significance_mask(pr, *self.significance, self.n_valid)
        if sig is not None:
            mask = sig if mask is None else mask & sig
        if self.hide_ld:
            mask = ~src.ld if mask is None else mask & ~src.ld
        src.set_mask(mask)

    def pair_row(self, proxy_row: int) -> int:
        """Row of the source's ``pairs`` shown at ``proxy_row`` of this model."""
        return self.source().pair_row(self.mapToSource(self.index(proxy_row, 0)).row())


def snp_matches(snp_ids: np.ndarray, text: str) -> np.ndarray:
    """Boolean per SNP: its ID contains any of the words of ``text`` (case-insensitive)."""
    words = [w for w in text.replace(",", " ").lower().split() if w]
    names = np.char.lower(np.asarray(snp_ids).astype(str))
    hit = np.zeros(len(names), bool)
    for w in words:
        hit |= np.char.find(names, w) >= 0
    return hit
