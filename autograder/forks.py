"""The stages' hidden suites side by side, in forks of the grader.

The stages are independent: each has its own stage process (its own learner process and
user), its own seeds (``Submission.test_seed``: from the test's name, never from the order
the tests run in), and its own verdicts. So the suites are dealt out to forks of the grader
(``FORKS``), taken after torch, pytest and the suites are imported: each fork opens its
stages' processes, runs their suites with pytest, and sends its verdicts back here over a
pipe, as JSON, once. What crosses the pipe comes from the grader's own code in the fork
(learner code runs only in the stage processes, and its replies are cleaned on the boundary,
``autograder/boundary/``), so it is trusted as the serial run's verdicts were. A fork that
ends without its verdicts is a grader error, never a score; the verdicts are put back in the
serial run's order, so results.json, the report and the scores are those of a serial grade
(tests/test_forks.py). Why two forks: docs/speed.md.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path

from . import phases
from .results import GraderError, TestResult

#: After the submission's own deadline (every probe has ended by then), how long the forks
#: may take to send their verdicts before they are ended and the grade is a grader error.
GRACE_SECONDS = 30.0


#: How many forks grade a submission's suites (``deal`` says which): each fork's waits on its
#: probes overlap the other's work, and each fork's fixed cost (its pytest session) is paid
#: once per fork, not once per stage (docs/speed.md has the measurements).
FORKS = 2

#: Each suite's seconds of checks in a warm grade of lumen, one suite after another (``make
#: benchmark`` prints each stage's first and last check): how ``deal`` balances the forks.
#: Only speed depends on it; a stage missing here counts as the mean of the others
#: (``seconds``), so a new stage needs no entry until it is measured.
SECONDS = {"init": 0.20, "neighbours": 0.14, "tying": 0.13, "embedding": 0.12,
           "onehot": 0.08, "params": 0.03}


def seconds(stage: str) -> float:
    """``stage``'s suite's seconds in ``SECONDS``, or the mean of those measured."""
    return SECONDS.get(stage, sum(SECONDS.values()) / len(SECONDS))


def deal(suites: list, forks: int = FORKS) -> list[list]:
    """``suites`` ((stage, path) pairs) dealt out to at most ``forks`` groups so that they end
    together: longest first (``SECONDS``), each to the group with the fewest seconds so far.
    With lumen's six: init, embedding, params in one (0.35 s); neighbours, tying, onehot in
    the other (0.35 s), where dealing them out in turn gave 0.29 s and 0.41 s."""
    cost = {stage: seconds(stage) for stage, _ in suites}
    groups: list[list] = [[] for _ in range(min(forks, len(suites)))]
    load = [0.0] * len(groups)
    for suite in sorted(suites, key=lambda s: -cost[s[0]]):  # stable: ties keep their order
        least = load.index(min(load))
        groups[least].append(suite)
        load[least] += cost[suite[0]]
    return [g for g in groups if g]


def run_forked(submission, suites: list[tuple[str, Path]], run_one,
               forks: int = FORKS) -> tuple[int, list]:
    """Run ``run_one(submission, paths)`` in a fork of this process for each group of
    ``suites`` (``deal``); (the worst pytest exit code, the verdicts in ``suites``' order).

    ``submission`` (grading.Submission) has no stage process open yet: each fork opens its own.
    """
    running: list[tuple[list[str], int, int]] = []  # (stages, pid, read end of its pipe)
    # Objects the collector never visits are never written to by it: a fork then copies only
    # the pages it really changes, not the whole heap at its first collection. (A grader that
    # froze its heap for good, as grade-batch's do, keeps it frozen.)
    thaw = not gc.get_freeze_count()
    gc.freeze()
    try:
        for group in deal(suites, forks):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the fork: never returns
                os.close(read)
                for _, _, other in running:
                    os.close(other)
                _child(submission, group, write, run_one)
            os.close(write)
            running.append(([stage for stage, _ in group], pid, read))
        if thaw:
            gc.unfreeze()
            thaw = False
        replies = _gather(running, submission.deadline + GRACE_SECONDS)
    finally:  # every fork has answered, or is past its time
        if thaw:
            gc.unfreeze()
        for _, pid, read in running:
            _end(pid)
            os.close(read)
    codes, results = [], []
    for stages, _, read in running:
        reply = replies.get(read)
        if reply is None:
            raise GraderError(f"the hidden suites of {', '.join(stages)} ended without their "
                              "verdicts (see the grader's stderr)")
        codes.append(reply["code"])
        results += [TestResult(**fields) for fields in reply["results"]]
        for name, at in reply["moments"].items():
            phases.MOMENTS[name] = at
    order = {stage: i for i, (stage, _) in enumerate(suites)}  # the serial run's order
    results.sort(key=lambda r: order.get(r.stage, len(order)))  # stable: tests keep theirs
    worst = next((c for c in codes if c not in (0, 1)), max(codes, default=0))
    return worst, results


def _child(submission, group: list[tuple[str, Path]], write: int, run_one) -> None:
    """In the fork: grade ``group``'s stages, write their verdicts to ``write``, exit (never
    return, so nothing of the parent's stack, its ``finally`` blocks or its atexit handlers,
    runs here)."""
    code = 70  # EX_SOFTWARE, if anything below fails
    try:
        os.dup2(2, 1)  # stdout may be a front end's channel (grade-batch --serve): keep it clean
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        before = dict(phases.MOMENTS)
        for stage, _ in group:  # every fork asked for, then each one sent: they load side by side
            submission.session(stage).connect()
        for stage, _ in group:
            submission.session(stage).start()
        exit_code = run_one(submission, [str(path) for _, path in group])
        submission.close_sessions()
        moments = {k: v for k, v in phases.MOMENTS.items() if before.get(k) != v}
        data = json.dumps({"code": int(exit_code), "moments": moments,
                           "results": [asdict(r) for r in submission.results]}).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(write, view):]
        code = 0
    except BaseException:  # noqa: BLE001 - the parent reports a fork without verdicts
        traceback.print_exc()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _gather(forks: list[tuple[list[str], int, int]], deadline: float) -> dict[int, dict]:
    """Each fork's reply, read side by side (a fork blocked writing a full pipe must not
    wait for another to finish), until each pipe closes or ``deadline`` passes."""
    chunks: dict[int, list[bytes]] = {read: [] for _, _, read in forks}
    open_ = set(chunks)
    while open_:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        readable, _, _ = select.select(list(open_), [], [], min(left, 1.0))
        for read in readable:
            data = os.read(read, 1 << 16)
            if data:
                chunks[read].append(data)
            else:
                open_.discard(read)
    replies = {}
    for _, _, read in forks:
        if read in open_:
            continue  # still writing at the deadline: no verdicts from it
        try:
            replies[read] = json.loads(b"".join(chunks[read]))
        except ValueError:
            continue  # it ended part-way through: reported as without verdicts
    return replies


def _end(pid: int) -> None:
    """End a fork and wait for it: one whose pipe has closed is exiting already (it closes
    only when the fork exits), one whose has not is past its deadline or never answered."""
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
