"""Ways out of input problems: for an error message, the buttons that fix it in one click.

Each remedy recognises its problem by the flag the core's message names (the CLI's message says
what to add to the command line; the dialog offers the same change as a button), changes the
setting, remembers it where it belongs, and redoes what failed (``window._retry``).
"""
from __future__ import annotations

from typing import Callable

from gui import settings
from gui.loading import canonical

KEEP_NO_SEX = "Keep phenotypes of samples of unknown sex"


def fixes_for(win, message: str) -> list[tuple[str, Callable[[], None]]]:
    """(button text, action) for each fix of ``message`` that applies in ``win``'s state."""
    fixes = []
    retry = win._retry
    if "--allow-no-sex" in message and not win.run_panel.allow_no_sex.isChecked() and retry is not None:
        path = win._failed_open or win.path

        def keep_no_sex() -> None:
            win.run_panel.allow_no_sex.setChecked(True)
            if path:
                settings.set_study_allow_no_sex(canonical(path), True)
            win.log(f"{KEEP_NO_SEX} (--allow-no-sex), remembered for this study")
            retry()

        fixes.append((KEEP_NO_SEX, keep_no_sex))
    return fixes
