"""nbgrader, for real: the release comes from generate_assignment, and a class goes through
nbgrader's own autograde, feedback and export, with our grader's scores in its gradebook.

One pipeline run (``python -m autograder nbgrade``, in a subprocess) over fixture learners:
complete, partial, the stubs, a notebook that is not JSON, a hostile notebook (cells that
would forge outputs, rewrite the gradebook or redefine the checks), a renamed notebook, one
with a graded cell deleted and another edited and late (collect's layout), one whose .py file
does not parse (with its own timestamp.txt, never read), and a folder not named as a student.
Their per-stage scores in the gradebook must equal what ``python -m autograder grade`` gives
the same files, and formgrader must show them. A second class goes through nbgrader's
zip_collect first: its layout, its timestamps (late penalties) and a rerun that regrades only
what changed. ``make nbgrade``'s command runs a class of two in the full tier.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.frontends import nbgrade
from autograder.grading import Grader
from autograder.publish import notebook
from autograder.results import StageGrade, TestResult
from autograder.rubric import load as load_rubric
from lumen.stages import STAGE_NAMES, SUBMISSION_FILES
from solutions import release
from tests import test_page
from tests.helpers import full_marks

ROOT = Path(__file__).resolve().parents[1]
# The page test's fixtures: Chromium driven by Playwright, offline.
browser, open_page = test_page.browser, test_page.open_page
LAB = ROOT / "exercises" / notebook.NOTEBOOK
PARTIAL = ("embedding", "onehot", "params")  # solved in the partial learners


def _lab() -> nbformat.NotebookNode:
    return nbformat.read(LAB, as_version=4)


def _cell(nb: nbformat.NotebookNode, gid: str) -> nbformat.NotebookNode:
    return notebook.nbgrader_cells(nb)[gid]


# --- the release ----------------------------------------------------------------------------


def test_the_release_holds_no_solution_and_no_hidden_test():
    text = LAB.read_text(encoding="utf-8")
    assert release.BEGIN not in text and release.END not in text
    assert "Mark scheme" not in text  # the written answers' marking schemes stay in solutions/
    hidden = {t for tests in load_rubric().points.values() for t in tests}
    assert not [t for t in hidden if t in text], "a hidden test's name is in the release"
    nb = _lab()
    for stage in STAGE_NAMES:
        cell = _cell(nb, notebook.grade_id(stage))
        assert cell.metadata.nbgrader["locked"] and cell.source.strip().endswith(
            f'check("{stage}")')
    for gid in load_rubric().written:
        assert _cell(nb, gid).source.strip() == "YOUR ANSWER HERE"


def test_the_points_come_from_the_rubric():
    nb = _lab()
    rubric = load_rubric()
    for stage in STAGE_NAMES:
        assert _cell(nb, notebook.grade_id(stage)).metadata.nbgrader["points"] == \
            rubric.stage_max(stage)
    source = nbformat.read(notebook.SOURCE, as_version=4)
    notebook.check_points(source)
    wrong = copy.deepcopy(source)
    off = rubric.stage_max("tying") - 1
    _cell(wrong, "stage_tying").metadata.nbgrader["points"] = off
    del notebook.nbgrader_cells(wrong)["written-tsne"].metadata["nbgrader"]
    with pytest.raises(notebook.NotebookError, match=f"stage_tying: {off} points.*written-tsne"):
        notebook.check_points(wrong)


def test_the_course_id_is_the_configs():
    assert f'course_id = "{notebook.COURSE_ID}"' in (notebook.COURSE / notebook.CONFIG).read_text()


# --- the fixture class ------------------------------------------------------------------------

HOSTILE_CELLS = [
    # Would forge the check cells' verdicts, the gradebook and the helpers, if it ever ran.
    """
import sqlite3, pathlib
for db in pathlib.Path("/").glob("**/gradebook.db"):
    sqlite3.connect(db).execute("UPDATE grade SET auto_score = 99").connection.commit()
pathlib.Path(MARKER).write_text("a learner cell ran in the grader")
def check(stage):
    print(20.0)
    return 20.0
