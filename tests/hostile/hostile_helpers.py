"""What the hostile tests share: every byte of a folder's neighbours, before and after."""
from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def tree_digest(*roots: str | os.PathLike, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Relative path -> SHA-256 of every file (a symlink's target text, a folder's mode) under
    ``roots``, following nothing; names in ``skip`` (directly under a root) are left out."""
    out: dict[str, str] = {}
    for root in map(Path, roots):
        if not os.path.lexists(root):
            out[str(root)] = "absent"
            continue
        stack = [root]
        while stack:
            p = stack.pop()
            st = os.lstat(p)
            key = str(p)
            if stat.S_ISLNK(st.st_mode):
                out[key] = "link:" + os.readlink(p)
            elif stat.S_ISDIR(st.st_mode):
                out[key] = f"dir:{stat.S_IMODE(st.st_mode):o}"
                for c in sorted(os.listdir(p)):
                    if p == root and c in skip:
                        continue
                    stack.append(p / c)
            else:
                out[key] = f"{stat.S_IMODE(st.st_mode):o}:" + hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def neighbours_digest(out: str | os.PathLike) -> dict[str, str]:
    """Every byte beside ``out`` (its parent folder's other entries, recursively)."""
    out = Path(out)
    return tree_digest(out.parent, skip=(out.name,))
