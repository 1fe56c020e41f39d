"""gboost: exhaustive SNP x SNP epistasis (BOOST / GBOOST) on GPUs and CPUs.

The library never imports Qt, CuPy or Dask at import time; engines load them when chosen.
"""
__version__ = "0.1.0"

from gboost import numba_cache as _numba_cache

# Before any gboost module compiles: a cache folder per source version (gboost/numba_cache.py says why).
NUMBA_CACHE = _numba_cache.configure()
