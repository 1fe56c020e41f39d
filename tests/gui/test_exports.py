"""Exports: the CLI's bytes for result files; PNG and SVG plots that are valid and not blank;
``gboost-gui --screenshot``."""
import csv
import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from gui.plots.base import CHROM_COLOURS
from guihelpers import non_white_fraction

ROOT = Path(__file__).resolve().parents[2]
VOLATILE = ("created", "timings_s", "command_s")  # run.json keys that differ between any two runs (command_s: CLI only)


def export(qtbot, win, kind, path):
    with qtbot.waitSignal(win.exportFinished, timeout=30000):
        assert win.export_file(kind, str(path))


def run_json(path) -> dict:
    d = json.loads(Path(path).read_text())
    return {k: v for k, v in d.items() if k not in VOLATILE}


@pytest.mark.slow
@pytest.mark.parametrize("kind,name", [("pairs_tsv", "pairs.tsv"), ("epi_cc", "pairs.epi.cc"),
                                       ("epi_summary", "pairs.epi.cc.summary"), ("marginal", "marginal.tsv")])
def test_result_file_exports_are_the_cli_bytes(qtbot, scanned, cli_dir, tmp_path, kind, name):
    out = tmp_path / name
    export(qtbot, scanned, kind, out)
    assert out.read_bytes() == (cli_dir / name).read_bytes()


def test_run_json_export_matches_the_cli_record(qtbot, scanned, cli_dir, tmp_path):
    export(qtbot, scanned, "run_json", tmp_path / "run.json")
    mine, cli = run_json(tmp_path / "run.json"), run_json(cli_dir / "run.json")
    assert mine == cli
    assert mine["counts"]["reported_pairs"] == len(scanned.reported)
    text = (tmp_path / "run.json").read_text()
    assert text.startswith("{\n  \"") and text.endswith("}\n")  # the CLI's layout (indent 2, newline)


def test_csv_export_has_the_rows_of_pairs_tsv(qtbot, scanned, cli_dir, tmp_path):
    export(qtbot, scanned, "pairs_csv", tmp_path / "pairs.csv")
    rows = list(csv.reader(io.StringIO((tmp_path / "pairs.csv").read_text())))
    assert rows == [line.split("\t") for line in (cli_dir / "pairs.tsv").read_text().splitlines()]


@pytest.mark.slow
def test_export_all_writes_the_cli_folder(qtbot, scanned, cli_dir, tmp_path):
    out = tmp_path / "results"
    with qtbot.waitSignal(scanned.exportFinished, timeout=30000):
        scanned.export_all(str(out))
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(p.name for p in cli_dir.iterdir())
    for name in names:
        if name == "run.json":
            assert run_json(out / name) == run_json(cli_dir / name)
        elif name == "gboost.log":  # the window's Log: its own lines and times, the scan's command among them
            log = (out / name).read_text()
            assert "Settings: gboost scan --bfile " in log and " --out " in log, log
        else:
            assert (out / name).read_bytes() == (cli_dir / name).read_bytes(), name


@pytest.mark.slow
def test_table_export_writes_the_rows_as_shown(qtbot, scanned, cli_dir, tmp_path):
    rep = scanned.reported
    k = int(rep.j[0])
    scanned.select_snp(k)
    with qtbot.waitSignal(scanned.exportFinished, timeout=30000):
        scanned.export_table(str(tmp_path / "view.tsv"), "\t")
    lines = (cli_dir / "pairs.tsv").read_text().splitlines()
    snp = str(scanned.result.study.variants.snp[k])
    expected = [lines[0]] + [ln for ln in lines[1:] if snp in (ln.split("\t")[1], ln.split("\t")[4])]
    assert (tmp_path / "view.tsv").read_text().splitlines() == expected and len(expected) > 1


def colour_pixels(img: QImage, colour: str, tol: int = 30) -> int:
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    arr = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine() // 4, 4)[:, : img.width(), :3]
    c = QColor(colour)
    bgr = np.array([c.blue(), c.green(), c.red()])
    return int((np.abs(arr.astype(int) - bgr).max(axis=2) <= tol).sum())


@pytest.mark.slow
@pytest.mark.parametrize("key", ["manhattan", "qq", "interactions", "pathways"])
def test_plot_png_export_is_a_valid_non_blank_image(scanned, tmp_path, key):
    path = tmp_path / f"{key}.png"
    scanned.export_plot(key, str(path))
    img = QImage(str(path))
    assert not img.isNull() and img.width() >= 400 and img.height() >= 300
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 0.005 < non_white_fraction(img) < 0.6
    if key == "manhattan":
        assert colour_pixels(img, CHROM_COLOURS[0]) > 100 and colour_pixels(img, CHROM_COLOURS[1]) > 100


