"""Grading a submission, in five steps: take it in, open its stage processes, run the hidden
checks, score them, and gather what the report says.

``Grader`` starts the worker at once, then grades submission after submission through it, so a
class costs one torch import per worker rather than one per learner. ``grade`` is the
one-submission shortcut. The steps, in order:

1. ``boundary/intake.prepare``: the learner's files, as data, and what was wrong with them;
2. ``Submission.open``: one process per stage (``boundary/session.py``), each sent a
   ``boundary/request.StageRequest``, under the limits of ``boundary/launcher.py``;
3. ``run_suites``: pytest over ``suites/`` (``suites/plugin.py``), the stages side by side in
   forks of this process (``forks.py``);
4. ``results.score``: points per verdict from ``rubric.toml``;
5. ``submission_notes``: the ``Grade``'s notes, once for every front end; ``views/report.py``
   shows the Grade and ``Grade.to_json`` is the record a front end keeps.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from lumen.stages import STAGE_NAMES

from . import phases
from .boundary.client import Worker, WorkerError
from .boundary.intake import prepare, syntax_notes
from .boundary.launcher import UIDS_PER_SUBMISSION, choose_launcher, claim_uids, wants_gpu
from .boundary.request import MODULES, given_source, stage_request
from .boundary.session import StageSession
from .forks import FORKS, run_forked
from .options import Options
from .results import Grade, GraderError, TestResult, score
from .rubric import load

SUITES = Path(__file__).resolve().parent / "suites"


def choose_devices(kind: str) -> list[str]:
    """CPU always; CUDA too when asked for or (``auto``) when present."""
    import torch  # torch: imported here while the worker imports its own, side by side

    phases.mark("grader: torch imported")
    has_cuda = torch.cuda.is_available()
    if kind == "cuda" and not has_cuda:
        raise GraderError("--device cuda, but no CUDA device is available")
    return ["cpu", "cuda"] if has_cuda and kind in ("auto", "cuda") else ["cpu"]


@dataclass
class Submission:
    """One submission being graded: its files, its stage processes, its seed and verdicts."""

    worker: object  # boundary.client.Worker
    devices: list[str]
    files: dict[str, str]  # the learner's file name -> text, as sent to each stage process
    uid: int | None = None  # the first of its block of unprivileged users (in the sandbox)
    seed: int = field(default_factory=lambda: secrets.randbelow(2**31))
    deadline: float = field(default_factory=lambda: float("inf"))
    stages: list[str] | None = None  # the stages graded (None: all)
    sessions: dict = field(default_factory=dict)  # stage -> boundary.session.StageSession
    results: list[TestResult] = field(default_factory=list)

    def open(self) -> None:
        """Start a process for every stage graded; they load side by side."""
        for name in self.stages or STAGE_NAMES:  # every fork asked for, then each one sent
            self.session(name).connect()
        for name in self.stages or STAGE_NAMES:
            self.session(name).start()

    def session(self, stage: str):
        """The stage's process (started on first use when pytest runs the suites directly)."""

        if stage not in self.sessions:
            request = stage_request(stage, self.files, self.limits(stage))
            self.sessions[stage] = StageSession(self.worker, request, self.deadline)
        return self.sessions[stage]

    def limits(self, stage: str) -> dict:
        """What ``stage``'s process may use, and its own user id (one of the submission's
        block), so no two stage processes share a user."""
        limits = self.worker.limits
        uid = None if self.uid is None else self.uid + STAGE_NAMES.index(stage)
        return {"memory_bytes": limits.memory_bytes, "file_bytes": limits.file_bytes,
                "cuda": "cuda" in self.devices, **self.worker.launcher.child_limits(uid)}

    def test_seed(self, name: str) -> int:
        """A seed per test, derived from the run's seed: one number reproduces the whole run."""
        digest = hashlib.sha256(f"{self.seed}:{name}".encode()).digest()
        return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF

    def close_sessions(self) -> None:
        """End every stage process this process opened (``close`` waits for them)."""
        for session in self.sessions.values():
            session.close()

    def close(self) -> None:
        """End every process of this submission, and wait until each one is gone."""
        self.close_sessions()
        self.worker.reap()


