"""The window's scan commands: run (with a checkpoint, offering to resume an interrupted scan of
the same study and thresholds), cancel, and showing a finished scan."""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from gboost.pipeline.checkpoint import Ledger
from gboost.engines import make_engine
from gboost.errors import InputError, ScanCancelled
from gboost.pipeline.scan import run_pipeline
from gui import checkpoints, pathway_data, settings
from gui.loading import canonical, display_name, open_study
from gui.worker import Task


class ScanMixin:
    """Scan methods of :class:`gui.main_window.MainWindow` (uses its ``run_panel``, ``study``,
    ``path``, ``pathway_sources``, the views, ``_start``, ``log`` and ``show_error``)."""

    def start_scan(self, resume: bool | None = None) -> bool:
        """Scan with the Run panel's settings; reloads the study first when its QC changed.

        When an earlier scan of this study with these QC settings and thresholds was interrupted
        (Cancel, a crash), ``resume=None`` asks whether to resume it (the dialog is
        ``resume_box``; the scan starts when it is answered), ``True`` resumes it and ``False``
        starts over. Returns False when nothing was started or asked.
        """
        if self.busy or (self.resume_box is not None and self.resume_box.isVisible()):
            return False
        if self.study is None and self._failed_open is not None:
            return self.open_path(self._failed_open, run=True)  # Run after a failed open: try again, then scan
        if self.path is None and self.study is None:
            self.show_error("No study", "Open a study first (File ▸ Open…).")
            return False
        try:
            opts = self.run_panel.run_options()
        except ValueError as exc:
            self.show_error("Invalid setting", str(exc))
            return False
        qc, params = opts.qc, opts.params
        ckpt = None
        if self.path is not None and not opts.set_file:  # a candidate-set scan runs whole, as the CLI's
            try:
                ckpt = checkpoints.directory_for(self.path, qc, params)
            except (OSError, InputError) as exc:
                self.log(f"No checkpoint for this scan: {exc}")
        found = checkpoints.interrupted(ckpt) if ckpt is not None else None
        if found is not None and found.done > 0 and resume is None:
            self._offer_resume(found, opts)
            return True
        return self._launch_scan(opts, ckpt, bool(resume) and found is not None and found.done > 0)

    def _offer_resume(self, found, opts) -> None:
        params = opts.params
        done = f"{found.done:,} of {found.total:,} tiles"
        if found.perms_total:  # --perm: the permutations after the screen have a ledger of their own
            done += f" and {found.perms_done:,} of {found.perms_total:,} permutations"
        box = QMessageBox(QMessageBox.Icon.Question, "Interrupted scan", f"Resume the interrupted scan ({done} done)?",
                          QMessageBox.StandardButton.NoButton, self)
        box.setObjectName("resumeBox")
        settings_text = f"--epi1 {params.epi1:g}, --epi2 {params.epi2:g}"
        if found.perms_total:
            settings_text += f", --perm {params.perm}" + (f" --perm-seed {params.perm_seed}" if params.perm_seed else "")
        rest = "tiles and permutations" if found.perms_total else "tiles"
        box.setInformativeText(f"A scan of {display_name(self.path)} with these QC settings and thresholds "
                               f"({settings_text}) stopped before the end. Resuming "
                               f"computes only the remaining {rest} and gives the same results as an uninterrupted scan.")
        box.resume_button = box.addButton("Resume", QMessageBox.ButtonRole.AcceptRole)
        box.start_over_button = box.addButton("Start over", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(box.resume_button)

        def answered(button) -> None:
            self.resume_box = None
            if button is box.resume_button:
                self._launch_scan(opts, found.directory, True)
            elif button is box.start_over_button:
                checkpoints.discard(found.directory)
                self._launch_scan(opts, found.directory, False)
            else:
                self.run_panel.show_status("Not started: the interrupted scan's checkpoint is kept.")

        box.buttonClicked.connect(answered)
        self.resume_box = box
        box.open()
        self.resumeOffered.emit(box)

    def _launch_scan(self, opts, ckpt, resume: bool) -> bool:
        qc, params = opts.qc, opts.params
        study = self.study if (self.study is not None and opts.load_key() == self.study_key) else None
        path = self.path
        sources = self.pathway_sources
        out_dir = suggested_out(path, settings.value("export/dir"))
        if path is not None:
            # The inputs of this scan are the study's own from now on (not pending for the next study).
            self.state.remember(canonical(path), self.run_panel.study_inputs())
            self.run_panel.pending.clear()
        self._retry = lambda: self.start_scan()
        self._failed_open = None  # a failure from here on is this scan's, of the loaded study

        def job(progress, cancel, log):
            log("Settings: " + opts.command(path, out_dir))
            s = study
            if s is None:
                log("QC or phenotype settings changed: reloading the study")
                s = open_study(path, qc, log=log, **opts.input_kwargs())
            s = opts.candidate_study(s, log=log)  # --set: the sets' rectangle (a bad set file ends here)
            if s.quantitative:  # a quantitative phenotype: PLINK's linear --epistasis test
                return (_qt_job(s, params, progress, cancel, log, sources, ckpt, opts, path=path, qc=qc, resume=resume),
                        opts, None, None)
            covariates = None
            if opts.covar:
                covariates = opts.covariates(s)
                log(f"Covariates for the adjusted tests: {', '.join(covariates[1])}")
            engine = make_engine(params.engine)  # --dask included: the engine runs tiles as Dask tasks
            if s.rect is None:
                log(f"Scanning {s.n_snps:,} SNPs × {s.n_samples:,} samples "
                    f"({s.n_snps * (s.n_snps - 1) // 2:,} pairs) on {engine.describe()}")
            else:  # the candidate sets' rectangle, in the CLI's words
                log(f"Scanning {s.rect.describe()} × {s.n_samples:,} samples ({s.rect.n_pairs():,} pairs) "
                    f"on {engine.describe()}")
            if params.perm:
                _log_permutations(s, params, log)  # (a bad --within file is refused here, before the scan)
            ledger = _open_ledger(ckpt, path, qc, s, params, resume, log)
            # The CLI's sequence (gboost.pipeline.scan.run_pipeline), checkpoint and covariates included.
            result = run_pipeline(s, params, engine=engine, checkpoint=ledger, progress=progress, cancel=cancel,
                                  covariates=covariates)
            _honour_cancel(cancel)  # pressed in the last stages: the checkpoint holds every tile
            checkpoints.discard(ckpt)  # the scan is complete: nothing to resume
            graph, error = None, None
            try:
                graph = pathway_data.build_graph(result, result.reported, sources)
            except Exception as exc:  # noqa: BLE001 - a bad annotation file must not cost the scan's result
                error = str(exc) if isinstance(exc, (InputError, OSError)) else f"{type(exc).__name__}: {exc}"
                log(f"Pathway graph not drawn: {error}")
            return result, opts, graph, error

        if params.dask:
            # Dask's first import here, on the window's thread: made on the worker thread while the
            # event loop collected garbage it aborted the process once (PySide6, CPython 3.11).
            try:
                import distributed  # noqa: F401
            except ImportError:
                pass  # the engine says what to install, on the worker thread, as a failed scan
        task = Task(job, "scan")
        self.run_panel.save_settings()
        self.checkpoint_dir = ckpt
        return self._start(task, lambda value: self._scan_done(*value), self._scan_cancelled)

    def cancel_scan(self) -> None:
        if self.task is not None and self.task.name == "scan":
            self.task.cancel()
            self.run_panel.show_status("Cancelling at the end of the current tile or stage…")

    def _scan_cancelled(self) -> None:
        kept = "the previous results are unchanged" if self.result is not None else "no results"
        found = checkpoints.interrupted(self.checkpoint_dir) if self.checkpoint_dir is not None else None
        if found is not None:
            what = "tiles"
            if found.perms_done:
                what = f"tiles and {found.perms_done:,} of {found.perms_total:,} permutations"
            kept += f"; finished {what} are kept: Run scan offers to resume"
        self.run_panel.show_status(f"Cancelled: {kept}.")
        self.log(f"Scan cancelled; {kept}")
        self.statusBar().showMessage(f"Scan cancelled; {kept}.", 8000)
        self.scanCancelled.emit()

    def _scan_done(self, result, opts, graph=None, graph_error: str | None = None) -> None:
        if isinstance(result, tuple):  # a QT scan: (result, graph, error) from _qt_job
            result, graph, graph_error = result
        self._graph_error = graph_error
        self.state.scanned(result, opts, graph)
        n = len(self.reported)
        msg = (f"Scan done in {result.timings.get('total', 0):.2f} s: {result.n_valid:,} valid tests, "
               f"{len(result.screened):,} passed the screen, {n:,} pair{'s' if n != 1 else ''} with P ≤ {result.params.epi1:g}")
        status = msg
        perm = getattr(result, "perm", None)
        if perm is not None:
            from gui.resultdata import permutation_summary

            msg += f"; {permutation_summary(perm, self.reported)}"
            # (the status bar's line: short enough for a 1366-pixel window beside the engine label)
            emp2 = getattr(self.reported, "emp2", None)
            k = 0 if emp2 is None else int((emp2 <= 0.05).sum())
            status += f"; {k:,} with EMP2 ≤ 0.05 ({perm.n:,} permutations)"
        self.run_panel.show_done(msg)
        self.log(msg)
        self.statusBar().showMessage(status, 10000)
        self.scanFinished.emit(result)


def _log_permutations(study, params, log) -> None:
    """What --perm will do, in the log; a --within file read now (as the CLI does before anything
    is written), so a bad one is refused before the scan rather than after it."""
    moved = "trait values among the samples" if study.quantitative else "case/control labels"
    text = f"Then {params.perm:,} permutations of the {moved} (seed {params.perm_seed})"
    if params.within is not None:
        from gboost.pipeline.permute import read_within

        strata = read_within(params.within, study)
        text += f", within {len(set(strata.tolist())):,} clusters of {params.within}"
    log(text + ": each pair's family-wise EMP2 and the genome-wide 0.05 threshold")


def _honour_cancel(cancel) -> None:
    """Cancel pressed after the last tile (the exact tests, the covariate refit, the outputs run
    without a cancel check): the result is dropped as a cancelled scan's, and the checkpoint,
    which holds every tile, is kept, so Resume gives the result at once."""
    if cancel():
        raise ScanCancelled()


def suggested_out(path: str | None, export_dir=None) -> str:
    """The --out of the command the log writes: the export folder if one was chosen, else a folder
    beside the study named after it."""
    import os

    name = display_name(path) if path else "study"
    if export_dir:
        return os.path.join(str(export_dir), f"{name}_gboost")
    return os.path.join(os.path.dirname(canonical(path)) if path else ".", f"{name}_gboost")


def _qt_job(study, params, progress, cancel, log, sources, ckpt, opts=None, *, path=None, qc=None, resume=False):
    """The scan of a quantitative trait (gboost.pipeline.qt_scan), shown through the case-control views;
    covariates adjust every pair's test (on the CPU engine; the views' STAT and P are then the
    adjusted test's, its columns in the exported pairs.tsv). It
    checkpoints in ``ckpt`` as a case-control scan does (the same ledger, its tiles), so Cancel or
    a crash can be resumed."""
    import time

    from gboost.pipeline.qt_scan import QTParams, as_scan_result, qt_engine, run_qt_scan
    from gui.resultdata import attach_qt_adjusted
    from gboost.pipeline.scan import Progress

    qt_params = QTParams(epi1=params.epi1, epi2=params.epi2, threads=params.threads, device=params.device,
                         dask=params.dask, min_distance_kb=params.min_distance_kb, max_r2=params.max_r2,
                         perm=params.perm, perm_seed=params.perm_seed, within=params.within)
    log("Quantitative phenotype: PLINK's linear --epistasis test (y ~ a + b + a*b, Wald test of a*b)")
    if params.perm:
        _log_permutations(study, params, log)  # (a bad --within file is refused here, before the scan)
    t0 = time.perf_counter()

    def report(done, total):
        progress(Progress(0, 1, done, total, time.perf_counter() - t0))

    covariates = None
    if opts is not None and opts.covar:
        covariates = opts.covariates(study)
        log(f"Covariates: every pair is adjusted for {', '.join(covariates[1])} (on the CPU engine)")
    engine = qt_engine(qt_params, covariates is not None)  # (run_qt_scan's choice: covariates on the CPU)
    ledger = None
    if ckpt is not None and path is not None:
        from gboost.pipeline.qt_scan import checkpoint_params

        ledger = _open_ledger(ckpt, path, qc, study, checkpoint_params(qt_params, covariates), resume, log,
                              plan=engine.checkpoint_plan())
    try:
        result = as_scan_result(run_qt_scan(study, qt_params, progress=report, cancel=cancel, covariates=covariates,
                                            engine=engine, checkpoint=ledger, perm_progress=progress))
    finally:
        engine.close()  # (the GPU engine holds the dosages on the device until closed)
    attach_qt_adjusted(result)  # the table's adjusted columns
    _honour_cancel(cancel)
    checkpoints.discard(ckpt)  # the scan is complete: nothing to resume
    graph, error = None, None
    try:
        graph = pathway_data.build_graph(result, result.reported, sources)
    except Exception as exc:  # noqa: BLE001 - a bad annotation file must not cost the scan's result
        error = str(exc) if isinstance(exc, (InputError, OSError)) else f"{type(exc).__name__}: {exc}"
        log(f"Pathway graph not drawn: {error}")
    return result, graph, error


def _open_ledger(ckpt, path, qc, study, params, resume: bool, log, plan=None):
    """The scan's checkpoint (``None`` when it cannot be kept: the scan runs without one);
    ``params`` a case-control scan's or a QT scan's (``plan``: its engine's tiles)."""
    if ckpt is None:
        return None
    try:
        checkpoints.prepare(ckpt, path, qc, params)
        try:
            ledger = Ledger(ckpt, study, params, resume=resume, plan=plan)
        except InputError:  # the checkpoint is of other data: start over rather than mix two scans
            log("The interrupted scan's checkpoint does not match this study: starting over")
            ledger = Ledger(ckpt, study, params, resume=False, plan=plan)
    except OSError as exc:
        log(f"Scanning without a checkpoint (cannot write {ckpt}: {exc.strerror or exc})")
        return None
    if resume:
        found = checkpoints.interrupted(ckpt)
        if found is not None:
            log(f"Resuming the interrupted scan: {found.done:,} of {found.total:,} tiles from its checkpoint")
    return ledger
