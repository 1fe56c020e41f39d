"""gboost's version, in a module of its own so that the writers can record it in run.json without
importing the package's public surface (which names the pipeline that imports the writers)."""
__version__ = "0.1.0"
