"""Help menu: the README and docs open in the system's viewer; what the table's columns mean."""
from pathlib import Path

from PySide6.QtGui import QDesktopServices


def help_menu_of(win):
    return next(a.menu() for a in win.menuBar().actions() if a.text() == "&Help")


def test_help_opens_the_readme_and_docs(window, monkeypatch):
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url) or True)
    texts = [a.text() for a in help_menu_of(window).actions() if a.text()]
    assert any("README" in t for t in texts) and any("columns" in t for t in texts) and "&About gboost" in texts
    a = window.doc_actions["README.md"]
    assert a.isEnabled()
    a.trigger()
    assert len(opened) == 1 and opened[0].isLocalFile()
    path = Path(opened[0].toLocalFile())
    assert path.name == "README.md" and path.is_file() and "gboost" in path.read_text()
    window.doc_actions["docs/FORMATS.md"].trigger()
    assert Path(opened[1].toLocalFile()).name == "FORMATS.md"


def test_what_the_columns_mean(window):
    window.act_columns_help.trigger()
    dlg = window.columns_help
    assert dlg.isVisible() and dlg.windowTitle() == "What the columns mean"
    text = dlg.text_view.toPlainText()
    for name, words in (("KSA", "Kirkwood"), ("STAT", "likelihood-ratio"), ("Q", "Benjamini-Hochberg"),
                        ("R2", "linkage disequilibrium"), ("P_ADJ", "covariates"), ("STAT_ADJ", "logistic"),
                        ("DF_ADJ", "Degrees of freedom"), ("BETA_ADJ", "quantitative trait"),
                        ("EMP2", "--perm")):
        lines = text.splitlines()
        assert name in lines, name  # the column's own entry
        after = "\n".join(lines[lines.index(name) + 1:lines.index(name) + 3])
        assert words in after, name
    dlg.reject()