def ink(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    arr = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine() // 4, 4)[:, : img.width(), :3]
    return arr.min(axis=2) < 200


def dilate(mask: np.ndarray, r: int = 2) -> np.ndarray:
    out = mask.copy()
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            out |= np.roll(np.roll(mask, dy, 0), dx, 1)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("key", ["manhattan", "qq", "interactions", "pathways"])
def test_plot_svg_draws_what_the_png_draws(scanned, tmp_path, key):
    """Axes, text and data in the same places: an SVG whose axes were scaled apart from the
    data (QPicture played at another DPI) overlaps the PNG far less."""
    plot = scanned.plots[key]
    plot.export_png(str(tmp_path / "p.png"), size=(1200, 700), scale=1.0)
    plot.export_svg(str(tmp_path / "p.svg"), size=(1200, 700))
    img = QImage(QSize(1200, 700), QImage.Format.Format_ARGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    QSvgRenderer(str(tmp_path / "p.svg")).render(p)
    p.end()
    a, b = ink(QImage(str(tmp_path / "p.png"))), ink(img)
    assert a.sum() > 1000 and b.sum() > 1000
    assert (a & dilate(b)).sum() / a.sum() > 0.95
    assert (b & dilate(a)).sum() / b.sum() > 0.95


@pytest.mark.slow
@pytest.mark.parametrize("key", ["manhattan", "qq", "interactions", "pathways"])
def test_plot_svg_export_is_valid_vector_and_renders_non_blank(scanned, tmp_path, key):
    path = tmp_path / f"{key}.svg"
    scanned.export_plot(key, str(path))
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg")
    n_shapes = sum(1 for el in root.iter() if el.tag.split("}")[-1] in ("path", "circle", "ellipse", "polyline", "rect"))
    n_text = sum(1 for el in root.iter() if el.tag.split("}")[-1] == "text")
    assert n_text >= 5  # titles, axis labels, tick labels are text, not pixels
    if key == "manhattan":
        assert n_shapes >= scanned.result.study.n_snps  # one vector symbol per SNP
        assert not any(el.tag.split("}")[-1] == "image" for el in root.iter())
    renderer = QSvgRenderer(str(path))
    assert renderer.isValid()
    img = QImage(QSize(1000, 600), QImage.Format.Format_ARGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    renderer.render(p)
    p.end()
    assert 0.005 < non_white_fraction(img) < 0.6


@pytest.mark.slow
def test_screenshot_option_writes_non_blank_pngs(study_prefix, tmp_path, isolated_settings):
    out = tmp_path / "shots"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(isolated_settings),
               XDG_DATA_HOME=str(tmp_path / "data"),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "gui", study_prefix, "--run", "--device", "cpu", "--screenshot", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for name in ("main.png", "manhattan.png", "qq.png", "interactions.png", "pathways.png"):
        img = QImage(str(out / name))
        assert not img.isNull(), name
        assert img.width() >= 800 and img.height() >= 500, name
        assert non_white_fraction(img) > 0.005, name
    main = QImage(str(out / "main.png"))
    assert colour_pixels(main, CHROM_COLOURS[0]) > 50  # the Manhattan plot is in the window
    # pathways.png: the graph's nodes (known or unknown pathway), and the strongest pair selected
    # (the screenshot selects the table's first row): a yellow node and a green one.
    from gui.plots.base import SELECTED
    from gui.plots.pathways import NEIGHBOUR, NODE_KNOWN, NODE_UNKNOWN

    graph = QImage(str(out / "pathways.png"))
    assert colour_pixels(graph, NODE_KNOWN) + colour_pixels(graph, NODE_UNKNOWN) > 100
    # (the key below the graph has one small dot of each colour: about 45 pixels)
    assert colour_pixels(graph, SELECTED) > 100 and colour_pixels(graph, NEIGHBOUR) > 100


@pytest.mark.parametrize("answer, want", [("Yes", True), ("No", False), ("Cancel", False)])
def test_replacing_a_folder_needs_an_explicit_yes(qtbot, monkeypatch, answer, want):
    """Both folder exports (result files, pathway graph) ask through gui.dialogs.confirm_replace."""
    from PySide6.QtWidgets import QMessageBox, QWidget

    from gui.dialogs import confirm_replace

    asked = []

    def question(parent, title, text):
        asked.append((title, text))
        return getattr(QMessageBox.StandardButton, answer)

    monkeypatch.setattr(QMessageBox, "question", staticmethod(question))
    parent = QWidget()
    qtbot.addWidget(parent)
    assert confirm_replace(parent, "Replace?", "out/ is not empty.") is want
    assert asked == [("Replace?", "out/ is not empty.")]