""",
    "raise SystemExit('a later cell raises')",
]


def _files(folder: Path, source: Path) -> None:
    for name in SUBMISSION_FILES:
        shutil.copy(source / name, folder / name)


def _answered(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    for gid in load_rubric().written:
        _cell(nb, gid).source = "Because b - a + c stays nearest to b itself."
    return nb


def _nbgrade(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    """``python -m autograder nbgrade ARGS``, as a user types it, in this repository."""
    return subprocess.run([sys.executable, "-m", "autograder", "nbgrade", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


DUE = "2026-12-01 17:00:00 UTC"
LATE = "2026-12-02 09:00:00 UTC"  # a timestamp.txt after DUE
#: An unbroken word longer than any page is wide, in a written answer.
LONG_WORD = "embedding" * 40
LATE_NOTE = nbgrade.late_note(100)  # the late learner's, all of 100 points taken ('zero')


@pytest.fixture(scope="module")
def nbgraded(tmp_path_factory):
    """(exit status, course folder, learners' folders, what the run printed)."""
    root = tmp_path_factory.mktemp("nbgrade")
    partial = root / "partial"
    partial.mkdir()
    for path, text in release.submission(solved=PARTIAL).items():
        (partial / path).write_text(text, encoding="utf-8")
    stubs = ROOT / "exercises"
    marker = root / "marker.txt"
    learners = root / "submissions"
    plan = {"complete": ROOT / "lumen", "partial": partial, "stubs": stubs,
            "broken": ROOT / "lumen", "hostile": partial, "renamed": ROOT / "lumen",
            "cut": ROOT / "lumen", "typo": ROOT / "lumen"}
    for name, source in plan.items():
        # cut comes in collect's layout, whose timestamp.txt is nbgrader's; typo writes one
        # of its own (late), which is the learner's file and never read
        folder = learners / name / (nbgrade.ASSIGNMENT if name == "cut" else "")
        folder.mkdir(parents=True)
        _files(folder, source)
        nb = _lab()
        if name == "complete":
            _answered(nb)
        if name == "hostile":
            for text in HOSTILE_CELLS:
                nb.cells.append(nbformat.v4.new_code_cell(text.replace("MARKER", repr(str(
                    marker)))))
            forged = _cell(nb, "stage_init")
            forged.source = "20.0"
            forged.outputs = [nbformat.v4.new_output("execute_result", execution_count=1,
                                                     data={"text/plain": "15.0"})]
            path = folder / "embeddings.py"  # PyTorch warns on stderr when this imports
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace("from torch import Tensor, nn\n", "from torch import "
                            "Tensor, nn\n\ntorch.nn.functional.softmax(torch.ones(2))  # no dim\n",
                            1), encoding="utf-8")
            assert path.read_text(encoding="utf-8") != text
        if name == "typo":  # a .py file that does not parse: its note reaches the feedback
            (folder / nbgrade.TIMESTAMP).write_text(LATE + "\n", encoding="utf-8")
            path = folder / "params.py"
            path.write_text(path.read_text(encoding="utf-8").replace("def ", "def (", 1),
                            encoding="utf-8")
        if name == "cut":  # also late, under the 'zero' penalty
            nb.cells.remove(_cell(nb, "stage_tying"))
            _cell(nb, "stage_init").source = "print(15.0)"
            (folder / nbgrade.TIMESTAMP).write_text(LATE + "\n", encoding="utf-8")
        if name == "partial":
            _cell(nb, "written-analogy").source = f"A word wider than the page: {LONG_WORD}."
        target = folder / ("lab-mine.ipynb" if name == "renamed" else notebook.NOTEBOOK)
        if name == "broken":
            target.write_text('{"cells": [', encoding="utf-8")
        else:
            nbformat.write(nb, target)
    (learners / "not a student id").mkdir()
    course = root / "course"
    done = _nbgrade(str(learners), "--course", str(course), "--jobs", "1", "--due", DUE,
                    "--late-penalty", "zero")
    return done.returncode, course, learners, done.stderr, marker


def _reference(learners: Path) -> dict[str, dict[str, float]]:
    """What ``python -m autograder grade`` gives each learner's files, stage by stage."""
    scores = {}
    with Grader() as grader:
        for learner, folder in sorted(nbgrade.learner_folders(learners)[0].items()):
            scores[learner] = {s.name: s.score for s in grader.grade(folder).stages}
    return scores


def test_nbgraders_gradebook_agrees_with_the_grader(nbgraded):
    code, course, learners, progress, _ = nbgraded
    assert code == 1, progress  # one folder is not a student id: listed, the rest graded
    book = nbgrade.gradebook_scores(course)
    reference = _reference(learners)
    assert set(book) == set(reference)
    for learner, stages in reference.items():
        recorded = {s: book[learner][notebook.grade_id(s)] for s in STAGE_NAMES}
        assert recorded == stages, learner
    assert sum(reference["complete"].values()) == 100
    assert sum(reference["stubs"].values()) == 0
    assert 0 < sum(reference["partial"].values()) < 100
    assert reference["hostile"] == reference["partial"]  # no cell of theirs changed a score
    for learner in ("broken", "renamed", "cut"):
        assert sum(reference[learner].values()) == 100, learner
    assert reference["typo"]["params"] == 0 and reference["typo"]["embedding"] > 0


def test_the_stubs_get_zero_through_nbgrader(nbgraded):
    _, course, *_ = nbgraded
    nb = nbformat.read(course / "autograded" / "stubs" / nbgrade.ASSIGNMENT / nbgrade.NOTEBOOK,
                       as_version=4)
    for stage in STAGE_NAMES:
        outputs = _cell(nb, notebook.grade_id(stage)).outputs
        assert [o.output_type for o in outputs] == ["stream", "error"], stage
        # a stub is told it is not written yet, not handed a list of failures
        assert "not implemented yet" in outputs[0].text, outputs[0].text
        assert outputs[1].evalue.startswith("not implemented yet: 0 / "), outputs[1].evalue
    row = _csv(course / "stages.csv")["stubs"]
    assert [row[s] for s in STAGE_NAMES] == ["0"] * len(STAGE_NAMES)


def test_a_failing_stage_is_not_called_unwritten():
    """Only a stage whose every check met a stub's body says "not implemented yet"; a written
    stage that fails says its score and what to fix."""
    for stub in (True, False):
        failed = TestResult(name="test_t", stage="embedding", title="t", passed=False,
                            message="x", not_implemented=stub)
        outputs = nbgrade.stage_outputs(StageGrade("embedding", 0.0, 20.0, [(failed, 0.0, 5.0)]),
                                        "messages")
        told = "not implemented yet" in outputs[0].text
        assert told is stub and outputs[1].evalue.startswith("not implemented") is stub
        assert ("- embedding: t: x" in outputs[0].text) is not stub


