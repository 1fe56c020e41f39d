"""gboost's desktop application (PySide6 + pyqtgraph).

Widgets show core objects (:class:`gboost.data.study.Study`, :class:`gboost.pipeline.scan.ScanResult`) and
forward the user's intent to the core (:mod:`gboost.data.inputs`, :mod:`gboost.data.load`,
:mod:`gboost.pipeline.scan`, :mod:`gboost.outputs.results`); no statistics or file formats live here.
Start it with ``gboost-gui`` or ``python -m gui``.
"""
