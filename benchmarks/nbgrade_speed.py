"""Seconds per learner: ``make nbgrade`` against stock nbgrader, on the same notebooks.

    .venv/bin/python benchmarks/nbgrade_speed.py [--learners 8] [--jobs 2]

Builds a class (each learner: the released lab.ipynb and lumen's three files, as nbgrader
collects them), then grades it twice, side by side in one run:

1. stock: ``nbgrader autograde`` as nbgrader ships it, which starts a kernel per notebook and
   runs every cell in it (each check cell runs the stage's visible tests), one notebook after
   another;
2. ours: ``python -m autograder nbgrade``: the sandboxed grader over the class through warm
   workers, then nbgrader autograde, feedback and export without running any notebook.

It prints each one's seconds per learner and ours / stock (target: at most 0.3, issue 18)
and exits 1 when it misses it. What bounds
ours: nbgrader's own commands cost a fixed few seconds each (four of them; generate_assignment
runs beside the grading, export beside generate_feedback), amortised over the class; the
grading itself is grade-batch's cost per learner (benchmarks/batch_speed.py).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.frontends import nbgrade  # noqa: E402
from autograder.publish import notebook  # noqa: E402
from lumen.stages import SUBMISSION_FILES  # noqa: E402

TARGET = 0.3  # make nbgrade / stock nbgrader autograde, per learner (issue 18)


def make_class(folder: Path, learners: int) -> Path:
    for i in range(learners):
        learner = folder / f"learner{i:03d}"
        learner.mkdir(parents=True)
        shutil.copy(ROOT / "exercises" / notebook.NOTEBOOK, learner / notebook.NOTEBOOK)
        for name in SUBMISSION_FILES:
            shutil.copy(ROOT / "lumen" / name, learner / name)
    return folder


def stock(submissions: Path, course: Path) -> float:
    """nbgrader's own autograde: the same course, its default preprocessors (Execute)."""
    notebook.make_course(course, files=ROOT / "exercises")
    config = course / notebook.CONFIG
    config.write_text(config.read_text() + "\nc.Autograde.exclude_overwriting = "
                      f"{{{nbgrade.ASSIGNMENT!r}: {list(SUBMISSION_FILES)!r}}}\n")
    notebook.nbgrader(course, "generate_assignment", nbgrade.ASSIGNMENT, "--force")
    for learner in sorted(submissions.iterdir()):
        shutil.copytree(learner, course / "submitted" / learner.name / nbgrade.ASSIGNMENT)
    started = time.perf_counter()
    notebook.nbgrader(course, "autograde", nbgrade.ASSIGNMENT, "--force", timeout=7200)
    return time.perf_counter() - started


def ours(submissions: Path, course: Path, jobs: int) -> float:
    started = time.perf_counter()
    with open(course.parent / "ours.log", "w") as progress:
        code = nbgrade.run(submissions, course, jobs=jobs, progress=progress)
    if code != 0:
        raise SystemExit(f"nbgrade exited {code}: see {course.parent / 'ours.log'}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nbgrade-bench-") as scratch:
        root = Path(scratch)
        submissions = make_class(root / "submissions", args.learners)
        ours_s = ours(submissions, root / "ours", args.jobs) / args.learners
        stock_s = stock(submissions, root / "stock") / args.learners
    print(f"{args.learners} learners: stock nbgrader autograde {stock_s:.2f} s/learner "
          f"(its autograde alone); make nbgrade {ours_s:.2f} s/learner (everything: course, "
          f"grading, autograde, feedback, export)")
    ratio = ours_s / stock_s
    print(f"ours / stock = {ratio:.2f} (target: at most {TARGET}: "
          f"{'meets' if ratio <= TARGET else 'misses'} it)")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
