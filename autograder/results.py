"""What grading produces: a verdict per hidden test, a grade per stage, a grade per submission.

The lowest layer of the grader: plain data and the scoring rule, importing nothing of pytest,
the worker or the reports. Everything else (the pytest glue that makes verdicts, the reports
that show grades, the batch that collects them) builds on these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lumen.stages import STAGE_NAMES

from .mistakes import MISTAKE, NOT_RUN, NOT_RUN_MESSAGE, mistake_id
from .rubric import Rubric


class GraderError(RuntimeError):
    """The grader itself could not run, or failed on its side: never a grade."""


@dataclass
class TestResult:
    """One hidden test's verdict, before scoring."""

    __test__ = False  # not a pytest test class, whatever its name

    name: str  # the test function's name, the rubric's key
    stage: str
    title: str  # the docstring's first line
    passed: bool
    message: str = ""  # the Mistake's message, for the learner
    not_implemented: bool = False
    grader_error: bool = False  # a bug in the grader, not the learner's fault
    seconds: float = 0.0
    output: str = ""  # what the learner's code printed during the test, if it failed
    #: mistakes.MISTAKE, or the kind of code that never ran (mistakes.KINDS): set where the
    #: verdict is made (suites/feedback.py's Mistake, ``score``), never read from the message
    kind: str = MISTAKE

    @property
    def mistake_id(self) -> str:
        """The failure's stable id (``autograder/mistakes.py``): one per diagnosed mistake."""
        return mistake_id(self.stage, self.name, self.message, self.kind)


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
    """A submission's grade: the stages that were graded (all six, or those of --stage)."""

    submission: str
    stages: list[StageGrade]
    seed: int
    devices: list[str]
    sandbox: str
    seconds: float
    notes: list[str] = field(default_factory=list)  # for the learner: about their files, ...
    #: for the operator only (the sandbox, its memory bound): never in what a learner sees
    operator_notes: list[str] = field(default_factory=list)
    not_graded: list[str] = field(default_factory=list)  # stages left out of this run

    @property
    def score(self) -> float:
        return sum(s.score for s in self.stages)

    @property
    def max_score(self) -> float:
        return sum(s.max_score for s in self.stages)


def score(results: list[TestResult], rubric: Rubric, stages: list[str] | None = None,
          **info) -> Grade:
    """Score every verdict of the ``stages`` graded (default all) by the rubric; a rubric test
    with no verdict did not run: 0."""
    chosen = [s for s in STAGE_NAMES if stages is None or s in stages]
    by_name = {r.name: r for r in results}
    graded = []
    for name in chosen:
        rows = []
        for test, points in rubric.points[name].items():
            result = by_name.get(test) or TestResult(
                name=test, stage=name, title=test, passed=False,
                message=NOT_RUN_MESSAGE, kind=NOT_RUN)
            rows.append((result, points if result.passed else 0.0, points))
        graded.append(StageGrade(name, sum(r[1] for r in rows), rubric.stage_max(name), rows))
    return Grade(stages=graded, not_graded=[s for s in STAGE_NAMES if s not in chosen], **info)
