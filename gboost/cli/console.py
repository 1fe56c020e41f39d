"""``OUT/gboost.log``: what a command printed, its command line first (PLINK's ``.log`` habit).

The scan's messages go to the console (unless ``--quiet``) and to this record; the record is one
file of the output set (gboost/outputs/outdir.py: written whole with the others, run.json last),
so a folder of results always says how it was made. The progress bar is not recorded; a run that
fails writes no outputs, so no log either (the error is one line on the console).
"""
from __future__ import annotations

import shlex
import time

LOG_FILE = "gboost.log"


class ConsoleLog:
    """The lines a command printed, in order, behind its command line."""

    def __init__(self, argv: list[str]):
        from gboost.version import __version__

        self.lines = ["gboost " + shlex.join(str(a) for a in argv),
                      f"gboost {__version__}, started {time.strftime('%Y-%m-%d %H:%M:%S %z')}"]

    def add(self, message: str) -> None:
        self.lines.append(str(message))

    def text(self, closing=()) -> bytes:
        return ("\n".join([*self.lines, *closing]) + "\n").encode("utf-8")

    def files(self, closing=()) -> dict:
        """write_files' entry for the log: rendered once the data files are on disk, with the
        ``closing`` lines the command prints after the write (its summary)."""
        closing = list(closing)
        return {LOG_FILE: lambda: self.text(closing)}


def log_files(args, closing=()) -> dict:
    """The log's entry of a command's output set ({} for a caller without a log: the library)."""
    console = getattr(args, "console", None)
    return console.files(closing) if console is not None else {}
