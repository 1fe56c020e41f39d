"""``gboost-gui [PREFIX] [--run] [--screenshot DIR]``: start the desktop application.

PREFIX: a PLINK fileset (prefix or any of its files), a .ped/.map or a BOOST matrix; without it
the first start opens the bundled sample study and later starts the most recent study.
``--run`` starts a scan with the Run panel's settings once the study is loaded (``--perm N`` and
``--perm-seed S`` set the panel's permutations first); ``--epi1 P`` types the
panel's --epi1, ``--covar FILE`` sets the covariate file of the last study opened; ``--then PREFIX2``
opens a second study once the first is loaded (and scanned, with ``--run``), and the screenshots are
then of the second: what the window shows after a study replaces another. ``--size WxH``
sizes the window (a laptop's 1366x768, say: what the screenshots then show);
``--screenshot DIR`` writes main.png, main_qq.png, main_interactions.png, main_pathways.png and
main_regional.png (the window with that tab in front),
manhattan.png, qq.png, interactions.png, pathways.png and regional.png (the regions of the
strongest pair) into DIR when the run ends (or when the study is loaded, without ``--run``) and quits: exit code
0, or 1 if anything failed. ``--run`` resumes an interrupted scan of the same study and
thresholds without asking (the results are the same as an uninterrupted scan's).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import gboost

SCREENSHOT_PLOT_SIZE = (1400, 800)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="gboost-gui", description="gboost's desktop application.")
    p.add_argument("prefix", nargs="?", help="study to open: PLINK PREFIX (.bed/.bim/.fam), .ped, or BOOST matrix")
    p.add_argument("--run", action="store_true", help="start the scan as soon as the study is loaded")
    p.add_argument("--screenshot", metavar="DIR", help="write PNGs of the window and each plot into DIR, then quit")
    p.add_argument("--device", choices=("auto", "cpu", "gpu"), help="engine to select in the Run panel")
    p.add_argument("--perm", type=int, metavar="N", help="permutations to set in the Run panel (as gboost scan --perm)")
    p.add_argument("--perm-seed", type=int, metavar="S", help="their seed in the Run panel (as gboost scan --perm-seed)")
    p.add_argument("--epi1", metavar="P", help="--epi1 to type in the Run panel (as gboost scan --epi1)")
    p.add_argument("--covar", metavar="FILE", help="covariate file (as gboost scan --covar) for the last study opened")
    p.add_argument("--then", metavar="PREFIX2", help="once PREFIX is loaded (and scanned, with --run), open PREFIX2 "
                   "the same way: --covar and --screenshot are then PREFIX2's")
    p.add_argument("--size", type=window_size, metavar="WxH", help="the window's size in pixels, e.g. 1366x768")
    p.add_argument("--version", action="version", version=f"gboost {gboost.__version__}")
    return p.parse_args(argv)


def window_size(text: str) -> tuple[int, int]:
    """``--size``'s WxH (e.g. 1366x768), each side at least 200 pixels."""
    w, sep, h = text.lower().partition("x")
    if not sep or not (w.isdigit() and h.isdigit()) or int(w) < 200 or int(h) < 200:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels (each at least 200), e.g. 1366x768, got {text!r}")
    return int(w), int(h)


def sample_study() -> str | None:
    """The bundled sample fileset prefix ($GBOOST_SAMPLE, else sample_data/sample beside the code)."""
    env = os.environ.get("GBOOST_SAMPLE")
    candidates = [env] if env else []
    candidates.append(str(Path(__file__).resolve().parent.parent / "sample_data" / "sample"))
    for c in candidates:
        if c and os.path.isfile(c + ".bed"):
            return c
    return None


def initial_study(prefix: str | None) -> str | None:
    from gui import settings

    if prefix:
        return prefix
    first = settings.first_start()
    settings.mark_started()
    if not first:
        recent = settings.recent_files()
        if recent:
            return recent[0]
    return sample_study()


