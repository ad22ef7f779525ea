"""deploy/'s Slurm recipe, run for real: a one-node Slurm on loopback (tools/slurm_local.py).

A class of three (lumen's own files, the stubs, and a learner halfway through: the first three
stages solved) is submitted as docs/cluster.md says, ``SUBMISSIONS=... SHARDS=2
deploy/slurm-submit.sh``, from outside the repository with relative paths, under a folder whose
name holds a space and non-ASCII letters and in the C locale (as on many a login node): the
job array and its merge run under slurmd, as root, each shard's learners in bubblewrap. The
merged files are compared with one ``grade-batch`` over the same class, as tests/test_shards.py
compares its merge (assert_merged_as_single). It skips, saying why, where Slurm cannot start:
not root, slurm-wlm or munge not installed (``make slurm``), a daemon that fails (its log).
tests/test_deploy.py keeps a fast test of the recipe's commands with a stand-in sbatch.
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from lumen.stages import SUBMISSION_FILES
from solutions.release import submission
from tests.test_shards import assert_merged_as_single
from tools import slurm_local

ROOT = Path(__file__).resolve().parents[1]
SHARDS = 2
QUEUE_SECONDS = 600  # for the array and its merge (about a minute on two cores)
COURSE = "cours d'été"  # a space, a quote and non-ASCII letters: paths reach the jobs intact


def _class(folder: Path) -> None:
    learners = {
        "correct": {n: (ROOT / "lumen" / n).read_text(encoding="utf-8")
                    for n in SUBMISSION_FILES},
        "stubs": {str(p): text for p, text in submission().items()},
        "halfway": {str(p): text for p, text in
                    submission(["embedding", "onehot", "neighbours"]).items()},
    }
    for learner, files in learners.items():
        (folder / learner).mkdir(parents=True)
        for name, text in files.items():
            (folder / learner / name).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def cluster():
    """A one-node Slurm for this file, its daemons stopped at the end whatever happened."""
    with ExitStack() as stack:
        try:
            running = stack.enter_context(slurm_local.cluster())
        except slurm_local.Unavailable as e:
            pytest.skip(f"no local Slurm: {e}")
        yield running


def _logs(out: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                     for p in sorted(out.glob("lumen-*.log")))


@pytest.fixture(scope="module")
def graded(cluster, tmp_path_factory):
    """The recipe's array and merge over the class, and one grade-batch over it beside them.
    Returns (the course folder, {job: (name, state)})."""
    course = tmp_path_factory.mktemp("slurm") / COURSE
    _class(course / "submissions")
    env = {**cluster.env(), "SUBMISSIONS": "submissions", "SHARDS": str(SHARDS),
           "OUT": "grades", "LC_ALL": "C"}
    submitted = subprocess.run([str(ROOT / "deploy" / "slurm-submit.sh")], cwd=course, env=env,
                               capture_output=True, text=True, timeout=60)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    single = subprocess.Popen([sys.executable, "-m", "autograder", "grade-batch",
                               str(course / "submissions"), "--out",
                               str(course / "single" / "grades.csv"), "--jobs", "1"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        said = single.communicate(timeout=QUEUE_SECONDS)[0]
        cluster.wait_for_queue(QUEUE_SECONDS)
    finally:
        if single.poll() is None:
            single.kill()
            single.wait()
    assert single.returncode == 0, said
    return course, cluster.states()


def test_the_array_and_its_merge_complete(graded):
    course, states = graded
    out = course / "grades"
    names = sorted(name for name, _ in states.values())
    assert names == ["lumen-grade"] * SHARDS + ["lumen-merge"], states
    assert all(state == "COMPLETED" for _, state in states.values()), \
        f"{states}\n{_logs(out)}"
    logs = {p.name: p.read_text() for p in out.glob("lumen-*.log")}
    assert len(logs) == SHARDS + 1, f"each job's log in $OUT: {sorted(logs)}"
    said = "".join(logs.values())
    for k in range(1, SHARDS + 1):
        assert f"shard {k}/{SHARDS}:" in said, said
    assert "merged 2 shards: 3 learners" in said, said


def test_the_merge_is_the_single_runs_class(graded):
    course, states = graded
    out = course / "grades"
    assert (out / "grades.csv").is_file(), f"{states}\n{_logs(out)}"
    merged = assert_merged_as_single(course / "single" / "grades.csv", out / "grades.csv",
                                     [out / f"shard-{k}" for k in range(1, SHARDS + 1)])
    totals = {learner: float(row["total"]) for learner, row in merged.items()}
    assert totals["correct"] == 100 and totals["stubs"] == 0
    assert 0 < totals["halfway"] < 100
    summary = (out / "grades" / "summary.md").read_text(encoding="utf-8")
    assert "unsafe-process" not in summary, "graded in bubblewrap under slurmd"
