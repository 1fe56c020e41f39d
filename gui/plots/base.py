"""What the three plots share: a pyqtgraph PlotWidget, hover/click by nearest point, export.

Hover and click look the nearest point up in NumPy arrays (x-sorted, searched in a window of a
few pixels), never through ``ScatterPlotItem.pointsAt``: that builds a Python ``SpotItem`` for
every point of the item on first use, which takes seconds and hundreds of MB at 1e6 SNPs.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from gui.plots import render

pg.setConfigOptions(antialias=False, background="w", foreground="k")

# Colours readable on white and for the common colour-vision deficiencies (Okabe-Ito based).
CHROM_COLOURS = ("#1f4e9c", "#7fa7d9")  # alternating chromosome colours: dark and light blue
HIGHLIGHT = "#d55e00"  # partners, arcs (vermillion)
SELECTED = "#f0c000"  # the selected SNP (yellow, as GBOOST's pathway graph)
GENOME_WIDE = "#c0392b"
SUGGESTIVE = "#2c7fb8"


class UniformScatter(pg.ScatterPlotItem):
    """A ScatterPlotItem whose points all share the item's symbol, size, pen and brush.

    pyqtgraph looks each point's symbol up in its atlas through a Python tuple per point (seconds
    for a million points); when every point has the item's style, one lookup serves them all (a
    fraction of the time, the same pixels). Falls back to pyqtgraph's own code if its internals change.
    """

    def updateSpots(self, dataSet=None):
        data = self.data if dataSet is None else dataSet
        try:
            if not (self.opts["pxMode"] and self.opts["useCache"]):
                return super().updateSpots(dataSet)
            mask = data["sourceRect"]["w"] == 0
            if np.any(mask):
                first = np.flatnonzero(mask)[:1]
                style = list(zip(*self._style(["symbol", "size", "pen", "brush"], data=data, idx=first)))
                data["sourceRect"][mask] = self.fragmentAtlas[style][0]
            self._maybeRebuildAtlas()
            self._updateMaxSpotSizes(data=data)
            self.invalidate()
        except (AttributeError, KeyError, TypeError):  # a pyqtgraph whose internals differ: the stock path
            return super().updateSpots(dataSet)


class PositionAxis(pg.AxisItem):
    """A genome-wide x axis (:class:`gui.plots.genome.GenomeLayout`): chromosome names at their
    centres for several chromosomes; for one chromosome with positions, Mb on the chromosome at
    round values (the layout's x is bp from its first SNP, which pyqtgraph would print as
    scientific-notation bp offsets); else pyqtgraph's own numbers (SNP order)."""

    def __init__(self, orientation: str = "bottom", **kwargs):
        super().__init__(orientation, **kwargs)
        self.enableAutoSIPrefix(False)
        self.origin: float | None = None  # bp at x = 0 when the axis reads Mb

    def set_layout(self, layout) -> None:
        """Ticks for ``layout`` (``None``: pyqtgraph's plain numbers)."""
        self.origin = layout.mb_origin() if layout is not None else None
        self.setTicks([layout.ticks()] if layout is not None and len(layout.chroms) > 1 else None)

    def tickValues(self, minVal, maxVal, size):
        if self.origin is None:
            return super().tickValues(minVal, maxVal, size)
        o = self.origin
        levels = super().tickValues((minVal + o) / 1e6, (maxVal + o) / 1e6, size)
        return [(spacing * 1e6, [v * 1e6 - o for v in values]) for spacing, values in levels]

    def tickStrings(self, values, scale, spacing):
        if self.origin is None:
            return super().tickStrings(values, scale, spacing)
        mb = spacing / 1e6
        digits = max(0, int(np.ceil(-np.log10(mb)))) if mb > 0 else 0
        return [f"{(v + self.origin) / 1e6:.{digits}f}" for v in values]


def position_label(layout) -> str:
    """What a :class:`PositionAxis` of ``layout`` reads."""
    if layout is None or len(layout.chroms) != 1:
        return "Chromosome"
    if layout.mb_origin() is not None:
        return f"Position on chromosome {layout.chroms[0]} (Mb)"
    return f"SNP order on chromosome {layout.chroms[0]} (no positions in the file)"


