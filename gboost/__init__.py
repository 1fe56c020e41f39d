"""gboost: exhaustive SNP x SNP epistasis (BOOST / GBOOST) on GPUs and CPUs.

The pipeline from Python, in the order a scan runs (the same calls as ``gboost scan``)::

    import gboost

    source = gboost.open_input(bfile="sample_data/sample")          # or ped=/map_file=, boost_matrix=
    study = gboost.load_study(source, gboost.QCOptions(maf=0.01))   # PLINK's QC, bit planes
    result = gboost.run_pipeline(study, gboost.ScanParams(epi1=1e-4, device="cpu"))
    print(len(result.reported), "pairs with P <= 1e-4")
    gboost.write_outputs(result, "results/sample", overwrite=True)  # pairs.tsv, PLINK's files, run.json

``result`` is a :class:`gboost.scan.ScanResult`: ``result.reported`` (pairs.tsv's rows, a
:class:`gboost.scan.Pairs`), ``result.screened`` (PLINK's .epi.cc rows), ``result.summary`` (the
.epi.cc.summary), ``result.marginal_p``. docs/DESIGN.md maps the modules behind these names.

The library never imports Qt, CuPy or Dask at import time; engines load them when chosen. The names
below are imported on first use, so ``import gboost`` stays cheap for the command line.
"""
from gboost.version import __version__

# The public surface: name -> module that defines it.
_API = {
    "open_input": "gboost.inputs",
    "load_study": "gboost.load",
    "QCOptions": "gboost.study",
    "Study": "gboost.study",
    "ScanParams": "gboost.params",
    "ScreenParams": "gboost.params",
    "EngineOptions": "gboost.params",
    "ReportOptions": "gboost.params",
    "make_engine": "gboost.engines",
    "run_pipeline": "gboost.scan",
    "ScanResult": "gboost.scan",
    "write_outputs": "gboost.io.results",
    "InputError": "gboost.errors",
    "ScanCancelled": "gboost.errors",
}
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        import importlib

        value = getattr(importlib.import_module(_API[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gboost' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_API))

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

    # A standard stream the caller closed (``2>&-``: cron jobs, daemons) is /dev/null from here:
    # else the first file opened takes its descriptor and gets what is written to it, and Python's
    # sys.stderr is None, whose flush failed a finished scan (exit 1).
    for _fd, _name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            _os.fstat(_fd)
        except OSError:
            _null = _os.open(_os.devnull, _os.O_RDWR)  # the lowest free descriptor: this one
            if _null != _fd:
                _os.dup2(_null, _fd)
                _os.close(_null)
            if getattr(_sys, _name) is None:
                setattr(_sys, _name, open(_fd, "r" if _fd == 0 else "w", closefd=False))

# Before any gboost module compiles: a cache folder per source version (gboost/numba_cache.py says why).
NUMBA_CACHE = _numba_cache.configure()
_numba_cache.skip_blas_probe()  # numba's first call imports no scipy.linalg (gboost/numba_cache.py)
_numba_cache.light_cache_loads()  # nor all of numba's lowering registries for a cached function (same file)
