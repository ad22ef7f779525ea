"""PrairieLearn's external grader: ``python -m autograder prairielearn [--root /grade]``.

The question folder and image are built by ``frontends/prairielearn_build.py`` (``make
prairielearn``), kept apart because a grade imports this module and must not import the
builders. PrairieLearn runs the entry point with the student's files in /grade/student and
the question's tests/ in /grade/tests; it must write /grade/results/results.json, and a
missing or unparsable one is recorded as 0 points. So this module first writes one that says
the grader failed (``gradable: false``: no zero, no attempt lost), replaced only by a finished
grade; a submission that cannot be graded is ``gradable: false`` with ``format_errors``.

What the student sees follows the Gradescope front end's visibility (``report.visible_summary``
and ``report.check_output``), of which only ``hidden`` and ``visible`` apply, since
PrairieLearn shows all of results.json at once; its tests always add up to its score. The
settings (``lumen.json``: ``visibility``, ``stages``) are read from ``--tests``. The
PrairieLearn sources this follows are cited in docs/prairielearn.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import threading
from pathlib import Path

from lumen.stages import STAGE_NAMES, SUBMISSION_FILES

from ..boundary.intake import prepare, syntax_notes
from ..grading import Grader, GraderError
from ..options import WHERE, Options, add_arguments
from ..results import Grade
from ..rubric import RubricError
from ..views import report
from ..views.escape import terminal
from ..views.report import write_atomic, write_json

SETTINGS = "lumen.json"  # in the question's tests/ folder: the grader's settings for it
#: Of Gradescope's visibilities (``options.VISIBILITIES``), those PrairieLearn can keep:
#: it shows results.json at once, so there is no "later".
VISIBILITIES = ("hidden", "visible")
DEFAULT_VISIBILITY = "hidden"
DEFAULT_ROOT = Path("/grade")
TIME_LIMIT = 540  # our own deadline, under info.json's timeout (PrairieLearn allows 600)
MAX_RESULTS = 1_000_000  # PrairieLearn's limit on results.json, in bytes
#: What a student reads when the grader failed on its side: no internals, no verdict.
GRADER_FAILED = ("Your submission could not be graded: the autograder failed on its side. "
                 "This is not a verdict on your code and costs you no attempt; your "
                 "instructor can see what went wrong and will regrade it.")


class SettingsError(ValueError):
    """lumen.json cannot be used; the message names the problem and the fix."""


def failed() -> dict:
    """results.json until a grade replaces it: the grader failed, not the student."""
    return {"gradable": False, "format_errors": [GRADER_FAILED], "message": GRADER_FAILED}


def load_settings(folder: Path | None) -> dict:
    """The question's settings (``lumen.json``), checked; defaults without the file."""
    settings = {"visibility": DEFAULT_VISIBILITY, "stages": None}
    if folder is None or not (folder / SETTINGS).is_file():
        return settings
    try:
        given = json.loads((folder / SETTINGS).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SettingsError(f"{folder / SETTINGS} cannot be read ({error}): regenerate it with "
                            "make prairielearn") from None
    unknown = sorted(set(given) - set(settings)) if isinstance(given, dict) else ["(not a dict)"]
    if unknown:
        raise SettingsError(f"{folder / SETTINGS}: unknown setting(s) {', '.join(unknown)}; "
                            f"the settings are {', '.join(settings)}")
    settings.update(given)
    if settings["visibility"] not in VISIBILITIES:
        raise SettingsError(f"{folder / SETTINGS}: visibility must be one of "
                            f"{', '.join(VISIBILITIES)}, not {settings['visibility']!r}")
    stages = settings["stages"]
    if stages is not None and (not isinstance(stages, list)
                               or not all(s in STAGE_NAMES for s in stages)):
        raise SettingsError(f"{folder / SETTINGS}: stages must be null (all) or a list of "
                            f"{', '.join(STAGE_NAMES)}")
    return settings


def format_errors(student: Path) -> list[str]:
    """Why the submission in ``student`` cannot be graded at all; empty if it can."""

    if not student.is_dir():
        return [f"no files were submitted: submit {', '.join(SUBMISSION_FILES)}"]
    prepared = prepare(student)
    problems = [terminal(why) for name, why in sorted(prepared.problems.items())]
    return problems + [terminal(note) for note in syntax_notes(prepared.files)]


def to_prairielearn(g: Grade, visibility: str) -> dict:
    """PrairieLearn's results.json, a view of the grade ``g``: what a student may see is what
    the Gradescope view makes visible under ``visibility`` (``report.visible_summary``, and
    each check only when ``visible``), nothing more."""

    if visibility == "visible":  # a test per check: its title, message and printed output
        tests = [{"name": report.check_name(s, r), "points": points, "max_points": most,
                  "message": "passed" if r.passed else "failed",
                  "output": report.check_output(r)}
                 for s in g.stages for r, points, most in s.tests]
    else:  # a test per stage: its score, as the visible summary shows it
        tests = [{"name": s.name, "points": s.score, "max_points": s.max_score,
                  "message": "not implemented yet" if s.unwritten else "", "output": ""}
                 for s in g.stages]
    score = min(max(report.total(g) / g.max_score, 0.0), 1.0) if g.max_score else 0.0
    data = {"gradable": True, "score": round(score, 6),
            "message": f"Total: {g.score:g} / {g.max_score:g}",
            "output": report.visible_summary(g, visibility), "tests": tests}
    if len(json.dumps(data)) > MAX_RESULTS:  # never over PrairieLearn's limit: cut outputs
        for test in tests:
            test["output"] = test["output"][:2000]
    return data


def _watchdog(seconds: float) -> None:
    """End the process at ``seconds``: the results.json already written says the grader
    failed, which beats PrairieLearn's own timeout (a failed job)."""
    def expire() -> None:
        print(f"lumen autograder: no grade: grading took longer than {seconds:g} s",
              flush=True)
        os._exit(2)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT,
                        help="PrairieLearn's /grade (default): student/ in, results/ out")
    parser.add_argument("--tests", type=Path,
                        help=f"where the question's {SETTINGS} is (default ROOT/tests)")
    add_arguments(parser, WHERE)  # the question's lumen.json says the rest
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                        help=f"seconds before giving up, results.json saying the grader "
                             f"failed (default {TIME_LIMIT}; under info.json's timeout)")