def import_suites() -> None:
    """What running the suites imports (torch, pytest, the suites' plugin), imported now: a
    grade does it while the worker imports torch, so the two imports overlap."""
    os.environ.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # ~1 s of plugin scanning
    import pytest  # noqa: F401
    import torch  # torch: imported here while the worker imports its own, side by side

    # The reference's tensors are tiny: one thread avoids ~100x slower forwards on a busy CPU.
    torch.set_num_threads(1)

    from .suites import plugin  # noqa: F401
    # The suites themselves, as pytest names them (the package path): imported once here, not
    # once per grade or per fork (``forks``)
    for _, path in suite_files():
        importlib.import_module(f"autograder.suites.{path.stem}")
    phases.first("grader: pytest and the suites' plugin imported")


def read_rules(files: dict[str, str], stages: list[str] | None) -> None:
    """The rules' reading of the learner's source (``suites/bans.prefetch``), done now."""
    from .suites import bans  # imported by import_suites already: never before the worker starts

    bans.prefetch(files, stages)


def given_sources() -> dict[str, str]:
    """The stubs every stage process is sent (``boundary/request.given_source``, cached), made
    now: a cold grade makes them while the worker imports torch, and the forks that grade the
    suites (``forks``) inherit them instead of each making its own."""

    return {module: given_source(module) for module in MODULES}


def suite_files(stages: list[str] | None = None) -> list[tuple[str, Path]]:
    """(stage, its hidden suite) for ``stages`` (in that order), or for every suite in the
    order pytest collects them (by file name), which is the order of the results."""
    if stages:
        return [(s, SUITES / f"test_{s}.py") for s in stages]
    return [(p.stem.removeprefix("test_"), p) for p in sorted(SUITES.glob("test_*.py"))]


def run_suites(submission: Submission, stages: list[str] | None = None,
               forks: int = FORKS) -> list[TestResult]:
    """Run the hidden suites (all, or those of ``stages``) for one submission: dealt out to
    ``forks`` forks of this process that grade side by side (``forks.py``), when there is
    more than one suite and ``forks`` > 1; else here, one suite after another, its stage
    processes loading side by side. Either way the verdicts are the same, in the same order."""
    import_suites()
    import pytest  # imported by import_suites, while the worker imported torch

    suites = suite_files(stages)
    phases.mark("suites: started")
    if forks > 1 and len(suites) > 1:
        code, submission.results = run_forked(submission, suites, _pytest, forks)
    else:
        submission.open()
        code = _pytest(submission, [str(path) for _, path in suites])
    phases.mark("suites: done")
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise GraderError(f"the hidden suites could not run (pytest exit code {code})")
    return submission.results


def _pytest(submission: Submission, paths: list[str]) -> int:
    """pytest over the suite files ``paths``, its verdicts appended to submission.results."""
    # pytest and the suites' plugin: imported while the worker imports torch (import_suites)
    import pytest

    from .suites.plugin import GradingPlugin  # as pytest: imported by import_suites

    args = [*paths, "-c", str(SUITES / "pytest.ini"), "--rootdir", str(SUITES),
            "-p", "no:terminal", "-p", "no:cacheprovider", "-p", "no:logging",
            "-p", "no:junitxml", "-p", "no:doctest", "-p", "no:pastebin",
            # its clean-up runs gc.collect() five times per session (~0.4 s per learner); the
            # learner's code never runs in this process, so nothing of theirs is unraisable here
            "-p", "no:unraisableexception"]
    return pytest.main(args, plugins=[GradingPlugin(submission)])


