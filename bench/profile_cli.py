"""cProfile of one `gboost scan` in this process (issue 24: where the command's time goes beyond the
scan stage). Profiles the main thread (the host threads' work shows as their waits); prints the top
functions by own time and by cumulative time, and saves the profile.

    python bench/profile_cli.py --prof out.prof -- scan --bfile STUDY --out DIR --device gpu
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prof", default=None, help="save the profile here")
    ap.add_argument("--top", type=int, default=35)
    ap.add_argument("argv", nargs=argparse.REMAINDER, help="-- then gboost's arguments")
    a = ap.parse_args()
    argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
    if "--out" in argv:  # a fresh output folder each time (the bench's own, never a user's)
        shutil.rmtree(argv[argv.index("--out") + 1], ignore_errors=True)
    t = time.perf_counter()
    pr = cProfile.Profile()
    pr.enable()
    from gboost.cli import main as gboost_main

    rc = gboost_main(argv)
    pr.disable()
    print(f"# gboost {' '.join(argv)}: rc {rc}, {time.perf_counter() - t:.2f} s in this process (imports included)")
    if a.prof:
        pr.dump_stats(a.prof)
    for key in ("tottime", "cumulative"):
        print(f"\n## by {key}")
        pstats.Stats(pr, stream=sys.stdout).sort_stats(key).print_stats(a.top)
    return rc


if __name__ == "__main__":
    sys.exit(main())
