"""The result views: Manhattan, QQ and interaction map (pyqtgraph), and their PNG/SVG export."""
