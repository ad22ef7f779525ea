"""Step 2 of nbgrade: who the learners are, and their files and submission time in submitted/.

SUBMISSIONS holds one folder per learner, named by its student id (``STUDENT_ID_RULE``):
either the learner's own files, or the layout ``nbgrader collect`` and ``zip_collect`` write,
``submitted/<student>/embedding_layer/``. Only in that layout is a ``timestamp.txt``
nbgrader's: it is carried into the course, so nbgrader's own late penalty applies. In a folder
of a learner's own files it is the learner's, and is not read (``OWN_TIMESTAMP``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from nbgrader.utils import parse_utc

from lumen.stages import SUBMISSION_FILES

from ..boundary.clean import clean_text
from ..boundary.intake import Unusable, read_regular
from .nbgrade_course import ASSIGNMENT, CONFIG, NOTEBOOK, NbgradeError

STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}")
#: ``STUDENT_ID`` in words, for the learner folder it refuses and docs/nbgrader.md: nbgrader
#: puts the id in folder names, glob patterns and comma-separated lists of students
#: (--student_id_exclude).
STUDENT_ID_RULE = ("1 to 100 ASCII letters, digits and the characters _ . @ + -, the first a "
                   "letter or digit")
TIMESTAMP = "timestamp.txt"  # nbgrader's record of when a submission was made


#: A learner's own files, any of which makes a folder a learner's (the first layout).
LEARNER_FILES = (NOTEBOOK, *SUBMISSION_FILES)
LAYOUTS = (f"a folder per learner holding {', '.join(LEARNER_FILES)}; or nbgrader collect's and "
           f"zip_collect's submitted/<student>/{ASSIGNMENT}/ (pass that submitted/ folder)")


def learner_folders(submissions: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """Student id -> the folder holding that learner's files, and the entries that cannot be
    graded, each with why. An entry is a learner's when it holds their files (a folder per
    learner) or a ``embedding_layer/`` folder (nbgrader collect's and zip_collect's
    ``submitted/<student>/embedding_layer/``); anything else is named, with the layouts taken.
    Raises ``NbgradeError`` for a SUBMISSIONS that is one learner's folder or a course's."""
    if any((submissions / name).is_file() for name in LEARNER_FILES):
        raise NbgradeError(f"{submissions} holds a learner's files itself: SUBMISSIONS is the "
                           f"folder of learners' folders ({LAYOUTS})")
    if (submissions / "submitted").is_dir() and (submissions / CONFIG).is_file():
        raise NbgradeError(f"{submissions} is an nbgrader course folder: pass its submitted/ "
                           f"folder ({submissions / 'submitted'}) as SUBMISSIONS")
    learners, problems = {}, {}
    for entry in sorted(submissions.iterdir()):
        if entry.name.startswith((".", "__MACOSX")):
            continue
        if not entry.is_dir() or entry.is_symlink():
            problems[entry.name] = ("nbgrader takes a folder per learner (as nbgrader collect "
                                    "makes them; an archive goes through nbgrader zip_collect "
                                    "first): unpack it into a folder")
        elif not STUDENT_ID.fullmatch(entry.name):
            problems[entry.name] = (f"the folder's name is the learner's student id in "
                                    f"nbgrader, and a student id is {STUDENT_ID_RULE}: rename "
                                    "the folder (a rerun grades it)")
        elif (entry / ASSIGNMENT).is_dir() and not (entry / ASSIGNMENT).is_symlink():
            learners[entry.name] = entry / ASSIGNMENT
        elif any(os.path.lexists(entry / name) for name in LEARNER_FILES) or any(
                p.suffix == ".ipynb" for p in entry.iterdir()):
            learners[entry.name] = entry
        else:
            problems[entry.name] = (f"holds neither a learner's files nor {ASSIGNMENT}/: "
                                    f"SUBMISSIONS takes {LAYOUTS}")
    return learners, problems


#: A timestamp.txt among a learner's own files: theirs to write, so never a submission time.
OWN_TIMESTAMP = (f"{TIMESTAMP} among your own files was not read: a submission time comes from "
                 "the platform (nbgrader collect or zip_collect, which write submitted/<student>/"
                 f"{ASSIGNMENT}/), never from a file the learner writes; a folder of a learner's "
                 "files has none, so whether it was late was not decided")


def submission_time(submissions: Path, learner: str, folder: Path, target: Path) -> str | None:
    """Carry nbgrader's record of when ``learner`` submitted into ``target``, where there is one:
    in collect's layout (``submitted/<student>/embedding_layer/timestamp.txt``, written by
    nbgrader). A folder of the learner's own files has none: a ``timestamp.txt`` there is the
    learner's (a late learner could write an early date), so it is not read, and they are told."""
    if folder == submissions / learner / ASSIGNMENT:
        return carry_timestamp(folder, target)
    return OWN_TIMESTAMP if os.path.lexists(folder / TIMESTAMP) else None


def carry_timestamp(source: Path, target: Path) -> str | None:
    """Copy the submission's ``timestamp.txt`` (nbgrader's) from ``source`` into ``target``,
    rewritten as the date nbgrader reads from it, so that nbgrader autograde records when it
    was submitted (and any late penalty). A note when it is there but not a date: then none is
    carried (nbgrader would stop the whole class on it) and no lateness is decided."""

    path = source / TIMESTAMP
    if not os.path.lexists(path):
        return None
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 200:
            raise ValueError("not a small regular file")
        when = parse_utc(path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError, OverflowError) as error:
        return (f"{TIMESTAMP} is not a date nbgrader reads ({clean_text(str(error), 100)}): "
                "no submission time recorded, so no late penalty was decided")
    (target / TIMESTAMP).write_text(f"{when.isoformat(' ')}\n", encoding="utf-8")
    return None


def copy_files(learner: Path, target: Path) -> None:
    """Copy one learner's .py files (``SUBMISSION_FILES``) into ``target``: what is graded."""
    target.mkdir(parents=True, exist_ok=True)
    for name in SUBMISSION_FILES:
        found = learner / name
        if not os.path.lexists(found):
            continue  # the grader says it is missing, from the folder itself
        try:
            (target / name).write_bytes(read_regular(found, name))
        except Unusable:
            pass  # likewise: the grader names the problem
