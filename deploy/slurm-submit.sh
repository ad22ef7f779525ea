#!/usr/bin/env bash
# Grade a class on Slurm: SHARDS array tasks, then one merge once every task has succeeded.
#   SUBMISSIONS=/shared/course/submissions SHARDS=8 deploy/slurm-submit.sh
# Run it from the repository's root, on the shared file system (see slurm-grade.sh for what
# a node needs). The class's files land in $OUT/grades.csv and $OUT/grades/; a shard that
# failed is rerun alone with `sbatch --array=K --export=ALL,SHARDS=$SHARDS,... deploy/slurm-grade.sh`,
# then the merge with the last command below.
set -euo pipefail
: "${SUBMISSIONS:?set SUBMISSIONS to the folder of the submissions (one per learner)}"
SHARDS="${SHARDS:-4}"
OUT="${OUT:-grades}"
mkdir -p "$OUT"
array=$(sbatch --parsable --array="1-$SHARDS" \
    --export="ALL,SUBMISSIONS=$SUBMISSIONS,SHARDS=$SHARDS,OUT=$OUT" deploy/slurm-grade.sh)
shards=()
for k in $(seq 1 "$SHARDS"); do shards+=("$OUT/shard-$k.csv"); done
printf -v merge '%q ' .venv/bin/python -m autograder merge-shards "${shards[@]}" \
    --out "$OUT/grades.csv"
sbatch --parsable --dependency="afterok:$array" --job-name=lumen-merge \
    --output="lumen-merge-%j.log" --wrap="$merge"
echo "submitted shards (job $array) and their merge: $OUT/grades.csv when both are done"
