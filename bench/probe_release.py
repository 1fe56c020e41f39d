"""What the driver's end of a CUDA process costs once its contexts are reset (issue 24: 0.05-0.09 s
after os._exit that no stage of run.json could hold). The CLI's scan in-process, as
bench/probe_exit.py, with the release of the driver's files (gboost/engines/gpu/cuda.py,
release_driver_files, on the GPU-ending thread beside the formatting) timed; ``--no-release`` leaves
them to the kernel after os._exit, as before. Prints process ages; the caller times the process
from outside.

    python bench/probe_release.py [--no-release] --bfile PREFIX --out DIR --device gpu --quiet
"""
from __future__ import annotations

import sys
import time

from gboost.stages import process_age


def main() -> int:
    import gboost.cli as cli
    import gboost.engines.gpu.engine as engine

    from probe_exit import mark_exit

    keep = "--no-release" in sys.argv
    argv = [a for a in sys.argv[1:] if a != "--no-release"]
    mark_exit()
    release = engine.release_driver_files

    def timed_release() -> int:
        if keep:
            return 0
        t = time.perf_counter()
        n = release()
        print(f"probe: {n} driver files released in {time.perf_counter() - t:.3f} s (at {process_age():.3f} s)",
              file=sys.stderr)
        return n

    engine.release_driver_files = timed_release
    sys.argv = ["gboost", "scan", *argv]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
