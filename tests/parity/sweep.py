"""The parity sweep's draws and its run of one seed: a random realistic study from `gboost simulate`
and random PLINK flags (``draw``), scanned by `gboost scan --device cpu` and by plink1.9 and compared
byte for byte (``one``). bench/parity_sweep.py is the command that runs seeds by the hundred (its
docstring lists what is drawn); tests/parity/test_plink_parity_sweep.py runs chosen seeds in CI;
bench/gpu_cpu_sweep.py draws the same studies for the GPU against the CPU."""
from __future__ import annotations

import filecmp
import os
import random
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def draw(k: int, more: bool = False):
    """Seed ``k``'s `gboost simulate` arguments (after --out) and scan flags; with ``more``, also the
    extra draws of `--more-flags` (a dict: what to make after the study is written, see `one`)."""
    r = random.Random(k)
    snps = r.choice([150, 300, 500])
    sim = ["--snps", str(snps), "--cases", str(r.choice([100, 250, 400])), "--controls", str(r.choice([100, 300, 500])),
           "--seed", str(k), "--missing", str(r.choice([0, 0.01, 0.05])),
           "--chromosomes", r.choice(["1", "3", "1,2,X", "1,X", "1,2,3"]), "--maf-min", str(r.choice([0.005, 0.01, 0.05])),
           "--unknown-sex", str(r.choice([0, 0.02, 0.2]))]
    if r.random() < 0.7:
        sim += ["--ld-block", str(r.choice([5, 20])), "--ld-rho", str(r.choice([0.9, 0.99]))]
    if r.random() < 0.5:
        sim += ["--plant", f"3:{snps // 2}:{r.choice(['xor', 'additive', 'threshold'])}:{r.choice([2.0, 5.0])}"]
    if r.random() < 0.5:
        sim += ["--duplicates", str(r.choice([0.05, 0.15]))]
    flags = ["--epi1", r.choice(["1e-4", "1e-3", "0.01", "0.05"])]
    if r.random() < 0.3:
        flags += ["--allow-no-sex"]
    if r.random() < 0.3:
        flags += ["--maf", r.choice(["0.01", "0.05", "0.1"])]
    if r.random() < 0.3:
        flags += ["--geno", r.choice(["0.02", "0.05"])]
    if r.random() < 0.3:
        flags += ["--hwe", r.choice(["1e-3", "1e-6"])]
    if r.random() < 0.2:
        flags += ["--mind", r.choice(["0.02", "0.1"])]
    if r.random() < 0.2:
        flags += ["--epi2", r.choice(["1e-3", "0.05"])]
    if not more:
        return sim, flags
    # --more-flags: drawn after everything above, so that the draws above stay the plain sweep's
    extra: dict = {}
    if r.random() < 0.2:  # a quantitative trait: PLINK's --epistasis (linear) instead of boost
        n = int(sim[sim.index("--cases") + 1]) + int(sim[sim.index("--controls") + 1])
        qt = ["--qt", str(n), "--missing-trait", str(r.choice([0, 0.03]))]
        if "--plant" in sim:
            i = sim.index("--plant")
            qt += ["--qt-effect", f"3:{snps // 2}:{r.choice([0.3, 0.6])}"]
            del sim[i:i + 2]
        i = sim.index("--cases")
        sim[i:i + 4] = qt
        extra["qt"] = True
    if r.random() < 0.2:
        extra["extract"] = r.choice([0.5, 0.8, 0.95])
    if r.random() < 0.2:
        extra["exclude"] = r.choice([0.05, 0.2, 0.5])
    if r.random() < 0.2:
        extra["chr"] = r.random()  # which of the study's chromosomes: chosen in `one`
    if r.random() < 0.2:
        extra["pheno"] = (r.choice([0, 0.05]), r.choice([0, 0.1]), r.random() < 0.5)  # missing, absent, header
    if r.random() < 0.3:
        extra["long_ids"] = r.choice([0.1, 0.5, 1.0])
    if r.random() < 0.1:
        extra["file"] = True
    if r.random() < 0.15:
        extra["threads1"] = True
    if r.random() < 0.15:
        extra["parts"] = r.choice([2, 3, 5])
    if r.random() < 0.15:  # XY, MT, Y and 0 too (PLINK scans XY, MT and 0, skips X and Y)
        i = sim.index("--chromosomes")
        sim[i + 1] = r.choice(["1,2,XY,MT", "1,X,Y,XY,MT", "0,1,2", "2,X,MT"])
    if r.random() < 0.2:  # the .bim's chromosome names: chr1, chrX, ... or X written 23, XY 25, MT 26
        extra["chr_names"] = r.choice(["chr", "numeric"])
    r2 = random.Random(f"{k}-x2")  # (a generator of their own: the draws above stay as they were)
    if r2.random() < 0.15 and not extra.get("file"):  # gboost reads the PLINK 2 fileset plink2 makes of it
        extra["pfile"] = True
    if r2.random() < 0.15:  # gboost's tile edge (its engine's blocking; the outputs must not change)
        extra["tile"] = r2.choice([16, 48, 100])
    return sim, flags, extra


