"""The class book: who is in the class, and the class files rebuilt from their records.

``discover`` finds the learners of a submissions folder (one folder or .zip each);
``collect`` reads each learner's record back (``grades/<learner>/results.json``, or why they
have none) into a row; ``write_class_files`` renders grades.csv, the summary
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

from ..mistakes import EVERY_KIND
from ..views.escape import csv_number, csv_text
from ..views.report import write_atomic
from .summary import HISTOGRAM, SUMMARY, write_summary

#: A learner's files in the class's folder: the record, the report they read, and why the
#: grader failed on them (retried next run).
RESULTS, FEEDBACK, ERROR = "results.json", "feedback.txt", "error.txt"


@dataclass
class Learner:
    """One entry of the submissions folder."""

    id: str
    path: Path
    problem: str | None = None  # why it cannot be graded at all (a name clash)


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
        if len(paths) > 1:
            problem = f"both {' and '.join(p.name for p in paths)}: keep only one"
        elif learner in (SUMMARY, HISTOGRAM):
            problem = f"a learner may not be called {learner!r} (the summary's name): rename it"
        learners.append(Learner(learner, paths[0], problem))
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
    from .exports import DEFAULT_ASSIGNMENT, write_exports

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


def collect(learners: list[Learner], out_dir: Path,
            failures: dict[str, str] | None = None) -> list[dict]:
    """A row per learner from its results.json (or error.txt, or ``failures``: learners whose
    files this run could not write): the CSV's and summary's data."""
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
            data = json.loads((folder / RESULTS).read_text(encoding="utf-8"))
            row.update(_graded_row(data))
        except FileNotFoundError:
            try:
                error = (folder / ERROR).read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                error = "not graded yet"
            row["notes"] = [f"not graded: {error}"]
        except Exception as error:  # noqa: BLE001 - unreadable, or not what the batch writes
            row["notes"] = [f"not graded: its {RESULTS} is unreadable "
                            f"({type(error).__name__}: {error}); use --force"]
        rows.append(row)
    return rows


def _graded_row(data: dict) -> dict:
    """The row's fields from a results.json; raises if it is not one the batch wrote."""
    extra = data.get("extra_data", {})
    graded = extra.get("graded_stages") or STAGE_NAMES  # --stage: only those count
    stages = {s: v for s, v in extra.get("stages", {}).items() if s in graded}
    mistakes = [m for m in extra.get("mistakes", []) if m["stage"] in graded]
    if not all(m["stage"] in STAGE_NAMES and isinstance(m["test"], str)
               and isinstance(m["message"], str) and m.get("kind") in EVERY_KIND
               for m in mistakes):
        raise ValueError("a mistake without a stage, test, message and kind")
    return {"total": float(data["score"]),
            "stages": {s: float(v["score"]) for s, v in stages.items()},
            "max": {s: float(v["max_score"]) for s, v in stages.items()},
            "seconds": None if data.get("execution_time") is None
            else float(data["execution_time"]),
            "notes": [str(note) for note in extra.get("notes", [])],
            "mistakes": mistakes, "sandbox": str(extra.get("sandbox", "")),
            "operator_notes": [str(n) for n in extra.get("operator_notes", [])]}


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
