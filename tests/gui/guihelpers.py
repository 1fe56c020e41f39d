"""Constants and helpers shared by the GUI tests (a module of its own: tests/conftest.py is
also named ``conftest``, so test modules do not import from conftest)."""

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
