"""In the app: the Open dialog offers .pgen, VCF/BCF and BGEN, and a study opened from
each is the study of the .bed it was converted from (the readers' own tests compare scans)."""
import numpy as np
import pytest

from tests.helpers import PLINK2, make_formats_study, needs_plink2
from guihelpers import load
from gboost.data.inputs import open_input
from gboost.data.load import load_study
from gui.loading import OPEN_FILTER, canonical, input_files, input_kwargs


def test_input_kwargs_know_every_format(tmp_path):
    (tmp_path / "b.sample").write_text("x")
    p = str(tmp_path)
    assert input_kwargs(p + "/s.pgen") == input_kwargs(p + "/s.pvar.zst") == {"pfile": p + "/s"}
    assert input_kwargs(p + "/s.PSAM") == {"pfile": p + "/s"}
    assert input_kwargs(p + "/s.vcf.gz") == {"vcf": p + "/s.vcf.gz"}
    assert input_kwargs(p + "/s.bcf") == {"vcf": p + "/s.bcf"}
    assert input_kwargs(p + "/b.sample") == input_kwargs(p + "/b.bgen") == {"bgen": p + "/b.bgen", "sample": p + "/b.sample"}
    assert input_kwargs(p + "/c.bgen") == {"bgen": p + "/c.bgen", "sample": None}
    assert canonical(p + "/s.pvar") == p + "/s" and canonical(p + "/b.sample") == p + "/b.bgen"
    assert input_files(p + "/b.bgen") == [p + "/b.bgen", p + "/b.sample"]


def test_open_dialog_offers_every_format(window, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    seen = {}

    def fake_dialog(parent, title, start, filters):
        seen["filter"] = filters
        return "", ""  # the user cancelled

    monkeypatch.setattr(QFileDialog, "getOpenFileName", fake_dialog)
    window.open_dialog()
    for pattern in ("*.bed", "*.ped", "*.pgen", "*.pvar", "*.psam", "*.vcf", "*.vcf.gz", "*.bcf", "*.bgen", "*.sample"):
        assert pattern in seen["filter"] and pattern in OPEN_FILTER


@pytest.fixture(scope="module")
def formats(tmp_path_factory):
    if PLINK2 is None:
        pytest.skip("plink2 not on PATH (apt-get install plink2; scripts/setup.sh installs it)")
    return make_formats_study(str(tmp_path_factory.mktemp("guiformats")))


@pytest.mark.slow
@needs_plink2
@pytest.mark.parametrize("kind", ["pgen", "vcf", "bgen"])
def test_window_opens_each_format_as_the_bed(qtbot, window, formats, kind):
    pytest.importorskip({"pgen": "pgenlib", "vcf": "cyvcf2", "bgen": "cbgen"}[kind])
    path = {"pgen": formats + ".pvar", "vcf": formats + "_bgz.vcf.gz", "bgen": formats + ".sample"}[kind]
    if kind == "vcf":  # a VCF has no phenotypes: the Run panel's --pheno gives them
        window.run_panel.file_edits["pheno"].setText(formats + "_vcf.pheno")
    window.run_panel.allow_no_sex.setChecked(kind != "pgen")
    study = load(qtbot, window, path)
    bed = load_study(open_input(bfile=formats + ("_nosex" if kind == "vcf" else ""), allow_no_sex=kind != "pgen"))
    assert study.n_snps == bed.n_snps and study.n_samples == bed.n_samples
    assert (study.variants.snp == bed.variants.snp).all()
    assert np.array_equal(study.planes, bed.planes)


@pytest.mark.slow
def test_run_panel_sample_id_mode_and_threshold_reach_open_input(window):
    from gboost.readers.sample_ids import IdMode

    rp = window.run_panel
    rp.id_mode.mode.setCurrentIndex(rp.id_mode.mode.findData("delim"))
    rp.hard_call.setText("0.25")
    opts = rp.run_options()
    assert opts.input_kwargs()["ids"] == IdMode(id_delim="_") and opts.input_kwargs()["hard_call_threshold"] == 0.25
    assert opts.cli_args()[:4] == ["--id-delim", "_", "--hard-call-threshold", "0.25"]
    rp.id_mode.mode.setCurrentIndex(rp.id_mode.mode.findData("const"))
    rp.id_mode.value.setText("F1")
    assert rp.run_options().ids == IdMode(const_fid="F1")
    rp.hard_call.setText("0.5")
    with pytest.raises(ValueError, match="--hard-call-threshold"):
        rp.run_options()
    rp.restore_defaults()
    assert rp.run_options().ids == IdMode() and rp.run_options().hard_call_threshold == 0.1
