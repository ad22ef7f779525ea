"""Where learner code runs: every isolation decision of the grader, in one place.

``BwrapLauncher`` starts the worker (``sandboxed/worker.py``) in bubblewrap: read-only system,
python and sandboxed code, nothing else of this machine, no network, a private /tmp, and a
memory cgroup where the machine allows one; each stage process then gets namespaces, a /tmp
and a user of its own with limits it cannot lift (``sandboxed/isolation.py``), or, run by
anyone but root, bwrap's one user with no capability left (``child_limits``).
``PlainLauncher`` runs without bubblewrap, only when the operator names it
(``--sandbox unsafe-process``), and says what it cannot keep (``warning``).

``choose_launcher`` picks one and never falls back: without a working bwrap it raises a
``GraderError`` naming the fix. ``wants_gpu`` says whether the worker sees the GPU. The
option itself is declared in ``autograder/options.py``; docs/threat-model.md has the table
of what each mode isolates.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import site
import subprocess
import sys
import time
from pathlib import Path
from stat import S_ISDIR

from lumen.stages import STAGE_NAMES

from ..options import BWRAP, EXPOSED, SANDBOXES, UNSAFE, GiB, Limits, add_arguments
from ..results import GraderError

FIRST_UID = 200_000  # unprivileged users for learner code
#: One user per stage process of a submission (``grading.Submission.limits``: the block's
#: first plus the stage's index), so no two stage processes share a user.
UIDS_PER_SUBMISSION = len(STAGE_NAMES)
UIDS_PER_GRADER = 10_000  # a grader's block of users, its submissions' in turn (claim_uids)
UID_BLOCKS = 1_000  # blocks from FIRST_UID on: graders running at once on one machine
CLAIMS = Path("/run/lumen-uids")  # root's: one lock file per block, held by its grader
#: What the worker's filesystem holds, read-only: the system, never the machine's data.
SYSTEM = ("/usr", "/etc", "/sys")
MERGED = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # often links into /usr
GRADER = "/grader"  # the sandboxed code, inside
RUN = "/run/lumen"  # the worker's socket, inside

#: BwrapLauncher.find's test that bwrap can start a sandbox here (setup.sh runs it too).
PROBE = ("--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--proc", "/proc",
         "--dev", "/dev", "--die-with-parent", "true")
FIX = ("install bubblewrap (apt-get install bubblewrap); on Ubuntu 24.04 also allow "
       "unprivileged user namespaces (sysctl -w kernel.apparmor_restrict_unprivileged_userns=0);"
       f" or pass --sandbox {UNSAFE} to grade without the sandbox, which, unless the grader "
       f"runs as root, lets learner code read {EXPOSED}")


class PlainLauncher:
    """Runs the worker as an ordinary child process: ``--sandbox unsafe-process`` only.

    As root, each stage process still drops to its own unprivileged user inside namespaces
    and a private root of ``view`` (``sandboxed/isolation.py``); the zygote checks that it can
    before it says ready. As anyone else, learner code runs as the operator's user."""

    name = UNSAFE

    def __init__(self) -> None:
        self.cuda = False  # whether the worker may use the GPU (decided by the Grader)
        self.memory = "per-process address space"
        self.as_root = os.geteuid() == 0

    @property
    def warning(self) -> str:
        """For the operator only (stderr, extra_data, summary.md), never for learners."""
        if self.as_root:
            return (f"--sandbox {UNSAFE}: no bubblewrap; run as root, each stage process has "
                    "namespaces, an unprivileged user and a private root of its own, but the "
                    "worker that forks them runs as root outside any sandbox")
        return (f"--sandbox {UNSAFE}, not run as root: learner code runs as this user "
                f"(uid {os.geteuid()}), outside any sandbox; it can read {EXPOSED}, and "
                "everything else this user can, write wherever this user can, and use the "
                "network")

    def child_limits(self, uid: int | None) -> dict:
        """Limits only this launcher can enforce (as root: a user to drop to)."""
        return {"uid": uid, "processes": 64} if self.as_root else {}

    def uses_uids(self) -> bool:
        return self.as_root

    def command(self, worker: Path, sandboxed: Path, run_dir: Path, scratch: Path,
                memory: int = Limits.sandbox_memory_bytes) -> list[str]:
        args = [sys.executable, "-I", str(worker), "--socket", str(run_dir / "worker.sock"),
                "--scratch", str(scratch / "children")]
        if self.as_root:  # the stage processes' private root: what bwrap would show, no more
            args += ["--private-root", json.dumps(view(sandboxed, GRADER, self.cuda))]
        return args

    def socket_path(self, run_dir: Path) -> Path:
        return run_dir / "worker.sock"

    def environment(self) -> dict:
        keep = ("PATH", "LANG", "LC_ALL", "HOME", "CUDA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE",
                "OPENBLAS_L2_SIZE", "LD_LIBRARY_PATH")
        return {k: v for k, v in os.environ.items() if k in keep}

    def kill(self, proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def release(self) -> None:
        """Give back what ``command`` set up (the cgroup)."""


class BwrapLauncher(PlainLauncher):
    """Runs the worker inside bubblewrap; there is no fallback (``choose_launcher``)."""

    name = BWRAP
    warning = None

    def __init__(self, bwrap: str) -> None:
        super().__init__()
        self.bwrap = bwrap
        self.cgroup: Path | None = None

    @classmethod
    def find(cls) -> BwrapLauncher | None:
        """A launcher if ``bwrap`` exists and can start a sandbox here, else None."""
        path, _ = cls.probe()
        return None if path is None else cls(path)

    @staticmethod
    def probe() -> tuple[str | None, str]:
        """(bwrap's path, "") if it can start a sandbox here, else (None, why not)."""
        path = shutil.which("bwrap")
        if path is None:
            return None, "bubblewrap (bwrap) is not installed"
        try:
            done = subprocess.run([path, *PROBE], capture_output=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as error:
            return None, f"{path} cannot start a sandbox here ({error})"
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip()[-300:] or "no message"
            return None, f"{path} cannot start a sandbox here ({said})"
        return path, ""

    def child_limits(self, uid: int | None) -> dict:
        """As root: a user of its own per stage process. Otherwise bwrap's user namespace
        maps one user only: each stage process keeps it with no capability left, and since
        the kernel counts processes per user, the whole sandbox (zygote and stage processes,
        threads included) shares one limit, set higher for that."""
        if self.as_root:
            return {"uid": uid, "processes": 64}
        return {"uid": None, "drop_capabilities": True, "processes": 128}

    def uses_uids(self) -> bool:
        return self.as_root

    def socket_path(self, run_dir: Path) -> Path:
        return run_dir / "worker.sock"

    def command(self, worker: Path, sandboxed: Path, run_dir: Path, scratch: Path,
                memory: int = Limits.sandbox_memory_bytes) -> list[str]:
        """bwrap's command line; ``memory``: bytes for the whole sandbox, where a cgroup can
        be made."""
        os.chmod(run_dir, 0o700)  # the socket: root (the zygote) only
        args = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-net",
                "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--proc", "/proc"]
        if not self.as_root:  # the zygote is root of the sandbox's own user namespace, with
            args += ["--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL"]  # the
            # capabilities a stage process needs to isolate itself and then gives up for good
        args += ["--dev", "/dev"]  # a minimal /dev (null, zero, random, ...), and on a GPU
        shown = view(sandboxed, GRADER, self.cuda)  # runner the NVIDIA devices alone
        args += [a for p in shown["devices"] for a in ("--dev-bind", p, p)]
        args += [a for link, target in shown["links"].items() for a in ("--symlink", target, link)]
        args += ["--perms", "1777", "--tmpfs", "/tmp"]  # before python, which may be under it
        made: set[str] = set()
        for source, inside in shown["read_only"]:
            for parent in reversed(Path(inside).parents[:-1]):  # bwrap would make them 0700,
                if str(parent) not in made and str(parent) != "/tmp":  # and the learner's
                    args += ["--perms", "0755", "--dir", str(parent)]  # user could not pass
                    made.add(str(parent))  # through
            args += ["--ro-bind", source, inside]
        args += ["--bind", str(run_dir), RUN,
                 "--chdir", "/tmp", "--clearenv", "--setenv", "HOME", "/tmp",
                 "--setenv", "PATH", "/usr/bin:/bin"]
        for key in ("CUDA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
            if key in os.environ:
                args += ["--setenv", key, os.environ[key]]
        args += [sys.executable, "-I", f"{GRADER}/worker.py", "--socket", f"{RUN}/worker.sock",
                 "--scratch", "/tmp/children"]
        return self._in_cgroup(args, memory)

    def _in_cgroup(self, args: list[str], memory: int) -> list[str]:
        """``args`` started inside a fresh memory cgroup, where this machine has one for us.

        The shell writes its own pid into the cgroup before it becomes bwrap, so every process
        of the sandbox is born inside it."""
        self.release()
        self.cgroup, procs = memory_cgroup(memory)
        if procs is None:
            self.memory = "per-process limits (no memory cgroup here)"
            return args
        self.memory = f"a {memory / GiB:g} GiB memory cgroup for the sandbox"
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs), *args]

    def release(self) -> None:
        if self.cgroup is None:
            return
        for _ in range(50):  # the last processes may still be exiting
            try:
                self.cgroup.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.01)
        self.cgroup = None


