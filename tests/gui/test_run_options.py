"""Every scan option of the CLI in the Run panel, and the ways out of input problems."""
import shutil

import pytest

from guihelpers import EPI1, N_CASES, N_CONTROLS, load, scan
from gboost.cli import build_parser
from gui import remedies, settings
from gui.loading import canonical


@pytest.mark.slow
def test_unknown_sex_dialog_fixes_it_in_one_click_and_the_scan_runs(qtbot, window, no_sex_prefix):
    window.run_panel.epi1.setText(EPI1)
    with qtbot.waitSignal(window.taskFailed, timeout=30000) as failed:
        assert window.open_path(no_sex_prefix, run=True)
    assert "--allow-no-sex" in failed.args[1] and "unknown sex" in failed.args[1]
    box = window.error_box
    assert [b.text() for b in box.fix_buttons] == [remedies.KEEP_NO_SEX]
    with qtbot.waitSignal(window.scanFinished, timeout=60000) as done:
        box.fix_buttons[0].click()
    result = done.args[0]
    assert result.study.layout.n_case == N_CASES and result.study.layout.n_ctrl == N_CONTROLS
    assert window.run_panel.allow_no_sex.isChecked()
    assert settings.study_allow_no_sex(canonical(no_sex_prefix))


def test_allow_no_sex_is_remembered_per_study(qtbot, window, no_sex_prefix, study_prefix):
    settings.set_study_allow_no_sex(canonical(no_sex_prefix), True)
    study = load(qtbot, window, no_sex_prefix)
    assert study.layout.n_case == N_CASES and window.run_panel.allow_no_sex.isChecked()
    load(qtbot, window, study_prefix)  # another study: PLINK's default again
    assert not window.run_panel.allow_no_sex.isChecked()