#: What in a page a reader must see whole: every <pre> (a check cell's output, a cell's code)
#: and every rendered Markdown cell (a written answer), each no wider than it is shown.
OVERFLOWING = """() => [...document.querySelectorAll('pre, .rendered_html')].filter(
    e => e.scrollWidth > e.clientWidth + 1).map(e => [e.textContent.slice(0, 60), e.scrollWidth,
                                                     e.clientWidth])"""


def _wraps(tab) -> None:
    """Nothing a reader must see is cut off on ``tab``'s narrow screen: no <pre> and no
    Markdown cell is wider than its box, and the page is no wider than the screen."""
    assert tab.evaluate(OVERFLOWING) == []
    assert tab.evaluate("document.documentElement.scrollWidth <= "
                        "document.documentElement.clientWidth + 1")


def test_long_lines_wrap_in_the_feedback(nbgraded, open_page):
    """nbgrader's feedback page, opened in Chromium on a narrow screen: every check cell's
    output wraps, so no <pre> is wider than the page and nothing of a diagnosis is cut off;
    a written answer's word wider than the page breaks too."""
    _, course, *_ = nbgraded
    tab = open_page(course / "feedback" / "partial" / nbgrade.ASSIGNMENT / "lab.html")
    tab.set_viewport_size({"width": 420, "height": 900})
    widths = tab.evaluate("[...document.querySelectorAll('pre')].filter(p => "
                          "p.textContent.includes('Graded by the course')).map("
                          "p => [p.scrollWidth, p.clientWidth])")
    assert len(widths) == len(STAGE_NAMES), widths
    assert all(scroll <= client + 1 for scroll, client in widths), widths
    assert tab.locator(f"text={LONG_WORD}").count() == 1
    _wraps(tab)


def test_every_page_carries_the_wrap_style(nbgraded, formgrader):
    """The CSS that wraps long lines and words (``WRAP_CSS``: <pre> and rendered Markdown) is
    in the <head> of every feedback page and of formgrader's grading page, as served."""
    import urllib.request

    _, course, *_ = nbgraded
    pages = sorted((course / "feedback").glob(f"*/{nbgrade.ASSIGNMENT}/lab.html"))
    assert len(pages) == len(nbgrade.gradebook_scores(course))
    for page in pages:
        head = page.read_text(encoding="utf-8").split("</head>", 1)[0]
        assert head.count(nbgrade.WRAP_CSS) == 1, page
    for submission in _submissions(formgrader).values():
        with urllib.request.urlopen(f"{formgrader}/formgrader/submissions/{submission}/") as r:
            head = r.read().decode("utf-8").split("</head>", 1)[0]
        assert head.count(nbgrade.WRAP_CSS) == 1, submission
    assert "pre {" in nbgrade.WRAP_CSS and ".rendered_html {" in nbgrade.WRAP_CSS


#: formgrader's grading page loads MathJax from a CDN, and this browser is offline: this stands
#: in for it (the page's script waits on MathJax's start-up signal before it shows the grades).
MATHJAX = ("window.MathJax = {Hub: {Startup: {signal: {Interest: function (f) { f('End'); }}}, "
           "Queue: function () {}, Config: function () {}, Configured: function () {}}};")


@pytest.fixture(scope="module")
def formgrader(nbgraded, tmp_path_factory):
    """formgrader, running: a Jupyter server on loopback with nbgrader's formgrader extension
    alone, in the graded course folder, with its own runtime, data and config folders."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    _, course, *_ = nbgraded
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    home = tmp_path_factory.mktemp("jupyter")
    env = {**os.environ, **{f"JUPYTER_{k}_DIR": str(home / k) for k in ("RUNTIME", "DATA",
                                                                          "CONFIG")}}
    others = ("jupyterlab", "notebook", "jupyter_lsp", "jupyter_server_terminals",
              "notebook_shim", *(f"nbgrader.server_extensions.{x}" for x in (
                  "validate_assignment", "assignment_list", "course_list")))
    extensions = {"nbgrader.server_extensions.formgrader": True, **dict.fromkeys(others, False)}
    command = [sys.executable, "-m", "jupyter_server", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.open_browser=False",
               "--IdentityProvider.token=", "--ServerApp.password=",
               f"--ServerApp.root_dir={course}", f"--ServerApp.jpserver_extensions={extensions}",
               *(["--allow-root"] if os.geteuid() == 0 else [])]
    log = open(home / "server.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(command, cwd=course, env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/formgrader/api/assignments", timeout=5):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("formgrader did not start: "
                                + (home / "server.log").read_text()[-2000:])
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def _submissions(base: str) -> dict[str, int]:
    """learner -> formgrader's id of their submitted notebook, from formgrader's own API."""
    import urllib.request

    with urllib.request.urlopen(f"{base}/formgrader/api/submitted_notebooks/"
                                f"{nbgrade.ASSIGNMENT}/lab") as reply:
        return {s["student"]: s["id"] for s in json.loads(reply.read())}


@contextlib.contextmanager
def _formgrader_tab(browser, base: str, width: int = 1240):
    """A Chromium tab for formgrader at ``base``, ``width`` pixels wide: it reaches formgrader
    alone (MathJax, from a CDN, is stood in for). Yields (tab, page errors, other URLs)."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    errors, elsewhere = [], []

    def route(request):
        url = request.request.url
        if url.startswith(base):
            return request.continue_()
        elsewhere.append(url)
        if "mathjax" in url.lower():
            return request.fulfill(content_type="application/javascript", body=MATHJAX)
        return request.abort()

    context.route("**/*", route)
    tab = context.new_page()
    tab.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield tab, errors, elsewhere
    finally:
        context.close()


