"""Grading through nbgrader: ``python -m autograder nbgrade SUBMISSIONS [--course DIR]``.

SUBMISSIONS holds one folder per learner, named by its student id (``learner_folders``;
``STUDENT_ID_RULE``; a folder named otherwise is listed as not graded, exit status 1): either
the learner's files themselves (the lab notebook lab.ipynb and the three .py files), or the
layout ``nbgrader collect`` and ``nbgrader zip_collect`` write, a course's
``submitted/<student>/embedding_layer/`` (pass that submitted/ folder). A ``timestamp.txt``
there (nbgrader's, from submit, collect or zip_collect's ``timestamp`` group) is carried into
the course, so nbgrader's own late penalty applies (in a folder of a learner's own files, one
is the learner's and is not read: that layout has no submission time): the due date is the
gradebook's (``--due``, formgrader, or ``nbgrader db assignment add --duedate``) and the
penalty nbgrader's LateSubmissionPlugin's (``--late-penalty``). The pipeline, in a course
folder (default ``build/nbgrader``) built from solutions/course/:

1. **The course**: nbgrader's configuration, the source notebook and exercises/; then
   ``nbgrader generate_assignment`` (the assignment and its cells in gradebook.db). It takes
   seconds and the grading needs none of it, so it runs beside steps 2 and 3 (its .py files
   are copied first, its notebook once the release is there).
2. **Collect**: each learner's files into ``submitted/<learner>/embedding_layer/``. A notebook
   that is broken, renamed, missing or lacks a graded cell is repaired from the release, with a
   note for the learner and the instructor: the stages never depend on the notebook. Only the
   cells' types, sources and images are the learner's; all metadata is the release's
   (``repair``), so no forged grade id or widget state reaches nbgrader or the feedback page.
   Each Markdown cell of the learner's is stored inert (``written_answer``): formgrader renders
   written answers in the instructor's browser without sanitising, so raw HTML there is shown
   as text, a link keeps only an http, https or mailto target and an image only an attachment,
   read back through nbconvert's own renderer; the learner's note says so.
3. **Grade**: our sandboxed grader on the collected .py files, the whole class through warm
   workers (autograder/frontends/batch.py), into ``lumen/<learner>/grade.json`` (the record,
   a ``Grade``, beside its views). A learner graded
   before from the same files by the same grader (``fingerprint``) keeps that grade, as
   ``grade-batch`` resumes: a rerun grades only new and changed submissions.
4. ``nbgrader autograde``, where ``SandboxedGrades`` takes the place of nbgrader's Execute:
   each stage's check cell gets the stage's score from step 3 as its output, which nbgrader's
   own SaveAutoGrades records in the gradebook (formgrader shows it next to the written
   answers). The learner's notebook is never run: its cells cannot touch a grade. A learner
   nbgrader's late penalty took points from is told at the top of that graded notebook that
   the scores shown with its cells are before it (``note_late``): grades.csv's is after it.
5. ``nbgrader generate_feedback`` and ``nbgrader export`` (side by side: both only read the
   gradebook), and ``stages.csv``: per stage, from the gradebook. The closing lines name
   them and the feedback folder.

The feedback HTML shows the learner's notebook, written answers and all. nbgrader's feedback
template renders Markdown cells without nbconvert's ``sanitize_html`` (it overrides that
block), so ``SafeFeedbackHTML`` cleans every Markdown cell's HTML itself with bleach
(``safe_html``: an allowlist of tags and attributes, links only to http, https, mailto and
anchors; any other tag is shown as text), and ``sanitize_html`` covers raw cells and outputs.
The notes we put into the notebook are escaped as Markdown (``escape.markdown_inline``), and
the learner's Markdown is inert from step 2 on, so this is a second line. Each
feedback file is then read back (``live_html``): one that still holds live HTML is withheld,
with a note, rather than sent. Long lines and words wrap there and in formgrader's grading
page (``WrapLongLines``).

Why a preprocessor in place of Execute (and not test cells run in the learner's kernel, as in
stock nbgrader): whatever runs in that kernel runs as the instructor, next to the gradebook, and
can rewrite its own outputs and verdicts. Here learner code runs only in the grader's sandbox.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import re
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path

import nbformat
from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import parse_utc
from pygments.style import Style
from traitlets import Enum, Type, Unicode, Union

from lumen.stages import STAGE_NAMES, SUBMISSION_FILES, stage
from solutions import notebook
from solutions.notebook import ASSIGNMENT, NOTEBOOK, grade_id, nbgrader_cells
from solutions.notebook import NotebookError as NotebookError  # what this front end raises

from .. import ROOT
from ..boundary.clean import clean_text
from ..boundary.intake import Unusable, read_regular
from ..options import FEEDBACK, LATE_PENALTIES, Options
from ..results import StageGrade
from ..rubric import load
from ..views.escape import (
    csv_number,
    csv_text,
    inert_markdown,
    markdown_inline,
    markdown_text,
    terminal,
)
from ..views.report import check_name, check_output
from ..words import counted
from . import batch
from .classbook import GRADE, read_grade
from .provenance import fingerprint

#: A stage's check cell in the lab notebook -> the stage (grade ids: solutions/notebook.py).
CHECK_CELLS = {grade_id(s): s for s in STAGE_NAMES}

GRADES = "lumen"  # the course folder's subfolder of our grader's results
OURS = ".lumen-nbgrade"  # marks a submitted/ tree as this command's copy
MAX_NOTEBOOK = 16 << 20
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}")
#: ``STUDENT_ID`` in words, for the learner folder it refuses and docs/nbgrader.md: nbgrader
#: puts the id in folder names, glob patterns and comma-separated lists of students
#: (--student_id_exclude).
STUDENT_ID_RULE = ("1 to 100 ASCII letters, digits and the characters _ . @ + -, the first a "
                   "letter or digit")
TIMESTAMP = "timestamp.txt"  # nbgrader's record of when a submission was made
GRADED_FROM = "graded-from.txt"  # next to a learner's grade.json: the ``fingerprint`` graded


class NbgradeError(Exception):
    """The pipeline cannot go on (no course, nbgrader failed); the message says what to do."""


# --- step 4, inside nbgrader autograde --------------------------------------------------------


def stage_outputs(graded: StageGrade, feedback: str) -> list:
    """A check cell's outputs, which nbgrader's ``determine_grade`` reads: the stage's score as
    the cell's value, or an error when it is 0 (nbgrader reads a value it cannot parse, or
    none, as full credit, so a stage worth nothing must be an error, never a printed 0)."""
    name, score, out_of = graded.name, graded.score, graded.max_score
    mine = [r for r, _, _ in graded.tests]
    passed = sum(r.passed for r in mine)
    stub = graded.unwritten  # every check met a stub's body
    lines = [f"Stage '{name}' ({stage(name).title}): " + (
                 f"not implemented yet, {score:g} / {out_of:g}: write its functions in your "
                 ".py files (where they raise NotImplementedError)." if stub else
                 f"{score:g} / {out_of:g}, {passed} of {len(mine)} hidden checks passed."),
             "Graded by the course's sandboxed grader from your .py files, not by this cell."]
    if stub:
        pass
    elif feedback == "messages":
        lines += [f"- {clean_text(check_name(graded, r), 200)}: "
                  f"{clean_text(check_output(r), 600)}" for r in mine if not r.passed][:3]
    elif passed < len(mine):
        lines.append(f"To see what to fix: run this cell, or `pytest exercises -m {name}`.")
    text = "\n".join(lines) + "\n"
    outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    if score > 0:
        outputs.append(nbformat.v4.new_output("execute_result", execution_count=1,
                                              data={"text/plain": repr(score)}))
    else:
        outputs.append(nbformat.v4.new_output(
            "error", ename="StageNotPassed", evalue=(evalue := (
                "not implemented yet: " if stub else "") + f"0 / {out_of:g} for stage '{name}'"),
            traceback=[f"StageNotPassed: {evalue}"]))
    return outputs


class SandboxedGrades(NbGraderPreprocessor):
    """In place of nbgrader's Execute: the check cells' outputs from our grader's results.

    Every output of the notebook is dropped (nbgrader's ClearOutput already did), and each
    stage's check cell gets ``stage_outputs``. A learner without results (the grader failed on
    them) raises, so nbgrader records no grade at all for them: never a zero they did not earn.
    """

    results = Unicode(GRADES, help="the folder of our grader's results, a grade.json (the "
                      "record) per learner, relative to the course folder").tag(config=True)
    feedback = Enum(FEEDBACK, default_value=FEEDBACK[0], help="what a check cell shows: the "
                    "stage's score and how many hidden checks passed, or also the hidden "
                    "checks' messages").tag(config=True)

    def preprocess(self, nb, resources):
        student = resources["nbgrader"]["student"]
        path = Path(self.results) / student / GRADE
        try:
            stages = {s.name: s for s in read_grade(path.parent).stages}
        except (OSError, ValueError) as error:
            raise NbgradeError(f"no grade from the sandboxed grader for {student} ({path}: "
                               f"{type(error).__name__}); see lumen/{student}/error.txt") from None
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            gid = meta.get("grade_id", "")
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
            name = CHECK_CELLS.get(gid)
            if meta.get("grade") and name in stages:
                cell.outputs = stage_outputs(stages[name], self.feedback)
        return nb, resources


# --- step 5, inside nbgrader generate_feedback ------------------------------------------------

#: What a rendered Markdown cell may hold (anything else is shown as text): what Markdown
#: itself writes, tables and images included, with no script, style, frame or form.
SAFE_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4",
    "h5", "h6", "hr", "i", "img", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup",
    "table", "tbody", "td", "th", "thead", "tr", "ul"})
SAFE_PROTOCOLS = frozenset({"http", "https", "mailto", "data"})  # data: for images only


def _link_attribute(tag: str, name: str, value: str) -> bool:
    """A link keeps its title and an href that is not a data: URL (a page of the learner's)."""
    return name == "title" or name == "href" and not re.sub(
        r"[\x00-\x20]", "", value).lower().startswith("data:")


SAFE_ATTRIBUTES = {"*": ["class", "id"], "a": _link_attribute, "img": ["src", "alt", "title"],
                   "th": ["align"], "td": ["align"]}


def safe_html(html: str) -> str:
    """HTML rendered from a learner's Markdown, cleaned by bleach (nbconvert's dependency):
    tags outside ``SAFE_TAGS`` are escaped, so ``<script>`` reads as text; no event handler,
    style or javascript: URL survives."""
    import bleach  # HTML sanitising: only the feedback pages need it

    return bleach.clean(html, tags=SAFE_TAGS, attributes=SAFE_ATTRIBUTES,
                        protocols=SAFE_PROTOCOLS, strip_comments=True)


#: Long lines and long words wrap, in the feedback page and in formgrader alike: nbgrader's
#: templates keep each <pre> line whole (Bootstrap's pre) and a word unbroken, past the page's
#: right edge, so a check cell's output or a written answer was cut off. ``!important``:
#: formgrader's own style sheets come after this one, and Bootstrap's pre breaks every word.
WRAP_CSS = ("pre { white-space: pre-wrap !important; overflow-wrap: anywhere !important; "
            "word-break: break-word !important; }\n"
            ".rendered_html { overflow-wrap: anywhere !important; "
            "word-break: break-word !important; }\n")


class WrapLongLines(CSSHTMLHeaderPreprocessor):
    """The CSS nbgrader's templates write into <head> (``resources["inlining"]["css"]``):
    Pygments' styles, as the classic template's own preprocessor makes them, then
    ``WRAP_CSS``, for formgrader's grading page and the feedback page alike. That list is
    made afresh by whichever such preprocessor runs last, so the course's configuration turns
    nbconvert's off and runs this one in its place."""

    style = Union([Unicode("default"), Type(klass=Style)], default_value="default",
                  help="Pygments' style: the classic template's").tag(config=True)

    def preprocess(self, nb, resources):
        nb, resources = super().preprocess(nb, resources)
        resources["inlining"]["css"].append(WRAP_CSS)
        return nb, resources


class SafeFeedbackHTML(HTMLExporter):
    """nbconvert's HTML exporter with every Markdown cell's HTML cleaned (``safe_html``):
    the feedback template renders written answers with this filter and nothing else."""

    @pass_context
    def markdown2html(self, context, source):
        return safe_html(super().markdown2html(context, source))


#: Attributes whose value is a URL, for ``live_html``.
URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "xlink:href", "data",
                            "poster", "background"})
