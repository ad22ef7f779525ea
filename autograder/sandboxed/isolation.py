"""One stage process, cut off from every other: its own namespaces, its own /tmp, its own user.

The zygote forks a child per stage as process 1 of a new PID namespace (``pid_namespace``);
the child enters its own mount, network, IPC and UTS namespaces (``enter_namespaces``). So it
has nothing to talk through (a private /tmp and /dev/shm, its own /proc, no shared sockets or
IPC, its own user id), leaves nothing behind (the kernel kills the namespace with process 1,
and ``reap`` answers once all is gone), and cannot lift its limits (set hard before it drops
to its unprivileged user). Each point is attacked in tests/test_grader_attacks.py.

Without bubblewrap, run as root (``--sandbox unsafe-process``), each stage process pivots
into a private root of the allowlist ``confine_to`` gives (``boundary/launcher.py``'s
``view``); run as anyone else, none of this is possible, ``enter_namespaces`` returns False
and the grader tells the operator. Under bwrap run by anyone but root, the zygote is the
sandbox's root and a stage process gives up every capability (``drop_capabilities``);
``_nothing_shared_left`` makes sure it shares no writable place with its siblings.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import sys
from collections.abc import Iterator

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 2
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}  # its syscall number (Python has no pivot_root)
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
CAPSET, LINUX_CAPABILITY_VERSION_3 = {"x86_64": 126, "aarch64": 91}, 0x20080522
#: The device nodes of a minimal /dev, as bwrap's --dev makes it.
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")

TMP_BYTES = 32 << 20  # a stage process's private /tmp (its files, and whatever it writes)
SUBMISSION = "/tmp/submission"  # the learner's files, read-only to the learner
GRADER_DIR = "/tmp/.grader"  # root-only: the captured output lives here

_libc = ctypes.CDLL(None, use_errno=True)
_ROOT: dict | None = None  # the private root's allowlist (``confine_to``), or None (bwrap)


class IsolationError(OSError):
    """A step of the isolation failed where it must not (the stage process then ends)."""


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise IsolationError(errno, f"{what}: {os.strerror(errno)}")


_OWN_PID_NAMESPACE: list[int] = []  # the zygote's own PID namespace, open (``pid_namespace``)


@contextlib.contextmanager
def pid_namespace() -> Iterator[bool]:
    """In the zygote, around the fork of a stage process: that child is made process 1 of a
    new PID namespace (``unshare(CLONE_NEWPID)`` moves the caller's next child, never the
    caller), and the zygote's later children are put back in its own namespace afterwards.
    Yields whether it worked: False (and nothing changed) where that is not allowed (not root,
    or no CAP_SYS_ADMIN); an IsolationError instead where a private root is required
    (``confine_to``), and where the way back fails (a zygote whose children can no longer be
    made ends, and the grader starts a fresh one).

    One fork per stage process, not two (the child is the learner's process itself): a fork of
    the zygote, and its end, copy and free ~180 MB of page tables' worth.
    """
    if not _OWN_PID_NAMESPACE:
        _OWN_PID_NAMESPACE.append(os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC))
    if _libc.unshare(CLONE_NEWPID) != 0:
        if _ROOT is not None:  # a private root was asked for: never the machine's files instead
            _check(-1, "unshare")
        yield False
        return
    try:
        yield True
    finally:
        _check(_libc.setns(_OWN_PID_NAMESPACE[0], CLONE_NEWPID), "setns back to the zygote's")


def enter_namespaces(in_own_pid_namespace: bool) -> bool:
    """In a stage process (process 1 of its own PID namespace, ``pid_namespace``): new mount,
    network, IPC and UTS namespaces of its own. False (nothing changed: the process runs
    without them) where that is not allowed; an IsolationError where a private root is
    required."""
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if in_own_pid_namespace and _libc.unshare(flags) == 0:
        return True
    if _ROOT is not None:  # a private root was asked for: never the machine's files instead
        _check(-1, "unshare")
    return False


def confine_to(allowlist: str | None) -> None:
    """The zygote's choice, inherited by every stage process: build a private root of
    ``allowlist`` (``boundary/launcher.view``'s JSON: read-only folders, links, devices) or
    not (None: bwrap has made the whole filesystem an allowlist already). With an allowlist,
    the zygote refuses to start where a stage process could not build it: never the machine's
    files."""
    global _ROOT
    _ROOT = None if allowlist is None else json.loads(allowlist)
    if _ROOT is not None and not _can_isolate():
        raise SystemExit("--sandbox unsafe-process as root, but a stage process cannot build "
                         "its private root here (namespaces or mounts refused: no "
                         "CAP_SYS_ADMIN?), and without one it would see every file")


def _can_isolate() -> bool:
    """Whether a stage process can isolate itself here: tried whole in a fork, as a stage
    process does it (``pid_namespace``, ``enter_namespaces``, then its private filesystem), so
    that a failure stops the worker's start, never a learner's stage."""
    try:
        with pid_namespace() as own:
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    if enter_namespaces(own):
                        private_filesystem()
                        code = 0
                except BaseException:  # noqa: BLE001 - whatever failed, the answer is no
                    code = 1
                os._exit(code)
    except IsolationError:
        return False
    return os.waitpid(pid, 0)[1] == 0


def outer_pid() -> int:
    """This process's id as the zygote sees it (before /proc is remounted for the new PID
    namespace, /proc/self still resolves in the zygote's namespace)."""
    return int(os.readlink("/proc/self"))


def _mount(source: bytes | None, target: str, kind: bytes | None, flags: int,
           options: bytes | None = None, make: bool = False) -> None:
    if make:  # the mount point, root's
        os.makedirs(target, mode=0o755, exist_ok=True)
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
    folders under /tmp, if any, stay visible there, read-only. With an allowlist
    (``confine_to``), all of it inside a private root that holds nothing else."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount propagates outside
    if _ROOT is not None:
        private_root(_ROOT)
    else:
        kept = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
                for path in python_under_tmp()]
        _mount(b"tmpfs", "/tmp", b"tmpfs", MS_NOSUID | MS_NODEV,
               f"size={TMP_BYTES},mode=1777".encode())
        for path, fd in kept:
            _keep_read_only(path, fd)
            os.close(fd)
        if os.path.isdir("/dev/shm"):
            _mount(b"tmpfs", "/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=1777")
        _nothing_shared_left()
    _mount(b"proc", "/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.mkdir(GRADER_DIR, 0o700)
    os.mkdir(SUBMISSION, 0o755)


def _nothing_shared_left() -> None:
    """Inside bubblewrap: what every stage process would otherwise share is taken away in
    ours. The sandbox's own root and /dev (where bwrap made folders, owned by the sandbox's
    user where the grader is not root) become read-only, and /run (the zygote's socket
    folder, the operator's own where the grader is not root) an empty read-only tmpfs: no
    file left there reaches a sibling or the next learner."""
    for path in ("/", "/dev"):
        kept = os.statvfs(path).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)  # same bits
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
    if os.path.isdir("/run"):
        _mount(b"tmpfs", "/run", b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
               b"size=4k,mode=0755")


def private_root(allowlist: dict) -> None:
    """Pivot into a new root that holds only ``allowlist``: its folders read-only and nosuid,
    its links, a minimal /dev, an empty /tmp; no repository, home folder or submission.

    The folders are opened first, then the new root is built on a tmpfs over /tmp (any folder
    would do: this mount namespace is ours alone) from those descriptors, so that python under
    /tmp is shown too. The caller mounts /proc afterwards."""
    os.umask(0o022)
    shown = [(inside, os.open(source, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
             for source, inside in allowlist["read_only"] if os.path.isdir(source)]
    devices = [f"/dev/{n}" for n in DEVICES if os.path.exists(f"/dev/{n}")]
    devices += [d for d in allowlist["devices"] if os.path.exists(d)]
    new = "/tmp"
    _mount(b"tmpfs", new, b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=0755")
    _mount(b"tmpfs", _in(new, "/tmp"), b"tmpfs", MS_NOSUID | MS_NODEV,
           f"size={TMP_BYTES},mode=1777".encode(), make=True)
    for inside, fd in shown:  # parents first (sorted), so python under /tmp lands on the new
        target = _in(new, inside)  # /tmp
        os.makedirs(target, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}".encode(), target, None, MS_BIND | MS_REC)
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
    for link, target in allowlist["links"].items():
        os.symlink(target, _in(new, link))
    dev = _in(new, "/dev")
    _mount(b"tmpfs", dev, b"tmpfs", MS_NOSUID | MS_NOEXEC, b"size=64k,mode=0755", make=True)
    for device in devices:  # a node's mount point is an empty file (a folder for nvidia-caps)
        target = _in(new, device)
        if os.path.isdir(device):
            os.makedirs(target, exist_ok=True)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        _mount(device.encode(), target, None, MS_BIND | MS_REC)
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{fd}", os.path.join(dev, name))
    os.symlink("/proc/self/fd", os.path.join(dev, "fd"))
    _mount(b"tmpfs", os.path.join(dev, "shm"), b"tmpfs", MS_NOSUID | MS_NODEV,
           b"size=1m,mode=1777", make=True)
    os.makedirs(_in(new, "/proc"))
    os.makedirs(_in(new, ".old"), mode=0o700)
    os.chdir(new)
    _check(_libc.syscall(PIVOT_ROOT[os.uname().machine], b".", b".old"), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount /.old")
    os.rmdir("/.old")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _in(root: str, path: str) -> str:
    """``path`` as seen from inside ``root``."""
    return os.path.join(root, path.lstrip("/"))


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
    if limits.get("uid") is not None or limits.get("drop_capabilities"):
        set_limit(resource.RLIMIT_NPROC, int(limits.get("processes", 64)))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-big write fails instead of killing
    if limits.get("drop_capabilities"):  # no other user to become: no capability instead
        drop_capabilities()
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


def drop_capabilities() -> None:
    """Keep this process's user but give up every capability, for good: where the grader is
    not root, bubblewrap's user namespace maps a single user (the operator's, seen as 0), so
    there is no other user to become; what makes uid 0 there privileged is its capabilities
    over the sandbox's own namespaces, and those go (bounding, ambient, effective, permitted
    and inheritable sets), with no_new_privs so no file can give them back."""
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient caps")
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: all empty
    _check(_libc.syscall(CAPSET[os.uname().machine], header, data), "capset")
    with open("/proc/self/status") as status:
        held = [line for line in status if line.startswith(("CapEff", "CapPrm", "CapBnd"))]
    if any(int(line.split()[1], 16) for line in held):
        raise IsolationError(1, f"capabilities left after dropping them: {held}")


def drop_privileges(uid: int | None) -> None:
    """Become ``uid`` for good (real, effective and saved ids), with no supplementary groups,
    and check that the way back is closed."""
    if uid is None:
        return
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")  # no setuid way up
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise IsolationError(1, "could still become root after dropping privileges")
