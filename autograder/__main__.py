"""``python -m autograder grade PATH``: grade one submission, stage by stage.

Exit status 0 whenever grading finished, whatever the score; 2 when the grader itself could not
run (a broken rubric, a worker that cannot start).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

SUITES = Path(__file__).resolve().parent / "suites"


def choose_launcher(kind: str):
    """The sandbox to run learner code in: bwrap when usable, else a plain process (warned)."""
    from .worker_client import PlainLauncher

    if kind == "process":
        return PlainLauncher()
    from .sandbox import BwrapLauncher

    launcher = BwrapLauncher.find()
    if launcher is None and kind == "bwrap":
        raise SystemExit("error: --sandbox bwrap, but bubblewrap (bwrap) is not usable here")
    return launcher or PlainLauncher()


def choose_devices(kind: str) -> list[str]:
    """CPU always; CUDA too when asked for or (``auto``) when present."""
    import torch

    has_cuda = torch.cuda.is_available()
    if kind == "cuda" and not has_cuda:
        raise SystemExit("error: --device cuda, but no CUDA device is available")
    return ["cpu", "cuda"] if has_cuda and kind in ("auto", "cuda") else ["cpu"]


def run_suites(context, stages: list[str] | None = None) -> list:
    """Run the hidden suites (all, or those of ``stages``) against the started worker."""
    os.environ.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # ~1 s of plugin scanning
    import pytest

    from .plugin import GradingPlugin

    paths = [str(SUITES / f"test_{s}.py") for s in stages] if stages else [str(SUITES)]
    args = [*paths, "-c", str(SUITES / "pytest.ini"), "--rootdir", str(SUITES),
            "-p", "no:terminal", "-p", "no:cacheprovider"]
    plugin = GradingPlugin(context)
    code = pytest.main(args, plugins=[plugin])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise RuntimeError(f"the hidden suites could not run (pytest exit code {code})")
    return context.results


def grade(path: Path, device: str = "auto", sandbox: str = "auto", seed: int | None = None,
          limits=None, stages: list[str] | None = None):
    """Grade the submission at ``path``; returns the ``Grade``."""
    started = time.perf_counter()
    from . import plugin
    from .submission import prepare
    from .worker_client import Limits

    prepared = prepare(path)
    launcher = choose_launcher(sandbox)
    launcher.cuda = device != "cpu" and os.path.exists("/dev/nvidiactl")  # decided before torch
    context = plugin.start(prepared.folder, [], limits or Limits(), launcher, seed)
    try:  # the worker is importing torch now; we do the same meanwhile
        context.devices[:] = choose_devices(device)
        results = run_suites(context, stages)
        from .report import grade as score
        from .rubric import load

        rubric = load()
        if stages is None:
            rubric.check_tests({r.name for r in results})
        notes = list(prepared.notes)
        notes += [f"{problem}" for problem in prepared.problems.values()]
        if getattr(launcher, "warning", None):
            notes.append(launcher.warning)
        if context.worker.restarts:
            notes.append(f"the worker was restarted {context.worker.restarts} time(s): "
                         "your code ended it")
        return score(results, rubric, submission=str(path), seed=context.seed,
                     devices=list(context.devices), sandbox=launcher.name,
                     seconds=time.perf_counter() - started, notes=notes)
    finally:
        context.close()
        prepared.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder",
                                     description="Grade 'The Embedding Layer' exercises.")
    commands = parser.add_subparsers(dest="command", required=True)
    g = commands.add_parser("grade", help="grade one submission (a folder or a .zip)")
    g.add_argument("path", type=Path, nargs="?", default=Path("exercises"))
    g.add_argument("--out", type=Path, help="write Gradescope's results.json here")
    g.add_argument("--junit", type=Path, help="write JUnit XML here")
    g.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    g.add_argument("--sandbox", choices=("auto", "bwrap", "process"), default="auto")
    g.add_argument("--seed", type=int, help="reproduce an earlier run's inputs")
    g.add_argument("--visibility", default="after_due_date",
                   choices=("hidden", "after_due_date", "after_published", "visible"),
                   help="Gradescope visibility of each hidden test (default after_due_date)")
    args = parser.parse_args(argv)

    if not args.path.exists():
        print(f"error: no submission at {args.path}", file=sys.stderr)
        return 2
    try:
        result = grade(args.path, args.device, args.sandbox, args.seed)
    except Exception as error:  # noqa: BLE001 - the grader could not run: say why, exit 2
        print(f"error: the grader could not run: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    from . import report

    print(report.terminal(result), end="")
    if args.out:
        report.write_json(args.out, report.gradescope(result, args.visibility))
    if args.junit:
        report.write_atomic(args.junit, report.junit(result))
    if result.grader_errors:
        print(f"warning: {len(result.grader_errors)} check(s) hit an internal grader error",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
