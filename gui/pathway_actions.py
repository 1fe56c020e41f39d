"""The window's pathway-graph commands: annotation sources (dialog, settings), rebuilding the
graph in the background, exporting it."""
from __future__ import annotations

import os

from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QDoubleSpinBox, QFileDialog, QFormLayout, QHBoxLayout,
                               QLineEdit, QPushButton, QWidget)

from gboost.pathways import BUNDLED_BUILD, DEFAULT_WINDOW_KB, write_graph_files
from gboost.pathways.graph import GRAPH_FILES
from gboost.stats.pvalues import chi2_isf
from gui import pathway_data, settings
from gui.dialogs import confirm_replace
from gui.pathway_data import PathwaySources
from gui.worker import Task

ANNOTATION_FILTER = "Gene annotation (*.bed *.bed.gz *.gtf *.gtf.gz *.gff *.gff.gz);;All files (*)"
GMT_FILTER = "Gene sets (*.gmt *.gmt.gz);;All files (*)"


def saved_sources() -> tuple[PathwaySources, list[str]]:
    """The sources kept in the settings; a file that has gone falls back to the bundled one
    (the second value says which)."""
    notes = []
    ann = settings.value("pathways/annotation") or None
    gmt = settings.value("pathways/gmt") or None
    if ann and not os.path.isfile(str(ann)):
        notes.append(f"gene annotation {ann} not found: using the bundled genes")
        ann = None
    if gmt and not os.path.isfile(str(gmt)):
        notes.append(f"gene sets {gmt} not found: using the bundled GO sets")
        gmt = None
    try:
        window = float(settings.value("pathways/window_kb", DEFAULT_WINDOW_KB))
    except (TypeError, ValueError):
        window = DEFAULT_WINDOW_KB
    return PathwaySources(str(ann) if ann else None, str(gmt) if gmt else None, window), notes


def save_sources(sources: PathwaySources) -> None:
    settings.set_value("pathways/annotation", sources.annotation or "")
    settings.set_value("pathways/gmt", sources.gmt or "")
    settings.set_value("pathways/window_kb", sources.window_kb)


class SourcesDialog(QDialog):
    """Gene annotation, gene sets and window; empty path = the bundled file."""

    def __init__(self, sources: PathwaySources, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Pathway annotation")
        self.setObjectName("pathwaySourcesDialog")
        form = QFormLayout(self)
        self.annotation = self._path_row(form, "Gene annotation", sources.annotation,
                                         f"bundled: protein-coding genes, {BUNDLED_BUILD}", ANNOTATION_FILTER,
                                         "BED (chrom start end name, 0-based) or GTF (gene lines with gene_name); "
                                         ".gz accepted. Its genome build must be the SNP positions' build.")
        self.gmt = self._path_row(form, "Gene sets (.gmt)", sources.gmt, "bundled: GO biological processes",
                                  GMT_FILTER, "NAME<TAB>DESCRIPTION<TAB>GENE… (MSigDB, GO, Reactome exports); gene "
                                  "IDs must match the annotation's (symbols with symbols).")
        self.window_kb = QDoubleSpinBox()
        self.window_kb.setRange(0.0, 10000.0)
        self.window_kb.setDecimals(1)
        self.window_kb.setSuffix(" kb")
        self.window_kb.setValue(sources.window_kb)
        self.window_kb.setToolTip("A SNP maps to every gene it lies in or within this distance of either end "
                                  "(0: gene bodies only)")
        form.addRow("SNP-to-gene window", self.window_kb)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
                                   | QDialogButtonBox.StandardButton.RestoreDefaults)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).setText("Bundled files, 10 kb")
        buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(self.restore_defaults)
        form.addRow(buttons)
        self.resize(640, self.sizeHint().height())

    def _path_row(self, form, label, value, placeholder, filt, tip) -> QLineEdit:
        edit = QLineEdit(value or "")
        edit.setPlaceholderText(placeholder)
        edit.setToolTip(tip)
        browse = QPushButton("Browse…")

        def pick():
            start = os.path.dirname(edit.text()) if edit.text() else os.getcwd()
            path, _ = QFileDialog.getOpenFileName(self, f"Choose the {label.lower()}", start, filt)
            if path:
                edit.setText(path)

        browse.clicked.connect(pick)
        row = QWidget()
        lay = QHBoxLayout(row)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(edit, 1)
        lay.addWidget(browse)
        form.addRow(label, row)
        return edit

    def restore_defaults(self) -> None:
        self.annotation.setText("")
        self.gmt.setText("")
        self.window_kb.setValue(DEFAULT_WINDOW_KB)

    def sources(self) -> PathwaySources:
        return PathwaySources(self.annotation.text().strip() or None, self.gmt.text().strip() or None,
                              float(self.window_kb.value()))


