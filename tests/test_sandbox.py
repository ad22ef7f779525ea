"""The bubblewrap command line: an allowlist. Python stays visible wherever it lives (CI clones
the repository into a temporary folder, so its .venv can sit under /tmp or inside the
repository); nothing else of the machine is bound in."""

from __future__ import annotations

import sys
from pathlib import Path

from autograder import ROOT as REPO
from autograder.boundary.launcher import (
    GRADER,
    MERGED,
    RUN,
    SYSTEM,
    BwrapLauncher,
    python_paths,
)


def _command(tmp_path: Path) -> list[str]:
    (tmp_path / "run").mkdir()
    launcher = BwrapLauncher("/usr/bin/bwrap")
    try:
        return launcher.command(worker=Path("w.py"), sandboxed=Path("/x"),
                                run_dir=tmp_path / "run", scratch=tmp_path)
    finally:
        launcher.release()


def _binds(args: list[str]) -> dict[str, str]:
    """Destination -> source of every bind in the command."""
    return {args[i + 2]: args[i + 1] for i, a in enumerate(args)
            if a in ("--ro-bind", "--bind", "--dev-bind")}


def test_only_the_system_python_and_the_grader_are_bound(tmp_path):
    args = _command(tmp_path)
    allowed = {*SYSTEM, *MERGED, *python_paths(), GRADER, RUN}
    for destination, source in _binds(args).items():
        assert destination in allowed, f"{source} is bound into the sandbox at {destination}"
        if destination in (GRADER, RUN):
            continue
        assert source == destination
    assert not any(a == "/" for i, a in enumerate(args) if args[i - 1] in ("--ro-bind", "--bind"))


def test_python_is_reachable_and_the_repository_is_not(tmp_path):
    binds = _binds(_command(tmp_path))
    assert any(sys.prefix == d or sys.prefix.startswith(d + "/") for d in binds)
    assert str(REPO) not in binds and not any(
        str(REPO).startswith(d + "/") for d in binds if d not in python_paths())


def test_no_network_no_shared_processes(tmp_path):
    args = _command(tmp_path)
    for flag in ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent",
                 "--clearenv"):
        assert flag in args


def test_the_learner_can_import_what_python_has(tmp_path):
    """The learner's user passes through every folder above python's packages (bwrap would
    make them 0700): a module torch imports lazily, on first use, still loads."""
    import pytest

    from autograder.grading import Grader
    from autograder.options import Options
    from tests.variants.build import make_submission

    if BwrapLauncher.find() is None:
        pytest.skip("bubblewrap is not usable here")
    folder = make_submission(tmp_path / "submission", {"embeddings:Embedding.forward": '''
        def forward(self, ids):
            import torch._dynamo  # not imported by the worker: read from site-packages now
            raise RuntimeError(f"imported {torch._dynamo.__name__}")
    '''})
    with Grader(Options(device="cpu", sandbox="bwrap")) as grader:
        result = grader.grade(folder, stages=["embedding"])
    messages = [r.message for s in result.stages for r, _, _ in s.tests]
    assert any("imported torch._dynamo" in m for m in messages), messages
