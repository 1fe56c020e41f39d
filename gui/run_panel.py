"""Run settings (QC, thresholds, engine), the Run/Cancel buttons and the progress read-out.

Defaults are PLINK 1.9's: every QC filter off, ``--epi1 5e-6`` and ``--epi2 0.01`` for
``--fast-epistasis boost``. Ticking a QC filter proposes the value PLINK uses when the flag is
given without a number (``--maf`` 0.01, ``--geno`` 0.1, ``--mind`` 0.1) or the usual 1e-6 for
``--hwe``.
"""
from __future__ import annotations

import os

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel,
                               QLineEdit, QProgressBar, QPushButton, QScrollArea, QSpinBox, QVBoxLayout, QWidget)

from gboost.pipeline.progress import format_duration
from gboost.pipeline.scan import ScanParams
from gboost.data.study import QCOptions
from gui import settings
from gui.run_options import RunOptions

QC_FIELDS = {  # name: (flag, proposed value, tooltip)
    "maf": ("--maf", "0.01", "Drop SNPs whose minor allele frequency is below this value (PLINK --maf; "
                             "0.01 is PLINK's value for a bare --maf). Off by default, as in PLINK 1.9."),
    "geno": ("--geno", "0.1", "Drop SNPs with a missing-call rate above this value (PLINK --geno; "
                              "0.1 is PLINK's value for a bare --geno). Off by default."),
    "mind": ("--mind", "0.1", "Drop samples with a missing-call rate above this value (PLINK --mind; "
                              "0.1 is PLINK's value for a bare --mind). Off by default."),
    "hwe": ("--hwe", "1e-6", "Drop SNPs whose Hardy-Weinberg exact test P in controls is below this value "
                             "(PLINK --hwe; 1e-6 is a common choice for case-control studies). Off by default."),
}
EPI1_TIP = ("--epi1: P threshold of the scan. A pair whose BOOST screening statistic (KSA) passes the χ² "
            "threshold for this P is tested exactly, and reported in pairs.tsv when its exact P ≤ epi1. "
            "Default 5e-6, PLINK 1.9's default for --fast-epistasis boost (≈ χ²₄ 30, BOOST's threshold).")
EPI2_TIP = ("--epi2: P threshold counted in the PLINK summary file (pairs.epi.cc.summary, column N_SIG). "
            "Default 0.01, as PLINK 1.9.")
NO_SEX_TIP = ("--allow-no-sex: keep the case/control phenotype of samples whose sex (.fam column 5) is "
              "unknown. PLINK 1.9 ignores those phenotypes by default; shared data often has sex 0 for "
              "every sample. Remembered for each study.")
FILE_TIPS = {  # name: (flag, tooltip)
    "pheno": ("--pheno", "Phenotype file (FID IID value) replacing the .fam's column 6, as PLINK --pheno."),
    "covar": ("--covar", "Covariates (FID IID c1 c2 …): case-control, the reported pairs get STAT_ADJ/P_ADJ of "
                         "a logistic refit; quantitative trait, every pair's test is adjusted (CPU engine) "
                         "(PLINK --covar format; -9/NA missing)."),
    "keep": ("--keep", "Keep only the samples listed in this file (FID IID per line, or IID alone; PLINK --keep). "
                       "Remembered for each study."),
    "remove": ("--remove", "Drop the samples listed in this file (FID IID per line, or IID alone; PLINK --remove). "
                           "Remembered for each study."),
    "set": ("--set", "Candidate sets (PLINK set file: a set's name, its SNP IDs, END): the scan tests the pairs the "
                     "set mode says instead of every pair (plink1.9's --fast-epistasis boost set-by-all / set-by-set). "
                     "Remembered for each study."),
    "keep_fam": ("--keep-fam", "Keep only the families listed in this file (one FID per line; PLINK --keep-fam). "
                               "Remembered for each study."),
    "remove_fam": ("--remove-fam", "Drop the families listed in this file (one FID per line; PLINK --remove-fam). "
                                   "Remembered for each study."),
    "make_set": ("--make-set", "Candidate sets as ranges (PLINK range file: CHR START END NAME per line, bp inclusive; "
                               "one set per NAME), instead of a --set file. Remembered for each study."),
    "extract": ("--extract", "Keep only the SNP IDs listed in this file (PLINK --extract)."),
    "within": ("--within", "PLINK cluster file (FID IID CLUSTER per line, every scanned sample listed): the "
                           "permutations shuffle the case/control labels only within each cluster (ancestry "
                           "groups, batches), so each keeps its cases' count. Used with --perm only. Remembered for each study."),
    "exclude": ("--exclude", "Drop the SNP IDs listed in this file (PLINK --exclude)."),
}
COVAR_NAME_TIP = "--covar-name: comma-separated covariate columns to use (empty: all of them)."
COVAR_NUMBER_TIP = ("--covar-number: the covariates to use by number, PLINK's 1-based list such as 1-3,5 (covariate 1 "
                    "is the --covar file's third column; empty: all of them). Not with --covar-name.")
