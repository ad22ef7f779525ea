"""Gradebook exports: ``grade-batch --export canvas,moodle,csv --roster roster.csv``.

The layouts are checked as each system reads them. Canvas (its gradebook export and "How do I
import grades in the Gradebook?"): the identity columns Student, ID, SIS User ID, SIS Login ID,
Section in that order, one column per assignment "Name (id)" (without an id, a new
assignment), a "Points Possible" row, a learner matched by ID, SIS User ID or SIS Login ID.
Moodle (grade/import/csv: a header row, then one user per row; "Map from" one column to a user
field, email, username or ID number; a grade column mapped to a grade item, numbers within its
range). No grading here: the class's results.json files are written as the batch writes them,
so ``grade-batch`` keeps every learner but eve, whose grading fails in a stand-in grading
process, and rebuilds the CSV, the summary and the exports.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from autograder import __main__ as cli
from autograder.frontends import batch, batch_records, exports, provenance
from autograder.options import Options
from autograder.results import Grade, TestResult, score
from autograder.rubric import load
from lumen.stages import STAGE_NAMES

ROSTER = """\
submission,Name,Canvas ID,SIS User ID,SIS Login ID,Section,Email
alice,"Adams, Alice",101,S1,aadams,Section A,alice@uni.example
bob,"Brown, Bob",102,S2,bbrown,Section B,bob@uni.example
carol,"Cruz, Carol",103,S3,ccruz,Section A,carol@uni.example
"""


#: alice's three failed checks, and what she scores, from the rubric (its one source).
ALICE_FAILS = {"embedding": "test_lookup_every_shape", "params": "test_memory_bytes",
               "init": "test_rows_are_not_identical"}
_LOST = {stage: load().points[stage][test] for stage, test in ALICE_FAILS.items()}
ALICE = f"{100 - sum(_LOST.values()):g}"
ALICE_EMBEDDING, ALICE_PARAMS = (f"{load().stage_max(stage) - _LOST[stage]:g}"
                                 for stage in ("embedding", "params"))


def _grade(learner: str, failing: set[str], submission: Path) -> Grade:
    """A learner's record as grade-batch keeps it, with the tests in ``failing`` failed, made
    from the files at ``submission``."""
    rubric = load()
    verdicts = [TestResult(name=t, stage=s, title=t, passed=t not in failing,
                           message="wrong" if t in failing else "")
                for s in STAGE_NAMES for t in rubric.points[s]]
    grade = score(verdicts, rubric, submission=learner, seed=1, devices=["cpu"],
                  sandbox="bwrap", seconds=2.0)
    grade.made_by = provenance.versions()  # this grader's, from these files: a rerun keeps it
    grade.graded_from = provenance.fingerprint(submission, provenance.settings_of(Options()))
    return grade


class _Fails:
    """Stands in for a grading process: every learner it is asked to grade fails in it."""

    def __init__(self, index, config, log) -> None:
        pass

    def grade(self, job: dict) -> dict:
        return {"learner": job["learner"], "error": "GraderError: the worker broke"}

    def stop(self) -> None:
        pass


@pytest.fixture
def graded_class(tmp_path, monkeypatch) -> Path:
    """alice (ALICE: three checks failed), bob (full marks), dave (not in the roster),
    eve (not graded: the grader fails on her); carol, in the roster, submitted nothing."""
    monkeypatch.setattr(batch, "GradingProcess", _Fails)
    subs = tmp_path / "subs"
    for learner in ("alice", "bob", "dave", "eve"):
        (subs / learner).mkdir(parents=True)
    grades = tmp_path / "grades"
    for learner, failing in (("alice", set(ALICE_FAILS.values())),
                             ("bob", set()), ("dave", {"test_gpt2_totals"})):
        batch_records.write_learner(grades / learner, _grade(learner, failing, subs / learner),
                            "after_due_date")
    (tmp_path / "roster.csv").write_text(ROSTER + "eve,Eve,105,,,Section B,eve@uni.example\n")
    return tmp_path


def _batch(folder: Path, *args: str) -> int:
    return cli.main(["grade-batch", str(folder / "subs"), "--out", str(folder / "grades.csv"),
                     "--roster", str(folder / "roster.csv"), *args])


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_canvas_layout(graded_class, capsys):
    assert _batch(graded_class, "--export", "canvas",
                  "--assignment", "The Embedding Layer (4711)") == 1  # eve: not graded
    rows = _rows(graded_class / "grades-canvas.csv")
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                       "The Embedding Layer (4711)"]
    assert rows[1][0].strip() == "Points Possible" and rows[1][5] == "100"
    learners = {r[1]: r for r in rows[2:]}  # Canvas matches by ID (or SIS User/Login ID)
    assert learners == {"101": ["Adams, Alice", "101", "S1", "aadams", "Section A", ALICE],
                        "102": ["Brown, Bob", "102", "S2", "bbrown", "Section B", "100"]}
    grades = _rows(graded_class / "grades.csv")  # unchanged: per-stage columns and the total
    assert grades[0] == ["learner", "total", *STAGE_NAMES, "seconds", "notes"]
    assert [r[0] for r in grades[1:]] == ["alice", "bob", "dave", "eve"]
    err = capsys.readouterr().err
    assert "no learner in the roster" in err and "dave" in err  # a submission, not listed
    assert "no submission" in err and "carol" in err  # listed, nothing submitted
    assert "not graded" in err and "eve" in err


def test_moodle_layout(graded_class):
    assert _batch(graded_class, "--export", "moodle") == 1
    rows = _rows(graded_class / "grades-moodle.csv")
    header, body = rows[0], rows[1:]
    assert header == ["Email address", exports.DEFAULT_ASSIGNMENT]
    # As Moodle's import reads it: map column 0 to useremail, column 1 to the grade item.
    users = {"alice@uni.example", "bob@uni.example", "carol@uni.example", "eve@uni.example"}
    for email, grade in body:
        assert email in users and 0 <= float(grade) <= 100
    assert dict(body) == {"alice@uni.example": ALICE, "bob@uni.example": "100"}


def test_roster_csv_and_several_formats_at_once(graded_class, capsys):
    assert _batch(graded_class, "--export", "canvas,moodle", "--export", "csv") == 1
    assert "grades-canvas.csv" in capsys.readouterr().err
    for name in ("grades-canvas.csv", "grades-moodle.csv", "grades-roster.csv"):
        assert (graded_class / name).is_file(), name
    rows = _rows(graded_class / "grades-roster.csv")
    assert rows[0] == ["submission", "name", "canvas_id", "sis_user_id", "sis_login_id",
                       "section", "email", "total", *STAGE_NAMES]
    alice = dict(zip(rows[0], rows[1], strict=True))
    assert alice["total"] == ALICE and alice["embedding"] == ALICE_EMBEDDING
    assert alice["params"] == ALICE_PARAMS


def test_moodle_identifier_falls_back_to_username(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("Submission,Username\nalice.zip,aadams\n", encoding="utf-8")
    loaded = exports.load_roster(roster)
    exports.check_roster(loaded, ["moodle"])
    rows = [{"learner": "alice", "total": 50.0, "stages": {}}]
    written, messages = exports.write_exports(tmp_path / "g.csv", rows, loaded, ["moodle"])
    assert _rows(written[0]) == [["Username", "The Embedding Layer"], ["aadams", "50"]]
    assert messages == []


@pytest.mark.parametrize("text, says", [
    ("", "is empty"),
    ("name,email\nAlice,a@x\n", "no 'submission' column"),
    ("submission,email,Email\na,x,y\n", "more than once"),
    ("submission,email\n,a@x\n", "line 2 has no submission"),
    ("submission,email\nalice,a@x\nalice,b@x\n", "lines 2 and 3 both name submission 'alice'"),
    ("submission,email\nalice,a@x,extra\n", "a comma inside a name needs quotes"),
])
def test_a_bad_roster_says_what_is_wrong(tmp_path, text, says):
    roster = tmp_path / "roster.csv"
    roster.write_text(text, encoding="utf-8")
    with pytest.raises(exports.RosterError, match=says):
        exports.load_roster(roster)


def test_roster_must_hold_what_each_format_needs(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_bytes(b"submission,name\nalice,Alice\n")
    loaded = exports.load_roster(roster)
    with pytest.raises(exports.RosterError, match="canvas_id, sis_user_id or sis_login_id"):
        exports.check_roster(loaded, ["canvas"])
    with pytest.raises(exports.RosterError, match="email, username or idnumber"):
        exports.check_roster(loaded, ["moodle"])
    exports.check_roster(loaded, ["csv"])  # the generic file needs no LMS id
    roster.write_bytes(b"submission,canvas_id,email\nalice,,a@x\nbob,7,\n")
    loaded = exports.load_roster(roster)
    with pytest.raises(exports.RosterError, match="no canvas_id.*alice"):
        exports.check_roster(loaded, ["canvas"])
    with pytest.raises(exports.RosterError, match="no email: bob"):
        exports.check_roster(loaded, ["moodle"])
    roster.write_bytes("submission,name\nalice,Andr\xe9\n".encode("latin-1"))
    with pytest.raises(exports.RosterError, match="not UTF-8.*CSV UTF-8"):
        exports.load_roster(roster)
    roster.write_bytes(b"\xef\xbb\xbfsubmission,email\nalice,a@x\n")  # Excel's UTF-8 CSV
    assert list(exports.load_roster(roster).rows) == ["alice"]


def test_cli_refuses_before_grading(graded_class, capsys):
    folder = graded_class
    assert cli.main(["grade-batch", str(folder / "subs"), "--out", str(folder / "new.csv"),
                     "--export", "canvas"]) == 2
    assert "--export needs --roster" in capsys.readouterr().err
    (folder / "roster.csv").write_text("name\nAlice\n")
    assert cli.main(["grade-batch", str(folder / "subs"), "--out", str(folder / "new.csv"),
                     "--export", "canvas", "--roster", str(folder / "roster.csv")]) == 2
    assert "no 'submission' column" in capsys.readouterr().err
    assert not (folder / "new").exists() and not (folder / "new.csv").exists()  # nothing graded
    with pytest.raises(SystemExit):
        cli.main(["grade-batch", str(folder / "subs"), "--export", "blackboard"])
    assert "the formats are canvas, moodle, csv" in capsys.readouterr().err


def test_learner_names_in_messages_are_cleaned(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("submission,email\nalice,a@x\n", encoding="utf-8")
    rows = [{"learner": "alice", "total": 10.0, "stages": {}},
            {"learner": "\x1b[2Jmallory", "total": 5.0, "stages": {}}]
    _, messages = exports.write_exports(tmp_path / "g.csv", rows,
                                        exports.load_roster(roster), ["csv"])
    assert "\x1b" not in "".join(messages) and "\\x1b[2Jmallory" in "".join(messages)


def test_exports_read_the_batch_rows(graded_class):
    """The same numbers as grades.csv, learner for learner."""
    _batch(graded_class, "--export", "csv")
    grades = {r[0]: r[1] for r in _rows(graded_class / "grades.csv")[1:]}
    exported = {r[0]: r[7] for r in _rows(graded_class / "grades-roster.csv")[1:]}
    assert exported == {k: grades[k] for k in ("alice", "bob")}
    summary = json.loads((graded_class / "grades" / "alice" / "results.json").read_text())
    assert float(exported["alice"]) == summary["score"]
