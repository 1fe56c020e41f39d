"""gboost: exhaustive SNP x SNP epistasis (BOOST / GBOOST) on GPUs and CPUs.

The pipeline from Python, in the order a scan runs (the same calls as ``gboost scan``)::

    import gboost

    source = gboost.open_input(bfile="sample_data/sample")          # or ped=/map_file=, boost_matrix=
    study = gboost.load_study(source, gboost.QCOptions(maf=0.01))   # PLINK's QC, bit planes
    result = gboost.run_pipeline(study, gboost.ScanParams(epi1=1e-4, device="cpu"))
    print(len(result.reported), "pairs with P <= 1e-4")
    gboost.write_outputs(result, "results/sample", overwrite=True)  # pairs.tsv, PLINK's files, run.json

``result`` is a :class:`gboost.pipeline.scan.ScanResult`: ``result.reported`` (pairs.tsv's rows, a
:class:`gboost.pipeline.scan.Pairs`), ``result.screened`` (PLINK's .epi.cc rows), ``result.summary`` (the
.epi.cc.summary), ``result.marginal_p``. docs/DESIGN.md maps the modules behind these names.

The library never imports Qt, CuPy or Dask at import time; engines load them when chosen. The names
below are imported on first use, so ``import gboost`` stays cheap for the command line. Importing
gboost changes nothing in the process (signals, standard streams, environment, numba's import and
configuration): what the commands change as they start is gboost.runtime.process.prepare_process, which
only they call.
"""
from gboost.version import __version__

# The public surface: name -> module that defines it.
_API = {
    "open_input": "gboost.data.inputs",
    "load_study": "gboost.data.load",
    "QCOptions": "gboost.data.study",
    "Study": "gboost.data.study",
    "ScanParams": "gboost.pipeline.params",
    "ScreenParams": "gboost.pipeline.params",
    "EngineOptions": "gboost.pipeline.params",
    "ReportOptions": "gboost.pipeline.params",
    "make_engine": "gboost.engines",
    "run_pipeline": "gboost.pipeline.scan",
    "ScanResult": "gboost.pipeline.scan",
    "write_outputs": "gboost.outputs.results",
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