#: Elements that run, style or embed something: the template's own are all in <head>.
ACTIVE = frozenset({"script", "style", "iframe", "object", "embed", "frame", "frameset",
                    "form", "base", "meta", "link", "svg", "math", "template"})
#: URLs that run code when followed (control characters and spaces removed first, as
#: browsers do).
SCRIPT_URL = re.compile(r"^(javascript|vbscript|livescript|data:(text|application)):?")


def live_html(text: str) -> list[str]:
    """What in a feedback page could run in the learner's browser: an active element
    (``ACTIVE``) in the page's body, an event handler (on...) or a script URL anywhere.
    Empty for a safe page; the template's own scripts and styles are in <head>."""

    found: list[str] = []

    class Reader(HTMLParser):
        in_body = False

        def handle_starttag(self, tag: str, attrs: list) -> None:
            self.in_body = self.in_body or tag == "body"
            if self.in_body and tag in ACTIVE:
                found.append(f"a <{tag}> element")
            for name, value in attrs:
                url = re.sub(r"[\x00-\x20]", "", value or "").lower()
                if name.startswith("on"):
                    found.append(f"an event handler <{tag} {name}>")
                elif name in URL_ATTRIBUTES and SCRIPT_URL.match(url):
                    found.append(f"a script URL <{tag} {name}>")

    reader = Reader(convert_charrefs=True)
    reader.feed(text)
    reader.close()
    return found


