"""The Run panel's settings for reading VCF and BGEN files (docs/FORMATS.md): how their
one-part sample IDs become FID/IID (PLINK 2's --double-id, --const-fid, --id-delim) and the BGEN
hard-call threshold (--hard-call-threshold). They matter only when such a file is opened."""
from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLineEdit, QWidget

from gboost.readers.sample_ids import IdMode

IDS_TIP = ("How a VCF's or BGEN's sample IDs become FID and IID, as PLINK 2 imports them: by default FID 0 "
           "and the whole ID as IID; --double-id: FID = IID = the ID; --const-fid ID: FID = ID; --id-delim D: "
           "split FID<D>IID at D (default _; plink2 --export vcf writes FID_IID). Your --pheno file names "
           "samples by these FID/IID.")
HARD_CALL_TIP = ("--hard-call-threshold: a BGEN dosage within this distance of an integer is called, the rest "
                 "are missing (PLINK 2's meaning; default 0.1).")
_MODES = [("FID 0 (PLINK 2's default)", None), ("--double-id", "double"), ("--const-fid", "const"),
          ("--id-delim", "delim")]


class IdModeEdit(QWidget):
    """A choice of PLINK 2's sample-ID flags, with the FID or the delimiter they take."""

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.mode = QComboBox()
        for text, data in _MODES:
            self.mode.addItem(text, data)
        self.value = QLineEdit()
        self.value.setPlaceholderText("ID or D")
        self.value.setMaximumWidth(70)
        # narrow: it shares the Run dock's row with the FID field (the popup shows the whole names)
        self.mode.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.mode.setMinimumContentsLength(6)
        for w in (self, self.mode, self.value):
            w.setToolTip(IDS_TIP)
        lay.addWidget(self.mode, 1)
        lay.addWidget(self.value)

    def id_mode(self) -> IdMode:
        """The chosen mode; raises ValueError naming the flag when the pair is unusable."""
        kind, value = self.mode.currentData(), self.value.text().strip()
        if kind == "double":
            return IdMode(double_id=True)
        if kind == "const":
            return IdMode(const_fid=value or "0")
        if kind == "delim":
            if len(value or "_") != 1:
                raise ValueError(f"--id-delim takes one character, not {value!r}")
            return IdMode(id_delim=value or "_")
        return IdMode()

    def reset(self) -> None:
        self.mode.setCurrentIndex(0)
        self.value.clear()


def hard_call_edit() -> QLineEdit:
    edit = QLineEdit("0.1")
    edit.setToolTip(HARD_CALL_TIP)
    return edit


def parse_hard_call(text: str) -> float:
    try:
        v = float(text.strip())
    except ValueError:
        raise ValueError(f"--hard-call-threshold: '{text}' is not a number") from None
    if not 0 <= v < 0.5:
        raise ValueError(f"--hard-call-threshold must be in [0, 0.5), got {text}")
    return v


def id_mode_args(ids: IdMode) -> list[str]:
    """The command-line flags of a mode (none for PLINK 2's default)."""
    if ids.double_id:
        return ["--double-id"]
    if ids.const_fid is not None:
        return ["--const-fid", ids.const_fid]
    if ids.id_delim is not None:
        return ["--id-delim", ids.id_delim]
    return []
