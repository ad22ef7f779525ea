"""The pytest glue between the hidden suites and one submission's stage processes.

``Grader.grade`` (autograder/grading.py) registers a ``GradingPlugin`` for the submission's
``Submission`` (a ``Context``); ``pytest autograder/suites --submission PATH [-m STAGE]`` makes one
itself (``conftest.py``). Each test gets a ``learner`` fixture (probe calls into the learner's
code for the test's stage) and its verdict is recorded as a ``TestResult``. Each suite module
names its stage (``STAGE``), which also becomes the test's pytest marker.
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING, Protocol

import pytest
import torch

from lumen.stages import STAGE_NAMES, stage

from ..results import TestResult

if TYPE_CHECKING:
    from ..boundary.session import StageSession


class Context(Protocol):
    """What the suites use of the submission being graded (``grading.Submission`` is one): the
    suites depend on this, not on the pipeline that runs them, so no import runs back up."""

    devices: list[str]
    files: dict[str, str]  # the learner's file name -> text (the "written by hand" checks)
    sessions: dict[str, StageSession]  # stage -> its process, once opened
    results: list[TestResult]  # where each verdict goes

    def session(self, stage: str) -> StageSession:
        """``stage``'s process (opened on first use)."""

    def test_seed(self, name: str) -> int:
        """The seed of the hidden test ``name``, derived from the run's seed."""


class GradingPlugin:
    """Provides the fixtures and records each hidden test's verdict."""

    def __init__(self, context: Context) -> None:
        self.context = context

    def pytest_configure(self, config: pytest.Config) -> None:
        # Verdicts come from the Mistake's message, never a traceback: skip pytest's, which
        # parses the suite's source for every failing test (~1 s a submission of stubs).
        config.option.tbstyle = "no"
        for name in STAGE_NAMES:  # `-m embedding` selects a stage, as in the visible tests
            config.addinivalue_line("markers", f"{name}: stage '{name}', {stage(name).title}")

    @pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            item.add_marker(getattr(pytest.mark, _stage_of(item)))

    @pytest.fixture
    def grading(self) -> Context:
        return self.context

    @pytest.fixture
    def devices(self) -> list[str]:
        return self.context.devices

    @pytest.fixture
    def learner(self, request: pytest.FixtureRequest) -> StageSession:
        return self.context.session(_stage_of(request.node))

    @pytest.fixture
    def seed(self, request: pytest.FixtureRequest) -> int:
        return self.context.test_seed(request.node.name)

    @pytest.fixture
    def gen(self, seed: int):

        return torch.Generator().manual_seed(seed)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        report = outcome.get_result()
        if call.when == "setup" and report.failed or call.when == "call":
            verdict = _verdict(item, call, report)
            session = self.context.sessions.get(verdict.stage)
            if session is not None:  # shown with a failing check (truncated, sanitised)
                printed = session.take_printed()
                verdict.output = "" if verdict.passed else printed
            self.context.results.append(verdict)


#: Where a sentence ends: a full stop, ! or ? before the end or white space and a capital
#: (not the dot of a.b, 0.02, F.embedding or "e.g. the").
_SENTENCE_END = re.compile(r"[.!?](?=$|\s+[A-Z])")


def check_title(doc: str | None, name: str) -> str:
    """A hidden test's title, which every report, results.json and summary.md shows: the
    first sentence of its docstring's first paragraph, whole (its lines joined: a sentence
    may span lines); the test's ``name`` when it has no docstring."""
    paragraph = re.split(r"\n\s*\n", inspect.cleandoc(doc or ""), maxsplit=1)[0]
    paragraph = " ".join(paragraph.split())
    end = _SENTENCE_END.search(paragraph)
    return (paragraph[: end.end()] if end else paragraph) or name


def _stage_of(node: pytest.Item) -> str:
    stage = getattr(node.module, "STAGE", None)
    if stage is None:
        raise RuntimeError(f"{node.module.__name__} sets no STAGE")
    return stage


def _verdict(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> TestResult:
    from .feedback import Mistake, NotImplementedYet  # noqa: I001 - lazily: it imports torch

    result = TestResult(name=item.name, stage=_stage_of(item),
                        title=check_title(item.function.__doc__, item.name),
                        passed=report.passed, seconds=call.duration)
    if call.excinfo is not None:
        error = call.excinfo.value
        if isinstance(error, Mistake):
            result.message = str(error)
            result.kind = error.kind  # data from where the verdict was made, never the text
            result.not_implemented = isinstance(error, NotImplementedYet)
        else:
            # A bug in the grader, and only that: whatever the learner's process sends arrives
            # as an Outcome, checked against its probe's schema (boundary/session.py,
            # boundary/replies.py), and the suites judge every schema-valid value with a Mistake
            # (tests/test_wire.py feeds them random ones). Say so; never show its traceback to
            # the learner.
            result.grader_error = True
            result.message = (
                f"internal grader error ({type(error).__name__}: {error}); "
                "this is not your fault: please tell your instructor"
            )
    return result
