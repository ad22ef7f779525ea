"""Step 2 of nbgrade: each learner's notebook, repaired from the release, into submitted/.

A notebook that is broken, renamed, missing or lacks a graded cell is repaired from the
release, with a note for the learner and the instructor: the stages never depend on it. Only
the cells' types, sources and images are the learner's; all metadata is the release's
(``repair``), so no forged grade id or widget state reaches nbgrader or the feedback page, and
each Markdown cell of the learner's is stored inert (``nbgrade_markdown.written_answer``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat

from ..boundary.clean import clean_text
from ..boundary.intake import MAX_ZIP_MEMBERS, Unusable, read_regular
from ..views.escape import markdown_inline
from .nbgrade_course import NOTEBOOK, nbgrader_cells
from .nbgrade_markdown import INERT_KINDS, MAX_MARKDOWN, written_answer

MAX_NOTEBOOK = 16 << 20  # bytes: a larger notebook is not read, and is repaired from the release


def other_notebooks(folder: Path) -> list[Path] | None:
    """The notebooks in ``folder`` (not hidden ones), looking at no more than
    ``MAX_ZIP_MEMBERS`` entries, as intake does: None when it holds more."""
    found = []
    try:
        with os.scandir(folder) as entries:
            for seen, entry in enumerate(entries):
                if seen >= MAX_ZIP_MEMBERS:
                    return None
                if entry.name.endswith(".ipynb") and not entry.name.startswith("."):
                    found.append(folder / entry.name)
    except OSError:
        return []
    return sorted(found)


def _read_notebook(folder: Path) -> tuple[nbformat.NotebookNode | None, list[str]]:
    """The learner's lab notebook and what is wrong with it (None: nothing usable)."""

    notes = []
    path = folder / NOTEBOOK
    if not os.path.lexists(path):
        others = other_notebooks(folder)
        if others is None or len(others) != 1:
            what = (f"over {MAX_ZIP_MEMBERS:,} files beside it, not looked through"
                    if others is None else
                    "no notebook" if not others else f"{len(others)} other notebooks")
            return None, [f"{NOTEBOOK} is missing ({what}): the written answers could not be "
                          "read; the stages are graded from the .py files"]
        notes.append(f"{others[0].name} was graded as {NOTEBOOK}: keep the notebook's name")
        path = others[0]
    try:
        data = read_regular(path, path.name) if path.stat().st_size <= MAX_NOTEBOOK else None
        if data is None:
            raise Unusable(f"{path.name} is larger than {MAX_NOTEBOOK:,} bytes")
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except (Unusable, OSError) as error:
        return None, [*notes, f"{clean_text(str(error), 300)}; the stages are graded from the "
                      ".py files"]
    except Exception as error:  # noqa: BLE001 - broken JSON, not UTF-8, not a notebook at all
        return None, [*notes, f"{path.name} is not a readable notebook ({type(error).__name__}: "
                      f"{clean_text(str(error), 200)}): its written answers could not be read; "
                      "the stages are graded from the .py files"]
    return nb, notes


def _learner_cell(cell: dict) -> nbformat.NotebookNode | None:
    """A fresh cell holding only what the learner wrote in ``cell``: its type and source, and
    a Markdown cell's attached images where they are well formed; None for a cell of no known
    type. Outputs go (nbgrader's ClearOutput drops them anyway), and so does metadata."""
    kind, source = cell.get("cell_type"), cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else source
    if not isinstance(source, str) or kind not in ("markdown", "code", "raw"):
        return None
    if kind == "code":
        return nbformat.v4.new_code_cell(source)
    if kind == "raw":
        return nbformat.v4.new_raw_cell(source)
    new = nbformat.v4.new_markdown_cell(source)
    images = cell.get("attachments")
    if isinstance(images, dict) and all(
            isinstance(name, str) and isinstance(data, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in data.items())
            for name, data in images.items()):
        new.attachments = json.loads(json.dumps(images))
    return new


