"""Scores and reports: Gradescope's results.json, the terminal report, JUnit XML.

All three are views of one ``Grade`` (autograder/results.py), computed once from the verdicts
and the rubric. Text from learner code arrives cleaned (``boundary/clean.clean_reply``); the writers
still never raise on any string: a lone surrogate is replaced, and JUnit drops what XML 1.0
cannot hold. The terminal report passes every learner-derived string (the submission's name,
messages, printed output, notes on the files) through ``escape.terminal`` once more, so text
that reached a ``Grade`` some other way cannot be live there either; results.json is JSON
(``json.dumps`` escapes) and JUnit is XML (ElementTree escapes).
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path, PurePath
from xml.etree import ElementTree

from lumen.stages import stage

from ..boundary.clean import encodable
from ..mistakes import (
    CRASHED,
    IMPORT_FAILED,
    MISSING_FILE,
    MISTAKE,
    NOT_RUN,
    TIMED_OUT,
    UNUSABLE_FILE,
)
from ..options import DEFAULT_VISIBILITY
from ..results import Grade, StageGrade, TestResult
from ..words import counted
from .escape import terminal as shown

#: What XML 1.0 cannot hold, even escaped: C0 controls but tab, newline and CR; surrogates;
#: U+FFFE and U+FFFF.
XML_FORBIDDEN = re.compile(r"[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def stage_line(s: StageGrade) -> str:
    passed = sum(1 for r, _, _ in s.tests if r.passed)
    if passed == len(s.tests):
        status = "all checks passed"
    elif s.not_implemented:
        status = "not implemented yet"
    else:
        status = f"{passed} of {counted(len(s.tests), 'check')} passed"
    return f"  {s.name:<11}{s.score:>6.1f} / {s.max_score:<5g} {status}"


#: How specific each kind of failure's message is, most first: a diagnosed mistake names its
#: cause; a crash, a timeout or a failed import only says that the code did not finish.
SPECIFIC = (MISTAKE, CRASHED, TIMED_OUT, IMPORT_FAILED, UNUSABLE_FILE, MISSING_FILE, NOT_RUN)


def failures(s: StageGrade) -> list[TestResult]:
    """Every failing check of stage ``s``, the most specific diagnosis first (``SPECIFIC``),
    then in the suite's order."""
    failed = [r for r, _, _ in s.tests if not r.passed]
    return sorted(failed, key=lambda r: SPECIFIC.index(r.kind)
                  if r.kind in SPECIFIC else len(SPECIFIC))


def submission_name(g: Grade) -> str:
    """The submission as its learner knows it: its folder's or zip's name, never the path on
    the grading machine (an instructor's home folder, /autograder/...)."""
    return shown(PurePath(g.submission).name or g.submission, 500)  # the learner's name


def terminal(g: Grade) -> str:
    """The report a learner or instructor reads: the stages, then what to fix first."""
    lines = [f"lumen autograder: {submission_name(g)}",
             f"  seed {g.seed}, devices {', '.join(g.devices)}, {g.seconds:.1f} s", ""]
    lines += [stage_line(s) for s in g.stages]
    lines += [f"  {'total':<11}{g.score:>6.1f} / {g.max_score:g}", ""]
    failing = [s for s in g.stages if s.first_failure is not None and not s.not_implemented]
    if failing:
        lines.append("What to fix first, stage by stage:")
        for s in failing:
            first, *others = failures(s)
            lines.append(f"  {s.name} ({stage(s.name).section}): {shown(first.title)}")
            lines.append(f"    {shown(first.message, keep_lines=True)}")
            if first.output.strip():  # already cleaned and bounded where it came in
                lines.append("    Your code printed:")
                lines += [f"      {line}" for line in
                          shown(first.output.rstrip(), keep_lines=True).splitlines()]
            if others:
                lines.append(f"    Also failing in {s.name} ({len(others)}):")
                lines += [f"      - {shown(r.title)}" for r in others]
        lines.append("")
    if g.not_graded:
        lines.append(f"Not graded in this run (--stage): {', '.join(g.not_graded)}")
    lines += [f"Note: {shown(note)}" for note in g.notes]
    return encodable("\n".join(lines).rstrip() + "\n")  # printable on any UTF-8 terminal


#: When a learner sees the hidden tests' entries, by their Gradescope visibility.
SHOWN = {"hidden": "are shown to your instructor only",
         "after_due_date": "are shown after the due date",
         "after_published": "are shown once the grades are published"}


def visible_summary(g: Grade, visibility: str) -> str:
    """The top-level output of results.json, which Gradescope shows a learner at once: the
    per-stage scores and the notes on the submission's files, never a hidden test's title,
    message or printed output. With ``visible`` tests it is the whole report, which then tells
    nothing the tests' own entries do not."""
    if visibility == "visible":
        return terminal(g)
    lines = [f"lumen autograder: {submission_name(g)}", ""]
    for s in g.stages:
        status = " not implemented yet" if s.unwritten else ""
        lines.append(f"  {s.name:<11}{s.score:>6.1f} / {s.max_score:<5g}{status}".rstrip())
    lines += [f"  {'total':<11}{g.score:>6.1f} / {g.max_score:g}", "",
              f"The checks behind these scores (what each one checks, what went wrong and what "
              f"your code printed) {SHOWN[visibility]}."]
    if g.not_graded:
        lines.append(f"Not graded in this run: {', '.join(g.not_graded)}")
    lines += [f"Note: {shown(note)}" for note in g.notes]  # about the files, not a hidden test
    return encodable("\n".join(lines).rstrip() + "\n")