WITHHELD = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Feedback withheld</title></head><body>
<p>Your feedback page was withheld: it held HTML that could run in your browser. Your grade is
not affected; your instructor can show you your feedback.</p></body></html>
"""


def withhold_live_feedback(folder: Path) -> str | None:
    """Read back the feedback page nbgrader made from the learner's notebook in ``folder``
    (the other files there are copied from the release, never from the learner); one that
    holds live HTML (``live_html``: sanitising missed something) is replaced by a page saying
    it was withheld. The note for the instructor, or None when the page is safe."""
    page = folder / f"{Path(NOTEBOOK).stem}.html"
    try:
        problems = live_html(page.read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return None
    if not problems:
        return None
    page.write_text(WITHHELD, encoding="utf-8")
    return (f"feedback withheld: {page.name} held live HTML "
            f"({', '.join(sorted(set(problems))[:3])})")


def grading_config(feedback: str, late_penalty: str = LATE_PENALTIES[0]) -> str:
    """What the course's nbgrader_config.py gets for grading, after the release settings."""
    return f'''
# --- grading, written by `python -m autograder nbgrade` (autograder/frontends/nbgrade.py) ---
import sys
sys.path.insert(0, {str(ROOT)!r})
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, IgnorePattern,
                                    LimitOutput, SaveAutoGrades)
from autograder.frontends.nbgrade import SafeFeedbackHTML, SandboxedGrades, WrapLongLines

# The learner's .py files stay theirs in autograded/ (nbgrader would put the release's there).
c.Autograde.exclude_overwriting = {{{ASSIGNMENT!r}: {list(SUBMISSION_FILES)!r}}}
# Our grader's scores in place of running the notebook (nbgrader's Execute).
c.Autograde.autograde_preprocessors = [SandboxedGrades, IgnorePattern, ClearMetadataPreprocessor,
                                       LimitOutput, SaveAutoGrades, AssignLatePenalties,
                                       CheckCellMetadata]
c.SandboxedGrades.results = {GRADES!r}
c.SandboxedGrades.feedback = {feedback!r}
# The feedback HTML holds the learner's written answers: sanitised (bleach), never live HTML.
c.GenerateFeedback.exporter_class = SafeFeedbackHTML
c.HTMLExporter.sanitize_html = True
# Long lines and words wrap in formgrader's grading page and the feedback page: our header CSS
# in place of nbconvert's (WrapLongLines).
c.HTMLExporter.preprocessors = [WrapLongLines]
c.CSSHTMLHeaderPreprocessor.enabled = False
# A submission later than the gradebook's due date (its timestamp.txt): nbgrader's penalty.
c.LateSubmissionPlugin.penalty_method = {late_penalty!r}
'''


