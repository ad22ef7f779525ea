"""The lab notebook: nbgrader's own ``generate_assignment`` turns the course source,
solutions/course/, into the learner's ``exercises/lab.ipynb``.

The course source is nbgrader's configuration and the instructor's notebook,
``source/embedding_layer/lab.ipynb``, with the written answers' mark schemes between nbgrader's
solution markers. The points of its graded cells come from autograder/rubric.toml: one check
cell per stage (``stage_<name>``) and the written answers (``[written]``); ``with_points``
writes them into a notebook (cell metadata and the "N points" of its text), after adding the
cells of a stage it lacks (``with_stage_cells``), and ``check_points`` refuses one that
disagrees. The released text depends only on the source notebook, the
configuration and the rubric, so it is made once per process (nbgrader takes ~10 s).
docs/nbgrader.md says how course staff edit the notebook.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from autograder.rubric import RUBRIC
from autograder.rubric import load as load_rubric
from autograder.words import counted
from lumen.stages import STAGE_NAMES, STAGES

from . import SKELETON

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "solutions" / "course"
CONFIG = "nbgrader_config.py"
ASSIGNMENT = "embedding_layer"  # a Python identifier: the learner's folder is their package
COURSE_ID = "embedding-layer"  # as nbgrader_config.py names it
NOTEBOOK = "lab.ipynb"
SOURCE = COURSE / "source" / ASSIGNMENT / NOTEBOOK
NBGRADER_SECONDS = 300


class NotebookError(Exception):
    """The lab's source notebook, or nbgrader on it, went wrong; the message says where."""


def grade_id(stage: str) -> str:
    """The nbgrader grade_id of a stage's check cell."""
    return f"stage_{stage}"


def nbgrader_cells(nb: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    """The notebook's nbgrader cells by grade_id."""
    cells = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader")
        if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str):
            cells[meta["grade_id"]] = cell
    return cells


#: "20 points" in a graded cell's text (a stage's check cell) or its question's
#: (``<grade_id>_question``): the release rewrites the first one with rubric.toml's points.
POINTS_TEXT = re.compile(r"\b\d+(?:\.\d+)? points?\b")
FIX = ("edit autograder/rubric.toml for the points, or the notebook's cells (nbgrader's "
       "Create Assignment toolbar) for the cells, then run `make release`")


def wanted_points() -> dict[str, float]:
    """rubric.toml's points by grade_id: a check cell per stage, then the written answers."""
    rubric = load_rubric()
    return {grade_id(s): rubric.stage_max(s) for s in STAGE_NAMES} | rubric.written


def _structure_problems(nb: nbformat.NotebookNode) -> list[str]:
    wanted = wanted_points()
    cells = nbgrader_cells(nb)
    graded = {gid for gid, cell in cells.items() if cell.metadata["nbgrader"].get("grade")}
    problems = [f"{gid}: no graded cell for it" for gid in wanted if gid not in graded]
    problems += [f"{gid}: a graded cell that rubric.toml does not list"
                 for gid in sorted(graded - set(wanted))]
    for stage in STAGE_NAMES:
        cell = cells.get(grade_id(stage))
        if cell is not None and (cell.cell_type != "code" or f'check("{stage}")' not in cell.source
                                 or cell.metadata["nbgrader"].get("solution")):
            problems.append(f"{grade_id(stage)}: a locked code cell that runs check({stage!r})")
    return problems


def _locked(grade_id: str, grade: bool) -> dict:
    return {"nbgrader": {"grade": grade, "grade_id": grade_id, "locked": True,
                         "schema_version": 3, "solution": False, "task": False}}


