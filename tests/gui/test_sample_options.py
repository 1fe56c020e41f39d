"""The Run panel's PLINK sample and column flags (--keep, --remove, --pheno-name, --mpheno,
--covar-number, --keep-allele-order): a scan with each gives the CLI's pairs.tsv with the same flag,
the Log's reproducing command names it, it is kept per study, and a bad file ends in a dialog."""
import shlex

import numpy as np
import pytest

from guihelpers import EPI1, load, scan
from gui import settings
from gui.loading import canonical


def _fam(prefix):
    with open(prefix + ".fam") as f:
        return [line.split()[:2] for line in f]


def _cli_pairs(prefix, out, *flags, epi1=EPI1):
    from gboost.cli import main

    assert main(["scan", "--bfile", prefix, "--out", str(out), "--device", "cpu", "--epi1", epi1,
                 "--calibration-pairs", "0", *flags, "--quiet"]) == 0
    return (out / "pairs.tsv").read_bytes()


def _gui_pairs(qtbot, window, prefix, tmp_path, epi1=EPI1):
    rp = window.run_panel
    rp.engine.setCurrentIndex(rp.engine.findData("cpu"))
    rp.calibration.setValue(0)
    load(qtbot, window, prefix)
    rp.epi1.setText(epi1)
    result = scan(qtbot, window)
    out = tmp_path / "gui_pairs.tsv"
    with qtbot.waitSignal(window.exportFinished, timeout=30000):
        assert window.export_file("pairs_tsv", str(out))
    return result, out.read_bytes()


def _logged_command(window) -> list[str]:
    """The Log's ``Settings: gboost scan ...`` line of the last scan, as arguments."""
    text = window.log_view.toPlainText()
    line = [ln for ln in text.splitlines() if "Settings: gboost scan" in ln][-1]
    return shlex.split(line.split("Settings: ", 1)[1])


@pytest.fixture
def pheno_file(study_prefix, tmp_path):
    """Two phenotype columns with a header: P1 the .fam's own status, P2 another case/control split."""
    rng = np.random.default_rng(5)
    path = tmp_path / "pheno.txt"
    with open(study_prefix + ".fam") as f:
        rows = [line.split() for line in f]
    path.write_text("FID IID P1 P2\n" + "".join(f"{r[0]} {r[1]} {r[5]} {rng.integers(1, 3)}\n" for r in rows))
    return str(path)


@pytest.fixture
def covar_file(study_prefix, tmp_path):
    rng = np.random.default_rng(7)
    path = tmp_path / "covar.txt"
    path.write_text("FID IID age sex2 pc1\n" + "".join(
        f"{fid} {iid} {rng.integers(20, 70)} {rng.integers(0, 2)} {rng.normal():.4f}\n"
        for fid, iid in _fam(study_prefix)))
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--keep", "--remove", "--keep-fam", "--remove-fam"])
def test_a_sample_list_gives_the_clis_pairs(qtbot, window, study_prefix, tmp_path, flag):
    ids = _fam(study_prefix)
    assert len({fid for fid, _ in ids}) == len(ids)  # one sample a family: a family list picks samples alike
    listed = tmp_path / "samples.txt"
    listed.write_text("".join((f"{fid}\n" if flag.endswith("-fam") else f"{fid} {iid}\n") for fid, iid in ids[::3]))
    want = _cli_pairs(study_prefix, tmp_path / "cli", flag, str(listed))
    assert want != _cli_pairs(study_prefix, tmp_path / "cli0")  # the flag changes the scan
    name = flag[2:].replace("-", "_")
    window.run_panel.file_edits[name].setText(str(listed))
    result, got = _gui_pairs(qtbot, window, study_prefix, tmp_path)
    assert got == want
    n = len(ids[::3])
    assert result.study.n_samples == (n if flag.startswith("--keep") else len(ids) - n)
    args = _logged_command(window)
    assert args[args.index(flag) + 1] == str(listed)
    assert settings.study_inputs(canonical(study_prefix), {name: ""})[name] == str(listed)


