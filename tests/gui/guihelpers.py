"""Constants and helpers shared by the GUI tests (a module of its own: tests/conftest.py is
also named ``conftest``, so test modules do not import from conftest)."""

import threading

N_SNPS, N_CASES, N_CONTROLS = 240, 300, 300
# A loose --epi1 for the comparisons with the CLI: ~40 reported pairs, some SNPs with several
# partners, so sorting, filtering and partner selection have something to get wrong.
EPI1 = "1e-3"


def load(qtbot, win, prefix, timeout=30000):
    with qtbot.waitSignal(win.studyLoaded, timeout=timeout):
        assert win.open_path(prefix)
    return win.study


def scan(qtbot, win, timeout=60000):
    with qtbot.waitSignal(win.scanFinished, timeout=timeout) as blocker:
        assert win.start_scan()
    return blocker.args[0]


def non_white_fraction(img) -> float:
    """Share of an image's pixels that are not (near) white: a drawn plot is not blank."""
    import numpy as np
    from PySide6.QtGui import QImage

    img = img.convertToFormat(QImage.Format.Format_RGB32)
    arr = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine() // 4, 4)[:, : img.width(), :3]
    return float((arr.min(axis=2) < 235).mean())


class HeldTiles:
    """Counts the tiles the CPU engine computes (``calls``); past the first ``free`` of them, each
    waits until ``release()``. A test that cancels on a scan's first progress event (sent after the
    first tile) releases them after its click: the scan is then surely mid-run when the cancel
    lands, however loaded the machine, with no sleep to hope for it."""

    def __init__(self, monkeypatch, free=None):
        from gboost.engines.cpu import CpuEngine

        self.calls = 0
        self.free = free
        self.released = threading.Event()
        if free is None:
            self.released.set()
        lock = threading.Lock()
        real = CpuEngine.run_tile
        held = self

        def run_tile(engine, tile):
            with lock:
                held.calls += 1
                n = held.calls
            if n > (held.free or 0):
                assert held.released.wait(120), "the test never released the held tiles"
            return real(engine, tile)

        monkeypatch.setattr(CpuEngine, "run_tile", run_tile)

    def release(self) -> None:
        self.released.set()


def cancel_at_first_progress(qtbot, win, held: HeldTiles, during=None) -> list:
    """Start a scan in ``win`` and click Cancel on its first progress event, then let ``held``'s
    tiles go: the scan is mid-run when the cancel lands. ``during()`` runs while the scan does.
    Returns the progress events seen before the click (one)."""
    from PySide6.QtCore import Qt

    seen = []

    def cancel_on_first(ev):
        if not seen:
            seen.append(ev)
            qtbot.mouseClick(win.run_panel.cancel_button, Qt.MouseButton.LeftButton)
            held.release()

    win.scanProgress.connect(cancel_on_first)
    try:
        with qtbot.waitSignal(win.scanCancelled, timeout=60000):
            assert win.start_scan()
            if during is not None:
                during()
        qtbot.waitUntil(lambda: not win.busy)
    finally:
        win.scanProgress.disconnect(cancel_on_first)
    return seen
