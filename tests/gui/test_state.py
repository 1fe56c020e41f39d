"""gui/state.py: the application state's transitions, without a window."""
from types import SimpleNamespace

import numpy as np

from gui.state import STUDY_INPUTS, AppState, Selection


class DictStore:
    def __init__(self):
        self.saved = {}

    def load(self, key):
        return dict(self.saved.get(key, {}))

    def save(self, key, values):
        self.saved[key] = dict(values)


def fake_result(n_snps=10):
    return SimpleNamespace(study=SimpleNamespace(n_snps=n_snps), reported=_Pairs(np.array([0, 2, 5]), np.array([3, 4, 7])))


class _Pairs:
    def __init__(self, i, j):
        self.i, self.j = i, j

    def __len__(self):
        return len(self.i)


def recorder(state):
    seen = []
    for name in ("study", "result", "graph", "selection"):
        getattr(state.events, name).connect(lambda n=name: seen.append(n))
    return seen


def test_opening_a_study_resets_everything_derived_from_the_last_one():
    st = AppState(DictStore())
    res = fake_result()
    st.open("/a", "/a", res.study, None, ("k",), {"covar": "/a.cov"})
    st.scanned(res, SimpleNamespace(qc=None, load_key=lambda: ("k",)), graph="G")
    st.select_snp(2)
    assert st.result is res and st.graph == "G" and st.selection == Selection(snp=2)
    seen = recorder(st)
    st.open("/b", "/b", SimpleNamespace(n_snps=4), None, ("k",), {})
    assert st.result is None and st.reported is None and st.graph is None and st.selection.empty
    assert st.inputs == STUDY_INPUTS  # /a's covariates are not /b's
    assert seen == ["study", "result", "graph", "selection"]


def test_a_new_scan_drops_the_selection_of_the_old_pairs():
    st = AppState(DictStore())
    res = fake_result()
    st.open("/a", "/a", res.study, None, ("k",), {})
    opts = SimpleNamespace(qc=None, load_key=lambda: ("k",))
    st.scanned(res, opts)
    st.select_pair(1)
    again = fake_result()
    again.study = res.study
    st.scanned(again, opts)
    assert st.selection.empty and st.result is again


def test_a_pair_of_another_snp_replaces_the_selected_snp():
    st = AppState(DictStore())
    res = fake_result()
    st.open("/a", "/a", res.study, None, ("k",), {})
    st.scanned(res, SimpleNamespace(qc=None, load_key=lambda: ("k",)))
    st.select_snp(2)
    st.select_pair(1)  # 2 x 4: the SNP's own pair keeps the SNP
    assert st.selection == Selection(snp=2, pair=1)
    st.select_pair(2)  # 5 x 7: not the SNP's
    assert st.selection == Selection(snp=None, pair=2)
    st.select_snp(99)  # not a SNP of the study
    assert st.selection.empty


def test_study_inputs_are_kept_per_study():
    store = DictStore()
    st = AppState(store)
    st.open("/a", "/a", SimpleNamespace(n_snps=3), None, ("k",), {"allow_no_sex": True, "covar": "/a.cov"})
    assert st.inputs_for("/b") == STUDY_INPUTS
    st.remember("/b", {"pheno": "/b.phe"})
    assert st.inputs_for("/b")["pheno"] == "/b.phe" and st.inputs["pheno"] == ""
    st.open("/b", "/b", SimpleNamespace(n_snps=3), None, ("k",), st.inputs_for("/b"))
    assert st.inputs_for("/a")["covar"] == "/a.cov" and st.inputs_for("/a")["allow_no_sex"] is True
    assert st.inputs["covar"] == "" and st.inputs["pheno"] == "/b.phe"


def test_a_graph_of_a_result_no_longer_shown_is_refused():
    st = AppState(DictStore())
    res = fake_result()
    st.open("/a", "/a", res.study, None, ("k",), {})
    st.scanned(res, SimpleNamespace(qc=None, load_key=lambda: ("k",)))
    assert st.set_graph("G", res) and st.graph == "G"
    assert not st.set_graph("old", fake_result()) and st.graph == "G"
