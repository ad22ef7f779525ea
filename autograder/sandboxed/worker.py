"""The worker: imports torch once, then forks one child per stage to run learner code.

Run as ``python worker.py --socket PATH --scratch DIR``. The process (the "zygote") never
runs learner code itself: it imports torch, listens on a Unix socket, prints ``ready``, and
forks a child for every connection. The grader sends the child the learner's files, a stage
name and the reference source for every *other* stage; the child writes the files where only
its own user can read them, drops to that user, loads them, swaps in the reference
for what the stage does not own, and answers probe requests until the grader hangs up. A child
that hangs or crashes costs only its own connection; the grader asks the zygote (on stdin:
``kill PID``) to end it and connects again for a fresh one.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import resource
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

import probes  # noqa: E402
import protocol  # noqa: E402
import torch  # noqa: E402 - after the path is set; the one expensive import, done once

PACKAGE = "submission"  # the learner's files are imported as submission.embeddings, ...
REFERENCE = "_reference"
MODULES = ("embeddings", "params", "gpt2")  # in dependency order
#: The reference stubs' message names each function the graded stage owns.
STUB = re.compile(r"([\w.]+) is not implemented yet \(stage '(\w+)'\)")
OUTPUT_LIMIT = 1 << 20  # bytes of learner stdout/stderr kept on disk per child


def _package(name: str, path: list[str]) -> types.ModuleType:
    package = types.ModuleType(name)
    package.__path__ = path
    sys.modules[name] = package
    return package


def _error(exc: BaseException, files: tuple[str, ...] = ()) -> dict:
    """An exception as data: type, message, and the traceback lines inside the learner's files."""
    frames = [
        f"{os.path.basename(f.filename)}, line {f.lineno}, in {f.name}: {(f.line or '').strip()}"
        for f in traceback.extract_tb(exc.__traceback__)
        if not files or os.path.abspath(f.filename) in files
    ]
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a learner's exception can break str()
        message = "<an exception whose message could not be read>"
    return {
        "type": protocol.type_name(exc),
        "message": message[: protocol.MAX_STRING],
        "where": frames[-5:],
        # the stubs' own NotImplementedError, not one torch raised (the meta device has many)
        "not_implemented": isinstance(exc, NotImplementedError)
        and "not implemented yet" in message,
    }


def _resolve(module: types.ModuleType, qualname: str) -> tuple[object, str]:
    """The object that holds ``qualname``'s last part, and that part's name."""
    *outer, last = qualname.split(".")
    holder: object = module
    for part in outer:
        holder = getattr(holder, part)
    return holder, last


def _transplant(learner: types.ModuleType, reference: types.ModuleType, owns: list[str]) -> None:
    """Replace in ``learner`` each function in ``owns`` by the reference's.

    Read from the class ``__dict__`` so that a property moves as a property.
    """
    for qualname in owns:
        ref_holder, name = _resolve(reference, qualname)
        if isinstance(ref_holder, type):
            value = ref_holder.__dict__[name]
        else:
            value = getattr(ref_holder, name)
        try:
            holder, _ = _resolve(learner, qualname)
        except AttributeError:  # the learner removed the class: use the reference's whole
            top = qualname.split(".")[0]
            setattr(learner, top, getattr(reference, top))
            continue
        if isinstance(holder, type):
            value = _rebind_super(value, holder)
        setattr(holder, name, value)


def _rebind_super(value: object, cls: type) -> object:
    """A reference method moved into the learner's class, with its zero-argument super()
    pointed at that class (super() reads the function's ``__class__`` cell)."""
    if not isinstance(value, types.FunctionType) or "__class__" not in value.__code__.co_freevars:
        return value
    cells = tuple(
        types.CellType(cls) if var == "__class__" else cell
        for var, cell in zip(value.__code__.co_freevars, value.__closure__, strict=True)
    )
    return types.FunctionType(value.__code__, value.__globals__, value.__name__,
                              value.__defaults__, cells)


def _absent(module: str, name: str) -> type:
    """A stand-in for a name the graded stage owns but the learner's file lacks: calling it
    says so, instead of the reference's stub saying "not implemented yet"."""
    message = (f"your {module}.py has no {name}: keep every class and function of the stub, "
               "with its name and signature")

    def refuse(cls, *args, **kwargs):
        raise AttributeError(message)

    return type(name, (), {"__new__": refuse, "__doc__": message})


