"""The worker: imports torch once, then forks one child per stage to run learner code.

Run as ``python worker.py --socket PATH --scratch DIR``. The process (the "zygote") never
runs learner code itself: it imports torch, listens on a Unix socket, prints ``ready``, and
forks a child for every connection. The grader sends the child the learner's files, a stage
name and which functions each stage owns; the child writes the files where only its own
user can read them, drops to that user, loads them (loader.py: it swaps in public scaffolds,
scaffolds.py, never the reference solution, for what the stage does not own), and answers
probe requests until the grader hangs up. A child that hangs or crashes costs only its own
connection; the grader asks the zygote (on stdin: ``kill PID``) to end it and connects again
for a fresh one.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import signal
import socket
import sys
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import isolation  # noqa: E402
import loader  # noqa: E402
import probes  # noqa: E402
import protocol  # noqa: E402
import torch  # noqa: E402 - after the path is set; the one expensive import, done once


def _capture_output(directory: str) -> int:
    """Send this process's stdout/stderr to a bounded file the learner cannot open by name;
    return its descriptor (read back with pread, also after the privileges are dropped)."""
    fd = os.open(os.path.join(directory, f"output-{os.getpid()}.txt"),
                 os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    return fd


def _read_new(fd: int, offset: int) -> tuple[str, int]:
    """What was printed since ``offset``: at most 8 KiB of it, with a note of the rest."""
    try:
        end = os.fstat(fd).st_size
        data = os.pread(fd, 8192, offset)
    except OSError:  # the learner closed or replaced the descriptor: nothing to show
        return "", offset
    text = data.decode("utf-8", errors="replace")
    if end - offset > len(data):
        text += f"\n... ({end - offset - len(data):,} more bytes of output not shown)"
    return text, max(end, offset)


def _fallback_folder(scratch: str) -> str:
    """Without namespaces (the plain launcher): a folder of the zygote's scratch space."""
    folder = os.path.join(scratch, f"submission-{isolation.outer_pid()}")
    os.makedirs(folder, mode=0o755)
    return folder


def serve(conn: socket.socket, scratch: str, own_pid_namespace: bool) -> None:
    """One stage process: forked by the zygote as process 1 of a PID namespace of its own
    (``own_pid_namespace``, ``isolation.pid_namespace``), where it can have one. When it ends,
    the kernel ends everything it started before the zygote's ``waitpid`` sees it go, so the
    zygote's ``reap`` waits for exactly that."""
    os.setpgid(0, 0)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the zygote's control pipe is not the learner's
    stage_process(conn, scratch, isolation.enter_namespaces(own_pid_namespace))


