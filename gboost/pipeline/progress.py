"""The scan's progress events (:class:`Progress`, one per finished tile) and a text progress bar
for terminals (the GUI draws its own from the same events)."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass


@dataclass
class Progress:
    """One finished tile. The rate and the ETA count pairs (each tile's pairs x the study's
    samples is its work), measured from ``base_pairs`` done at ``base_elapsed``: the screen sets
    that base at its first finished tile, so that the one-off costs the first tile carries (kernels
    loaded or compiled, planes still going up to the device) and tiles replayed by --resume are not
    taken for the pace of the rest (the ETA would otherwise start far too long)."""

    tiles_done: int
    tiles_total: int
    pairs_done: int
    pairs_total: int
    elapsed: float
    base_pairs: int = 0
    base_elapsed: float = 0.0
    # What pairs_done counts: "pairs" for a screen's tiles; "permutations" for --perm's (a
    # permutation's count in both pairs fields and tiles fields, gboost/pipeline/permute.py).
    unit: str = "pairs"

    @property
    def fraction(self) -> float:
        return self.pairs_done / self.pairs_total if self.pairs_total else 1.0

    @property
    def eta(self) -> float | None:
        if self.pairs_done >= self.pairs_total:
            return 0.0 if self.pairs_total else None
        rate = self.pairs_per_s
        return None if rate <= 0 else (self.pairs_total - self.pairs_done) / rate

    @property
    def pairs_per_s(self) -> float:
        pairs, seconds = self.pairs_done - self.base_pairs, self.elapsed - self.base_elapsed
        return pairs / seconds if pairs > 0 and seconds > 0 else 0.0


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class TextProgress:
    """Redraws one line on a TTY at most every ``interval`` s; silent when not a terminal."""

    def __init__(self, stream=None, width: int = 30, interval: float = 0.2, n_samples: int = 0):
        self.stream = stream or sys.stderr
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.width = width
        self.interval = interval
        self.n_samples = n_samples
        self._last = 0.0

    def __call__(self, ev: Progress) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        final = ev.tiles_done == ev.tiles_total
        if not final and now - self._last < self.interval:
            return
        self._last = now
        filled = int(self.width * ev.fraction)
        bar = "#" * filled + "." * (self.width - filled)
        rate = ev.pairs_per_s
        if ev.unit != "pairs":
            self.stream.write(f"\r[{bar}] {ev.pairs_done}/{ev.pairs_total} {ev.unit}  "
                              f"ETA {format_duration(ev.eta)} ")
        else:
            self.stream.write(f"\r[{bar}] {100 * ev.fraction:5.1f}%  {rate:.3g} pairs/s  "
                              f"{rate * self.n_samples:.3g} pair*samples/s  ETA {format_duration(ev.eta)} ")
        if final:
            self.stream.write("\n")
        self.stream.flush()