def test_the_cli_names_the_flag_for_unknown_sex(no_sex_prefix, tmp_path, capsys):
    from gboost.cli import main

    assert main(["scan", "--bfile", no_sex_prefix, "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "keep phenotypes of samples of unknown sex with --allow-no-sex" in err
    assert err.count("\n") == 1


def test_every_cli_scan_option_has_a_control(window):
    """The scan subcommand's options the Run panel covers, by flag; --part/--resume/--out/--overwrite/
    --quiet and the input choice belong to the command line (the window has its own Open/Export)."""
    scan_parser = build_parser()._subparsers._group_actions[0].choices["scan"]
    flags = {s for a in scan_parser._actions for s in a.option_strings if s.startswith("--")}
    # --genotypic: the 4-df F-test of a quantitative trait's pairs, command line only so far;
    # so is --parallel (--part's other spelling): the panel has no control for it yet
    cli_only = {"--help", "--out", "--overwrite", "--resume", "--quiet", "--part", "--bfile", "--file", "--ped",
                "--map", "--boost-matrix", "--genotypic", "--pfile", "--vcf", "--bgen", "--sample",
                "--parallel",
                # PLINK's spelling of the set modes (the panel has a choice of the two): command line only
                "--fast-epistasis"}
    covered = {"--double-id", "--const-fid", "--id-delim", "--hard-call-threshold",
               "--pheno", "--covar", "--covar-name", "--allow-no-sex", "--maf", "--geno", "--mind", "--hwe",
               "--extract", "--exclude", "--chr", "--epi1", "--epi2", "--device", "--threads", "--gpus", "--dask",
               "--tile", "--min-distance", "--max-r2", "--allelic", "--calibration-pairs", "--allow-extra-chr",
               "--keep", "--remove", "--keep-fam", "--remove-fam", "--pheno-name", "--mpheno", "--covar-number", "--keep-allele-order",
               "--set", "--make-set", "--set-by-all", "--set-by-set", "--perm", "--perm-seed", "--within"}
    assert flags - cli_only == covered
    rp = window.run_panel
    controls = {"--pheno": rp.file_edits["pheno"], "--covar": rp.file_edits["covar"], "--covar-name": rp.covar_name,
                "--allow-no-sex": rp.allow_no_sex, "--extract": rp.file_edits["extract"],
                "--exclude": rp.file_edits["exclude"], "--chr": rp.chrom, "--epi1": rp.epi1, "--epi2": rp.epi2,
                "--device": rp.engine, "--threads": rp.threads, "--gpus": rp.gpus, "--dask": rp.dask, "--tile": rp.tile,
                "--min-distance": rp.min_distance, "--max-r2": rp.max_r2, "--allelic": rp.marginal,
                "--calibration-pairs": rp.calibration,
                "--double-id": rp.id_mode.mode, "--const-fid": rp.id_mode.mode, "--id-delim": rp.id_mode.value,
                "--hard-call-threshold": rp.hard_call, "--allow-extra-chr": rp.allow_extra_chr,
                "--keep": rp.file_edits["keep"], "--remove": rp.file_edits["remove"],
                "--keep-fam": rp.file_edits["keep_fam"], "--remove-fam": rp.file_edits["remove_fam"], "--pheno-name": rp.pheno_name,
                "--mpheno": rp.mpheno, "--covar-number": rp.covar_number, "--keep-allele-order": rp.keep_allele_order,
                "--set": rp.file_edits["set"], "--make-set": rp.file_edits["make_set"], "--set-by-all": rp.set_mode, "--set-by-set": rp.set_mode,
                "--perm": rp.perm, "--perm-seed": rp.perm_seed, "--within": rp.file_edits["within"],
                **{f"--{k}": rp.qc_checks[k] for k in ("maf", "geno", "mind", "hwe")}}
    assert set(controls) == covered
    for flag, widget in controls.items():
        assert widget.toolTip(), flag


def test_defaults_are_plinks(window):
    """Defaults button: every option as `gboost scan` without flags (PLINK 1.9's defaults)."""
    from gboost.pipeline.scan import ScanParams
    from gboost.data.study import QCOptions
    from gui.run_options import RunOptions

    rp = window.run_panel
    rp.epi1.setText("1e-3")
    rp.allow_no_sex.setChecked(True)
    rp.calibration.setValue(0)
    rp.dask.setText("local:2")
    rp.restore_defaults()
    opts = rp.run_options()
    assert opts == RunOptions(qc=QCOptions(), params=ScanParams(device="auto"))
    assert opts.cli_args() == ["--epi1", "5e-06", "--epi2", "0.01", "--device", "auto"]


@pytest.mark.slow
def test_run_options_reach_the_scan(qtbot, window, study_prefix, tmp_path):
    rp = window.run_panel
    keep = tmp_path / "keep.txt"
    with open(study_prefix + ".bim") as f:
        ids = [line.split()[1] for line in f]
    keep.write_text("\n".join(ids[:200]) + "\n")
    covar = tmp_path / "covar.txt"
    with open(study_prefix + ".fam") as f:
        covar.write_text("FID IID age pc1\n" + "".join(f"{l.split()[0]} {l.split()[1]} {30 + k % 40} {k % 7 - 3}\n"
                                                       for k, l in enumerate(f)))
    rp.file_edits["extract"].setText(str(keep))
    rp.chrom.setText("1-2")
    rp.file_edits["covar"].setText(str(covar))
    rp.covar_name.setText("pc1")
    rp.epi1.setText(EPI1)
    rp.min_distance.setValue(50.0)
    rp.max_r2.setText("0.8")
    rp.calibration.setValue(0)
    rp.marginal.setCurrentIndex(1)
    rp.threads.setValue(1)
    opts = rp.run_options()
    assert opts.qc.extract == str(keep) and opts.qc.chrom == ["1", "2"]
    assert opts.covar == str(covar) and opts.covar_name == ["pc1"]
    p = opts.params
    assert (p.min_distance_kb, p.max_r2, p.calibration_pairs, p.allelic, p.threads) == (50.0, 0.8, 0, True, 1)
    rp.dask.setText("local:1")
    rp.gpus.setText("0,1")
    assert rp.run_options().params.dask == "local:1" and rp.run_options().params.gpus == [0, 1]
    rp.dask.clear()
    rp.gpus.clear()
    load(qtbot, window, study_prefix)
    result = scan(qtbot, window)
    assert result.params.min_distance_kb == 50.0 and result.params.max_r2 == 0.8 and result.params.allelic
    assert result.params.calibration_pairs == 0
    assert result.study.n_snps <= 200
    assert {str(c) for c in result.study.variants.chrom} <= {"1", "2"}
    assert result.covariate_names == ["pc1"]


def test_bad_option_values_name_the_flag(window, tmp_path):
    rp = window.run_panel
    rp.gpus.setText("zero")
    with pytest.raises(ValueError, match="--gpus"):
        rp.run_options()
    rp.gpus.clear()
    rp.file_edits["covar"].setText(str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="--covar: no such file"):
        rp.run_options()


@pytest.mark.slow
def test_a_gui_scan_runs_on_dask_through_the_shared_pipeline(qtbot, window, study_prefix):
    """The Run panel's Dask address reaches the engine (gboost.pipeline.scan.run_pipeline, as --dask does):
    the scan runs on a local Dask cluster and gives the CPU engine's files."""
    from gboost.engines.cpu import CpuEngine
    from gboost.outputs.results import format_epi_cc, format_pairs_tsv, format_summary
    from gboost.pipeline.scan import run_pipeline

    rp = window.run_panel
    rp.epi1.setText(EPI1)
    rp.calibration.setValue(0)
    rp.engine.setCurrentIndex(rp.engine.findData("cpu"))
    rp.threads.setValue(1)
    rp.dask.setText("local:1")
    load(qtbot, window, study_prefix)
    result = scan(qtbot, window, timeout=180000)
    assert result.engine == "dask" and result.params.dask == "local:1"
    want = run_pipeline(result.study, result.params, engine=CpuEngine(threads=1))
    assert format_epi_cc(result) == format_epi_cc(want)
    assert format_summary(result) == format_summary(want)
    assert format_pairs_tsv(result) == format_pairs_tsv(want)


@pytest.fixture
def contig_prefix(study_prefix, tmp_path):
    """The test study with its last 20 SNPs on a contig PLINK does not know (HLA)."""
    prefix = str(tmp_path / "contig")
    for ext in (".bed", ".fam"):
        shutil.copy(study_prefix + ext, prefix + ext)
    lines = open(study_prefix + ".bim").read().splitlines()
    with open(prefix + ".bim", "w") as dst:
        for k, line in enumerate(lines):
            f = line.split("\t") if "\t" in line else line.split()
            if k >= len(lines) - 20:
                f[0] = "HLA"
            dst.write("\t".join(f) + "\n")
    return prefix


@pytest.mark.slow
def test_allow_extra_chr_in_the_run_panel_reaches_the_pipeline(qtbot, window, contig_prefix):
    panel = window.run_panel
    assert not panel.allow_extra_chr.isChecked() and not panel.run_options().qc.allow_extra_chr
    window.run_panel.epi1.setText(EPI1)
    with qtbot.waitSignal(window.taskFailed, timeout=30000) as failed:
        assert window.open_path(contig_prefix, run=True)
    assert "--allow-extra-chr" in failed.args[1] and window.study is None
    box = window.error_box
    assert [b.text() for b in box.fix_buttons] == [remedies.ALLOW_EXTRA_CHR]
    with qtbot.waitSignal(window.scanFinished, timeout=60000):
        box.fix_buttons[0].click()
    assert panel.allow_extra_chr.isChecked()
    opts = panel.run_options()
    assert opts.qc.allow_extra_chr and "--allow-extra-chr" in opts.cli_args()
    chroms = [str(c) for c in window.study.variants.chrom]
    assert chroms.count("HLA") == 20  # the contig's SNPs loaded and scanned
    # --chr may name the contig once extra names are allowed (the CLI's grammar)
    panel.chrom.setText("HLA")
    assert panel.run_options().qc.chrom == ["HLA"]
    panel.allow_extra_chr.setChecked(False)
    with pytest.raises(ValueError, match="allow-extra-chr"):
        panel.run_options()
