"""Step 4 of nbgrade, inside ``nbgrader autograde``: ``SandboxedGrades`` in place of Execute.

Each stage's check cell gets the stage's score from our sandboxed grader as its output
(``stage_outputs``), which nbgrader's own SaveAutoGrades records in the gradebook; the
learner's notebook is never run, so its cells cannot touch a grade. Why not stock nbgrader's
test cells, run in the learner's kernel: whatever runs there runs as the instructor, next to
the gradebook, and can rewrite its own outputs and verdicts. Here learner code runs only in
the grader's sandbox.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Enum, Unicode

from lumen.stages import STAGE_NAMES, stage

from ..boundary.clean import clean_text
from ..options import FEEDBACK
from ..results import StageGrade
from ..views.report import check_name, check_output
from .classbook import GRADE, read_grade
from .nbgrade_course import GRADES, NbgradeError, grade_id

#: A stage's check cell in the lab notebook -> the stage (grade ids:
#: autograder/publish/notebook.py).
CHECK_CELLS = {grade_id(s): s for s in STAGE_NAMES}


def stage_outputs(graded: StageGrade, feedback: str) -> list:
    """A check cell's outputs, which nbgrader's ``determine_grade`` reads: the stage's score as
    the cell's value, or an error when it is 0 (nbgrader reads a value it cannot parse, or
    none, as full credit, so a stage worth nothing must be an error, never a printed 0)."""
    name, score, out_of = graded.name, graded.score, graded.max_score
    mine = [r for r, _, _ in graded.tests]
    passed = sum(r.passed for r in mine)
    stub = graded.unwritten  # every check met a stub's body
    lines = [f"Stage '{name}' ({stage(name).title}): " + (
                 f"not implemented yet, {score:g} / {out_of:g}: write its functions in your "
                 ".py files (where they raise NotImplementedError)." if stub else
                 f"{score:g} / {out_of:g}, {passed} of {len(mine)} hidden checks passed."),
             "Graded by the course's sandboxed grader from your .py files, not by this cell."]
    if stub:
        pass
    elif feedback == "messages":
        lines += [f"- {clean_text(check_name(graded, r), 200)}: "
                  f"{clean_text(check_output(r), 600)}" for r in mine if not r.passed][:3]
    elif passed < len(mine):
        lines.append(f"To see what to fix: run this cell, or `pytest exercises -m {name}`.")
    text = "\n".join(lines) + "\n"
    outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    if score > 0:
        outputs.append(nbformat.v4.new_output("execute_result", execution_count=1,
                                              data={"text/plain": repr(score)}))
    else:
        outputs.append(nbformat.v4.new_output(
            "error", ename="StageNotPassed", evalue=(evalue := (
                "not implemented yet: " if stub else "") + f"0 / {out_of:g} for stage '{name}'"),
            traceback=[f"StageNotPassed: {evalue}"]))
    return outputs


class SandboxedGrades(NbGraderPreprocessor):
    """In place of nbgrader's Execute: the check cells' outputs from our grader's results.

    Every output of the notebook is dropped (nbgrader's ClearOutput already did), and each
    stage's check cell gets ``stage_outputs``. A learner without results (the grader failed on
    them) raises, so nbgrader records no grade at all for them: never a zero they did not earn.
    """

    results = Unicode(GRADES, help="the folder of our grader's results, a grade.json (the "
                      "record) per learner, relative to the course folder").tag(config=True)
    feedback = Enum(FEEDBACK, default_value=FEEDBACK[0], help="what a check cell shows: the "
                    "stage's score and how many hidden checks passed, or also the hidden "
                    "checks' messages").tag(config=True)

    def preprocess(self, nb, resources):
        student = resources["nbgrader"]["student"]
        path = Path(self.results) / student / GRADE
        try:
            stages = {s.name: s for s in read_grade(path.parent).stages}
        except (OSError, ValueError) as error:
            raise NbgradeError(f"no grade from the sandboxed grader for {student} ({path}: "
                               f"{type(error).__name__}); see lumen/{student}/error.txt") from None
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            gid = meta.get("grade_id", "")
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
            name = CHECK_CELLS.get(gid)
            if meta.get("grade") and name in stages:
                cell.outputs = stage_outputs(stages[name], self.feedback)
        return nb, resources