def _open_submission(tab, base: str, submission: int) -> None:
    """formgrader's grading page of one submission, once its scripts have shown the grades."""
    tab.goto(f"{base}/formgrader/submissions/{submission}/")
    tab.wait_for_function("document.querySelector('input.score[placeholder]') || "
                          "document.querySelector('input.needs_manual_grade')", timeout=30_000)
    tab.wait_for_timeout(500)  # the last grade views


def test_formgrader_shows_every_learners_stage_scores_and_written_answers(
        nbgraded, formgrader, browser):
    """formgrader's own grading page for each learner, in Chromium, after its scripts ran: each
    stage's score is the gradebook's (our grader's), and every written answer is there, waiting
    for a mark by hand (answered) or 0 (left as released). The late learner's page says that
    these scores are before nbgrader's late penalty."""
    _, course, learners, *_ = nbgraded
    book = nbgrade.gradebook_scores(course)
    submissions = _submissions(formgrader)
    assert set(submissions) == set(book)
    answered = "Because b - a + c stays nearest to b itself."
    written = list(load_rubric().written)
    with _formgrader_tab(browser, formgrader) as (tab, errors, elsewhere):
        for learner, submission in sorted(submissions.items()):
            _open_submission(tab, formgrader, submission)
            shown = tab.evaluate("Object.fromEntries([...document.querySelectorAll("
                                 "'input.score')].map(i => [i.id, [i.placeholder, "
                                 "i.classList.contains('needs_manual_grade')]]))")
            for stage in STAGE_NAMES:
                gid = notebook.grade_id(stage)
                assert shown[gid] == [f"{book[learner][gid]:g}", False], (learner, stage)
            text = tab.inner_text("body")
            for gid in written:
                waits = book[learner][gid] is None  # answered: formgrader asks for a mark
                assert shown[gid][1] is waits, (learner, gid, shown[gid])
            if learner == "complete":
                assert text.count(answered) == len(written), learner
            assert (LATE_NOTE in text) is (learner == "cut"), learner
        assert not errors, errors
        assert {u.split("?")[0] for u in elsewhere} <= {
            "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/latest.js"}, elsewhere


def test_long_lines_wrap_in_formgrader(nbgraded, formgrader, browser):
    """formgrader's grading page, served and opened in Chromium on a narrow screen: the check
    cells' outputs and a written answer's word wider than the page wrap, none cut off at the
    right edge."""
    with _formgrader_tab(browser, formgrader, width=560) as (tab, errors, _):
        _open_submission(tab, formgrader, _submissions(formgrader)["partial"])
        assert tab.locator(f"text={LONG_WORD}").count() == 1
        outputs = tab.evaluate("[...document.querySelectorAll('pre')].filter(p => "
                               "p.textContent.includes('Graded by the course')).length")
        assert outputs == len(STAGE_NAMES)
        assert tab.evaluate(OVERFLOWING) == []
        assert not errors, errors


def test_no_learner_cell_runs_or_forges_anything(nbgraded):
    _, course, _, _, marker = nbgraded
    assert not marker.exists(), "a learner's notebook cell ran during grading"
    book = nbgrade.gradebook_scores(course)
    assert all(v is None or v < 99 for scores in book.values() for v in scores.values())
    with sqlite3.connect(course / "gradebook.db") as db:
        assert not db.execute("SELECT * FROM grade WHERE auto_score = 99").fetchall()
    hostile = _csv(course / "stages.csv")["hostile"]
    assert hostile["init"] == "0"  # its forged check cell (15.0 printed) counts for nothing


def test_the_written_answers_wait_for_the_instructor(nbgraded):
    _, course, *_ = nbgraded
    book = nbgrade.gradebook_scores(course)
    for gid in load_rubric().written:
        assert book["complete"][gid] is None  # answered: formgrader marks it
        assert book["stubs"][gid] == 0  # left as released: nbgrader gives 0
    nbgrader_csv = _csv(course / "grades.csv", key="student_id")
    assert float(nbgrader_csv["complete"]["max_score"]) == 100 + sum(load_rubric().written.values())
    assert float(nbgrader_csv["complete"]["score"]) == 100


def test_the_learners_files_are_what_nbgrader_keeps(nbgraded):
    _, course, learners, *_ = nbgraded
    kept = course / "autograded" / "complete" / nbgrade.ASSIGNMENT
    for name in SUBMISSION_FILES:
        assert (kept / name).read_bytes() == (learners / "complete" / name).read_bytes(), name


def test_broken_renamed_and_cut_notebooks_are_told_why(nbgraded):
    code, course, _, progress, _ = nbgraded
    rows = _csv(course / "stages.csv")
    assert "not a readable notebook" in rows["broken"]["notes"]
    assert "lab-mine.ipynb was graded as lab.ipynb" in rows["renamed"]["notes"]
    assert "'stage_tying' was missing" in rows["cut"]["notes"]
    assert rows["cut"]["tying"] == full_marks("tying")  # put back, and graded from gpt2.py
    assert "not a student id" in rows and "rename the folder" in rows["not a student id"]["notes"]
    assert "not graded: not a student id" in progress
    feedback = (course / "feedback" / "broken" / nbgrade.ASSIGNMENT / "lab.html").read_text()
    assert "not a readable notebook" in feedback


