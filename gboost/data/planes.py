"""A study's bit planes as they become readable: the one way the pipeline reads them.

A :class:`gboost.data.study.Study` is a plain record: its ``planes`` array is the memory the planes
live in, nothing more. Where a .bed's planes are still being encoded on a thread after the study is
returned (:func:`gboost.data.load.load_with_encoder`), that thread and its watermark belong to a
:class:`PlaneSource`, and whatever reads planes (the engines per tile, the GPU's upload per chunk,
the calibration, the ledger's fingerprint and replay, finalize) reads them through it:
:meth:`PlaneSource.read` returns the planes array only once the rows asked for are written, so a
reader cannot forget to wait. A study whose planes were complete when it was made has a source
that never waits (:meth:`PlaneSource.complete`).

The source is also the encoder's lifetime: :meth:`PlaneSource.close` (or leaving its ``with``
block) stops the encoder after the rows in hand and waits for its thread, so a failed or
cancelled scan leaves no thread writing into planes behind it.
"""
from __future__ import annotations

import threading
import weakref
from typing import Callable

import numpy as np

from gboost.errors import ScanCancelled


# The sources whose encoder has not yet written every row, by their planes array's id: so that a
# study handed on without its source is refused (:meth:`PlaneSource.require_complete`) instead of
# read while its rows are still zeros.
_UNFINISHED: "weakref.WeakValueDictionary[int, PlaneSource]" = weakref.WeakValueDictionary()


class PlaneSource:
    """The planes of a study's SNPs [0, :attr:`rows`) are written; the rest are being encoded in
    SNP order by a background thread (:meth:`start`), or there is no rest (:meth:`complete`).

    The encoder calls :meth:`advance` as each run of rows is stored in its final place and
    :meth:`fail` if it stops on an error. Readers call :meth:`read` (or :meth:`wait`) before they
    touch rows. The watermark only grows, so a reader that waited for ``rows`` may read rows below
    it for good.
    """

    def __init__(self, planes: np.ndarray, rows: int | None = None, *, bed_rows=None):
        self.planes = planes
        self.total = int(planes.shape[0])
        self._rows = self.total if rows is None else int(rows)
        # The .bed rows the planes are encoded from (gboost.data.load.BedRows), for readers that can
        # decode rows the encoder has not reached themselves (the GPU's streamed blocks); or None.
        self.bed_rows = bed_rows
        self.seconds = 0.0  # the encoder thread's working time (run.json: background work)
        self._error: BaseException | None = None
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def complete(cls, planes: np.ndarray) -> "PlaneSource":
        """The source of planes written in full already: it never waits and has no thread."""
        return cls(planes)

    # -- the encoder's side ----------------------------------------------------------------------
    def start(self, run: Callable[["PlaneSource"], None], name: str = "gboost-encode") -> "PlaneSource":
        """Run ``run(self)`` (the encoder, which advances this watermark) on a thread of its own."""
        self._thread = threading.Thread(target=run, args=(self,), name=name, daemon=True)
        if not self.done():
            _UNFINISHED[id(self.planes)] = self
        self._thread.start()
        return self

    @staticmethod
    def require_complete(planes: np.ndarray, what: str) -> None:
        """Raise ValueError when a background encoder is still writing ``planes`` (a study from
        ``load_with_encoder`` given without its source): its unwritten rows would be read as zeros."""
        src = _UNFINISHED.get(id(planes))
        if src is not None and src.planes is planes and not src.done():
            raise ValueError(f"{what}: the study's planes are still being encoded: pass planes= "
                             "(the PlaneSource load_with_encoder returned with the study)")

    @property
    def background(self) -> bool:
        """Whether a thread encodes (or encoded) these planes after the study was made."""
        return self._thread is not None

    @property
    def stopping(self) -> bool:
        """Asked to stop (:meth:`cancel`): the encoder checks this between runs of rows."""
        return self._stop.is_set()

    def advance(self, rows: int) -> None:
        with self._cond:
            self._rows = max(self._rows, int(rows))
            self._cond.notify_all()
        if self._rows >= self.total:
            _UNFINISHED.pop(id(self.planes), None)

    def fail(self, exc: BaseException) -> None:
        with self._cond:
            self._error = exc
            self._cond.notify_all()

    # -- the readers' side -----------------------------------------------------------------------
    @property
    def rows(self) -> int:
        """SNPs [0, rows) are encoded (no wait)."""
        return self._rows

    def done(self) -> bool:
        return self._rows >= self.total

    def check(self) -> None:
        """Raise the encoder's error if it has failed (no wait): for readers that do not wait for
        rows (the GPU runners that decode the .bed themselves), so that a failed encode stops the
        scan at the next tile rather than when the planes are finally waited for."""
        if self._error is not None:
            raise self._error

    def wait(self, rows: int | None = None, stop: Callable[[], bool] | None = None) -> None:
        """Block until SNPs [0, rows) (default: all) are encoded. Raises the encoder's error (the
        same exception, e.g. an InputError naming the .bed), ScanCancelled when the encoder was
        stopped or ``stop()`` turns true meanwhile (checked every 0.1 s, so a closing engine's
        thread never hangs here)."""
        need = self.total if rows is None else min(int(rows), self.total)
        if self._rows >= need:
            return
        with self._cond:
            while self._rows < need:
                if self._error is not None:
                    raise self._error
                if self._stop.is_set() or (stop is not None and stop()):
                    raise ScanCancelled()
                self._cond.wait(0.1)

    def read(self, rows: int | None = None, stop: Callable[[], bool] | None = None) -> np.ndarray:
        """The planes array ``(p, 3, W)`` once SNPs [0, rows) (default: all) are written, as
        :meth:`wait`; the caller reads only rows below ``rows``."""
        self.wait(rows, stop)
        return self.planes

    # -- lifetime --------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop the encoder after the rows in hand and wait for its thread (a cancelled or failed
        scan leaves no thread writing into planes behind it). Rows already written stay readable."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()

    def close(self) -> None:
        """The end of the source's lifetime: the encoder stopped (if it still runs) and its thread
        joined. Planes complete by then stay readable."""
        self.cancel()

    def __enter__(self) -> "PlaneSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
