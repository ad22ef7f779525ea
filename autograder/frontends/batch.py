"""Grading a class: ``python -m autograder grade-batch SUBMISSIONS --out grades.csv``.

SUBMISSIONS holds one folder or .zip per learner. Each gets a folder next to ``--out``
(grades.csv -> grades/<learner>/): grade.json, the record (a ``Grade``), and its views; the
class files (grades.csv, summary.md, the exports) are rebuilt from the records every run
(``classbook.py``). What is written, and how a rerun resumes: docs/grading.md.

This module is the run: it hands learners to ``--jobs`` warm grading processes
(``batch_server.py``), records each outcome (``batch_records.py``), keeps a learner graded
before by this grader from the same files (``provenance.py``), and writes what is graded when
Ctrl-C or SIGTERM stops it. No learner's failure stops the class: only a broken rubric does, or
a grader that fails on the reference solution (lumen's files), which the batch grades when its
first submissions all fail in the grader. ``--shard K/N`` grades one shard (``shards.py``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lumen.stages import SUBMISSION_FILES

from .. import ROOT
from ..boundary.clean import MAX_NAME
from ..forks import FORKS
from ..options import Options
from ..results import Grade
from ..views.escape import terminal
from ..words import counted
from . import provenance, shards
from .batch_records import record
from .batch_server import GradingProcess
from .classbook import (
    CHANGED,
    KEPT,
    SAME_NAME,
    UNGRADED,
    default_out_dir,
    discover,
    standing,
    write_class_files,
)

#: Grader failures before any success, after which the batch grades the reference (lumen's
#: own files): the grader is broken when it fails on that too, never on learners' say-so.
GIVE_UP_AFTER = 3
REFERENCE = "(the reference solution)"  # the job's name when the batch grades lumen's files
INTERRUPTED = "interrupted"  # why the batch stopped after Ctrl-C or SIGTERM
#: What the batch says of the learners it keeps (``classbook.KEPT``), first and last.
KEEPING = "kept {kept} graded before from the same files (--force regrades them)"


@dataclass(frozen=True)
class Batch:
    """How the class is gone through (how each learner is graded is the ``Options``)."""

    jobs: int = 1  # grading processes, each a warm worker
    force: bool = False  # regrade learners graded before
    out_dir: Path | None = None  # the per-learner folder; None: ``out`` without .csv
    exports: tuple[str, ...] = ()  # exports.FORMATS to write, with ``roster``
    roster: object = None  # a checked exports.Roster
    assignment: str | None = None  # the gradebook column's name
    shard: tuple[int, int] | None = None  # (K, N): only shard K of N


def reference_fails(process: GradingProcess) -> str:
    """Grade lumen's own files, the reference solution, in ``process``: "" when they get full
    marks, else why not. Only this decides that the grader is broken: learners' submissions
    that fail in it (whatever their names, however many sort first) never stop a class."""
    with tempfile.TemporaryDirectory(prefix="reference-") as folder:
        try:
            for name in SUBMISSION_FILES:
                shutil.copyfile(ROOT / "lumen" / name, Path(folder) / name)
        except OSError as error:  # no reference to grade: fail closed, as a broken grader
            return f"the reference solution could not be read ({error})"
        try:
            reply = process.grade({"learner": REFERENCE, "path": folder})
        except Exception as error:  # noqa: BLE001 - a reply that is not JSON: the grader's
            process.stop()
            return f"{type(error).__name__}: {error}"
    if "grade" not in reply:
        return str(reply.get("error") or reply.get("fatal") or "no grade came back")
    try:
        grade = Grade.from_json(reply["grade"])
    except (TypeError, ValueError, KeyError) as error:
        return f"its grade could not be read ({error})"
    short = [f"{s.name} {s.score:g}/{s.max_score:g}" for s in grade.stages
             if s.score < s.max_score]
    return f"it scored {', '.join(short)}" if short else ""


@dataclass(frozen=True)
class Answer:
    """A learner's grading finished, for ``seconds_left``."""

    process: int  # the grading process (a thread's) that graded them
    at: float  # when, in seconds on one clock
    fresh: bool  # the process started (again) for them: their time includes its start


