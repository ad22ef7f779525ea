"""The class book: who is in the class, and the class files rebuilt from their records.

``discover`` finds the learners of a submissions folder (one folder or .zip each);
``collect`` reads each learner's record back (``grades/<learner>/grade.json``, a ``Grade``, or
why they have none) into a row; ``write_class_files`` renders grades.csv, the summary
(``summary.py``) and the gradebook exports from those rows. A single ``grade-batch`` ends with
it, and ``merge-shards`` calls it on the shards' records, so both write the same bytes for the
same records.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from lumen.stages import STAGE_NAMES

from ..results import Grade
from ..views.escape import csv_number, csv_text
from ..views.report import mistakes, seconds, total, write_atomic
from .exports import DEFAULT_ASSIGNMENT, write_exports
from .summary import HISTOGRAM, SUMMARY, write_summary

#: A learner's files in the class's folder: the record (their ``Grade``), Gradescope's view of
#: it (to upload), the report they read, and why the grader failed on them (retried next run).
GRADE, RESULTS, FEEDBACK, ERROR = "grade.json", "results.json", "feedback.txt", "error.txt"


@dataclass
class Learner:
    """One entry of the submissions folder."""

    id: str
    path: Path
    problem: str | None = None  # why it cannot be graded at all (a reserved name)
    set_aside: tuple[str, ...] = ()  # entries of the same name not graded (SAME_NAME's rule)


#: Two entries for one learner (``bob/`` and ``bob.zip``, or ``bob.zip`` and ``bob.ZIP``): the
#: folder is graded (what the platform or the instructor unpacked), else the first archive by
#: name; the others are set aside and named to the instructor, and the learner is graded.
SAME_NAME = ("graded {graded}; set aside {others} (one learner, two entries: a folder is "
             "graded before an archive; remove or rename the other to grade it instead)")


def default_out_dir(out: Path) -> Path:
    """The per-learner folder next to the CSV: grades.csv -> grades/."""
    if not out.suffix:
        raise ValueError(f"--out {out}: give the CSV a suffix (grades.csv), its folder takes "
                         "the name without it")
    return out.with_suffix("")


def discover(submissions: Path, skip: tuple[Path, ...] = ()) -> tuple[list[Learner], list[str]]:
    """The learners in ``submissions`` (sorted by id) and the entries that are not one."""
    found: dict[str, list[Path]] = defaultdict(list)
    ignored = []
    skip_resolved = {p.resolve() for p in skip}
    for entry in sorted(submissions.iterdir()):
        if entry.name.startswith((".", "__MACOSX")) or entry.resolve() in skip_resolved:
            continue
        if entry.is_dir():
            found[entry.name].append(entry)
        elif entry.is_file() and entry.suffix.lower() == ".zip":
            found[entry.name[: -len(".zip")]].append(entry)
        else:
            ignored.append(entry.name)
    learners = []
    for learner, paths in sorted(found.items()):
        problem = None
        paths.sort(key=lambda p: (not p.is_dir(), p.name))  # the folder first (SAME_NAME)
        if learner in (SUMMARY, HISTOGRAM):
            problem = f"a learner may not be called {learner!r} (the summary's name): rename it"
        learners.append(Learner(learner, paths[0], problem, tuple(p.name for p in paths[1:])))
    return learners, ignored


def write_class_files(learners: list[Learner], out: Path, out_dir: Path,
                      failures: dict[str, str], exports: list[str] | None, roster,
                      assignment: str | None, progress) -> tuple[list[dict], bool]:
    """grades.csv, summary.md, the histogram and the gradebook files, all rendered from the
    per-learner records: a single run ends with this, and ``merge-shards`` calls it on the
    shards' records, so both write the same bytes for the same records. Returns the rows and
    whether the gradebook files could be written."""
    rows = collect(learners, out_dir, failures)
    write_csv(out, rows)
    write_summary(out_dir, rows)
    print(f"wrote {out}, {out_dir / SUMMARY}", file=progress)
    return rows, _write_exports(out, rows, exports, roster, assignment, progress)


def _write_exports(out: Path, rows: list[dict], formats: list[str] | None, roster,
                   assignment: str | None, progress) -> bool:
    """The gradebook files (``autograder/frontends/exports.py``), and who is not in them and why;
    False if they could not be written."""
    if not formats:
        return True

    try:
        written, messages = write_exports(out, rows, roster, formats,
                                          assignment or DEFAULT_ASSIGNMENT)
    except OSError as error:
        print(f"error: the gradebook files could not be written ({error})", file=progress)
        return False
    print(f"wrote {', '.join(str(p) for p in written)}", file=progress)
    for message in messages:
        print(f"note: {message}", file=progress)
    return True


def read_grade(folder: Path) -> Grade:
    """The learner's record in ``folder``: OSError if there is none, ValueError (RecordError)
    if it is not one this grader writes."""
    return Grade.from_json(json.loads((folder / GRADE).read_text(encoding="utf-8")))


#: Where a learner stands when a batch starts (``standing``).
KEPT = "kept"  # a record this grader made from the files they have now: kept
CHANGED = "changed"  # a record this grader made, from other files (or options): graded again
UNGRADED = "ungraded"  # no record this grader made (none, another grader's, unreadable)


def standing(folder: Path, made_by: dict[str, str], graded_from: str | None) -> str:
    """Whether the record in ``folder`` is to be kept when a batch resumes: KEPT if the grader
    ``made_by`` (``provenance.versions``) made it from ``graded_from``
    (``provenance.fingerprint``: the learner's files as they are now, under this run's
    options); CHANGED if that grader made it from other files or options; UNGRADED if there
    is none it made (none, another grader's or rubric's, an older record version, a file that
    cannot be read). ``graded_from`` None (the files could not be read): never KEPT."""
    try:
        grade = read_grade(folder)
    except (OSError, ValueError):
        return UNGRADED
    if grade.made_by != made_by:
        return UNGRADED
    return KEPT if graded_from is not None and grade.graded_from == graded_from else CHANGED


def collect(learners: list[Learner], out_dir: Path,
            failures: dict[str, str] | None = None) -> list[dict]:
    """A row per learner from its record, grade.json (or error.txt, or ``failures``: learners
    whose files this run could not write): the CSV's and summary's data."""
    rows = []
    for learner in learners:
        folder = out_dir / learner.id
        row = {"learner": learner.id, "total": None, "stages": {}, "seconds": None,
               "notes": [], "mistakes": [], "max": {}}
        if learner.id in (failures or {}):
            row["notes"] = [f"not graded: {failures[learner.id]}"]
            rows.append(row)
            continue
        try:
            row.update(graded_row(read_grade(folder)))
        except FileNotFoundError:
            try:
                error = (folder / ERROR).read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                error = "not graded yet"
            row["notes"] = [f"not graded: {error}"]
        except Exception as error:  # noqa: BLE001 - unreadable, or not what the batch writes
            row["notes"] = [f"not graded: its {GRADE} is unreadable "
                            f"({type(error).__name__}: {error}); use --force"]
        rows.append(row)
    return rows


def graded_row(grade: Grade) -> dict:
    """A graded learner's row from their ``Grade`` (its stages are those graded)."""
    return {"total": total(grade),
            "stages": {s.name: s.score for s in grade.stages},
            "max": {s.name: s.max_score for s in grade.stages},
            "seconds": seconds(grade), "notes": list(grade.notes),
            "mistakes": mistakes(grade), "sandbox": grade.sandbox,
            "operator_notes": list(grade.operator_notes)}


def write_csv(out: Path, rows: list[dict]) -> None:
    """grades.csv: the learner id and the notes are learner-derived text (``csv_text``), the
    scores and seconds the grader's numbers (``csv_number``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["learner", "total", *STAGE_NAMES, "seconds", "notes"])
    for row in rows:
        writer.writerow([csv_text(row["learner"]), csv_number(row["total"]),
                         *(csv_number(row["stages"].get(s)) for s in STAGE_NAMES),
                         csv_number(row["seconds"]), csv_text("; ".join(row["notes"]))])
    write_atomic(out, buffer.getvalue())
