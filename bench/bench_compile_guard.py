"""What routing numba's compilations to the GUI thread costs on a warm cache (gboost/compile_guard.py).

    python bench/bench_compile_guard.py --repeat 3

Each run is a fresh process (a function loads from numba's cache once per process, which is what
the guard routes): the window opens a simulated .bed (2,000 SNPs x 1,000 samples) and scans it on
the CPU engine, with the guard (the GUI as shipped) and without it (uninstalled after the window
is made), alternating. Printed per run: seconds to load, seconds to scan (from the request to the
window's signal), functions routed to the main thread and the seconds the main thread spent on
them (and, in the last run, each function's seconds to compile or load, on whichever thread). Run once beforehand so the numba cache is warm (the first run's figures say so: routed
functions are then cache loads, not compilations).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(prefix: str, mode: str) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])  # noqa: F841
    from gboost import compile_guard
    from gui.main_window import MainWindow

    win = MainWindow(gpu_info=(False, "bench"))
    routed = {"n": 0, "s": 0.0}
    serve = compile_guard.serve

    def timed_serve():
        t = time.perf_counter()
        n = serve()
        routed["n"] += n
        routed["s"] += time.perf_counter() - t if n else 0.0
        return n

    compile_guard.serve = timed_serve
    per = []
    numba_compile = compile_guard._state["numba"]

    def timed_compile(dispatcher, sig):  # per function, on whichever thread compiles (or loads) it
        t = time.perf_counter()
        try:
            return numba_compile(dispatcher, sig)
        finally:
            per.append((compile_guard._name(dispatcher), round(time.perf_counter() - t, 3)))

    if not os.environ.get("BENCH_NO_PER_FUNCTION"):
        compile_guard._state["numba"] = timed_compile
    if mode == "noguard":
        compile_guard.uninstall()
        from numba.core.dispatcher import Dispatcher

        if not os.environ.get("BENCH_NO_PER_FUNCTION"):
            Dispatcher.compile = timed_compile
    win.run_panel.engine.setCurrentIndex(win.run_panel.engine.findData("cpu"))
    win.run_panel.epi1.setText("1e-4")

    def wait(signal, start) -> float:
        loop = QEventLoop()
        signal.connect(loop.quit)
        t = time.perf_counter()
        assert start()
        loop.exec()
        return time.perf_counter() - t

    load_s = wait(win.studyLoaded, lambda: win.open_path(prefix + ".bed"))
    scan_s = wait(win.scanFinished, win.start_scan)
    win.wait_idle(30000)
    print(json.dumps({"mode": mode, "load_s": load_s, "scan_s": scan_s, "routed": routed["n"], "routed_s": routed["s"],
                      "per_function": per}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--snps", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        # Out without the interpreter's teardown: an offscreen window left to it segfaulted now and
        # then at exit (guard or not, after the figures were printed), which is not what is measured.
        sys.stdout.flush()
        os._exit(0)
    from gboost.simulate import simulate_study

    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "s")
        simulate_study(args.snps, args.samples // 2, args.samples - args.samples // 2, seed=1, chromosomes=2,
                       missing_rate=0.01).write(prefix)
        env = {**os.environ, "PYTHONPATH": ROOT, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": tmp,
               "XDG_DATA_HOME": tmp}
        for r in range(args.repeat + 1):
            for mode in ("guard", "noguard"):
                out = subprocess.run([sys.executable, __file__, "--child", prefix, mode], env=env, capture_output=True,
                                     text=True, check=True).stdout.strip().splitlines()[-1]
                d = json.loads(out)
                tag = "warm-up" if r == 0 else f"run {r}"
                print(f"{tag:8s} {mode:8s} load {d['load_s']:.3f} s  scan {d['scan_s']:.3f} s  "
                      f"routed {d['routed']} functions, {d['routed_s'] * 1000:.1f} ms on the main thread")
                if r == args.repeat:
                    print("         per function (s): " + ", ".join(f"{n.split('.')[-1]} {s}" for n, s in d["per_function"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
