"""The window's export commands: result files (in the background), the table as shown, plots."""
from __future__ import annotations

import os

from PySide6.QtWidgets import QFileDialog

from gui import export, settings
from gui.dialogs import confirm_replace
from gui.worker import Task

REGIONAL_PNG = export.IMAGES[0]
REGIONAL_PNG_SIZE = (1400, 600)  # logical pixels, drawn at twice that: two panels side by side


class ExportMixin:
    """Export methods of :class:`gui.main_window.MainWindow` (uses its ``result``, ``pairs``,
    ``plots``, ``_start``, ``log`` and ``show_error``)."""

    def _save_path(self, title: str, name: str, filt: str) -> str:
        start = settings.value("export/dir", os.path.dirname(self.path) if self.path else os.getcwd())
        path, _ = QFileDialog.getSaveFileName(self, title, os.path.join(str(start), name), filt)
        if path:
            settings.set_value("export/dir", os.path.dirname(path))
        return path

    def _export(self, what: str, fn) -> bool:
        def done(path):
            self.log(f"Exported {what} to {path}")
            self.statusBar().showMessage(f"Exported {what} to {path}", 8000)
            self.exportFinished.emit(path)

        return self._start(Task(lambda progress, cancel, log: fn(), "export"), done)

    def export_file(self, kind: str, path: str) -> bool:
        """Write one result file (``export.RESULT_FILES`` kind) in the background."""
        result = self.result
        return self._export(export.RESULT_FILES[kind][1], lambda: export.export_result_file(result, kind, path))

    def export_all(self, out_dir: str, overwrite: bool = False) -> bool:
        """Every result file into ``out_dir``, and ``regional.png`` when the regional view shows a region."""
        result = self.result
        log_text = self.log_view.toPlainText()  # (read here: widgets belong to the GUI thread)
        images = {}
        if self.state.region is not None and self.regional.regions:
            from gui.plots.render import png_bytes

            # painted here: Qt paints on the GUI thread only; the task writes the bytes with the set
            images[REGIONAL_PNG] = png_bytes(self.regional.plot_widget, REGIONAL_PNG_SIZE, scale=2.0)
        return self._export("all result files",
                            lambda: export.export_all(result, out_dir, overwrite, log_text, images))

    def export_table(self, path: str, sep: str) -> bool:
        text = export.table_text(self.pairs.model, sep)  # snapshot of the view as shown now
        return self._export("the table", lambda: export.write_text(path, text))

    def export_plot(self, key: str, path: str, dpi: float | None = None) -> None:
        """Write plot ``key`` as PNG or SVG (by extension); synchronous: Qt painting is GUI-thread only.

        PNG at ``dpi`` (default: the ``export/dpi`` setting, 300: print resolution)."""
        plot = self.plots[key]
        if path.lower().endswith(".svg"):
            plot.export_svg(path)
        else:
            if dpi is None:
                try:
                    dpi = float(settings.value("export/dpi", 300))
                except (TypeError, ValueError):
                    dpi = 300.0
            plot.export_png(path, dpi=dpi)
        self.log(f"Exported the {plot.name} to {path}")
        self.statusBar().showMessage(f"Exported the {plot.name} to {path}", 8000)

    def export_all_dialog(self) -> None:
        if self.result is None:
            return
        d = QFileDialog.getExistingDirectory(self, "Export all result files into a folder",
                                             str(settings.value("export/dir", os.getcwd())))
        if not d:
            return
        settings.set_value("export/dir", d)
        overwrite = False
        if os.path.isdir(d) and any(os.scandir(d)):
            if not confirm_replace(self, "Replace folder contents?",
                                   f"{d} is not empty. Replace its contents with this scan's result files?"):
                return
            overwrite = True
        self.export_all(d, overwrite)

    def export_file_dialog(self, kind: str) -> None:
        if self.result is None:
            return
        text, name, filt = export.RESULT_FILES[kind]
        path = self._save_path(f"Export {text.rstrip('…')}", name, filt)
        if path:
            self.export_file(kind, path)

    def export_table_dialog(self, sep: str) -> None:
        ext = "csv" if sep == "," else "tsv"
        path = self._save_path("Export the table as shown", f"pairs_view.{ext}", f"{ext.upper()} (*.{ext})")
        if path:
            self.export_table(path, sep)

    def export_plot_dialog(self, fmt: str) -> None:
        key = list(self.plots)[self.tabs.currentIndex()]
        path = self._save_path(f"Export the plot as {fmt.upper()}", f"{key}.{fmt}", f"{fmt.upper()} image (*.{fmt})")
        if path:
            if not path.lower().endswith("." + fmt):
                path += "." + fmt
            try:
                self.export_plot(key, path)
            except OSError as exc:
                self.show_error("Could not export the plot", str(exc))