def seconds_left(answers: list[Answer], total: int, jobs: int) -> float | None:
    """About how long the rest of a batch of ``total`` learners takes with ``jobs`` grading
    processes, from the ``answers`` so far; None until it can be told.

    From each process's time between two of its answers, never from when the batch began: a
    process's first learner also pays for its start (Python and torch, the sandbox, the first
    collection of the suites), several of a warm learner's time, which no later learner pays
    again (and again after a restart: ``fresh``). Until a process has answered twice, no
    honest estimate exists."""
    last: dict[int, float] = {}
    gaps = []
    for answer in answers:
        if not answer.fresh and answer.process in last:
            gaps.append(answer.at - last[answer.process])
        last[answer.process] = answer.at
    left = total - len(answers)
    if not gaps or left <= 0:
        return None
    return sum(gaps) / len(gaps) * left / jobs


def _fingerprint(submission: Path, settings: str) -> str | None:
    """``provenance.fingerprint`` of a learner's submission, or None when it cannot be read
    now (then they are graded, and the grading says why)."""
    try:
        return provenance.fingerprint(submission, settings)
    except OSError:
        return None


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (kill, a scheduler's time limit, a stopped service) stops the batch as Ctrl-C
    does: what is graded so far is written. Restored on the way out, so a second SIGTERM while
    the files are written ends the process at once (every file is written atomically). Only
    the main thread may set a handler; elsewhere SIGTERM keeps its default."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(submissions: Path, out: Path, options: Options | None = None,
        batch: Batch | None = None, progress=None) -> int:
    """Grade every learner in ``submissions`` under ``options``; write ``out`` (the CSV) and
    ``batch.out_dir``.

    ``batch.shard`` (K, N): only the learners ``shards.shard_of`` puts in shard K of N, with a
    manifest for ``merge-shards`` once the shard has finished
    (``autograder/frontends/shards.py``).

    ``batch.exports`` (``exports.FORMATS``) with a checked ``batch.roster``: the gradebook
    files an LMS imports, next to ``out``, named ``batch.assignment`` there.

    Returns the exit status: 0 all graded, 1 some learners could not be graded (see the
    CSV's notes; a rerun retries them), 2 the batch stopped (a broken rubric or grader) or
    the gradebook files could not be written.
    """
    options, batch = options or Options(), batch or Batch()
    if options.seed is not None:  # one seed for a class would give everyone the same inputs
        raise ValueError("a class is graded with a fresh seed per learner "
                         "(shards.SEED_POLICY): grade one learner with --seed to replay theirs")
    shard = batch.shard
    progress = progress or sys.stderr  # the progress bar: a line per learner
    out_dir = batch.out_dir or default_out_dir(out)
    learners, ignored = discover(submissions, skip=(out_dir, out))
    everyone = [x.id for x in learners]
    made_by = provenance.versions()  # the grader that grades: the code loaded now
    if shard:

        shards.forget(out_dir)
        learners = [x for x in learners if shards.shard_of(x.id, shard[1]) == shard[0]]
        print(f"shard {shard[0]}/{shard[1]}: {counted(len(learners), 'learner')} of "
              f"{len(everyone)}", file=progress)
    if ignored:
        print(f"ignored {counted(len(ignored), 'entry', 'entries')} that are neither a folder nor "
              "a .zip: "
              f"{', '.join(terminal(name, MAX_NAME) for name in ignored[:10])}"
              f"{' ...' if len(ignored) > 10 else ''}", file=progress)
    for learner in learners:
        if learner.set_aside:
            print(f"{terminal(learner.id, MAX_NAME)}: " + SAME_NAME.format(
                graded=terminal(learner.path.name, MAX_NAME),
                others=", ".join(terminal(x, MAX_NAME) for x in learner.set_aside)),
                file=progress)
    failures: dict[str, str] = {}  # learner -> why their files could not be written
    for learner in learners:
        if learner.problem:
            record(out_dir / learner.id, {"error": learner.problem}, failures)
    settings = provenance.settings_of(options)
    graded_from = {x.id: _fingerprint(x.path, settings) for x in learners if not x.problem}
    standings = {x: UNGRADED if batch.force else standing(out_dir / x, made_by, graded_from[x])
                 for x in graded_from}
    todo = [x for x in learners if not x.problem and standings[x.id] != KEPT]
    kept = sum(1 for s in standings.values() if s == KEPT)
    jobs = max(1, min(batch.jobs, len(todo) or 1))
    print(f"grading {len(todo)} of {counted(len(learners), 'learner')} with "
          f"{counted(jobs, 'process', 'processes')}"
          + (f"; {KEEPING.format(kept=counted(kept, 'learner'))}" if kept else ""),
          file=progress)

    # Forks grade a learner's stages side by side where cores would idle; with a process per
    # core, each learner's suites run one after another (forks would only add their cost).
    config = {"options": options.to_json(), "forks": 1 if jobs >= (os.cpu_count() or 1) else FORKS}
    pending = list(reversed(todo))
    lock = threading.Lock()
    state = {"done": 0, "graded": 0, "regraded": 0, "failed": 0, "fatal": None,
             "reference": None}  # None: not graded yet; "": full marks; else why it failed
    width = len(str(len(todo)))
    started = time.perf_counter()
    answers: list[Answer] = []

    def work(index: int) -> None:
        process = GradingProcess(index, config, out_dir / ".logs" / f"process-{index}.txt")
        fresh = True  # its first learner pays for its start
        try:
            while True:
                with lock:
                    if not pending or state["fatal"]:
                        return
                    learner = pending.pop()
                job = {"learner": learner.id, "path": str(learner.path.resolve())}
                try:
                    reply = process.grade(job)
                except Exception as error:  # noqa: BLE001 - e.g. a reply line that is not JSON
                    process.stop()  # a fresh process for the next learner
                    reply = {"learner": learner.id, "error": "the batch failed on this "
                             f"submission ({type(error).__name__}: {error})"}
                with lock:
                    if state["fatal"] == INTERRUPTED:  # the CSV is written without it: a
                        return  # grade recorded now would be missing there; a rerun grades it
                    if "fatal" in reply:
                        state["fatal"] = reply["fatal"]
                        return
                    error, shown = record(out_dir / learner.id, reply, failures,
                                           options.visibility, made_by, graded_from[learner.id])
                    state["done"] += 1
                    if error is None:
                        state["graded"] += 1
                        if standings[learner.id] == CHANGED:
                            state["regraded"] += 1
                    else:
                        state["failed"] += 1
                        if (state["failed"] >= GIVE_UP_AFTER and not state["graded"]
                                and state["reference"] is None):
                            state["reference"] = reference_fails(process)
                            if state["reference"]:
                                state["fatal"] = (
                                    f"the first {GIVE_UP_AFTER} submissions failed in the "
                                    f"grader, and so does the reference solution: "
                                    f"{state['reference']}")
                    answers.append(Answer(index, time.perf_counter(), fresh))
                    fresh = "grade" not in reply  # after a failure, a process starts afresh
                    left = seconds_left(answers, len(todo), jobs)
                    eta = f"  (about {left:.0f} s left)" if left is not None else ""
                    print(f"[{state['done']:>{width}}/{len(todo)}] "
                          f"{terminal(learner.id, MAX_NAME)} {shown}{eta}",
                          file=progress, flush=True)
        finally:
            process.stop()

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(jobs)]
    try:
        with _terminate_as_interrupt():
            for thread in threads:
                thread.start()
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.5)
    except KeyboardInterrupt:
        with lock:
            state["fatal"] = INTERRUPTED
            pending.clear()
        print("interrupted: writing what is graded so far (rerun to resume)", file=progress)
    elapsed = time.perf_counter() - started

    if todo:
        print(f"graded {counted(state['graded'], 'learner')} in {elapsed:.1f} s "
              f"({elapsed / max(state['done'], 1):.2f} s each)", file=progress)
    if kept or CHANGED in standings.values():
        regraded = counted(state["regraded"], "learner")
        print(f"regraded {regraded} whose files or options changed since their last grade; "
              f"{KEEPING.format(kept=counted(kept, 'learner'))}", file=progress)
    rows, exported = write_class_files(learners, out, out_dir, failures, list(batch.exports),
                                       batch.roster, batch.assignment, progress)
    if state["fatal"]:
        print(f"error: the batch stopped: {terminal(state['fatal'])}", file=progress)
        return 2
    if shard:  # finished: the records it describes are all written

        shards.write_manifest(out_dir, shard, everyone, [x.id for x in learners],
                              options, made_by)
    if not exported:
        return 2
    return 1 if any(row["total"] is None for row in rows) else 0
