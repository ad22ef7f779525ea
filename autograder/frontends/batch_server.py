"""A grading process of grade-batch: ``python -m autograder.frontends.batch_server --serve CONFIG``.

``--jobs N`` runs N of them, each with one warm ``Grader``, so torch is imported N times per
batch, not once per learner. ``serve`` is the process's side: a job (a JSON line) on stdin, the
learner's ``Grade`` as JSON on stdout, and a grader that fails on a learner tried once more
with a fresh worker. ``GradingProcess`` is the batch's side: it starts one, sends a job and
waits, and ends the process after ``JOB_SECONDS`` or when it died, so a learner that breaks
one costs only their own row.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from .. import ROOT
from ..grading import Grader, GraderError
from ..options import Options
from ..rubric import RubricError

JOB_SECONDS = 600.0  # one learner, including a fresh worker's start: then the process is ended


def grade_one(grader, job: dict) -> dict:
    """Grade one learner with a warm ``grader``: their ``Grade``, in its JSON form."""
    result = grader.grade(Path(job["path"]))  # under the grader's options
    return {"learner": job["learner"], "grade": result.to_json()}


def serve(config: dict) -> int:
    """A grading process: read jobs (JSON lines) on stdin, answer each on stdout; ``config``
    holds the batch's ``Options`` as JSON (``Options.to_json``)."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever else prints goes to the log, never into the replies

    grader = None
    options = Options.from_json(config["options"])

    def fresh_grader() -> Grader:
        # each claims users of its own (launcher.claim_uids): no two processes share one
        fresh = Grader(options)
        fresh.forks = config.get("forks", fresh.forks)
        return fresh

    for line in sys.stdin:
        job = json.loads(line)
        for attempt in (1, 2):  # a grader failure: once more, with a fresh worker
            try:
                grader = grader or fresh_grader()
                reply = grade_one(grader, job)
                if not gc.get_freeze_count():  # pytest collects garbage twice a run: from
                    gc.freeze()  # now on it skips what the first run left: ~0.3 s a learner
                break
            except RubricError as error:  # everyone's grade would be wrong: stop the batch
                reply = {"learner": job["learner"], "fatal": f"{type(error).__name__}: {error}"}
                break
            except GraderError as error:  # the grader's fault, never a score for the learner
                reply = {"learner": job["learner"], "error": f"grading error (tried {attempt} "
                         f"times; a rerun grades it again): {error}"}
            except Exception as error:  # noqa: BLE001 - one submission's failure, not the batch's
                reply = {"learner": job["learner"], "error": f"{type(error).__name__}: {error}"}
                if grader is not None and grader.worker.alive:
                    break
            if grader is not None:  # start afresh
                grader.close()
                grader = None
        try:
            line = json.dumps(reply)
        except (TypeError, ValueError) as error:  # a value JSON cannot hold: this learner's error
            line = json.dumps({"learner": job["learner"],
                               "error": f"the grade could not be sent back ({error})"})
        replies.write(line + "\n")
        replies.flush()
    if grader is not None:
        grader.close()
    return 0


class GradingProcess:
    """The batch's side of one ``serve`` process: send a job, wait for its answer."""

    def __init__(self, index: int, config: dict, log: Path) -> None:
        self.index, self.config, self.log_path = index, config, log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "autograder.frontends.batch_server", "--serve",
                 json.dumps({**self.config, "index": self.index})],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                cwd=ROOT, start_new_session=True)

    def grade(self, job: dict, timeout: float = JOB_SECONDS) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
            line = self._read_line(timeout)
        except (BrokenPipeError, OSError) as error:
            line, why = b"", f"{type(error).__name__}: {error}"
        else:
            why = f"no answer within {timeout:.0f} s" if line is None else "it ended"
        if line:
            return json.loads(line)
        self.stop()
        return {"learner": job["learner"],
                "error": f"the grading process failed on this submission ({why}); "
                         f"see {self.log_path}"}

    def _read_line(self, timeout: float) -> bytes | None:
        """One reply line; b"" if the process ended, None after ``timeout``."""
        end, data = time.monotonic() + timeout, b""
        fd = self.proc.stdout.fileno()
        while not data.endswith(b"\n"):
            left = end - time.monotonic()
            if left <= 0:
                return None
            readable, _, _ = select.select([fd], [], [], left)
            if readable:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return b""
                data += chunk
        return data

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()  # a clean end: the Grader closes its sandbox
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
        self.proc.stdout.close()
        self.proc = None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.frontends.batch_server")
    parser.add_argument("--serve", metavar="CONFIG", required=True,
                        help="run as a grading process (the batch starts these itself)")
    args = parser.parse_args(argv)
    return serve(json.loads(args.serve))


if __name__ == "__main__":
    sys.exit(main())
