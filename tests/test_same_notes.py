"""Every front end tells a learner the same notes about the same submission.

The notes are made once, by ``grading.submission_notes`` inside ``Grader.grade`` (the syntax
notes included, the submission named by its name, never its folder), and every front end reads
them from the ``Grade``: here one submission with a syntax error and a file that is not UTF-8
goes through ``grade`` (the results.json Gradescope's run_autograder writes), ``grade-batch``
(its record), GitHub Classroom's grading step (its record), PrairieLearn (which refuses such
a submission with these notes as its format errors) and nbgrade (its stages.csv, after the
notes on the notebook).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json

from autograder.__main__ import main
from autograder.frontends import batch, classbook, classroom, nbgrade, prairielearn
from autograder.options import Options
from autograder.results import Grade
from lumen.stages import SUBMISSION_FILES
from tests.variants.build import make_submission


def test_every_front_end_gives_the_same_notes(tmp_path):
    submissions = tmp_path / "home" / "instructor" / "class"
    alice = make_submission(submissions / "alice", {})
    (alice / "params.py").write_text((alice / "params.py").read_text(encoding="utf-8")
                                     + "\ndef broken(:\n    pass\n", encoding="utf-8")
    (alice / "gpt2.py").write_bytes("# caf\u00e9\n".encode("latin-1"))
    notes = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        out = tmp_path / "results.json"
        assert main(["grade", str(alice), "--stage", "params", "--out", str(out)]) == 0
        notes["grade (Gradescope's results.json)"] = json.loads(out.read_text())[
            "extra_data"]["notes"]
        assert batch.run(submissions, tmp_path / "grades.csv", Options(stages=("params",))) == 0
        notes["grade-batch"] = classbook.read_grade(tmp_path / "grades" / "alice").notes
        record = tmp_path / "grade.json"
        assert classroom.grade(alice, record, "bwrap") == 0
        notes["GitHub Classroom"] = Grade.from_json(json.loads(record.read_text())).notes
    notes["PrairieLearn (format errors)"] = prairielearn.format_errors(alice)

    expected = notes["grade-batch"]
    assert any(n.startswith("params.py: SyntaxError at line ") for n in expected), expected
    assert any("gpt2.py" in n and "UTF-8" in n for n in expected), expected
    assert len(expected) == 2 and set(SUBMISSION_FILES) >= {n.split()[0].rstrip(":")
                                                            for n in expected}
    for where, said in notes.items():
        assert said == expected, f"{where}: {said} != {expected}"
        assert str(tmp_path) not in json.dumps(said), where

    course = tmp_path / "course"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        nbgrade.run(submissions, course, jobs=1, progress=io.StringIO())
    with open(course / "stages.csv", newline="", encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f) if r["learner"] == "alice")
    assert row["notes"].endswith("; ".join(expected)), row["notes"]
