"""One learner's outcome in a batch, written as files: their record and its views, or why not.

grade.json (the record, ``Grade.to_json``) is written last, since its presence means 'graded';
results.json (Gradescope's, ``report.gradescope``) and feedback.txt (the learner's report) are
views of it, and error.txt says why a learner has none. Every file is written atomically
(``report.write_atomic``). Recording never raises: a learner whose files cannot be written gets
a grading error, which their row shows, and the batch goes on.
"""

from __future__ import annotations

from pathlib import Path

from ..options import DEFAULT_VISIBILITY
from ..results import Grade
from ..views import report
from ..views.escape import terminal
from ..views.report import write_atomic, write_json
from .classbook import ERROR, FEEDBACK, GRADE, RESULTS


def write_learner(folder: Path, grade: Grade, visibility: str) -> None:
    """A graded learner's files, each a view of their ``grade``; the record, grade.json, last,
    since its presence means 'graded'."""
    write_atomic(folder / FEEDBACK, report.terminal(grade))
    write_json(folder / RESULTS, report.gradescope(grade, visibility))
    write_json(folder / GRADE, grade.to_json())
    (folder / ERROR).unlink(missing_ok=True)


def write_outcome(folder: Path, reply: dict, visibility: str,
                   made_by: dict[str, str], graded_from: str) -> Grade | None:
    """A learner's files from a grading process's reply: its Grade (read back through
    ``Grade.from_json``, which checks it), marked with the grader and the files it was made
    by and from, or why there is none."""
    if "grade" in reply:
        grade = Grade.from_json(reply["grade"])
        grade.made_by, grade.graded_from = dict(made_by), graded_from
        write_learner(folder, grade, visibility)
        return grade
    for name in (GRADE, RESULTS):  # a forced regrade that failed: no stale row
        (folder / name).unlink(missing_ok=True)
    write_atomic(folder / ERROR, terminal(reply["error"]) + "\n")  # read with cat
    return None


def record(folder: Path, reply: dict, failures: dict[str, str],
            visibility: str = DEFAULT_VISIBILITY,
            made_by: dict[str, str] | None = None,
            graded_from: str | None = None) -> tuple[str | None, str]:
    """Write one learner's outcome: (why they were not graded, or None; what the progress line
    says). Never raises: a learner whose files cannot be written (a full disk, a name or a
    reply that breaks a writer or is no record) gets a grading error in ``failures``, which
    their row shows."""
    try:
        grade = write_outcome(folder, reply, visibility, made_by or {}, graded_from or "")
        if grade is not None:
            return None, f"{grade.score:.1f} ({grade.seconds:.1f} s)"
        error = str(reply["error"])
    except Exception as exc:  # noqa: BLE001 - this learner's failure, never the batch's
        error = f"grading error: their files could not be written ({type(exc).__name__}: {exc})"
        failures[folder.name] = error
        try:
            for name in (GRADE, RESULTS):  # no stale grade from an earlier run
                (folder / name).unlink(missing_ok=True)
            write_atomic(folder / ERROR, terminal(error) + "\n")  # for later runs' rows
        except Exception:  # noqa: BLE001 - this run's row says why all the same
            pass
    return error, f"not graded: {terminal(error, 120)}"
