#!/usr/bin/env bash
# One shard of a class on a Slurm cluster: deploy/slurm-submit.sh submits it as a job array
# (task K grades shard K of SHARDS) and the merge after it (docs/cluster.md).
#
# What a node needs: this repository on a shared file system with its pinned environment
# installed once (`make setup`, from a login node: .venv/ with torch 2.13.0 and
# requirements.txt), and bubblewrap (`apt-get install bubblewrap`; on Ubuntu 24.04 also
# `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`): without a sandbox that starts,
# the shard stops before its first learner, and the merge refuses the shard it did not finish.
# (tests/test_slurm.py runs this recipe on a one-node Slurm: jobs as root under slurmd,
# proctrack/linuxproc, no cgroups, each learner in bubblewrap.)
# How files travel: the shared folder. SUBMISSIONS holds one folder or zip per learner; shard
# K writes $OUT/shard-K.csv and $OUT/shard-K/ there, and the merge reads them back.
#SBATCH --job-name=lumen-grade
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --time=02:00:00
#SBATCH --output=lumen-grade-%A_%a.log
set -euo pipefail
: "${SUBMISSIONS:?set SUBMISSIONS to the folder of the submissions (one per learner)}"
: "${SHARDS:?set SHARDS to the number of shards (slurm-submit.sh does)}"
OUT="${OUT:-grades}"
K="${SLURM_ARRAY_TASK_ID:?submit this as a job array: sbatch --array=1-N}"
# SHARDS, not SLURM_ARRAY_TASK_COUNT: a shard rerun alone (sbatch --array=K) is still K of N.
# A rerun resumes: the learners the shard graded before are skipped.
# Slurm starts the job in the repository's root: slurm-submit.sh's --chdir, or where sbatch ran.
[ -x .venv/bin/python ] || { echo "slurm-grade.sh: no .venv/bin/python in $PWD: submit from" \
    "the repository's root (make setup there once), or with --chdir=<the repository>" >&2
    exit 2; }
exec .venv/bin/python -m autograder grade-batch "$SUBMISSIONS" --shard "$K/$SHARDS" \
    --out "$OUT/shard-$K.csv" --jobs "${SLURM_CPUS_PER_TASK:-2}"