# --- steps 1 and 2: the course, the submissions ------------------------------------------------


def prepare_course(course: Path, feedback: str, late_penalty: str = LATE_PENALTIES[0],
                   due: str | None = None) -> None:
    """The course folder, made or refreshed, with the assignment generated in its gradebook;
    ``due`` (any date nbgrader reads, e.g. "2026-12-01 17:00 UTC") becomes its due date there.
    A due date set before (formgrader, ``nbgrader db assignment add``) is kept otherwise."""
    notebook.make_course(course, files=ROOT / "exercises")
    config = course / notebook.CONFIG
    config.write_text(config.read_text(encoding="utf-8") + grading_config(feedback, late_penalty),
                      encoding="utf-8")
    notebook.nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    if due is not None:

        try:
            when = parse_utc(due)
        except (ValueError, OverflowError) as error:
            raise NbgradeError(f"--due {due!r} is not a date ({error}): give one such as "
                               "'2026-12-01 17:00:00 UTC'") from None
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}", notebook.COURSE_ID) as gb:
            gb.update_or_create_assignment(ASSIGNMENT, duedate=when)


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
    if (submissions / "submitted").is_dir() and (submissions / notebook.CONFIG).is_file():
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


def reusable(grades: Path, learner: str, wanted: str) -> bool:
    """Whether ``learner``'s grade in ``grades`` came from ``wanted`` (``fingerprint``); when
    not, every file of their earlier grade goes, so grade-batch grades them afresh."""
    folder = grades / learner
    try:
        same = (folder / GRADED_FROM).read_text(encoding="utf-8").strip() == wanted and (
            folder / GRADE).is_file()
    except OSError:
        same = False
    if not same and folder.exists():
        shutil.rmtree(folder)
    return same


