"""Grading through nbgrader: ``python -m autograder nbgrade SUBMISSIONS [--course DIR]``.

In a course folder (default ``build/nbgrader``) built from solutions/course/: 1. the course
(``nbgrade_course.py``), made beside steps 2 and 3; 2. each learner's files and notebook into
``submitted/`` (``nbgrade_collect.py``, ``nbgrade_repair.py``); 3. our sandboxed grader on
their .py files (``nbgrade_grades.py``); 4. ``nbgrader autograde``, our scores in place of
running the notebook (``nbgrade_preprocessor.py``); 5. ``nbgrader generate_feedback``, its
pages sanitised and read back (``nbgrade_feedback.py``), ``nbgrader export`` beside it, and
stages.csv from the gradebook (``nbgrade_gradebook.py``). The closing lines name them and the
feedback folder. The instructor's guide, and why it is built so: docs/nbgrader.md.

This module runs the steps in order. The command, the course's configuration and the tests
import it, so it also names the steps' public names (``__all__``).
"""

from __future__ import annotations

import functools
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from ..options import FEEDBACK, LATE_PENALTIES, Options
from ..views.escape import terminal
from ..words import counted
from .nbgrade_collect import (
    OWN_TIMESTAMP,
    STUDENT_ID,
    STUDENT_ID_RULE,
    TIMESTAMP,
    carry_timestamp,
    copy_files,
    learner_folders,
    submission_time,
)
from .nbgrade_course import (
    ASSIGNMENT,
    GRADES,
    NOTEBOOK,
    NbgradeError,
    NotebookError,
    nbgrader,
    prepare_course,
)
from .nbgrade_feedback import WRAP_CSS, SafeFeedbackHTML, WrapLongLines, withhold_live_feedback
from .nbgrade_gradebook import (
    LATE_SCORES,
    gradebook_scores,
    late_note,
    late_penalties,
    note_late,
    write_stages_csv,
)
from .nbgrade_grades import grade_class, grade_notes
from .nbgrade_markdown import (
    INERT_KINDS,
    MAX_MARKDOWN,
    markdown_problems,
    render_markdown,
    written_answer,
)
from .nbgrade_preprocessor import CHECK_CELLS, SandboxedGrades, stage_outputs
from .nbgrade_repair import into_submitted, repair

#: What the command, nbgrader's configuration (``grading_config``) and the tests take from here.
__all__ = [
    "ASSIGNMENT", "CHECK_CELLS", "FEEDBACK", "GRADES", "INERT_KINDS", "LATE_SCORES",
    "MAX_MARKDOWN", "NOTEBOOK", "OWN_TIMESTAMP", "STUDENT_ID", "STUDENT_ID_RULE", "TIMESTAMP",
    "WRAP_CSS", "NbgradeError", "NotebookError", "SafeFeedbackHTML", "SandboxedGrades",
    "WrapLongLines", "carry_timestamp", "gradebook_scores", "late_note", "learner_folders",
    "markdown_problems", "prepare_course", "render_markdown", "repair", "run", "stage_outputs",
    "submission_time", "withhold_live_feedback", "written_answer"]


OURS = ".lumen-nbgrade"  # marks a submitted/ tree as this command's copy


