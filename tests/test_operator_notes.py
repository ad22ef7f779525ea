"""Operator notes never reach learners.

The grader's notes for its operator (the sandbox it ran, its memory bound, any fallback it
took: ``Grader.operator_notes``) go to stderr, results.json's extra_data (instructors only) and
grade-batch's summary.md. Here a learner with failing stages is graded under both sandbox
modes with a forced note added, and every field a learner reads, in every front end, is
searched for any stretch of any note: the terminal report (``make grade``), results.json's
learner-visible fields (Gradescope's top-level output and each test's name and output),
grade-batch's feedback.txt and results.json, JUnit, nbgrader's check cells (both feedback
modes) and the feedback page nbgrader makes from them, and GitHub Classroom's log and runner
outputs.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
from pathlib import Path

import nbformat
import pytest

from autograder.frontends import batch_records, batch_server, classbook, classroom, nbgrade
from autograder.frontends.summary import SUMMARY, write_summary
from autograder.grading import Grader
from autograder.options import Options
from autograder.publish import notebook
from autograder.results import Grade
from autograder.views import report
from lumen.stages import STAGE_NAMES
from solutions import release

ROOT = Path(__file__).resolve().parents[1]
MODES = ("bwrap", "unsafe-process")
#: A fallback's note, as a launcher's warning reads: forced into every grade here.
FORCED = ("fallback taken: no memory cgroup could be made on this machine (cgroup v2 not "
          "delegated), so the memory bound is the address space of each process")
PRINTS = "print('hello from the learner')\n"  # so "Your code printed" fields are not empty


def _windows(text: str, size: int = 24, step: int = 6) -> list[str]:
    """Every stretch of ``size`` characters of ``text``, ``step`` apart (and its end)."""
    if len(text) <= size:
        return [text]
    return [text[i:i + size] for i in range(0, len(text) - size, step)] + [text[-size:]]


@pytest.fixture(scope="module", params=MODES)
def seen(request, tmp_path_factory) -> tuple[list[str], dict[str, str], dict]:
    """(the operator notes, front end -> what a learner reads there, grade-batch's
    results.json) for a partial learner graded in ``request.param``'s sandbox."""
    mode = request.param
    root = tmp_path_factory.mktemp(f"notes-{mode}")
    learner = root / "submissions" / "alice"
    release.write(learner, solved=["embedding", "onehot", "params"])
    path = learner / "embeddings.py"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "from torch import Tensor, nn\n", "from torch import Tensor, nn\n\n" + PRINTS, 1),
        encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        notes_of = Grader.operator_notes
        patch.setattr(Grader, "operator_notes", lambda self: [*notes_of(self), FORCED])
        with Grader(Options(sandbox=mode)) as grader:
            notes = grader.operator_notes()
            grade = grader.grade(learner, seed=0)
            reply = batch_server.grade_one(grader, {"learner": "alice", "path": str(learner)})
    assert FORCED in notes and any(mode in note for note in notes), notes
    assert grade.operator_notes == notes and grade.score < grade.max_score
    results = report.gradescope(grade, "visible")
    assert results["extra_data"]["operator_notes"] == notes  # the instructors' channel
    folder = root / "lumen" / "alice"  # grade-batch's files, where nbgrade's step 3 leaves them
    batched = Grade.from_json(reply["grade"])
    batch_records.write_learner(folder, batched, "after_due_date")
    batch_results = json.loads((folder / classbook.RESULTS).read_text(encoding="utf-8"))
    assert batch_results["extra_data"]["operator_notes"] == notes

    shown = {"terminal": report.terminal(grade), "junit": report.junit(grade),
             "batch feedback.txt": (folder / classbook.FEEDBACK).read_text(encoding="utf-8")}
    for visibility in ("visible", "after_due_date"):
        data = report.gradescope(grade, visibility)
        shown[f"results.json ({visibility})"] = json.dumps(
            {k: v for k, v in data.items() if k != "extra_data"})
    shown["batch results.json"] = json.dumps(
        {k: v for k, v in batch_results.items() if k != "extra_data"})
    assert "Your code printed" in shown["results.json (visible)"]  # the fields are all there

    for feedback in nbgrade.FEEDBACK:
        lab = nbformat.read(ROOT / "exercises" / notebook.NOTEBOOK, as_version=4)
        lab, _ = nbgrade.SandboxedGrades(results=str(root / "lumen"), feedback=feedback) \
            .preprocess(lab, {"nbgrader": {"student": "alice"}})
        cells = [c for c in lab.cells if nbgrade.CHECK_CELLS.get(
            c.metadata.get("nbgrader", {}).get("grade_id")) in STAGE_NAMES]
        assert len(cells) == len(STAGE_NAMES)
        shown[f"nbgrader check cells ({feedback})"] = json.dumps([c.outputs for c in cells])
        shown[f"nbgrader feedback page ({feedback})"] = nbgrade.SafeFeedbackHTML() \
            .from_notebook_node(lab)[0]

    out = root / "grade.json"  # Classroom's grading step writes the record
    report.write_json(out, batched.to_json())
    github = root / "github_output"
    with contextlib.redirect_stdout(io.StringIO()) as log:
        classroom.report(out, 0, github_output=str(github))
    shown["Classroom log"] = log.getvalue()
    shown["Classroom runner outputs"] = json.dumps([
        json.loads(base64.b64decode(line.split("=", 1)[1])) for line in
        github.read_text().splitlines()])
    return notes, shown, batched


def test_no_operator_note_reaches_a_learner(seen):
    notes, shown, _ = seen
    for where, text in shown.items():
        assert text.strip(), where
        for note in notes:
            leaked = [w for w in _windows(note) if w in text]
            assert not leaked, f"{where} shows the operator note {note!r}: {leaked[:3]}"


def test_the_operator_still_reads_them(seen, tmp_path):
    """The notes are in extra_data (above) and, for a class graded outside bubblewrap, in
    grade-batch's summary.md."""
    notes, _, grade = seen
    if grade.sandbox == "bwrap":
        pytest.skip("summary.md names the sandbox only when a learner ran outside bubblewrap")
    (tmp_path / "alice").mkdir()
    batch_records.write_learner(tmp_path / "alice", grade, "after_due_date")
    rows = classbook.collect([classbook.Learner("alice", tmp_path / "alice")], tmp_path)
    write_summary(tmp_path, rows)
    summary = (tmp_path / SUMMARY).read_text(encoding="utf-8")
    assert "Not graded in bubblewrap" in summary and "memory bound" in summary, summary
