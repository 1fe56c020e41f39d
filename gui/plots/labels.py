"""Text labels for many points in one graphics item.

One ``TextItem`` per point would put thousands of QGraphicsItems in the scene; this item keeps
the positions and strings in arrays and draws them in its own ``paint``, at a fixed pixel size,
offset from each point in a given direction, most important first, skipping a label that would
overlap one already drawn or a marker given as an obstacle (:meth:`LabelLayer.setObstacles`: the
nodes, so that no label covers a node); a zoomed-out graph of thousands of nodes shows a readable
subset and zooming in reveals the rest.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPen


class LabelLayer(pg.GraphicsObject):
    """Labels at data positions ``(x, y)``.

    ``direction`` (n, 2): unit vectors on screen (x right, y down) along which each label is moved
    away from its point by ``offset`` pixels; the label's near edge faces the point. ``priority``:
    higher draws first. ``style``: index into ``styles``, a list of (colour, pixel size, bold).
    At most ``max_labels`` are drawn per paint, and at most ``budgets[style]`` of one style.
    """

    def __init__(self, styles=(("#202020", 11, False),), max_labels: int = 800):
        super().__init__()
        self.styles = []
        for colour, size, bold in styles:
            font = QFont()
            font.setPixelSize(size)
            font.setBold(bold)
            self.styles.append((font, QPen(QColor(colour)), QFontMetricsF(font)))
        self.max_labels = max_labels
        self.budgets: dict[int, int] = {}  # style -> most labels of that style per paint (a label budget)
        self.x = self.y = self.offset = self.priority = np.zeros(0)
        self.style = np.zeros(0, np.int64)
        self.direction = np.zeros((0, 2))
        self.texts: list[str] = []
        self.drawn: list[str] = []  # texts drawn by the last paint (for tests)
        self.drawn_boxes: list[QRectF] = []  # their boxes, in the device pixels of ``last_transform``
        self.last_transform = None  # the last paint's data-to-device transform
        self.ob_x = self.ob_y = self.ob_size = np.zeros(0)
        self._order = np.zeros(0, np.int64)
        self._width_cache: np.ndarray | None = None

    def setData(self, x, y, texts, *, direction=None, offset=None, priority=None, style=None) -> None:
        n = len(texts)
        self.style = np.zeros(n, np.int64) if style is None else np.asarray(style, np.int64)
        self.x, self.y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        self.texts = [str(t) for t in texts]
        self.direction = np.tile([1.0, 0.0], (n, 1)) if direction is None else np.asarray(direction, np.float64)
        self.offset = np.full(n, 6.0) if offset is None else np.asarray(offset, np.float64)
        self.priority = np.zeros(n) if priority is None else np.asarray(priority, np.float64)
        self._order = np.argsort(-self.priority, kind="stable")
        self._width_cache = None
        self.prepareGeometryChange()
        self.update()

    def setObstacles(self, x, y, sizes) -> None:
        """Markers no label may cover: centres (data) and diameters (pixels)."""
        self.ob_x, self.ob_y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        self.ob_size = np.broadcast_to(np.asarray(sizes, np.float64), self.ob_x.shape).copy()
        self.update()

    def setTexts(self, texts) -> None:
        self.texts = [str(t) for t in texts]
        self._width_cache = None
        self.update()

    def clear(self) -> None:
        self.setObstacles([], [], [])
        self.setData([], [], [])

    # -- QGraphicsItem --------------------------------------------------------------------------
    def boundingRect(self) -> QRectF:
        # Labels extend a fixed number of pixels beyond their points, so in data units they can
        # reach anywhere in the view: claim the visible area (the ViewBox clips to it).
        vb = self.getViewBox()
        if vb is None or not len(self.texts):
            return QRectF()
        return vb.viewRect()

    def viewRangeChanged(self) -> None:
        self.prepareGeometryChange()

    def dataBounds(self, *args, **kwargs):  # never part of auto-range
        return None

    def _widths(self) -> np.ndarray:
        if self._width_cache is None or len(self._width_cache) != len(self.texts):
            self._width_cache = np.array([self.styles[st][2].horizontalAdvance(t) if t else 0.0
                                          for t, st in zip(self.texts, self.style)], np.float64)
        return self._width_cache

    def paint(self, painter, *args) -> None:
        self.drawn = []
        self.drawn_boxes = []
        if not len(self.texts):
            return
        vb = self.getViewBox()
        rect = vb.viewRect() if vb is not None else None
        idx = self._order
        if rect is not None:
            inside = ((self.x[idx] >= rect.left()) & (self.x[idx] <= rect.right())
                      & (self.y[idx] >= rect.top()) & (self.y[idx] <= rect.bottom()))
            idx = idx[inside]
        # Each candidate's point in device pixels, in NumPy; the loop below places, tests overlaps
        # and draws.
        tr = painter.transform()
        px = tr.m11() * self.x[idx] + tr.m21() * self.y[idx] + tr.dx()
        py = tr.m12() * self.x[idx] + tr.m22() * self.y[idx] + tr.dy()
        heights = np.array([st[2].height() for st in self.styles])[self.style[idx]]
        w = self._widths()[idx]
        dx, dy = self.direction[idx, 0], self.direction[idx, 1]
        offset = self.offset[idx]
        # Labels that would stick out of the view are moved inside rather than drawn cut in half.
        bounds = tr.mapRect(rect) if rect is not None else None
        painter.save()
        painter.resetTransform()
        current = -1
        cell = 64.0
        taken: dict[tuple[int, int], list[QRectF]] = {}
        self.last_transform = tr
        self._take_obstacles(tr, rect, taken, cell)
        per_style: dict[int, int] = {}
        for n, k in enumerate(idx.tolist()):
            if len(self.drawn) >= self.max_labels or n >= 8 * self.max_labels:
                break
            text = self.texts[k]
            st = int(self.style[k])
            if not text or per_style.get(st, 0) >= self.budgets.get(st, self.max_labels):
                continue
            box = self._place(px[n], py[n], dx[n], dy[n], offset[n], w[n], heights[n], bounds, taken, cell)
            if box is None:
                continue
            # A drawn label keeps the next ones a few pixels away: two labels side by side with no
            # gap read as one ("IGSF11long-term synaptic potentiation"). (Nodes keep no margin:
            # a label sits 3 pixels from its own node.)
            kept = box.adjusted(-self.GAP[0], -self.GAP[1], self.GAP[0], self.GAP[1])
            for key in self._cells(kept, cell):
                taken.setdefault(key, []).append(kept)
            if self.style[k] != current:
                current = int(self.style[k])
                painter.setFont(self.styles[current][0])
                painter.setPen(self.styles[current][1])
            painter.drawText(box, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), text)
            self.drawn.append(text)
            self.drawn_boxes.append(box)
            per_style[st] = per_style.get(st, 0) + 1
        painter.restore()

    # The label's own direction first, then turned either way: a label blocked by a neighbour
    # (another node, another label) may still fit beside its point a little further round.
    TURNS = tuple((math.cos(t), math.sin(t)) for t in (0.0, 0.9, -0.9, 1.8, -1.8))
    GAP = (4.0, 1.0)  # device pixels kept free beside (x) and above and below (y) a label

    def _place(self, px, py, dx, dy, offset, w, h, bounds, taken, cell):
        """The first free box for a label of point (px, py) (device pixels), or ``None``."""
        for c, s_ in self.TURNS:
            ux, uy = c * dx - s_ * dy, s_ * dx + c * dy
            cx, cy = px + ux * offset, py + uy * offset
            # The side of the label that faces the point is anchored: its left edge when the
            # label lies to the right, its bottom edge when it lies above, and so on in between.
            left = cx - w * (0.5 - 0.5 * min(max(ux * 1.6, -1.0), 1.0))
            top = cy - h * (0.5 - 0.5 * min(max(uy * 1.6, -1.0), 1.0))
            box = QRectF(left, top, w, h)
            if bounds is not None and not bounds.contains(box):
                # Slide it back inside (a caption at the edge of the view stays whole and readable).
                box.moveLeft(min(max(box.left(), bounds.left()), bounds.right() - box.width()))
                box.moveTop(min(max(box.top(), bounds.top()), bounds.bottom() - box.height()))
            if not any(box.intersects(other) for key in self._cells(box, cell) for other in taken.get(key, ())):
                return box
        return None

    @staticmethod
    def _cells(box, cell: float) -> list:
        return [(gx, gy) for gx in range(int(box.left() // cell), int(box.right() // cell) + 1)
                for gy in range(int(box.top() // cell), int(box.bottom() // cell) + 1)]

    def _take_obstacles(self, tr, rect, taken: dict, cell: float) -> None:
        """The obstacles in view as boxes of ``taken`` (device pixels), before any label."""
        if not len(self.ob_x):
            return
        keep = np.ones(len(self.ob_x), bool)
        if rect is not None:
            keep = ((self.ob_x >= rect.left()) & (self.ob_x <= rect.right())
                    & (self.ob_y >= rect.top()) & (self.ob_y <= rect.bottom()))
        x, y, r = self.ob_x[keep], self.ob_y[keep], self.ob_size[keep] / 2
        px = tr.m11() * x + tr.m21() * y + tr.dx()
        py = tr.m12() * x + tr.m22() * y + tr.dy()
        for cx, cy, rr in zip(px.tolist(), py.tolist(), r.tolist()):
            box = QRectF(cx - rr, cy - rr, 2 * rr, 2 * rr)
            for gx in range(int(box.left() // cell), int(box.right() // cell) + 1):
                for gy in range(int(box.top() // cell), int(box.bottom() // cell) + 1):
                    taken.setdefault((gx, gy), []).append(box)
