"""The main window: docks for the study, the run settings, the pairs and the log; plots in tabs.

What the window shows lives in one :class:`gui.state.AppState`, ``state``: the study (with the
settings it was loaded with and its own inputs), the last finished scan, the pathway graph and the
selection. The views render from it on its events and change it only through its actions (open,
scan done, select); ``study``, ``result``, ``reported``, ``graph`` and ``selected_snp`` read it.
``task`` is the work in flight, if any. A scan's result replaces ``result`` only when the scan
finishes; a cancelled or failed scan changes nothing but its checkpoint (:mod:`gui.checkpoints`),
which the next Run of the same study and thresholds offers to resume.
"""
from __future__ import annotations

import os
import time

import numpy as np
from PySide6.QtCore import QByteArray, Qt, Signal, Slot
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QDockWidget, QFileDialog, QLabel, QMainWindow, QMessageBox, QPlainTextEdit,
                               QScrollArea, QTabWidget)

from gboost.engines import make_engine
from gui import dialogs, remedies, settings
from gui.export_actions import ExportMixin
from gui.loading import OPEN_FILTER, canonical, display_name, open_study
from gui.menus import build_menus_and_toolbar
from gui.pairs_view import PairsView
from gui.pathway_actions import PathwayMixin
from gui.plots.interactions import InteractionMap
from gui.plots.manhattan import ManhattanPlot
from gui.plots.pathways import PathwayView
from gui.plots.qq import QQPlot
from gui.plots.regional import RegionalPlot
from gui.resultdata import partners_of, single_locus
from gui.run_panel import RunPanel
from gui.scan_actions import ScanMixin
from gui.state import AppState
from gui.summary_panel import SummaryPanel
from gui.worker import Task, compile_server, start_task, wait_threads


FIRST_SIZE = (1500, 950)  # the first start's window, where the screen has room for it
FRAME_ROOM = (16, 48)  # the window manager's frame and title bar beside the window's own size


def available_area(widget):
    """The free area (QRect) of the screen ``widget`` is on (or the primary one); ``None`` without a screen."""
    screen = widget.screen() or QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else None


