"""The pytest plugin that connects the hidden suites to a learner's worker and records verdicts.

The runner (``python -m autograder grade``) registers a ``GradingPlugin`` it has already started
the worker for; ``pytest autograder/suites --submission PATH`` makes one itself (see
``suites/conftest.py``). Either way each test gets a ``learner`` fixture: probe calls into the
learner's code for the test's stage, run in the worker.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field

import pytest

from lumen.stages import STAGE_NAMES

from .results import TestResult
from .worker_client import StageSession, Worker


@dataclass
class GradingContext:
    """One submission's grading: its files, stage sessions, seed, deadline and verdicts."""

    worker: Worker
    devices: list[str]
    files: dict[str, str]  # the learner's file name -> text, as sent to each stage child
    uid: int | None = None  # the first of its block of unprivileged users (in the sandbox)
    seed: int = field(default_factory=lambda: secrets.randbelow(2**31))
    deadline: float = field(default_factory=lambda: float("inf"))
    sessions: dict[str, StageSession] = field(default_factory=dict)
    results: list[TestResult] = field(default_factory=list)
    stages: list[str] | None = None  # the stages graded (None: all)

    def session(self, stage: str) -> StageSession:
        from .stage_request import stage_request

        if not self.sessions:  # the first test: one child per stage, this stage's first
            for name in self.stages or STAGE_NAMES:
                request = {**stage_request(name), "files": self.files,
                           "limits": self.child_limits(name)}
                self.sessions[name] = StageSession(self.worker, name, request, self.deadline)
            first = self.sessions[stage]
            first.start()
            first.on_loaded = self._start_the_rest  # they load while this stage is graded
        return self.sessions[stage]

    def _start_the_rest(self) -> None:
        for session in self.sessions.values():
            session.start()

    def child_limits(self, stage: str) -> dict:
        """What ``stage``'s process may use; its own user id (the submission's block of user
        ids, one per stage), so no two stage processes share a user."""
        limits = self.worker.limits
        uid = None if self.uid is None else self.uid + STAGE_NAMES.index(stage)
        return {"memory_bytes": limits.memory_bytes, "file_bytes": limits.file_bytes,
                "cuda": "cuda" in self.devices, **self.worker.launcher.child_limits(uid)}

    def test_seed(self, name: str) -> int:
        """A seed per test, derived from the run's seed: one number reproduces the whole run."""
        digest = hashlib.sha256(f"{self.seed}:{name}".encode()).digest()
        return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF

    def close(self) -> None:
        """End this submission's children and anything they left running."""
        for session in self.sessions.values():
            session.close()
        self.worker.reap()


class GradingPlugin:
    """Provides the fixtures and records each hidden test's verdict."""

    def __init__(self, context: GradingContext) -> None:
        self.context = context

    def pytest_configure(self, config: pytest.Config) -> None:
        # Verdicts come from the Mistake's message, never a traceback: skip pytest's, which
        # parses the suite's source for every failing test (~1 s a submission of stubs).
        config.option.tbstyle = "no"

    @pytest.fixture
    def grading(self) -> GradingContext:
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
        import torch

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


def _stage_of(node: pytest.Item) -> str:
    stage = getattr(node.module, "STAGE", None)
    if stage is None:
        raise RuntimeError(f"{node.module.__name__} sets no STAGE")
    return stage


def _verdict(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> TestResult:
    from .feedback import Mistake, NotImplementedYet

    doc = (item.function.__doc__ or item.name).strip().splitlines()[0]
    result = TestResult(name=item.name, stage=_stage_of(item), title=doc, passed=report.passed,
                        seconds=call.duration)
    if call.excinfo is not None:
        error = call.excinfo.value
        if isinstance(error, Mistake):
            result.message = str(error)
            result.not_implemented = isinstance(error, NotImplementedYet)
        else:  # a bug in the grader: say so, never show its traceback to the learner
            result.grader_error = True
            result.message = (
                f"internal grader error ({type(error).__name__}: {error}); "
                "this is not your fault: please tell your instructor"
            )
    return result
