"""Where learner code runs: every isolation decision of the grader, in one place.

Two launchers start the worker (``sandboxed/worker.py``):

- ``BwrapLauncher``: bubblewrap. The worker sees only what it needs, read-only: the system's
  programs and libraries (/usr, /etc, /sys), python and its packages wherever they are, and
  the grader's sandboxed code; nothing else of this machine (no repository, no home folder,
  no submission, no results) exists inside. No network, its own process tree, a private
  /tmp. Inside it, every stage process gets namespaces, a /tmp and a user id of its own
  (``sandboxed/isolation.py``), with limits it cannot lift. Where this machine lets us, the
  whole sandbox also sits in a memory cgroup, which bounds the sum of its processes (the only
  memory bound on a GPU runner, where address-space limits cannot be used).
- ``PlainLauncher``: an ordinary child process with resource limits: the weaker fallback when
  bubblewrap is missing, said in every report.

``choose_launcher`` picks one, ``wants_gpu`` says whether the GPU is shown to it, and
``child_limits(uid)`` says what a stage process may use.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import time
from pathlib import Path

from .results import GraderError

REPO = Path(__file__).resolve().parents[1]
FIRST_UID = 200_000  # unprivileged users for learner code
UIDS_PER_SUBMISSION = 8  # one per stage process (six stages), so no two share a user
SANDBOX_MEMORY = 8 << 30  # bytes for all of one worker's processes, where a cgroup allows it
#: What the worker's filesystem holds, read-only: the system, never the machine's data.
SYSTEM = ("/usr", "/etc", "/sys")
MERGED = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # often links into /usr
GRADER = "/grader"  # the sandboxed code, inside
RUN = "/run/lumen"  # the worker's socket, inside


class PlainLauncher:
    """Runs the worker as an ordinary child process (the weaker fallback, without bwrap)."""

    name = "process"
    warning = (
        "bubblewrap (bwrap) is not installed or cannot start a sandbox here: learner code ran "
        "in a separate process with resource limits, but without the sandbox (it could read "
        "files and use the network)"
    )

    def __init__(self) -> None:
        self.cuda = False  # whether the worker may use the GPU (decided by the Grader)
        self.memory = "per-process address space"

    def child_limits(self, uid: int | None) -> dict:
        """Limits only this launcher can enforce (the sandbox adds a user to drop to)."""
        return {}

    def uses_uids(self) -> bool:
        return False

    def command(self, worker: Path, sandboxed: Path, run_dir: Path, scratch: Path,
                memory: int = SANDBOX_MEMORY) -> list[str]:
        return [sys.executable, "-I", str(worker), "--socket", str(run_dir / "worker.sock"),
                "--scratch", str(scratch / "children")]

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
    """Runs the worker inside bubblewrap; falling back is the caller's choice, not ours."""

    name = "bwrap"
    warning = None

    def __init__(self, bwrap: str) -> None:
        super().__init__()
        self.bwrap = bwrap
        self.cgroup: Path | None = None

    @classmethod
    def find(cls) -> BwrapLauncher | None:
        """A launcher if ``bwrap`` exists and can start a sandbox here, else None."""
        path = shutil.which("bwrap")
        if path is None:
            return None
        probe = subprocess.run(
            [path, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--proc", "/proc",
             "--dev", "/dev", "--die-with-parent", "true"],
            capture_output=True, timeout=20)
        return cls(path) if probe.returncode == 0 else None

    def child_limits(self, uid: int | None) -> dict:
        return {"uid": uid, "processes": 64}

    def uses_uids(self) -> bool:
        return True

    def socket_path(self, run_dir: Path) -> Path:
        return run_dir / "worker.sock"

    def command(self, worker: Path, sandboxed: Path, run_dir: Path, scratch: Path,
                memory: int = SANDBOX_MEMORY) -> list[str]:
        """bwrap's command line; ``memory``: bytes for the whole sandbox, where a cgroup can
        be made."""
        os.chmod(run_dir, 0o700)  # the socket: root (the zygote) only
        args = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-net",
                "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--proc", "/proc"]
        args += ["--dev", "/dev"]  # a minimal /dev (null, zero, random, ...), and on a GPU
        if self.cuda:  # runner the NVIDIA devices alone, never the machine's disks
            args += [a for p in nvidia_devices() for a in ("--dev-bind", p, p)]
        for path in MERGED:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        args += [a for p in SYSTEM if os.path.isdir(p) for a in ("--ro-bind", p, p)]
        args += ["--perms", "1777", "--tmpfs", "/tmp"]
        made: set[str] = set()
        for needed in python_paths():  # python and its packages, wherever they are
            if any(_under(needed, p) for p in (*SYSTEM, *MERGED)):
                continue
            for parent in reversed(Path(needed).parents[:-1]):  # bwrap would make them 0700,
                if str(parent) not in made:  # and the learner's user could not pass through
                    args += ["--perms", "0755", "--dir", str(parent)]
                    made.add(str(parent))
            args += ["--ro-bind", needed, needed]
        args += ["--ro-bind", str(sandboxed), GRADER, "--bind", str(run_dir), RUN,
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
        self.memory = f"a {memory / 2**30:g} GiB memory cgroup for the sandbox"
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


def choose_launcher(kind: str) -> PlainLauncher:
    """The sandbox to run learner code in: bwrap when usable, else a plain process (warned)."""
    if kind == "process":
        return PlainLauncher()
    launcher = BwrapLauncher.find()
    if launcher is None and kind == "bwrap":
        raise GraderError("--sandbox bwrap, but bubblewrap (bwrap) is not usable here")
    return launcher or PlainLauncher()
