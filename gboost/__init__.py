"""gboost: exhaustive SNP x SNP epistasis (BOOST / GBOOST) on GPUs and CPUs.

The library never imports Qt, CuPy or Dask at import time; engines load them when chosen.
"""
__version__ = "0.1.0"
