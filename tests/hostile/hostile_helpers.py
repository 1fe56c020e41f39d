"""What the hostile tests share: a small study in a folder of its own, a CPU scan of it through the
command's main, and every byte of a folder's neighbours, before and after."""
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


def small_study(tmp_path_factory, name: str, seed: int) -> str:
    """A 50-SNP, 40+40-sample study with 1 % missing calls in ``<tmp>/<name>/data/``; its prefix.
    The data sit one folder below, so that OUT/'s neighbours (the tests' tmp folder) hold no input."""
    from gboost.data.simulate import simulate_study

    d = tmp_path_factory.mktemp(name)
    os.makedirs(d / "data")
    prefix = str(d / "data" / "s")
    simulate_study(50, 40, 40, seed=seed, chromosomes=2, missing_rate=0.01).write(prefix)
    return prefix


def cpu_scan(study: str, out, *extra: str) -> int:
    """``gboost scan`` of ``study`` into ``out`` on the CPU, quiet; its exit status."""
    from gboost.cli import main

    return main(["scan", "--bfile", study, "--out", str(out), "--device", "cpu", "--quiet", *extra])


def bfile(prefix: str) -> list[str]:
    """The three files of a PLINK fileset."""
    return [prefix + ext for ext in (".bed", ".bim", ".fam")]


def write_study(folder: Path, name="s", p=24, seed=48, **kw) -> str:
    """A p-SNP, 40+40-sample study with 1 % missing calls written in ``folder``; its prefix."""
    from gboost.data.simulate import simulate_study

    folder.mkdir(parents=True, exist_ok=True)
    prefix = str(folder / name)
    simulate_study(p, 40, 40, seed=seed, chromosomes=2, missing_rate=0.01, **kw).write(prefix)
    return prefix
