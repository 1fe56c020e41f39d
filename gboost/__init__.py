"""gboost: exhaustive SNP x SNP epistasis (BOOST / GBOOST) on GPUs and CPUs.

The library never imports Qt, CuPy or Dask at import time; engines load them when chosen.
"""
__version__ = "0.1.0"

import os as _os
import sys as _sys

from gboost import numba_cache as _numba_cache

if _sys.argv and (_sys.argv[0] == "-m" or _os.path.basename(_sys.argv[0]) in ("gboost", "gboost-gui")):
    # The command line is starting: until cli.main() takes over, Ctrl-C ends it with one line and
    # exit 130, not a traceback from whatever module was being imported.
    import signal as _signal

    def _quiet_interrupt(signum, frame):  # pragma: no cover - exercised through a subprocess
        _sys.stderr.write("\ngboost: interrupted while starting; nothing was written\n")
        _os._exit(130)

    _signal.signal(_signal.SIGINT, _quiet_interrupt)

# Before any gboost module compiles: a cache folder per source version (gboost/numba_cache.py says why).
NUMBA_CACHE = _numba_cache.configure()
