"""Gradebook files an LMS imports: ``grade-batch --export canvas,moodle,csv --roster roster.csv``.

grades.csv is keyed by submission names; an LMS knows its learners by its own ids. The roster
(a CSV the instructor writes: ``submission`` and the ids each format needs, docs/exports.md)
maps one to the other. Written next to grades.csv, from the same rows (``classbook.collect``):
``grades-canvas.csv`` (Canvas's own gradebook layout), ``grades-moodle.csv`` (an identifier
and the grade, for Moodle's CSV import) and ``grades-roster.csv`` (the roster, the total and
a column per stage).

An LMS matches identifiers and the assignment's header byte for byte, so those are written as
the instructor gave them, and ``check_roster`` refuses one a spreadsheet would run as a
formula; every other text cell is escaped with ``csv_text`` (``views/escape.py``). A learner
is exported only with a grade: one not graded, one in the roster without a submission and a
submission missing from the roster are each listed, never dropped silently.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from lumen.stages import STAGE_NAMES

from ..boundary.clean import MAX_NAME, clean_text
from ..rubric import TOTAL
from ..views.escape import csv_number, csv_text, formula_like
from ..views.report import write_atomic

FORMATS = ("canvas", "moodle", "csv")
DEFAULT_ASSIGNMENT = "The Embedding Layer"
#: Canvas's identity columns, in its export's order, and the roster column for each.
CANVAS_COLUMNS = (("Student", "name"), ("ID", "canvas_id"), ("SIS User ID", "sis_user_id"),
                  ("SIS Login ID", "sis_login_id"), ("Section", "section"))
CANVAS_KEYS = ("canvas_id", "sis_user_id", "sis_login_id")  # what Canvas matches a learner by
#: Moodle's identifiers, first present wins: roster column -> the label of Moodle's user field.
MOODLE_IDS = {"email": "Email address", "username": "Username", "idnumber": "ID number"}


class RosterError(ValueError):
    """The roster cannot be used as it stands; the message names the problem and the fix."""


@dataclass
class Roster:
    path: Path
    columns: list[str]  # normalised names, in the file's order
    rows: dict[str, dict[str, str]]  # submission -> its row

    def moodle_id(self) -> str | None:
        return next((c for c in MOODLE_IDS if c in self.columns), None)


def _column(name: str) -> str:
    """A header as the roster's keys: "SIS User ID" -> "sis_user_id"."""
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def load_roster(path: Path) -> Roster:
    """The roster at ``path``, checked: a header with ``submission``, one row per learner."""
    where = clean_text(str(path), 300)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # Excel writes a byte-order mark
    except FileNotFoundError:
        raise RosterError(f"no roster at {where}: give --roster the CSV that maps submission "
                          "names to learners") from None
    except UnicodeDecodeError:
        raise RosterError(f"{where} is not UTF-8 text: save it as 'CSV UTF-8'") from None
    except OSError as error:
        raise RosterError(f"cannot read {where}: {error}") from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header or not any(h.strip() for h in header):
        raise RosterError(f"{where} is empty: its first line must name the columns, "
                          "submission first (see docs/exports.md)")
    columns = [_column(h) for h in header]
    if "submission" not in columns:
        raise RosterError(f"{where} has no 'submission' column (it has: "
                          f"{', '.join(h for h in header if h.strip()) or 'none'}): add one "
                          "holding each learner's submission folder or zip name")
    repeated = sorted({c for c in columns if c and columns.count(c) > 1})
    if repeated:
        raise RosterError(f"{where} names the column(s) {', '.join(repeated)} more than once: "
                          "keep one of each")
    rows: dict[str, dict[str, str]] = {}
    line_of: dict[str, int] = {}
    problems = []
    for line, values in enumerate(reader, start=2):
        if not any(v.strip() for v in values):
            continue  # a blank line
        if len(values) > len(columns):
            problems.append(f"line {line} has {len(values)} cells but the header {len(columns)}"
                            " (a comma inside a name needs quotes)")
            continue
        row = {c: v.strip() for c, v in zip(columns, values, strict=False) if c}
        submission = row.get("submission", "").removesuffix(".zip")
        if not submission:
            problems.append(f"line {line} has no submission")
        elif submission in rows:
            problems.append(f"lines {line_of[submission]} and {line} both name submission "
                            f"{clean_text(submission, MAX_NAME)!r}")
        else:
            rows[submission], line_of[submission] = row, line
    if problems:
        raise RosterError(f"{where}: " + "; ".join(problems[:10])
                          + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
                          + ": each row needs the submission name of one learner")
    return Roster(Path(path), [c for c in columns if c], rows)


