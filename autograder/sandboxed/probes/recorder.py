"""The call recorder: which torch functions and ATen operators a piece of learner code ran.

It only ever explains: a ban is judged from the submitted source in the grader (autograder/rules/,
autograder/suites/bans.py), and a recorded call adds to the message of a test that the source
already fails (the learner's code runs in this process and can switch the recorder off).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from torch.overrides import TorchFunctionMode


@dataclass
class Record:
    """What ran while ``record_calls`` was on: torch function and ATen operator names."""

    names: set[str] = field(default_factory=set)
    problem: str | None = None  # why the all-threads watch could not run, if it could not


class _FunctionNames(TorchFunctionMode):
    """This thread's torch functions by their Python names (F.one_hot -> "one_hot")."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.add(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Kineto prints a line to fd 2 when it starts and stops: keep it out of the learner's
    captured output."""
    sys.stderr.flush()
    try:
        saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    except OSError:
        yield
        return
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _profiler_config():
    """torch's profiler on the CPU, every thread: it sees each ATen operator at the dispatcher
    (aten::embedding, aten::one_hot), whether it came from F.embedding, torch.ops, inside
    torch._C.DisableTorchFunction() or from a thread the learner started."""
    # torch's private profiler API: loaded only by the probes that record calls
    from torch._C._profiler import (
        ProfilerActivity,
        ProfilerConfig,
        ProfilerState,
        _ExperimentalConfig,
    )

    config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False,
                            _ExperimentalConfig(profile_all_threads=True))
    return config, {ProfilerActivity.CPU}


@contextmanager
def record_calls() -> Iterator[Record]:
    """Record the torch functions (this thread) and ATen operators (every thread) that run.

    Learner code in this process could switch either watch off or fill the record with
    anything, so the record decides nothing: the bans are judged from the submitted source in
    the grader (autograder/rules/, autograder/suites/bans.py), and the record only adds to the
    message of a test that the source already fails.
    """
    from torch.autograd import (  # private, as _profiler_config: only when a probe records
        _disable_profiler,
        _enable_profiler,
        _prepare_profiler,
    )

    record = Record()
    watching = False
    try:
        config, activities = _profiler_config()
        with _quiet_stderr():
            _prepare_profiler(config, activities)
            _enable_profiler(config, activities)
        watching = True
    except Exception as exc:  # noqa: BLE001 - e.g. a profiler already on: say so, go on
        record.problem = f"{type(exc).__name__}: {exc}"[:300]
    try:
        with _FunctionNames(record.names):
            yield record
    finally:
        if watching:
            try:
                with _quiet_stderr():
                    events = _disable_profiler().events()
                record.names |= {event.name() for event in events}
            except Exception as exc:  # noqa: BLE001 - reported, never raised into the probe
                record.problem = f"{type(exc).__name__}: {exc}"[:300]


def _recorded(record: Record) -> dict:
    return {"calls": sorted(record.names), "watch_problem": record.problem}
