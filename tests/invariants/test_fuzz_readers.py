"""Fuzzing every reader with random corruptions and truncations: an InputError naming the file,
or a valid study — never any other exception."""
import os
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gboost.errors import InputError
from gboost.data.inputs import open_input
from gboost.data.load import load_study
from gboost.data.simulate import simulate_study

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzzsrc")
    prefix = str(d / "s")
    sim = simulate_study(30, 12, 14, seed=5, chromosomes=2, missing_rate=0.05)
    sim.write(prefix)
    # Text versions of the same study: .ped/.map, a BOOST matrix, a --pheno file.
    v, smp, g = sim.variants, sim.samples, sim.genotypes
    with open(prefix + ".map", "w") as f:
        for k in range(len(v)):
            f.write(f"{v.chrom[k]} {v.snp[k]} 0 {v.bp[k]}\n")
    with open(prefix + ".ped", "w") as f:
        for s in range(g.shape[1]):
            calls = []
            for k in range(len(v)):
                a1, a2 = v.a1[k], v.a2[k]
                calls.append({-1: "0 0", 0: f"{a2} {a2}", 1: f"{a1} {a2}", 2: f"{a1} {a1}"}[int(g[k, s])])
            f.write(f"{smp.fid[s]} {smp.iid[s]} 0 0 {smp.sex[s]} {smp.status[s]} {' '.join(calls)}\n")
    with open(prefix + ".boost", "w") as f:
        for s in range(g.shape[1]):
            f.write(" ".join([str(int(smp.status[s] == 2))] + [str(max(0, int(x))) for x in g[:, s]]) + "\n")
    with open(prefix + ".pheno", "w") as f:
        for s in range(g.shape[1]):
            f.write(f"{smp.fid[s]} {smp.iid[s]} {1 + (s % 2)}\n")
    return prefix


def _mutate(data: bytes, ops) -> bytes:
    b = bytearray(data)
    for kind, pos, val in ops:
        if not b:
            break
        i = pos % len(b)
        if kind == 0:
            b[i] = val
        elif kind == 1:
            del b[i:i + 1 + val % 7]
        elif kind == 2:
            b[i:i] = bytes([val]) * (1 + val % 3)
        else:
            b = b[: i]  # truncation
    return bytes(b)


OPS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10**9), st.integers(0, 255)), min_size=1, max_size=4)


def _try(**kw):
    try:
        src = open_input(**kw)
        study = load_study(src)
    except InputError as exc:
        assert exc.path or "input" in str(exc)
        return
    # a case-control scan needs 2 cases and 2 controls; a quantitative trait (a corrupted column can
    # become one, PLINK's rule) needs 2 different values, as PLINK
    if study.quantitative:
        assert study.n_snps >= 2 and study.n_samples >= 2 and np.ptp(study.trait) > 0
    else:
        assert study.n_snps >= 2 and study.n_samples >= 4


@pytest.mark.slow
@pytest.mark.parametrize("ext", [".bed", ".bim", ".fam"])
@FUZZ
@given(ops=OPS)
def test_bfile_corruptions(clean, tmp_path, ext, ops):
    prefix = str(tmp_path / "f")
    for e in (".bed", ".bim", ".fam"):
        shutil.copy(clean + e, prefix + e)
    with open(prefix + ext, "rb") as f:
        data = f.read()
    with open(prefix + ext, "wb") as f:
        f.write(_mutate(data, ops))
    _try(bfile=prefix)


@pytest.mark.parametrize("ext", [".ped", ".map"])
@FUZZ
@given(ops=OPS)
def test_ped_corruptions(clean, tmp_path, ext, ops):
    prefix = str(tmp_path / "f")
    for e in (".ped", ".map"):
        shutil.copy(clean + e, prefix + e)
    with open(prefix + ext, "rb") as f:
        data = f.read()
    with open(prefix + ext, "wb") as f:
        f.write(_mutate(data, ops))
    _try(ped=prefix + ".ped", map_file=prefix + ".map")


@FUZZ
@given(ops=OPS)
def test_boost_matrix_corruptions(clean, tmp_path, ops):
    path = str(tmp_path / "f.boost")
    with open(path, "wb") as f:
        f.write(_mutate(open(clean + ".boost", "rb").read(), ops))
    _try(boost_matrix=path)


@pytest.mark.slow
@FUZZ
@given(ops=OPS)
def test_pheno_corruptions(clean, tmp_path, ops):
    path = str(tmp_path / "f.pheno")
    with open(path, "wb") as f:
        f.write(_mutate(open(clean + ".pheno", "rb").read(), ops))
    _try(bfile=clean, pheno=path)
