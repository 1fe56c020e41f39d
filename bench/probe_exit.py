"""The command's last moments (issue 24: 2.5 % of the 500k x 5k command's wall is in no stage): the
CLI run in-process, with the process age (gboost.stages.process_age) printed to stderr when
run.json has been written and when the process ends itself (gboost.cli._exit_now); the caller
times the process from outside and reads the rest as the kernel's and the driver's teardown.

    python bench/probe_exit.py --bfile PREFIX --out DIR --device gpu --quiet
"""
from __future__ import annotations

import sys

from gboost.stages import process_age


def mark_exit() -> None:
    """gboost.cli._exit_now prints the process age first (bench/probe_release.py uses it too)."""
    import gboost.cli as cli

    exit_now = cli._exit_now

    def marked_exit(rc):
        print(f"probe: _exit_now at {process_age():.3f} s", file=sys.stderr)
        exit_now(rc)

    cli._exit_now = marked_exit


def main() -> int:
    import gboost.cli as cli
    import gboost.io.results as results

    mark_exit()
    write = results.write_outputs

    def marked_write(*a, **k):
        print(f"probe: write_outputs from {process_age():.3f} s", file=sys.stderr)
        try:
            return write(*a, **k)
        finally:
            print(f"probe: write_outputs returned at {process_age():.3f} s", file=sys.stderr)

    results.write_outputs = marked_write
    sys.argv = ["gboost", "scan", *sys.argv[1:]]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
