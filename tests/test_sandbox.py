"""The bubblewrap command line: python stays visible wherever it lives, the rest is hidden.

CI clones the repository into a temporary folder, so its .venv can sit under /tmp or inside
the (hidden) repository: both must be bound back after every tmpfs that would hide them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from autograder.sandbox import REPO, BwrapLauncher


def _command(tmp_path: Path) -> list[str]:
    (tmp_path / "run").mkdir()
    launcher = BwrapLauncher("/usr/bin/bwrap")
    return launcher.command(worker=Path("w.py"), sandboxed=Path("/x"), run_dir=tmp_path / "run",
                            scratch=tmp_path)


def _last(args: list[str], *pair: str) -> int:
    hits = [i for i in range(len(args) - 1) if (args[i], args[i + 1]) == pair]
    assert hits, f"{pair} not in the command"
    return hits[-1]


def test_python_is_bound_after_every_tmpfs(tmp_path):
    args = _command(tmp_path)
    last_tmpfs = max(i for i, a in enumerate(args) if a == "--tmpfs")
    if any(sys.prefix.startswith(p) for p in ("/tmp", "/root", "/work", str(REPO))):
        assert _last(args, "--ro-bind", sys.prefix) > last_tmpfs


def test_the_repository_and_homes_are_hidden(tmp_path):
    args = _command(tmp_path)
    hidden = {args[i + 1] for i, a in enumerate(args) if a == "--tmpfs"}
    assert "/tmp" in hidden and "/root" in hidden
    assert str(REPO) in hidden or str(REPO).startswith("/tmp/")
    assert ("--unshare-net" in args) and ("--unshare-pid" in args)
