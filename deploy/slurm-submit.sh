#!/usr/bin/env bash
# Grade a class on Slurm: SHARDS array tasks, then one merge once every task has succeeded.
#   SUBMISSIONS=/shared/course/submissions SHARDS=8 deploy/slurm-submit.sh
# Run it from anywhere on the shared file system (see slurm-grade.sh for what a node needs):
# the jobs run in this repository's root (--chdir), SUBMISSIONS and OUT (default: grades, from
# where you run it) are made absolute first. The class's files land in $OUT/grades.csv and
# $OUT/grades/, each job's log in $OUT/lumen-*.log; a shard that failed is rerun alone with
#   SUBMISSIONS=... SHARDS=... OUT=... sbatch --array=K deploy/slurm-grade.sh
# from the repository's root, then the merge with the last sbatch below (the same variables).
set -euo pipefail
: "${SUBMISSIONS:?set SUBMISSIONS to the folder of the submissions (one per learner)}"
SHARDS="${SHARDS:-4}"
OUT="${OUT:-grades}"
[ -d "$SUBMISSIONS" ] || { echo "slurm-submit.sh: no folder of submissions at $SUBMISSIONS" >&2
    exit 2; }
mkdir -p "$OUT"
SUBMISSIONS=$(realpath -- "$SUBMISSIONS")
OUT=$(realpath -- "$OUT")
repo=$(realpath -- "$(dirname -- "${BASH_SOURCE[0]}")/..")
# The jobs read these from the environment (--export=ALL): no path is spliced into an option
# or a script, whatever characters it holds.
export SUBMISSIONS SHARDS OUT
array=$(sbatch --parsable --array="1-$SHARDS" --export=ALL --chdir="$repo" \
    --output="$OUT/lumen-grade-%A_%a.log" "$repo/deploy/slurm-grade.sh")
# The merge runs under /bin/sh: the shards' CSVs 1..SHARDS, read from the environment.
sbatch --parsable --dependency="afterok:$array" --job-name=lumen-merge --export=ALL \
    --chdir="$repo" --output="$OUT/lumen-merge-%j.log" --wrap='set --; k=1
while [ "$k" -le "$SHARDS" ]; do set -- "$@" "$OUT/shard-$k.csv"; k=$((k + 1)); done
exec .venv/bin/python -m autograder merge-shards "$@" --out "$OUT/grades.csv"'
echo "submitted shards (job $array) and their merge: $OUT/grades.csv when both are done"
