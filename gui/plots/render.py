"""Plot export to PNG and SVG.

Both go through ``QGraphicsScene.render`` onto a Qt paint device: a ``QImage`` for PNG, a
``QSvgGenerator`` for SVG. pyqtgraph's own SVG exporter breaks on PySide6 >= 6.11, and rendering
ourselves gives one code path, a fixed output size whatever the window size, and works for views
in hidden tabs (the ``--screenshot`` mode). For SVG, items are put in pyqtgraph's export mode
so that scatter points are drawn as vector symbols (not pixmap fragments); that draws each
symbol through Python, so an SVG of 1e6 points takes tens of seconds and is large.
"""
from __future__ import annotations

from contextlib import contextmanager

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator
import pyqtgraph as pg

DEFAULT_SIZE = (1400, 800)


def _prepare(view: pg.GraphicsView, size: tuple[int, int] | None) -> QRectF:
    """Lay the view out at ``size`` (its own size when it has a usable one); return the scene rect."""
    w, h = size or (view.width(), view.height())
    if w < 200 or h < 150:
        w, h = DEFAULT_SIZE
    if (view.width(), view.height()) != (w, h):
        view.resize(w, h)
    # pyqtgraph lays its central item out in the view's resize event, which Qt delays for a hidden
    # widget; do it now. (GraphicsView's method: PlotWidget forwards setRange to its ViewBox.)
    pg.GraphicsView.setRange(view, QRectF(0, 0, w, h), padding=0, disableAutoPixel=False)
    return QRectF(0, 0, w, h)


@contextmanager
def _export_mode(scene, opts: dict):
    items = [it for it in scene.items() if hasattr(it, "setExportMode")]
    for it in items:
        it.setExportMode(True, opts)
    try:
        yield
    finally:
        for it in items:
            it.setExportMode(False)


def render_image(view: pg.GraphicsView, size: tuple[int, int] | None = None, scale: float = 1.0) -> QImage:
    """The plot as an ARGB image on a white background, ``scale`` times its size in pixels.

    Drawn as on screen (a high-DPI image: ``scale`` is its device pixel ratio), so scatter points
    come from pyqtgraph's symbol atlas: fast at 1e6 points, where export mode would draw every
    symbol through Python.
    """
    rect = _prepare(view, size)
    img = QImage(QSize(int(rect.width() * scale), int(rect.height() * scale)), QImage.Format.Format_ARGB32)
    img.setDevicePixelRatio(scale)
    img.fill(QColor("white"))
    painter = QPainter(img)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        view.scene().render(painter, rect, rect, Qt.AspectRatioMode.IgnoreAspectRatio)
    finally:
        painter.end()
    return img


SCREEN_DPI = 96.0  # the plot's layout unit: one logical pixel is 1/96 inch, as on a standard screen


def export_png(view: pg.GraphicsView, path: str, size: tuple[int, int] | None = None, scale: float = 2.0,
               dpi: float | None = None) -> None:
    """Write the plot as PNG (``scale`` 2 by default: sharp on high-DPI screens).

    With ``dpi`` (e.g. 300 for print) the image has ``dpi / 96`` pixels per logical pixel and
    records that resolution in the file, so a layout program places it at the view's physical size.
    """
    if dpi is not None:
        if not 10 <= dpi <= 2400:
            raise ValueError(f"PNG resolution must be between 10 and 2400 dpi, got {dpi:g}")
        scale = dpi / SCREEN_DPI
    img = render_image(view, size, scale)
    if dpi is not None:
        per_metre = int(round(dpi / 0.0254))
        img.setDotsPerMeterX(per_metre)
        img.setDotsPerMeterY(per_metre)
    if not img.save(str(path), "PNG"):
        raise OSError(f"{path}: could not write the PNG file")


def png_bytes(view: pg.GraphicsView, size: tuple[int, int] | None = None, scale: float = 1.0) -> bytes:
    """The plot as the bytes of a PNG file (drawn here, on the GUI thread; written by a task)."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    img = render_image(view, size, scale)
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    if not img.save(buf, "PNG"):
        raise OSError("could not encode the plot as PNG")
    buf.close()
    return bytes(data.data())


def export_svg(view: pg.GraphicsView, path: str, size: tuple[int, int] | None = None, title: str = "") -> None:
    """Write the plot as SVG through Qt's ``QSvgGenerator`` (vector: points, lines and text)."""
    rect = _prepare(view, size)
    gen = QSvgGenerator()
    gen.setFileName(str(path))
    gen.setSize(QSize(int(rect.width()), int(rect.height())))
    gen.setViewBox(QRectF(0, 0, rect.width(), rect.height()))
    # pyqtgraph's axes are cached QPictures recorded at the screen's DPI; Qt rescales a QPicture
    # to the device's DPI when it is played (QSvgGenerator: 72 by default), which would shrink
    # the axes against the data. Give the SVG the view's own DPI.
    gen.setResolution(view.logicalDpiX())
    gen.setTitle(title or "gboost plot")
    gen.setDescription("Exported by gboost")
    painter = QPainter()
    if not painter.begin(gen):
        raise OSError(f"{path}: could not write the SVG file")
    try:
        painter.fillRect(rect, QColor("white"))
        with _export_mode(view.scene(), {"antialias": True, "background": QColor("white"), "painter": painter}):
            view.scene().render(painter, rect, rect, Qt.AspectRatioMode.IgnoreAspectRatio)
    finally:
        painter.end()
