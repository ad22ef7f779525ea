"""GitHub Classroom's runner results: a stage's score in the form its grading reporter reads.

Standard library only (and pytest, for ``visible``): ``python -m autograder.frontends.classroom
template`` copies this file unchanged into the template repository, where the
visible-tests-only workflow runs it without the grader.

The reporter (classroom-resources/autograding-grading-reporter) reads, per runner, base64 of
a JSON object (``{"version": 1, "status", "max_score", "tests": [...]}``, as the stock
runners write it) from ``<RUNNER-ID upper-cased>_RESULTS``. It adds scores up twice: the grade
sent to Classroom is the sum of the tests' ``score``; the learner's log shows, per runner,
(tests passed / all tests) x ``max_score``. The two agree only when a runner's tests are worth
the same, so a stage's score is written as ``equal_parts``: n tests of max/n points each, the
first k passed. No hidden check is named: a learner reads the stage's score and nothing of
what its checks check. docs/classroom.md has the reporter's sources.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import sys
from fractions import Fraction

MAX_PARTS = 200  # more parts than this (a rubric of odd fractions): one entry holds the score


def _fraction(x: float) -> Fraction:
    """``x`` as the fraction it stands for: sums of rubric points like 0.1 + 0.2 included."""
    return Fraction(x).limit_denominator(10_000)


def equal_parts(score: float, max_score: float) -> tuple[int, int]:
    """(k, n): ``score`` out of ``max_score`` as k of n equal parts, n as small as can be.

    16 of 20 is 4 of 5 parts of 4 points; full marks and zero are one part, passed or not.
    """
    if max_score <= 0:
        raise ValueError(f"a stage's max_score must be positive, not {max_score}")
    if not 0 <= score <= max_score:
        raise ValueError(f"score {score} is outside 0..{max_score}")
    ratio = _fraction(score) / _fraction(max_score)
    if ratio in (0, 1):
        return int(ratio), 1
    return ratio.numerator, ratio.denominator


def runner_result(stage: str, score: float, max_score: float, label: str,
                  status: str | None = None, message: str = "") -> dict:
    """One runner's result (the reporter's version 1) for one stage.

    ``label`` says which checks the score comes from ("hidden checks", "visible tests"). The
    status is "pass" at full marks, else "fail", unless given ("error": the grader failed).
    """
    if status is None:
        status = "pass" if score >= max_score else "fail"
    if status == "error":
        tests = [_entry(f"{stage}: {label}", "error", 0.0, message)]
        return {"version": 1, "status": "error", "max_score": max_score, "tests": tests}
    passed, parts = equal_parts(score, max_score)
    if parts > MAX_PARTS:  # the learner's log then rounds; the grade sent stays exact
        tests = [_entry(f"{stage}: {label}, {score:g} of {max_score:g} points",
                        "pass" if status == "pass" else "fail", score, message)]
    else:
        worth = max_score / parts
        tests = [_entry(f"{stage}: {label}, part {i} of {parts} ({worth:g} points)",
                        "pass" if i <= passed else "fail", worth if i <= passed else 0.0,
                        message if i == 1 else "")
                 for i in range(1, parts + 1)]
    return {"version": 1, "status": status, "max_score": max_score, "tests": tests}


def _entry(name: str, status: str, score: float, message: str) -> dict:
    # test_code and message are printed to the learner's log by the reporter: never a check's
    # code, and a message only where it says nothing of a hidden check.
    return {"name": name, "status": status, "score": score, "message": message,
            "test_code": "", "filename": "", "line_no": 0, "duration": 0}


def encode(result: dict) -> str:
    """What a runner step outputs: base64 of the JSON, as the stock runners' ``btoa``."""
    return base64.b64encode(json.dumps(result).encode("utf-8")).decode("ascii")


def output_lines(results: dict[str, dict]) -> str:
    """``$GITHUB_OUTPUT`` lines, one output per stage (``steps.grade.outputs.<stage>``)."""
    return "".join(f"{stage}={encode(result)}\n" for stage, result in results.items())


