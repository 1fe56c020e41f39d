"""What the application remembers between sessions (QSettings, INI format).

Keys: ``recent`` (list of fileset paths, newest first), ``started_before``, ``run/*`` (the run
panel's values), ``study/<hash of the fileset's path>/NAME`` (per study: the inputs that describe its samples,
gui/state.py's ``STUDY_INPUTS``), ``window/geometry`` and ``window/state``.
"""
from __future__ import annotations

import os

from PySide6.QtCore import QSettings

ORG, APP = "gboost", "gboost-gui"
MAX_RECENT = 10


def settings() -> QSettings:
    """The application's settings store (tests redirect it with ``QSettings.setPath``)."""
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORG, APP)


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return [str(v) for v in value]


def recent_files() -> list[str]:
    """Recent filesets that still exist, newest first."""
    return [p for p in _as_list(settings().value("recent")) if os.path.exists(p) or os.path.exists(p + ".bed")]


def add_recent(path: str) -> list[str]:
    items = [path] + [p for p in _as_list(settings().value("recent")) if p != path]
    settings().setValue("recent", items[:MAX_RECENT])
    return items[:MAX_RECENT]


def clear_recent() -> None:
    settings().setValue("recent", [])


def first_start() -> bool:
    """True until :func:`mark_started` has been called once on this machine/account."""
    return not _truthy(settings().value("started_before", False))


def mark_started() -> None:
    settings().setValue("started_before", True)


def _truthy(v) -> bool:
    return v is True or (isinstance(v, str) and v.lower() in ("true", "1", "yes"))


def value(key: str, default=None):
    return settings().value(key, default)


def set_value(key: str, v) -> None:
    settings().setValue(key, v)


def _study_key(path: str, name: str) -> str:
    # A hash, not the path itself: QSettings treats '/' in a key as groups and '\' specially.
    import hashlib

    return f"study/{hashlib.sha1(os.fspath(path).encode()).hexdigest()[:16]}/{name}"


def study_allow_no_sex(path: str) -> bool:
    """Whether this study (its canonical path) is scanned with --allow-no-sex (remembered per study)."""
    return _truthy(settings().value(_study_key(path, "allow_no_sex"), False))


def set_study_allow_no_sex(path: str, on: bool) -> None:
    settings().setValue(_study_key(path, "allow_no_sex"), bool(on))


def study_inputs(path: str, defaults: dict) -> dict:
    """The study-bound inputs remembered for this study (``defaults``' names; their values where none)."""
    out = {}
    for name, default in defaults.items():
        v = settings().value(_study_key(path, name), default)
        out[name] = _truthy(v) if isinstance(default, bool) else ("" if v is None else str(v))
    return out


def set_study_inputs(path: str, values: dict) -> None:
    s = settings()
    for name, v in values.items():
        s.setValue(_study_key(path, name), bool(v) if isinstance(v, bool) else str(v or ""))
