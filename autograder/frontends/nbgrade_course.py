"""The nbgrader course ``nbgrade`` grades in: made from solutions/course/, set up for grading.

``prepare_course`` builds the course folder, generates the assignment in its gradebook (with
the due date, if given) and appends ``grading_config`` to its nbgrader_config.py: our
preprocessor in place of nbgrader's Execute, the sanitising feedback exporter, the late
penalty. This is the one module of nbgrade's that imports the course's source
(autograder/publish/notebook.py); the others take its names from here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.utils import parse_utc

from autograder.publish import notebook
from autograder.publish.notebook import ASSIGNMENT, NOTEBOOK, grade_id, nbgrader_cells
from autograder.publish.notebook import NotebookError as NotebookError  # what this front end raises
from lumen.stages import SUBMISSION_FILES

from .. import ROOT
from ..options import LATE_PENALTIES

#: The course's source's names that nbgrade's other modules take from here.
__all__ = ["ASSIGNMENT", "NOTEBOOK", "NotebookError", "grade_id", "nbgrader_cells"]

CONFIG = notebook.CONFIG  # the course's nbgrader configuration file
GRADES = "lumen"  # the course folder's subfolder of our grader's results


class NbgradeError(Exception):
    """The pipeline cannot go on (no course, nbgrader failed); the message says what to do."""


def nbgrader(course: Path, *args: str, **options) -> subprocess.CompletedProcess:
    """``nbgrader ARGS`` in the course folder ``course`` (``notebook.nbgrader``)."""
    return notebook.nbgrader(course, *args, **options)


def gradebook(course: Path) -> Gradebook:
    """The course's gradebook (gradebook.db), to use in a ``with``."""
    return Gradebook(f"sqlite:///{course / 'gradebook.db'}", notebook.COURSE_ID)


def grading_config(feedback: str, late_penalty: str = LATE_PENALTIES[0]) -> str:
    """What the course's nbgrader_config.py gets for grading, after the release settings."""
    return f'''
# --- grading, written by `python -m autograder nbgrade` (autograder/frontends/nbgrade.py) ---
import sys
sys.path.insert(0, {str(ROOT)!r})
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, IgnorePattern,
                                    LimitOutput, SaveAutoGrades)
from autograder.frontends.nbgrade import SafeFeedbackHTML, SandboxedGrades, WrapLongLines

# The learner's .py files stay theirs in autograded/ (nbgrader would put the release's there).
c.Autograde.exclude_overwriting = {{{ASSIGNMENT!r}: {list(SUBMISSION_FILES)!r}}}
# Our grader's scores in place of running the notebook (nbgrader's Execute).
c.Autograde.autograde_preprocessors = [SandboxedGrades, IgnorePattern, ClearMetadataPreprocessor,
                                       LimitOutput, SaveAutoGrades, AssignLatePenalties,
                                       CheckCellMetadata]
c.SandboxedGrades.results = {GRADES!r}
c.SandboxedGrades.feedback = {feedback!r}
# The feedback HTML holds the learner's written answers: sanitised (bleach), never live HTML.
c.GenerateFeedback.exporter_class = SafeFeedbackHTML
c.HTMLExporter.sanitize_html = True
# Long lines and words wrap in formgrader's grading page and the feedback page: our header CSS
# in place of nbconvert's (WrapLongLines).
c.HTMLExporter.preprocessors = [WrapLongLines]
c.CSSHTMLHeaderPreprocessor.enabled = False
# A submission later than the gradebook's due date (its timestamp.txt): nbgrader's penalty.
c.LateSubmissionPlugin.penalty_method = {late_penalty!r}
'''


def prepare_course(course: Path, feedback: str, late_penalty: str = LATE_PENALTIES[0],
                   due: str | None = None) -> None:
    """The course folder, made or refreshed, with the assignment generated in its gradebook;
    ``due`` (any date nbgrader reads, e.g. "2026-12-01 17:00 UTC") becomes its due date there.
    A due date set before (formgrader, ``nbgrader db assignment add``) is kept otherwise."""
    notebook.make_course(course, files=ROOT / "exercises")
    config = course / CONFIG
    config.write_text(config.read_text(encoding="utf-8") + grading_config(feedback, late_penalty),
                      encoding="utf-8")
    nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    if due is not None:

        try:
            when = parse_utc(due)
        except (ValueError, OverflowError) as error:
            raise NbgradeError(f"--due {due!r} is not a date ({error}): give one such as "
                               "'2026-12-01 17:00:00 UTC'") from None
        with gradebook(course) as gb:
            gb.update_or_create_assignment(ASSIGNMENT, duedate=when)