@pytest.mark.slow
@pytest.mark.parametrize("flags", [("--pheno-name", "P2"), ("--mpheno", "2")])
def test_a_pheno_column_gives_the_clis_pairs(qtbot, window, study_prefix, pheno_file, tmp_path, flags):
    want = _cli_pairs(study_prefix, tmp_path / "cli", "--pheno", pheno_file, *flags)
    assert want != _cli_pairs(study_prefix, tmp_path / "cli0", "--pheno", pheno_file)
    rp = window.run_panel
    assert not rp.pheno_name.isEnabled() and not rp.mpheno.isEnabled()  # a column of no file: off
    rp.file_edits["pheno"].setText(pheno_file)
    assert rp.pheno_name.isEnabled() and rp.mpheno.isEnabled()
    if flags[0] == "--pheno-name":
        rp.pheno_name.setText(flags[1])
    else:
        rp.mpheno.setValue(int(flags[1]))
    _, got = _gui_pairs(qtbot, window, study_prefix, tmp_path)
    assert got == want
    args = _logged_command(window)
    assert args[args.index(flags[0]) + 1] == flags[1]


@pytest.mark.slow
def test_covar_number_gives_the_clis_pairs(qtbot, window, study_prefix, covar_file, tmp_path):
    want = _cli_pairs(study_prefix, tmp_path / "cli", "--covar", covar_file, "--covar-number", "1,3")
    assert want != _cli_pairs(study_prefix, tmp_path / "cli0", "--covar", covar_file)
    rp = window.run_panel
    rp.file_edits["covar"].setText(covar_file)
    rp.covar_number.setText("1,3")
    result, got = _gui_pairs(qtbot, window, study_prefix, tmp_path)
    assert got == want
    assert result.covariate_names == ["age", "pc1"]
    args = _logged_command(window)
    assert args[args.index("--covar-number") + 1] == "1,3"


@pytest.fixture
def major_first_prefix(tmp_path):
    """A quantitative-trait study whose .bed counts the major allele as the .bim's first for its even
    SNPs: PLINK makes A1 the minor allele unless --keep-allele-order keeps the .bim's first."""
    from gboost.data.simulate import simulate_qt_study

    n = 300
    st = simulate_qt_study(40, n, seed=21, chromosomes=2, missing_rate=0.01, effects=[(3, 30, 0.6)])
    prefix = str(tmp_path / "qt")
    st.write(prefix)
    raw = np.fromfile(prefix + ".bed", np.uint8)
    per_snp = (n + 3) // 4
    body = raw[3:].reshape(-1, per_snp)
    codes = np.stack([(body >> (2 * k)) & 3 for k in range(4)])
    hom = (codes == 0) | (codes == 3)  # the two homozygotes trade places (het 2, missing 1 stay)
    codes[:, ::2] = np.where(hom[:, ::2], 3 - codes[:, ::2], codes[:, ::2])
    body[:] = sum(codes[k] << (2 * k) for k in range(4)).astype(np.uint8)
    raw.tofile(prefix + ".bed")
    return prefix


@pytest.mark.slow
def test_keep_allele_order_gives_the_clis_pairs(qtbot, window, major_first_prefix, tmp_path):
    want = _cli_pairs(major_first_prefix, tmp_path / "cli", "--keep-allele-order", epi1="0.01")
    assert want != _cli_pairs(major_first_prefix, tmp_path / "cli0", epi1="0.01")
    window.run_panel.keep_allele_order.setChecked(True)
    _, got = _gui_pairs(qtbot, window, major_first_prefix, tmp_path, epi1="0.01")
    assert got == want
    assert "--keep-allele-order" in _logged_command(window)
    assert settings.study_inputs(canonical(major_first_prefix), {"keep_allele_order": False})["keep_allele_order"]