def gradescope(g: Grade, visibility: str = DEFAULT_VISIBILITY) -> dict:
    """Gradescope's results.json: per-test entries tagged by stage with ``visibility``, a
    top-level output that reveals no more than they do (``visible_summary``), stage totals and
    the diagnosed mistakes (with their ids) in extra_data, which only instructors see."""
    tests = []
    for i, s in enumerate(g.stages, start=1):
        for j, (r, score, max_score) in enumerate(s.tests, start=1):
            entry = {
                "name": check_name(s, r),
                "number": f"{i}.{j}",
                "score": score,
                "max_score": max_score,
                "status": "passed" if r.passed else "failed",
                "output": check_output(r),
                "tags": [s.name],
                "visibility": visibility,
            }
            tests.append(entry)
    return {
        "score": total(g),
        "execution_time": seconds(g),
        # Shown to learners at once, whatever the tests' visibility: so it says no more than
        # the tests do. The whole report goes to stdout, which only instructors see.
        "output": visible_summary(g, visibility),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": extra_data(g),
    }


def check_name(s: StageGrade, r: TestResult) -> str:
    """A hidden check's name where a platform lists the checks: its stage and its title."""
    return f"{s.name}: {r.title}"


def total(g: Grade) -> float:
    """The grade's total as every view and class file shows it (4 decimals: the rubric's
    fractions of a point add up without float noise)."""
    return round(g.score, 4)


def seconds(g: Grade) -> float:
    """How long the grade took, as every view and class file shows it."""
    return round(g.seconds, 2)


def check_output(r: TestResult) -> str:
    """What a hidden check's entry says: its message when it failed, and what the learner's
    code printed (kept only for a failing check)."""
    return (r.message if not r.passed else "") + (
        f"\n\nYour code printed:\n{r.output}" if r.output else "")


def mistakes(g: Grade) -> list[dict]:
    """The diagnosed mistakes of ``g`` (every failing check but a stub's), with their ids and
    kinds (``autograder/mistakes.py``)."""
    return [{"id": r.mistake_id, "kind": r.kind, "stage": s.name, "test": r.name,
             "title": r.title, "message": r.message}
            for s in g.stages for r, _, _ in s.tests if not r.passed and not r.not_implemented]


def learner(g: Grade) -> str:
    """The learner's id: the submission's name, less .zip (grade-batch's learner folder)."""
    name = PurePath(g.submission).name or g.submission
    return name[: -len(".zip")] if name.lower().endswith(".zip") else name


def extra_data(g: Grade) -> dict:
    """results.json's extra_data, which only instructors see, built here once for every
    front end: each graded stage's totals, how the grade was made (seed, devices, sandbox,
    the operator's notes), the diagnosed mistakes, the learner, the notes on their files and
    the stages graded."""
    return {
        "stages": {s.name: {"score": s.score, "max_score": s.max_score,
                            "not_implemented": s.unwritten}
                   for s in g.stages},
        "seed": g.seed,
        "devices": g.devices,
        "sandbox": g.sandbox,
        "operator_notes": g.operator_notes,  # instructors only, as all of extra_data
        "mistakes": mistakes(g),
        "learner": learner(g),
        "notes": g.notes,
        "graded_stages": [s.name for s in g.stages],
    }


def xml_text(text: str) -> str:
    """``text`` without the characters XML 1.0 forbids (ElementTree would write them raw)."""
    return XML_FORBIDDEN.sub("", text)


def junit(g: Grade) -> str:
    """JUnit XML: a test suite per stage, for CI systems that draw them."""
    root = ElementTree.Element("testsuites", name="lumen autograder",
                               tests=str(sum(len(s.tests) for s in g.stages)))
    for s in g.stages:
        suite = ElementTree.SubElement(
            root, "testsuite", name=s.name, tests=str(len(s.tests)),
            failures=str(sum(1 for r, _, _ in s.tests if not r.passed)))
        for r, _, _ in s.tests:
            case = ElementTree.SubElement(suite, "testcase", classname=s.name,
                                          name=xml_text(r.name), time=f"{r.seconds:.3f}")
            if not r.passed:
                message = xml_text(shown(r.message, keep_lines=True))  # escapes visible
                ElementTree.SubElement(case, "failure", message=message[:500]).text = message
    return ElementTree.tostring(root, encoding="unicode")


def _new_temporary(path: Path) -> tuple[int, Path]:
    """A new empty file next to ``path``, for writing it whole, with the permissions a plain
    open() would give ``path`` (0666 less the umask): mkstemp's 0600 would lock the instructor's
    group out of the grades. O_EXCL: never an existing file, nor a link put in its place."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader never sees half a file, even after a kill. The
    file and any folder made for it follow the umask, as a plain write would."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _new_temporary(path)
    try:
        # backslashreplace: a lone surrogate is written as its escape, never an error
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _encodable(value: object) -> object:
    """``value`` with every string in it (keys too) encodable: json.dumps would write a lone
    surrogate as a "\\ud800" escape, which strict JSON readers refuse."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encodable(v) for v in value]
    return value


def write_json(path: Path, data: dict) -> None:
    write_atomic(path, json.dumps(_encodable(data), indent=2) + "\n")