PHENO_NAME_TIP = ("--pheno-name: the --pheno file's column of this name (its header line: FID IID NAME1 NAME2 …; "
                  "empty: the first phenotype column). Needs --pheno.")
MPHENO_TIP = ("--mpheno: the N-th phenotype column of the --pheno file (1: its third column; 'first': PLINK's "
              "default). Needs --pheno; not with --pheno-name.")
ALLELE_ORDER_TIP = ("--keep-allele-order: A1 is the .bim's first allele, not the founders' minor allele (PLINK's flag): "
                    "the allele a quantitative trait's test counts (BETA_INT's sign, marginal.tsv's A1). "
                    "Remembered for each study.")
CHR_TIP = "--chr: keep only these chromosomes, e.g. 1-4,22 (empty: all autosomes, as PLINK)."
EXTRA_CHR_TIP = ("--allow-extra-chr: accept chromosome names PLINK does not know (contigs such as HLA or "
                 "chrUn_gl000220; also in --chr), printed whole in the outputs. Without it such a study is refused, "
                 "as by PLINK.")
MIN_DIST_TIP = ("--min-distance: leave out of pairs.tsv the pairs of SNPs closer than this many kilobases "
                "on one chromosome (LD, not interaction). 0: off, as PLINK.")
MAX_R2_TIP = ("--max-r2: leave out of pairs.tsv the pairs whose genotypic r² exceeds this value. "
              "Empty: off, as PLINK.")
CALIB_TIP = ("--calibration-pairs: exact tests of this many random pairs for the interaction test's "
             "inflation λ in run.json (default 200000; 0: none, faster on quick scans).")
GPUS_TIP = "--gpus: GPU ids to use, e.g. 0,1 (empty: every GPU CuPy sees)."
DASK_TIP = ("--dask: run the tiles on a Dask cluster: a scheduler address (tcp://host:8786) or local:N for "
            "N local workers (empty: one process, no scheduler).")
PERM_TIP = ("--perm N: after the scan, N permutations of the case/control labels, each screened like the study "
            "(PLINK's max(T)): pairs.tsv gets EMP2, each pair's family-wise P, (1 + permutations whose largest STAT is "
            "≥ the pair's) / (N + 1), and the plots an empirical genome-wide 0.05 line (19 permutations or more; "
            "1,000 is usual). Each permutation costs about one scan. Off: none. Not with --covar.")
PERM_SEED_TIP = ("--perm-seed: seed of the permutations (0, the default: the same permutations every run). "
                 "Used with --perm only.")
ENGINE_TIP = ("Where the pairs are counted. Auto: the GPU when CuPy sees one, else the CPU. Every engine "
              "gives the same pairs and statistics.")


# The study-bound inputs (gui/state.py's STUDY_INPUTS) shown in a file row / a text field of their name.
STUDY_FILES = ("pheno", "covar", "keep", "remove", "keep_fam", "remove_fam", "set", "make_set", "within")
SET_MODE_TIP = ("With --set: set-by-all tests every SNP of the (one) set against every SNP of the scan; set-by-set "
                "every SNP of the first set against every SNP of the second (one set: the pairs within it).")
STUDY_TEXTS = ("pheno_name", "covar_name", "covar_number")


def _sci_edit(text: str, tip: str) -> QLineEdit:
    edit = QLineEdit(text)
    v = QDoubleValidator(0.0, 1.0, 12)
    v.setNotation(QDoubleValidator.Notation.ScientificNotation)
    edit.setValidator(v)
    edit.setToolTip(tip)
    edit.setMaximumWidth(90)
    return edit


def _parse_p(text: str, flag: str) -> float:
    try:
        v = float(text.strip())
    except ValueError:
        raise ValueError(f"{flag}: '{text}' is not a number") from None
    if not 0.0 < v < 1.0:
        raise ValueError(f"{flag} must be between 0 and 1 (exclusive), got {text}")
    return v


