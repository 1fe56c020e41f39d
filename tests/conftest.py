import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def pytest_collection_modifyitems(config, items):
    """One marker per GPU test: ``@pytest.mark.gpu`` (``mma=True``, ``devices=2``) also skips the
    test, with the reason, where CuPy, a GPU, binary mma or a second GPU is missing. A test that
    runs PLINK (``@pytest.mark.plink``) is also ``slow``: the fast lane, ``pytest -m "not slow"``,
    leaves it to the whole suite."""
    from tests.helpers import gpu_skip_reason

    reasons: dict = {}
    for item in items:
        if item.get_closest_marker("plink") is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        m = item.get_closest_marker("gpu")
        if m is None:
            continue
        key = (bool(m.kwargs.get("mma", False)), int(m.kwargs.get("devices", 1)))
        if key not in reasons:
            reasons[key] = gpu_skip_reason(mma=key[0], devices=key[1])
        if reasons[key] is not None:
            item.add_marker(pytest.mark.skip(reason=reasons[key]))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="module")
def qc_fileset(tmp_path_factory):
    """The QC fileset of tests/helpers.py (write_qc_fileset): ``(folder, prefix)``, written once a module."""
    from tests.helpers import write_qc_fileset

    return write_qc_fileset(tmp_path_factory.mktemp("qc"))
