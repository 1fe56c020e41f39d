"""Ways out of input problems: for an error message, the buttons that fix it in one click.

Each remedy recognises its problem by the flag the core's message names (the CLI's message says
what to add to the command line; the dialog offers the same change as a button), changes the
setting, remembers it where it belongs, and redoes what failed (``window._retry``).
"""
from __future__ import annotations

from typing import Callable

from gui.loading import canonical

KEEP_NO_SEX = "Keep phenotypes of samples of unknown sex"
ALLOW_EXTRA_CHR = "Accept non-standard chromosome names"


def fixes_for(win, message: str) -> list[tuple[str, Callable[[], None]]]:
    """(button text, action) for each fix of ``message`` that applies in ``win``'s state."""
    fixes = []
    retry = win._retry
    path = win._failed_open or win.path
    key = canonical(path) if path else None
    loaded = key is not None and key == win.state.key
    used = win.run_panel.study_inputs() if loaded or key is None else \
        {**win.state.inputs_for(key), **win.run_panel.pending_inputs()}
    if "--allow-no-sex" in message and not used["allow_no_sex"] and retry is not None:

        def keep_no_sex() -> None:
            # The study's own setting (the one that failed), not the panel's of the study still loaded.
            win.run_panel.pending.discard("allow_no_sex")
            if key is not None:
                win.state.remember(key, {"allow_no_sex": True})
            if loaded or key is None:
                win.run_panel.apply_study_inputs({**win.run_panel.study_inputs(), "allow_no_sex": True})
            win.log(f"{KEEP_NO_SEX} (--allow-no-sex), remembered for this study")
            retry()

        fixes.append((KEEP_NO_SEX, keep_no_sex))
    # (not where the message says even --allow-extra-chr would not help: a number past the human set)
    if "use --allow-extra-chr" in message and not win.run_panel.allow_extra_chr.isChecked() and retry is not None:

        def allow_extra_chr() -> None:
            win.run_panel.allow_extra_chr.setChecked(True)
            win.log(f"{ALLOW_EXTRA_CHR} (--allow-extra-chr)")
            retry()

        fixes.append((ALLOW_EXTRA_CHR, allow_extra_chr))
    return fixes