def run(args: argparse.Namespace, options: Options) -> int:
    """Grade ``args.root``/student into ``args.root``/results/results.json under ``options``
    (the command line's; the question's lumen.json sets the stages and the visibility). Exit
    status 0 when the student got a verdict (a grade, or gradable: false for their files), 2
    when the grader failed (results.json then says so, and no score)."""
    results = args.root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    write_json(results, failed())  # first: whatever happens next, never a zero
    _watchdog(args.time_limit)
    try:
        settings = load_settings(args.tests or args.root / "tests")
    except SettingsError as error:
        print(f"lumen autograder: no grade: {error}")
        return 2
    problems = format_errors(args.root / "student")
    if problems:
        print("lumen autograder: not gradable:\n" + "\n".join(problems))
        write_json(results, {"gradable": False, "format_errors": problems,
                             "message": "Your submission could not be graded: "
                                        + "; ".join(problems)})
        return 0

    try:
        options = dataclasses.replace(options, stages=settings["stages"],
                                      visibility=settings["visibility"])
        with Grader(options) as grader:
            for note in grader.operator_notes():
                print(f"note: {note}")  # stdout: the job's log, for the course staff
            result = grader.grade(args.root / "student")

        print(report.terminal(result), end="")
        text = json.dumps(to_prairielearn(result, options.visibility), allow_nan=False,
                          indent=2)
    except (GraderError, RubricError, OSError, ValueError) as error:
        print(f"lumen autograder: no grade: the grader failed: {type(error).__name__}: {error}")
        return 2
    write_atomic(results, text + "\n")
    return 0