def run(submissions: Path, course: Path, options: Options | None = None, jobs: int = 2,
        feedback: str = FEEDBACK[0], progress=None, late_penalty: str = LATE_PENALTIES[0],
        due: str | None = None) -> int:
    """Grade every learner folder in ``submissions`` through nbgrader in ``course``, under
    ``options`` (``autograder/options.py``; nbgrade's command line sets device and sandbox).

    ``due``: the assignment's due date, set in the gradebook (else the one there, if any);
    ``late_penalty``: nbgrader's penalty for a submission after it (``LATE_PENALTIES``).
    Returns 0 when every learner was graded, 1 when some could not be (listed; a rerun
    retries them), 2 when the pipeline stopped."""

    options = options or Options()
    progress = progress or sys.stderr
    started = time.perf_counter()
    course = course.resolve()
    inside = submissions.resolve()
    if course == inside or course in inside.parents or inside in course.parents:
        raise NbgradeError(f"the submissions ({submissions}) and the course folder ({course}) "
                           "are inside one another, and the course folder is rewritten: give "
                           "--course a folder of its own")
    submitted = course / "submitted"
    if submitted.exists() and not (submitted / OURS).is_file():
        raise NbgradeError(f"{submitted} holds submissions this command did not copy there "
                           "(from nbgrader collect?): they are left alone; give --course a "
                           "folder of its own, or pass that folder as SUBMISSIONS")
    if late_penalty not in LATE_PENALTIES:
        raise NbgradeError(f"the late penalty {late_penalty!r} is not one of nbgrader's: "
                           f"{', '.join(LATE_PENALTIES)}")
    folders, problems = learner_folders(submissions)
    learners = list(folders)
    # nbgrader's generate_assignment takes seconds, and the grading needs none of it: it runs
    # beside the grading, which reads only the .py files, copied into submitted/ first. The
    # notebooks follow once the release they are repaired against is there.
    course.mkdir(parents=True, exist_ok=True)
    beside = ThreadPoolExecutor(max_workers=1)
    preparing = beside.submit(prepare_course, course, feedback, late_penalty, due)
    try:
        late: dict[str, str | None] = {}
        if submitted.exists():
            shutil.rmtree(submitted)  # our copy from an earlier run, rebuilt from SUBMISSIONS
        submitted.mkdir(parents=True)
        (submitted / OURS).write_text("copied by python -m autograder nbgrade from "
                                      f"{submissions.resolve()}; rebuilt on every run\n")
        for learner in learners:
            target = submitted / learner / ASSIGNMENT
            copy_files(folders[learner], target)
            late[learner] = submission_time(submissions, learner, folders[learner], target)
        status, failed = grade_class(course, submitted, learners, options, jobs, progress)
    finally:
        beside.shutdown(wait=True)
    if status == 2:  # stopped: submitted/ and the course are made afresh by the next run
        return 2
    preparing.result()  # raises what preparing the course raised
    release = nbformat.read(course / "release" / ASSIGNMENT / NOTEBOOK, as_version=4)
    notes: dict[str, list[str]] = {}
    for learner in learners:
        told = grade_notes(course / GRADES / learner)  # on their .py files, as every front
        notes[learner] = [*into_submitted(  # end gives them, in the feedback too
            folders[learner], submitted / learner / ASSIGNMENT, release, told=told),
            *([late[learner]] if late[learner] else []), *told]
    graded = [x for x in learners if x not in failed]
    return _nbgrader_steps(course, learners, graded, failed, notes, problems, progress, started)


def _nbgrader_steps(course: Path, learners: list[str], graded: list[str], failed: list[str],
                    notes: dict[str, list[str]], problems: dict[str, str], progress,
                    started: float) -> int:
    """nbgrader's autograde, feedback and export, then stages.csv; ``run``'s status."""
    export = functools.partial(nbgrader, course, "export", "--to",
                               str(course / "grades.csv"), timeout=600)
    penalised: dict[str, float] = {}
    if graded:
        exclude = ",".join(failed)
        extra = [f"--CourseDirectory.student_id_exclude={exclude}"] if failed else []
        print(f"nbgrader autograde: {counted(len(graded), 'notebook')}", file=progress)
        nbgrader(course, "autograde", ASSIGNMENT, "--force", *extra, timeout=3600)
        penalised = late_penalties(course, graded)
        for learner, points in penalised.items():  # before the feedback, which shows it too
            notes[learner] = [*notes.get(learner, []), note_late(course, learner, points)]
        with ThreadPoolExecutor(max_workers=1) as beside:  # both only read the gradebook
            exporting = beside.submit(export)
            nbgrader(course, "generate_feedback", ASSIGNMENT, "--force", *extra, timeout=3600)
        exporting.result()  # raises what the export raised
        for learner in graded:
            withheld = withhold_live_feedback(course / "feedback" / learner / ASSIGNMENT)
            if withheld:
                notes[learner] = [*notes.get(learner, []), withheld]
                print(f"{learner}: {withheld}", file=progress)
    else:
        export()
    write_stages_csv(course, learners, notes, {**problems, **{
        x: "not graded: the grader failed on it (see lumen/<learner>/error.txt); rerun"
        for x in failed}})
    print(f"wrote {course / 'grades.csv'} (nbgrader's export) and {course / 'stages.csv'} in "
          f"{time.perf_counter() - started:.1f} s", file=progress)
    if graded:
        print(f"feedback: {course / 'feedback'}/<learner>/{ASSIGNMENT}/"
              f"{Path(NOTEBOOK).stem}.html, a page per learner (nbgrader generate_feedback; "
              f"nbgrader release_feedback {ASSIGNMENT} hands them out)", file=progress)
    if penalised:
        names = ", ".join(terminal(x, 100) for x in penalised)
        print(f"late: nbgrader's late penalty took points from "
              f"{counted(len(penalised), 'learner')} ({names}): {LATE_SCORES}", file=progress)
    for name, why in problems.items():
        print(f"not graded: {terminal(name, 100)}: {why}", file=progress)
    return 1 if failed or problems else 0
