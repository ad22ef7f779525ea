"""The terminal report (autograder/views/report.py) says everything it knows: every failing check of
a stage by its title, the most specific diagnosis first, in full."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.mistakes import TIMED_OUT
from autograder.results import Grade, StageGrade, TestResult
from autograder.suites.plugin import check_title
from autograder.views import report
from lumen.stages import SUBMISSION_FILES

ROOT = Path(__file__).resolve().parents[1]


def _result(name: str, passed: bool, message: str = "", output: str = "",
            kind: str = "mistake") -> TestResult:
    return TestResult(name=name, stage="neighbours", title=f"the {name} check", passed=passed,
                      message=message, output=output, kind=kind)


def test_every_failing_check_is_listed_the_most_specific_diagnosis_first():
    timeout = _result("slow", False, "cosine_neighbours did not finish in time", kind=TIMED_OUT)
    mistake = _result("eps", False, "expected 0.5, got 0.25: eps is added to the product of "
                      "the norms, not to each norm", output="debug print")
    other = _result("ties", False, "expected ids [1, 2], got [2, 1]: ties keep the smaller id")
    passed = _result("shape", True)
    tests = [(timeout, 0.0, 5.0), (passed, 5.0, 5.0), (mistake, 0.0, 5.0), (other, 0.0, 5.0)]
    grade = Grade(submission="learner", seed=1, devices=["cpu"], sandbox="bwrap", seconds=1.0,
                  stages=[StageGrade("neighbours", 5.0, 20.0, tests)])
    text = report.terminal(grade)
    first = text.index("neighbours (")
    assert text[first:].splitlines()[0].endswith("the eps check"), text
    assert "eps is added to the product of the norms" in text and "debug print" in text
    also = text[text.index("Also failing in neighbours (2):"):]
    assert also.splitlines()[1:3] == ["      - the ties check", "      - the slow check"], text
    assert "the shape check" not in text
    assert report.failures(grade.stages[0]) == [mistake, other, timeout]




def test_a_stage_of_one_check_says_check():
    """Counts agree in number: "0 of 1 check passed", "0 of 2 checks passed"."""
    failed = _result("eps", False, "expected 0.5, got 0.25")
    one = StageGrade("neighbours", 0.0, 5.0, [(failed, 0.0, 5.0)])
    two = StageGrade("neighbours", 0.0, 10.0, [(failed, 0.0, 5.0), (failed, 0.0, 5.0)])
    assert report.stage_line(one).endswith(" 0 of 1 check passed")
    assert report.stage_line(two).endswith(" 0 of 2 checks passed")

@pytest.fixture(scope="module")
def empty(tmp_path_factory) -> tuple[str, dict]:
    """Nothing handed in, graded by ``python -m autograder grade`` as a learner runs it (two
    stages): its report and its results.json."""
    root = tmp_path_factory.mktemp("empty")
    (root / "empty").mkdir()
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(root / "empty"),
                           "--stage", "embedding,params", "--out", str(root / "results.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "lumen autograder: empty" in done.stdout, done.stderr
    return done.stdout, json.loads((root / "results.json").read_text(encoding="utf-8"))


def test_an_empty_submission_is_told_each_file_is_missing_and_how_to_hand_it_in(empty):
    """Every check of a stage says that its file is missing and how to hand it in, never that
    a function "is not implemented yet" (the stub that stands in for a missing file would say
    so), and the notes name each missing file with the same fix."""
    text, _ = empty
    assert "not implemented" not in text, text
    fix = "hand in exercises/{0} (your copy of the stub, with your code in it) with the other files"
    for stage, name in (("embedding", "embeddings.py"), ("params", "params.py")):
        first = text[text.index(f"  {stage} ("):].splitlines()[1]
        assert first.startswith(f"    {name} is missing from the submission, so "), first
        assert first.endswith(f"could not be graded: {fix.format(name)}"), first
    for name in SUBMISSION_FILES:
        assert f"Note: {name} is missing from the submission: {fix.format(name)}" in text, text


def test_a_title_is_the_docstrings_first_sentence_whole():
    """A check's title is the first sentence of its docstring, its lines joined, never cut at
    the end of a line; a later sentence or paragraph is not part of it."""
    doc = """ids of every integer dtype, contiguous or not, give the rows weight[ids], up to
        the largest value their dtype holds (0.5 e.g. is no id). Then a second sentence.

        A second paragraph."""
    assert check_title(doc, "test_x") == (
        "ids of every integer dtype, contiguous or not, give the rows weight[ids], up to the "
        "largest value their dtype holds (0.5 e.g. is no id).")
    assert check_title("one line, no full stop\n\nmore", "test_x") == "one line, no full stop"
    assert check_title(None, "test_x") == check_title("  \n", "test_x") == "test_x"


def test_reports_show_each_checks_title_whole(empty):
    """The report and results.json name a check by its whole first sentence, here one that
    spans two lines of its docstring."""
    text, results = empty
    title = ("ids of every integer dtype, contiguous or not, give the rows weight[ids], up to "
             "the largest value their dtype holds")
    assert f"      - {title}\n" in text, text
    assert f"embedding: {title}" in [t["name"] for t in results["tests"]]
