"""The exact stage of gboost on an LD-rich study beside PLINK 1.9's whole run (issue 15's bench).

    python bench/bench_exact_vs_plink.py [--snps 3000] [--epi1 1e-2] [--threads 2]

The study is tests/ld_study.py's (haplotype blocks, r^2 up to ~1, 1 % missing, X): its screened
pairs need hundreds of IPF sweeps, so the uncapped exact test costs most here. Prints gboost's
exact-stage seconds (run.json "exact" + "exact_wait": the survivors' IPF, joins and fold), its whole
command, and PLINK's whole run, both as subprocesses with the same thread count.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers import write_ld_study  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snps", type=int, default=3000)
    ap.add_argument("--epi1", type=float, default=1e-2)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    plink = shutil.which("plink1.9") or shutil.which("plink")
    with tempfile.TemporaryDirectory() as d:
        prefix = write_ld_study(f"{d}/ld", n_snps=a.snps)
        cmd = [sys.executable, "-m", "gboost.cli", "scan", "--bfile", prefix, "--epi1", str(a.epi1),
               "--device", "cpu", "--threads", str(a.threads), "--quiet"]
        subprocess.run(cmd + ["--out", f"{d}/warm"], check=True)  # numba caches warm
        t = time.perf_counter()
        subprocess.run(cmd + ["--out", f"{d}/g"], check=True)
        g_wall = time.perf_counter() - t
        j = json.loads(Path(f"{d}/g/run.json").read_text())
        tm = j["timings_s"]
        t = time.perf_counter()
        subprocess.run([plink, "--bfile", prefix, "--fast-epistasis", "boost", "--epi1", str(a.epi1), "--threads",
                        str(a.threads), "--out", f"{d}/p", "--silent"], check=True, stdout=subprocess.DEVNULL)
        p_wall = time.perf_counter() - t
        same = Path(f"{d}/g/pairs.epi.cc").read_bytes() == Path(f"{d}/p.epi.cc").read_bytes()
    print(f"LD study {a.snps} SNPs x 1200, epi1 {a.epi1}, {a.threads} threads: {j['counts']['screened_survivors']} "
          f"screened pairs, ipf_safety_cap_hits {j['counts']['ipf_safety_cap_hits']}")
    print(f"gboost exact stage {tm['exact']:.3f} s (screen {tm['screen']:.2f} s); gboost command {g_wall:.2f} s; "
          f"PLINK 1.9 whole run {p_wall:.2f} s; .epi.cc identical: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
