"""``python -m autograder grade PATH``: grade one submission, stage by stage.

Exit status 0 whenever grading finished, whatever the score; 2 when the grader itself could not
run (a broken rubric, a worker that cannot start).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .grading import GraderError, grade
from .rubric import RubricError


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
    except (GraderError, RubricError, OSError) as error:
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