def _make_extra(k: int, d: str, extra: dict, plink: str) -> tuple[list[str], str]:
    """Write the files of seed ``k``'s extra draws in ``d``; returns the flags for both tools and the
    input flag (``--bfile``/``--file`` PREFIX)."""
    r = random.Random(f"{k}-more")
    flags: list[str] = []
    bim = [line.split() for line in open(f"{d}/s.bim")]
    chroms = list(dict.fromkeys(row[0] for row in bim))  # as simulated: 1, 2, X, XY, MT, ...
    if "long_ids" in extra:  # rs-like IDs of 5-12 characters, unique
        for n, row in enumerate(bim):
            if r.random() < extra["long_ids"]:
                row[1] = f"rs{r.randrange(10 ** r.randint(2, 9))}_{n}"
    if "chr_names" in extra:
        codes = {"X": "23", "Y": "24", "XY": "25", "MT": "26"}
        for row in bim:
            row[0] = "chr" + row[0] if extra["chr_names"] == "chr" else codes.get(row[0], row[0])
    if "long_ids" in extra or "chr_names" in extra:
        with open(f"{d}/s.bim", "w") as f:
            f.writelines("\t".join(row) + "\n" for row in bim)
    ids = [row[1] for row in bim]

    def id_file(name: str, listed: list[str]) -> str:  # IDs separated by spaces, tabs and newlines, some CRLF
        with open(f"{d}/{name}", "w", newline="") as f:
            i = 0
            while i < len(listed):
                n = r.choice([1, 1, 1, 2, 3])
                f.write(r.choice([" ", "\t"]).join(listed[i:i + n]) + r.choice(["\n", "\n", "\r\n", " \n"]))
                i += n
        return f"{d}/{name}"

    if "extract" in extra:
        keep = [x for x in ids if r.random() < extra["extract"]] + ["rs_absent_1", "absent2"]
        r.shuffle(keep)
        flags += ["--extract", id_file("extract.txt", keep)]
    if "exclude" in extra:
        drop = [x for x in ids if r.random() < extra["exclude"]] + ["absent3"]
        flags += ["--exclude", id_file("exclude.txt", drop)]
    if "chr" in extra:
        codes = {"X": 23, "Y": 24, "XY": 25, "MT": 26}
        code = [codes.get(c, int(c) if c.isdigit() else 0) for c in chroms]
        pick = extra["chr"]
        prefix = r.choice(["", "", "chr"])
        if len(chroms) == 1 or pick < 0.3:
            spec = prefix + chroms[0]
        elif pick < 0.6:  # a range between two of the study's chromosomes (1-2, 2-X, chr1-MT, ...)
            a, b = sorted(r.sample(range(len(chroms)), 2))
            spec = f"{prefix}{chroms[a]}-{prefix}{chroms[b]}" if code[a] < code[b] else prefix + chroms[a]
        else:
            spec = ",".join(prefix + c for c in chroms if r.random() < 0.6) or chroms[-1]
        flags += ["--chr", spec]
    if "pheno" in extra:
        missing, absent, header = extra["pheno"]
        fam = [line.split() for line in open(f"{d}/s.fam")]
        lines = ["FID IID trait\n"] if header else []
        for f in fam:
            if r.random() < absent:
                continue
            if r.random() < missing:
                v = r.choice(["-9", "0", "NA"])
            elif extra.get("qt"):
                v = f"{r.gauss(5, 2):.4f}"
            else:
                v = r.choice(["1", "2"])
            lines.append(f"{f[0]} {f[1]} {v}\n")
        if r.random() < 0.3:  # a second trait column (PLINK and gboost read the first) and CRLF line ends
            lines = [line[:-1] + (" other\r\n" if line.startswith("FID ") else f"\t{r.gauss(0, 1):.3f}\r\n")
                     for line in lines]
        open(f"{d}/pheno.txt", "w", newline="").writelines(lines)
        flags += ["--pheno", f"{d}/pheno.txt"]
    source = ["--bfile", f"{d}/s"]
    if extra.get("file"):
        subprocess.run([plink, "--bfile", f"{d}/s", "--recode", "--out", f"{d}/t", "--silent",
                        "--keep-allele-order"], check=True, capture_output=True)
        source = ["--file", f"{d}/t"]
    return flags, source