def test_the_new_inputs_are_kept_per_study(qtbot, window, study_prefix, pheno_file, covar_file, tmp_path):
    from gboost.data.simulate import simulate_study

    other = str(tmp_path / "other")
    simulate_study(30, 50, 50, seed=3).write(other)
    listed = tmp_path / "keep.txt"
    listed.write_text("".join(f"{fid} {iid}\n" for fid, iid in _fam(study_prefix)[:400]))
    key = canonical(study_prefix)
    settings.set_study_inputs(key, {"keep": str(listed), "pheno": pheno_file, "pheno_name": "P2",
                                    "covar": covar_file, "covar_number": "2", "keep_allele_order": True})
    rp = window.run_panel
    study = load(qtbot, window, study_prefix)
    assert study.n_samples == 400
    assert rp.file_edits["keep"].text() == str(listed) and rp.pheno_name.text() == "P2"
    assert rp.covar_number.text() == "2" and rp.keep_allele_order.isChecked()
    opts = rp.run_options()
    assert (opts.qc.keep, opts.pheno_name, opts.covar_number, opts.qc.keep_allele_order) == \
        (str(listed), "P2", [2], True)
    load(qtbot, window, other)  # another study: PLINK's defaults again
    assert not rp.file_edits["keep"].text() and not rp.pheno_name.text() and not rp.covar_number.text()
    assert not rp.keep_allele_order.isChecked() and rp.mpheno.value() == 0


def test_bad_values_name_the_flag(window, study_prefix, pheno_file, covar_file, tmp_path):
    rp = window.run_panel
    rp.file_edits["keep"].setText(str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="--keep: no such file"):
        rp.run_options()
    rp.file_edits["keep"].clear()
    rp.file_edits["covar"].setText(covar_file)
    rp.covar_number.setText("3-1")
    with pytest.raises(ValueError, match="--covar-number"):
        rp.run_options()
    rp.covar_number.setText("1")
    rp.covar_name.setText("age")
    with pytest.raises(ValueError, match="--covar-name and --covar-number"):
        rp.run_options()
    rp.covar_name.clear()
    rp.file_edits["pheno"].setText(pheno_file)
    rp.pheno_name.setText("P2")
    rp.mpheno.setValue(2)
    with pytest.raises(ValueError, match="--pheno-name P2 and --mpheno 2"):
        rp.run_options()


@pytest.mark.slow
@pytest.mark.parametrize("what", ["keep", "pheno_name"])
def test_a_bad_file_ends_in_a_dialog(qtbot, window, study_prefix, pheno_file, tmp_path, what):
    rp = window.run_panel
    if what == "keep":
        listed = tmp_path / "nobody.txt"
        listed.write_text("nofam nobody\n")
        rp.file_edits["keep"].setText(str(listed))
        named = str(listed)
    else:
        rp.file_edits["pheno"].setText(pheno_file)
        rp.pheno_name.setText("NOPE")
        named = "NOPE"
    with qtbot.waitSignal(window.taskFailed, timeout=30000) as failed:
        assert window.open_path(study_prefix)
    title, message = failed.args
    assert named in message and "Traceback" not in message
    assert window.error_box is not None and window.study is None


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["set-by-all", "set-by-set"])
def test_a_candidate_set_scan_gives_the_clis_pairs(qtbot, window, study_prefix, tmp_path, mode):
    with open(study_prefix + ".bim") as f:
        snps = [line.split()[1] for line in f]
    sets = tmp_path / "sets.txt"
    # set-by-all: one set; set-by-set: two (a planted pair's SNPs, 20 and 200, one in each)
    text = "A\n" + "\n".join(snps[10:30]) + "\nEND\n"
    if mode == "set-by-set":
        text += "\nB\n" + "\n".join(snps[190:215]) + "\nEND\n"
    sets.write_text(text)
    want = _cli_pairs(study_prefix, tmp_path / "cli", "--set", str(sets), f"--{mode}")
    assert want != _cli_pairs(study_prefix, tmp_path / "cli0")
    rp = window.run_panel
    assert not rp.set_mode.isEnabled()
    rp.file_edits["set"].setText(str(sets))
    assert rp.set_mode.isEnabled()
    rp.set_mode.setCurrentIndex(rp.set_mode.findData(mode))
    result, got = _gui_pairs(qtbot, window, study_prefix, tmp_path)
    assert got == want
    assert result.study.rect is not None
    assert window.pairs.model.rowCount() == len(want.splitlines()) - 1 > 0  # the table shows the set scan's pairs
    for kind, name in (("epi_cc", "pairs.epi.cc"), ("epi_summary", "pairs.epi.cc.summary")):
        out = tmp_path / name
        with qtbot.waitSignal(window.exportFinished, timeout=30000):
            assert window.export_file(kind, str(out))
        assert out.read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    log = window.log_view.toPlainText()
    assert window.last_error is None and "not drawn" not in log
    assert f"({result.study.rect.n_pairs():,} pairs)" in log
    args = _logged_command(window)
    assert args[args.index("--set") + 1] == str(sets) and f"--{mode}" in args
    saved = settings.study_inputs(canonical(study_prefix), {"set": "", "set_mode": ""})
    assert saved == {"set": str(sets), "set_mode": mode}