class MainWindow(ScanMixin, PathwayMixin, ExportMixin, QMainWindow):
    studyLoaded = Signal(object)
    scanProgress = Signal(object)  # gboost.pipeline.progress.Progress, in the GUI thread
    scanFinished = Signal(object)
    scanCancelled = Signal()
    taskFailed = Signal(str, str)
    exportFinished = Signal(object)
    busyChanged = Signal(bool)
    pathwaySourcesChanged = Signal(object)
    resumeOffered = Signal(object)  # the QMessageBox asking whether to resume an interrupted scan

    def __init__(self, gpu_info: tuple[bool, str] = (False, "not checked")):
        super().__init__()
        self.setWindowTitle("gboost")
        self.setAcceptDrops(True)
        self.gpu_info = gpu_info
        self.state = AppState()
        self.error_box = None  # the last error dialog (tests press its fix buttons)
        self._failed_open: str | None = None  # a study that did not open: Run retries it
        self._retry = None  # what to redo once a fix button has changed the settings
        self.task: Task | None = None
        self.last_error: tuple[str, str] | None = None
        self._on_success = self._on_cancel = self._outcome = None
        self._running: list = []  # (QThread, Task) pairs not yet stopped
        # numba compiles on this thread only; a task waits meanwhile (gui/worker.py, docs/DESIGN.md)
        compile_server().compiled.connect(self._compiled)

        self.summary = SummaryPanel()
        self.run_panel = RunPanel()
        self.run_panel.set_gpu_info(*gpu_info)
        self.pairs = PairsView()
        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(5000)
        self.manhattan = ManhattanPlot()
        self.qq = QQPlot()
        self.interactions = InteractionMap()
        self.pathways = PathwayView()
        self.regional = RegionalPlot()
        # One entry per tab, in tab order (export and the View menu go by the tab's index).
        self.plots = {"manhattan": self.manhattan, "qq": self.qq, "interactions": self.interactions,
                      "pathways": self.pathways, "regional": self.regional}
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        for title, w in (("Manhattan", self.manhattan), ("QQ", self.qq), ("Interaction map", self.interactions),
                         ("Pathways", self.pathways), ("Regional", self.regional)):
            self.tabs.addTab(w, title)
        self.setCentralWidget(self.tabs)

        self.docks: dict[str, QDockWidget] = {}
        # The left column (study, run settings) runs the full height; the pairs sit under the plots.
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._add_dock("study", "Study", self._scroll(self.summary), Qt.DockWidgetArea.LeftDockWidgetArea)
        self._add_dock("run", "Run", self.run_panel, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._add_dock("pairs", "Pairs", self.pairs, Qt.DockWidgetArea.BottomDockWidgetArea)
        self._add_dock("log", "Log", self.log_view, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.docks["pairs"], self.docks["log"])
        self.docks["pairs"].raise_()
        self.resizeDocks([self.docks["study"]], [380], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["pairs"], self.docks["study"]], [300, 400], Qt.Orientation.Vertical)

        self.engine_label = QLabel()
        self.statusBar().addPermanentWidget(self.engine_label)
        self.resume_box: QMessageBox | None = None
        self.checkpoint_dir = None  # checkpoint folder of the scan in flight
        self._build_actions()
        self._connect()
        self._init_pathways()
        self.run_panel.load_settings()
        self._update_engine_label()
        self._restore_window()
        self._set_busy(False)
        for name, render in (("study", self._render_study), ("result", self._render_result),
                             ("graph", self._render_graph), ("selection", self._render_selection),
                             ("region", self._render_region)):
            getattr(self.state.events, name).connect(render)

    # -- the state, read ------------------------------------------------------------------------
    path = property(lambda self: self.state.path)
    study = property(lambda self: self.state.study)
    study_qc = property(lambda self: self.state.study_qc)
    study_key = property(lambda self: self.state.study_key)
    result = property(lambda self: self.state.result)
    reported = property(lambda self: self.state.reported)
    graph = property(lambda self: self.state.graph)
    selected_snp = property(lambda self: self.state.selection.snp)

    # -- construction ---------------------------------------------------------------------------
    @staticmethod
    def _scroll(widget):
        area = QScrollArea()
        area.setWidget(widget)
        area.setWidgetResizable(True)
        area.setFrameShape(QScrollArea.Shape.NoFrame)
        return area

    def _add_dock(self, key: str, title: str, widget, area) -> None:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{key}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        self.docks[key] = dock

    def _action(self, text, slot, shortcut=None, tip=None) -> QAction:
        a = QAction(text, self)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut))
        if tip:
            a.setStatusTip(tip)
            a.setToolTip(tip)
        a.triggered.connect(lambda _checked=False: slot())
        return a

    def _build_actions(self) -> None:
        build_menus_and_toolbar(self)

    def _connect(self) -> None:
        self.run_panel.runRequested.connect(self.start_scan)
        self.run_panel.cancelRequested.connect(self.cancel_scan)
        self.run_panel.engine.currentIndexChanged.connect(lambda _i: self._update_engine_label())
        self.manhattan.snpClicked.connect(self.select_snp)
        self.interactions.pairClicked.connect(self._pair_clicked)
        self.pairs.pairActivated.connect(self.show_pair)
        self.pairs.regionRequested.connect(self.show_region_of_pair)
        self.manhattan.snpDoubleClicked.connect(self.show_region_of_snp)
        self.regional.widthChanged.connect(self.state.set_region_width)
        self.regional.showSelectionRequested.connect(self.show_region_of_selection)
        self.pairs.partnerFilterCleared.connect(self.clear_selection)
        self.pairs.table.selectionModel().currentRowChanged.connect(self._table_row_changed)
        for plot in self.plots.values():
            plot.hovered.connect(lambda text: self.statusBar().showMessage(text, 4000))

    def _restore_window(self) -> None:
        geom, state = settings.value("window/geometry"), settings.value("window/state")
        if isinstance(geom, QByteArray):
            self.restoreGeometry(geom)
        else:
            self.resize(*FIRST_SIZE)
        self._fit_to_screen()
        self._fit_docks_on_show = not isinstance(state, QByteArray)
        if isinstance(state, QByteArray):
            self.restoreState(state)

    def _fit_to_screen(self) -> None:
        """No larger than the screen's free area (a 1366x768 laptop, a window saved on a larger
        screen): the title bar and the frame are left room, the window stays on the screen."""
        free = available_area(self)
        if free is None:
            return
        w = min(self.width(), free.width() - FRAME_ROOM[0])
        h = min(self.height(), free.height() - FRAME_ROOM[1])
        if (w, h) != (self.width(), self.height()):
            self.resize(max(w, 320), max(h, 240))
        x = min(max(self.x(), free.left()), free.right() - self.width())
        y = min(max(self.y(), free.top()), free.bottom() - self.height())
        if (x, y) != (self.x(), self.y()):
            self.move(max(x, free.left()), max(y, free.top()))

    def showEvent(self, ev) -> None:
        super().showEvent(ev)
        if self._fit_docks_on_show:
            # First start: docks in proportion to the window as shown (a fixed 300-pixel pair table
            # leaves the plots a strip at 1280x720).
            self._fit_docks_on_show = False
            h, w = self.height(), self.width()
            self.resizeDocks([self.docks["pairs"], self.docks["study"]], [max(150, int(0.3 * h)), int(0.45 * h)],
                             Qt.Orientation.Vertical)
            self.resizeDocks([self.docks["study"]], [max(340, min(440, int(0.26 * w)))], Qt.Orientation.Horizontal)

    # -- status ---------------------------------------------------------------------------------
    @Slot(str)
    def log(self, text: str) -> None:
        self.log_view.appendPlainText(f"{time.strftime('%H:%M:%S')}  {text}")

    @Slot(str, float)
    def _compiled(self, name: str, seconds: float) -> None:
        self.log(f"Compiled {name} for this computer in {seconds:.1f} s (once: later runs load it from the cache)")

    def engine_description(self) -> str:
        choice = self.run_panel.engine.currentData()
        ok, desc = self.gpu_info
        if choice == "gpu" or (choice == "auto" and ok):
            return f"GPU: {desc}"
        return make_engine("cpu", threads=self.run_panel.threads.value() or None).describe()

    def _update_engine_label(self) -> None:
        self.engine_label.setText(f"Engine: {self.engine_description()}")

    @Slot(str, str, str)
    def show_error(self, title: str, message: str, details: str = "") -> None:
        self.last_error = (title, message)
        self.log(f"{title}: {message}")
        self.statusBar().showMessage(message, 10000)
        if not self.busy:
            self.run_panel.show_status(f"{title}: not done (see the message).")  # not a stale "Starting…"
        fixes = remedies.fixes_for(self, message) if not details else []
        self.error_box = dialogs.show_error(self, title, message, details, fixes)
        self.taskFailed.emit(title, message)

    def show_columns_help(self):
        """Help > What the columns mean."""
        from gui import help_menu

        self.columns_help = help_menu.show_columns(self)
        return self.columns_help

    def open_doc(self, rel: str) -> None:
        """Help > a document of the checkout, in the system's viewer."""
        from gui import help_menu

        if not help_menu.open_doc(rel):
            self.statusBar().showMessage(f"Could not open {rel}: read it in the gboost folder ({help_menu.ROOT})", 10000)

    def about(self) -> None:
        engine = self.result.device if self.result is not None else self.engine_description()
        dialogs.show_about(self, engine)

    @property
    def busy(self) -> bool:
        return self.task is not None

    def _set_busy(self, busy: bool) -> None:
        self.run_panel.set_running(busy, scan=busy and self.task is not None and self.task.name == "scan")
        self.act_run.setEnabled(not busy)
        self.act_cancel.setEnabled(busy and self.task is not None and self.task.name == "scan")
        self.act_open.setEnabled(not busy)
        self.recent_menu.setEnabled(not busy)
        has = self.result is not None and not busy
        for a in (self.act_export, self.act_table_csv, self.act_table_tsv, self.act_png, self.act_svg,
                  self.act_region, *self.export_actions.values()):
            a.setEnabled(has)
        graph = getattr(self, "graph", None) is not None and not busy
        self.act_export_graph.setEnabled(graph)
        self.pathways.export_button.setEnabled(graph)
        for a in (self.act_pathway_sources, self.act_pathway_bundled):
            a.setEnabled(not busy)
        self.pathways.sources_button.setEnabled(not busy)
        self.regional.show_button.setEnabled(has)
        self.busyChanged.emit(busy)

    # -- tasks ----------------------------------------------------------------------------------
    def _start(self, task: Task, on_success, on_cancel=None) -> bool:
        if self.busy:
            self.statusBar().showMessage("Busy: wait for the current task or cancel it.", 5000)
            return False
        self.task = task
        self._on_success, self._on_cancel, self._outcome = on_success, on_cancel, None
        # Bound methods of this window (a QObject of the GUI thread), never lambdas: PySide calls
        # a lambda in the emitting (worker) thread, a QObject's slot in the receiver's thread.
        task.message.connect(self.log)
        task.progressed.connect(self._task_progressed)
        task.succeeded.connect(self._task_succeeded)
        task.cancelled.connect(self._task_cancelled)
        task.failed.connect(self._task_failed)
        task.finished.connect(self._task_finished)
        self._set_busy(True)
        thread = start_task(task)
        self._running.append((thread, task))  # kept alive until the thread has stopped
        thread.finished.connect(self._thread_stopped)
        return True

    @Slot()
    def _thread_stopped(self) -> None:
        self._running = [(th, t) for th, t in self._running if not th.isFinished()]

    @Slot(object)
    def _task_progressed(self, ev) -> None:
        if self.task is not None and self.task.name == "scan":
            self.run_panel.show_progress(ev)
            self.scanProgress.emit(ev)

    @Slot(object)
    def _task_succeeded(self, value) -> None:
        on_success = self._on_success
        self._outcome = lambda: on_success(value)

    @Slot()
    def _task_cancelled(self) -> None:
        self._outcome = self._on_cancel

    @Slot()
    def _task_finished(self) -> None:
        # Outcomes are handled once the window is idle again, so that whatever they trigger
        # (studyLoaded -> start_scan in --run mode, a test's next step) may start new work.
        outcome, self._outcome = self._outcome, None
        self.task = None
        self._on_success = self._on_cancel = None
        if outcome is not None:
            outcome()
        if self.task is None:  # the outcome may have started the next task
            self._set_busy(False)

    @Slot(str, str, str)
    def _task_failed(self, title: str, message: str, details: str) -> None:
        self._outcome = lambda: self.show_error(title, message, details)

    def wait_idle(self, timeout_ms: int = 30000) -> bool:
        """Block until every worker thread has stopped (for shutdown; the GUI uses signals)."""
        return wait_threads([th for th, _ in self._running], timeout_ms)

    # -- open -----------------------------------------------------------------------------------
    def open_dialog(self) -> None:
        start = os.path.dirname(self.path) if self.path else os.getcwd()
        path, _ = QFileDialog.getOpenFileName(self, "Open a study", start, OPEN_FILTER)
        if path:
            self.open_path(path)

    def open_path(self, path: str, run: bool = False) -> bool:
        """Load the fileset at ``path`` (in the background) with the Run panel's settings and the
        study's own inputs (--allow-no-sex, --pheno, --covar as last time for this study, or as
        changed in the panel since the loaded study's were shown); with ``run``, scan it once it
        is loaded. Nothing changes until it has loaded: a study that is refused leaves the loaded
        one, its settings included, as it was."""
        path = os.fspath(path)
        if self.busy:
            self.statusBar().showMessage("Busy: wait for the current task or cancel it.", 5000)
            return False
        key = canonical(path)
        inputs = {**self.state.inputs_for(key), **self.run_panel.pending_inputs()}
        try:
            opts = self.run_panel.run_options(inputs)
        except ValueError as exc:
            self.show_error("Invalid setting", str(exc))
            return False
        self.log(f"Opening {path}")
        self.statusBar().showMessage(f"Opening {display_name(path)}…")
        self._failed_open, self._retry = path, (lambda: self.open_path(path, run))

        def job(progress, cancel, log):
            study = open_study(path, opts.qc, log=log, **opts.input_kwargs())
            # the single-locus test, for the Manhattan plot before any scan
            return study, opts, single_locus(study, allelic=opts.params.allelic)

        def loaded(value):
            self._study_loaded(path, *value, inputs=inputs)
            if run:
                self.start_scan()

        return self._start(Task(job, "loading"), loaded)

    def _study_loaded(self, path: str, study, opts, single=None, inputs: dict | None = None) -> None:
        self._failed_open = None
        self._graph_error = None
        settings.add_recent(canonical(path))
        self.state.open(path, canonical(path), study, opts.qc, opts.load_key(),
                        inputs if inputs is not None else self.run_panel.study_inputs(), single)
        kind = ("quantitative trait: PLINK's linear --epistasis test" if getattr(study, "quantitative", False)
                else f"{study.layout.n_case:,} cases, {study.layout.n_ctrl:,} controls")
        msg = f"Loaded {display_name(path)}: {study.n_snps:,} SNPs × {study.n_samples:,} samples ({kind})"
        self._default_epi1_for(study)
        self.log(msg)
        self.statusBar().showMessage(msg, 8000)
        self.run_panel.show_status("Ready: press Run scan.")
        self.studyLoaded.emit(study)

    def _default_epi1_for(self, study) -> None:
        """PLINK's default --epi1 differs by test: 5e-6 for boost, 1e-4 for the linear QT test. An
        --epi1 the user typed stays, whatever its value; one not typed follows the loaded study."""
        from gboost.stats.qt import QT_DEFAULT_EPI1

        want = self.run_panel.follow_test_default(getattr(study, "quantitative", False))
        if want is not None:
            self.log(f"--epi1 {want}: PLINK's default for this study's test"
                     + (f" (linear, quantitative trait: {QT_DEFAULT_EPI1:g})" if want == "1e-4" else " (boost)"))

    # -- rendering the state --------------------------------------------------------------------
    def _render_study(self) -> None:
        st = self.state
        if st.study is None:
            return
        self.setWindowTitle(f"gboost: {display_name(st.path)}" if st.path else "gboost")
        self.summary.set_study(st.study, st.key or "")
        self.run_panel.apply_study_inputs(st.inputs)

    def _render_result(self) -> None:
        st = self.state
        result = st.result
        for plot in (self.manhattan, self.qq, self.interactions):
            plot.clear()
        if result is None:
            if st.study is not None and st.single is not None:
                self.manhattan.set_single_locus(st.study, st.single)
            self.pairs.clear()
            self.summary.clear_result()
            self._update_engine_label()
            return
        self.pairs.set_result(result, st.reported)
        self.manhattan.set_result(result, st.reported)
        self.qq.set_result(result)
        self.interactions.set_result(result, st.reported)
        self.summary.set_result(result, len(st.reported), self.qq.lam)
        self.engine_label.setText(f"Engine: {result.device}")

    def _render_graph(self) -> None:
        self._show_graph(self.state.graph, getattr(self, "_graph_error", None))

    def _render_selection(self) -> None:
        """Every view shows the one selection: the table's partner filter and chip, the marks in
        the plots, and each plot's info line (what is selected, or nothing)."""
        st, sel = self.state, self.state.selection
        for plot in self.plots.values():
            plot.readout.setText(" ")
        if st.result is None or sel.empty:
            self.pairs.filter_partners(None)
            self.manhattan.clear_selection()
            self.interactions.mark_pairs(np.zeros(0, np.int64))
            self.pathways.clear_selection()
            return
        pr, v = st.reported, st.result.study.variants
        if sel.snp is not None:
            k = sel.snp
            rows, partners = partners_of(pr, k)
            self.pairs.filter_partners(k, str(v.snp[k]))
        else:
            self.pairs.filter_partners(None)
        if sel.pair is not None:
            i, j = int(pr.i[sel.pair]), int(pr.j[sel.pair])
            first = sel.snp if sel.snp is not None else i
            other = j if first == i else i
            self.manhattan.select_snp(first, np.array([other]))
            self.interactions.mark_pairs(np.array([sel.pair]))
            self.pathways.select_snp(first, np.array([other]))
            text = f"Selected pair: {self.interactions.describe_point(sel.pair)}"
            self.interactions.readout.setText(text)
            self.manhattan.readout.setText(text)
            self.pathways.readout.setText(text)
        else:
            self.manhattan.select_snp(k, partners)
            self.interactions.mark_pairs(rows)
            self.pathways.select_snp(k)
            text = f"Selected: {self.manhattan.describe_point(k)}"
            self.manhattan.readout.setText(text)
            self.interactions.readout.setText(text)
            self.pathways.readout.setText(text)
            self.statusBar().showMessage(f"{v.snp[k]}: {len(partners):,} reported partner{'s' if len(partners) != 1 else ''}", 8000)

    def _render_region(self) -> None:
        st = self.state
        if st.region is None or st.result is None:
            self.regional.clear()
            return
        # the single-locus P the Manhattan plot already holds for this result (not recomputed)
        single = self.manhattan.y if self.manhattan.result is st.result else None
        self.regional.set_region(st.result, st.region, single)

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        items = settings.recent_files()
        for p in items:
            self.recent_menu.addAction(self._action(display_name(p), lambda p=p: self.open_path(p), None, p))
        if not items:
            a = self.recent_menu.addAction("(none)")
            a.setEnabled(False)
        self.recent_menu.addSeparator()
        self.recent_menu.addAction(self._action("Clear list", settings.clear_recent))

    def dragEnterEvent(self, ev) -> None:
        if any(u.isLocalFile() for u in ev.mimeData().urls()):
            ev.acceptProposedAction()

    def dropEvent(self, ev) -> None:
        files = [u.toLocalFile() for u in ev.mimeData().urls() if u.isLocalFile()]
        if files:
            ev.acceptProposedAction()
            self.open_path(files[0])

    # -- selection ------------------------------------------------------------------------------
    def select_snp(self, k: int | None) -> None:
        """Select SNP ``k``: the table shows its pairs, the plots mark its partners."""
        self.state.select_snp(k)

    def clear_selection(self) -> None:
        self.state.clear_selection()

    def show_pair(self, row: int) -> None:
        """Show one reported pair (row of ``self.reported``) in the plots; the table's filter stays
        only when the pair is of the selected SNP."""
        self.state.select_pair(row)

    def _pair_clicked(self, row: int) -> None:
        self.show_pair(row)
        self.pairs.select_pair_row(row)

    def _table_row_changed(self, current, _previous) -> None:
        if current.isValid() and self.result is not None and self.pairs.proxy.rowCount():
            self.show_pair(self.pairs.proxy.pair_row(current.row()))

    # -- the regional view ---------------------------------------------------------------------
    def show_region_of_pair(self, row: int) -> bool:
        """The regional view around the two SNPs of reported pair ``row``, brought to the front."""
        return self._show_region(self.state.show_region(pair=row, half_width_bp=self._region_width()))

    def show_region_of_snp(self, k: int) -> bool:
        """The regional view around SNP ``k``."""
        return self._show_region(self.state.show_region((k,), half_width_bp=self._region_width()))

    def show_region_of_selection(self) -> bool:
        """The regional view of the selected pair (its two SNPs), else of the selected SNP."""
        sel = self.state.selection
        if sel.pair is not None:
            return self.show_region_of_pair(sel.pair)
        if sel.snp is not None:
            return self.show_region_of_snp(sel.snp)
        self.statusBar().showMessage("Select a pair (table, interaction map) or a SNP (Manhattan plot) first.", 6000)
        return False

    def _region_width(self) -> int:
        """The half-width the Regional tab's box shows (set before any region is, it still counts)."""
        return int(self.regional.width_box.value()) * 1000

    def _show_region(self, shown: bool) -> bool:
        if shown:
            self.tabs.setCurrentWidget(self.regional)
        return shown

    def reset_zoom(self) -> None:
        self.tabs.currentWidget().reset_view()

    # -- shutdown -------------------------------------------------------------------------------
    def closeEvent(self, ev) -> None:
        if self.task is not None:
            self.task.cancel()
        self.wait_idle(60000)  # threads that finished their task may still be winding down
        self.run_panel.save_settings()
        settings.set_value("window/geometry", self.saveGeometry())
        settings.set_value("window/state", self.saveState())
        super().closeEvent(ev)

