"""Run in a subprocess by tests/gui/test_compile_thread.py, with an empty numba cache folder:
open each input format in the window (offscreen), scan a case-control and a QT study, and print
one JSON line: every numba compilation seen, with whether it ran on the main thread.

``argv``: a folder of the formats study (tests/helpers.py make_formats_study, or "" without plink2), then
"guard" (the window's own setup) or "noguard" (the guard removed: what the test runs to show it
would have caught the CI crashes' pattern)."""
from __future__ import annotations

import json
import os
import sys
import threading

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main(formats: str, mode: str, out: str) -> int:
    from numba.core import event
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from gboost.data.simulate import PlantedPair, simulate_qt_study, simulate_study

    seen = []

    class Listener(event.Listener):
        def on_start(self, ev):
            f = getattr(ev.data["dispatcher"], "py_func", None)
            seen.append((f"{f.__module__}.{f.__qualname__}" if f else "?",
                         threading.current_thread() is threading.main_thread()))

        def on_end(self, ev):
            pass

    event.register("numba:compile", Listener())
    app = QApplication.instance() or QApplication([])
    from gui.main_window import MainWindow

    win = MainWindow(gpu_info=(False, "no GPU in tests"))
    if mode == "noguard":
        from gboost.runtime import compile_guard
        compile_guard.uninstall()
    win.run_panel.engine.setCurrentIndex(win.run_panel.engine.findData("cpu"))
    win.show()

    failed = []
    win.taskFailed.connect(lambda *a: failed.append(a))

    def wait(signal, start) -> None:
        loop = QEventLoop()
        signal.connect(loop.quit)
        win.taskFailed.connect(loop.quit)
        timer = QTimer()
        timer.setSingleShot(True)
        timer.timeout.connect(loop.quit)
        timer.start(300_000)
        assert start(), "the window was busy"
        loop.exec()
        signal.disconnect(loop.quit)
        win.taskFailed.disconnect(loop.quit)
        assert not failed, failed
        assert timer.isActive(), "timed out"

    cc = os.path.join(out, "cc")
    simulate_study(60, 80, 80, seed=3, chromosomes=2, missing_rate=0.01,
                   planted=[PlantedPair(3, 40, "xor", 4.0)]).write(cc)
    qt = os.path.join(out, "qt")
    simulate_qt_study(40, 150, seed=4, chromosomes=2, missing_rate=0.01, effects=[(3, 30, 0.6)]).write(qt)
    opened = []
    paths = [cc + ".bed"]
    if formats:
        paths += [formats + ".pvar", formats + "_bgz.vcf.gz", formats + ".sample"]
    for path in paths:
        vcf = path.endswith(".vcf.gz")
        win.run_panel.file_edits["pheno"].setText(formats + "_vcf.pheno" if vcf else "")
        win.run_panel.allow_no_sex.setChecked(path != cc + ".bed" and not path.endswith(".pvar"))
        wait(win.studyLoaded, lambda: win.open_path(path))
        opened.append(os.path.basename(path))
    win.run_panel.file_edits["pheno"].setText("")
    win.run_panel.epi1.setText("0.01")
    for prefix in (cc, qt):
        wait(win.studyLoaded, lambda: win.open_path(prefix + ".bed"))
        wait(win.scanFinished, win.start_scan)
        opened.append(os.path.basename(prefix) + " scanned")
    assert win.wait_idle(30000)
    from gboost.runtime import compile_guard
    logged = win.log_view.toPlainText().count("for this computer in")  # the window's "Compiled ..." lines
    print(json.dumps({"opened": opened, "compiled": seen, "guard": compile_guard.installed(), "logged": logged}))
    win.close()
    return 0


if __name__ == "__main__":
    rc = main(*sys.argv[1:])
    # Out without the interpreter's teardown: bench/bench_compile_guard.py's child, built the same
    # way, segfaulted now and then at exit (with the guard or without, after its output), which
    # is not what this checks.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
