"""Scores and reports: Gradescope's results.json, the terminal report, JUnit XML.

All three are views of one ``Grade``, computed once from the verdicts and the rubric.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from lumen.stages import STAGE_NAMES, stage

from .plugin import TestResult
from .rubric import Rubric


@dataclass
class StageGrade:
    name: str
    score: float
    max_score: float
    tests: list[tuple[TestResult, float, float]]  # (verdict, score, max)

    @property
    def not_implemented(self) -> bool:
        return all(r.not_implemented for r, _, _ in self.tests)

    @property
    def first_failure(self) -> TestResult | None:
        return next((r for r, _, _ in self.tests if not r.passed), None)


@dataclass
class Grade:
    submission: str
    stages: list[StageGrade]
    seed: int
    devices: list[str]
    sandbox: str
    seconds: float
    notes: list[str] = field(default_factory=list)  # warnings for the reader (no sandbox, ...)

    @property
    def score(self) -> float:
        return sum(s.score for s in self.stages)

    @property
    def max_score(self) -> float:
        return sum(s.max_score for s in self.stages)

    @property
    def grader_errors(self) -> list[TestResult]:
        return [r for s in self.stages for r, _, _ in s.tests if r.grader_error]


def grade(results: list[TestResult], rubric: Rubric, **info) -> Grade:
    """Score every verdict by the rubric; a rubric test with no verdict did not run: 0."""
    by_name = {r.name: r for r in results}
    stages = []
    for name in STAGE_NAMES:
        rows = []
        for test, points in rubric.points[name].items():
            result = by_name.get(test) or TestResult(
                name=test, stage=name, title=test, passed=False,
                message="this test did not run (the grading run was cut short)")
            rows.append((result, points if result.passed else 0.0, points))
        stages.append(StageGrade(name, sum(r[1] for r in rows), rubric.stage_max(name), rows))
    return Grade(stages=stages, **info)


def stage_line(s: StageGrade) -> str:
    if s.score == s.max_score:
        status = "all checks passed"
    elif s.not_implemented:
        status = "not implemented yet"
    else:
        passed = sum(1 for r, _, _ in s.tests if r.passed)
        status = f"{passed} of {len(s.tests)} checks passed"
    return f"  {s.name:<11}{s.score:>6.1f} / {s.max_score:<5g} {status}"


def terminal(g: Grade) -> str:
    """The report a learner or instructor reads: six stages, then what to fix first."""
    lines = [f"lumen autograder: {g.submission}",
             f"  seed {g.seed}, devices {', '.join(g.devices)}, sandbox: {g.sandbox}, "
             f"{g.seconds:.1f} s", ""]
    lines += [stage_line(s) for s in g.stages]
    lines += [f"  {'total':<11}{g.score:>6.1f} / {g.max_score:g}", ""]
    failing = [s for s in g.stages if s.score < s.max_score and not s.not_implemented]
    if failing:
        lines.append("What to fix first, stage by stage:")
        for s in failing:
            first = s.first_failure
            lines.append(f"  {s.name} ({stage(s.name).section}): {first.title}")
            lines.append(f"    {first.message}")
        lines.append("")
    lines += [f"Note: {note}" for note in g.notes]
    return "\n".join(lines).rstrip() + "\n"


def gradescope(g: Grade, visibility: str = "after_due_date") -> dict:
    """Gradescope's results.json: per-test entries tagged by stage, stage totals in extra_data."""
    tests = []
    for i, s in enumerate(g.stages, start=1):
        for j, (r, score, max_score) in enumerate(s.tests, start=1):
            entry = {
                "name": f"{s.name}: {r.title}",
                "number": f"{i}.{j}",
                "score": score,
                "max_score": max_score,
                "status": "passed" if r.passed else "failed",
                "output": r.message if not r.passed else "",
                "tags": [s.name],
                "visibility": visibility,
            }
            if r.output:
                entry["output"] += f"\n\nYour code printed:\n{r.output}"
            tests.append(entry)
    return {
        "score": round(g.score, 4),
        "execution_time": round(g.seconds, 2),
        "output": terminal(g),  # the per-stage summary, visible at once
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "stages": {s.name: {"score": s.score, "max_score": s.max_score} for s in g.stages},
            "seed": g.seed,
            "devices": g.devices,
            "sandbox": g.sandbox,
            "mistakes": [{"stage": s.name, "test": r.name, "message": r.message}
                         for s in g.stages for r, _, _ in s.tests
                         if not r.passed and not r.not_implemented],
        },
    }


def junit(g: Grade) -> str:
    """JUnit XML: a test suite per stage, for CI systems that draw them."""
    root = ElementTree.Element("testsuites", name="lumen autograder",
                               tests=str(sum(len(s.tests) for s in g.stages)))
    for s in g.stages:
        suite = ElementTree.SubElement(
            root, "testsuite", name=s.name, tests=str(len(s.tests)),
            failures=str(sum(1 for r, _, _ in s.tests if not r.passed)))
        for r, _, _ in s.tests:
            case = ElementTree.SubElement(suite, "testcase", classname=s.name, name=r.name,
                                          time=f"{r.seconds:.3f}")
            if not r.passed:
                ElementTree.SubElement(case, "failure", message=r.message[:500]).text = r.message
    return ElementTree.tostring(root, encoding="unicode")


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader never sees half a file, even after a kill."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json(path: Path, data: dict) -> None:
    write_atomic(path, json.dumps(data, indent=2) + "\n")
