"""What a record kept between runs was made by and from: the grader (the digests of its code
and of its rubric) and the learner's files.

A front end that keeps grades between runs reuses one only if the grader that made it is the
grader running now: ``grade-batch`` resumes past a learner whose grade.json says so
(``Grade.made_by``), ``merge-shards`` merges only shards whose manifests say so, and ``nbgrade``
folds it into each learner's fingerprint. One function for all three, so a change to any file
a grade reads is a new grader everywhere at once.

And only if it was graded from the files the learner has now: ``fingerprint`` digests what
the grader reads of a submission (``intake.prepare``: the files, by content, wherever they sit
in the folder or zip), with the grader and its settings. ``grade-batch`` keeps it in each
record (``Grade.graded_from``) and ``nbgrade`` next to it, so a rerun of either regrades exactly
the learners whose files changed.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from lumen.stages import SUBMISSION_FILES

from .. import ROOT
from ..boundary.intake import prepare
from ..options import Options
from ..rubric import RUBRIC
from .gradescope import files

#: Where the records are made and written, which the grading image (``gradescope.files``) does
#: not ship: the batch, its grading processes, its recording and the class book.
WRITERS = ("autograder/frontends/batch.py", "autograder/frontends/batch_server.py",
           "autograder/frontends/batch_records.py", "autograder/frontends/classbook.py")


def _digest_files(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.as_posix().encode() + b"\0" + (ROOT / path).read_bytes() + b"\0")
    return h.hexdigest()


def versions() -> dict[str, str]:
    """``{"grader": ..., "rubric": ...}``: SHA-256 digests of every file a grade reads (the
    Gradescope zip's, ``gradescope.files``, one list) and the record's writers, less the
    rubric; and of the rubric, named on its own so a message can say which changed. Taken
    when a run starts: the code it loads then is the code that grades (an edit while it runs
    must not pass for what graded)."""

    code = [p for p in files(ROOT) if p.name != "rubric.toml"] + [Path(p) for p in WRITERS]
    return {"grader": _digest_files(sorted(set(code))),
            "rubric": hashlib.sha256(RUBRIC.read_bytes()).hexdigest()}


def digest(made_by: dict[str, str]) -> str:
    """``versions()`` as one hex digest, for a fingerprint."""
    return hashlib.sha256(f"{made_by['grader']}\0{made_by['rubric']}".encode()).hexdigest()


@functools.cache
def grader_version() -> str:
    """A digest of the grader that grades (``versions``: every file a grade reads and
    grade-batch, which writes each record): a change to any of them is a new grader, whose
    grades are new. Taken once per process, as ``versions`` is when a run starts."""

    return digest(versions())


def settings_of(options: Options) -> str:
    """The ``options`` a grade was made under, as ``fingerprint`` takes them."""
    return json.dumps(options.to_json(), sort_keys=True)


def fingerprint(submission: Path, settings: str) -> str:
    """What one learner's grade depends on: the files the grader reads of ``submission`` (a
    folder or a .zip, read as ``intake.prepare`` reads it for grading: by content, so a file
    saved again unchanged is the same), the grader's version and its ``settings`` (the options
    as JSON). A file that is missing, or there but unusable, counts as what the grader makes
    of it."""

    prepared = prepare(submission)
    h = hashlib.sha256(f"{grader_version()}\0{settings}\0".encode())
    for name in SUBMISSION_FILES:
        text = prepared.files.get(name)
        h.update(name.encode() + (b"\1" + text.encode("utf-8", "surrogatepass")
                                  if text is not None else b"\2"))
    for note in prepared.notes:  # what was left out of a zip, say: part of the feedback
        h.update(b"\3" + note.replace(str(submission), Path(submission).name).encode(
            "utf-8", "surrogatepass"))
    return h.hexdigest()
