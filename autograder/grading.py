"""Grading submissions: one warm worker, then any number of submissions through it.

``Grader`` starts the worker at once (it imports torch while this process does too), then
grades submission after submission through the same worker, so a class costs one torch import
per worker rather than one per learner. ``grade`` is the one-submission shortcut.
"""

from __future__ import annotations

import itertools
import os
import secrets
import time
from pathlib import Path

from .sandbox import FIRST_UID, UIDS_PER_SUBMISSION, choose_launcher

SUITES = Path(__file__).resolve().parent / "suites"


class GraderError(RuntimeError):
    """The grader itself could not run (not the learner's fault)."""


def choose_devices(kind: str) -> list[str]:
    """CPU always; CUDA too when asked for or (``auto``) when present."""
    import torch

    has_cuda = torch.cuda.is_available()
    if kind == "cuda" and not has_cuda:
        raise GraderError("--device cuda, but no CUDA device is available")
    return ["cpu", "cuda"] if has_cuda and kind in ("auto", "cuda") else ["cpu"]


def run_suites(context, stages: list[str] | None = None) -> list:
    """Run the hidden suites (all, or those of ``stages``) for one submission's context."""
    os.environ.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # ~1 s of plugin scanning
    import pytest
    import torch

    # The reference's tensors are tiny: one thread avoids ~100x slower forwards on a busy CPU.
    torch.set_num_threads(1)

    from .plugin import GradingPlugin

    paths = [str(SUITES / f"test_{s}.py") for s in stages] if stages else [str(SUITES)]
    args = [*paths, "-c", str(SUITES / "pytest.ini"), "--rootdir", str(SUITES),
            "-p", "no:terminal", "-p", "no:cacheprovider", "-p", "no:logging",
            "-p", "no:junitxml", "-p", "no:doctest", "-p", "no:pastebin"]
    code = pytest.main(args, plugins=[GradingPlugin(context)])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise GraderError(f"the hidden suites could not run (pytest exit code {code})")
    return context.results


class Grader:
    """A warm worker and the settings every submission is graded with."""

    def __init__(self, device: str = "auto", sandbox: str = "auto", limits=None,
                 first_uid: int = FIRST_UID, uids: int = 50_000) -> None:
        """``first_uid`` and ``uids``: the users learner code runs as, a block of
        ``UIDS_PER_SUBMISSION`` per submission in turn (one per stage process); graders running
        side by side need ranges that do not overlap."""
        from .worker_client import Limits, Worker

        self.launcher = choose_launcher(sandbox)
        # Decided before torch is imported here: whether the sandbox shows the GPU.
        self.launcher.cuda = device != "cpu" and os.path.exists("/dev/nvidiactl")
        self.worker = Worker(limits or Limits(), self.launcher)
        self.device = device
        self._devices: list[str] | None = None
        self._uids = itertools.cycle(range(first_uid, first_uid + uids, UIDS_PER_SUBMISSION))

    @property
    def devices(self) -> list[str]:
        if self._devices is None:
            self._devices = choose_devices(self.device)
        return self._devices

    def grade(self, path: Path, seed: int | None = None, stages: list[str] | None = None):
        """Grade the submission at ``path`` (a folder or a .zip); returns its ``Grade``."""
        from .plugin import GradingContext
        from .results import score
        from .rubric import load
        from .submission import prepare
        from .worker_client import WorkerError

        started = time.perf_counter()
        if self.worker.failed is not None:  # a failed start: one more try for each submission
            self.worker.restart()
        try:
            self.worker.wait_ready()
        except WorkerError as error:
            raise GraderError(str(error)) from error
        prepared = prepare(Path(path))
        files = prepared.files
        uid = next(self._uids) if self.launcher.uses_uids() else None
        context = GradingContext(
            worker=self.worker, devices=self.devices, files=files, uid=uid,
            seed=secrets.randbelow(2**31) if seed is None else seed,
            deadline=time.monotonic() + self.worker.limits.submission_seconds, stages=stages)
        restarts = self.worker.restarts
        try:
            results = run_suites(context, stages)
        finally:
            context.close()
        failures = sorted({r.message for r in results if r.grader_error})
        if failures:  # never a learner's zero: the grade is not given at all
            raise GraderError(f"{len(failures)} internal error(s) while grading {path}: "
                              + " | ".join(failures[:3]))
        rubric = load()
        if stages is None:
            rubric.check_tests({r.name for r in results})
        notes = [*prepared.notes, *prepared.problems.values()]
        if getattr(self.launcher, "warning", None):
            notes.append(self.launcher.warning)
        if self.worker.restarts > restarts:
            notes.append("your code ended the grading worker, which was restarted")
        return score(results, rubric, stages, submission=str(path), seed=context.seed,
                     devices=list(self.devices), sandbox=self.launcher.name,
                     seconds=time.perf_counter() - started, notes=notes)

    def close(self) -> None:
        self.worker.close()

    def __enter__(self) -> Grader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def grade(path: Path, device: str = "auto", sandbox: str = "auto", seed: int | None = None,
          limits=None, stages: list[str] | None = None):
    """Grade one submission from a cold start."""
    with Grader(device, sandbox, limits) as grader:
        return grader.grade(path, seed, stages)
