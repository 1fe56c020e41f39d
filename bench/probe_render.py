"""The writer's end of a GPU scan at 500k SNPs, on this machine: a synthetic ScanResult (a real
simulated study of ``--snps`` SNPs, ``--pairs`` screened pairs of random tables, every one reported)
written by ``write_outputs`` with its row blocks formatted beforehand (as gboost/hostwork.py does
beside a GPU screen) and without (the writer formats every row), timed piece by piece: the
reported rows' order and q values, the summary's rows, the join and splice, the files' writes.

    python bench/probe_render.py [--snps 500000] [--pairs 680000] [--threads N] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from concurrent.futures import Future

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snps", type=int, default=500_000)
    ap.add_argument("--pairs", type=int, default=680_000)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    from gboost.io import results as R
    from gboost.load import load_study
    from gboost.scan import Pairs, ScanParams, ScanResult
    from gboost.simulate import simulate_study
    from gboost.stats.exact import exact_tests
    from gboost.stats.marginal import marginal_tests
    from gboost.tiles import Summary

    t = time.perf_counter()
    study = load_study(simulate_study(a.snps, 50, 50, seed=1, chromosomes=22).source())
    rng = np.random.default_rng(2)
    m = a.pairs
    i = np.sort(rng.integers(0, a.snps - 1, m))
    j = np.minimum(i + 1 + rng.integers(0, a.snps // 4, m), a.snps - 1)
    key = np.unique(i * a.snps + j)
    i, j = key // a.snps, key % a.snps
    tab = rng.integers(0, 60, (len(i), 3, 3, 2)).astype(np.int64)
    stat, df, p, conv = exact_tests(tab)
    params = ScanParams(epi1=0.999999, device="cpu")
    p = np.minimum(p, 1.0)
    pairs = Pairs(i, j, stat * 1.01, stat, df, p, conv, tab)
    sm = Summary.empty(a.snps)
    sm.n_tot[:] = a.snps - 1
    sm.n_sig[:] = rng.integers(0, 50, a.snps)
    sm.best[:] = rng.exponential(20, a.snps)
    sm.best_partner[:] = rng.integers(0, a.snps, a.snps)
    mstat, mp, mdf = marginal_tests(study.counts)
    outputs = Future()
    outputs.set_result(R.prepare_outputs(study, (mstat, mp, mdf)))
    texts = outputs.result()["texts"]
    cuts = np.linspace(0, len(i), 37).astype(int)  # 36 row blocks' worth of rows
    fields = [pairs.i, pairs.j, pairs.ksa, pairs.stat, pairs.df, pairs.p, pairs.converged, pairs.tables]
    blocks = [R.format_block(texts, tuple(f[x:y] for f in fields), params.epi1) for x, y in zip(cuts, cuts[1:])]
    print(f"set-up {time.perf_counter() - t:.1f} s: {a.snps} SNPs, {len(i)} pairs, {a.threads} threads; "
          f"blocks formatted in {sum(b.epi_cc_s + b.pairs_s for b in blocks):.2f} CPU-s")

    def result(with_blocks: bool):
        prepared = {"outputs": outputs}
        if with_blocks:
            prepared["formatted"] = blocks
        return ScanResult(study, params, "gpu", "probe", pairs, sm, mstat, mp, mdf, 10 ** 11,
                          params.thresholds(), {}, None, None, prepared)

    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.repeat):
            for with_blocks in (True, False):
                res = result(with_blocks)
                t0 = time.perf_counter()
                res.reported_rows  # noqa: B018
                t1 = time.perf_counter()
                res = result(with_blocks)
                t2 = time.perf_counter()
                R.write_outputs(res, os.path.join(tmp, f"o{rep}{int(with_blocks)}"), threads=a.threads)
                t3 = time.perf_counter()
                files = {k[7:]: round(v, 3) for k, v in res.timings.items() if k.startswith("format_")}
                print(f"{'blocks' if with_blocks else 'whole '} reported_rows alone {t1 - t0:.3f} s; "
                      f"write_outputs {t3 - t2:.3f} s; formatting CPU-s {files}")
        same = all(open(os.path.join(tmp, f"o{a.repeat - 1}1", n), "rb").read()
                   == open(os.path.join(tmp, f"o{a.repeat - 1}0", n), "rb").read() for n in R.OUTPUT_FILES[:-1])
        print("files identical with and without the blocks:", same)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
