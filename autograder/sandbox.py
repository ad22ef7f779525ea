"""The bubblewrap sandbox around the worker.

Inside: no network, its own process tree, a read-only view of the system with the home
folders, /work, the repository (lumen, the hidden suites) and every submission hidden, and a
64 MiB private /tmp in which each stage child writes its learner's files for its user alone.
The worker's children drop to an unprivileged user before they import learner code, so a fork
bomb meets RLIMIT_NPROC and the zygote (root) cannot be signalled. When the grader ends the
sandbox, every process in it ends.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

from .worker_client import PlainLauncher

REPO = Path(__file__).resolve().parents[1]
NOBODY = 65534
TMP_BYTES = 64 << 20
HIDDEN = ("/tmp", "/root", "/home", "/work", "/autograder", "/var/tmp", "/dev/shm", "/mnt",
          "/srv", "/opt/conda/pkgs")


class BwrapLauncher(PlainLauncher):
    """Runs the worker inside bubblewrap; falls back is the caller's choice, not ours."""

    name = "bwrap"
    warning = None

    def __init__(self, bwrap: str) -> None:
        self.bwrap = bwrap
        self.cuda = False  # expose the GPU devices (set when grading on CUDA)

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

    def child_limits(self) -> dict:
        return {"uid": NOBODY, "processes": 256}

    def command(self, worker, sandboxed, run_dir, scratch) -> list[str]:
        os.chmod(run_dir, 0o700)  # the socket: root (the zygote) only
        args = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-net",
                "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--ro-bind", "/", "/", "--proc", "/proc"]
        args += ["--dev-bind", "/dev", "/dev"] if self.cuda else ["--dev", "/dev"]
        hidden = sorted({*HIDDEN, str(REPO), tempfile.gettempdir()})
        for path in hidden:  # what lies under /tmp goes with the private /tmp below
            if os.path.isdir(path) and not _under_hidden(path, ("/tmp",)):
                args += ["--tmpfs", path]
        args += ["--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
        # Then python and its packages, read-only, wherever they are (a CI clone may keep its
        # .venv under /tmp or in the hidden repository): bound after every tmpfs above.
        for needed in sorted({sys.prefix, sys.base_prefix, *site.getsitepackages()}):
            if os.path.isdir(needed) and _under_hidden(needed, tuple(hidden)):
                for parent in reversed(Path(needed).parents[:-1]):  # bwrap would make them 0700
                    args += ["--perms", "0755", "--dir", str(parent)]
                args += ["--ro-bind", needed, needed]
        args += ["--ro-bind", str(sandboxed), "/tmp/grader", "--bind", str(run_dir), "/tmp/run",
                 "--chdir", "/tmp", "--clearenv", "--setenv", "HOME", "/tmp",
                 "--setenv", "PATH", "/usr/bin:/bin"]
        for key in ("CUDA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
            if key in os.environ:
                args += ["--setenv", key, os.environ[key]]
        return args + [sys.executable, "-I", "/tmp/grader/worker.py",
                       "--socket", "/tmp/run/worker.sock", "--scratch", "/tmp/children"]


def _under_hidden(path: str, hidden: tuple[str, ...]) -> bool:
    return any(path == h or path.startswith(h.rstrip("/") + "/") for h in hidden)