def stage_process(conn: socket.socket, scratch: str, isolated: bool) -> None:
    """Load the submission for one stage, then answer probes until the grader hangs up.

    Everything the grader needs here is bound to local names before the learner's code is
    loaded, and the grader's modules are then removed from ``sys.modules`` and ``sys.path``:
    learner code cannot reach them by name. (It can still reach anything in its own process
    by other means; that is why no verdict trusts this process: every point is earned by
    values the parent checks, see autograder/suites.)
    """
    send, recv, run_probe, error_data = protocol.send, protocol.recv, probes.run, loader.error_data
    ProbeError, ProtocolError = probes.ProbeError, protocol.ProtocolError  # noqa: N806
    me = isolation.outer_pid()  # as the zygote knows it (process 1 in its own namespace)
    if isolated:
        isolation.private_filesystem()
        folder, output_dir = isolation.SUBMISSION, isolation.GRADER_DIR
    else:
        folder, output_dir = _fallback_folder(scratch), scratch
    send(conn, {"pid": me})
    request = recv(conn)
    limits = request.get("limits", {})
    torch.set_num_threads(1)
    # torch.manual_seed also queues the seeding of CUDA, with a formatted stack (~0.5 ms a
    # probe, and a queue that grows with each), for a CUDA start that a CPU stage never makes
    seed_torch = torch.manual_seed if limits.get("cuda") else torch.default_generator.manual_seed
    names = loader.file_names(request)  # the request's modules: lumen.stages says which
    isolation.write_files(folder, {name: text for name, text in request.get("files", {}).items()
                                   if name in names})
    out_fd = _capture_output(output_dir)
    isolation.close_other_fds({conn.fileno(), out_fd})
    isolation.confine(limits)
    isolation.first_to_go()
    os.chdir("/tmp" if isolated else folder)
    isolation.drop_privileges(limits.get("uid"))
    _hide_the_grader()
    sys.dont_write_bytecode = True  # no .pyc of the learner's files is written (or tried)
    modules, errors = loader.load(folder, request)
    repin = modules["shipped"].reapply
    learner_files = tuple(os.path.abspath(os.path.join(folder, name)) for name in names)
    _flush()
    output, offset = _read_new(out_fd, 0)
    send(conn, {"imports": errors, "output": output})
    while True:
        try:
            message = recv(conn)
        except EOFError:
            return
        name, args, seed = message["probe"], message.get("args", {}), message.get("seed", 0)
        repin()  # what an earlier probe's learner code changed of given code is undone
        seed_torch(seed)
        started = time.perf_counter()
        try:
            reply = {"value": run_probe(name, modules, args)}
        except ProbeError as exc:
            reply = {"probe_error": str(exc)}
        except BaseException as exc:  # noqa: BLE001 - whatever learner code raised, SystemExit too
            reply = {"error": error_data(exc, learner_files)}
        reply["seconds"] = time.perf_counter() - started
        _flush()
        reply["output"], offset = _read_new(out_fd, offset)
        try:
            send(conn, reply)
        except ProtocolError as exc:  # what the learner's code returned cannot be sent
            send(conn, {"error": {"type": "ValueError", "where": [], "not_implemented": False,
                                  "message": f"the result could not be sent back: {exc}"},
                        "seconds": reply["seconds"]})


def _flush() -> None:
    """Push what the learner printed from Python's buffers into the captured file."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - the learner may have replaced or closed it
            pass


def _from_here(module: object) -> bool:
    file = getattr(module, "__file__", None) if isinstance(module, types.ModuleType) else None
    return isinstance(file, str) and os.path.abspath(file).startswith(HERE + os.sep)


#: The zygote's modules when it became ready (``_note_the_grader``): how many there were, and
#: the names of those loaded from this folder. Looking at each of ~1,600 modules (torch's) in
#: a stage process cost ~10 ms of CPU, most of it copying the pages they sit on.
_ZYGOTE_MODULES = 0
_ZYGOTE_GRADER: tuple[str, ...] = ()


def _note_the_grader() -> None:
    """In the zygote, before any fork: which of its modules are the grader's."""
    global _ZYGOTE_MODULES, _ZYGOTE_GRADER
    _ZYGOTE_MODULES = len(sys.modules)
    _ZYGOTE_GRADER = tuple(n for n, m in sys.modules.items() if _from_here(m))


def _hide_the_grader() -> None:
    """Take the grader's modules out of reach by name: ``import probes``, ``sys.modules``
    and ``import __main__`` (this file) no longer lead to them. Every module loaded from this
    folder goes (the probes package's own modules too), not a list that could miss one: the
    zygote's (``_note_the_grader``) by name; and if any module was loaded since (only the
    grader's code has run since the fork, which removes none), every module is looked at."""
    if len(sys.modules) == _ZYGOTE_MODULES:
        for name in _ZYGOTE_GRADER:
            sys.modules.pop(name, None)
    else:
        for name, module in list(sys.modules.items()):
            if _from_here(module):
                del sys.modules[name]
    sys.modules["__main__"] = types.ModuleType("__main__")
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]


def _warm_up() -> None:
    """Pay torch's lazy imports once, here, instead of in every child: the first meta-device
    scatter pulls in sympy (~0.3 s). (A meta-device norm would pull in torch._refs, ~0.7 s
    more: no stage runs one, so it is not paid.)"""
    x = torch.ones(3, 2, requires_grad=True)
    x.index_select(0, torch.tensor([0, 0])).sum().backward()
    torch.zeros(2, 3, device="meta").scatter_(-1, torch.zeros(2, 1, dtype=torch.long,
                                                              device="meta"), 1)
    torch.nn.functional.linear(x, torch.ones(4, 2)).softmax(-1).sum().backward()


