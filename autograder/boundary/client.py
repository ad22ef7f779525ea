"""The grader's side of the worker: start the zygote, restart it, reap, close.

Learner code runs only in the worker's children (``sandboxed/worker.py``), one per stage,
which a ``session.StageSession`` talks to. This module keeps the zygote's lifecycle: started at
once so it loads torch while the grader does too, warm across a class, restarted when a child
took it down, and reaped after each submission so no process of one learner is left when the
next learner's code runs.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .. import ROOT, phases
from ..options import Limits

SANDBOXED = ROOT / "autograder" / "sandboxed"


class WorkerError(RuntimeError):
    """The worker itself could not run (not the learner's fault)."""


class Worker:
    """One zygote process, started at once so it loads torch while the grader does too.

    It holds no submission: each stage child receives its learner's files, so one warm worker
    grades a whole class, one submission after another.
    """

    def __init__(self, limits: Limits, launcher) -> None:
        self.limits = limits
        self.launcher = launcher
        self.proc: subprocess.Popen | None = None
        self.restarts = 0
        self._given: bytes | None = None  # the ``given`` command, once ``offer_stubs`` made it
        self._start()

    def _start(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="lumen-worker-"))
        (self.tmp / "run").mkdir()
        (self.tmp / "scratch").mkdir()
        self.socket_path = self.tmp / "run" / "worker.sock"
        argv = self.launcher.command(
            worker=SANDBOXED / "worker.py",
            sandboxed=SANDBOXED,
            run_dir=self.tmp / "run",
            scratch=self.tmp / "scratch",
            memory=self.limits.sandbox_memory_bytes,
        )
        self.stderr = open(self.tmp / "worker-stderr.txt", "w+b")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
            start_new_session=True, env=self.launcher.environment(), cwd=self.tmp / "scratch",
        )
        phases.mark("worker: spawned")
        if self._given is not None:  # a restart: the new zygote compiles them too
            self._command(self._given)
        self._owner = os.getpid()  # the grader; its forks (``forks.py``) only use the worker
        self._ready = False
        self.failed: str | None = None  # why the start failed, once it has

    def _line(self, seconds: float) -> bytes:
        """The zygote's next line on stdout, or b"" if none comes in ``seconds``."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            readable, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if readable:
                return self.proc.stdout.readline()
            if self.proc.poll() is not None:
                break
        return b""

    def wait_ready(self) -> None:
        """Wait for the zygote's "ready"; a WorkerError if it does not come. A start that
        failed is not waited for again: every later call fails at once with the same reason,
        until ``restart``."""
        if self._ready:
            return
        if self.failed is not None:
            raise WorkerError(self.failed)
        phases.mark("grader: waits for the worker")
        line = self._line(self.limits.startup_seconds)
        phases.mark("worker: ready (seen by the grader)")
        if line.strip() != b"ready":
            self.stderr.seek(0)
            detail = self.stderr.read().decode(errors="replace")[-2000:]
            self.failed = f"the grading worker did not start: {detail.strip() or 'no output'}"
            raise WorkerError(self.failed)
        self._ready = True

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def restart(self) -> None:
        """A child took the zygote down with it: start a new one (costs one torch import)."""
        self.close()
        self.restarts += 1
        self._start()

    def _command(self, line: bytes) -> None:
        """Send the zygote one command line; a zygote that is gone is seen by the caller."""
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def kill_child(self, pid: int) -> None:
        self._command(f"kill {pid}\n".encode())

    def offer_stubs(self, given: dict[str, str]) -> None:
        """The stubs every stage process is sent (``request.given``), sent to the zygote once,
        before the first stage process, so it compiles them once for all of them. Only speed
        depends on it: a stage process compiles the stubs its request holds where the zygote
        has not (a request's text is what runs, whatever the zygote was sent)."""
        if self._given is None:
            self._given = b"given " + json.dumps(given).encode() + b"\n"
            self._command(self._given)

    def connect(self) -> socket.socket:
        # Only the grader that started the worker can see whether it is alive (a fork's
        # ``poll`` cannot wait for it) and restart it: in a fork a worker that has ended
        # refuses the connection, and the stage reports that its process could not start.
        if os.getpid() == self._owner and not self.alive and self.failed is None:
            self.restart()
        self.wait_ready()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(self.socket_path))
        return sock

    def reap(self, seconds: float = 15.0) -> None:
        """End every process of the submission just graded, and wait until the zygote has
        seen each one gone (a stage process's whole PID namespace dies with it). If it cannot
        say so in time, the worker is restarted: the sandbox ends with everything in it. Either
        way, no process of one learner is left when the next learner's code runs."""
        if self.failed is not None:
            return
        if not self.alive or not self._ready:
            self.restart()  # what was left of the sandbox goes with the old one
            return
        try:
            self.proc.stdin.write(b"reap\n")
            self.proc.stdin.flush()
            answer = self._line(seconds)
        except (BrokenPipeError, OSError, ValueError):
            answer = b""
        if answer.strip() != b"reaped":
            self.restart()

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.write(b"exit\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass
            self.launcher.kill(self.proc)  # whatever is left: the sandbox ends with it
            for stream in (self.proc.stdin, self.proc.stdout):
                stream.close()
            self.proc = None
            self.stderr.close()
            self.launcher.release()
        shutil.rmtree(self.tmp, ignore_errors=True)