def write_outputs(results: dict[str, dict], path: str | None = None) -> None:
    """Append the stages' outputs to ``path`` (default ``$GITHUB_OUTPUT``), else print them."""
    path = path or os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(output_lines(results))
    else:
        sys.stdout.write(output_lines(results))


def score_table(results: dict[str, dict]) -> str:
    """The per-stage scores, as the learner's log shows them before the reporter's table."""
    lines = []
    for stage, r in results.items():
        score = sum(t["score"] for t in r["tests"])
        lines.append(f"  {stage:<11}{score:>6g} / {r['max_score']:<5g} {r['status']}")
    total = sum(sum(t["score"] for t in r["tests"]) for r in results.values())
    lines.append(f"  {'total':<11}{total:>6g} / {sum(r['max_score'] for r in results.values()):g}")
    return "\n".join(lines) + "\n"


# --- the visible-tests-only mode: the learner's own visible tests, scored per stage --------------


def visible_score(passed: int, ran: int, max_score: float) -> float:
    """A stage's points from its visible tests: the share passed, rounded down to whole points
    (so a failing test never leaves full marks)."""
    if ran == 0:
        return 0.0
    return float(math.floor(_fraction(max_score) * passed / ran))


class _Recorder:
    """A pytest plugin: each test's stage (its marker) and whether it passed."""

    def __init__(self, stages: list[str]) -> None:
        self.stages = stages
        self.stage_of: dict[str, str] = {}
        self.failed: set[str] = set()
        self.passed: set[str] = set()
        self.broken: set[str] = set()  # stages with a test file that could not be collected

    def pytest_collection_modifyitems(self, items) -> None:
        for item in items:
            marks = [m.name for m in item.iter_markers() if m.name in self.stages]
            if marks:
                self.stage_of[item.nodeid] = marks[0]

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            for stage in self.stages:
                if f"test_{stage}.py" in report.nodeid or report.nodeid in ("", "."):
                    self.broken.add(stage)

    def pytest_runtest_logreport(self, report) -> None:
        if report.failed:
            self.failed.add(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed.add(report.nodeid)


def visible(points: dict[str, float], tests: str = "exercises/tests") -> dict[str, dict]:
    """Run the visible tests once, their output in the log, and score each stage by them."""
    import pytest  # only the visible run needs it: `report` is the standard library alone

    recorder = _Recorder(list(points))
    pytest.main([tests, "-p", "no:cacheprovider", "-q", "-rfE", "--tb=short"],
                plugins=[recorder])
    results = {}
    for stage, max_score in points.items():
        ran = [n for n, s in recorder.stage_of.items() if s == stage
               and (n in recorder.failed or n in recorder.passed)]
        ok = sum(1 for n in ran if n not in recorder.failed)
        if stage in recorder.broken or not ran:
            results[stage] = runner_result(
                stage, 0.0, max_score, "visible tests", status="error",
                message=f"the visible tests of stage {stage} could not run: see the "
                        "pytest output above")
        else:
            results[stage] = runner_result(stage, visible_score(ok, len(ran), max_score),
                                           max_score, "visible tests")
    return results


def _points(value: str) -> dict[str, float]:
    """``embedding=20,onehot=15``: the stages in order, each with its points."""
    points = {}
    for item in value.split(","):
        stage, _, number = item.partition("=")
        points[stage.strip()] = float(number)
    return points


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lumen_classroom.py",
                                     description="GitHub Classroom runner results per stage.")
    commands = parser.add_subparsers(dest="command", required=True)
    v = commands.add_parser("visible", help="score each stage by the visible tests")
    v.add_argument("--points", type=_points, required=True,
                   help="the stages and their points, embedding=20,onehot=15,...")
    v.add_argument("--tests", default="exercises/tests")
    args = parser.parse_args(argv)
    results = visible(args.points, args.tests)
    print("\nScores from the visible tests (rounded down to whole points):")
    print(score_table(results), end="")
    write_outputs(results)
    return 0  # the reporter fails the run when a stage is not at full marks


if __name__ == "__main__":
    sys.exit(main())