def test_a_folder_that_is_not_a_student_id_is_told_the_rule(nbgraded):
    """A learner folder whose name is not a student id is refused with the rule (which
    docs/nbgrader.md names too), and the command exits 1, as grade-batch does when some learners
    could not be graded: the others are all in nbgrader's gradebook."""
    code, course, learners, progress, _ = nbgraded
    rule = nbgrade.STUDENT_ID_RULE
    assert code == 1, progress
    assert set(nbgrade.gradebook_scores(course)) == {
        p.name for p in learners.iterdir()} - {"not a student id"}
    assert f"not graded: not a student id: the folder's name is the learner's student id in " \
        f"nbgrader, and a student id is {rule}: rename the folder" in progress
    assert rule in _csv(course / "stages.csv")["not a student id"]["notes"]
    guide = (ROOT / "docs" / "nbgrader.md").read_text(encoding="utf-8")
    assert rule in " ".join(guide.split()), "docs/nbgrader.md names the rule"
    for name, valid in (("a" * 100, True), ("a" * 101, False), ("j.doe+1@uni-x.edu", True),
                        ("_alice", False), ("9lives", True), ("zoë", False), ("a b", False),
                        ("a,b", False)):
        assert bool(nbgrade.STUDENT_ID.fullmatch(name)) is valid, name


def test_the_closing_lines_name_the_files_and_which_score_is_which(nbgraded):
    """The run ends by naming what it wrote: nbgrader's export and stages.csv, the folder of
    nbgrader's feedback pages (one per learner graded), which score is before and which after
    nbgrader's late penalty, and each folder not graded."""
    _, course, _, progress, _ = nbgraded
    feedback = course / "feedback"
    closing = progress.splitlines()[-4:]
    assert closing[0].startswith(f"wrote {course / 'grades.csv'} (nbgrader's export) and "
                                 f"{course / 'stages.csv'} in "), closing
    assert closing[1].startswith(f"feedback: {feedback}/<learner>/{nbgrade.ASSIGNMENT}/"
                                 "lab.html, a page per learner"), closing
    assert sorted(p.parent.parent.name for p in feedback.glob(f"*/{nbgrade.ASSIGNMENT}/lab.html")
                  ) == sorted(nbgrade.gradebook_scores(course))
    assert closing[2] == ("late: nbgrader's late penalty took points from 1 learner (cut): "
                          + nbgrade.LATE_SCORES), closing
    assert closing[3].startswith("not graded: not a student id: "), closing


def test_a_late_learner_is_told_the_scores_shown_are_before_the_penalty(nbgraded):
    """nbgrader's late penalty ('zero') takes the late learner's score in its export
    (grades.csv), not in the cells' scores formgrader and stages.csv show: the learner's graded
    notebook says so at its top (formgrader shows it; the feedback page carries it), and so does
    stages.csv. The learners on time are told nothing of the kind."""
    _, course, *_ = nbgraded
    grades = _csv(course / "grades.csv", key="student_id")
    cut = grades["cut"]
    assert float(cut["raw_score"]) == 100 and float(cut["late_submission_penalty"]) == 100
    assert float(cut["score"]) == 0
    stages = _csv(course / "stages.csv")
    assert stages["cut"]["stages_total"] == "100" and LATE_NOTE in stages["cut"]["notes"]
    graded = nbformat.read(course / "autograded" / "cut" / nbgrade.ASSIGNMENT / "lab.ipynb",
                           as_version=4)
    assert graded.cells[0].source == f"**Late:** {LATE_NOTE}"
    html = (course / "feedback" / "cut" / nbgrade.ASSIGNMENT / "lab.html").read_text()
    assert LATE_NOTE in html and "Late submission penalty (Score: -100.0)" in html
    for learner in set(grades) - {"cut"}:
        assert float(grades[learner]["late_submission_penalty"]) == 0, learner
        assert "late penalty" not in stages[learner]["notes"], learner
    # typo's own timestamp.txt (late) is its file, not the platform's: read by no one
    assert nbgrade.OWN_TIMESTAMP in stages["typo"]["notes"], stages["typo"]["notes"]
    assert not grades["typo"]["timestamp"].startswith(LATE.split()[0]), grades["typo"]


def test_the_nbgrade_command_runs_as_a_user_types_it(tmp_path):
    """``python -m autograder nbgrade``, in a subprocess: its help, and a SUBMISSIONS folder
    that is not there, refused (exit 2) before any course is made."""
    helped = _nbgrade("--help", timeout=120)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: python -m autograder nbgrade "), helped.stdout
    assert "--late-penalty" in helped.stdout and "--course" in helped.stdout
    missing = _nbgrade(str(tmp_path / "nowhere"), "--course", str(tmp_path / "course"),
                       timeout=120)
    assert missing.returncode == 2, missing.stderr
    assert missing.stderr.splitlines()[0] == \
        f"error: no folder of submissions at {tmp_path / 'nowhere'}", missing.stderr
    assert not (tmp_path / "course").exists()


