"""--resume of an interrupted candidate-set scan, case-control and quantitative trait: it takes up
the finished tiles of the same rectangle and writes one run's files byte for byte, and the
checkpoint's fingerprint covers the sets, so a resume with other sets, another set mode or no sets
(the whole triangle) is refused in one line naming them, never mixed with the interrupted tiles."""
from __future__ import annotations

import pytest

from gboost.cli import main
from gboost.data.candidates import read_set_file, rectangle_study
from gboost.data.inputs import open_input
from gboost.data.load import load_study
from gboost.data.simulate import simulate_qt_study, simulate_study
from gboost.errors import ScanCancelled
from gboost.pipeline.checkpoint import LEDGER, tiles_recorded
from tests.helpers import read

CC_FILES = ("pairs.epi.cc", "pairs.epi.cc.summary", "pairs.tsv", "marginal.tsv")
QT_FILES = ("pairs.epi.qt", "pairs.epi.qt.summary", "pairs.tsv", "marginal.tsv")


def _sets(folder, snps):
    one = folder / "many.set"
    one.write_text("MANY\n" + " ".join(snps[k] for k in range(0, 120, 3)) + "\nEND\n")
    other = folder / "other.set"  # the same SNPs but one
    other.write_text("MANY\n" + " ".join(snps[k] for k in range(3, 120, 3)) + "\nEND\n")
    two = folder / "two.set"
    two.write_text("A\n" + " ".join(snps[k] for k in range(0, 60, 3)) + "\nEND\nB\n"
                   + " ".join(snps[k] for k in range(30, 120, 2)) + "\nEND\n")
    return str(one), str(other), str(two)


@pytest.fixture(scope="module")
def cc(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ccset")
    prefix = str(folder / "cc")
    simulate_study(160, 200, 200, seed=4, missing_rate=0.02, ld_block=10, ld_rho=0.95).write(prefix)
    return prefix, _sets(folder, [line.split()[1] for line in open(prefix + ".bim", encoding="utf-8")])


@pytest.fixture(scope="module")
def qt(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qtset")
    prefix = str(folder / "qt")
    simulate_qt_study(160, 300, seed=4, missing_rate=0.02, ld_block=10, ld_rho=0.95,
                      effects=[(3, 90, 0.5)]).write(prefix)
    return prefix, _sets(folder, [line.split()[1] for line in open(prefix + ".bim", encoding="utf-8")])


def _interrupt_cc(prefix, set_path, mode, out, epi1):
    from gboost.pipeline.checkpoint import Ledger
    from gboost.pipeline.scan import ScanParams, screen

    st = rectangle_study(load_study(open_input(bfile=prefix)), read_set_file(set_path), mode)
    params = ScanParams(epi1=epi1, device="cpu", tile=8)
    seen: list = []
    led = Ledger(out, st, params, resume=False)
    with pytest.raises(ScanCancelled):
        screen(st, params, progress=seen.append, cancel=lambda: len(seen) >= 6, checkpoint=led)
    led.close()


def _interrupt_qt(prefix, set_path, mode, out, epi1):
    from gboost.pipeline.qt_scan import QTParams, run_qt_scan

    st = rectangle_study(load_study(open_input(bfile=prefix)), read_set_file(set_path), mode)
    seen: list = []
    with pytest.raises(ScanCancelled):
        run_qt_scan(st, QTParams(epi1=epi1, device="cpu"), progress=lambda done, total: seen.append(done),
                    cancel=lambda: len(seen) >= 6, checkpoint_dir=out)


CASES = [("case-control", "set-by-all", 0), ("case-control", "set-by-set", 2),
         ("qt", "set-by-all", 0), ("qt", "set-by-set", 2)]


@pytest.mark.parametrize("test,mode,which", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_resume_of_an_interrupted_set_scan_gives_one_runs_files(cc, qt, tmp_path, capsys, test, mode, which):
    prefix, sets = cc if test == "case-control" else qt
    set_path = sets[which]
    epi1 = "0.01" if test == "case-control" else "0.05"
    flags = ["--device", "cpu", "--quiet", "--epi1", epi1] + (["--tile", "8"] if test == "case-control" else [])
    whole = tmp_path / "whole"
    assert main(["scan", "--bfile", prefix, "--out", str(whole), "--set", set_path, f"--{mode}", *flags]) == 0
    out = tmp_path / "cut"
    (_interrupt_cc if test == "case-control" else _interrupt_qt)(prefix, set_path, mode, out, float(epi1))
    kept = tiles_recorded(out)
    assert kept >= 3
    # not the same study: other sets, the other mode, no sets at all
    other_mode = "set-by-set" if mode == "set-by-all" else "set-by-all"
    refusals = [["--set", sets[1 if which == 0 else 0], f"--{mode}"], []]
    if which == 0:  # one set: set-by-set of it is the triangle of its SNPs, another study
        refusals.append(["--set", set_path, f"--{other_mode}"])
    for wrong in refusals:
        capsys.readouterr()
        assert main(["scan", "--bfile", prefix, "--out", str(out), *wrong, *flags, "--resume"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "another study or other settings" in err[0], err
        if wrong and wrong[-1] == f"--{mode}":  # the same mode, other SNPs in the set: the sets are named
            assert "candidate sets" in err[0], err
        assert tiles_recorded(out) == kept  # the checkpoint is left as it was
    assert main(["scan", "--bfile", prefix, "--out", str(out), "--set", set_path, f"--{mode}", *flags,
                 "--resume"]) == 0
    for f in (CC_FILES if test == "case-control" else QT_FILES):
        assert read(out / f) == read(whole / f), f
    assert not (out / LEDGER).exists()
