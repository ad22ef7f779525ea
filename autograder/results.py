"""What grading produces: a verdict per hidden test, a grade per stage, a grade per submission.

The lowest layer of the grader: plain data and the scoring rule, importing nothing of pytest,
the worker or the reports. Everything else (the pytest glue that makes verdicts, the reports
that show grades, the batch that collects them) builds on these types.

A ``Grade`` is the one record of a graded submission: every front end reads one. Its JSON form
(``Grade.to_json``, ``Grade.from_json``, versioned by ``RECORD_VERSION``) is written and read
here only; what it is read back from is checked field by field, since its strings came from
learner code.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from lumen.stages import STAGE_NAMES

from .mistakes import EVERY_KIND, MISTAKE, NOT_RUN, NOT_RUN_MESSAGE, mistake_id
from .rubric import Rubric

#: The version of ``Grade``'s JSON form: a reader refuses any other.
RECORD_VERSION = 2


class GraderError(RuntimeError):
    """The grader itself could not run, or failed on its side: never a grade."""


class RecordError(ValueError):
    """A grade record that is not one this grader writes: another version, or malformed."""


@dataclass
class TestResult:
    """One hidden test's verdict, before scoring."""

    __test__ = False  # not a pytest test class, whatever its name

    name: str  # the test function's name, the rubric's key
    stage: str
    title: str  # the docstring's first sentence (suites/plugin.py's check_title)
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
    def unwritten(self) -> bool:
        """Not written yet, as every view says it: every check met a stub's body, and the
        stage lost points for it."""
        return self.not_implemented and self.score < self.max_score

    @property
    def first_failure(self) -> TestResult | None:
        return next((r for r, _, _ in self.tests if not r.passed), None)


@dataclass
class Grade:
    """A submission's grade: the stages that were graded (all of them, or those of --stage)."""

    submission: str  # its name, as its learner knows it (Grader.grade drops the folder)
    stages: list[StageGrade]
    seed: int
    devices: list[str]
    sandbox: str
    seconds: float
    notes: list[str] = field(default_factory=list)  # for the learner: about their files, ...
    #: for the operator only (the sandbox, its memory bound): never in what a learner sees
    operator_notes: list[str] = field(default_factory=list)
    not_graded: list[str] = field(default_factory=list)  # stages left out of this run
    #: which grader made it (``frontends/provenance.versions``: digests of its code and
    #: rubric), where a front end keeps records between runs; empty otherwise
    made_by: dict[str, str] = field(default_factory=dict)
    #: what it was graded from (``frontends/provenance.fingerprint``: the learner's files by
    #: content, the grader and its options), where a front end keeps records between runs
    graded_from: str = ""

    @property
    def score(self) -> float:
        return sum(s.score for s in self.stages)

    @property
    def max_score(self) -> float:
        return sum(s.max_score for s in self.stages)

    def to_json(self) -> dict:
        """The record as JSON data, ``{"version": RECORD_VERSION, ...}``: ``from_json`` reads
        it back equal."""
        plain = {f.name: _copied(getattr(self, f.name)) for f in fields(self)
                 if f.name != "stages"}
        stages = [{"name": s.name, "score": s.score, "max_score": s.max_score,
                   "tests": [{"result": {f.name: getattr(r, f.name) for f in fields(r)},
                              "score": points, "max_score": most}
                             for r, points, most in s.tests]}
                  for s in self.stages]
        return {"version": RECORD_VERSION, **plain, "stages": stages}

    @classmethod
    def from_json(cls, data: object) -> Grade:
        """The ``Grade`` that ``to_json`` gave ``data``; a RecordError naming the first
        problem if ``data`` is not such a record (another version, a missing or extra field, a
        field of the wrong type, a stage or kind this grader does not know, points that do not
        add up)."""
        record = _fields(data, "the record", {"version", "stages"} | _names(cls))
        if record["version"] != RECORD_VERSION or isinstance(record["version"], bool):
            raise RecordError(f"a grade record of version {repr(record['version'])[:40]}, but this "
                              f"grader reads version {RECORD_VERSION}: regrade (--force)")
        values = {f.name: _copied(_typed(record[f.name], f.type, f.name)) for f in fields(cls)
                  if f.name != "stages"}
        stages = [_stage(s, n) for n, s in enumerate(_typed(record["stages"], "list", "stages"))]
        names = [s.name for s in stages] + values["not_graded"]
        if sorted(names, key=str) != sorted(set(names) & set(STAGE_NAMES)):
            raise RecordError("the record names a stage twice, or one this grader does not know")
        return cls(stages=stages, **values)


def _copied(value: object) -> object:
    """A list or dict field copied, so a record and the Grade it came from share nothing."""
    return list(value) if isinstance(value, list) else \
        dict(value) if isinstance(value, dict) else value


def _names(kind: type) -> set[str]:
    return {f.name for f in fields(kind)}


def _fields(data: object, what: str, names: set[str]) -> dict:
    """``data``, a dict with exactly the keys ``names``."""
    if not isinstance(data, dict):
        raise RecordError(f"{what} is a {type(data).__name__}, not an object")
    if set(data) != names:
        odd = sorted(repr(k)[1:-1][:40] for k in set(data) ^ names)  # bounded, one line each
        raise RecordError(f"{what} has missing or unknown fields: {', '.join(odd[:5])}"
                          + (" ..." if len(odd) > 5 else ""))
    return data


#: Each type a record's field may have (its annotation's text) -> the check of a JSON value.
_CHECKS = {
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "list[str]": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "dict[str, str]": lambda v: isinstance(v, dict) and all(isinstance(x, str)
                                                            for x in v.values()),
}


def _typed(value: object, kind: str, name: str) -> object:
    if not _CHECKS[kind](value):
        raise RecordError(f"the record's {name} is not a {kind}: {type(value).__name__}")
    return float(value) if kind == "float" else value


def _stage(data: object, index: int) -> StageGrade:
    """One stage of a record, its points checked against its verdicts."""
    stage = _fields(data, f"stage {index}", {"name", "score", "max_score", "tests"})
    name = _typed(stage["name"], "str", "stage name")
    if name not in STAGE_NAMES:
        raise RecordError(f"the record grades a stage {name[:40]!r} this grader does not know")
    rows = []
    for test in _typed(stage["tests"], "list", f"{name}'s tests"):
        row = _fields(test, f"a test of {name}", {"result", "score", "max_score"})
        result = _fields(row["result"], f"a test of {name}", _names(TestResult))
        verdict = TestResult(**{f.name: _typed(result[f.name], f.type, f"{name} test's {f.name}")
                                for f in fields(TestResult)})
        points, most = (_typed(row[k], "float", f"{name}'s points") for k in ("score", "max_score"))
        if verdict.stage != name or verdict.kind not in EVERY_KIND \
                or points != (most if verdict.passed else 0.0):
            raise RecordError(f"a test of {name} whose stage, kind or points do not fit it")
        rows.append((verdict, points, most))
    score = _typed(stage["score"], "float", f"{name}'s score")
    if score != sum(r[1] for r in rows):
        raise RecordError(f"{name}'s score is not the sum of its tests' points")
    return StageGrade(name, score, _typed(stage["max_score"], "float", f"{name}'s max"), rows)


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