def _pfile(d: str) -> tuple[list[str], list[str]]:
    """The study as a PLINK 2 fileset (plink2 --make-pgen), gboost's --pfile input, and the .bed
    plink2 makes back of that for plink1.9 (plink2 writes a trait to 6 significant digits)."""
    subprocess.run(["plink2", "--bfile", f"{d}/s", "--make-pgen", "--out", f"{d}/t2", "--silent"], check=True,
                   capture_output=True)
    subprocess.run(["plink2", "--pfile", f"{d}/t2", "--make-bed", "--out", f"{d}/t3", "--silent"], check=True,
                   capture_output=True)
    return ["--pfile", f"{d}/t2"], ["--bfile", f"{d}/t3"]


def one(k: int, work: str, plink: str, more: bool = False) -> tuple[bool, str]:
    d = os.path.join(work, f"s{k}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    extra: dict = {}
    if more:
        sim, flags, extra = draw(k, more=True)
    else:
        sim, flags = draw(k)
    gb = [sys.executable, "-m", "gboost.cli"]
    made = subprocess.run([*gb, "simulate", "--out", f"{d}/s", *sim], cwd=ROOT, capture_output=True, text=True)
    if made.returncode:
        return False, f"simulate failed: {made.stderr.strip()[-300:]}"
    source = ["--bfile", f"{d}/s"]
    if extra:
        more_flags, source = _make_extra(k, d, extra, plink)
        flags = flags + more_flags
    threads = ["--threads", "1" if extra.get("threads1") else "2"]
    # PLINK's --epistasis (QT) starts each thread's best partner "after" the SNP from memory it has not
    # set for the thread's last few SNPs (docs/qt_epistasis.md): with 2+ threads its BEST_SNP and
    # BEST_CHISQ there can follow whatever that memory held, so its QT runs get one thread
    plink_threads = ["--threads", "1"] if extra.get("qt") else threads
    test, ext = (["--epistasis"], "qt") if extra.get("qt") else (["--fast-epistasis", "boost"], "cc")
    shown = [f for f in flags if not f.startswith(d)] + [f"{x}" for x in ("qt", "file", "threads1") if extra.get(x)] + (
        [f"parts={extra['parts']}"] if "parts" in extra else []) + ([f"long_ids={extra['long_ids']}"] if "long_ids" in extra else [])
    ours_source = source
    if extra.get("pfile"):
        ours_source, source = _pfile(d)
    ours_only = ["--tile", str(extra["tile"])] if "tile" in extra else []
    for x in ("chr_names", "pfile", "tile"):
        if x in extra:
            shown.append(f"{x}={extra[x]}")
    if extra.get("parts"):
        n = extra["parts"]
        runs = [subprocess.run([*gb, "scan", *ours_source, "--out", f"{d}/g{i}", "--device", "cpu", "--quiet", "--part",
                                f"{i}/{n}", *(threads if extra.get("threads1") else []), *ours_only, *flags], cwd=ROOT,
                               capture_output=True, text=True)
                for i in range(1, n + 1)]
        ours = next((x for x in runs if x.returncode), None) or subprocess.run(
            [*gb, "merge", *(f"{d}/g{i}" for i in range(1, n + 1)), "--out", f"{d}/g", "--quiet"], cwd=ROOT,
            capture_output=True, text=True)
    else:
        ours = subprocess.run([*gb, "scan", *ours_source, "--out", f"{d}/g", "--device", "cpu", "--quiet",
                               *(threads if extra.get("threads1") else []), *ours_only, *flags], cwd=ROOT,
                              capture_output=True, text=True)
    theirs = subprocess.run([plink, *source, *test, "--out", f"{d}/p", *plink_threads, "--silent", *flags],
                            capture_output=True, text=True)
    if ours.returncode or theirs.returncode:
        if ours.returncode == 2 and theirs.returncode:
            shutil.rmtree(d)
            return True, f"both refuse {shown}: {(theirs.stderr or theirs.stdout).strip().splitlines()[-1]}"
        return False, (f"exit {ours.returncode} vs plink's {theirs.returncode} {shown}: {ours.stderr.strip()[-300:]} | "
                       f"{(theirs.stderr or theirs.stdout).strip()[-200:]}")
    for a, b in ((f"g/pairs.epi.{ext}", f"p.epi.{ext}"), (f"g/pairs.epi.{ext}.summary", f"p.epi.{ext}.summary")):
        if not filecmp.cmp(os.path.join(d, a), os.path.join(d, b), shallow=False):
            return False, f"{a} differs {shown} (simulate {' '.join(sim)}; kept in {d})"
    rows = sum(1 for _ in open(os.path.join(d, f"p.epi.{ext}"))) - 1
    shutil.rmtree(d)
    return True, f"identical, {rows} rows {shown}"
