"""Writing into an output folder without ever touching what gboost did not write.

The rules (README "Nothing lost"; tests/invariants/test_nothing_lost.py checks each byte of a user's files):

* gboost replaces only files of the names it writes itself (a scan's five outputs and checkpoint,
  a part file, the pathway files). Everything else in ``--out`` — a user's thesis, subfolders,
  the input fileset — is never removed, renamed or rewritten, with or without ``--overwrite``.
* A set of files appears whole: each is written to a temporary file in a hidden folder inside
  ``--out``, flushed to disk; then the previous versions are moved aside (``run.json``, the record
  of a complete run, first) and the new ones in (``run.json`` last). A rename that fails puts the
  previous set back, so ``--out`` holds the previous set exactly as it was or the new one complete;
  a run killed mid-way is rolled back by the next run into the folder. A folder at an output name
  is refused, not moved.
* A symlinked ``--out`` is followed, not replaced. New folders and files get the user's umask.
* ``--out`` that is the working folder or one of its parents, or the folder of an input or one of
  its parents, is refused before anything runs (:func:`refuse_unsafe_out`).
* A run holds ``.gboost.lock`` in ``--out`` (:class:`OutLock`); a second run into the same folder
  is refused with the first one's PID; a lock whose process is gone is taken over.
* gboost's temporary files are written in folders of its own (``.gboost-tmp-PID-TOKEN``,
  ``.gboost-staging-PID-TOKEN``), each made with a marker (``.gboost-made``) that names its PID and
  random token and is held locked by that process (:class:`MarkedFolder`). A later run removes
  such a folder only when the marker proves gboost made it and its process is gone; anything else
  of a similar name (a user's ``.res.partial-backup`` beside ``--out``, a marker-less folder) is
  left as it is.
* Errors from the disk (no space, no permission) name the file.
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import time
from pathlib import Path
from typing import Callable, Iterable

from gboost.errors import InputError

LOCK = ".gboost.lock"
_TMP = ".gboost-tmp-"
_STAGING = ".gboost-staging-"
_MARK = ".gboost-made"  # in each folder gboost makes for itself: the proof it made it
# run.json last: its presence says the set is complete.
_LAST = "run.json"


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    except OSError:
        return False
    return True


def _real(path: str | os.PathLike) -> Path:
    return Path(os.path.realpath(os.fspath(path)))


def _is_same_or_parent(parent: Path, child: Path) -> bool:
    return parent == child or parent in child.parents


def refuse_unsafe_out(out: str | os.PathLike, inputs: Iterable[str | os.PathLike] = ()) -> None:
    """Refuse an ``--out`` that could only be a mistake: the working folder or a parent of it, or a
    folder that holds an input (or a parent of one)."""
    text = os.fspath(out)
    target = _real(out)
    if text.rstrip("/\\") in (".", "..", "") or _is_same_or_parent(target, _real(os.getcwd())):
        raise InputError(out, "is the working folder or a parent of it; give --out a folder of its own, e.g. results/")
    for f in inputs:
        if f is None:
            continue
        folder = _real(f).parent
        if _is_same_or_parent(target, folder):
            raise InputError(out, f"holds the input {f}; give --out a folder of its own, e.g. results/")


def _marker_text(pid: int, token: str) -> bytes:
    return f"gboost {pid} {token}\n".encode()


def _try_lock(fd: int) -> bool | None:
    """An exclusive flock on ``fd`` without waiting: True when taken, False when another open file
    holds it, None where the file system has no such locks (then the PID alone decides)."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