def _make_nbgrade(**variables: str) -> list[str]:
    """The command ``make nbgrade`` runs with ``variables``, as make prints it (``make -n``,
    its setup taken as done: the environment is installed)."""
    shown = subprocess.run(["make", "-n", "-o", "setup", "nbgrade",
                            *(f"{k}={v}" for k, v in variables.items())],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    lines = [x for x in shown.stdout.replace("\\\n", " ").splitlines()
             if " -m autograder nbgrade " in x]
    assert len(lines) == 1, shown.stdout
    return shlex.split(lines[0])


def test_make_nbgrade_runs_the_command():
    """``make nbgrade SUBMISSIONS=DIR [DUE= LATE_PENALTY=]`` runs ``python -m autograder
    nbgrade DIR`` with the sandbox and those options; without SUBMISSIONS it says what to pass
    (exit 2) and runs nothing."""
    assert _make_nbgrade(SUBMISSIONS="class") == [
        ".venv/bin/python", "-m", "autograder", "nbgrade", "class", "--sandbox", "bwrap"]
    assert _make_nbgrade(SUBMISSIONS="class", DUE=DUE, LATE_PENALTY="zero", SANDBOX="x")[4:] == [
        "class", "--sandbox", "x", "--due", DUE, "--late-penalty", "zero"]
    bare = subprocess.run(["make", "--no-print-directory", "-o", "setup", "nbgrade"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # as under make test too
    assert bare.returncode == 2 and bare.stdout.startswith("make nbgrade SUBMISSIONS=DIR: "), bare


def test_make_nbgrade_grades_a_class_of_two(tmp_path):
    """The command ``make nbgrade SUBMISSIONS=DIR`` runs (``make -n``), run for real on two
    learners (the solution and a partial one, their files as the handout makes them) with
    ``--course`` in a folder of the test's: exit 0 (every learner graded), the closing lines,
    and each learner's stage scores in nbgrader's gradebook."""
    submissions = tmp_path / "class"
    solved = {"alice": STAGE_NAMES, "bob": PARTIAL}
    for learner, stages in solved.items():
        folder = submissions / learner
        folder.mkdir(parents=True)
        for path, text in release.submission(solved=stages).items():
            (folder / path).write_text(text, encoding="utf-8")
        shutil.copy(LAB, folder / notebook.NOTEBOOK)
    course = tmp_path / "course"
    command = _make_nbgrade(SUBMISSIONS=str(submissions))
    done = subprocess.run([str(ROOT / command[0]), *command[1:], "--course", str(course)],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    closing = done.stderr.splitlines()[-2:]
    assert closing[0].startswith(f"wrote {course / 'grades.csv'} (nbgrader's export)"), closing
    assert closing[1].startswith(f"feedback: {course / 'feedback'}/<learner>/"), closing
    book = nbgrade.gradebook_scores(course)
    rubric = load_rubric()
    for learner, stages in solved.items():
        assert {s: book[learner][notebook.grade_id(s)] for s in STAGE_NAMES} == {
            s: rubric.stage_max(s) if s in stages else 0.0 for s in STAGE_NAMES}, learner
        assert (course / "feedback" / learner / nbgrade.ASSIGNMENT / "lab.html").is_file()


def test_a_py_file_that_does_not_parse_is_told_in_the_feedback(nbgraded):
    """The grader's notes on the .py files (as every front end gives them) are in stages.csv
    and at the top of the learner's notebook, so nbgrader's feedback page carries them."""
    _, course, *_ = nbgraded
    assert "params.py: SyntaxError at line" in _csv(course / "stages.csv")["typo"]["notes"]
    for learner, told in (("typo", True), ("complete", False)):
        html = (course / "feedback" / learner / nbgrade.ASSIGNMENT / "lab.html").read_text()
        assert ("params.py: SyntaxError at line" in html) is told, learner
        assert ("Notes from the grader" in html) is told, learner


def test_feedback_shows_scores_not_the_hidden_tests(nbgraded):
    _, course, *_ = nbgraded
    results = json.loads((course / nbgrade.GRADES / "partial" / "results.json").read_text())
    failing = [t for t in results["tests"] if t["status"] != "passed"]
    assert failing
    html = (course / "feedback" / "partial" / nbgrade.ASSIGNMENT / "lab.html").read_text()
    stub, full = full_marks("neighbours"), full_marks("embedding")  # its stub stage, a done one
    assert f"not implemented yet, 0 / {stub}" in html and f"{full} / {full}" in html
    for test in failing:
        assert test["output"][:60] not in html
        assert test["name"].split(": ", 1)[1][:40] not in html
    hidden = {t for tests in load_rubric().points.values() for t in tests}
    assert not [t for t in hidden if t in html]


def test_operator_notes_stay_out_of_what_learners_get(nbgraded):
    """The grader's notes for its operator (the sandbox, its memory bound) are in each
    learner's results.json (extra_data), and nowhere in the notebook nbgrader graded or the
    feedback page it made (tests/test_operator_notes.py checks every other front end)."""
    from tests.test_operator_notes import _windows

    _, course, *_ = nbgraded
    for results in sorted((course / nbgrade.GRADES).glob("*/results.json")):
        learner = results.parent.name
        notes = json.loads(results.read_text())["extra_data"]["operator_notes"]
        assert notes and any("memory bound" in note for note in notes), learner
        for path in (course / "feedback" / learner / nbgrade.ASSIGNMENT / "lab.html",
                     course / "autograded" / learner / nbgrade.ASSIGNMENT / "lab.ipynb"):
            text = path.read_text(encoding="utf-8")
            for note in notes:
                assert not [w for w in _windows(note) if w in text], (path, note)


def _csv(path: Path, key: str = "learner") -> dict[str, dict[str, str]]:
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        return {row[key]: row for row in csv.DictReader(f)}


#: The one line of a check cell on a stage not written yet: what to write and where.
NOT_WRITTEN = ("NotWrittenYet: stage 'params' is not implemented yet: write count_params, "
               "ParamCount.embedding_share, ParamCount.memory_bytes in params.py, where each "
               "stub says YOUR CODE HERE, then run this cell again")


@pytest.mark.parametrize("solved", ["stub", "partly", "written"])
def test_a_check_cell_asserts_the_stages_visible_tests(tmp_path, solved):
    """In the learner's own kernel (JupyterLab, nbgrader validate), a check cell runs the
    stage's visible tests: on the stub it fails with one line, as nbgrader's feedback says
    "not implemented yet"; partly written, with the failing tests; written, it passes."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from tests.variants.build import replace_functions

    package = tmp_path / "embedding_layer"  # nbgrader's folder name: a package all the same
    release.write(package, solved=[] if solved == "stub" else ["params"])
    if solved == "partly":  # memory_bytes back to its stub, the rest of the stage written
        stub = release.submission()[Path("params.py")]
        body = stub[stub.index("    def memory_bytes"):stub.index("\n\n\ndef count_params")]
        written = (package / "params.py").read_text(encoding="utf-8")
        (package / "params.py").write_text(replace_functions(written, {
            "ParamCount.memory_bytes": body}), encoding="utf-8")
    shutil.copytree(ROOT / "exercises" / "tests", package / "tests", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    nb = _lab()
    nb.cells = [_cell(nb, "setup"), _cell(nb, "stage_params")]
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(package)}})
    if solved == "written":
        client.execute()
        assert "passed" in nb.cells[1].outputs[0]["text"]
        return
    with pytest.raises(CellExecutionError):
        client.execute()
    outputs = nb.cells[1].outputs
    shown = [line for out in outputs for line in (out.get("text", "").splitlines()
                                                   + out.get("traceback", []))]
    if solved == "stub":
        assert [o["output_type"] for o in outputs] == ["error"] and shown == [NOT_WRITTEN], shown
    else:  # the tests that fail, each in its one line, and the cell's assertion
        assert any("not implemented yet: ParamCount.memory_bytes" in line for line in shown)
        assert "passed" in outputs[0]["text"] and "some visible tests fail" in outputs[-1][
            "evalue"], shown


def test_nothing_of_the_instructors_is_overwritten(tmp_path):
    """nbgrade rebuilds the course's submitted/ from SUBMISSIONS: it refuses a course whose
    submitted/ it did not write (nbgrader collect's), and folders inside one another."""
    course = tmp_path / "course"
    collected = course / "submitted" / "alice" / nbgrade.ASSIGNMENT
    collected.mkdir(parents=True)
    (collected / "lab.ipynb").write_text("{}")
    (tmp_path / "class").mkdir()
    with pytest.raises(nbgrade.NbgradeError, match="did not copy there"):
        nbgrade.run(tmp_path / "class", course)
    for submissions, where in ((course / "submitted", course), (tmp_path, course / "sub")):
        with pytest.raises(nbgrade.NbgradeError, match="inside one another"):
            nbgrade.run(submissions, where)
    assert (collected / "lab.ipynb").read_text() == "{}"


# --- nbgrader's own layouts, late submissions and reruns ---------------------------------------

#: When each learner submitted, as the LMS's download names it: zip_collect's timestamp group.
SUBMITTED_AT = {"ontime": "20261130T120000Z", "late": "20261202T090000Z"}
ZIP_COLLECT = '''
c.FileNameCollectorPlugin.named_regexp = (
    r".*/(?P<student_id>[a-z]+)_(?P<timestamp>[0-9TZ]+)_(?P<file_id>[a-z0-9_]+\\.[a-z]+)")
c.FileNameCollectorPlugin.valid_ext = [".ipynb", ".py"]
'''


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """An instructor's own course, where ``nbgrader zip_collect`` gathered an LMS's download (a
    zip per learner, each file named learner_time_file); its submitted/ graded by nbgrade with
    a due date and the 'zero' penalty, then again after one learner changed a file.

    Returns (run -> (exit status, what it printed, grades.csv, stages.csv)), the submitted/."""
    root = tmp_path_factory.mktemp("collected")
    theirs = notebook.make_course(root / "theirs")
    (theirs / notebook.CONFIG).write_text((theirs / notebook.CONFIG).read_text() + ZIP_COLLECT)
    archive = theirs / "downloaded" / nbgrade.ASSIGNMENT / "archive"
    archive.mkdir(parents=True)
    for learner, when in SUBMITTED_AT.items():
        with zipfile.ZipFile(archive / f"{learner}.zip", "w") as packed:
            for name in SUBMISSION_FILES:
                packed.write(ROOT / "lumen" / name, f"{learner}_{when}_{name}")
            packed.write(LAB, f"{learner}_{when}_{notebook.NOTEBOOK}")
    notebook.nbgrader(theirs, "zip_collect", nbgrade.ASSIGNMENT)
    submitted = theirs / "submitted"
    (submitted / "empty").mkdir()  # neither layout
    runs = {}
    for run in ("first", "rerun"):
        if run == "rerun":  # the late learner sends params.py again, as the stub
            shutil.copy(ROOT / "exercises" / "params.py",
                        submitted / "late" / nbgrade.ASSIGNMENT / "params.py")
        log = root / f"{run}.txt"
        with open(log, "w") as progress:
            code = nbgrade.run(submitted, root / "course", jobs=1, progress=progress, due=DUE,
                               late_penalty="zero")
        runs[run] = (code, log.read_text(), _csv(root / "course" / "grades.csv", "student_id"),
                     _csv(root / "course" / "stages.csv"))
    return runs, submitted


def test_zip_collects_layout_is_graded(collected):
    runs, submitted = collected
    assert (submitted / "late" / nbgrade.ASSIGNMENT / "timestamp.txt").is_file()  # nbgrader's
    code, progress, grades, stages = runs["first"]
    assert code == 1, progress  # "empty" is listed, the others graded
    for learner in SUBMITTED_AT:
        assert [stages[learner][s] for s in STAGE_NAMES] == [
            f"{load_rubric().stage_max(s):g}" for s in STAGE_NAMES], learner
    assert "holds neither a learner's files nor embedding_layer/" in stages["empty"]["notes"]
    assert "not graded: empty" in progress


def test_a_late_submission_gets_nbgraders_penalty(collected):
    """The timestamps zip_collect wrote reach nbgrader's gradebook, and its own late penalty
    ('zero': the score) applies after the due date, and only then."""
    _, _, grades, _ = collected[0]["first"]
    late, ontime = grades["late"], grades["ontime"]
    assert late["timestamp"].startswith("2026-12-02 09:00:00") and late["duedate"].startswith(
        "2026-12-01 17:00:00"), late
    assert float(late["raw_score"]) == 100 and float(late["late_submission_penalty"]) == 100
    assert float(late["score"]) == 0
    assert ontime["timestamp"].startswith("2026-11-30 12:00:00"), ontime
    assert float(ontime["late_submission_penalty"]) == 0 and float(ontime["score"]) == 100


def test_a_rerun_grades_only_new_or_changed_submissions(collected):
    runs, _ = collected
    assert "reused" not in runs["first"][1]
    progress, stages = runs["rerun"][1], runs["rerun"][3]
    assert "reused the grades of 1 learner graded before" in progress, progress
    assert "grading 1 learner in the sandbox" in progress, progress
    assert stages["late"]["params"] == "0" and stages["ontime"]["params"] == \
        runs["first"][3]["ontime"]["params"]  # the changed file regraded, the other kept
    assert stages["late"]["embedding"] == runs["first"][3]["late"]["embedding"]


def test_a_layout_that_is_neither_is_named(tmp_path):
    """SUBMISSIONS that is one learner's folder, or a whole course, is refused with the fix."""
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "embeddings.py").write_text("")
    with pytest.raises(nbgrade.NbgradeError, match="holds a learner's files itself"):
        nbgrade.learner_folders(tmp_path / "alice")
    course = notebook.make_course(tmp_path / "course")
    (course / "submitted").mkdir()
    with pytest.raises(nbgrade.NbgradeError, match="pass its submitted/ folder"):
        nbgrade.learner_folders(course)
    folders, problems = nbgrade.learner_folders(tmp_path)
    assert folders == {"alice": tmp_path / "alice"} and set(problems) == {"course"}


def test_a_timestamp_that_is_not_a_date_is_not_carried(tmp_path):
    (tmp_path / "timestamp.txt").write_text("next tuesday-ish")
    (tmp_path / "out").mkdir()
    note = nbgrade.carry_timestamp(tmp_path, tmp_path / "out")
    assert "not a date nbgrader reads" in note and not (tmp_path / "out" / "timestamp.txt").exists()


def test_a_learners_own_timestamp_sets_no_submission_time(tmp_path):
    """In a folder of a learner's own files, timestamp.txt is the learner's: never carried,
    whatever date it holds; in collect's layout, nbgrader's is."""
    submissions = tmp_path / "submissions"
    for learner, folder in (("own", submissions / "own"),
                            ("collected", submissions / "collected" / nbgrade.ASSIGNMENT)):
        folder.mkdir(parents=True)
        (folder / "timestamp.txt").write_text("2026-11-30 12:00:00 UTC\n")  # before the due date
        (tmp_path / learner).mkdir()
        note = nbgrade.submission_time(submissions, learner, folder, tmp_path / learner)
        carried = tmp_path / learner / "timestamp.txt"
        if learner == "own":
            assert note == nbgrade.OWN_TIMESTAMP and not carried.exists()
        else:
            assert note is None and carried.read_text().startswith("2026-11-30 12:00:00")
    (submissions / "own" / "timestamp.txt").unlink()
    assert nbgrade.submission_time(submissions, "own", submissions / "own", tmp_path) is None



def test_a_renamed_notebook_is_looked_for_within_the_intake_bound(tmp_path):
    """Without lab.ipynb, the one other notebook is graded as it; the folder is looked through
    for it only up to intake's bound on entries, so a folder of millions costs no more."""
    from autograder.boundary.intake import MAX_ZIP_MEMBERS
    from autograder.frontends.nbgrade_repair import _read_notebook, other_notebooks

    (tmp_path / "mine.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / ".hidden.ipynb").write_text("{}", encoding="utf-8")
    assert other_notebooks(tmp_path) == [tmp_path / "mine.ipynb"]
    assert other_notebooks(tmp_path / "absent") == []
    for n in range(MAX_ZIP_MEMBERS):
        (tmp_path / f"{n}.txt").touch()
    assert other_notebooks(tmp_path) is None
    nb, notes = _read_notebook(tmp_path)
    assert nb is None and f"over {MAX_ZIP_MEMBERS:,} files beside it" in notes[0], notes
