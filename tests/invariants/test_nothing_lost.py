"""Nothing a user owns is ever lost: every case hashes every byte of the user's files
before and after, so a test fails if one byte of an unrelated file went missing."""
from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gboost.cli import main
from gboost.data.simulate import simulate_study

ROOT = Path(__file__).resolve().parents[2]


def tree(folder: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file under ``folder`` (symlinks by target)."""
    out = {}
    for dirpath, _, files in os.walk(folder):
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    d = tmp_path_factory.mktemp("lost")
    prefix = str(d / "data" / "s")
    os.makedirs(d / "data")
    simulate_study(60, 40, 40, seed=16, chromosomes=2, missing_rate=0.01).write(prefix)
    return prefix


def scan(study, out, *extra):
    return main(["scan", "--bfile", study, "--out", str(out), "--device", "cpu", "--quiet", "--epi1", "0.05", *extra])


def user_files(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "thesis.docx").write_bytes(os.urandom(4096))
    (folder / "sub").mkdir(exist_ok=True)
    (folder / "sub" / "notes.txt").write_text("my notes\n")


def test_overwrite_replaces_gboosts_files_and_nothing_else(study, tmp_path):
    out = tmp_path / "r"
    user_files(out)
    mine = tree(out)
    assert scan(study, out) == 2  # not empty: refused without --overwrite
    assert tree(out) == mine
    assert scan(study, out, "--overwrite") == 0
    after = tree(out)
    assert {k: after[k] for k in mine} == mine
    assert {"pairs.tsv", "pairs.epi.cc", "pairs.epi.cc.summary", "marginal.tsv", "run.json"} <= set(after)
    first = {k: v for k, v in after.items() if k not in mine}
    assert scan(study, out, "--overwrite", "--epi1", "0.01") == 0  # again, other results
    again = tree(out)
    assert {k: again[k] for k in mine} == mine and again["pairs.epi.cc"] != first["pairs.epi.cc"]
    assert not [p for p in os.listdir(out) if p.startswith(".gboost")]  # no lock or temporaries left


@pytest.mark.parametrize("where", ["input folder", "cwd", "parent of cwd", "dot", "dotdot"])
def test_out_that_holds_the_inputs_or_the_working_folder_is_refused(study, tmp_path, monkeypatch, capsys, where):
    data = Path(study).parent
    before = tree(data)
    work = tmp_path / "w" / "x"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    out = {"input folder": str(data), "cwd": str(work), "parent of cwd": str(work.parent), "dot": ".",
           "dotdot": ".."}[where]
    assert scan(study, out, "--overwrite") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "own" in err[0]
    assert tree(data) == before and not os.listdir(work)


def test_a_symlinked_out_is_followed_not_replaced(study, tmp_path):
    real = tmp_path / "real"
    user_files(real)
    mine = tree(real)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert scan(study, link, "--overwrite") == 0
    assert link.is_symlink() and (real / "pairs.tsv").exists()
    assert {k: tree(real)[k] for k in mine} == mine


@pytest.mark.slow
def test_merge_and_pathways_overwrite_keep_other_files(study, tmp_path):
    parts = []
    for k in (1, 2):
        d = tmp_path / f"p{k}"
        assert scan(study, d, "--part", f"{k}/2") == 0
        parts.append(str(d))
    out = tmp_path / "merged"
    user_files(out)
    mine = tree(out)
    assert main(["merge", *parts, "--out", str(out), "--overwrite", "--quiet"]) == 0
    assert {k: tree(out)[k] for k in mine} == mine and (out / "pairs.epi.cc").exists()
    scan_dir = tmp_path / "scan"
    assert scan(study, scan_dir) == 0
    scan_files = tree(scan_dir)
    rc = main(["pathways", "--pairs", str(scan_dir), "--out", str(scan_dir), "--overwrite", "--quiet"])
    assert rc == 0
    after = tree(scan_dir)
    assert {k: after[k] for k in scan_files} == scan_files  # the scan's own pairs.tsv is kept
    assert "nodes.tsv" in after


def test_resume_refuses_another_study_with_the_same_ids_and_counts(study, tmp_path, capsys):
    """Same SNP IDs, case and control counts and thresholds, other genotypes: refused, naming why."""
    from gboost.pipeline.checkpoint import Ledger
    from gboost.errors import ScanCancelled
    from gboost.readers.plink_bed import open_bfile
    from gboost.data.load import load_study
    from gboost.pipeline.scan import ScanParams, screen

    other = str(tmp_path / "other")
    simulate_study(60, 40, 40, seed=99, chromosomes=2, missing_rate=0.01).write(other)
    out = tmp_path / "ckpt"
    st = load_study(open_bfile(other))
    params = ScanParams(epi1=0.05, device="cpu", tile=16)
    led = Ledger(out, st, params, resume=False)
    seen = []
    with pytest.raises(ScanCancelled):
        screen(st, params, progress=seen.append, cancel=lambda: len(seen) >= 2, checkpoint=led)
    led.close()
    ckpt = tree(out)
    assert scan(study, out, "--resume", "--tile", "16") == 2
    err = capsys.readouterr().err
    assert "genotypes or samples" in err and "--overwrite" in err
    assert tree(out) == ckpt


def test_a_garbage_checkpoint_is_one_line_on_resume(study, tmp_path, capsys):
    out = tmp_path / "g"
    out.mkdir()
    (out / "checkpoint.json").write_text("{not json")
    assert scan(study, out, "--resume") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "checkpoint.json" in err[0]


def test_leftovers_of_a_killed_run_are_cleared_and_user_files_kept(study, tmp_path):
    out = tmp_path / "k"
    user_files(out)
    mine = tree(out)
    # A run killed while writing: its marked temporary folder (gboost/outputs/outdir.py MarkedFolder).
    killed = subprocess.run([sys.executable, "-c", "import os, sys; from gboost.outputs import outdir; "
                             "f = outdir.MarkedFolder(sys.argv[1], outdir._TMP); "
                             "(f.path / 'pairs.tsv').write_text('half'); os._exit(9)", str(out)],
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert killed.returncode == 9
    assert [n for n in os.listdir(out) if n.startswith(".gboost-tmp-")]
    dead = 2 ** 22 + 12345  # no such process
    # Shapes gboost once used, with nothing proving gboost made them: kept.
    unproven = out / f".gboost-staging-{dead}-ab12"
    unproven.mkdir()
    old = tmp_path / f".k.old-{dead}"
    old.mkdir()
    (old / "pairs.tsv").write_text("old")
    keep = tmp_path / ".k.partial-mine"
    keep.mkdir()
    (keep / "mine.txt").write_text("x")
    assert scan(study, out, "--overwrite") == 0
    names = os.listdir(out)
    assert [n for n in names if n.startswith(".gboost")] == [unproven.name]
    assert (old / "pairs.tsv").read_text() == "old" and (keep / "mine.txt").read_text() == "x"
    assert {k: tree(out)[k] for k in mine} == mine


def test_a_second_run_into_the_same_out_is_refused_with_the_holders_pid(study, tmp_path, capsys):
    out = tmp_path / "busy"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (out / ".gboost.lock").write_text(f"{holder.pid}\n")
        assert scan(study, out) == 2
        assert f"PID {holder.pid}" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()
    assert scan(study, out) == 0  # the holder is gone: its stale lock is taken over
    assert not (out / ".gboost.lock").exists()


def test_new_output_folders_follow_the_umask(study, tmp_path):
    old = os.umask(0o022)
    try:
        assert scan(study, tmp_path / "u") == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "u").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "u" / "pairs.tsv").stat().st_mode) == 0o644


def test_a_fifo_input_is_refused_not_waited_on(study, tmp_path, capsys):
    fifo = tmp_path / "pheno.txt"
    os.mkfifo(fifo)
    assert scan(study, tmp_path / "o", "--pheno", str(fifo)) == 2
    assert "pipe" in capsys.readouterr().err


def test_bfile_with_a_bed_suffix_that_is_the_real_prefix(study, tmp_path):
    import shutil

    for ext in (".bed", ".bim", ".fam"):
        shutil.copy(study + ext, tmp_path / f"x.bed{ext}")
    assert main(["scan", "--bfile", str(tmp_path / "x.bed"), "--out", str(tmp_path / "o"), "--device", "cpu",
                 "--quiet"]) == 0


def test_a_bom_is_stripped_from_bim_extract_and_pheno(study, tmp_path):
    import shutil

    bom = b"\xef\xbb\xbf"
    p = tmp_path / "b"
    for ext in (".bed", ".fam"):
        shutil.copy(study + ext, str(p) + ext)
    Path(str(p) + ".bim").write_bytes(bom + Path(study + ".bim").read_bytes())
    ids = [line.split()[1] for line in Path(study + ".bim").read_text().splitlines()]
    (tmp_path / "ex.txt").write_bytes(bom + ("\n".join(ids[:10]) + "\n").encode())
    fam = [line.split() for line in Path(study + ".fam").read_text().splitlines()]
    (tmp_path / "ph.txt").write_bytes(bom + "".join(f"{r[0]} {r[1]} {r[5]}\n" for r in fam).encode())
    out = tmp_path / "o"
    assert main(["scan", "--bfile", str(p), "--out", str(out), "--device", "cpu", "--quiet", "--extract",
                 str(tmp_path / "ex.txt"), "--pheno", str(tmp_path / "ph.txt"), "--epi1", "0.5"]) == 0
    marg = (out / "marginal.tsv").read_text().splitlines()[1:]
    assert len(marg) == 10 and marg[0].split()[1] == ids[0] and marg[0].split()[0] == "1"
    import json

    assert json.loads((out / "run.json").read_text())["counts"]["samples"] == len(fam)


@pytest.mark.parametrize("flags,needle", [
    (["--tile", "-5"], "--tile"), (["--mind", "nan"], "--mind"), (["--dask", "bogus"], "--dask"),
    (["--dask", "local:0"], "--dask"), (["--max-r2", "-1"], "--max-r2"), (["--min-distance", "nan"], "--min-distance"),
    (["--maf", "-1"], "--maf"), (["--geno", "2"], "--geno"), (["--hwe", "-1"], "--hwe"), (["--gpus", "x"], "--gpus"),
    (["--threads", "0"], "--threads"), (["--epi1", "inf"], "--epi1"),
])
def test_out_of_range_flags_are_refused_before_anything_runs(study, tmp_path, capsys, flags, needle):
    with pytest.raises(SystemExit) as exc:
        scan(study, tmp_path / "o", *flags)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_pathways_window_of_infinity_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["pathways", "--pairs", str(tmp_path), "--out", str(tmp_path / "g"), "--window-kb", "inf"])
    assert exc.value.code == 2 and "--window-kb" in capsys.readouterr().err


def test_bed_annotation_end_beyond_any_chromosome_is_one_line(tmp_path):
    from gboost.errors import InputError
    from gboost.pathways.annotation import read_bed

    bed = tmp_path / "genes.bed"
    bed.write_text("1\t100\t100000000000000000000000\tGENE\n")
    with pytest.raises(InputError, match="beyond any chromosome"):
        read_bed(bed)


@pytest.mark.parametrize("value,needle", [("inf", "not a finite"), ("1e400", "not a finite"), ("NA", "every sample")])
def test_covariates_that_would_make_every_adjusted_test_na_are_refused(study, tmp_path, capsys, value, needle):
    fam = [line.split() for line in Path(study + ".fam").read_text().splitlines()]
    rows = ["FID IID age pc1"]
    for k, r in enumerate(fam):
        pc1 = value if (value == "NA" or k == 3) else f"{k * 0.01:.2f}"
        rows.append(f"{r[0]} {r[1]} {30 + k % 20} {pc1}")
    cov = tmp_path / "cov.txt"
    cov.write_text("\n".join(rows) + "\n")
    assert scan(study, tmp_path / "o", "--covar", str(cov)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "cov.txt" in err[0]


def test_ctrl_c_inside_a_finalizer_ends_the_command_with_one_line():
    """A KeyboardInterrupt raised while Python runs a finalizer (numba frees its LLVM handles so)
    cannot propagate: Python prints a traceback and goes on. The command ends there instead."""
    code = ("import gboost.cli as c\n"
            "c._interrupts_in_finalizers_end_the_command()\n"
            "class F:\n"
            "    def __del__(self):\n"
            "        raise KeyboardInterrupt\n"
            "F()\n"
            "print('went on')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "went on" not in proc.stdout
    assert proc.stderr.strip().startswith("gboost: interrupted") and len(proc.stderr.strip().splitlines()) == 1


def test_ctrl_c_at_start_up_is_one_line_and_exit_130(study, tmp_path):
    """SIGINT while the command is still importing its libraries: no traceback."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "gboost.cli", "scan", "--bfile", study, "--out",
                             str(tmp_path / "o"), "--device", "cpu"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (130, 0) and "Traceback" not in err, err


def test_a_failed_start_leaves_no_folder_it_made(study, tmp_path, capsys, monkeypatch):
    """--out a/b/c with none of them there, and a start that fails after the output lock is taken
    (no usable GPU for --device gpu): exit 2, one line, and neither c nor the parents made for it
    are left behind; a folder that was there already stays."""
    import gboost.engines.devices as devices

    monkeypatch.setattr(devices, "gpu_available", lambda: (False, "CuPy is not usable (test)"))
    (tmp_path / "keep").mkdir()
    before = tree(tmp_path)
    rc = main(["scan", "--bfile", str(study), "--out", str(tmp_path / "keep" / "a" / "b" / "c"), "--device", "gpu",
               "--quiet"])
    assert rc == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
    assert tree(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["keep"]
    assert list((tmp_path / "keep").iterdir()) == []
