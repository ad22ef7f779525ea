"""One stage's calls into learner code: a child of the worker, its probes, its deadlines.

Learner code runs only in the worker's children (``sandboxed/worker.py``); ``client.py`` keeps
the worker itself. A ``StageSession`` sends a probe's name and data, waits until an absolute
deadline (a probe's, its stage's, the submission's: whichever comes first, however the bytes
trickle in), checks the reply against its probe's schema (``replies.py``), and turns whatever
happens (a value, an exception, a hang, a dead process, a malformed answer) into an
``Outcome``. Nothing the learner's process sends can raise here: whatever it sends is the
learner's.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lumen.stages import parse_stub_message

from .. import phases
from . import replies
from .clean import clean_reply, clean_text  # every reply from learner code: cleaned once
from .intake import finding, learner_frames

if TYPE_CHECKING:  # the zygote a session's child is forked from
    from .client import Worker

MAX_TIMEOUTS = 2  # per stage: after that its remaining probes fail at once
PRINTED_LIMIT = 4000  # characters of a test's printed output shown to the learner
#: Why an answer is the learner's when it is not what the grader's probe sends.
MALFORMED = ("your code's process answered with something the grader's probe does not send "
             "(did your code replace parts of the grader, or write to its socket?)")


@dataclass
class Outcome:
    """What one probe call gave: exactly one of value, error, timeout, crash, or refusal."""

    value: object = None
    error: dict | None = None  # the learner's exception: type, message, where, not_implemented
    timed_out: bool = False
    crashed: str | None = None  # why the child is gone
    #: module -> error, for the stage; its "file": the grader's own finding about the file
    #: (``intake.finding``: missing, replaced or None)
    import_errors: dict = field(default_factory=dict)
    output: str = ""  # what learner code printed
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.crashed is None


def error_dict(value: object, files: dict[str, str]) -> dict:
    """An exception as the worker describes it, whatever the learner's process sent: always
    ``type`` and ``message`` strings, ``where`` a list of strings (only frames quoting the
    learner's own ``files``: ``intake.learner_frames``), ``bases`` the built-in classes
    it is an instance of (at most 20 short names), ``not_implemented`` a bool."""

    value = value if isinstance(value, dict) else {}
    where, bases = value.get("where"), value.get("bases")
    kind, message = str(value.get("type", "an unknown exception")), str(value.get("message", ""))
    return {
        "type": kind,
        "message": message,
        "where": learner_frames([str(w) for w in where], files) if isinstance(where, list)
        else [],
        "bases": [str(b)[:200] for b in bases[:20]] if isinstance(bases, list) else [],
        # decided here, from the message, by the one reader of stub messages
        "not_implemented": kind == "NotImplementedError" and is_stub_message(message),
    }


def is_stub_message(message: str) -> bool:
    """Whether ``message`` is a stub's NotImplementedError (lumen/stages.py writes them)."""
    return parse_stub_message(message) is not None


class StageSession:
    """Probe calls for one stage, in one worker child, reopened if the child dies."""

    def __init__(self, worker: Worker, request, deadline: float) -> None:
        """``request``: the request.StageRequest its process is sent."""
        self.worker = worker
        self.deadline = deadline  # time.monotonic() by which the whole submission must be done
        self.stage_deadline: float | None = None  # the stage's own, from its first call
        self.stage = request.stage
        self.request = request
        self.sock: socket.socket | None = None
        self.pid: int | None = None
        self.import_errors: dict = {}
        self.printed: list[str] = []  # what the learner's code printed since take_printed()
        self._started: float | None = None  # when start() forked a child not yet heard from
        #: Reads the child's answer to the submission (its imports) as soon as it comes, while
        #: earlier stages are graded: the import's time limit is then judged when the answer
        #: arrived, not when the grader came to look (under load that was after 20 s, and
        #: correct code was told its import never finished).
        self._loading: threading.Thread | None = None
        self._loaded: tuple[object, BaseException | None] = (None, None)
        self.timeouts = 0  # probes of this stage that ran out of time
        #: hidden tests' verdicts (None: passed) for the tests that build on them
        #: (``feedback.remembered``)
        self.verdicts: dict[str, BaseException | None] = {}

    def _drop(self) -> None:
        """End the child (the zygote kills it): a hang, a malformed answer or a deadline is
        met by ending the process, never by waiting on it."""
        if self.pid is not None:
            self.worker.kill_child(self.pid)
        if self.sock is not None:
            try:  # wakes a _loading thread blocked on it, before the descriptor is gone
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()
        self.sock = self.pid = None

    def _import_deadline(self) -> float:
        return min(self._started + self.worker.limits.import_seconds, self.deadline)

    def connect(self) -> None:
        """Ask the zygote for this stage's child (it forks one per connection), without
        waiting for it: ``start`` then reads its first message. Connecting every stage first
        lets the children set up their sandboxes side by side."""
        if self.sock is not None or self._started is not None:
            return
        self._started = time.monotonic()
        try:
            self.sock = self.worker.connect()
        except (ConnectionError, OSError):
            self._drop()  # _open reports it, when the stage is graded

    def start(self) -> None:
        """Have this stage's child forked and sent the submission, without waiting for either:
        a thread of its own (``_load``) reads the child's first message, sends the request and
        reads the answer, while the children of all stages load side by side and the first
        stage is graded."""
        if self._started is None:
            self.connect()
        if self.sock is None or self.pid is not None or self._loading is not None:
            return  # the connection failed (``_open`` says so), or it was sent already
        self._started = time.monotonic()  # the import's time counts from here, as it did
        self._loading = threading.Thread(target=self._load,
                                         args=(self.sock, self._import_deadline()),
                                         name=f"lumen-{self.stage}-import", daemon=True)
        self._loading.start()

    def _load(self, sock: socket.socket, deadline: float) -> None:
        """In its own thread (``start``): the child's pid, the submission sent, and the
        child's answer to it, or what went wrong, by ``deadline``. Only this thread uses
        ``sock`` until ``_open`` has joined it."""
        from ..sandboxed import protocol  # imports torch: only once a stage process is talked to

        try:
            hello = protocol.recv(sock, deadline)
            if replies.problem(hello, replies.HELLO_PID) is not None:
                raise ValueError("a first message that is not the stage process's")
            self.pid = hello["pid"]
            phases.mark(f"stage {self.stage}: process started")
            protocol.send(sock, self.request.message(), deadline)
        except (TimeoutError, EOFError, ConnectionError, OSError, protocol.ProtocolError,
                ValueError):  # as before any request was sent: the process did not start
            self._loaded = (None, ConnectionError("the stage's process could not be started"))
            return
        try:
            self._loaded = (protocol.recv(sock, deadline), None)
        except BaseException as exc:  # noqa: BLE001 - handed to _open, which judges it
            self._loaded = (None, exc)

    def _open(self) -> Outcome | None:
        """Connect and load the submission; an Outcome if that already failed."""
        from ..sandboxed import protocol  # imports torch: only once a stage process is talked to

        self.start()
        deadline = self._import_deadline()
        self._started = None
        loading, self._loading = self._loading, None
        try:
            if self.sock is None:
                raise ConnectionError("the stage's process could not be started")
            if loading is None:
                hello = protocol.recv(self.sock, deadline)
            else:  # it ends by the deadline: protocol.recv's own
                loading.join()
                hello, failed = self._loaded
                self._loaded = (None, None)
                if failed is not None:
                    raise failed
        except TimeoutError:
            self._drop()
            return Outcome(timed_out=True, crashed="importing the submission did not finish "
                           f"within {self.worker.limits.import_seconds:.0f} s (an infinite "
                           "loop at import?)")
        except (EOFError, ConnectionError, OSError) as exc:
            self._drop()
            return Outcome(crashed=f"the process running the submission ended while importing "
                           f"it ({type(exc).__name__}): os._exit, a crash, or too much memory")
        except protocol.ProtocolError as exc:
            return self._malformed(str(exc), drop=True)
        if (found := replies.problem(hello, replies.HELLO_IMPORTS)) is not None:
            return self._malformed(found, drop=True)
        hello = clean_reply(hello)
        phases.mark(f"stage {self.stage}: submission loaded (seen by the grader)")
        self.import_errors = {m: error_dict(e, self.request.files)
                              | {"file": finding(f"{m}.py", self.request.files)}  # ours to say
                              for m, e in hello["imports"].items()}
        self.printed.append(hello["output"])  # what the learner's code printed at import
        return None

    def _malformed(self, why: str, drop: bool = False, **extra) -> Outcome:
        """The Outcome of an answer the grader's probe does not send: the learner's. ``drop``:
        the stream can no longer be read in step, so the child goes."""
        if drop:
            self._drop()
        return Outcome(crashed=f"{MALFORMED}: {clean_text(why, 300)}",
                       import_errors=self.import_errors, **extra)

    def _out_of_time(self) -> Outcome | None:
        """An Outcome when the submission or this stage has no time left, else None."""
        now = time.monotonic()
        if self.deadline - now <= 0:
            return Outcome(timed_out=True, crashed="the submission used up its total time "
                           f"({self.worker.limits.submission_seconds:.0f} s)")
        if self.stage_deadline is None:
            self.stage_deadline = now + self.worker.limits.stage_seconds
        if self.stage_deadline - now <= 0:
            return Outcome(timed_out=True, import_errors=self.import_errors,
                           crashed=f"this stage used up its time "
                           f"({self.worker.limits.stage_seconds:.0f} s)")
        if self.timeouts >= MAX_TIMEOUTS:  # an endless loop costs a stage two timeouts, not all
            return Outcome(timed_out=True, import_errors=self.import_errors,
                           crashed=f"not run: {MAX_TIMEOUTS} earlier checks of this stage ran "
                           "out of time, so its remaining checks were skipped")
        return None

    def call(self, probe: str, seed: int = 0, timeout: float | None = None, **args) -> Outcome:
        """Run ``probe`` on the learner's code with ``args``; never raises for learner faults.

        The call ends by one absolute deadline: the probe's ``timeout`` (the limit's by
        default) from now, the stage's, or the submission's, whichever comes first. A reply
        still not all there by then is the learner's timeout, and its process is ended."""
        from ..sandboxed import protocol  # imports torch: only once a stage process is talked to
        from ..sandboxed.probes import PROBES

        if probe not in PROBES:  # checked here, where an answer cannot be forged
            raise RuntimeError(f"the hidden suite asked for an unknown probe {probe!r}")
        replies.schema_of(probe)  # a probe without a schema: the grader's bug, said now
        if (late := self._out_of_time()) is not None:
            return late
        if self.sock is None or self._started is not None:  # not yet heard from its child
            if (failed := self._open()) is not None:
                return failed
            if (late := self._out_of_time()) is not None:  # the import took the time
                return late
        # Encoded here, outside the learner's part: arguments it cannot send are the grader's bug.
        request = protocol.encode({"probe": probe, "args": args, "seed": seed})
        phases.first(f"stage {self.stage}: first check")
        started = time.monotonic()
        deadline = min(started + (timeout or self.worker.limits.probe_seconds),
                       self.stage_deadline, self.deadline)
        try:
            protocol.send_encoded(self.sock, request, deadline)
            reply = protocol.recv(self.sock, deadline)
        except TimeoutError:
            self._drop()
            self.timeouts += 1
            which = ("the submission's" if deadline == self.deadline else
                     "this stage's" if deadline == self.stage_deadline else "each check's")
            return Outcome(timed_out=True, import_errors=self.import_errors,
                           crashed=f"stopped at {which} limit, {deadline - started:.0f} s",
                           seconds=time.monotonic() - started)
        except (EOFError, ConnectionError, OSError) as exc:
            self._drop()
            return Outcome(crashed=f"the process running your code ended ({type(exc).__name__}): "
                           "os._exit, sys.exit in a thread, a segfault, or running out of memory",
                           import_errors=self.import_errors, seconds=time.monotonic() - started)
        except protocol.ProtocolError as exc:
            return self._malformed(str(exc), drop=True, seconds=time.monotonic() - started)
        # Everything the process says is the learner's: an answer that is not what the probe
        # sends is theirs too (a grader bug in a probe shows up in the parent's own checks,
        # tests/test_wire.py, never as a zero here), and its process is ended: one that
        # answers out of turn cannot be trusted to keep in step.
        if (found := replies.reply_problem(probe, reply)) is not None:
            return self._malformed(found, drop=True)
        if "probe_error" in reply:
            return self._malformed(f"the probe refused its arguments: {reply['probe_error']}")
        reply = clean_reply(reply)
        phases.mark(f"stage {self.stage}: last check")
        output = reply.get("output", "")
        self.printed.append(output)
        error = reply.get("error")
        return Outcome(
            value=reply.get("value"), error=None if error is None
            else error_dict(error, self.request.files),
            import_errors=self.import_errors, output=output, seconds=float(reply["seconds"]),
        )

    def take_printed(self) -> str:
        """What the learner's code printed since the last call (at import, then in the
        probes of one test), bounded, with a note of what was cut."""
        text, self.printed = "".join(self.printed), []
        if len(text) > PRINTED_LIMIT:
            text = (text[:PRINTED_LIMIT] + f"\n... ({len(text) - PRINTED_LIMIT:,} more "
                    "characters of output not shown)")
        return text

    def close(self) -> None:
        self._drop()