def claim_uids(folder: Path = CLAIMS) -> tuple[range, int]:
    """A block of users that no other grader on this machine runs learner code as, and the
    open lock file that holds it: (the users, its descriptor; close it to give them back).

    Graders side by side (a batch's processes, test workers, two operators' batches) must
    never share a user: RLIMIT_NPROC counts per user, and a user's processes may signal
    each other. Each block's file is locked (flock) by the grader using it; the kernel drops
    the lock when the grader closes the file or dies, so nothing stale is ever left held."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        found = folder.lstat()
    except OSError as error:
        raise GraderError(f"cannot keep track of sandbox users in {folder} ({error})") from error
    if not S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o022:
        raise GraderError(f"{folder} must be a folder of this user's that only it can write "
                          "(it holds the locks that keep graders' sandbox users apart)")
    for block in range(UID_BLOCKS):
        fd = os.open(folder / str(block), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        first = FIRST_UID + block * UIDS_PER_GRADER
        return range(first, first + UIDS_PER_GRADER), fd
    raise GraderError(f"all {UID_BLOCKS} blocks of sandbox users are held by other graders "
                      f"on this machine (lock files in {folder}): wait for some to finish")


def view(sandboxed: Path, inside: str, cuda: bool) -> dict:
    """What learner code's filesystem holds, the same for both launchers: the system and the
    merged /bin, /lib, ... links, python and its packages wherever they are, the sandboxed code
    (at ``inside``), read-only, and with ``cuda`` the NVIDIA device nodes. Nothing else of this
    machine: no repository, home folder, submission or result. ``read_only`` is (source, where
    it is seen) pairs, parents before what they hold."""
    links = {p: os.readlink(p) for p in MERGED if os.path.islink(p)}
    shown = [p for p in (*MERGED, *SYSTEM) if p not in links and os.path.isdir(p)]
    for path in python_paths():  # outermost only: a folder already shown needs no bind
        if not any(_under(path, q) for q in shown):
            shown = [q for q in shown if not _under(q, path)] + [path]
    pairs = [(p, p) for p in shown] + [(str(sandboxed), inside)]
    return {"links": links, "read_only": sorted(pairs, key=lambda pair: pair[1]),
            "devices": nvidia_devices() if cuda else []}


def nvidia_devices() -> list[str]:
    """The device nodes CUDA opens (/dev/nvidia0, nvidiactl, nvidia-uvm, ...)."""
    caps = "/dev/nvidia-caps"
    found = [f"/dev/{n}" for n in sorted(os.listdir("/dev")) if n.startswith("nvidia")
             and n != "nvidia-caps"]
    return found + ([caps] if os.path.isdir(caps) else [])


def python_paths() -> list[str]:
    """Python, its standard library and its packages (a CI clone may keep .venv anywhere)."""
    found = {sys.prefix, sys.base_prefix, *site.getsitepackages(),
             str(Path(sys.executable).resolve().parents[1])}
    return sorted(p for p in found if os.path.isdir(p))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def memory_cgroup(limit: int) -> tuple[Path | None, Path | None]:
    """A new memory cgroup below ours with ``limit`` bytes (cgroup v2 or v1): (its folder,
    its cgroup.procs file), or (None, None) where none can be made."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None, None
    name = f"lumen-grader-{os.getpid()}-{os.urandom(3).hex()}"
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2, the unified hierarchy: mounted alone or beside v1's
            bases = [Path(root) / path.lstrip("/")
                     for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")]
            limit_file = "memory.max"
        elif "memory" in controllers.split(","):
            bases = [Path("/sys/fs/cgroup/memory") / path.lstrip("/")]
            limit_file = "memory.limit_in_bytes"
        else:
            continue
        for base in bases:
            if (made := _limited_cgroup(base / name, limit_file, limit)) is not None:
                return made, made / "cgroup.procs"
    return None, None


def _limited_cgroup(folder: Path, limit_file: str, limit: int) -> Path | None:
    """``folder`` made as a cgroup with ``limit`` bytes, or None. A real cgroup folder is
    filled by the kernel: a folder without the limit file is a plain directory (or the memory
    controller is not enabled there) and is removed again."""
    if not (folder.parent / "cgroup.procs").exists():
        return None
    try:
        folder.mkdir()
    except OSError:
        return None
    try:
        if not (folder / limit_file).exists():
            raise OSError("no memory controller here")
        (folder / limit_file).write_text(str(limit))
        swap = folder / "memory.memsw.limit_in_bytes"  # v1 with swap accounting
        if swap.exists():
            swap.write_text(str(limit))
        return folder
    except OSError:
        folder.rmdir()
        return None


def wants_gpu(device: str) -> bool:
    """Whether the sandbox must show the GPU: decided before torch is imported."""
    return device != "cpu" and os.path.exists("/dev/nvidiactl")


def choose_launcher(kind: str = BWRAP) -> PlainLauncher:
    """The sandbox ``kind`` names, or a GraderError: bwrap where it cannot start is an error
    that names the fix, never a quiet plain process."""
    if kind == UNSAFE:
        return PlainLauncher()
    if kind != BWRAP:
        raise GraderError(f"--sandbox {kind!r}: the choices are {', '.join(SANDBOXES)}")
    path, why = BwrapLauncher.probe()
    if path is None:
        raise GraderError(f"learner code runs only inside bubblewrap, and {why}: {FIX}")
    return BwrapLauncher(path)


def command_line() -> argparse.ArgumentParser:
    """``--sandbox``, as every front end declares it (``options.py``)."""
    parser = argparse.ArgumentParser(prog="python -m autograder.boundary.launcher",
                                     description="Check the sandbox for learner code.")
    add_arguments(parser, ["sandbox"])
    return parser


def main(argv: list[str] | None = None) -> int:
    """``python -m autograder.boundary.launcher [--sandbox KIND]``: whether learner code can run
    here as KIND asks (``make sandbox`` runs it): 0, or 1 with the fix. Standard library only."""
    args = command_line().parse_args(argv)
    try:
        launcher = choose_launcher(args.sandbox)
    except GraderError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"warning: {launcher.warning}" if launcher.warning else
          f"sandbox: bubblewrap ({launcher.bwrap}) can start a sandbox here", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
