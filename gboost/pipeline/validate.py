"""One place that checks every number and list a command line gives, before anything runs.

argparse calls these as ``type=``: a bad value stops the command with one message naming the flag
and what it accepts (exit 2), instead of a traceback later or, worse, a scan that runs with a
meaningless setting (``--tile -5`` used to give 0 valid tests and exit 0; ``--maf -1`` dropped
nothing and said nothing). Ranges are PLINK 1.9's where PLINK has the flag. The library's
settings check their values by the same rules (``RANGES``, :func:`check_setting`), so a
``QCOptions(maf=-1)`` is refused in the command line's words.
"""
from __future__ import annotations

import argparse
import math
import os


def check_range(flag: str, value, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False,
                shown: str | None = None):
    """``value`` (a number) in [lo, hi], open ends where asked, else ValueError in the words the
    command line prints (``shown``: the value as the user typed it). The library's settings
    (QCOptions, ScanParams) and the flags' parsers below share it."""
    shown = repr(value) if shown is None else shown
    if not math.isfinite(value):
        raise ValueError(f"invalid {flag} parameter {shown} (must be a finite number)")
    if value < lo or value > hi or (lo_open and value == lo) or (hi_open and value == hi):
        lb, rb = "(" if lo_open else "[", ")" if hi_open else "]"
        raise ValueError(f"invalid {flag} parameter {shown} (must be in {lb}{lo:g}, {hi:g}{rb})")
    return value


def check_at_least(flag: str, value, lo: float, *, shown: str | None = None):
    """``value`` (a finite number) >= lo, else ValueError in the command line's words."""
    shown = repr(value) if shown is None else shown
    if not math.isfinite(value):
        raise ValueError(f"invalid {flag} parameter {shown} (must be a finite number)")
    if value < lo:
        raise ValueError(f"invalid {flag} parameter {shown} (must be at least {lo:g})")
    return value


def check_type(owner: str, name: str, value, kind: str, *, optional: bool = True):
    """TypeError naming ``owner``'s argument ``name`` unless ``value`` is of ``kind`` ('number',
    'int', 'bool', 'str', 'path'); None passes where ``optional``."""
    import numbers
    import os

    if value is None and optional:
        return
    ok = {"number": isinstance(value, numbers.Real) and not isinstance(value, bool),
          "int": isinstance(value, numbers.Integral) and not isinstance(value, bool),
          "bool": isinstance(value, (bool,)) or type(value).__name__ == "bool_",
          "str": isinstance(value, str),
          "path": isinstance(value, (str, os.PathLike))}[kind]
    if not ok:
        words = {"number": "a number", "int": "an integer", "bool": "True or False", "str": "a string",
                 "path": "a path (str or os.PathLike)"}[kind]
        raise TypeError(f"{owner}: {name} must be {words}{' or None' if optional else ''}, "
                        f"got {type(value).__name__} {value!r}")


def _number(flag: str, text: str, kind=float):
    try:
        v = kind(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"invalid {flag} parameter {text!r}") from None
    if kind is float and not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"invalid {flag} parameter {text!r} (must be a finite number)")
    return v


def in_range(flag: str, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False):
    """A float in [lo, hi] (open ends where asked)."""
    def check(text: str) -> float:
        v = _number(flag, text)
        try:
            return check_range(flag, v, lo, hi, lo_open=lo_open, hi_open=hi_open, shown=repr(text))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    check.__name__ = flag  # argparse names the type in some messages
    return check


def at_least(flag: str, lo: float, kind=float):
    """A finite number >= lo (``kind`` int or float)."""
    def check(text: str):
        v = _number(flag, text, kind)
        try:
            return check_at_least(flag, v, lo, shown=repr(text))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    check.__name__ = flag
    return check