def load(submission: str, request: dict) -> tuple[dict, dict]:
    """Import the learner's modules for one stage; return (modules, import errors).

    ``request["reference"]`` maps module name -> reference source in which the graded stage's
    solutions are already stubbed out; ``request["foreign"]`` maps module name -> the
    qualnames that other stages own. Those come from the reference; the rest is the learner's.
    """
    _package(REFERENCE, [])
    reference: dict[str, types.ModuleType] = {}
    for name in MODULES:
        module = types.ModuleType(f"{REFERENCE}.{name}")
        module.__package__ = REFERENCE
        module.__file__ = f"<reference {name}.py>"
        sys.modules[module.__name__] = module
        exec(compile(request["reference"][name], module.__file__, "exec"), module.__dict__)
        reference[name] = module

    _package(PACKAGE, [submission])
    modules, errors = {}, {}
    for name in MODULES:
        path = os.path.join(submission, f"{name}.py")
        full = f"{PACKAGE}.{name}"
        try:
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{name}.py is missing from the submission")
            spec = importlib.util.spec_from_file_location(full, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[full] = module
            spec.loader.exec_module(module)
            owned = {q for q, s in STUB.findall(request["reference"][name])
                     if s == request.get("stage")}
            absent = {q.split(".")[0] for q in owned} - set(vars(module))
            _transplant(module, reference[name], request["foreign"].get(name, []))
            for top in absent:
                setattr(module, top, _absent(name, top))
        except BaseException as exc:  # noqa: BLE001 - SystemExit at import is a finding too
            errors[name] = _error(exc, (os.path.abspath(path),))
            module = reference[name]  # what the other stages build on still works
            sys.modules[full] = module
        modules[name] = module
    return modules, errors


def _limit(kind: int, soft: int) -> None:
    try:
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(kind, (soft, hard))
    except (ValueError, OSError):
        pass  # not allowed here: the grader's timeouts still bound the damage


def _confine(limits: dict) -> None:
    """Per-child limits: memory, file size, open files, no core dumps."""
    if limits.get("memory_bytes") and not limits.get("cuda"):
        # Address space on top of what torch already mapped; CUDA maps huge virtual ranges,
        # so on a GPU runner the memory bound is left to the sandbox (cgroup) instead.
        with open("/proc/self/status") as status:
            vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
        _limit(resource.RLIMIT_AS, vm + int(limits["memory_bytes"]))
    _limit(resource.RLIMIT_FSIZE, int(limits.get("file_bytes", 16 << 20)))
    _limit(resource.RLIMIT_NOFILE, 256)
    _limit(resource.RLIMIT_CORE, 0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-big write fails instead of killing


def _drop_privileges(limits: dict) -> None:
    """Become an unprivileged user (inside the sandbox), so RLIMIT_NPROC holds and the
    zygote, which stays root, cannot be signalled."""
    uid = limits.get("uid")
    if uid is None:
        return
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    _limit(resource.RLIMIT_NPROC, int(limits.get("processes", 256)))


def _capture_output(directory: str) -> tuple[int, str]:
    """Send this process's stdout/stderr to a bounded file; return (fd, path)."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"output-{os.getpid()}.txt")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    return fd, path


def _read_new(path: str, offset: int) -> tuple[str, int]:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(8192)
            end = f.seek(0, 2)
    except OSError:
        return "", offset
    text = data.decode("utf-8", errors="replace")
    if end - offset > len(data):
        text += f"\n... ({end - offset - len(data):,} more bytes of output not shown)"
    return text, end


def _private_copy(scratch: str, files: dict, uid: int | None) -> str:
    """Write the submission's files into a folder only this child's user can read."""
    folder = os.path.join(scratch, f"submission-{os.getpid()}")
    os.makedirs(folder, mode=0o700)
    for name, text in files.items():
        if name in {f"{m}.py" for m in MODULES}:
            with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                f.write(text)
            if uid is not None:
                os.chown(os.path.join(folder, name), uid, uid)
    if uid is not None:
        os.chown(folder, uid, uid)
    return folder


def serve(conn: socket.socket, scratch: str) -> None:
    """One child: load the submission for a stage, then answer probes until EOF."""
    os.setpgid(0, 0)  # its own process group, so the zygote can end it with everything it started
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the zygote's control pipe is not the learner's
    protocol.send(conn, {"pid": os.getpid()})
    request = protocol.recv(conn)
    limits = request.get("limits", {})
    _confine(limits)
    torch.set_num_threads(1)
    submission = _private_copy(scratch, request.get("files", {}), limits.get("uid"))
    _, out_path = _capture_output(scratch)  # opened before the drop: scratch stays root's
    _drop_privileges(limits)
    modules, errors = load(submission, request)
    learner_files = tuple(os.path.abspath(os.path.join(submission, f"{m}.py")) for m in MODULES)
    offset = 0
    output, offset = _read_new(out_path, offset)
    protocol.send(conn, {"imports": errors, "output": output})
    while True:
        try:
            message = protocol.recv(conn)
        except EOFError:
            return
        name, args, seed = message["probe"], message.get("args", {}), message.get("seed", 0)
        torch.manual_seed(seed)
        started = time.perf_counter()
        try:
            reply = {"value": probes.run(name, modules, args)}
        except probes.ProbeError as exc:
            reply = {"probe_error": str(exc)}
        except BaseException as exc:  # noqa: BLE001 - whatever learner code raised, SystemExit too
            reply = {"error": _error(exc, learner_files)}
        reply["seconds"] = time.perf_counter() - started
        reply["output"], offset = _read_new(out_path, offset)
        try:
            protocol.send(conn, reply)
        except protocol.ProtocolError as exc:
            protocol.send(conn, {"probe_error": f"the result could not be sent back: {exc}"})


def _warm_up() -> None:
    """Pay torch's lazy imports once, here, instead of in every child: the first meta-device
    scatter pulls in sympy (~0.3 s). (A meta-device norm would pull in torch._refs, ~0.7 s
    more: no stage runs one, so it is not paid.)"""
    x = torch.ones(3, 2, requires_grad=True)
    x.index_select(0, torch.tensor([0, 0])).sum().backward()
    torch.zeros(2, 3, device="meta").scatter_(-1, torch.zeros(2, 1, dtype=torch.long,
                                                              device="meta"), 1)
    torch.nn.functional.linear(x, torch.ones(4, 2)).softmax(-1).sum().backward()


def _kill_user(uid: int) -> None:
    """End every process of ``uid``: what a submission left behind (setsid escapes its group)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as status:
                line = next(x for x in status if x.startswith("Uid:"))
            if int(line.split()[1]) == uid:
                os.kill(int(entry), signal.SIGKILL)
        except (OSError, StopIteration, ValueError):
            pass


def zygote(socket_path: str, scratch: str) -> None:
    _warm_up()
    os.makedirs(scratch, mode=0o711, exist_ok=True)  # children may pass, not list
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(16)
    children: set[int] = set()
    print("ready", flush=True)
    stdin = sys.stdin.buffer
    pending = b""
    while True:
        readable, _, _ = select.select([listener, stdin], [], [], 0.5)
        while children:  # reap whatever has ended
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            children.discard(pid)
            shutil.rmtree(os.path.join(scratch, f"submission-{pid}"), ignore_errors=True)
        if stdin in readable:
            data = os.read(stdin.fileno(), 65536)  # every command that arrived, not one line
            if not data:
                return _stop(children)
            pending += data
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace").split()
                if line == ["exit"]:
                    return _stop(children)
                if len(line) == 2 and line[1].isdigit() and line[0] == "kill":
                    _kill(int(line[1]))
                elif len(line) == 2 and line[1].isdigit() and line[0] == "killuid":
                    _kill_user(int(line[1]))
        if listener in readable:
            conn, _ = listener.accept()
            pid = os.fork()
            if pid == 0:
                listener.close()
                code = 0
                try:
                    serve(conn, scratch)
                except BaseException:  # noqa: BLE001 - the grader sees the closed connection
                    traceback.print_exc()  # into the captured output, or the zygote's stderr
                    code = 1
                os._exit(code)
            conn.close()
            children.add(pid)


def _stop(children: set[int]) -> None:
    for pid in children:
        _kill(pid)
    os._exit(0)  # nothing to tidy: skipping torch's interpreter teardown saves ~0.5 s

def _kill(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--socket", required=True)
    parser.add_argument("--scratch", required=True)
    args = parser.parse_args()
    zygote(args.socket, args.scratch)


if __name__ == "__main__":
    main()