def check_roster(roster: Roster, formats: list[str]) -> None:
    """Every chosen format finds what it needs in ``roster``, for every learner."""
    where = clean_text(str(roster.path), 300)
    has = ", ".join(roster.columns)
    if "canvas" in formats:
        if not any(k in roster.columns for k in CANVAS_KEYS):
            raise RosterError(f"--export canvas: {where} needs a column canvas_id, sis_user_id "
                              f"or sis_login_id (Canvas matches learners by them); it has: {has}")
        blank = [s for s, row in roster.rows.items() if not any(row.get(k) for k in CANVAS_KEYS)]
        if blank:
            raise RosterError(f"--export canvas: {len(blank)} learner(s) of {where} have no "
                              f"canvas_id, sis_user_id or sis_login_id: {_names(blank)}; fill "
                              "them in (Canvas's gradebook export lists them)")
    used = [k for k in CANVAS_KEYS if "canvas" in formats and k in roster.columns]
    if "moodle" in formats and roster.moodle_id():
        used.append(roster.moodle_id())
    formulas = [f"{clean_text(s, MAX_NAME)!r} ({c})" for s, row in roster.rows.items()
                for c in used if formula_like(row.get(c, ""))]
    if formulas:
        raise RosterError(f"{where}: {len(formulas)} identifier(s) start with = + - @ or hold "
                          "a control character, which a spreadsheet would run as a formula: "
                          f"{', '.join(formulas[:10])}; the LMS matches learners by them, so "
                          "they cannot be escaped: correct them in the roster")
    if "moodle" in formats:
        column = roster.moodle_id()
        if column is None:
            raise RosterError(f"--export moodle: {where} needs a column email, username or "
                              f"idnumber (Moodle maps learners by one); it has: {has}")
        blank = [s for s, row in roster.rows.items() if not row.get(column)]
        if blank:
            raise RosterError(f"--export moodle: {len(blank)} learner(s) of {where} have no "
                              f"{column}: {_names(blank)}; fill them in")


def _names(names: list[str], shown: int = 20) -> str:
    text = ", ".join(clean_text(n, MAX_NAME) for n in names[:shown])
    return text + (f" and {len(names) - shown} more" if len(names) > shown else "")


#: The roster columns an LMS matches learners by: written unchanged, and so checked instead.
IDENTIFIERS = (*CANVAS_KEYS, *MOODLE_IDS)


def _cell(person: dict[str, str], column: str) -> str:
    """A roster value for an LMS file: an identifier as it is (``check_roster`` refuses one
    that is a formula; one that got past it anyway is escaped: no match beats a formula), any
    other text escaped."""
    value = person.get(column, "")
    return value if column in IDENTIFIERS and not formula_like(value) else csv_text(value)


def _csv(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def canvas(graded: list[tuple[dict, dict]], assignment: str, points: float = TOTAL) -> str:
    """Canvas's gradebook CSV: the identity columns, the assignment, the Points Possible row."""
    header = [label for label, _ in CANVAS_COLUMNS] + [assignment]
    lines = [header, ["    Points Possible", "", "", "", "", csv_number(points)]]
    for person, row in graded:
        lines.append([_cell(person, key) for _, key in CANVAS_COLUMNS]
                     + [csv_number(row["total"])])
    return _csv(lines)


def moodle(graded: list[tuple[dict, dict]], assignment: str, column: str) -> str:
    """Moodle's CSV grade import: the identifier, then the grade."""
    lines = [[MOODLE_IDS[column], assignment]]
    lines += [[_cell(person, column), csv_number(row["total"])] for person, row in graded]
    return _csv(lines)


def roster_csv(graded: list[tuple[dict, dict]], columns: list[str]) -> str:
    """The roster's columns, then the total and each stage (empty where not graded)."""
    lines = [[*columns, "total", *STAGE_NAMES]]
    for person, row in graded:
        stages = [csv_number(row["stages"][s]) if s in row["stages"] else "" for s in STAGE_NAMES]
        lines.append([csv_text(person.get(c, "")) for c in columns]
                     + [csv_number(row["total"]), *stages])
    return _csv(lines)


def path_for(out: Path, fmt: str) -> Path:
    """Next to grades.csv: grades-canvas.csv, grades-moodle.csv, grades-roster.csv."""
    return out.with_name(f"{out.stem}-{'roster' if fmt == 'csv' else fmt}{out.suffix}")


def write_exports(out: Path, rows: list[dict], roster: Roster, formats: list[str],
                  assignment: str = DEFAULT_ASSIGNMENT) -> tuple[list[Path], list[str]]:
    """Write each format next to ``out`` from the batch's ``rows``; (the files, the messages
    that list every learner not exported and why)."""
    by_id = {row["learner"]: row for row in rows}
    graded = [(person, by_id[s]) for s, person in roster.rows.items()
              if s in by_id and by_id[s]["total"] is not None]
    messages = []
    unlisted = [r["learner"] for r in rows if r["learner"] not in roster.rows]
    if unlisted:
        messages.append(f"{len(unlisted)} submission(s) have no learner in the roster, so no "
                        f"gradebook row: {_names(unlisted)}; add them to the roster (column "
                        "submission) and rerun")
    absent = [s for s in roster.rows if s not in by_id]
    if absent:
        messages.append(f"{len(absent)} learner(s) of the roster have no submission, so no "
                        f"gradebook row (their LMS grade is left as it is): {_names(absent)}")
    ungraded = [s for s in roster.rows if s in by_id and by_id[s]["total"] is None]
    if ungraded:
        messages.append(f"{len(ungraded)} learner(s) are not graded (grades.csv's notes say "
                        f"why), so no gradebook row: {_names(ungraded)}")
    written = []
    for fmt in dict.fromkeys(formats):  # each once, in the order asked
        if fmt == "canvas":
            text = canvas(graded, assignment)
        elif fmt == "moodle":
            text = moodle(graded, assignment, roster.moodle_id())
        elif fmt == "csv":
            text = roster_csv(graded, roster.columns)
        else:
            raise ValueError(f"unknown export {fmt!r}; the formats are {', '.join(FORMATS)}")
        path = path_for(out, fmt)
        write_atomic(path, text)
        written.append(path)
    return written, messages
