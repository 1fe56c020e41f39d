"""The application's state: one object that every view and panel of the window renders from.

What is loaded (``path``, ``study`` and the settings it was loaded with), the last finished scan
(``result``, ``reported``, the pathway ``graph``) and the selection (a SNP, a pair) live here and
change only through the actions below: :meth:`AppState.open` (a study loaded), :meth:`AppState.scanned`
(a scan finished), :meth:`AppState.set_graph`, :meth:`AppState.select_snp`, :meth:`AppState.select_pair`,
:meth:`AppState.clear_selection`, :meth:`AppState.show_region` and :meth:`AppState.clear_region`.
Each action emits the events of what it changed; the window's views only listen (napari's
evented model with Qt views is the example). So what one action derives from a study cannot
outlive the study: opening another resets the result, the graph, the selection and the regional
view, and every view redraws from the empty state.

The study-bound inputs (``STUDY_INPUTS``: --allow-no-sex, --pheno, --pheno-name, --mpheno, --covar,
--covar-name, --covar-number, --keep, --remove, --keep-fam, --remove-fam, --keep-allele-order, --set or --make-set and the set mode,
--within's clusters) describe one study's samples, alleles and SNP sets, so they are kept per study (:meth:`AppState.inputs_for`, remembered between sessions by
the ``store``), never carried over to the next study.

Plain Python: no Qt here, so the state and its transitions are testable without a window.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

# name: value when a study has none remembered (PLINK's default: the flag not given)
STUDY_INPUTS = {"allow_no_sex": False, "pheno": "", "pheno_name": "", "mpheno": "", "covar": "", "covar_name": "",
                "covar_number": "", "keep": "", "remove": "", "keep_fam": "",
                "remove_fam": "", "keep_allele_order": False, "set": "",
                "make_set": "", "set_mode": "set-by-all", "within": ""}


class Event:
    """Callbacks called, in the order connected, with the arguments of each :meth:`emit`."""

    def __init__(self) -> None:
        self._callbacks: list[Callable] = []

    def connect(self, fn: Callable) -> None:
        self._callbacks.append(fn)

    def disconnect(self, fn: Callable) -> None:
        self._callbacks.remove(fn)

    def emit(self, *args) -> None:
        for fn in list(self._callbacks):
            fn(*args)


@dataclass(frozen=True)
class Selection:
    """What the user picked: a SNP (its partners filter the table and are marked in the plots)
    and/or one reported pair (a row of ``reported``) shown in the plots. A pair of the selected
    SNP keeps the SNP; any other pair replaces it."""

    snp: int | None = None
    pair: int | None = None

    @property
    def empty(self) -> bool:
        return self.snp is None and self.pair is None


@dataclass(frozen=True)
class RegionRequest:
    """The regional view: the region of ``half_width_bp`` around each SNP of ``snps`` (one SNP, or
    the two of reported pair ``pair``), of the current result. The view computes what it draws
    from the result, so nothing of another study or scan can be drawn for it."""

    snps: tuple[int, ...]
    half_width_bp: int
    pair: int | None = None


class StudyStore:
    """Where the study-bound inputs are remembered between sessions: the application's settings
    (gui/settings.py), one group per study."""

    def load(self, key: str) -> dict:
        from gui import settings

        return settings.study_inputs(key, STUDY_INPUTS)

    def save(self, key: str, values: dict) -> None:
        from gui import settings

        settings.set_study_inputs(key, values)


class AppState:
    """See the module docstring. Events: ``study`` (the study or its loading settings changed),
    ``result`` (a scan finished, or the result went with its study), ``graph``, ``selection``,
    ``region`` (the regional view's SNPs or width changed, or it was cleared)."""

    def __init__(self, store: StudyStore | None = None) -> None:
        self.store = store if store is not None else StudyStore()
        self.path: str | None = None
        self.key: str | None = None  # the study's canonical path (gui.loading.canonical)
        self.study = None
        self.study_qc = None
        self.study_key = None  # RunOptions.load_key() the study was loaded with
        self.inputs: dict = dict(STUDY_INPUTS)  # the loaded study's study-bound inputs
        self.single = None  # the study's single-locus test as loaded (gui.resultdata.single_locus), if computed
        self.result = None
        self.reported = None  # result.reported, computed once (the core recomputes it per access)
        self.options = None  # the RunOptions of the scan that gave ``result``
        self.graph = None
        self.selection = Selection()
        self.region: RegionRequest | None = None
        self.events = type("Events", (), {})()
        for name in ("study", "result", "graph", "selection", "region"):
            setattr(self.events, name, Event())

    # -- the study-bound inputs -----------------------------------------------------------------
    def inputs_for(self, key: str) -> dict:
        """The study-bound inputs remembered for the study ``key`` (PLINK's defaults if none)."""
        if key == self.key:
            return dict(self.inputs)
        return {**STUDY_INPUTS, **self.store.load(key)}

    def remember(self, key: str, values: dict) -> None:
        """Keep ``values`` (names of ``STUDY_INPUTS``) as the study ``key``'s inputs."""
        values = {k: values[k] for k in STUDY_INPUTS if k in values}
        if key == self.key:
            self.inputs.update(values)
        self.store.save(key, {**self.inputs_for(key), **values})

    # -- actions --------------------------------------------------------------------------------
    def open(self, path: str, key: str, study, qc, load_key, inputs: dict, single=None) -> None:
        """A study was loaded (with its single-locus test ``single``, drawn before any scan):
        everything derived from the previous one goes."""
        self.path, self.key, self.study, self.study_qc, self.study_key = path, key, study, qc, load_key
        self.single = single
        self.inputs = {**STUDY_INPUTS, **{k: inputs[k] for k in STUDY_INPUTS if k in inputs}}
        self.store.save(key, self.inputs)
        self.result = self.reported = self.options = self.graph = None
        self.selection = Selection()
        self.region = None
        self.events.study.emit()
        self.events.result.emit()
        self.events.graph.emit()
        self.events.selection.emit()
        self.events.region.emit()

    def scanned(self, result, options, graph=None) -> None:
        """A scan finished: its result (and its pathway ``graph``) replace the last one's; the
        selection was of the old pairs. A scan that reloaded the study (other QC) brings its
        study along."""
        if result.study is not self.study:
            self.study, self.study_qc = result.study, options.qc
            self.single = None  # of the study as loaded before
            self.study_key = options.load_key()
            self.events.study.emit()
        self.result, self.reported, self.options = result, result.reported, options
        self.graph = graph
        self.selection = Selection()
        self.region = None  # of the old result's summary and pairs
        self.events.result.emit()
        self.events.graph.emit()
        self.events.selection.emit()
        self.events.region.emit()

    def set_graph(self, graph, result=None) -> bool:
        """The pathway graph of ``result`` (default: the current one); refused (False) when the
        result it was built from is no longer the current one."""
        if result is not None and result is not self.result:
            return False
        self.graph = graph
        self.events.graph.emit()
        return True

    def select_snp(self, k: int | None) -> None:
        if k is None or self.result is None or not 0 <= int(k) < self.result.study.n_snps:
            self.clear_selection()
            return
        self._select(Selection(snp=int(k)))

    def select_pair(self, row: int | None) -> None:
        """Show reported pair ``row``; the selected SNP stays only if it is one of the pair's."""
        if row is None or self.reported is None or not 0 <= int(row) < len(self.reported):
            self.clear_selection()
            return
        row = int(row)
        snp = self.selection.snp
        if snp is not None and snp not in (int(self.reported.i[row]), int(self.reported.j[row])):
            snp = None
        self._select(Selection(snp=snp, pair=row))

    def clear_selection(self) -> None:
        self._select(Selection())

    def show_region(self, snps=None, half_width_bp: int | None = None, pair: int | None = None) -> bool:
        """Show the regional view around ``snps`` (SNP indices of the current result's study; one or
        two) or, with ``pair``, around the two SNPs of that reported pair; ``half_width_bp``
        default: the current view's, else 250 kb. Refused (False, nothing changes) without a
        result or for SNPs or a pair it does not have."""
        from gui.regional import DEFAULT_HALF_WIDTH_KB

        if self.result is None:
            return False
        if pair is not None:
            if self.reported is None or not 0 <= int(pair) < len(self.reported):
                return False
            pair = int(pair)
            snps = (int(self.reported.i[pair]), int(self.reported.j[pair]))
        if snps is None:
            return False
        snps = tuple(int(k) for k in np.atleast_1d(snps))
        n = self.result.study.n_snps
        if not 1 <= len(snps) <= 2 or not all(0 <= k < n for k in snps):
            return False
        if half_width_bp is None:
            half_width_bp = self.region.half_width_bp if self.region is not None else DEFAULT_HALF_WIDTH_KB * 1000
        if int(half_width_bp) <= 0:
            return False
        req = RegionRequest(snps, int(half_width_bp), pair)
        if req != self.region:
            self.region = req
            self.events.region.emit()
        return True

    def set_region_width(self, half_width_bp: int) -> bool:
        """The regional view's half-width, its SNPs kept (False when none is shown)."""
        if self.region is None:
            return False
        return self.show_region(self.region.snps, half_width_bp, self.region.pair)

    def clear_region(self) -> None:
        if self.region is not None:
            self.region = None
            self.events.region.emit()

    def _select(self, sel: Selection) -> None:
        if sel != self.selection:
            self.selection = sel
            self.events.selection.emit()