def _read_notebook(folder: Path) -> tuple[nbformat.NotebookNode | None, list[str]]:
    """The learner's lab notebook and what is wrong with it (None: nothing usable)."""

    notes = []
    path = folder / NOTEBOOK
    if not os.path.lexists(path):
        others = sorted(p for p in folder.glob("*.ipynb") if not p.name.startswith("."))
        if len(others) != 1:
            what = "no notebook" if not others else f"{len(others)} other notebooks"
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


#: What nbconvert's Markdown renderer (the one formgrader and the feedback page use) makes from
#: Markdown itself, and the attributes it gives each element: a learner's Markdown cell, once
#: inert, renders to nothing else (``markdown_problems``).
MARKDOWN_HTML = {
    **{tag: frozenset() for tag in ("p", "em", "strong", "ul", "blockquote", "hr", "br", "table",
                                    "thead", "tbody", "tr", "del", "dl", "dt", "dd")},
    **{f"h{level}": frozenset({"id"}) for level in range(1, 7)},
    "a": frozenset({"href", "title", "class"}), "img": frozenset({"src", "alt", "title"}),
    "ol": frozenset({"start"}), "li": frozenset({"class"}), "th": frozenset({"style"}),
    "td": frozenset({"style"}), "input": frozenset({"class", "type", "disabled", "checked"}),
    **{tag: frozenset({"class"}) for tag in ("div", "span", "pre", "code")}}
SAFE_HREF = re.compile(r"(?i)(https?://|mailto:|#)")
ALIGN = re.compile(r"text-align:(left|right|center)")
#: A Markdown cell that cannot be made inert (never seen: both ways of showing it as text
#: failed the read-back) is replaced by this.
NOT_SHOWN = "*(This cell could not be shown safely; it is in the submission as it was sent.)*"
#: The learner's Markdown, in all, that is scanned (no lab's answers come near): the rest is
#: stored as plain text, since the scanner's and the renderer's math patterns may take
#: seconds on a crafted cell.
MAX_MARKDOWN = 20_000


def plain_markdown(source: str) -> str:
    """A cell as plain text (``escape.markdown_text``), with no ``$`` or ``{`` left for
    nbconvert's math patterns to start from."""
    return markdown_text(source).replace("$", "\\$").replace("{", "\\{")


def render_markdown(source: str, attachments: dict) -> str:
    """A Markdown cell's HTML as nbconvert's ``HTMLExporter.markdown2html`` makes it, for
    formgrader and the feedback page alike (nbconvert's mistune with math, its plugins)."""

    renderer = IPythonRenderer(escape=False, attachments=attachments)
    return MarkdownWithMath(renderer=renderer).render(source)


