import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


# The fast lane (pytest -m "not slow") runs the first FAST_CASES cases of a parametrized test; its
# other cases, like the tests marked slow, are left to the whole suite (scripts/test.sh, CI).
FAST_CASES = 2


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the marks added here count
def pytest_collection_modifyitems(config, items):
    """One marker per GPU test: ``@pytest.mark.gpu`` (``mma=True``, ``devices=2``) also skips the
    test, with the reason, where CuPy, a GPU, binary mma or a second GPU is missing. A test that
    runs PLINK (``@pytest.mark.plink``), and a parametrized test's cases after its first
    FAST_CASES, are also ``slow``: the fast lane, ``pytest -m "not slow"``, leaves them to the
    whole suite."""
    from collections import Counter

    from tests.helpers import gpu_skip_reason

    reasons: dict = {}
    cases: Counter = Counter()
    for item in items:
        function = item.nodeid.split("[")[0]
        if function != item.nodeid:
            cases[function] += 1
        if item.get_closest_marker("slow") is None and (item.get_closest_marker("plink") is not None
                                                        or cases[function] > FAST_CASES):
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
