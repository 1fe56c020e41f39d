"""The threads one scan runs beside its screen, owned in one object.

A scan's data (the Study, the Accumulator, the ScreenResult and ScanResult) are plain records: a
checkpoint, a part file or a merge holds them, and none of them holds a thread. What runs beside
the screen belongs to :class:`ScanWorkers` instead: the planes' source (its encoder, while a
.bed's planes are still being encoded: gboost/data/planes.py), through which every reader of the
pipeline reads planes, and finalize's host work (gboost/pipeline/hostwork.py), which
:func:`gboost.pipeline.scan.screen` starts where the engine leaves the host's cores free and
:func:`gboost.pipeline.scan.finalize` collects. Its lifetime is one ``with`` block
(``run_pipeline``'s call): leaving it stops the host work, and on a failed or cancelled scan the
encoder too, so no thread outlives the scan.
"""
from __future__ import annotations

from gboost.data.planes import PlaneSource
from gboost.pipeline.hostwork import HostWork


class ScanWorkers:
    """The workers of one scan of ``study``: :attr:`planes` (a PlaneSource: the encoder's, or a
    complete one where the study's planes are written already) and :attr:`host` (finalize's host
    work once :meth:`start_host` runs it beside the screen, until :meth:`take_host`).

    The planes' source is handed in by whoever made it (``load_with_encoder``'s caller, who closes
    it); the workers stop it only when the scan fails or is cancelled. The host work is theirs:
    started here and closed here (by finalize, or on leaving the ``with`` block at the latest).
    """

    def __init__(self, study, planes: PlaneSource | None = None):
        if planes is None:
            PlaneSource.require_complete(study.planes, "run_pipeline")
        self.planes = planes if planes is not None else PlaneSource.complete(study.planes)
        self.host: HostWork | None = None

    def start_host(self, study, params) -> HostWork:
        """Start finalize's host work in the background (its threads are this object's)."""
        if self.host is not None:
            self.host.close()
        self.host = HostWork(study, params, planes=self.planes)
        return self.host

    def take_host(self, study, params) -> HostWork | None:
        """The host work started for ``study`` and ``params`` (None where none was, or it was for
        others: then stopped), handed to the caller (finalize), who closes it."""
        host, self.host = self.host, None
        if host is not None and not host.serves(study, params):
            host.close()
            host = None
        return host

    def stop(self) -> None:
        """A failed or cancelled scan: the host work and the encoder stopped, their threads joined."""
        try:
            self.close()
        finally:
            self.planes.cancel()

    def close(self) -> None:
        """The host work stopped (where finalize has not taken it); the planes' source is left to
        its maker, its encoder done (the scan read every plane)."""
        host, self.host = self.host, None
        if host is not None:
            host.close()

    def __enter__(self) -> "ScanWorkers":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.stop()
