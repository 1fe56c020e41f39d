"""The scan's progress events (:class:`Progress`, one per finished tile) and a text progress bar
for terminals (the GUI draws its own from the same events)."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass


@dataclass
class Progress:
    tiles_done: int
    tiles_total: int
    pairs_done: int
    pairs_total: int
    elapsed: float

    @property
    def fraction(self) -> float:
        return self.pairs_done / self.pairs_total if self.pairs_total else 1.0

    @property
    def eta(self) -> float | None:
        f = self.fraction
        return None if f <= 0 else self.elapsed * (1.0 - f) / f

    @property
    def pairs_per_s(self) -> float:
        return self.pairs_done / self.elapsed if self.elapsed > 0 else 0.0


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
        self.stream.write(f"\r[{bar}] {100 * ev.fraction:5.1f}%  {rate:.3g} pairs/s  "
                          f"{rate * self.n_samples:.3g} pair*samples/s  ETA {format_duration(ev.eta)} ")
        if final:
            self.stream.write("\n")
        self.stream.flush()