def markdown_problems(html: str) -> list[str]:
    """What in a rendered Markdown cell is not Markdown's own (``MARKDOWN_HTML``): any other
    element or attribute, a link that is not http, https, mailto or an anchor, an image that
    is not attached (a data:image URL), a style other than a table cell's alignment."""

    found: list[str] = []

    class Reader(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list) -> None:
            allowed = MARKDOWN_HTML.get(tag)
            if allowed is None:
                found.append(f"<{tag}>")
                return
            for name, value in attrs:
                value = re.sub(r"[\x00-\x20]", "", value or "")
                if name not in allowed:
                    found.append(f"<{tag} {name}>")
                elif name == "href" and not SAFE_HREF.match(value):
                    found.append(f"<a href={value[:40]!r}>")
                elif name == "src" and not value.lower().startswith("data:image/"):
                    found.append(f"<img src={value[:40]!r}>")
                elif name == "style" and not ALIGN.fullmatch(value):
                    found.append(f"<{tag} style>")
                elif name == "type" and value != "checkbox":
                    found.append(f"<input type={value[:20]!r}>")

    reader = Reader(convert_charrefs=True)
    reader.feed(html)
    reader.close()
    return found


def written_answer(source: str, attachments: dict, scan: bool = True) -> tuple[str, set[str]]:
    """A learner's Markdown cell as nbgrader stores it: ``escape.inert_markdown``, read back
    through nbconvert's renderer (``markdown_problems``); where that still shows something
    that is not Markdown's own (a renderer's corner the scanner read differently), the cell
    as plain text (``plain_markdown``), failing closed; plain text too when not ``scan``
    (past ``MAX_MARKDOWN``). Also what was made inert, for the learner's note: empty when the
    cell renders exactly as it did."""
    if not scan or len(source) > MAX_MARKDOWN:
        return plain_markdown(source), {"long"}
    inert, found = inert_markdown(source, attachments)
    for shown in (inert, plain_markdown(source), NOT_SHOWN):
        try:
            if not markdown_problems(render_markdown(shown, attachments)):
                break
        except Exception:  # noqa: BLE001 - the renderer failed on it: not shown this way
            continue
    if shown != inert:
        found.add("html")
    try:
        same = render_markdown(source, attachments) == render_markdown(shown, attachments)
    except Exception:  # noqa: BLE001 - e.g. an image of a missing attachment
        same = False
    return shown, set() if same else found


#: What the learner's note names, for each kind ``written_answer`` reports.
INERT_KINDS = {"html": "raw HTML", "link": "a link that is not http, https or mailto",
               "image": "an image not attached to the notebook",
               "long": f"more than {MAX_MARKDOWN:,} characters of Markdown in all"}


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


# --- the pipeline -----------------------------------------------------------------------------


def run(submissions: Path, course: Path, options: Options | None = None, jobs: int = 2,
        feedback: str = FEEDBACK[0], progress=None, late_penalty: str = LATE_PENALTIES[0],
        due: str | None = None) -> int:
    """Grade every learner folder in ``submissions`` through nbgrader in ``course``, under
    ``options`` (``autograder/options.py``; nbgrade's command line sets device and sandbox).

    ``due``: the assignment's due date, set in the gradebook (else the one there, if any);
    ``late_penalty``: nbgrader's penalty for a submission after it (``LATE_PENALTIES``).
    Returns 0 when every learner was graded, 1 when some could not be (listed; a rerun
    retries them), 2 when the pipeline stopped."""

    options = options or Options()
    progress = progress or sys.stderr
    started = time.perf_counter()
    course = course.resolve()
    inside = submissions.resolve()
    if course == inside or course in inside.parents or inside in course.parents:
        raise NbgradeError(f"the submissions ({submissions}) and the course folder ({course}) "
                           "are inside one another, and the course folder is rewritten: give "
                           "--course a folder of its own")
    submitted = course / "submitted"
    if submitted.exists() and not (submitted / OURS).is_file():
        raise NbgradeError(f"{submitted} holds submissions this command did not copy there "
                           "(from nbgrader collect?): they are left alone; give --course a "
                           "folder of its own, or pass that folder as SUBMISSIONS")
    if late_penalty not in LATE_PENALTIES:
        raise NbgradeError(f"the late penalty {late_penalty!r} is not one of nbgrader's: "
                           f"{', '.join(LATE_PENALTIES)}")
    folders, problems = learner_folders(submissions)
    learners = list(folders)
    # nbgrader's generate_assignment takes seconds, and the grading needs none of it: it runs
    # beside the grading, which reads only the .py files, copied into submitted/ first. The
    # notebooks follow once the release they are repaired against is there.
    course.mkdir(parents=True, exist_ok=True)
    beside = ThreadPoolExecutor(max_workers=1)
    preparing = beside.submit(prepare_course, course, feedback, late_penalty, due)
    try:
        late: dict[str, str | None] = {}
        if submitted.exists():
            shutil.rmtree(submitted)  # our copy from an earlier run, rebuilt from SUBMISSIONS
        submitted.mkdir(parents=True)
        (submitted / OURS).write_text("copied by python -m autograder nbgrade from "
                                      f"{submissions.resolve()}; rebuilt on every run\n")
        for learner in learners:
            target = submitted / learner / ASSIGNMENT
            copy_files(folders[learner], target)
            late[learner] = submission_time(submissions, learner, folders[learner], target)
        status, failed = _grade(course, submitted, learners, options, jobs, progress)
    finally:
        beside.shutdown(wait=True)
    if status == 2:  # stopped: submitted/ and the course are made afresh by the next run
        return 2
    preparing.result()  # raises what preparing the course raised
    release = nbformat.read(course / "release" / ASSIGNMENT / NOTEBOOK, as_version=4)
    notes: dict[str, list[str]] = {}
    for learner in learners:
        told = _grade_notes(course / GRADES / learner)  # on their .py files, as every front
        notes[learner] = [*into_submitted(  # end gives them, in the feedback too
            folders[learner], submitted / learner / ASSIGNMENT, release, told=told),
            *([late[learner]] if late[learner] else []), *told]
    graded = [x for x in learners if x not in failed]
    return _nbgrader_steps(course, learners, graded, failed, notes, problems, progress, started)


