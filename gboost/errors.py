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


class ScanCancelled(Exception):
    """Raised inside the pipeline when the caller's cancel flag is set between tiles."""