def _parents() -> dict[int, int]:
    """Every process this zygote can see -> its parent."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                found[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return found


class Zygote:
    """The children it forked, and the commands it takes on stdin."""

    def __init__(self, scratch: str) -> None:
        self.scratch = scratch
        self.children: set[int] = set()

    def collect(self) -> None:
        """Wait for whatever child has ended, and remove its fallback folder."""
        while self.children:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if pid == 0:
                return
            self.children.discard(pid)
            shutil.rmtree(os.path.join(self.scratch, f"submission-{pid}"), ignore_errors=True)

    def reap(self, seconds: float = 10.0) -> bool:
        """End every stage process and wait until each is gone.

        With namespaces a child is process 1 of its own PID namespace: once it is killed, the
        kernel kills the rest of its namespace, and the zygote's ``waitpid`` sees it only once
        the namespace is empty. Without them (the plain fallback) what a child started is
        killed with it. So an empty ``children`` means nothing
        of the learner is left.
        """
        deadline = time.monotonic() + seconds
        while self.children and time.monotonic() < deadline:
            for pid in self.children:
                _kill(pid)
            for pid, ppid in _parents().items():  # the plain fallback's (with namespaces,
                if ppid in self.children:  # the kernel ends them anyway)
                    _kill(pid)
            self.collect()
            if self.children:
                time.sleep(0.002)
        shutil.rmtree(self.scratch, ignore_errors=True)  # the fallback's folders, if any
        os.makedirs(self.scratch, mode=0o711, exist_ok=True)
        return not self.children

    def command(self, line: list[str]) -> bool:
        """Obey one command; False to stop."""
        if line == ["exit"]:
            return False
        if len(line) == 2 and line[0] == "kill" and line[1].isdigit():
            _kill(int(line[1]))
        elif line == ["reap"]:
            print("reaped" if self.reap() else "reap-failed", flush=True)
        return True

    def stop(self) -> None:
        self.reap(seconds=1.0)
        os._exit(0)  # nothing to tidy: skipping torch's interpreter teardown saves ~0.5 s


def zygote(socket_path: str, scratch: str) -> None:
    _warm_up()
    loader.prepare()
    _note_the_grader()
    try:  # when memory runs out, a learner's process goes, not the grader's (children undo it)
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("-1000")
    except OSError:
        pass
    os.makedirs(scratch, mode=0o711, exist_ok=True)  # children may pass, not list
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(16)
    state = Zygote(scratch)
    print("ready", flush=True)
    stdin = sys.stdin.buffer
    pending = b""
    while True:
        readable, _, _ = select.select([listener, stdin], [], [], 0.5)
        state.collect()
        if stdin in readable:
            data = os.read(stdin.fileno(), 65536)  # every command that arrived, not one line
            if not data:
                return state.stop()
            pending += data
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                if raw.startswith(b"given "):  # the stubs, for the forks to come
                    _precompile(raw[len(b"given "):])
                elif not state.command(raw.decode(errors="replace").split()):
                    return state.stop()
        if listener in readable:
            conn, _ = listener.accept()
            if len(sys.modules) != _ZYGOTE_MODULES:  # imported since: noted again
                _note_the_grader()
            with isolation.pid_namespace() as own:
                pid = os.fork()
                if pid == 0:  # never leaves this block: it ends in os._exit
                    listener.close()
                    code = 0
                    try:
                        serve(conn, scratch, own)
                    except BaseException:  # noqa: BLE001 - the grader sees the closed connection
                        traceback.print_exc()  # into the captured output, or the zygote's stderr
                        code = 1
                    os._exit(code)
            conn.close()
            state.children.add(pid)


def _precompile(data: bytes) -> None:
    """The grader's ``given`` command: its stubs as JSON (module -> text), compiled here once
    for every stage process to come (``loader.precompile``). One that cannot be read is
    ignored: each stage process then compiles the stubs of its own request, as it can anyway."""
    try:
        given = json.loads(data)
        if isinstance(given, dict):
            loader.precompile(given)
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        pass


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--socket", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--private-root", help="JSON: what a stage process's root holds "
                        "(autograder/boundary/launcher.py's view), where no bwrap has made one")
    args = parser.parse_args()
    isolation.confine_to(args.private_root)
    zygote(args.socket, args.scratch)


if __name__ == "__main__":
    main()