def repair(nb: nbformat.NotebookNode | None, release: nbformat.NotebookNode) -> tuple[
        nbformat.NotebookNode, list[str]]:
    """The notebook nbgrader grades: the learner's, with every graded or locked cell of the
    release it lacks put back where it belongs; the release itself when there is none.

    Only the learner's cells (their type, source and images) are theirs: metadata is the
    release's. A cell carrying a grade id of the release gets the release's nbgrader metadata
    for it, any other cell none, and the notebook the release's own. Forged metadata (a grade
    id such as ``x"><script>``, widget state without its "state", a raw cell's mimetype that is
    a number) would otherwise stop ``nbgrader autograde`` or ``generate_feedback`` for the
    whole class, or reach the feedback page's HTML unescaped. Each Markdown cell of the
    learner's that is not the release's own text is stored as ``written_answer`` makes it."""
    if nb is None:
        return nbformat.from_dict(json.loads(json.dumps(release))), []
    notes = []
    released = {gid: cell.metadata["nbgrader"] for gid, cell in nbgrader_cells(release).items()}
    sources = {gid: cell.source for gid, cell in nbgrader_cells(release).items()}
    cells, forged, inert, kinds, budget = [], 0, 0, set(), MAX_MARKDOWN
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader")
        gid = meta.get("grade_id") if isinstance(meta, dict) else None
        if meta is not None and not (isinstance(gid, str) and gid in released):
            forged += 1
        ours = _learner_cell(cell)
        if ours is None:
            continue
        if isinstance(gid, str) and gid in released:
            ours.metadata["nbgrader"] = json.loads(json.dumps(released[gid]))
        if ours.cell_type == "markdown" and ours.source != sources.get(gid):
            budget -= len(ours.source)
            ours.source, made = written_answer(ours.source, ours.get("attachments", {}),
                                               scan=budget >= 0)
            inert, kinds = inert + bool(made), kinds | made
        cells.append(ours)
    if inert:
        notes.append(f"{inert} Markdown cell(s) of {NOTEBOOK} held "
                     f"{' or '.join(INERT_KINDS[k] for k in INERT_KINDS if k in kinds)}: "
                     "shown as text (an image as a link), so that nothing in your answers runs "
                     "or loads in a grader's browser")
    if forged:
        notes.append(f"{forged} cell(s) of {NOTEBOOK} carried nbgrader metadata the assignment "
                     "does not have: they are graded as ordinary cells")
    nb = nbformat.v4.new_notebook(cells=cells, metadata=json.loads(json.dumps(release.metadata)))
    theirs = nbgrader_cells(nb)
    cells = list(nb.cells)
    for i, (gid, cell) in enumerate(nbgrader_cells(release).items()):
        if gid in theirs:
            continue
        position = len(cells)
        for later in list(nbgrader_cells(release))[i + 1:]:  # before the next one they kept
            if later in theirs:
                position = next(k for k, c in enumerate(cells) if c is theirs[later])
                break
        cells.insert(position, nbformat.from_dict(json.loads(json.dumps(cell))))
        if cell.metadata["nbgrader"].get("grade"):
            notes.append(f"the graded cell {gid!r} was missing from {NOTEBOOK}: put back")
    nb.cells = cells
    return nb, notes


def into_submitted(learner: Path, target: Path, release: nbformat.NotebookNode,
                   told: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Put one learner's notebook, repaired from ``release``, into nbgrader's submitted/ tree
    (``copy_files`` put their .py files there); the notes about it. ``told``: the grader's
    notes on their .py files (``Grade.notes``), said at the top of the notebook with those
    about it, so that the feedback carries both."""

    nb, notes = _read_notebook(learner)
    nb, repaired = repair(nb, release)
    notes += repaired
    if notes or told:  # said at the top of the graded notebook, so the feedback carries it too
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(
            "**Notes from the grader:**\n\n" + "\n".join(f"- {markdown_inline(n)}"
                                                          for n in [*notes, *told])))
    target.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target / NOTEBOOK)
    return notes
