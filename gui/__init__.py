"""gboost's desktop application (PySide6 + pyqtgraph).

Widgets show core objects (:class:`gboost.study.Study`, :class:`gboost.scan.ScanResult`) and
forward the user's intent to the core (:mod:`gboost.inputs`, :mod:`gboost.load`,
:mod:`gboost.scan`, :mod:`gboost.io.results`); no statistics or file formats live here.
Start it with ``gboost-gui`` or ``python -m gui``.
"""