@pytest.mark.slow
def test_a_bad_set_file_ends_in_a_dialog(qtbot, window, study_prefix, tmp_path):
    sets = tmp_path / "sets.txt"
    sets.write_text("A\nsnp1\nEND\nB\nsnp2\nEND\n")  # two sets: set-by-all takes one
    rp = window.run_panel
    rp.file_edits["set"].setText(str(sets))
    load(qtbot, window, study_prefix)
    with qtbot.waitSignal(window.taskFailed, timeout=30000) as failed:
        assert window.start_scan()
    title, message = failed.args
    assert str(sets) in message and "set-by-all needs exactly one set" in message and "Traceback" not in message
    assert window.error_box is not None and window.result is None


def test_sample_lists_go_with_the_qc_filters(window, study_prefix, tmp_path):
    """--keep / --remove and a ticked QC filter together reach QCOptions (the two are read in one place)."""
    listed = tmp_path / "keep.txt"
    listed.write_text("".join(f"{fid} {iid}\n" for fid, iid in _fam(study_prefix)[:10]))
    rp = window.run_panel
    rp.qc_checks["maf"].setChecked(True)
    rp.qc_edits["maf"].setText("0.2")
    rp.file_edits["keep"].setText(str(listed))
    rp.keep_allele_order.setChecked(True)
    qc = rp.run_options().qc
    assert (qc.maf, qc.keep, qc.remove, qc.keep_allele_order) == (0.2, str(listed), None, True)
    assert rp.run_options().cli_args()[:5] == ["--maf", "0.2", "--keep", str(listed), "--keep-allele-order"]


@pytest.mark.slow
def test_a_range_set_scan_gives_the_clis_pairs(qtbot, window, study_prefix, tmp_path):
    with open(study_prefix + ".bim") as f:
        bim = [line.split() for line in f]
    ranges = tmp_path / "ranges.txt"
    ranges.write_text(f"{bim[10][0]} {bim[10][3]} {bim[40][3]} R1\n")  # one set of SNPs 10..40 (one chromosome)
    assert bim[10][0] == bim[40][0]
    want = _cli_pairs(study_prefix, tmp_path / "cli", "--make-set", str(ranges), "--set-by-all")
    rp = window.run_panel
    rp.file_edits["make_set"].setText(str(ranges))
    assert rp.set_mode.isEnabled() and rp.set_mode.currentData() == "set-by-all"
    result, got = _gui_pairs(qtbot, window, study_prefix, tmp_path)
    assert got == want and result.study.rect.n_rows == 31
    args = _logged_command(window)
    assert args[args.index("--make-set") + 1] == str(ranges) and "--set-by-all" in args


def test_one_set_file_at_a_time(window, tmp_path):
    """The CLI's rule, in its words: --set or --make-set, not both."""
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("A\nsnp1\nEND\n")
    b.write_text("1 1 100 R\n")
    rp = window.run_panel
    rp.file_edits["set"].setText(str(a))
    rp.file_edits["make_set"].setText(str(b))
    with pytest.raises(ValueError, match="--set and --make-set both given"):
        rp.run_options()
    rp.file_edits["set"].clear()
    assert rp.run_options().cli_args()[:3] == ["--make-set", str(b), "--set-by-all"]
