"""Step 3 of nbgrade: our sandboxed grader's grades for the class, kept where nothing changed.

The collected .py files are graded through grade-batch's warm workers (``batch.py``) into
``lumen/<learner>/grade.json``. A learner graded before from the same files by the same grader
(``provenance.fingerprint``, kept in graded-from.txt beside the record) keeps that grade, as
grade-batch resumes: a rerun grades only new and changed submissions.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..options import Options
from ..words import counted
from . import batch
from .classbook import GRADE, read_grade
from .nbgrade_course import ASSIGNMENT, GRADES
from .provenance import fingerprint

GRADED_FROM = "graded-from.txt"  # next to a learner's grade.json: the ``fingerprint`` graded


def reusable(grades: Path, learner: str, wanted: str) -> bool:
    """Whether ``learner``'s grade in ``grades`` came from ``wanted`` (``fingerprint``); when
    not, every file of their earlier grade goes, so grade-batch grades them afresh."""
    folder = grades / learner
    try:
        same = (folder / GRADED_FROM).read_text(encoding="utf-8").strip() == wanted and (
            folder / GRADE).is_file()
    except OSError:
        same = False
    if not same and folder.exists():
        shutil.rmtree(folder)
    return same


def grade_notes(folder: Path) -> list[str]:
    """The notes of the grade recorded in ``folder`` (none when there is none: its row says
    why, and nbgrader records no grade)."""
    try:
        return list(read_grade(folder).notes)
    except (OSError, ValueError):
        return []


def grade_class(course: Path, submitted: Path, learners: list[str], options: Options, jobs: int,
           progress) -> tuple[int, list[str]]:
    """grade-batch over submitted/, each grade made now marked with the ``fingerprint`` of
    its files: (grade-batch's status, the learners it could not grade)."""
    wanted = {x: fingerprint(submitted / x / ASSIGNMENT,
                             json.dumps(options.to_json(), sort_keys=True)) for x in learners}
    reused = [x for x in learners if reusable(course / GRADES, x, wanted[x])]
    if reused:
        print(f"reused the grades of {counted(len(reused), 'learner')} graded before from "
              "the same files by the same grader", file=progress)
    print(f"grading {counted(len(learners) - len(reused), 'learner')} in the sandbox",
          file=progress)
    status = batch.run(submitted, course / f"{GRADES}.csv", options,
                       batch.Batch(jobs=jobs, out_dir=course / GRADES), progress=progress)
    failed = [x for x in learners if not (course / GRADES / x / GRADE).is_file()]
    if status != 2:
        for learner in set(learners) - set(failed) - set(reused):  # graded now, from these
            (course / GRADES / learner / GRADED_FROM).write_text(wanted[learner] + "\n")
    return status, failed