class NearestPoint:
    """Find the point nearest a position, in pixels, among ``(x, y)`` with payload ``ids``."""

    def __init__(self, x: np.ndarray, y: np.ndarray, ids: np.ndarray):
        keep = np.isfinite(x) & np.isfinite(y)
        order = np.argsort(x[keep], kind="stable")
        self.x = np.asarray(x[keep][order], dtype=np.float64)
        self.y = np.asarray(y[keep][order], dtype=np.float64)
        self.ids = np.asarray(ids[keep][order])

    def __len__(self) -> int:
        return len(self.x)

    def nearest(self, x: float, y: float, px: float, py: float, radius: float = 6.0):
        """Payload of the point within ``radius`` pixels of (x, y), or ``None``.

        ``px``, ``py``: data units per pixel along x and y (``ViewBox.viewPixelSize()``).
        """
        if not len(self.x) or px <= 0 or py <= 0:
            return None
        lo = np.searchsorted(self.x, x - radius * px, side="left")
        hi = np.searchsorted(self.x, x + radius * px, side="right")
        if hi <= lo:
            return None
        d2 = ((self.x[lo:hi] - x) / px) ** 2 + ((self.y[lo:hi] - y) / py) ** 2
        k = int(np.argmin(d2))
        if d2[k] > radius * radius:
            return None
        return self.ids[lo + k]


class PlotPanel(QWidget):
    """A titled plot with a hover read-out; subclasses draw into ``self.plot``.

    ``plot_widget`` is a ``GraphicsLayoutWidget`` so a subclass can put a colour bar beside the plot.

    Subclasses set ``self.hover_index`` (a :class:`NearestPoint`) and implement
    :meth:`describe_point` and, optionally, :meth:`point_clicked`.
    """

    hovered = Signal(str)
    name = "plot"

    def __init__(self, parent=None, axisItems=None):
        super().__init__(parent)
        self.plot_widget = pg.GraphicsLayoutWidget()
        self.plot = self.plot_widget.addPlot(row=0, col=0, axisItems=axisItems)
        self.plot.showGrid(x=False, y=True, alpha=0.15)
        self.plot.setMenuEnabled(False)
        self.hover_index: NearestPoint | None = None
        self.readout = QLabel(" ")
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addWidget(self.plot_widget, 1)
        lay.addWidget(self.readout)
        self._hover_proxy = pg.SignalProxy(self.plot_widget.scene().sigMouseMoved, rateLimit=30, slot=self._on_mouse_moved)
        self.plot_widget.scene().sigMouseClicked.connect(self._on_scene_clicked)

    # -- hover / click --------------------------------------------------------------------------
    def point_at(self, x: float, y: float, radius: float = 6.0):
        """Payload of the plotted point within ``radius`` pixels of data position (x, y)."""
        if self.hover_index is None:
            return None
        px, py = self.plot.getViewBox().viewPixelSize()
        return self.hover_index.nearest(x, y, px, py, radius)

    def _on_mouse_moved(self, args) -> None:
        pos = args[0]
        vb = self.plot.getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            return
        p = vb.mapSceneToView(pos)
        hit = self.point_at(p.x(), p.y())
        text = self.describe_point(hit) if hit is not None else " "
        self.readout.setText(text)
        if hit is not None:
            self.hovered.emit(text)

    def _on_scene_clicked(self, ev) -> None:
        if ev.button() != Qt.MouseButton.LeftButton or ev.double():
            return
        vb = self.plot.getViewBox()
        if not vb.sceneBoundingRect().contains(ev.scenePos()):
            return
        p = vb.mapSceneToView(ev.scenePos())
        self.click_at(p.x(), p.y())

    def click_at(self, x: float, y: float) -> None:
        """What a left click at data position (x, y) does: select the point under it, if any."""
        hit = self.point_at(x, y)
        if hit is not None:
            self.point_clicked(hit)

    def view_to_widget(self, x: float, y: float):
        """Widget (viewport) pixel position of data position (x, y): for tests and tooltips."""
        scene = self.plot.getViewBox().mapViewToScene(QPointF(x, y))
        return self.plot_widget.mapFromScene(scene)

    def describe_point(self, payload) -> str:  # each plot says what its points are
        raise NotImplementedError

    def point_clicked(self, payload) -> None:
        pass

    # -- export ---------------------------------------------------------------------------------
    def export_png(self, path: str, size: tuple[int, int] | None = None, scale: float = 2.0,
                   dpi: float | None = None) -> None:
        render.export_png(self.plot_widget, path, size, scale, dpi)

    def export_svg(self, path: str, size: tuple[int, int] | None = None) -> None:
        render.export_svg(self.plot_widget, path, size, title=self.name)

    def reset_view(self) -> None:
        self.plot.enableAutoRange()
