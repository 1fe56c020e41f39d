"""Errors a user can act on.

Every problem with the user's input is raised as :class:`InputError`, which names the file (and,
where it helps, the line or SNP) and says what was expected. The CLI turns it into one line on
stderr and exit code 2; the GUI into a dialog. Anything else that escapes is a bug in gboost.
"""
from __future__ import annotations

import os


class InputError(ValueError):
    """Bad input: names the file and the problem.

    Parameters
    ----------
    path
        The offending file (or directory); ``None`` when the problem is not tied to one file.
    message
        What is wrong and what was expected, e.g. ``"line 17: expected 6 columns, found 5"``.
    """

    def __init__(self, path: str | os.PathLike | None, message: str):
        self.path = None if path is None else os.fspath(path)
        self.message = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


def printable(text: str) -> str:
    """``text`` safe to show on a terminal: each character that is not printable (an escape code,
    a control character, a line break) written as its Python escape (``\\x1b``), the rest as is.
    Names read from a user's files (pathway names, chromosome codes) pass through it before they
    are printed, so a file cannot move the cursor or recolour the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


class ScanCancelled(Exception):
    """Raised inside the pipeline when the caller's cancel flag is set between tiles."""


class interrupts_held:
    """A block that changes a scan's running totals runs whole or not at all under Ctrl-C (a
    context manager): a SIGINT that arrives inside it is raised as the block ends, so what a
    checkpoint saves on the interrupt is always whole tiles (row blocks). Only the main thread
    receives signals; elsewhere, or where SIGINT has no Python handler, it changes nothing."""

    __slots__ = ("_previous", "_caught")

    def __enter__(self) -> "interrupts_held":
        import signal
        import threading

        self._previous, self._caught = None, None
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if callable(previous):
                self._previous = previous
                signal.signal(signal.SIGINT, self._hold)
        return self

    def _hold(self, signum, frame) -> None:
        self._caught = (signum, frame)

    def __exit__(self, *exc) -> None:
        if self._previous is None:
            return
        import signal

        signal.signal(signal.SIGINT, self._previous)
        if self._caught is not None and exc[0] is None:
            self._previous(*self._caught)  # Python's default handler: the KeyboardInterrupt, now