class MarkedFolder:
    """A folder gboost makes for its own files (the temporary files of a write, a staging folder),
    named ``PREFIX<pid>-<token>`` and holding a marker that repeats both, which this process keeps
    locked for as long as the folder is in use. Only such proof lets a later run remove the folder
    (:func:`clear_leftovers`); :meth:`remove` ends it here."""

    def __init__(self, parent: str | os.PathLike, prefix: str):
        token = os.urandom(8).hex()
        self.path = Path(parent) / f"{prefix}{os.getpid()}-{token}"
        os.mkdir(self.path, 0o700)
        try:
            fd = os.open(self.path / _MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except BaseException:
            os.rmdir(self.path)
            raise
        self._fd: int | None = fd
        try:
            _try_lock(fd)
            os.write(fd, _marker_text(os.getpid(), token))
        except BaseException:
            self.remove()
            raise

    def remove(self, keep: bool = False) -> None:
        """The folder removed (``keep``: left, with its marker, for a later run to clear) and its
        lock let go."""
        if not keep:
            shutil.rmtree(self.path, ignore_errors=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _proven_leftover(p: Path, prefix: str) -> bool:
    """Whether ``p`` is a :class:`MarkedFolder` whose marker is valid and whose process is gone."""
    m = re.fullmatch(re.escape(prefix) + r"(\d+)-([0-9a-f]{16})", p.name)
    if m is None:
        return False
    pid, token = int(m.group(1)), m.group(2)
    try:
        st = os.lstat(p)
        if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return False
        fd = os.open(p / _MARK, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.read(fd, 256) != _marker_text(pid, token):
            return False
        if _try_lock(fd) is False:  # its process (or a child it forked) still holds it
            return False
        return not pid_alive(pid)
    except OSError:
        return False
    finally:
        os.close(fd)


def clear_leftovers(out: str | os.PathLike) -> list[str]:
    """Remove the folders a killed gboost run left in (or, for a staging folder, beside) ``out``:
    only :class:`MarkedFolder` s proven gboost's whose process is gone. Returns the names removed."""
    out = Path(out)
    removed: list[str] = []
    places = [(out, (_TMP, _STAGING))] if out.is_dir() else []
    parent = _real(out).parent if out.exists() else Path(os.path.abspath(out)).parent
    if parent.is_dir():
        places.append((parent, (_STAGING,)))
    for folder, prefixes in places:
        try:
            entries = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in entries:
            for prefix in prefixes:
                if name.startswith(prefix) and _proven_leftover(folder / name, prefix):
                    if prefix == _TMP:
                        _roll_back(folder, folder / name)
                    shutil.rmtree(folder / name, ignore_errors=True)
                    removed.append(name)
    return removed


# Every file name gboost writes into an output folder (scan, checkpoint, part, pathways).
GBOOST_FILES = frozenset({
    "pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv", "run.json",
    "gboost.log",  # what the command printed, its command line first (PLINK's .log habit)
    "pairs.epi.qt", "pairs.epi.qt.summary",  # a quantitative-trait scan (gboost/outputs/qt_results.py)
    "perm.tsv",  # --perm's maxima (gboost/pipeline/permute.py)
    "checkpoint.json", "checkpoint.ledger", "checkpoint.json.tmp", "checkpoint.perm", "part.npz",
    "nodes.tsv", "edges.tsv", "graph.graphml", "pathways.json",
    "regional.png",  # the GUI's regional view, written by its Export all beside the scan's files
})


# Written data past this many bytes is handed to the kernel's writeback at once (posix_fadvise
# DONTNEED starts it without waiting), so the closing fsync waits for the last runs only; a file's
# runs formatted while the earlier ones are written put most of it on disk beside the formatting
# (bench/bench_write.py times the writing, the closing fsync included).
_WRITEBACK_BYTES = 8 << 20


def _write_temp(path: Path, data, waits: list | None, folder: Path) -> Path:
    """``data`` (bytes-like, or an iterable of them written in order: a list, or an iterator that
    may wait for each, those seconds added to ``waits``) in a synced temporary file of ``path``'s
    name in ``folder`` (the write's :class:`MarkedFolder`, in ``path``'s folder; umask modes);
    returns it."""
    tmp = folder / path.name
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        with os.fdopen(fd, "wb", buffering=0) as fh:
            chunks = iter((data,) if isinstance(data, (bytes, bytearray, memoryview)) else data)
            written = synced = 0
            while True:
                t = time.perf_counter()
                chunk = next(chunks, None)
                if waits is not None:
                    waits.append(time.perf_counter() - t)
                if chunk is None:
                    break
                view = memoryview(chunk).cast("B")
                written += len(view)
                while len(view):  # (a raw file may take part of a large buffer)
                    view = view[fh.write(view):]
                if written - synced >= _WRITEBACK_BYTES and hasattr(os, "posix_fadvise"):
                    os.posix_fadvise(fh.fileno(), synced, written - synced, os.POSIX_FADV_DONTNEED)
                    synced = written
            os.fsync(fh.fileno())
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _named(exc, path) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _named(exc: OSError, path: Path) -> OSError:
    """The same error with the file named (ENOSPC from write() carries no file name)."""
    if getattr(exc, "filename", None):
        return exc
    return OSError(exc.errno, exc.strerror or str(exc), str(path))


def write_files(out_dir: str | os.PathLike, files: dict, *, overwrite: bool = False,
                remove: Iterable[str] = (), write_times: dict | None = None) -> Path:
    """Write ``files`` (name -> bytes, str, a list of bytes-like buffers written in order, an
    iterator of them, which may wait for each while others format them, or a function returning
    one, called once the others are written) into ``out_dir`` under the rules of this module;
    ``remove`` names further gboost files to delete once the new set is in place (a finished
    scan's checkpoint). The files given as data are written and synced side by side, one thread
    each (writes and fsync release the GIL; at 500k SNPs they are ~190 MB); their seconds (not
    those spent waiting for an iterator's next buffer) go to ``write_times`` (name -> s) when
    given. Returns the folder."""
    for name in list(files) + list(remove):
        if name not in GBOOST_FILES or "/" in name or name.startswith("."):
            raise ValueError(f"not a gboost output name: {name!r}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(out, "exists and is not a directory")
    if out.is_dir():
        clear_leftovers(out)
        others = [p for p in out.iterdir() if p.name != LOCK and not p.name.startswith((_TMP, _STAGING))]
        if others and not overwrite:
            raise InputError(out, "output directory exists and is not empty (use --overwrite to replace "
                                  "gboost's files in it; nothing else there is touched)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _named(exc, out) from None
    order = sorted(files, key=lambda k: k == _LAST)  # run.json last
    data_first = [k for k in order if not callable(files[k])]
    times = write_times if write_times is not None else {}

    try:
        folder = MarkedFolder(out, _TMP)  # this write's temporary files, until each is renamed into out
    except OSError as exc:
        raise _named(exc, out) from None

    def write(name: str, v) -> tuple[Path, Path]:
        t, waits = time.perf_counter(), []
        tmp = _write_temp(out / name, v.encode("utf-8") if isinstance(v, str) else v, waits, folder.path)
        times[name] = time.perf_counter() - t - sum(waits)  # (not the wait for data still being made)
        return tmp, out / name

    # Every new file complete on disk before any old one is replaced: a full disk or a kill here
    # leaves the previous set exactly as it was.
    temps: list[tuple[Path, Path]] = []
    try:
        if len(data_first) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=len(data_first), thread_name_prefix="gboost-write") as pool:
                futures = [pool.submit(write, name, files[name]) for name in data_first]
                errors = []
                for f in futures:  # every thread ends before anything is cleaned up
                    try:
                        temps.append(f.result())
                    except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others
                        errors.append(exc)
                if errors:
                    raise errors[0]
        else:
            temps += [write(name, files[name]) for name in data_first]
        for name in order:
            if name in data_first:
                continue
            v = files[name]()  # rendered only now, after the others are on disk (run.json times them)
            temps.append(write(name, v))
    except BaseException:
        folder.remove()
        raise
    try:
        _replace_set(out, folder.path, [final.name for _, final in temps], list(remove))
    except BaseException:
        folder.remove(keep=(folder.path / _ASIDE).is_dir())  # (kept: the old set could not all go back)
        raise
    folder.remove()
    _fsync_dir(out)
    return out


# In a write's MarkedFolder during its replace phase: the previous versions moved aside, the names
# the new set brings (so that a run killed mid-way is rolled back by the next, :func:`_roll_back`),
# and the mark that the new set is complete.
_ASIDE, _NAMES, _DONE = "old", "names", "done"


def _replace_set(out: Path, folder: Path, names: list[str], remove: list[str]) -> None:
    """Move the new files ``names`` (run.json last) from ``folder`` into ``out`` as one change:
    the previous versions (and the files of ``remove``) first go aside into ``folder``/old, run.json
    first, then the new ones come in; when any rename fails, what came in goes back out and the old
    set back in, so ``out`` is exactly as it was, and the error names the file."""
    for name in [*names, *remove]:
        if os.path.isdir(out / name) and not os.path.islink(out / name):
            raise InputError(out / name, "is a folder where gboost writes a file: move it away and rerun "
                                         "(nothing was replaced)")
    aside = folder / _ASIDE
    os.mkdir(aside)
    journal = os.open(folder / _NAMES, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(journal, "".join(f"{n}\n" for n in names).encode())
        os.fsync(journal)
    finally:
        os.close(journal)
    first = sorted(set(names) | set(remove), key=lambda k: k != _LAST)  # run.json aside first
    moved_aside: list[str] = []
    moved_in: list[str] = []
    try:
        for name in first:
            if os.path.lexists(out / name):
                _rename(out / name, aside / name, out / name)
                moved_aside.append(name)
        for name in names:
            _rename(folder / name, out / name, out / name)
            moved_in.append(name)
    except BaseException as exc:
        stuck = []
        for name in reversed(moved_in):
            try:
                os.replace(out / name, folder / name)
            except OSError:
                stuck.append(name)
        for name in reversed(moved_aside):
            try:
                os.replace(aside / name, out / name)
            except OSError:
                stuck.append(name)
        if not stuck:
            os.rmdir(aside)
            raise
        raise OSError(getattr(exc, "errno", None) or errno.EIO,
                      f"the previous files could not all be put back; {', '.join(stuck)} and the rest of the "
                      f"previous set are in {aside} (the next run into this folder puts them back)",
                      str(out)) from exc
    os.close(os.open(folder / _DONE, os.O_WRONLY | os.O_CREAT, 0o600))


def _rename(src: Path, dst: Path, named: Path) -> None:
    try:
        os.replace(src, dst)
    except OSError as exc:
        raise OSError(exc.errno, f"{exc.strerror}; nothing was replaced (the previous files are as they were)",
                      str(named)) from None


def _roll_back(out: Path, folder: Path) -> None:
    """The replace phase of a run killed in it (``folder``, its MarkedFolder in ``out``), undone:
    each previous file moved aside goes back, each new file that came in without one goes. A run
    killed after the new set was complete (``done``) needs nothing."""
    aside = folder / _ASIDE
    if not aside.is_dir() or (folder / _DONE).exists():
        return
    try:
        names = (folder / _NAMES).read_text().split()
    except OSError:
        names = []
    for name in names:
        if name in GBOOST_FILES and not os.path.lexists(aside / name) and not os.path.lexists(folder / name):
            (out / name).unlink(missing_ok=True)  # came in, had no previous version
    for entry in os.listdir(aside):
        if entry in GBOOST_FILES:
            os.replace(aside / entry, out / entry)
    _fsync_dir(out)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def staged_files(out_dir: str | os.PathLike, fill: Callable[[Path], None], *, overwrite: bool = False) -> Path:
    """:func:`write_files` for writers that fill a folder: ``fill(staging)`` writes gboost-named
    files into a private staging folder, whose files then go into ``out_dir`` by the same rules."""
    out = Path(out_dir)
    parent = out if out.is_dir() else Path(os.path.abspath(out)).parent
    parent.mkdir(parents=True, exist_ok=True)
    made = MarkedFolder(parent, _STAGING)
    try:
        fill(made.path)
        files = {p.name: p.read_bytes() for p in made.path.iterdir() if p.is_file() and p.name != _MARK}
    finally:
        made.remove()
    return write_files(out, files, overwrite=overwrite)


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat's 22nd field), or None
    where the system does not say: with the PID it names one process, as a PID alone does not once
    the system has given it to another."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as fh:
            text = fh.read()
    except OSError:
        return None
    try:  # the command name (field 2) may hold spaces and parentheses: fields after its last ')'
        return int(text[text.rindex(b")") + 2:].split()[19])
    except (ValueError, IndexError):
        return None


def _lock_holder(path: Path) -> tuple[int, int | None]:
    """(PID, start time or None) written in a lock file; PID -1 when unreadable."""
    try:
        fields = path.read_text().split()
        return int(fields[0]), (int(fields[1]) if len(fields) > 1 else None)
    except (OSError, ValueError, IndexError):
        return -1, None


def _holds(pid: int, started: int | None) -> bool:
    """Whether the run that wrote a lock is still running: its PID alive and, where the lock and the
    system both give a start time, the same process (a stale lock's PID reused by a shell, a
    daemon or another user's program is not a gboost run)."""
    if not pid_alive(pid):
        return False
    if started is None:
        return True
    now = process_start(pid)
    return now is None or now == started


class OutLock:
    """``.gboost.lock`` in ``out`` for the life of a run (a context manager). A second run is
    refused naming the holder's PID; a lock left by a dead process is taken over. A folder this
    lock created is removed again on exit if nothing but the lock was put in it."""

    def __init__(self, out: str | os.PathLike):
        self.out = Path(out)
        self.path = self.out / LOCK
        self.created_dir = False
        self.created: list[Path] = []
        self.held = False

    def __enter__(self) -> "OutLock":
        if not self.out.exists():
            # The folders this makes, innermost first: a failed start removes those left empty.
            self.created = [d for d in [self.out, *self.out.parents] if not d.exists()]
            try:
                self.out.mkdir(parents=True)
            except OSError as exc:
                raise _named(exc, self.out) from None
            self.created_dir = True
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                pid, started = _lock_holder(self.path)
                if _holds(pid, started) and pid != os.getpid():
                    raise InputError(self.out, f"another gboost run (PID {pid}) is writing here (its lock is "
                                               f"{self.path}); wait for it or choose another --out — if no gboost "
                                               "run uses this folder, delete that file") from None
                self.path.unlink(missing_ok=True)  # stale: its process is gone, or the PID is another's now
                continue
            except OSError as exc:
                raise _named(exc, self.path) from None
            with os.fdopen(fd, "w") as fh:
                started = process_start(os.getpid())
                fh.write(f"{os.getpid()}" + (f" {started}" if started is not None else "") + "\n")
            self.held = True
            return self
        raise InputError(self.out, "could not take the output folder's lock")

    def __exit__(self, *exc) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False
        if self.created_dir:
            for d in self.created:  # out, then the parents it needed, each only if left empty
                try:
                    d.rmdir()
                except OSError:
                    break  # not empty (or gone): neither are the folders above it to remove


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno == errno.ENOSPC
