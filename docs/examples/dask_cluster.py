"""A gboost scan on a Dask cluster that a batch system starts: SLURM (dask-jobqueue) by default,
or, with --local, a local cluster of the same shape (what tests/cli/test_cluster_examples.py runs).

    python docs/examples/dask_cluster.py /data/study results/study --jobs 16          # on SLURM
    python docs/examples/dask_cluster.py sample_data/sample /tmp/res --local 2        # here

Each SLURM job is one GPU worker; gboost sends every task only the two blocks of planes it needs
(docs/CLUSTER.md). For PBS, use dask_jobqueue.PBSCluster with the same arguments.
"""
import argparse

from gboost.cli import main


def cluster(args):
    if args.local:
        from distributed import LocalCluster

        return LocalCluster(n_workers=args.local, threads_per_worker=1, dashboard_address=None, silence_logs=40)
    from dask_jobqueue import SLURMCluster  # pip install dask-jobqueue

    c = SLURMCluster(cores=8, processes=1, memory="64GB", walltime="02:00:00",
                     job_extra_directives=["--gres=gpu:1"])
    c.scale(jobs=args.jobs)
    return c


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("bfile")
    ap.add_argument("out")
    ap.add_argument("--jobs", type=int, default=16, help="SLURM jobs (one GPU worker each)")
    ap.add_argument("--local", type=int, metavar="N", help="a local cluster of N workers instead of SLURM")
    ap.add_argument("--device", default="gpu")
    args = ap.parse_args()
    with cluster(args) as c:
        raise SystemExit(main(["scan", "--bfile", args.bfile, "--out", args.out, "--dask", c.scheduler_address,
                               "--device", args.device, "--quiet"]))
