"""Screenshots of the application in a real window (run under Xvfb), for docs/img.

    xvfb-run -s "-screen 0 1920x1080x24" python docs/img/shoot.py PREFIX NAME WIDTH HEIGHT [EPI1] [--no-sex]

Opens PREFIX in a fresh window of WIDTH x HEIGHT (settings in a temporary folder), scans it with
``--epi1 EPI1`` on the CPU, and writes NAME_WxH_main.png (Manhattan tab, strongest pair selected)
NAME_WxH_pathways.png (Pathways tab) and NAME_WxH_pathways_known.png (the unknown-pathway group hidden). With ``--no-sex`` it instead writes the screen with the
unknown-sex dialog (NAME_WxH_nosex.png), presses its fix button and shoots the finished scan.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    prefix, name, w, h = argv[0], argv[1], int(argv[2]), int(argv[3])
    epi1 = argv[4] if len(argv) > 4 and not argv[4].startswith("--") else "5e-6"
    no_sex = "--no-sex" in argv
    tmp = tempfile.mkdtemp(prefix="gboost-shots-")
    os.environ["XDG_CONFIG_HOME"] = tmp
    os.environ["XDG_DATA_HOME"] = tmp
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, tmp)
    app = QApplication(sys.argv[:1])
    from gui.main_window import MainWindow

    win = MainWindow((False, "no GPU"))
    win.resize(w, h)
    win.show()
    win.run_panel.engine.setCurrentIndex(win.run_panel.engine.findData("cpu"))
    win.run_panel.epi1.setText(epi1)
    win.run_panel.calibration.setValue(0)
    stem = f"{name}_{w}x{h}"

    def save(img, suffix: str) -> None:
        path = OUT / f"{stem}_{suffix}.png"
        img.save(str(path), "PNG")
        print(path)

    def shoot_done(_result=None) -> None:
        def main_tab():
            if win.reported is not None and len(win.reported):
                win.pairs.table.selectRow(0)
            win.tabs.setCurrentIndex(0)
            QTimer.singleShot(400, lambda: (save(win.grab(), "main"), pathways_tab()))

        def pathways_tab():
            win.tabs.setCurrentIndex(3)
            QTimer.singleShot(600, lambda: (save(win.grab(), "pathways"), known_only()))

        def known_only():
            win.pathways.show_unknown.setChecked(False)
            QTimer.singleShot(600, lambda: (save(win.grab(), "pathways_known"), app.quit()))

        QTimer.singleShot(400, main_tab)

    def failed(title, message) -> None:
        if no_sex and win.error_box is not None and win.error_box.fix_buttons:
            def press():
                save(win.screen().grabWindow(0), "nosex")
                win.error_box.fix_buttons[0].click()
            QTimer.singleShot(600, press)
        else:
            print(f"{title}: {message}", file=sys.stderr)
            app.exit(1)

    win.scanFinished.connect(shoot_done)
    win.taskFailed.connect(failed)
    win.open_path(prefix, run=True)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
