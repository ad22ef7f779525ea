"""The terminal report (autograder/views/report.py) says everything it knows: every failing check of
a stage by its title, the most specific diagnosis first, in full."""

from __future__ import annotations

from autograder.mistakes import TIMED_OUT
from autograder.results import Grade, StageGrade, TestResult
from autograder.views import report


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
