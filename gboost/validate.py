"""One place that checks every number and list a command line gives, before anything runs.

argparse calls these as ``type=``: a bad value stops the command with one message naming the flag
and what it accepts (exit 2), instead of a traceback later or, worse, a scan that runs with a
meaningless setting (``--tile -5`` used to give 0 valid tests and exit 0; ``--maf -1`` dropped
nothing and said nothing). Ranges are PLINK 1.9's where PLINK has the flag.
"""
from __future__ import annotations

import argparse
import math


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
        if v < lo or v > hi or (lo_open and v == lo) or (hi_open and v == hi):
            lb, rb = "(" if lo_open else "[", ")" if hi_open else "]"
            raise argparse.ArgumentTypeError(f"invalid {flag} parameter {text!r} (must be in {lb}{lo:g}, {hi:g}{rb})")
        return v
    check.__name__ = flag  # argparse names the type in some messages
    return check


def at_least(flag: str, lo: float, kind=float):
    """A finite number >= lo (``kind`` int or float)."""
    def check(text: str):
        v = _number(flag, text, kind)
        if v < lo:
            raise argparse.ArgumentTypeError(f"invalid {flag} parameter {text!r} (must be at least {lo:g})")
        return v
    check.__name__ = flag
    return check


def gpu_list(text: str) -> list[int]:
    """``--gpus 0,1``: distinct device numbers >= 0."""
    try:
        ids = [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid --gpus parameter {text!r} (expected device numbers, e.g. 0,1)") from None
    if not ids or min(ids) < 0 or len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"invalid --gpus parameter {text!r} (expected distinct device numbers >= 0, e.g. 0,1)")
    return ids


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
        return t
    host, sep, port = t.rpartition(":")
    if "://" in t:
        host = t.split("://", 1)[1].rpartition(":")[0]
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"invalid --dask parameter {text!r} (expected local:N, local:gpus, tcp://HOST:PORT "
                                         "or HOST:PORT)")
    return t
