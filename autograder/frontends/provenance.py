"""Which grader made a record kept between runs: the digests of its code and of its rubric.

A front end that keeps grades between runs reuses one only if the grader that made it is the
grader running now: ``grade-batch`` resumes past a learner whose grade.json says so
(``Grade.made_by``), ``merge-shards`` merges only shards whose manifests say so, and ``nbgrade``
folds it into each learner's fingerprint. One function for all three, so a change to any file
a grade reads is a new grader everywhere at once.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .. import ROOT
from ..rubric import RUBRIC
from .gradescope import files

#: Where the records are written, which the grading image (``gradescope.files``) does not ship.
WRITERS = ("autograder/frontends/batch.py", "autograder/frontends/classbook.py")


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