class PathwayMixin:
    """Pathway methods of :class:`gui.main_window.MainWindow` (uses its ``pathways`` view,
    ``result``, ``reported``, ``_start``, ``_export``, ``log`` and ``show_error``)."""

    def _init_pathways(self) -> None:
        self.pathway_sources, notes = saved_sources()
        for note in notes:
            self.log(note)
        self.pathways.nodeClicked.connect(self.select_snp)
        self.pathways.sourcesRequested.connect(self.pathway_sources_dialog)
        self.pathways.exportRequested.connect(self.export_graph_dialog)
        self.pathways.clear("Run a scan to see its pairs grouped by pathway")

    def _show_graph(self, graph, error: str | None = None) -> None:
        """Draw the state's graph (the state's graph event): a new graph starts unselected, the
        selection is drawn by the window's selection renderer."""
        result = self.result
        if graph is None:
            self.pathways.clear(f"No pathway graph: {error}" if error else
                                ("" if result is not None else "Run a scan to see its pairs grouped by pathway"))
            self._set_busy(self.busy)  # the export commands follow the graph
            return
        bonf = chi2_isf(result.bonferroni, 4) if result is not None and result.n_valid else None
        self.pathways.set_graph(graph, self.pathway_sources.describe(), bonf)
        if self.selected_snp is not None:
            self.pathways.select_snp(self.selected_snp)
        self._set_busy(self.busy)

    def set_pathway_sources(self, sources: PathwaySources) -> bool:
        """Use other annotation files or window: read them (and rebuild the graph of the last scan)
        in the background. A bad file leaves everything as it was and says why in a dialog."""
        result, reported = self.result, self.reported

        def job(progress, cancel, log):
            log(f"Reading the pathway annotation: {sources.describe()}")
            if result is None:
                pathway_data.check_sources(sources)
                return None
            return pathway_data.build_graph(result, reported, sources)

        def done(graph):
            self.pathway_sources = sources
            save_sources(sources)
            self.log(f"Pathway annotation: {sources.describe()}")
            if result is not None:
                self._graph_error = None
                self.state.set_graph(graph, result)  # refused if another scan's result came meanwhile
            self.pathwaySourcesChanged.emit(sources)

        return self._start(Task(job, "pathway graph"), done)

    def pathway_sources_dialog(self) -> None:
        dlg = SourcesDialog(self.pathway_sources, self)
        dlg.accepted.connect(lambda: self.set_pathway_sources(dlg.sources()))
        dlg.open()
        self.sources_dialog = dlg

    def use_bundled_pathway_files(self) -> None:
        self.set_pathway_sources(PathwaySources())

    def export_graph(self, out_dir: str, overwrite: bool = False) -> bool:
        """Write graph.graphml, nodes.tsv and edges.tsv (the core's ``write_graph_files``)."""
        graph = self.graph
        if graph is None:
            return False
        return self._export("the pathway graph", lambda: write_graph_files(graph, out_dir, overwrite=overwrite))

    def export_graph_dialog(self) -> None:
        if self.graph is None:
            return
        d = QFileDialog.getExistingDirectory(self, "Export the pathway graph (graph.graphml, nodes.tsv, edges.tsv) "
                                             "into a folder", str(settings.value("export/dir", os.getcwd())))
        if not d:
            return
        settings.set_value("export/dir", d)
        overwrite = False
        present = {e.name for e in os.scandir(d)} if os.path.isdir(d) else set()
        if present - set(GRAPH_FILES):
            # write_graph_files replaces the whole folder: never offer that for a folder of other files
            self.show_error("Choose another folder", f"{d} holds other files. Export the graph into an empty "
                                                     "folder (or one holding an earlier graph export).")
            return
        if present:
            if not confirm_replace(self, "Replace the earlier graph?", f"{d} holds an earlier graph export. Replace it?"):
                return
            overwrite = True
        self.export_graph(d, overwrite)

