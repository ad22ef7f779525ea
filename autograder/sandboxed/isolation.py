"""One stage process, cut off from every other: its own namespaces, its own /tmp, its own user.

The zygote forks a child per stage; the child calls ``enter_namespaces`` and forks again, so
that the grandchild is process 1 of a new PID namespace (and has its own mount, network, IPC
and UTS namespaces). That grandchild runs the learner's code. What this buys, each point
relied on by the grader and attacked in tests/test_grader_attacks.py:

- nothing to talk through: a private tmpfs on /tmp and /dev/shm (the only writable places),
  a /proc that shows only its own processes, no loopback or abstract sockets shared with
  anyone, no SysV or POSIX IPC objects shared with anyone, and a user id of its own, so no
  signal, ptrace or file permission reaches another stage or another learner;
- nothing left behind: when process 1 of a PID namespace ends, the kernel kills every process
  in it, and the zygote's ``reap`` only answers once they are all gone; the tmpfs goes with
  the last of them;
- limits the learner cannot lift: soft and hard limits are set together, before dropping to
  the unprivileged user, who cannot raise a hard limit.

Without root (the plain fallback launcher) none of this is possible; ``enter_namespaces``
then returns False and the caller carries on with the weaker process isolation it warns about.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000

TMP_BYTES = 32 << 20  # a stage process's private /tmp (its files, and whatever it writes)
SUBMISSION = "/tmp/submission"  # the learner's files, read-only to the learner
GRADER_DIR = "/tmp/.grader"  # root-only: the captured output lives here

_libc = ctypes.CDLL(None, use_errno=True)


class IsolationError(OSError):
    """A step of the isolation failed where it must not (the stage process then ends)."""


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise IsolationError(errno, f"{what}: {os.strerror(errno)}")


def enter_namespaces() -> bool:
    """New PID, mount, network, IPC and UTS namespaces for this process's next child.

    False (and nothing changed) where that is not allowed: not root, or no CAP_SYS_ADMIN.
    """
    flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    return _libc.unshare(flags) == 0


def outer_pid() -> int:
    """This process's id as the zygote sees it (before /proc is remounted for the new PID
    namespace, /proc/self still resolves in the zygote's namespace)."""
    return int(os.readlink("/proc/self"))


def _mount(source: bytes | None, target: str, kind: bytes | None, flags: int,
           options: bytes | None = None) -> None:
    _check(_libc.mount(source, target.encode(), kind, flags, options), f"mount {target}")


def python_under_tmp() -> list[str]:
    """Python's own folders that live under /tmp (a virtual environment in a clone made in a
    temporary folder, as CI makes them), outermost only. The private /tmp would hide them, and
    torch imports some of its modules lazily, on first use."""
    found = set()
    for path in {sys.prefix, sys.exec_prefix, sys.base_prefix, *sys.path}:
        real = os.path.realpath(path or ".")
        if real.startswith("/tmp/") and os.path.isdir(real):
            found.add(real)
    return sorted(p for p in found if not any(p.startswith(q + "/") for q in found))


def _keep_read_only(path: str, fd: int) -> None:
    """Bind the folder open as ``fd`` (under the /tmp now covered) at ``path``, read-only."""
    os.makedirs(path, mode=0o755, exist_ok=True)  # root's, in the sticky /tmp: none can move it
    _mount(f"/proc/self/fd/{fd}".encode(), path, None, MS_BIND | MS_REC)
    if not os.statvfs(path).f_flag & os.ST_RDONLY:  # bwrap's --ro-bind is read-only already
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def private_filesystem() -> None:
    """In the new mount namespace: private /tmp and /dev/shm, and a /proc of our own; Python's
    folders under /tmp, if any, stay visible there, read-only."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount propagates outside
    kept = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
            for path in python_under_tmp()]
    size = f"size={TMP_BYTES},mode=1777".encode()
    _mount(b"tmpfs", "/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, size)
    for path, fd in kept:
        _keep_read_only(path, fd)
        os.close(fd)
    if os.path.isdir("/dev/shm"):
        _mount(b"tmpfs", "/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=1777")
    _mount(b"proc", "/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.mkdir(GRADER_DIR, 0o700)
    os.mkdir(SUBMISSION, 0o755)


def write_files(folder: str, files: dict[str, str]) -> None:
    """The learner's files, readable by the learner, writable by nobody but root."""
    for name, text in files.items():
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, 0o644)


def set_limit(kind: int, value: int) -> None:
    """Soft and hard limit together: an unprivileged process can never raise it again."""
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def _status(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field))


def confine(limits: dict) -> str:
    """Per-process limits: memory, processes, file size, open files, no core dumps.

    Returns how memory is bounded, for the report. On a GPU runner CUDA maps huge virtual
    ranges, so address space cannot be capped; the data segment (private writable memory)
    is capped instead, and the sandbox's memory cgroup, where there is one, bounds the sum.
    """
    memory = int(limits.get("memory_bytes") or 0)
    bound = "none"
    if memory:
        if limits.get("cuda"):
            set_limit(resource.RLIMIT_DATA, _status("VmData") + memory)
            bound = "RLIMIT_DATA"
        else:
            set_limit(resource.RLIMIT_AS, _status("VmSize") + memory)
            bound = "RLIMIT_AS"
    set_limit(resource.RLIMIT_FSIZE, int(limits.get("file_bytes", 16 << 20)))
    set_limit(resource.RLIMIT_NOFILE, 256)
    set_limit(resource.RLIMIT_CORE, 0)
    if limits.get("uid") is not None:
        set_limit(resource.RLIMIT_NPROC, int(limits.get("processes", 64)))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-big write fails instead of killing
    return bound


def close_other_fds(keep: set[int]) -> None:
    """Close every inherited descriptor but ``keep``: no pipe or socket shared with siblings."""
    previous = 2  # 0, 1 and 2 are standard input and the captured output
    for fd in sorted({*keep, 1 << 16}):
        if fd > previous + 1:
            os.closerange(previous + 1, fd)
        previous = max(previous, fd)


def first_to_go() -> None:
    """When memory runs out, the learner's processes go first (the zygote shields itself)."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("500")
    except OSError:
        pass


def drop_privileges(uid: int | None) -> None:
    """Become ``uid`` for good (real, effective and saved ids), with no supplementary groups,
    and check that the way back is closed."""
    if uid is None:
        return
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise IsolationError(1, "could still become root after dropping privileges")