def _grade_notes(folder: Path) -> list[str]:
    """The notes of the grade recorded in ``folder`` (none when there is none: its row says
    why, and nbgrader records no grade)."""
    try:
        return list(read_grade(folder).notes)
    except (OSError, ValueError):
        return []


def _grade(course: Path, submitted: Path, learners: list[str], options: Options, jobs: int,
           progress) -> tuple[int, list[str]]:
    """grade-batch over submitted/, each grade made now marked with the ``fingerprint`` of
    its files: (grade-batch's status, the learners it could not grade)."""
    wanted = {x: fingerprint(submitted / x / ASSIGNMENT,
                             json.dumps(options.to_json(), sort_keys=True)) for x in learners}
    reused = [x for x in learners if reusable(course / GRADES, x, wanted[x])]
    if reused:
        print(f"reused the grades of {counted(len(reused), 'learner')} graded before from "
              "the same files by the same grader", file=progress)
    print(f"grading {counted(len(learners) - len(reused), 'learner')} in the sandbox",
          file=progress)
    status = batch.run(submitted, course / f"{GRADES}.csv", options,
                       batch.Batch(jobs=jobs, out_dir=course / GRADES), progress=progress)
    failed = [x for x in learners if not (course / GRADES / x / GRADE).is_file()]
    if status != 2:
        for learner in set(learners) - set(failed) - set(reused):  # graded now, from these
            (course / GRADES / learner / GRADED_FROM).write_text(wanted[learner] + "\n")
    return status, failed