def write_screenshots(win, out_dir: str) -> list[str]:
    """main.png (the window as shown), main_KEY.png (the window with each other tab in front; the
    Regional tab only when it shows a region) and one PNG per plot, at a fixed size."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    img = win.grab()
    if not img.save(str(out / "main.png"), "PNG"):
        raise OSError(f"{out / 'main.png'}: could not write the PNG file")
    written.append(str(out / "main.png"))
    # the window again with each other tab in front, laid out and painted at the window's size:
    # main_qq.png, main_interactions.png, main_pathways.png, and main_regional.png when it shows a region
    from PySide6.QtWidgets import QApplication

    shown = win.tabs.currentIndex()
    for key, widget in win.plots.items():
        if widget is win.tabs.currentWidget() or (key == "regional" and win.state.region is None):
            continue
        win.tabs.setCurrentWidget(widget)
        QApplication.processEvents()
        path = out / f"main_{key}.png"
        if not win.grab().save(str(path), "PNG"):
            raise OSError(f"{path}: could not write the PNG file")
        written.append(str(path))
    win.tabs.setCurrentIndex(shown)
    QApplication.processEvents()
    for key, plot in win.plots.items():
        path = out / f"{key}.png"
        plot.export_png(str(path), size=SCREENSHOT_PLOT_SIZE, scale=1.0)
        written.append(str(path))
    return written


def drive(win, args: argparse.Namespace, done=None) -> None:
    """The studies given on the command line, in turn: each is loaded (and scanned, with
    ``args.run``), then ``args.then`` opens; the last one gets ``args.covar``; after it, ``done()``
    (the screenshots). A study the user opens later is theirs: nothing runs by itself then."""
    from PySide6.QtCore import QTimer

    queue = [args.then] if args.then else []
    scripted = {"on": True}

    def step_done() -> None:
        if queue:
            QTimer.singleShot(0, lambda: win.open_path(queue.pop(0)))
            return
        scripted["on"] = False
        if done is not None:
            done()

    def loaded(*_):
        if not scripted["on"]:
            return
        if args.covar and not queue:  # the last study's scan is the covariate scan
            win.run_panel.file_edits["covar"].setText(args.covar)
        if args.run:
            QTimer.singleShot(0, lambda: win.start_scan(resume=True))
        else:
            step_done()

    def scanned(*_):
        if scripted["on"]:
            step_done()

    win.studyLoaded.connect(loaded)
    win.scanFinished.connect(scanned)


def main(argv=None) -> int:
    if argv is None:  # the process is the gboost-gui command: its start-up (gboost/runtime/process.py)
        from gboost.runtime.process import prepare_process

        # Ctrl-C in the terminal ends the window's process with one line and exit 130 (Qt's event
        # loop would not let a KeyboardInterrupt through), its streams and numba as the command's.
        prepare_process()
    args = parse_args(argv)
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from gboost.engines import gpu_available
    from gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("gboost")
    app.setOrganizationName("gboost")
    app.setApplicationVersion(gboost.__version__)

    win = MainWindow(gpu_available())
    if args.device:
        win.run_panel.engine.setCurrentIndex(max(0, win.run_panel.engine.findData(args.device)))
    if args.perm is not None:
        win.run_panel.perm.setValue(args.perm)
    if args.perm_seed is not None:
        win.run_panel.perm_seed.setValue(args.perm_seed)
    if args.epi1 is not None:
        win.run_panel.epi1.setText(args.epi1)  # typed: it stays when a study opens
    if args.size:
        win.resize(*args.size)
        win._fit_docks_on_show = True  # the docks in proportion to this size, as on a first start
    win.show()
    status = {"code": 0}

    def finish(code: int) -> None:
        status["code"] = code
        app.exit(code)

    def shoot() -> None:
        try:
            if win.reported is not None and len(win.reported):
                win.pairs.table.selectRow(0)  # show the strongest pair in the plots
                win.show_region_of_pair(win.pairs.proxy.pair_row(0))  # and its two SNPs' regions
                win.tabs.setCurrentIndex(0)  # the window shows the Manhattan plot, regional.png the regions
            for path in write_screenshots(win, args.screenshot):
                print(path)
        except OSError as exc:
            print(f"gboost-gui: error: {exc}", file=sys.stderr)
            finish(1)
            return
        finish(0)

    drive(win, args, (lambda: QTimer.singleShot(500, shoot)) if args.screenshot else None)
    if args.screenshot:
        win.taskFailed.connect(lambda title, msg: (print(f"gboost-gui: {title}: {msg}", file=sys.stderr), finish(1)))
        win.scanCancelled.connect(lambda: finish(1))

    path = initial_study(args.prefix)
    if path:
        win.open_path(path)
    else:
        win.statusBar().showMessage("Open a study (File ▸ Open…) or drop a PLINK fileset on this window.")
        if args.screenshot or args.run or args.then:
            print("gboost-gui: error: no study to open (the sample study is missing; give a PREFIX)", file=sys.stderr)
            return 2
    code = app.exec()
    # Delete the window's Qt objects while Python is fully alive: left to interpreter shutdown,
    # pyqtgraph's Python overrides get called on half-finalised objects and Qt crashes.
    import shiboken6

    win.close()
    shiboken6.delete(win)
    return status["code"] or code
