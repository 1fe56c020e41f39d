"""Small dialogs: errors (never a traceback for bad input) and About."""
from __future__ import annotations

import os
import platform
from typing import Callable, Sequence

import numpy as np
import PySide6
import pyqtgraph as pg
from PySide6.QtCore import qVersion
from PySide6.QtWidgets import QMessageBox, QWidget

import gboost


def show_error(parent: QWidget, title: str, message: str, details: str = "",
               fixes: Sequence[tuple[str, Callable[[], None]]] = ()) -> QMessageBox:
    """A window-modal message box that does not block the caller (no nested event loop).

    ``fixes`` are the ways out of the problem: (button text, action) pairs, each a button that
    fixes it in one click (``box.fix_buttons`` holds them, for tests).
    """
    buttons = QMessageBox.StandardButton.Cancel if fixes else QMessageBox.StandardButton.Ok
    box = QMessageBox(QMessageBox.Icon.Warning, title, message, buttons, parent)
    if details:
        box.setInformativeText("This looks like a bug in gboost; the details below help to report it.")
        box.setDetailedText(details)
    box.fix_buttons = []
    for text, action in fixes:
        button = box.addButton(text, QMessageBox.ButtonRole.AcceptRole)
        button.clicked.connect(action)
        box.fix_buttons.append(button)
    if box.fix_buttons:
        box.setDefaultButton(box.fix_buttons[0])
    box.setObjectName("errorBox")
    box.open()
    return box


def confirm_replace(parent: QWidget, title: str, message: str) -> bool:
    """Ask before an export replaces what a folder holds; True only for an explicit Yes."""
    ans = QMessageBox.question(parent, title, message)
    return ans == QMessageBox.StandardButton.Yes


def about_text(engine: str) -> str:
    return (f"<h3>gboost {gboost.__version__}</h3>"
            "<p>Exhaustive SNP × SNP epistasis scans with BOOST (Wan et al., AJHG 2010) as accelerated by "
            "GBOOST (Yung et al., Bioinformatics 2011); results equal to PLINK 1.9 "
            "<code>--fast-epistasis boost</code>.</p>"
            f"<p><b>Engine:</b> {engine}<br>"
            f"<b>CPU cores:</b> {os.cpu_count()}<br>"
            f"<b>Python</b> {platform.python_version()} · <b>NumPy</b> {np.__version__} · "
            f"<b>Qt</b> {qVersion()} · <b>PySide6</b> {PySide6.__version__} · <b>pyqtgraph</b> {pg.__version__}</p>")


def show_about(parent: QWidget, engine: str) -> QMessageBox:
    box = QMessageBox(QMessageBox.Icon.Information, "About gboost", about_text(engine), QMessageBox.StandardButton.Ok, parent)
    box.setObjectName("aboutBox")
    box.open()
    return box