class Grader:
    """A warm worker and the options every submission is graded with (``options.Options``)."""

    def __init__(self, options: Options | None = None) -> None:
        """Grade under ``options`` (``autograder/options.py``; default: ``grade``'s defaults).
        Learner code runs as users of a block this grader claims for its lifetime
        (``claim_uids``: no other grader on the machine has them), ``UIDS_PER_SUBMISSION``
        per submission in turn (one per stage process)."""

        self.options = options or Options()
        self.launcher = choose_launcher(self.options.sandbox)
        self.uid_range, self._claim = (claim_uids() if self.launcher.uses_uids()
                                       else (range(0), None))
        self.launcher.cuda = wants_gpu(self.options.device)  # before torch is imported here
        self.worker = Worker(self.options.limits, self.launcher)
        self._devices: list[str] | None = None
        self._uids = itertools.cycle(self.uid_range[::UIDS_PER_SUBMISSION])
        self.forks = FORKS  # how many forks grade the suites side by side (1: none)

    @property
    def devices(self) -> list[str]:
        if self._devices is None:
            self._devices = choose_devices(self.options.device)
        return self._devices

    def grade(self, path: Path, seed: int | None = None,
              stages: list[str] | None = None) -> Grade:
        """Grade the submission at ``path`` (a folder or a .zip), stage by stage: under the
        options' seed and stages, unless ``seed`` or ``stages`` say otherwise for this one."""

        started = time.perf_counter()
        seed = self.options.seed if seed is None else seed
        if stages is None and self.options.stages:
            stages = list(self.options.stages)
        devices = self.devices  # the grader's imports, while the worker does its own
        import_suites()
        self.worker.offer_stubs(given_sources())  # made here once, before any fork needs them
        prepared = prepare(Path(path))  # 1. take in the submission: its files, as data
        phases.mark("submission: read")
        read_rules(prepared.files, stages)  # its source read while the worker starts
        self._ready()

        submission = Submission(  # 2. open the stage processes
            worker=self.worker, devices=devices, files=prepared.files,
            uid=next(self._uids) if self.launcher.uses_uids() else None,
            seed=secrets.randbelow(2**31) if seed is None else seed,
            deadline=time.monotonic() + self.worker.limits.submission_seconds, stages=stages)
        restarts = self.worker.restarts
        try:
            results = run_suites(submission, stages, self.forks)  # 2.-3. processes, checks
        finally:
            submission.close()  # every process of it gone before anything else runs
            phases.mark("submission: every process ended")

        _no_grader_errors(results, path)  # 4. score: never a grade if the grader failed
        rubric = load()
        if stages is None:
            rubric.check_tests({r.name for r in results})
        notes = submission_notes(  # 5. what the learner is told, the same in every front end
            Path(path), prepared, restarted=self.worker.restarts > restarts)
        phases.mark("grade: scored")
        return score(results, rubric, stages, seed=submission.seed,
                     submission=Path(path).name or str(path),  # its name, never its folder
                     devices=list(self.devices), sandbox=self.launcher.name,
                     seconds=time.perf_counter() - started, notes=notes,
                     operator_notes=self.operator_notes())

    def operator_notes(self) -> list[str]:
        """What the operator is told about how learner code ran (the sandbox and its memory
        bound): their channel only (stderr, extra_data, summary.md), never a learner's."""
        notes = [f"sandbox: {self.launcher.name}; memory bound: {self.launcher.memory}"]
        return notes + ([self.launcher.warning] if self.launcher.warning else [])

    def _ready(self) -> None:
        """The worker is up, or a GraderError: a failed start gets one more try each time."""

        if self.worker.failed is not None:
            self.worker.restart()
        try:
            self.worker.wait_ready()
        except WorkerError as error:
            raise GraderError(str(error)) from error

    def close(self) -> None:
        self.worker.close()
        if self._claim is not None:  # every process of its users gone: the block is free
            os.close(self._claim)
            self._claim = None

    def __enter__(self) -> Grader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def submission_notes(path: Path, prepared, restarted: bool = False) -> list[str]:
    """The notes on a submission (``path``, as ``prepared`` by ``boundary/intake.prepare``),
    made once here for every front end: what was wrong with its files, whether its code ended
    the worker, and each file that does not compile. A note names the submission by its name,
    never by where it lies on the grading machine (an instructor's home folder)."""

    notes = [*prepared.notes, *prepared.problems.values()]
    if restarted:
        notes.append("your code ended the grading worker, which was restarted")
    notes += syntax_notes(prepared.files)
    where = str(path)
    return [note.replace(where, path.name) for note in notes] if path.name else notes


def _no_grader_errors(results: list[TestResult], path: Path) -> None:
    failures = sorted({r.message for r in results if r.grader_error})
    if failures:
        raise GraderError(f"{len(failures)} internal error(s) while grading {path}: "
                          + " | ".join(failures[:3]))