def _nbgrader_steps(course: Path, learners: list[str], graded: list[str], failed: list[str],
                    notes: dict[str, list[str]], problems: dict[str, str], progress,
                    started: float) -> int:
    """nbgrader's autograde, feedback and export, then stages.csv; ``run``'s status."""
    export = functools.partial(notebook.nbgrader, course, "export", "--to",
                               str(course / "grades.csv"), timeout=600)
    penalised: dict[str, float] = {}
    if graded:
        exclude = ",".join(failed)
        extra = [f"--CourseDirectory.student_id_exclude={exclude}"] if failed else []
        print(f"nbgrader autograde: {counted(len(graded), 'notebook')}", file=progress)
        notebook.nbgrader(course, "autograde", ASSIGNMENT, "--force", *extra, timeout=3600)
        penalised = late_penalties(course, graded)
        for learner, points in penalised.items():  # before the feedback, which shows it too
            notes[learner] = [*notes.get(learner, []), note_late(course, learner, points)]
        with ThreadPoolExecutor(max_workers=1) as beside:  # both only read the gradebook
            exporting = beside.submit(export)
            notebook.nbgrader(course, "generate_feedback", ASSIGNMENT, "--force", *extra,
                              timeout=3600)
        exporting.result()  # raises what the export raised
        for learner in graded:
            withheld = withhold_live_feedback(course / "feedback" / learner / ASSIGNMENT)
            if withheld:
                notes[learner] = [*notes.get(learner, []), withheld]
                print(f"{learner}: {withheld}", file=progress)
    else:
        export()
    write_stages_csv(course, learners, notes, {**problems, **{
        x: "not graded: the grader failed on it (see lumen/<learner>/error.txt); rerun"
        for x in failed}})
    print(f"wrote {course / 'grades.csv'} (nbgrader's export) and {course / 'stages.csv'} in "
          f"{time.perf_counter() - started:.1f} s", file=progress)
    if graded:
        print(f"feedback: {course / 'feedback'}/<learner>/{ASSIGNMENT}/"
              f"{Path(NOTEBOOK).stem}.html, a page per learner (nbgrader generate_feedback; "
              f"nbgrader release_feedback {ASSIGNMENT} hands them out)", file=progress)
    if penalised:
        names = ", ".join(terminal(x, 100) for x in penalised)
        print(f"late: nbgrader's late penalty took points from "
              f"{counted(len(penalised), 'learner')} ({names}): {LATE_SCORES}", file=progress)
    for name, why in problems.items():
        print(f"not graded: {terminal(name, 100)}: {why}", file=progress)
    return 1 if failed or problems else 0


#: Which score is which once nbgrader's late penalty took points (for the instructor).
LATE_SCORES = ("grades.csv's score is after the penalty (raw_score before it, "
               "late_submission_penalty the difference); formgrader, the feedback page's "
               "cell scores and stages.csv show the scores before it")


def late_penalties(course: Path, learners: list[str]) -> dict[str, float]:
    """learner -> the points nbgrader's late penalty took from their score (its gradebook,
    after autograde), for each of ``learners`` it took any from."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", notebook.COURSE_ID) as gb:
        taken = {s.student.id: s.late_submission_penalty
                 for s in gb.assignment_submissions(ASSIGNMENT)}
    return {x: taken[x] for x in sorted(learners) if taken.get(x)}


def late_note(points: float) -> str:
    """The learner's note when nbgrader's late penalty took ``points`` from their score."""
    return (f"submitted after the due date: nbgrader's late penalty takes {points:g} points "
            "from your total; the score shown with each cell is before it")


def note_late(course: Path, learner: str, points: float) -> str:
    """``late_note`` at the top of the learner's graded notebook, after autograde: formgrader
    shows it above the scores, and the feedback page carries it. The note, for stages.csv."""
    note = late_note(points)
    path = course / "autograded" / learner / ASSIGNMENT / NOTEBOOK
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**Late:** {markdown_inline(note)}"))
    nbformat.write(nb, path)
    return note


def gradebook_scores(course: Path) -> dict[str, dict[str, float | None]]:
    """learner -> grade_id -> score, as nbgrader's gradebook holds them (written answers: None
    until marked)."""

    scores: dict[str, dict[str, float | None]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", notebook.COURSE_ID) as gb:
        for submission in gb.assignment_submissions(ASSIGNMENT):
            for submitted in submission.notebooks:
                for grade in submitted.grades:
                    scores.setdefault(submission.student.id, {})[grade.name] = (
                        None if grade.needs_manual_grade and grade.manual_score is None
                        else grade.score)
    return scores


def write_stages_csv(course: Path, learners: list[str], notes: dict[str, list[str]],
                     problems: dict[str, str]) -> None:
    """``stages.csv``: a row per learner, a column per stage and written answer (from the
    gradebook), the stages' total, and the notes."""

    written = list(load().written)
    scores = gradebook_scores(course)
    with open(course / "stages.csv", "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["learner", *STAGE_NAMES, "stages_total", *written, "notes"])
        for learner in sorted({*learners, *problems}):
            mine = scores.get(learner, {})
            stage_scores = [mine.get(grade_id(s)) for s in STAGE_NAMES]
            total = sum(stage_scores) if all(s is not None for s in stage_scores) else None
            out.writerow([csv_text(learner), *(csv_number(s) for s in stage_scores),
                          csv_number(total), *(csv_number(mine.get(w)) for w in written),
                          csv_text("; ".join([*notes.get(learner, []), *filter(None, [
                              problems.get(learner)])]))])
