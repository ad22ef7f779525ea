"""What nbgrade reads back from nbgrader's gradebook: the scores, stages.csv, the late penalties.

After ``nbgrader autograde``: ``late_penalties`` says whom nbgrader's late penalty took points
from, and ``note_late`` tells each of them at the top of their graded notebook that the cell
scores are before it (grades.csv's total is after it); ``write_stages_csv`` writes a row per
learner, a column per stage and written answer, from the gradebook's own scores.
"""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat

from lumen.stages import STAGE_NAMES

from ..rubric import load
from ..views.escape import csv_number, csv_text, markdown_inline
from .nbgrade_course import ASSIGNMENT, NOTEBOOK, grade_id, gradebook

#: Which score is which once nbgrader's late penalty took points (for the instructor).
LATE_SCORES = ("grades.csv's score is after the penalty (raw_score before it, "
               "late_submission_penalty the difference); formgrader, the feedback page's "
               "cell scores and stages.csv show the scores before it")


def late_penalties(course: Path, learners: list[str]) -> dict[str, float]:
    """learner -> the points nbgrader's late penalty took from their score (its gradebook,
    after autograde), for each of ``learners`` it took any from."""
    with gradebook(course) as gb:
        taken = {s.student.id: s.late_submission_penalty
                 for s in gb.assignment_submissions(ASSIGNMENT)}
    return {x: taken[x] for x in sorted(learners) if taken.get(x)}


def late_note(points: float) -> str:
    """The learner's note when nbgrader's late penalty took ``points`` from their score."""
    return (f"submitted after the due date: nbgrader's late penalty takes {points:g} points "
            "from your total; the score shown with each cell is before it")


def note_late(course: Path, learner: str, points: float) -> str:
    """``late_note`` at the top of the learner's graded notebook, after autograde: formgrader
    shows it above the scores, and the feedback page carries it. The note, for stages.csv."""
    note = late_note(points)
    path = course / "autograded" / learner / ASSIGNMENT / NOTEBOOK
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**Late:** {markdown_inline(note)}"))
    nbformat.write(nb, path)
    return note


def gradebook_scores(course: Path) -> dict[str, dict[str, float | None]]:
    """learner -> grade_id -> score, as nbgrader's gradebook holds them (written answers: None
    until marked)."""

    scores: dict[str, dict[str, float | None]] = {}
    with gradebook(course) as gb:
        for submission in gb.assignment_submissions(ASSIGNMENT):
            for submitted in submission.notebooks:
                for grade in submitted.grades:
                    scores.setdefault(submission.student.id, {})[grade.name] = (
                        None if grade.needs_manual_grade and grade.manual_score is None
                        else grade.score)
    return scores


def write_stages_csv(course: Path, learners: list[str], notes: dict[str, list[str]],
                     problems: dict[str, str]) -> None:
    """``stages.csv``: a row per learner, a column per stage and written answer (from the
    gradebook), the stages' total, and the notes."""

    written = list(load().written)
    scores = gradebook_scores(course)
    with open(course / "stages.csv", "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["learner", *STAGE_NAMES, "stages_total", *written, "notes"])
        for learner in sorted({*learners, *problems}):
            mine = scores.get(learner, {})
            stage_scores = [mine.get(grade_id(s)) for s in STAGE_NAMES]
            total = sum(stage_scores) if all(s is not None for s in stage_scores) else None
            out.writerow([csv_text(learner), *(csv_number(s) for s in stage_scores),
                          csv_number(total), *(csv_number(mine.get(w)) for w in written),
                          csv_text("; ".join([*notes.get(learner, []), *filter(None, [
                              problems.get(learner)])]))])