def with_stage_cells(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` with the cells of every stage in lumen/stages.py that it lacks: its
    locked introduction, which says SKELETON until course staff write it, and its check cell,
    a copy of a neighbouring stage's that runs ``check(<stage>)``. They go before the next
    stage's introduction (at the end for the last stage), so the notebook keeps the stages'
    order."""
    nb = copy.deepcopy(nb)
    for number, stage in enumerate(STAGES, start=1):
        cells = nbgrader_cells(nb)
        if grade_id(stage.name) in cells:
            continue
        model = next((cells[grade_id(s)] for s in STAGE_NAMES if grade_id(s) in cells), None)
        if model is None:
            raise NotebookError(f"{SOURCE.relative_to(ROOT)} has no stage's check cell to copy "
                                f"for stage {stage.name}; {FIX}")
        name = model.metadata["nbgrader"]["grade_id"].removeprefix("stage_")
        check = nbformat.v4.new_code_cell(
            model.source.replace(f"'{name}'", f"'{stage.name}'").replace(
                f'check("{name}")', f'check("{stage.name}")'),
            id=f"stage-{stage.name}", metadata=_locked(grade_id(stage.name), True))
        intro = nbformat.v4.new_markdown_cell(
            f"## Stage {number}, `{stage.name}`: {stage.title} (chapter: "
            f"*{stage.section.split(':')[0]}*)\n\n{SKELETON} (stage {stage.name}): say what "
            "the learner writes and why, in the chapter's words, and add a cell below that "
            "tries it on real data; then `make release`.",
            id=f"{stage.name}-intro", metadata=_locked(f"{stage.name}_intro", False))
        later = [cells.get(f"{s}_intro") for s in STAGE_NAMES[number:]]
        before = next((c for c in later if c is not None), None)
        at = nb.cells.index(before) if before is not None else len(nb.cells)
        nb.cells[at:at] = [intro, check]
    return nb


def with_points(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` with every stage's cells (``with_stage_cells``) and rubric.toml's
    points in its graded cells' metadata and text.

    Raises NotebookError when its graded cells are not the rubric's, naming each and the fix."""
    nb = with_stage_cells(nb)
    problems = _structure_problems(nb)
    if problems:
        raise NotebookError(f"{SOURCE.relative_to(ROOT)}'s graded cells are not "
                            f"autograder/rubric.toml's: {'; '.join(problems)}; {FIX}")
    cells = nbgrader_cells(nb)
    for gid, points in wanted_points().items():
        cells[gid].metadata["nbgrader"]["points"] = int(points) if points == int(points) \
            else points
        text = cells.get(f"{gid}_question", cells[gid])
        text.source = POINTS_TEXT.sub(counted(points, "point"), text.source, count=1)
    return nb


def check_points(nb: nbformat.NotebookNode) -> None:
    """The notebook's graded cells carry rubric.toml's points (what ``with_points`` writes).
    Raises NotebookError naming each difference and the fix."""
    structure = _structure_problems(nb)
    graded = {gid: float(cell.metadata["nbgrader"].get("points", 0))
              for gid, cell in nbgrader_cells(nb).items() if cell.metadata["nbgrader"].get("grade")}
    problems = [f"{gid}: {graded[gid]} points in the notebook, {points:g} in rubric.toml"
                for gid, points in wanted_points().items() if graded.get(gid, points) != points]
    problems += structure
    if not problems and nbformat.writes(with_points(nb)) != nbformat.writes(nb):
        problems = ["a cell's text names other points than its metadata"]
    if problems:
        raise NotebookError(f"{SOURCE.relative_to(ROOT)} disagrees with autograder/rubric.toml: "
                            + "; ".join(problems) + "; run `make release`, which writes "
                            "rubric.toml's points into it")


def write_points() -> Path | None:
    """Write rubric.toml's points into the source notebook; returns it when it changed."""
    text = SOURCE.read_text(encoding="utf-8")
    new = nbformat.writes(with_points(nbformat.reads(text, as_version=4))) + "\n"
    if new == text:
        return None
    SOURCE.write_text(new, encoding="utf-8", newline="\n")
    return SOURCE


def nbgrader(course: Path, *args: str, timeout: float = NBGRADER_SECONDS,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``nbgrader ARGS`` in the course folder ``course`` with this Python. nbgrader runs its
    database migrations through the ``alembic`` command, so this environment's bin/ goes first
    on PATH. Raises NotebookError with nbgrader's last lines when it fails."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**(env or os.environ), "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise NotebookError(f"nbgrader {' '.join(args)} failed (exit {done.returncode}):\n"
                            + (done.stdout + done.stderr)[-3000:])
    return done


def make_course(folder: Path, files: Path | None = None) -> Path:
    """A course folder: the configuration, and source/embedding_layer/ holding the source
    notebook plus, when given, the assignment's other files (exercises/, as learners get it)."""
    assignment = folder / "source" / ASSIGNMENT
    if files is not None:
        shutil.copytree(files, assignment, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            "__pycache__", "*.pyc", ".generated.json", ".backup-*", NOTEBOOK))
    assignment.mkdir(parents=True, exist_ok=True)
    shutil.copy(COURSE / CONFIG, folder / CONFIG)
    nbformat.write(with_points(nbformat.read(SOURCE, as_version=4)), assignment / NOTEBOOK)
    return folder


def _inputs_digest() -> str:
    digest = hashlib.sha256()
    for path in (SOURCE, COURSE / CONFIG, RUBRIC):
        digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.lru_cache(maxsize=2)
def _render(digest: str) -> str:
    with tempfile.TemporaryDirectory(prefix="lumen-release-") as scratch:
        course = make_course(Path(scratch))
        nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
        return (course / "release" / ASSIGNMENT / NOTEBOOK).read_text(encoding="utf-8")


def render() -> str:
    """The learner's lab.ipynb: nbgrader's release of the source notebook."""
    return _render(_inputs_digest())