def gpu_list(text: str) -> list[int]:
    """``--gpus 0,1``: distinct device numbers >= 0."""
    try:
        ids = [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid --gpus parameter {text!r} (expected device numbers, e.g. 0,1)") from None
    try:
        return gpu_ids(ids, shown=repr(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def gpu_ids(ids: list, *, shown: str | None = None) -> list[int]:
    """Distinct device numbers >= 0 (a library's ``gpus``; ``shown``: as typed), else ValueError."""
    for x in ids:
        check_type("ScanParams", "gpus", x, "int", optional=False)
    ids = [int(x) for x in ids]
    if not ids or min(ids) < 0 or len(set(ids)) != len(ids):
        raise ValueError(f"invalid --gpus parameter {repr(ids) if shown is None else shown} (expected distinct device "
                         "numbers >= 0, e.g. 0,1)")
    return ids


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # (macOS, Windows)
        return max(1, os.cpu_count() or 1)


def dask_address(text: str) -> str:
    """``--dask local:N`` (N >= 1 worker processes on this machine), ``local:gpus`` (one a GPU) or
    a scheduler address
    (``tcp://host:port`` or ``host:port``)."""
    t = text.strip()
    if t == "local:gpus":  # one worker per GPU of this host (gboost.engines.distributed.local_gpu_cluster)
        return t
    if t.startswith("local:"):
        n = t[len("local:"):]
        if not n.isdigit() or int(n) < 1:
            raise argparse.ArgumentTypeError(f"invalid --dask parameter {text!r} (local:N needs N >= 1 workers; local:gpus starts one a GPU)")
        # Each local worker is a process of its own with gboost, numba and a copy of its blocks
        # loaded: more of them than cores only adds memory and start-up (500 on two cores never
        # finished starting).
        cores = usable_cores()
        if int(n) > cores:
            raise argparse.ArgumentTypeError(
                f"invalid --dask parameter {text!r} (this machine has {cores} usable core{'s' if cores != 1 else ''} and "
                f"local:N starts N worker processes, one a core: use local:{cores} or fewer, or a scheduler's "
                "address to reach more machines)")
        return t
    host, sep, port = t.rpartition(":")
    if "://" in t:
        host = t.split("://", 1)[1].rpartition(":")[0]
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"invalid --dask parameter {text!r} (expected local:N, local:gpus, tcp://HOST:PORT "
                                         "or HOST:PORT)")
    return t


# The range of each numeric setting: field -> (flag, lo, hi, lo_open, hi_open); hi None: at least lo.
RANGES = {
    "maf": ("--maf", 0, 1, True, False),
    "geno": ("--geno", 0, 1, False, False),
    "mind": ("--mind", 0, 1, False, False),
    "hwe": ("--hwe", 0, 1, False, True),
    "threads": ("--threads", 1, None, False, False),
    "tile": ("--tile", 1, None, False, False),
    "min_distance_kb": ("--min-distance", 0, None, False, False),
    "max_r2": ("--max-r2", 0, 1, False, False),
    "hard_call_threshold": ("--hard-call-threshold", 0, 0.5, False, True),
    "perm": ("--perm", 1, None, False, False),
    "perm_seed": ("--perm-seed", 0, None, False, False),
}


def check_setting(owner: str, name: str, value, kind: str = "number"):
    """A library setting ``owner.name`` (None: off): TypeError unless of ``kind``, ValueError
    outside ``RANGES[name]``, in the flag's words."""
    check_type(owner, name, value, kind)
    if value is None:
        return value
    flag, lo, hi, lo_open, hi_open = RANGES[name]
    if hi is None:
        return check_at_least(flag, value, lo)
    return check_range(flag, value, lo, hi, lo_open=lo_open, hi_open=hi_open)


def flag_type(name: str, kind=float):
    """argparse's ``type=`` for the setting ``name`` of ``RANGES``."""
    flag, lo, hi, lo_open, hi_open = RANGES[name]
    return at_least(flag, lo, kind) if hi is None else in_range(flag, lo, hi, lo_open=lo_open, hi_open=hi_open)


def dask_setting(owner: str, value):
    """A settings object's ``dask`` field checked (a str or None, :func:`dask_address`'s forms) and
    normalised; a bad one is a ValueError in the CLI's words."""
    import argparse

    check_type(owner, "dask", value, "str")
    if value is None:
        return None
    try:
        return dask_address(value)
    except argparse.ArgumentTypeError as exc:
        raise ValueError(str(exc)) from None


def given(args, **fields) -> dict:
    """The settings a command line gave (field -> the argparse destination of its flag), leaving
    those it did not give (None) to the library's defaults (gboost/pipeline/params.py, gboost/pipeline/qt_scan.py)."""
    return {field: getattr(args, dest) for field, dest in fields.items() if getattr(args, dest) is not None}


def check_covar_names(names, covar) -> None:
    """``--covar-name`` picks columns of the ``--covar`` file: without one it has nothing to pick
    (plink1.9: "--covar-name must be used with --covar"), and a scan that ignored it would run
    unadjusted while the user asked for an adjustment."""
    if names and not covar:
        raise ValueError(f"--covar-name {names} names covariate columns but no --covar file was given; add --covar "
                         "FILE (PLINK 1.9: \"--covar-name must be used with --covar\")")


def check_pheno_column(pheno, pheno_name, mpheno) -> None:
    """``--pheno-name`` / ``--mpheno`` pick a column of the ``--pheno`` file: never both (plink1.9:
    "--mpheno and --pheno-name flags cannot coexist"), never without the file (plink1.9 refuses
    --pheno-name without it and ignores --mpheno; a scan that ignored the column asked for would
    run on another phenotype), --mpheno from 1. ValueError in the command line's words."""
    if pheno_name is not None and mpheno is not None:
        raise ValueError(f"--pheno-name {pheno_name} and --mpheno {mpheno} both pick the --pheno file's column; give "
                         "one (PLINK 1.9: \"--mpheno and --pheno-name flags cannot coexist\")")
    if mpheno is not None:
        check_at_least("--mpheno", mpheno, 1)
    for flag, value in (("--pheno-name", pheno_name), ("--mpheno", mpheno)):
        if value is not None and not pheno:
            raise ValueError(f"{flag} {value} picks a column of the --pheno file but no --pheno file was given; add "
                             f"--pheno FILE (PLINK 1.9: \"--pheno-name must be used with --pheno\")")


def number_list(flag: str, text: str) -> list[int]:
    """PLINK's list of 1-based numbers (``--covar-number 1-3,5``): items separated by commas, each a
    number or a range A-B with A <= B; sorted, each once (PLINK reads the list as a set). ValueError
    naming ``flag`` otherwise."""
    out: set[int] = set()
    items = [x.strip() for x in str(text).split(",")]
    if not any(items):
        raise ValueError(f"invalid {flag} parameter {text!r} (expected numbers from 1, e.g. 1-3,5)")
    for item in items:
        lo, sep, hi = item.partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise ValueError(f"invalid {flag} parameter {text!r}: {item!r} is not a number or a range A-B "
                             "(expected numbers from 1, e.g. 1-3,5)") from None
        if a < 1 or b < a:
            raise ValueError(f"invalid {flag} parameter {text!r}: {item!r} (numbers start at 1; a range A-B needs "
                             "A <= B)")
        out.update(range(a, b + 1))
    return sorted(out)


def number_list_type(flag: str):
    """argparse's ``type=`` for :func:`number_list`."""
    def check(text: str) -> list[int]:
        try:
            return number_list(flag, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    check.__name__ = flag
    return check


def check_covar_numbers(numbers, names, covar) -> None:
    """``--covar-number`` picks covariates by their 1-based number, as ``--covar-name`` picks them by
    name: one of the two (plink1.9: "--covar-number cannot be used with --covar-name"), and only
    with the --covar file it picks from ("--covar-number must be used with --covar")."""
    if numbers and names:
        raise ValueError(f"--covar-name and --covar-number both pick the --covar file's columns; give one (PLINK 1.9: "
                         "\"--covar-number cannot be used with --covar-name\")")
    if numbers and not covar:
        raise ValueError(f"--covar-number {','.join(map(str, numbers))} picks covariate columns but no --covar file was "
                         "given; add --covar FILE (PLINK 1.9: \"--covar-number must be used with --covar\")")
