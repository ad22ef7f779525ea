"""The command line: one subcommand per front end, each with its options.

``grade PATH``: one submission, stage by stage. ``grade-batch SUBMISSIONS --out grades.csv``: a
class, one folder or .zip per learner, resumably (``frontends/batch.py``); ``--export`` with
``--roster`` adds the gradebook files an LMS imports (``frontends/exports.py``), and
``--shard K/N`` grades one shard, which ``merge-shards`` combines (``frontends/shards.py``).
``nbgrade``: the class through nbgrader's gradebook (``frontends/nbgrade.py``).
``prairielearn``: PrairieLearn's external grader (``frontends/prairielearn.py``).

Exit status 0 whenever grading finished, whatever the score; for a class, 1 when some
learners could not be graded (a rerun retries them). 2 when the grader itself could not run
or failed on its side (a broken rubric, a worker that cannot start, an internal error in a
hidden test), or a batch stopped: then no grade is given, never a zero the learner did not earn.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import options as grading_options
from . import phases
from .boundary import launcher
from .frontends.prairielearn import add_options as prairielearn_options
from .frontends.prairielearn import run as prairielearn
from .grading import Grader, GraderError
from .options import FEEDBACK, LATE_PENALTIES, Options
from .rubric import RubricError
from .views import report


def _formats(value: str) -> list[str]:
    # a front end: only the commands that export import it (a grade never does)
    from .frontends.exports import FORMATS

    names = [s for s in value.split(",") if s]
    unknown = [s for s in names if s not in FORMATS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown export(s) {', '.join(unknown) or value!r}; "
                                         f"the formats are {', '.join(FORMATS)}")
    return names


def _shard(value: str) -> tuple[int, int]:
    # a front end: only its own command imports it (a grade never does)
    from .frontends.shards import parse_shard

    return parse_shard(value)


def _sandbox_ready(kind: str) -> bool:
    """Whether learner code can run in the sandbox ``kind`` here, said on stderr (the
    operator's channel): an error naming the fix, or the unsafe mode's warning."""
    try:
        chosen = launcher.choose_launcher(kind)
    except GraderError as error:
        print(f"error: the grader could not run: {error}", file=sys.stderr)
        return False
    if chosen.warning:
        print(f"warning: {chosen.warning}", file=sys.stderr)
    return True


def _roster(exports: list[str], path: Path | None):
    """The checked roster for ``--export`` (None without one); False, said on stderr, when
    it cannot be used: before grading, so a roster problem costs no grading time."""
    if not (exports or path):
        return None
    # a front end: only the commands that export import it (a grade never does)
    from .frontends.exports import RosterError, check_roster, load_roster

    if not path:
        print("error: --export needs --roster ROSTER.csv, which maps each submission "
              "name to the learner's LMS ids (docs/exports.md)",
              file=sys.stderr)
        return False
    try:
        roster = load_roster(path)
        check_roster(roster, exports)
    except RosterError as error:
        print(f"error: {error}", file=sys.stderr)
        return False
    if not exports:
        print("note: --roster without --export writes no gradebook file; add "
              "--export canvas, moodle or csv", file=sys.stderr)
    return roster


def _exports(args: argparse.Namespace) -> list[str]:
    """The formats of every ``--export FORMAT[,FORMAT]``, in order."""
    return [f for chosen in args.export or [] for f in chosen]


def command_line() -> argparse.ArgumentParser:
    """Every command and its options; the grading options are ``options.py``'s, declared once."""
    parser = argparse.ArgumentParser(prog="python -m autograder",
                                     description="Grade 'The Embedding Layer' exercises.")
    commands = parser.add_subparsers(dest="command", required=True)
    g = commands.add_parser("grade", help="grade one submission (a folder or a .zip)")
    g.add_argument("path", type=Path, nargs="?", default=Path("exercises"))
    g.add_argument("--out", type=Path, help="write Gradescope's results.json here")
    g.add_argument("--junit", type=Path, help="write JUnit XML here")
    grading_options.add_arguments(g)
    b = commands.add_parser("grade-batch", help="grade a class: one folder or .zip per learner")
    b.add_argument("submissions", type=Path, help="the folder of learners' submissions")
    b.add_argument("--out", type=Path, default=Path("grades.csv"),
                   help="the class CSV (default grades.csv); per-learner files go in the "
                        "folder of the same name without .csv")
    b.add_argument("--jobs", type=int, default=2,
                   help="grading processes, each a warm worker (default 2)")
    b.add_argument("--force", action="store_true", help="regrade learners graded before")
    b.add_argument("--export", action="append", type=_formats, metavar="FORMAT[,FORMAT]",
                   help="also write the gradebook files an LMS imports, next to --out: "
                        "canvas, moodle, csv (needs --roster)")
    b.add_argument("--roster", type=Path,
                   help="the CSV mapping submission names to learners' LMS ids "
                        "(docs/exports.md)")
    b.add_argument("--assignment", help="the gradebook column's name (default 'The Embedding "
                                        "Layer'; Canvas: 'Name (id)' updates that assignment)")
    b.add_argument("--shard", type=_shard, metavar="K/N",
                   help="grade only shard K of N (1 <= K <= N): the learners whose id hashes "
                        "there, the same on every machine; then merge-shards "
                        "(docs/cluster.md)")
    grading_options.add_arguments(b, grading_options.CLASS)
    m = commands.add_parser("merge-shards", help="combine the outputs of grade-batch --shard "
                            "K/N, for K = 1..N, into the files one batch over the class writes")
    m.add_argument("shards", type=Path, nargs="+",
                   help="each shard's --out CSV (or its per-learner folder)")
    m.add_argument("--out", type=Path, default=Path("grades.csv"),
                   help="the class CSV (default grades.csv); per-learner files go in the "
                        "folder of the same name without .csv")
    m.add_argument("--export", action="append", type=_formats, metavar="FORMAT[,FORMAT]",
                   help="as for grade-batch: canvas, moodle, csv (needs --roster)")
    m.add_argument("--roster", type=Path, help="as for grade-batch")
    m.add_argument("--assignment", help="as for grade-batch")
    p = commands.add_parser("prairielearn", help="PrairieLearn's external grader: grade "
                            "ROOT/student into ROOT/results/results.json")
    prairielearn_options(p)
    n = commands.add_parser("nbgrade", help="grade a class through nbgrader: a folder per "
                            "learner (lab.ipynb and the .py files, or nbgrader collect's "
                            "submitted/), into nbgrader's gradebook")
    n.add_argument("submissions", type=Path, help="the folder of learners' folders, or the "
                   "submitted/ folder nbgrader collect or zip_collect wrote")
    n.add_argument("--course", type=Path, default=Path("build/nbgrader"),
                   help="nbgrader's course folder, made or refreshed (default build/nbgrader)")
    n.add_argument("--jobs", type=int, default=2, help="grading processes (default 2)")
    n.add_argument("--feedback", choices=FEEDBACK, default=FEEDBACK[0],
                   help="what each check cell shows the learner in nbgrader's feedback: the "
                        "stage's score and checks passed (default), or the hidden checks' "
                        "messages too")
    n.add_argument("--due", help="the assignment's due date in nbgrader's gradebook, e.g. "
                   "'2026-12-01 17:00:00 UTC' (default: the one set there before, if any); a "
                   "submission's timestamp.txt after it is late")
    n.add_argument("--late-penalty", choices=LATE_PENALTIES, default=LATE_PENALTIES[0],
                   help="nbgrader's penalty for a late submission: none (default: only marked "
                        "late) or zero (its score)")
    grading_options.add_arguments(n, grading_options.WHERE)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = command_line().parse_args(argv)
    options = Options.from_args(args)  # every grading option, built once, passed on
    phases.mark("grader: command line read")
    if args.command in ("grade-batch", "nbgrade") and not _sandbox_ready(args.sandbox):
        return 2  # before any learner: a batch never grades a class without its sandbox
    if args.command == "nbgrade":
        # a front end that imports nbgrader: only this command pays for it (the course's
        # failures raise NotebookError, which the front end lets through)
        from .frontends.nbgrade import NbgradeError, NotebookError
        from .frontends.nbgrade import run as nbgrade

        if not args.submissions.is_dir():
            print(f"error: no folder of submissions at {args.submissions}", file=sys.stderr)
            return 2
        try:
            return nbgrade(args.submissions, args.course, options, jobs=args.jobs,
                           feedback=args.feedback, late_penalty=args.late_penalty, due=args.due)
        except (NbgradeError, NotebookError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2

    if args.command == "prairielearn":
        return prairielearn(args, options)

    if args.command == "merge-shards":
        # a front end: only its own command imports it (a grade never does)
        from .frontends.shards import merge

        exports = _exports(args)
        roster = _roster(exports, args.roster)
        if roster is False:
            return 2
        if not args.out.suffix:
            print(f"error: --out {args.out}: name the CSV with its suffix (grades.csv)",
                  file=sys.stderr)
            return 2
        return merge(args.shards, args.out, exports, roster, args.assignment)

    if args.command == "grade-batch":
        # a front end: only its own command imports it (a grade never does)
        from .frontends.batch import Batch, run

        if not args.submissions.is_dir():
            print(f"error: no folder of submissions at {args.submissions}", file=sys.stderr)
            return 2
        if not args.out.suffix:
            print(f"error: --out {args.out}: name the CSV with its suffix (grades.csv); the "
                  "per-learner folder takes the name without it", file=sys.stderr)
            return 2
        exports = _exports(args)
        if args.shard and (exports or args.roster):
            print("error: --export with --shard would write one shard's part of the "
                  "gradebook: export when merging (merge-shards ... --export FORMAT "
                  "--roster ROSTER.csv)", file=sys.stderr)
            return 2
        roster = _roster(exports, args.roster)
        if roster is False:
            return 2
        return run(args.submissions, args.out, options,
                   Batch(jobs=args.jobs, force=args.force, exports=tuple(exports),
                         roster=roster, assignment=args.assignment, shard=args.shard))

    if not args.path.exists():
        print(f"error: no submission at {args.path}", file=sys.stderr)
        return 2
    try:
        with Grader(options) as grader:
            for note in grader.operator_notes():  # the operator's channel, never results.json
                print(f"note: {note}", file=sys.stderr)
            result = grader.grade(args.path)
    except (GraderError, RubricError, OSError) as error:
        print(f"error: the grader could not run: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    print(report.terminal(result), end="")
    phases.mark("report: printed")
    if args.out:
        report.write_json(args.out, report.gradescope(result, options.visibility))
    if args.junit:
        report.write_atomic(args.junit, report.junit(result))
    return 0


if __name__ == "__main__":
    code = main()
    phases.write()  # where the time went, for the benchmark (LUMEN_PHASES)
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is written and the worker is gone: skip the interpreter's teardown of torch
    # and pytest (~0.4 s of a ~3 s grade).
    os._exit(code)
