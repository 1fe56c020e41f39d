"""Where the GUI keeps the checkpoint of a scan, so that an interrupted scan can be resumed.

The CLI checkpoints into its output directory; the GUI has none until the user exports, so each
scan gets a folder under the application's data location (``checkpoints/<key>``; the settings
key ``scan/checkpoint_dir`` moves the root), keyed by what decides the scan's result: the study's
files (path, size, modification time), the QC options, ``--epi1``/``--epi2`` and, with ``--perm``,
the permutations (N, seed, --within file). The folder holds the core's
:class:`gboost.pipeline.checkpoint.Ledger` files (with --perm its ``checkpoint.perm``, one line per
finished permutation) and ``gui.json`` (what the scan was, for people looking at the folder). A finished scan deletes its folder; Cancel, a crash or a power
cut leave it, and the next Run of the same study and thresholds offers to resume.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QStandardPaths

from gboost.pipeline.checkpoint import MANIFEST, tiles_recorded
from gboost.pipeline.permute import perms_recorded
from gui import settings
from gui.loading import canonical, input_files


def root() -> Path:
    configured = settings.value("scan/checkpoint_dir")
    if configured:
        return Path(str(configured))
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppLocalDataLocation)
    return Path(base or Path.home() / ".gboost") / "checkpoints"


def _files_of(path: str) -> list[str]:
    return input_files(path)


def scan_key(path: str, qc, params) -> dict:
    """What a checkpoint belongs to (JSON-ready). Files that changed give another key, so a
    checkpoint is never resumed against edited data."""
    files = []
    for f in _files_of(path):
        try:
            st = os.stat(f)
            files.append([os.path.abspath(f), st.st_size, st.st_mtime_ns])
        except OSError:
            files.append([os.path.abspath(f), None, None])
    key = {"study": canonical(path), "files": files, "qc": dataclasses.asdict(qc),
           "epi1": params.epi1, "epi2": params.epi2}
    if getattr(params, "perm", 0):  # (only then: the folders of scans without --perm keep their keys)
        within = params.within and os.path.abspath(params.within)
        key["perm"] = {"n": params.perm, "seed": params.perm_seed, "within": within}
    return key


def directory_for(path: str, qc, params) -> Path:
    key = json.dumps(scan_key(path, qc, params), sort_keys=True, default=str)
    return root() / hashlib.sha256(key.encode()).hexdigest()[:20]


def prepare(directory: Path, path: str, qc, params) -> None:
    """Create the folder and describe the scan in ``gui.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    info = dict(scan_key(path, qc, params), created=time.strftime("%Y-%m-%dT%H:%M:%S"))
    tmp = directory / "gui.json.tmp"
    tmp.write_text(json.dumps(info, indent=1, default=str))
    os.replace(tmp, directory / "gui.json")


@dataclass
class Interrupted:
    directory: Path
    done: int  # tiles finished and recorded intact
    total: int
    perms_done: int = 0  # --perm: permutations finished and recorded intact
    perms_total: int = 0  # --perm's N (0: a scan without permutations)


def interrupted(directory: Path) -> Interrupted | None:
    """The interrupted scan checkpointed in ``directory``, or ``None`` (none, or unreadable)."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        total = int(manifest["tiles"])
        done = tiles_recorded(directory)
        perm = manifest.get("fingerprint", {}).get("perm") or {}
        perms_total = int(perm.get("n", 0))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    perms_done = min(perms_recorded(directory), perms_total) if perms_total else 0
    return Interrupted(directory, min(done, total), total, perms_done, perms_total)


def discard(directory: Path | None) -> None:
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