def _narrow(combo: QComboBox) -> None:
    """A combo box that may be narrower than its longest item (the dock can be ~300 pixels)."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(12)


def _tip_label(text: str, tip: str) -> QLabel:
    lab = QLabel(text)
    lab.setToolTip(tip)
    return lab


def _optional_float(text: str, flag: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{flag}: '{text}' is not a number") from None


def _gpu_ids(text: str) -> list[int] | None:
    text = text.strip()
    if not text:
        return None
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise ValueError(f"--gpus: '{text}' is not a list of GPU ids such as 0,1") from None


class RunPanel(QWidget):
    runRequested = Signal()
    cancelRequested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.qc_checks: dict[str, QCheckBox] = {}
        self.qc_edits: dict[str, QLineEdit] = {}
        # Settings scroll when the dock is short; Run/Cancel and the progress bar always show.
        settings_widget = QWidget()
        lay = QVBoxLayout(settings_widget)
        lay.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setWidget(settings_widget)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # fields shrink instead
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.addWidget(scroll, 1)

        in_box = QGroupBox("Samples and phenotypes")
        form = QFormLayout(in_box)
        # The flag on the box, the meaning beside it in a wrapping label: the dock may be narrow.
        self.allow_no_sex = QCheckBox("--allow-no-sex")
        self.allow_no_sex.setToolTip(NO_SEX_TIP)
        no_sex_text = QLabel("keep phenotypes of samples of unknown sex")
        no_sex_text.setWordWrap(True)
        no_sex_text.setToolTip(NO_SEX_TIP)
        no_sex_text.setBuddy(self.allow_no_sex)
        form.addRow(self.allow_no_sex, no_sex_text)
        self.file_edits: dict[str, QLineEdit] = {}
        self.file_buttons: dict[str, QPushButton] = {}  # each file row's "…"
        form.addRow(*self._file_row("pheno"))
        # The --pheno file's column: by name or by number (PLINK takes one of the two), with a file only.
        self.pheno_name = QLineEdit()
        self.pheno_name.setPlaceholderText("first phenotype column")
        self.pheno_name.setToolTip(PHENO_NAME_TIP)
        form.addRow(_tip_label("--pheno-name", PHENO_NAME_TIP), self.pheno_name)
        self.mpheno = QSpinBox()
        self.mpheno.setRange(0, 100_000)
        self.mpheno.setSpecialValueText("first")
        self.mpheno.setToolTip(MPHENO_TIP)
        form.addRow(_tip_label("--mpheno", MPHENO_TIP), self.mpheno)
        self.file_edits["pheno"].textChanged.connect(self._pheno_column_enabled)
        form.addRow(*self._file_row("covar"))
        self.covar_name = QLineEdit()
        self.covar_name.setPlaceholderText("all columns")
        self.covar_name.setToolTip(COVAR_NAME_TIP)
        form.addRow(_tip_label("--covar-name", COVAR_NAME_TIP), self.covar_name)
        self.covar_number = QLineEdit()
        self.covar_number.setPlaceholderText("all columns")
        self.covar_number.setToolTip(COVAR_NUMBER_TIP)
        form.addRow(_tip_label("--covar-number", COVAR_NUMBER_TIP), self.covar_number)
        for name in ("keep", "remove", "keep_fam", "remove_fam"):
            form.addRow(*self._file_row(name))
        self.keep_allele_order = QCheckBox("--keep-allele-order")
        self.keep_allele_order.setToolTip(ALLELE_ORDER_TIP)
        form.addRow(self.keep_allele_order, QLabel("A1: the .bim's first allele"))
        self._pheno_column_enabled()
        from gui.format_options import HARD_CALL_TIP, IDS_TIP, IdModeEdit, hard_call_edit

        self.id_mode = IdModeEdit()  # VCF/BGEN only (their samples have one-part IDs)
        form.addRow(_tip_label("VCF/BGEN IDs", IDS_TIP), self.id_mode)
        self.hard_call = hard_call_edit()
        form.addRow(_tip_label("--hard-call-threshold", HARD_CALL_TIP), self.hard_call)
        lay.addWidget(in_box)

        qc_box = QGroupBox("Quality control (PLINK flags)")
        grid = QGridLayout(qc_box)
        for k, (name, (flag, value, tip)) in enumerate(QC_FIELDS.items()):
            check = QCheckBox(flag)
            check.setToolTip(tip)
            edit = _sci_edit(value, tip)
            edit.setEnabled(False)
            check.toggled.connect(edit.setEnabled)
            self.qc_checks[name], self.qc_edits[name] = check, edit
            grid.addWidget(check, k // 2, 2 * (k % 2))
            grid.addWidget(edit, k // 2, 2 * (k % 2) + 1)
        qc_form = QFormLayout()
        for name in ("extract", "exclude"):
            qc_form.addRow(*self._file_row(name))
        self.chrom = QLineEdit()
        self.chrom.setPlaceholderText("all autosomes")
        self.chrom.setToolTip(CHR_TIP)
        qc_form.addRow(_tip_label("--chr", CHR_TIP), self.chrom)
        self.allow_extra_chr = QCheckBox("--allow-extra-chr")
        self.allow_extra_chr.setToolTip(EXTRA_CHR_TIP)
        extra_chr_text = QLabel("non-standard chromosome names")
        extra_chr_text.setWordWrap(True)  # the dock may be narrow
        qc_form.addRow(self.allow_extra_chr, extra_chr_text)
        grid.addLayout(qc_form, 2, 0, 1, 4)
        lay.addWidget(qc_box)

        set_box = QGroupBox("Candidate sets")
        set_form = QFormLayout(set_box)
        set_form.addRow(*self._file_row("set"))
        set_form.addRow(*self._file_row("make_set"))
        self.set_mode = QComboBox()
        for mode in ("set-by-all", "set-by-set"):
            self.set_mode.addItem(f"--{mode}", mode)
        self.set_mode.setToolTip(SET_MODE_TIP)
        set_form.addRow(_tip_label("Set mode", SET_MODE_TIP), self.set_mode)
        for name in ("set", "make_set"):
            self.file_edits[name].textChanged.connect(self._set_mode_enabled)
        self.set_mode.setEnabled(False)
        lay.addWidget(set_box)

        thr_box = QGroupBox("Thresholds")
        form = QFormLayout(thr_box)
        self.epi1 = _sci_edit("5e-6", EPI1_TIP)
        self.epi2 = _sci_edit("0.01", EPI2_TIP)
        lab1, lab2 = QLabel("--epi1"), QLabel("--epi2")
        lab1.setToolTip(EPI1_TIP)
        lab2.setToolTip(EPI2_TIP)
        form.addRow(lab1, self.epi1)
        form.addRow(lab2, self.epi2)
        self.marginal = QComboBox()
        self.marginal.addItem("Genotype LR (2 df, BOOST)", False)
        self.marginal.addItem("Allelic χ² (1 df, PLINK --assoc)", True)
        _narrow(self.marginal)
        self.marginal.setToolTip("Single-locus test drawn in the Manhattan and QQ plots and written to marginal.tsv.")
        form.addRow("Single-locus test", self.marginal)
        self.min_distance = QDoubleSpinBox()
        self.min_distance.setRange(0.0, 1e6)
        self.min_distance.setDecimals(1)
        self.min_distance.setSuffix(" kb")
        self.min_distance.setSpecialValueText("off")
        self.min_distance.setToolTip(MIN_DIST_TIP)
        form.addRow(_tip_label("--min-distance", MIN_DIST_TIP), self.min_distance)
        self.max_r2 = _sci_edit("", MAX_R2_TIP)
        self.max_r2.setPlaceholderText("off")
        form.addRow(_tip_label("--max-r2", MAX_R2_TIP), self.max_r2)
        self.calibration = QSpinBox()
        self.calibration.setRange(0, 100_000_000)
        self.calibration.setSingleStep(10_000)
        self.calibration.setValue(ScanParams.calibration_pairs)
        self.calibration.setSpecialValueText("none")
        self.calibration.setToolTip(CALIB_TIP)
        form.addRow(_tip_label("Calibration", CALIB_TIP), self.calibration)
        lay.addWidget(thr_box)

        perm_box = QGroupBox("Permutations (family-wise)")
        form = QFormLayout(perm_box)
        self.perm = QSpinBox()
        self.perm.setRange(0, 10_000_000)
        self.perm.setSingleStep(100)
        self.perm.setSpecialValueText("off")
        self.perm.setToolTip(PERM_TIP)
        form.addRow(_tip_label("--perm", PERM_TIP), self.perm)
        self.perm_seed = QSpinBox()
        self.perm_seed.setRange(0, 2**31 - 1)
        self.perm_seed.setToolTip(PERM_SEED_TIP)
        form.addRow(_tip_label("--perm-seed", PERM_SEED_TIP), self.perm_seed)
        form.addRow(*self._file_row("within"))
        # The seed and the clusters belong to the permutations: off with them, and kept for when
        # they are on again (a study's clusters are remembered with it), never a reason to refuse
        # a scan without permutations.
        self.perm.valueChanged.connect(self._perm_enabled)
        self._perm_enabled()
        lay.addWidget(perm_box)

        eng_box = QGroupBox("Engine")
        form = QFormLayout(eng_box)
        self.engine = QComboBox()
        self.engine.setToolTip(ENGINE_TIP)
        _narrow(self.engine)
        self.set_gpu_info(False, "not checked yet")
        form.addRow("Device", self.engine)
        self.threads = QSpinBox()
        self.threads.setRange(0, 1024)
        self.threads.setSpecialValueText(f"all ({os.cpu_count()})")
        self.threads.setToolTip("CPU threads for the CPU engine (--threads); 'all' uses every core.")
        form.addRow("CPU threads", self.threads)
        self.tile = QSpinBox()
        self.tile.setRange(0, 65536)
        self.tile.setSingleStep(64)
        self.tile.setSpecialValueText("engine's choice")
        self.tile.setToolTip("Tile edge in SNPs (--tile): the unit of work between progress updates and "
                             "cancel checks. Leave it to the engine unless you know why.")
        form.addRow("Tile (SNPs)", self.tile)
        self.gpus = QLineEdit()
        self.gpus.setPlaceholderText("all")
        self.gpus.setToolTip(GPUS_TIP)
        form.addRow(_tip_label("GPUs", GPUS_TIP), self.gpus)
        self.dask = QLineEdit()
        self.dask.setPlaceholderText("off (one process)")
        self.dask.setToolTip(DASK_TIP)
        form.addRow(_tip_label("Dask", DASK_TIP), self.dask)
        lay.addWidget(eng_box)
        # Every choice as narrow as the dock needs: the longest item of any one set the panel's
        # width, wider than a 1366-pixel screen's left column, and the right edge was cut off.
        for combo in settings_widget.findChildren(QComboBox):
            if combo.sizeAdjustPolicy() != QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon:
                _narrow(combo)

        buttons = QHBoxLayout()
        self.run_button = QPushButton("Run scan")
        self.run_button.setDefault(True)
        self.run_button.setToolTip("Test every SNP pair of the study with these settings (Ctrl+R)")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.setToolTip("Stop the scan at the next tile; the previous results stay as they were")
        self.defaults_button = QPushButton("Defaults")
        self.defaults_button.setToolTip("Back to PLINK 1.9's defaults")
        for b in (self.run_button, self.cancel_button, self.defaults_button):
            buttons.addWidget(b)
        lay.addStretch(1)
        outer.addLayout(buttons)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setFormat("%p %")
        outer.addWidget(self.progress)
        self.rate_label = QLabel(" ")
        self.rate_label.setWordWrap(True)
        self.rate_label.setMinimumHeight(2 * self.fontMetrics().height() + 4)
        outer.addWidget(self.rate_label)

        # What the user changed, apart from what the panel set itself (a study's remembered
        # inputs, a test's default --epi1): a typed value is the user's even when it equals a default.
        self._applying = False
        self.epi1_typed = False
        self.pending: set[str] = set()  # study-bound inputs changed since a study's were applied
        self.epi1.textChanged.connect(lambda _t: self._typed("epi1"))
        self.allow_no_sex.toggled.connect(lambda _on: self._typed("allow_no_sex"))
        for name in STUDY_FILES:
            self.file_edits[name].textChanged.connect(lambda _t, n=name: self._typed(n))
        for name in STUDY_TEXTS:
            getattr(self, name).textChanged.connect(lambda _t, n=name: self._typed(n))
        self.mpheno.valueChanged.connect(lambda _v: self._typed("mpheno"))
        self.keep_allele_order.toggled.connect(lambda _on: self._typed("keep_allele_order"))
        self.set_mode.currentIndexChanged.connect(lambda _i: self._typed("set_mode"))

        self.run_button.clicked.connect(self.runRequested)
        self.cancel_button.clicked.connect(self.cancelRequested)
        self.defaults_button.clicked.connect(self.restore_defaults)

    def _file_row(self, name: str):
        flag, tip = FILE_TIPS[name]
        edit = QLineEdit()
        edit.setPlaceholderText("none")
        edit.setToolTip(tip)
        browse = QPushButton("…")
        browse.setToolTip(f"Choose the {flag} file")
        browse.setFixedWidth(28)
        browse.clicked.connect(lambda: self._browse(edit, flag))
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(edit, 1)
        row.addWidget(browse)
        self.file_edits[name] = edit
        self.file_buttons[name] = browse
        return _tip_label(flag, tip), row

    def _pheno_column_enabled(self, _text: str = "") -> None:
        on = bool(self.file_edits["pheno"].text().strip())
        self.pheno_name.setEnabled(on)
        self.mpheno.setEnabled(on)

    def _perm_enabled(self, _value: int = 0) -> None:
        on = self.perm.value() > 0
        for w in (self.perm_seed, self.file_edits["within"], self.file_buttons["within"]):
            w.setEnabled(on)

    def _set_mode_enabled(self, _text: str = "") -> None:
        self.set_mode.setEnabled(any(self.file_edits[n].text().strip() for n in ("set", "make_set")))

    def _browse(self, edit: QLineEdit, flag: str) -> None:
        path, _ = QFileDialog.getOpenFileName(self, f"Choose the {flag} file", edit.text() or "")
        if path:
            edit.setText(path)

    def _file(self, name: str) -> str | None:
        return self._checked_file(name, self.file_edits[name].text())

    @staticmethod
    def _checked_file(name: str, text: str | None) -> str | None:
        text = (text or "").strip()
        if text and not os.path.isfile(text):
            raise ValueError(f"{FILE_TIPS[name][0]}: no such file: {text}")
        return text or None

    # -- what the user typed ----------------------------------------------------------------------
    def _typed(self, name: str) -> None:
        if self._applying:
            return
        if name == "epi1":
            self.epi1_typed = True
        else:
            self.pending.add(name)

    def _set_quietly(self, fn) -> None:
        """Run ``fn`` (which sets widgets) without counting its changes as typed."""
        self._applying, was = True, self._applying
        try:
            fn()
        finally:
            self._applying = was

    def study_inputs(self) -> dict:
        """The study-bound inputs as shown (gui/state.py's ``STUDY_INPUTS``)."""
        return {"allow_no_sex": self.allow_no_sex.isChecked(), "keep_allele_order": self.keep_allele_order.isChecked(),
                "mpheno": str(self.mpheno.value() or ""), "set_mode": self.set_mode.currentData(),
                **{n: self.file_edits[n].text().strip() for n in STUDY_FILES},
                **{n: getattr(self, n).text().strip() for n in STUDY_TEXTS}}

    def pending_inputs(self) -> dict:
        """The study-bound inputs changed since a study's were shown: meant for the next study opened."""
        now = self.study_inputs()
        return {k: now[k] for k in self.pending}

    def apply_study_inputs(self, values: dict) -> None:
        """Show a study's own inputs (nothing typed is left pending)."""
        def put():
            self.allow_no_sex.setChecked(bool(values.get("allow_no_sex", False)))
            self.keep_allele_order.setChecked(bool(values.get("keep_allele_order", False)))
            for n in STUDY_FILES:
                self.file_edits[n].setText(values.get(n) or "")
            for n in STUDY_TEXTS:
                getattr(self, n).setText(values.get(n) or "")
            idx = self.set_mode.findData(values.get("set_mode") or "set-by-all")
            self.set_mode.setCurrentIndex(max(idx, 0))
            try:
                self.mpheno.setValue(int(values.get("mpheno") or 0))
            except ValueError:
                self.mpheno.setValue(0)

        self._set_quietly(put)
        self.pending.clear()

    def follow_test_default(self, quantitative: bool) -> str | None:
        """--epi1 not typed follows the loaded study's test (PLINK's defaults: 5e-6 for boost, 1e-4
        for the linear QT test); returns the value set, ``None`` when the typed one stays."""
        want = "1e-4" if quantitative else "5e-6"
        if self.epi1_typed or self.epi1.text() == want:
            return None
        self._set_quietly(lambda: self.epi1.setText(want))
        return want

    # -- values ---------------------------------------------------------------------------------
    def set_gpu_info(self, ok: bool, description: str) -> None:
        current = self.engine.currentData() if self.engine.count() else "auto"
        self.engine.clear()
        self.engine.addItem("Auto" + (f" (GPU: {description})" if ok else " (CPU: no GPU found)"), "auto")
        self.engine.addItem("CPU", "cpu")
        self.engine.addItem(f"GPU: {description}" if ok else "GPU (not available)", "gpu")
        gpu_item = self.engine.model().item(2)
        gpu_item.setEnabled(ok)
        if not ok:
            gpu_item.setToolTip(description)
        idx = self.engine.findData(current)
        self.engine.setCurrentIndex(idx if idx >= 0 and (ok or current != "gpu") else 0)

    def qc_options(self, inputs: dict | None = None) -> QCOptions:
        """The QC settings; raises ValueError naming the flag when a value is not usable.
        ``inputs``: study-bound inputs (--keep, --remove, --keep-allele-order) instead of the panel's."""
        given = {**self.study_inputs(), **(inputs or {})}
        vals = {}
        for name, (flag, _, _) in QC_FIELDS.items():
            if self.qc_checks[name].isChecked():
                text = self.qc_edits[name].text()
                try:
                    v = float(text)
                except ValueError:
                    raise ValueError(f"{flag}: '{text}' is not a number") from None
                if not 0.0 <= v <= 1.0:
                    raise ValueError(f"{flag} must be between 0 and 1, got {text}")
                vals[name] = v
        chrom = self.chrom.text().strip()
        if chrom:
            from gboost.cli import _parse_chr  # the CLI's own --chr grammar (1-4,22)
            from gboost.errors import InputError

            try:
                vals["chrom"] = _parse_chr(chrom, self.allow_extra_chr.isChecked())
            except InputError as exc:
                raise ValueError(exc.message) from None
        return QCOptions(extract=self._file("extract"), exclude=self._file("exclude"),
                         allow_extra_chr=self.allow_extra_chr.isChecked(), keep=self._checked_file("keep", given["keep"]),
                         remove=self._checked_file("remove", given["remove"]),
                         keep_fam=self._checked_file("keep_fam", given["keep_fam"]),
                         remove_fam=self._checked_file("remove_fam", given["remove_fam"]),
                         keep_allele_order=bool(given["keep_allele_order"]), **vals)

    def run_options(self, inputs: dict | None = None) -> RunOptions:
        """Every setting of the scan; raises ValueError naming the flag when a value is not usable.
        ``inputs``: study-bound inputs to use instead of the panel's (another study's, to open it)."""
        v = {**self.study_inputs(), **(inputs or {})}
        names = [n.strip() for n in str(v["covar_name"]).split(",") if n.strip()] or None
        from gboost.pipeline import validate as V
        from gui.format_options import parse_hard_call

        text = str(v["covar_number"]).strip()
        numbers = V.number_list("--covar-number", text) if text else None  # the CLI's grammar (1-3,5)
        pheno, covar = self._checked_file("pheno", v["pheno"]), self._checked_file("covar", v["covar"])
        pheno_name = str(v["pheno_name"]).strip() or None
        mpheno = int(v["mpheno"]) if str(v["mpheno"]).strip() else None
        # the CLI's checks of the flags that pick columns, in its words (ValueError)
        V.check_covar_numbers(numbers, names, covar)
        V.check_pheno_column(pheno, pheno_name, mpheno)
        opts = RunOptions(qc=self.qc_options(v), params=self.scan_params(v), allow_no_sex=bool(v["allow_no_sex"]),
                          pheno=pheno, pheno_name=pheno_name, mpheno=mpheno, covar=covar, covar_name=names,
                          covar_number=numbers, ids=self.id_mode.id_mode(),
                          set_file=self._checked_file("set", v["set"]),
                          make_set=self._checked_file("make_set", v["make_set"]), set_mode=v["set_mode"] or "set-by-all",
                          hard_call_threshold=parse_hard_call(self.hard_call.text()))
        opts.check_sets()
        opts.check_perm()
        return opts

    def scan_params(self, inputs: dict | None = None) -> ScanParams:
        """The scan settings; raises ValueError naming the flag when a value is not usable.
        ``inputs``: study-bound inputs (the --within file) instead of the panel's. Without
        permutations their seed and clusters are not the scan's (their controls are off)."""
        perm = self.perm.value()
        within = self._checked_file("within", {**self.study_inputs(), **(inputs or {})}["within"]) if perm else None
        return ScanParams(epi1=_parse_p(self.epi1.text(), "--epi1"), epi2=_parse_p(self.epi2.text(), "--epi2"),
                          device=self.engine.currentData(), threads=self.threads.value() or None,
                          tile=self.tile.value() or None, allelic=bool(self.marginal.currentData()),
                          gpus=_gpu_ids(self.gpus.text()), dask=self.dask.text().strip() or None,
                          min_distance_kb=self.min_distance.value() or None,
                          max_r2=_optional_float(self.max_r2.text(), "--max-r2"),
                          calibration_pairs=self.calibration.value(), perm=perm,
                          perm_seed=self.perm_seed.value() if perm else 0, within=within)

    def restore_defaults(self) -> None:
        self._restore_defaults()
        self.epi1_typed = False

    def _restore_defaults(self) -> None:
        for name, (_, value, _) in QC_FIELDS.items():
            self.qc_checks[name].setChecked(False)
            self.qc_edits[name].setText(value)
        self.epi1.setText("5e-6")
        self.epi2.setText("0.01")
        self.marginal.setCurrentIndex(0)
        self.engine.setCurrentIndex(0)
        self.threads.setValue(0)
        self.tile.setValue(0)
        for edit in (*self.file_edits.values(), self.covar_name, self.covar_number, self.pheno_name, self.chrom,
                     self.max_r2, self.gpus, self.dask):
            edit.clear()
        self.mpheno.setValue(0)
        self.keep_allele_order.setChecked(False)
        self.set_mode.setCurrentIndex(0)
        self.min_distance.setValue(0.0)
        self.calibration.setValue(ScanParams.calibration_pairs)
        self.perm.setValue(0)
        self.perm_seed.setValue(0)
        self.allow_no_sex.setChecked(False)
        self.allow_extra_chr.setChecked(False)
        self.id_mode.reset()
        self.hard_call.setText("0.1")

    def save_settings(self) -> None:
        for name in QC_FIELDS:
            settings.set_value(f"run/{name}_on", self.qc_checks[name].isChecked())
            settings.set_value(f"run/{name}", self.qc_edits[name].text())
        settings.set_value("run/epi1", self.epi1.text())
        settings.set_value("run/epi1_typed", self.epi1_typed)
        settings.set_value("run/epi2", self.epi2.text())
        settings.set_value("run/allow_extra_chr", self.allow_extra_chr.isChecked())
        settings.set_value("run/allelic", bool(self.marginal.currentData()))
        settings.set_value("run/device", self.engine.currentData())
        settings.set_value("run/threads", self.threads.value())
        settings.set_value("run/calibration_pairs", self.calibration.value())
        settings.set_value("run/perm", self.perm.value())
        settings.set_value("run/perm_seed", self.perm_seed.value())

    def load_settings(self) -> None:
        def truthy(v):
            return v is True or str(v).lower() == "true"

        for name in QC_FIELDS:
            self.qc_checks[name].setChecked(truthy(settings.value(f"run/{name}_on", False)))
            self.qc_edits[name].setText(str(settings.value(f"run/{name}", QC_FIELDS[name][1])))
        epi1 = str(settings.value("run/epi1", "5e-6"))
        self._set_quietly(lambda: self.epi1.setText(epi1))
        self.epi1_typed = truthy(settings.value("run/epi1_typed", epi1 not in ("5e-6", "1e-4")))
        self.epi2.setText(str(settings.value("run/epi2", "0.01")))
        self.allow_extra_chr.setChecked(truthy(settings.value("run/allow_extra_chr", False)))
        self.marginal.setCurrentIndex(1 if truthy(settings.value("run/allelic", False)) else 0)
        idx = self.engine.findData(str(settings.value("run/device", "auto")))
        if idx >= 0 and self.engine.model().item(idx).isEnabled():
            self.engine.setCurrentIndex(idx)
        try:
            self.threads.setValue(int(settings.value("run/threads", 0)))
        except (TypeError, ValueError):
            self.threads.setValue(0)
        try:
            self.calibration.setValue(int(settings.value("run/calibration_pairs", ScanParams.calibration_pairs)))
        except (TypeError, ValueError):
            self.calibration.setValue(ScanParams.calibration_pairs)
        for box, key in ((self.perm, "run/perm"), (self.perm_seed, "run/perm_seed")):
            try:
                box.setValue(int(settings.value(key, 0)))
            except (TypeError, ValueError):
                box.setValue(0)

    # -- progress -------------------------------------------------------------------------------
    def set_running(self, running: bool, scan: bool = False) -> None:
        """Buttons for work in flight; ``scan``: a scan starts (the bar and read-out are its; other
        work, an export, leaves the last scan's read-out as it was)."""
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running and scan)
        self.defaults_button.setEnabled(not running)
        if running and scan:
            self._perms_planned = self.perm.value()  # (the read-out of this scan's stages)
            self.progress.setRange(0, 1000)
            self.progress.setValue(0)
            self.progress.setFormat("%p %")
            self.rate_label.setText("Starting…")
        elif not running and self.progress.maximum() == 0:
            self.progress.setRange(0, 1000)  # a scan that ended in its last stage: no busy bar left
            self.progress.setFormat("%p %")

    def show_status(self, text: str) -> None:
        self.rate_label.setText(text)

    _perms_planned = 0

    def show_progress(self, ev) -> None:
        """Draw a :class:`gboost.pipeline.progress.Progress` event: a screen's tiles, or --perm's
        permutations (``ev.unit``), which follow the screen with a bar of their own."""
        if getattr(ev, "unit", "pairs") == "permutations":
            self._show_permutations(ev)
            return
        if ev.fraction >= 1.0:
            # Every pair screened; the exact tests of the survivors, the covariate refit and the
            # results follow with no tile events: a busy bar that says so, not "100 %, ETA 00:00".
            self.progress.setRange(0, 0)
            self.progress.setFormat("finishing…")
            then = (f", then {self._perms_planned:,} permutations" if self._perms_planned
                    else ", covariates, results")
            self.rate_label.setText(f"All {ev.pairs_total:,} pairs screened in {format_duration(ev.elapsed)} · "
                                    f"finishing: exact tests of the pairs that passed{then}…")
            return
        self.progress.setRange(0, 1000)
        self.progress.setFormat("%p %")
        self.progress.setValue(int(round(1000 * ev.fraction)))
        self.rate_label.setText(f"{ev.pairs_done:,} of {ev.pairs_total:,} pairs · {ev.pairs_per_s:,.3g} pairs/s · "
                                f"elapsed {format_duration(ev.elapsed)} · ETA {format_duration(ev.eta)}")

    def _show_permutations(self, ev) -> None:
        done, total = ev.pairs_done, ev.pairs_total
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat("%v of %m permutations")
        if done >= total:
            self.rate_label.setText(f"All {total:,} permutations done · finishing: EMP2 and the results…")
            return
        rate = ev.pairs_per_s
        pace = f"{1 / rate:.3g} s each" if rate > 0 else "timing the first"
        self.rate_label.setText(f"Permutation {done:,} of {total:,} · {pace} · elapsed {format_duration(ev.elapsed)} · "
                                f"ETA {format_duration(ev.eta)}")

    def show_done(self, text: str) -> None:
        """A finished scan: a full bar and what it found."""
        self.progress.setRange(0, 1000)
        self.progress.setFormat("%p %")
        self.progress.setValue(self.progress.maximum())
        self.rate_label.setText(text)
