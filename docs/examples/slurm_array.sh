#!/bin/bash
# One SLURM array task of a gboost scan: task k of n scans the k-th share of the pairs.
#   sbatch --array=1-64 docs/examples/slurm_array.sh /data/study parts
# and, once every task has finished:  gboost merge parts/part_* --out results/study
# (tests/cli/test_cluster_examples.py runs this file as 3 "tasks" on one machine and checks the merge
#  against a single run, byte for byte.)
#SBATCH --job-name=gboost
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=64G
#SBATCH --time=02:00:00
set -euo pipefail
BFILE=${1:?usage: slurm_array.sh BFILE_PREFIX PARTS_DIR}
PARTS=${2:?usage: slurm_array.sh BFILE_PREFIX PARTS_DIR}
GBOOST=${GBOOST:-gboost}
mkdir -p "$PARTS"
# --resume: a re-queued (pre-empted) task continues from its checkpoint instead of starting over.
$GBOOST scan --bfile "$BFILE" --out "$PARTS/part_${SLURM_ARRAY_TASK_ID}" \
    --part "${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}" --device "${GBOOST_DEVICE:-auto}" --resume --quiet
