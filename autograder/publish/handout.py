"""What a learner receives, as files: ``contents`` (``python -m solutions.handout`` zips it).

The zip holds one folder, ``the-embedding-layer/``, with ``exercises/`` (the stubs, the given
code and the visible tests, exactly as committed: an edited or stale exercises/ is refused,
saying what to run), ``README.md`` (``handout/README.md``: setting up, the visible tests,
exploring, submitting) and ``requirements.txt`` (the learner's share of the pinned environment,
at requirements.txt's versions; torch is installed first, on its own, as the README says).
The Classroom template (autograder/frontends/classroom.py) is the same files. Nothing from
autograder/ (the hidden tests) and nothing from lumen/ (the reference) goes in;
tests/test_handout.py checks that no solution line does either.
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import ROOT
from . import render
from .zips import write_zip

FOLDER = "the-embedding-layer"  # what the learner's unzip creates
README = ROOT / "handout" / "README.md"
GRADER_ONLY = {"nbgrader", "bleach"}  # in requirements.txt for the grader, not for learners

REQUIREMENTS_HEADER = """\
# Install torch first, on its own (the README says how), then: pip install -r requirements.txt
# The same versions the grader uses.
"""


class HandoutError(Exception):
    """The handout cannot be built as it stands; the message says what to do."""


def requirement_lines(path: Path) -> list[str]:
    """The lines of the requirements file ``path``, each ``-r FILE`` replaced by FILE's own
    (relative to ``path``'s folder, as pip reads it)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        included = re.fullmatch(r"\s*-r\s+(\S+)\s*(#.*)?", line)
        lines += requirement_lines(path.parent / included[1]) if included else [line]
    return lines


def requirements(root: Path = ROOT) -> str:
    """requirements.txt's pins (those it includes too), minus torch (installed first) and the
    grader-only packages."""
    lines = [REQUIREMENTS_HEADER]
    for line in requirement_lines(root / "requirements.txt"):
        name = re.split(r"[=<>!~ \[#]", line.strip(), maxsplit=1)[0].lower()
        if name and name not in GRADER_ONLY and name != "torch":
            lines.append(line + "\n")
    return "".join(lines)


def exercise_files(exercises: Path = render.EXERCISES) -> list[Path]:
    """Every file of exercises/ a learner gets, relative to it (no caches, no hidden files)."""
    return sorted(
        path.relative_to(exercises)
        for path in exercises.rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and not any(part.startswith(".") for part in path.relative_to(exercises).parts)
        and path.suffix not in (".pyc", ".pyo")
    )


def contents(root: Path = ROOT) -> dict[str, bytes]:
    """Every file of the handout: its path in the zip and its bytes."""
    exercises = root / "exercises"
    edited = render.edited(exercises) if exercises.resolve() == render.EXERCISES else []
    if edited:
        raise HandoutError(render.edits_refusal(
            edited, exercises, why="the handout is the release as generated") +
            "; then `make handout`")
    stale = render.stale(exercises)
    if stale:
        raise HandoutError(f"exercises/ is stale ({', '.join(p.as_posix() for p in stale)}): "
                           "run `make release` first")
    files = {f"{FOLDER}/README.md": README.read_bytes(),
             f"{FOLDER}/requirements.txt": requirements(root).encode()}
    for path in exercise_files(exercises):
        files[f"{FOLDER}/exercises/{path.as_posix()}"] = (exercises / path).read_bytes()
    return files


def build(out: Path, root: Path = ROOT) -> Path:
    """Write the handout zip to ``out``; returns ``out``."""
    return write_zip(out, ((name, data, False) for name, data in sorted(contents(root).items())))
