"""The cluster examples in docs/examples/ run as written (on one machine) and give a single run's
outputs byte for byte."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # subprocess scans or PLINK runs throughout

ROOT = Path(__file__).resolve().parents[2]
COMPARED = ("pairs.epi.cc", "pairs.epi.cc.summary", "pairs.tsv", "marginal.tsv")
GBOOST = str(Path(sys.executable).parent / "gboost")  # the console script beside this Python


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    out = tmp_path_factory.mktemp("single") / "res"
    subprocess.run([GBOOST, "scan", "--bfile", str(ROOT / "sample_data/sample"), "--out", str(out), "--device", "cpu",
                         "--quiet"], check=True)
    return out


def _same(a: Path, b: Path) -> None:
    for name in COMPARED:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_slurm_array_script_as_three_tasks_then_merge(single, tmp_path):
    env = dict(os.environ, GBOOST=GBOOST, GBOOST_DEVICE="cpu", SLURM_ARRAY_TASK_COUNT="3")
    for k in (1, 2, 3):
        env["SLURM_ARRAY_TASK_ID"] = str(k)
        subprocess.run(["bash", str(ROOT / "docs/examples/slurm_array.sh"), str(ROOT / "sample_data/sample"),
                        str(tmp_path / "parts")], check=True, env=env)
    merged = tmp_path / "merged"
    subprocess.run([GBOOST, "merge", *sorted(map(str, (tmp_path / "parts").iterdir())),
                    "--out", str(merged)], check=True)
    _same(merged, single)


def test_dask_driver_on_a_local_cluster(single, tmp_path):
    pytest.importorskip("distributed", reason="Dask is not installed (pip install 'gboost[cluster]')")
    out = tmp_path / "res"
    subprocess.run([sys.executable, str(ROOT / "docs/examples/dask_cluster.py"), str(ROOT / "sample_data/sample"),
                    str(out), "--local", "2", "--device", "cpu"], check=True, cwd=ROOT)
    _same(out, single)
