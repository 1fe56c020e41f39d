"""The whole `gboost scan` command as a user runs it (its own argv, ended by the CLI's os._exit), with
timestamps from the process's start on both threads' steps (issue 24): the imports of NumPy, numba,
CuPy and gboost's modules as they finish, the GPU thread's driver start and kernel load, the inputs'
parse and counting pass, the stage clock's laps, the first tiles' submission and collection, the
outputs' formatting and writing, and the exit. The marks are taken by an import hook that wraps
functions as their modules load, so nothing is imported earlier than the command itself imports it.

    python bench/probe_cli_timeline.py --bfile PREFIX --out DIR --device gpu [other scan flags]

The marks go to standard error as the process ends (the CLI's os._exit is wrapped to print them).
"""
from __future__ import annotations

import importlib.machinery
import os
import sys
import threading

# The marks and the wrapper of bench/probe_first_tile.py (this script's folder is on sys.path when run).
from probe_first_tile import MARKS, mark, wrap  # noqa: E402


def _after_early(m) -> None:
    wrap(m, "_driver_contexts", "GPU: driver and first context (ctypes)")
    wait = threading.Event.wait

    def warm(go=None):  # as _warm, with the wait for the main thread's signal marked
        if go is not None:
            ev = go

            class Marked:
                def wait(self, t):
                    r = wait(ev, t)
                    mark("GPU: CuPy's import may start (go)")
                    return r
            go = Marked()
        return warm0(go)
    warm0 = m._warm
    m._warm = warm


def _after_stages(m) -> None:
    lap = m.StageClock.lap

    def marked(self, name):
        mark(f"stage lap: {name}")
        return lap(self, name)
    m.StageClock.lap = marked


ON_IMPORT = {
    "gboost.engines.early": _after_early,
    "gboost.stages": _after_stages,
    "gboost.inputs": lambda m: wrap(m, "open_input", "open_input (.fam/.bim)"),
    "gboost.load": lambda m: wrap(m, "load_study", "load_study (counting pass)"),
    "gboost.engines.gpu.compile": lambda m: wrap(m, "kernels", "kernels(): module loaded", 2),
    "gboost.engines.gpu.device": lambda m: (wrap(m.DeviceRunner, "try_submit", "tile submitted", 2),
                                            wrap(m.DeviceRunner, "collect", "tile collected", 2)),
    "gboost.io.results": lambda m: (wrap(m, "write_outputs", "write_outputs"),
                                    wrap(m, "prepare_outputs", "prepare_outputs (host work)")),
    "gboost.io.outdir": lambda m: wrap(m, "write_files", "write_files"),
}
WATCH = {"numpy", "numba", "cupy", "llvmlite", "gboost.cli", "gboost.engines", "gboost.scan"} | set(ON_IMPORT)


class Hook:
    """A meta-path finder that marks when a watched module has executed and wraps its functions."""

    def find_spec(self, name, path, target=None):
        if name not in WATCH:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            mark(f"import {name} begins")
            run(module)
            mark(f"import {name} done")
            if name in ON_IMPORT:
                ON_IMPORT[name](module)
        spec.loader.exec_module = exec_module
        return spec


def dump() -> None:
    for t, thread, what in sorted(MARKS):
        print(f"{t:8.3f}  {thread[:16]:16}  {what}", file=sys.stderr)
    sys.stderr.flush()


def main() -> None:
    sys.meta_path.insert(0, Hook())
    import gboost.stages  # (imported above, for the clock)

    _after_stages(gboost.stages)
    mark("probe up")
    exit0 = os._exit

    def exit_marked(rc):
        mark(f"os._exit({rc})")
        dump()
        exit0(rc)
    os._exit = exit_marked
    sys.argv = ["gboost", "scan", *sys.argv[1:]]
    from gboost.cli import main as cli
    rc = cli()  # argv None: the command's own path, ended by _exit_now
    dump()
    sys.exit(rc)


if __name__ == "__main__":
    main()
