"""GUI test fixtures: offscreen Qt, settings in a temporary folder, a small simulated study.

The study is simulated (seeded) and written as a PLINK fileset, then scanned once by the CLI;
GUI tests compare what the window shows and writes against those CLI files.
"""
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from gboost.data.simulate import PlantedPair, simulate_study  # noqa: E402

from guihelpers import EPI1, N_CASES, N_CONTROLS, N_SNPS, load, scan  # noqa: E402


@pytest.fixture(autouse=True)
def qt_objects_freed_after_each_test():
    """After each test, the Qt objects it left (its closed window, pyqtgraph's parentless menus) are
    collected and deleted while Python is whole. Left to pile up, 600 top-level widgets were alive
    after test_window.py alone, all destroyed at the interpreter's shutdown, where gui/app.py's note
    says pyqtgraph's overrides meet half-finalised objects: two full runs on the VM (2026-11-26)
    segfaulted at exit after every test had passed. With this, at most one test's window is alive."""
    yield
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent
    from PySide6.QtWidgets import QApplication

    gc.collect()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    if QApplication.instance() is not None:
        QApplication.processEvents()


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, monkeypatch):
    """Every test starts like a first start on a clean machine (settings and app data)."""
    from PySide6.QtCore import QSettings

    path = tmp_path / "settings"
    path.mkdir()
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # scan checkpoints live here
    return path


@pytest.fixture(scope="session")
def study_prefix(tmp_path_factory) -> str:
    """240 SNPs on 3 chromosomes, 300 cases + 300 controls, 0.5 % missing calls, two planted pairs."""
    sim = simulate_study(N_SNPS, N_CASES, N_CONTROLS, seed=2024, chromosomes=3, missing_rate=0.005,
                         planted=[PlantedPair(20, 200, "xor", 6.0), PlantedPair(90, 150, "threshold", 5.0)])
    prefix = str(tmp_path_factory.mktemp("study") / "study")
    sim.write(prefix)
    return prefix


@pytest.fixture
def nosex_copy(study_prefix, tmp_path):
    """``nosex_copy(name)``: a copy of the test study (prefix ``tmp_path / name``) with sex 0 for
    every sample, as much shared data has."""
    import shutil

    def copy(name: str = "nosex") -> str:
        prefix = str(tmp_path / name)
        for ext in (".bed", ".bim"):
            shutil.copy(study_prefix + ext, prefix + ext)
        with open(study_prefix + ".fam") as src, open(prefix + ".fam", "w") as dst:
            for line in src:
                f = line.split()
                f[4] = "0"
                dst.write(" ".join(f) + "\n")
        return prefix

    return copy


@pytest.fixture
def no_sex_prefix(nosex_copy) -> str:
    """The test study with sex 0 for every sample."""
    return nosex_copy()


@pytest.fixture(scope="session")
def cli_dir(study_prefix, tmp_path_factory):
    """The CLI's outputs for the study (CPU engine, default settings but --epi1 EPI1)."""
    from gboost.cli import main

    out = tmp_path_factory.mktemp("cli") / "out"
    assert main(["scan", "--bfile", study_prefix, "--out", str(out), "--device", "cpu", "--epi1", EPI1, "--quiet"]) == 0
    return out


@pytest.fixture
def window(qtbot):
    from gui.main_window import MainWindow

    win = MainWindow(gpu_info=(False, "no GPU in tests"))
    qtbot.addWidget(win)
    win.run_panel.engine.setCurrentIndex(win.run_panel.engine.findData("cpu"))
    win.show()
    yield win
    if win.task is not None:
        win.task.cancel()
    # Every worker thread stopped before the window may be collected: a QThread destroyed while
    # its thread runs aborts the process (seen twice in full runs on a loaded 2-core VM).
    assert win.wait_idle(30000)


@pytest.fixture
def scanned(qtbot, window, study_prefix):
    """A window that has loaded the study and finished a scan (defaults but --epi1 EPI1)."""
    load(qtbot, window, study_prefix)
    window.run_panel.epi1.setText(EPI1)
    scan(qtbot, window)
    return window
