"""The Help menu: the README and the docs opened in the system's viewer, and what the pair
table's columns mean (one dialog, from the same texts as the columns' tooltips)."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from gui.models import ADJ_COLUMNS, COLUMNS, EMP2_COLUMN, QT_ADJ_COLUMNS, QT_TOOLTIPS, TOOLTIPS

ROOT = Path(__file__).resolve().parent.parent  # the source checkout (README.md, docs/)
# (menu text, file under ROOT)
DOCS = (("&README: using gboost", "README.md"),
        ("Input &formats", "docs/FORMATS.md"),
        ("&Quantitative traits (linear test)", "docs/qt_epistasis.md"),
        ("&Performance and first run", "docs/PERFORMANCE.md"),
        ("&Clusters (Dask)", "docs/CLUSTER.md"),
        ("How gboost is &built", "docs/DESIGN.md"))

# What a reader of the table needs beyond the tooltips' one line, by column.
MORE = {
    "KSA": "BOOST screens every pair with this fast upper bound of the interaction statistic (Kirkwood "
           "superposition approximation); pairs whose KSA passes --epi1's threshold get the exact test. "
           "NaN for a quantitative trait (no BOOST screen).",
    "STAT": "The exact interaction statistic: the likelihood-ratio χ² between the log-linear models of the "
            "3×3×2 table with and without the SNP×SNP×phenotype term (PLINK 1.9's --fast-epistasis boost). "
            "For a quantitative trait the Wald χ² (t²) of the a×b term of y ~ a + b + a×b.",
    "Q": "Benjamini-Hochberg q value over every valid test of the scan: the smallest false discovery rate "
         "at which the pair would be called. Q ≤ 0.05 keeps an expected 5 % of false pairs among those kept.",
    "R2": "Genotypic r² between the two SNPs. A high r² means the pair tags one locus (linkage "
          "disequilibrium), which can mimic an interaction; such rows are tinted in the table.",
    "P_ADJ": "The interaction's P value once the covariates (--covar) are in the model; where it differs much "
             "from P, the covariates explain part of the signal.",
    "STAT_ADJ": "Case-control: the likelihood-ratio χ² of the interaction term in a logistic regression with "
                "both SNPs' genotypes and the covariates. Quantitative trait: the Wald χ² of BETA_ADJ.",
    "DF_ADJ": "Degrees of freedom of the adjusted test: the interaction terms left once empty genotype classes "
              "are dropped (case-control), the residual degrees of freedom (quantitative trait).",
    "EMP2": "After a scan with --perm (Run panel: Permutations): the case/control labels are shuffled N times "
            "(within the --within clusters, if given) and each shuffle's largest STAT over all pairs is kept. "
            "A pair's EMP2 is the share of shuffles beating it, so it is corrected for every pair tested: "
            "EMP2 ≤ 0.05 is genome-wide significant at 5 %, the empirical counterpart of Bonferroni. Its "
            "smallest value is 1 / (N + 1): 1,000 permutations resolve EMP2 down to 0.001.",
}


def doc_path(rel: str) -> Path | None:
    """The file ``rel`` of the checkout, or ``None`` where it is not there (an installed wheel)."""
    path = ROOT / rel
    return path if path.is_file() else None


def open_doc(rel: str) -> bool:
    """Open the file ``rel`` in the system's viewer; False if it is not there or nothing opened it."""
    path = doc_path(rel)
    return path is not None and bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))


def columns_html() -> str:
    """The table's columns and what each means (case-control, then a quantitative trait's)."""
    rows = []
    names = list(COLUMNS) + [c for c in ADJ_COLUMNS + QT_ADJ_COLUMNS if c not in COLUMNS] + [EMP2_COLUMN]
    for name in dict.fromkeys(names):
        text = TOOLTIPS.get(name, "")
        if name in QT_TOOLTIPS and name not in TOOLTIPS:
            text = QT_TOOLTIPS[name] + " (quantitative trait with --covar)"
        elif name in QT_TOOLTIPS:
            text += f". Quantitative trait: {QT_TOOLTIPS[name][0].lower()}{QT_TOOLTIPS[name][1:]}"
        if name in MORE:
            text += f"<br><span style='color:#444'>{MORE[name]}</span>"
        rows.append(f"<tr><td valign='top'><b>{name}</b></td><td>{text}</td></tr>")
    return ("<h3>What the columns mean</h3><p>Each row is a reported pair: its exact interaction test passed "
            "--epi1. The table shows 4 significant digits; copy and exports give the full numbers of pairs.tsv. "
            "The adjusted columns appear when the scan had covariates (--covar), EMP2 when it had "
            "permutations (--perm).</p>"
            "<table cellspacing='0' cellpadding='4'>" + "".join(rows) + "</table>")


def show_columns(parent: QWidget) -> QDialog:
    dlg = QDialog(parent)
    dlg.setObjectName("columnsHelp")
    dlg.setWindowTitle("What the columns mean")
    view = QTextBrowser()
    view.setHtml(columns_html())
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dlg.reject)
    lay = QVBoxLayout(dlg)
    lay.addWidget(view)
    lay.addWidget(buttons)
    dlg.resize(720, 560)
    dlg.text_view = view
    dlg.open()
    return dlg
