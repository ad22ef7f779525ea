"""What goes out is escaped for where it goes (autograder/escape.py).

Learner-chosen names (submission folders and zips, notebook file names) and learner text
(written answers, printed output, messages) reach every file the grader writes. Each file is
read back here as its consumer reads it: the CSVs with the csv module, as a spreadsheet would
(no cell a formula), summary.md rendered by Markdown renderers and parsed as HTML (no tag,
link, image, heading or table cell of the learner's), the terminal report and progress as a
terminal shows them (no live escape sequence), JUnit as XML, and nbgrader's feedback HTML
parsed for scripts, event handlers and javascript: URLs, from a real pipeline run.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import xml.etree.ElementTree as ElementTree
from html.parser import HTMLParser
from pathlib import Path

import pytest

from autograder import batch, escape, exports, nbgrade, report
from autograder.results import TestResult, score
from autograder.rubric import load
from lumen.stages import STAGE_NAMES, SUBMISSION_FILES

ROOT = Path(__file__).resolve().parents[1]

#: Names and texts an attacker who has read escape.py would try: formulas of every starting
#: character (and after spaces, tabs and full-width forms), HTML, Markdown's active
#: characters, terminal escapes and bidi overrides.
HOSTILE = [
    '=HYPERLINK("http://x","y")',
    "+1+cmd|' /C calc'!A0",
    "@SUM(1)",
    "-2+3",
    "\t=1",
    "\r=1",
    "  =1+1",
    "\uff1dcmd()",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "a|b`c`[x](javascript:alert(1))",
    "![i](http://x/y.png)",
    "# heading",
    "1. list",
    "> quote",
    "---",
    "&lt;script&gt;",
    "<http://evil.example>",
    "see http://evil.example or www.evil.example or me@evil.example",
    "\x1b[2Jcleared\x1b]0;title\x07",
    "name\u202egpj.exe",
    "two\nlines\n===",
]
#: Folder names: a path may not hold "/" or NUL; everything else is fair.
HOSTILE_NAMES = [h.replace("/", "_") for h in HOSTILE if "\x00" not in h]
FORMULA = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
NUMBER = re.compile(r"-?\d+(\.\d+)?(e[+-]\d+)?")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: What a terminal would act on: every control character but newline and tab (printed
#: output keeps its lines and tabs), and the bidi controls.
LIVE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def assert_no_formula(rows: list[list[str]]) -> None:
    """Every cell as a spreadsheet reads it: none starts (after spaces) with a formula
    character unless it is a plain number (a spreadsheet reads "-2" as minus two, which is
    what the grader wrote), none holds a control character."""
    for row in rows:
        for cell in row:
            assert NUMBER.fullmatch(cell) or not cell.lstrip(" ").startswith(FORMULA), cell
            assert not CONTROL.search(cell), cell


# --- the cleaning functions ---------------------------------------------------------------------


@pytest.mark.parametrize("text", HOSTILE)
def test_csv_text_is_never_a_formula(text):
    cell = escape.csv_text(text)
    assert_no_formula([[cell]])
    assert escape.csv_text(cell) == cell, "escaping twice changes nothing more"


def test_csv_keeps_honest_text_and_numbers():
    for honest in ("alice", "bob.smith", "Adams, Alice", "s_01", "grading error: x", ""):
        assert escape.csv_text(honest) == honest
    assert escape.csv_text("-2+3") == "'-2+3"  # a learner's name: text, shown as typed
    assert [escape.csv_number(x) for x in (-2.0, 92.5, 100.0, 0.0, None)] == \
        ["-2", "92.5", "100", "0", ""]  # the grader's numbers: numbers


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_shows_text_as_it_is(text):
    import markdown_it

    for render in (markdown_it.MarkdownIt("gfm-like").render, _mistune()):
        html = render(f"| a | b |\n|---|---|\n| {escape.markdown_inline(text)} | x |\n\n"
                      f"- {escape.markdown_inline(text)}\n\n"
                      + "\n".join(f"> {line}" for line in escape.markdown_text(text).split("\n")))
        page = Page(html)
        assert page.tags <= {"table", "thead", "tbody", "tr", "th", "td", "ul", "li",
                             "blockquote", "p", "br"}, (text, html)
        assert page.cells == [2, 2], (text, html)  # the learner's | makes no cell
        shown = " ".join(escape.terminal(text).split())
        assert shown in " ".join(page.text.split()), (text, html)


def test_terminal_shows_control_characters_as_text():
    shown = escape.terminal("\x1b[2J\x1b]0;t\x07a\u202eb\r\n")
    assert not CONTROL.search(shown) and shown == "\\x1b[2J\\x1b]0;t\\x07a\\u202eb\\r\\n"
    assert escape.terminal("plain text: 1 < 2") == "plain text: 1 < 2"


# --- the batch's files --------------------------------------------------------------------------


def _mistake(stage: str, message: str) -> dict:
    return {"id": "x", "kind": "mistake", "stage": stage, "test": "test_x", "title": "rows",
            "message": message}


def hostile_rows() -> list[dict]:
    """Batch rows as ``batch.collect`` makes them: a hostile name, a hostile message and a
    hostile note on every learner, some not graded."""
    rows = []
    for i, name in enumerate(HOSTILE_NAMES):
        graded = i % 3 != 2
        rows.append({"learner": name, "total": -2.0 + i if graded else None,
                     "stages": {"embedding": 10.0 + i % 2} if graded else {},
                     "max": {"embedding": 20.0} if graded else {},
                     "seconds": 1.5 if graded else None, "notes": [f"note {name}"],
                     "mistakes": [_mistake("embedding", f"expected 3, got {name}")]
                     if graded else []})
    return rows


def test_grades_csv_has_no_formula_and_keeps_numbers(tmp_path):
    rows = hostile_rows()
    batch.write_csv(tmp_path / "grades.csv", rows)
    read = _rows(tmp_path / "grades.csv")
    assert_no_formula(read)
    header, *body = read
    for row, cells in zip(rows, body, strict=True):
        assert cells[0] == escape.csv_text(row["learner"])
        total = cells[header.index("total")]
        assert total == ("" if row["total"] is None else f"{row['total']:g}")  # -2 is -2
        if row["total"] is not None:
            assert float(total) == row["total"]


def test_honest_grades_csv_is_unchanged(tmp_path):
    """The layout and bytes an honest class got before escaping existed."""
    rows = [{"learner": "alice", "total": 92.5, "stages": {"embedding": 20.0, "onehot": 12.5},
             "seconds": 3.25, "notes": []},
            {"learner": "bob", "total": None, "stages": {}, "seconds": None,
             "notes": ["not graded: both bob and bob.zip: keep only one"]}]
    batch.write_csv(tmp_path / "grades.csv", rows)
    assert (tmp_path / "grades.csv").read_text() == (
        f"learner,total,{','.join(STAGE_NAMES)},seconds,notes\n"
        "alice,92.5,20,12.5,,,,,3.25,\n"
        "bob,,,,,,,,,not graded: both bob and bob.zip: keep only one\n")


class Page(HTMLParser):
    """An HTML page as a browser builds it: its tags, attributes, table rows and text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.elements: list[tuple[str, dict]] = []
        self.cells: list[int] = []
        self.text = ""
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        self.elements.append((tag, dict(attrs)))
        if tag == "tr":
            self.cells.append(0)
        elif tag in ("td", "th"):
            self.cells[-1] += 1

    def handle_data(self, data: str) -> None:
        self.text += data

    def live(self, body_only: bool = False) -> list[str]:
        """Scripts, event handlers and script URLs (after <body> if ``body_only``)."""
        found, in_body = [], not body_only
        for tag, attrs in self.elements:
            in_body = in_body or tag == "body"
            if in_body and tag in ("script", "iframe", "object", "embed", "svg", "style"):
                found.append(tag)
            for name, value in attrs.items():
                url = re.sub(r"[\x00-\x20]", "", value or "").lower()
                if name.startswith("on") or url.startswith(("javascript:", "vbscript:")):
                    found.append(f"{tag} {name}={value}")
        return found


def _mistune():
    import mistune

    return mistune.create_markdown(plugins=["table", "url", "strikethrough"])


def test_summary_md_renders_no_learner_markup(tmp_path):
    import markdown_it

    rows = hostile_rows()
    batch.write_summary(tmp_path, rows)
    text = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert not CONTROL.search(text.replace("\n", ""))
    for render in (markdown_it.MarkdownIt("gfm-like").render, _mistune()):
        page = Page(render(text))
        assert not page.live()
        assert {t for t in page.tags if t[0] == "h"} <= {"h1", "h2", "h3"}
        headings = [t for t, _ in page.elements if re.fullmatch(r"h\d", t)]
        assert headings == ["h1", "h2", "h3"], "a learner's # made a heading"
        assert [(t, a) for t, a in page.elements if t in ("a", "img")] in (
            [], [("img", {"src": "histogram.png", "alt": "score histogram"})]), \
            "a learner's text made a link or an image"
        assert len(set(page.cells)) == 2, f"a learner's | made a cell: {page.cells}"
        assert "blockquote" in page.tags and "pre" not in page.tags
        for name in HOSTILE_NAMES:  # each name is shown, as text
            assert " ".join(escape.terminal(name).split()) in " ".join(page.text.split())


# --- the gradebook exports -----------------------------------------------------------------------


def test_exports_escape_learner_cells_and_keep_the_ids(tmp_path):
    rows = hostile_rows()
    lines = ["submission,name,canvas_id,sis_login_id,section,email"]
    for i, name in enumerate(HOSTILE_NAMES):
        if "\n" in name or "\r" in name or '"' in name:
            continue  # the instructor's CSV cannot hold these unquoted; quoted below
        lines.append(f"{name},{name},{1000 + i},login{i},{name},u{i}@uni.example")
    roster_text = "\n".join(lines) + '\n"=HYPERLINK(""x"")","=1+1",2000,l2000,"-x",v@uni.example\n'
    rows.append({**rows[0], "learner": '=HYPERLINK("x")', "total": -1.0})
    (tmp_path / "roster.csv").write_text(roster_text, encoding="utf-8")
    roster = exports.load_roster(tmp_path / "roster.csv")
    exports.check_roster(roster, list(exports.FORMATS))
    written, _ = exports.write_exports(tmp_path / "grades.csv", rows, roster,
                                       list(exports.FORMATS), "-Quiz (7)")
    assert len(written) == 3
    for path in written:
        read = _rows(path)
        assert_no_formula([row for row in read[1:]])  # the header is the instructor's
    canvas = _rows(exports.path_for(tmp_path / "grades.csv", "canvas"))
    assert canvas[0][-1] == "-Quiz (7)", "the assignment header Canvas matches on is kept"
    by_id = {row[1]: row for row in canvas[2:]}
    assert by_id["2000"][0] == "'=1+1" and by_id["2000"][-1] == "-1"  # a number, not text
    assert by_id["2000"][3] == "l2000", "an identifier is written as it is"
    moodle = _rows(exports.path_for(tmp_path / "grades.csv", "moodle"))
    assert ["v@uni.example", "-1"] in moodle


@pytest.mark.parametrize("ident", ["=1+1", "+44", "-bob", "@me", "a\x1bb", "1\t2", " =1"])
def test_an_identifier_that_is_a_formula_is_refused(tmp_path, ident):
    """An LMS matches learners by these byte for byte: escaping would break the match, so
    the roster is refused with the reason, before any grading."""
    (tmp_path / "r.csv").write_text(
        f'submission,canvas_id,email\nalice,"{ident}",a@uni.example\n', encoding="utf-8")
    roster = exports.load_roster(tmp_path / "r.csv")
    with pytest.raises(exports.RosterError, match="formula"):
        exports.check_roster(roster, ["canvas"])
    exports.check_roster(roster, ["moodle"])  # Moodle reads the email column: fine
    person = {"canvas_id": ident}
    assert_no_formula([[exports._cell(person, "canvas_id")]])  # and if it got past anyway


# --- the terminal report, feedback.txt, JUnit -----------------------------------------------------


def hostile_grade(name: str):
    rubric = load()
    verdicts = [TestResult(name=t, stage=s, title=t, passed=s != "embedding",
                           message=f"expected 1, got {name}",
                           output=f"printed {name}\n" if s == "embedding" else "")
                for s in STAGE_NAMES for t in rubric.points[s]]
    grade = score(verdicts, rubric, submission=f"/home/teacher/subs/{name}", seed=1,
                  devices=["cpu"], sandbox="bwrap", seconds=2.0)
    grade.notes = [f"{name}.py was ignored"]
    return grade


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_terminal_report_and_junit_hold_nothing_live(name):
    grade = hostile_grade(name)
    for text in (report.terminal(grade), report.visible_summary(grade, "after_due_date")):
        assert not LIVE.search(text), text
        assert "/home/teacher" not in text
    root = ElementTree.fromstring(report.junit(grade))  # well-formed XML, whatever the text
    failures = [f.get("message") for f in root.iter("failure")]
    assert failures and all(escape.terminal(name) in m or name in m for m in failures)
    assert {e.tag for e in root.iter()} == {"testsuites", "testsuite", "testcase", "failure"}
    data = json.loads(json.dumps(report.gradescope(grade)))  # results.json: JSON escapes
    assert data["tests"][0]["output"].startswith("expected 1, got")


def test_a_hostile_class_through_grade_batch(tmp_path):
    """grade-batch, for real, on learners whose folder names are hostile: every file it
    writes (grades.csv, summary.md, feedback.txt, results.json, progress, the exports)."""
    subs = tmp_path / "subs"
    names = ['=HYPERLINK("x","y")', "+1+cmd|' \\C calc'!A0", "<img src=x onerror=alert(1)>",
             "a|b`c`[x](javascript:alert(1))", "\x1b[2J\u202ename", "-2+3"]
    for i, name in enumerate(names):
        (subs / name).mkdir(parents=True)
        for file in SUBMISSION_FILES if i % 2 == 0 else SUBMISSION_FILES[1:]:
            shutil.copy(ROOT / ("lumen" if i < 4 else "exercises") / file, subs / name / file)
    (subs / "\x1b[31mred.txt").write_text("not a submission")
    roster = "submission,name,canvas_id,email\n" + "".join(
        f'"{n.replace(chr(34), chr(34) * 2)}","{n.replace(chr(34), chr(34) * 2)}",{100 + i},'
        f"u{i}@uni.example\n" for i, n in enumerate(names))
    (tmp_path / "roster.csv").write_text(roster, encoding="utf-8")
    progress = io.StringIO()
    out = tmp_path / "grades.csv"
    roster_ = exports.load_roster(tmp_path / "roster.csv")
    code = batch.run(subs, out, jobs=2, progress=progress, exports=list(exports.FORMATS),
                     roster=roster_)
    assert code == 0, progress.getvalue()
    shown = progress.getvalue()
    assert not LIVE.search(shown), shown
    assert "\\x1b[31mred.txt" in shown and "\\x1b[2J\\u202ename" in shown
    read = _rows(out)
    assert_no_formula(read)
    assert sorted(r[0] for r in read[1:]) == sorted(escape.csv_text(n) for n in names)
    totals = {r[0]: float(r[1]) for r in read[1:]}
    assert totals[escape.csv_text(names[0])] == 100.0  # the grade is a number
    for fmt in exports.FORMATS:
        assert_no_formula(_rows(exports.path_for(out, fmt))[1:])
    summary = (tmp_path / "grades" / "summary.md").read_text(encoding="utf-8")
    import markdown_it

    page = Page(markdown_it.MarkdownIt("gfm-like").render(summary))
    assert not page.live() and not [t for t, _ in page.elements if t == "a"]
    for name in names:
        feedback = (tmp_path / "grades" / name / "feedback.txt").read_text(encoding="utf-8")
        assert not LIVE.search(feedback), feedback
        assert json.loads((tmp_path / "grades" / name / "results.json").read_text())[
            "extra_data"]["learner"] == name  # JSON holds the name itself, escaped by JSON


# --- nbgrader: stages.csv and the feedback HTML ----------------------------------------------

#: A written answer that would run in the learner's (or a grader's) browser if shown as HTML.
ANSWER = ('<script>alert(1)</script> <img src=x onerror=alert(2)> [click](javascript:alert(3)) '
          '<a href="javascript:alert(4)">x</a> <svg onload=alert(5)></svg> '
          '<iframe src="javascript:alert(6)"></iframe> <style>body{display:none}</style> '
          '<a href="jav&#x09;ascript:alert(13)">y</a> <details open ontoggle=alert(14)>z</details>'
          ' <form action="javascript:alert(15)"><button>go</button></form> '
          '<a href=" data:text/html,<script>alert(17)</script>">d</a> '
          '<a href="https://example.org/ok" title="t">fine</a>')
RENAMED = "<img src=x onerror=alert(7)>.ipynb"


@pytest.fixture(scope="module")
def nbgraded_hostile(tmp_path_factory):
    """One nbgrade run: ``evil`` (hostile written answers, raw cell, output, a notebook whose
    file name is HTML) and ``honest``, and two folders whose names are formulas."""
    import nbformat

    from solutions import notebook

    root = tmp_path_factory.mktemp("nbescape")
    subs = root / "submissions"
    for name in ("evil", "honest"):
        folder = subs / name
        folder.mkdir(parents=True)
        for file in SUBMISSION_FILES:
            shutil.copy(ROOT / "lumen" / file, folder / file)
        nb = nbformat.read(ROOT / "exercises" / notebook.NOTEBOOK, as_version=4)
        for gid in load().written:
            notebook.nbgrader_cells(nb)[gid].source = (
                ANSWER if name == "evil" else "Because b - a + c stays nearest to *b*.")
        if name == "evil":
            nb.cells.append(nbformat.v4.new_raw_cell("<script>alert(8)</script>",
                                                     metadata={"raw_mimetype": "text/html"}))
            nb.cells.append(nbformat.v4.new_markdown_cell(
                '<script type="text/x-mathjax-config">alert(9)</script>\n\n'
                "$\\href{javascript:alert(10)}{x}$ <body onload=alert(16)>"))
            # Metadata forged to reach the page's table of contents, or to stop nbgrader
            # for the whole class: an invalid grade id, widget state without its "state",
            # a raw cell's mimetype that is a number.
            nb.cells.append(nbformat.v4.new_markdown_cell("forged", metadata={"nbgrader": {
                "grade": True, "solution": True, "points": 1, "schema_version": 3,
                "grade_id": 'x"><script>alert(20)</script>'}}))
            nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
                "x": "</script><script>alert(23)</script>"}}
            nb.cells.append(nbformat.from_dict({"cell_type": "raw", "id": "r1", "source": "r",
                                                "metadata": {"raw_mimetype": 5, "tags": 7}}))
            cell = nbformat.v4.new_code_cell("1")
            cell.outputs = [nbformat.v4.new_output("display_data", data={
                "text/html": "<script>alert(11)</script>", "application/javascript": "alert(12)"})]
            nb.cells.append(cell)
        nbformat.write(nb, folder / (RENAMED if name == "evil" else notebook.NOTEBOOK))
    for name in ('=HYPERLINK("x","y")', "+1+cmd|' \\C calc'!A0"):
        (subs / name).mkdir()
    progress = io.StringIO()
    code = nbgrade.run(subs, root / "course", jobs=2, progress=progress)
    return code, root / "course", progress.getvalue()


def _feedback(course: Path, learner: str) -> str:
    return (course / "feedback" / learner / nbgrade.ASSIGNMENT / "lab.html").read_text()


def test_nbgrader_feedback_holds_no_live_html(nbgraded_hostile):
    code, course, progress = nbgraded_hostile
    assert code == 1, progress  # the two folders that are no student id
    html = _feedback(course, "evil")
    page = Page(html)
    assert not page.live(body_only=True), page.live(body_only=True)
    head = html.split("<body", 1)[0]
    assert "alert(" not in head
    for shown in ("<script>alert(1)</script>", "<svg onload=alert(5)></svg>",
                  '<iframe src="javascript:alert(6)"></iframe>', "<script>alert(8)</script>",
                  '<script type="text/x-mathjax-config">alert(9)</script>'):
        assert shown in page.text, shown  # the learner's text, shown as text
    assert sum(t == "script" for t, _ in page.elements) == 2  # the template's MathJax pair
    assert "alert(12)" not in html  # JavaScript outputs are dropped
    hrefs = {a.get("href") for t, a in page.elements if t == "a" and a.get("href")}
    assert "https://example.org/ok" in hrefs, "an honest link is kept"
    assert not [h for h in hrefs if not h.startswith(("https:", "http:", "#", "mailto:"))], hrefs
    assert "was graded as lab.ipynb" in page.text and RENAMED in page.text
    assert "alert(20)" not in html and "alert(23)" not in html  # forged metadata is gone
    assert "carried nbgrader metadata the assignment does not have" in page.text
    assert "feedback withheld" not in progress, "the sanitiser let nothing through"


def test_nbgrader_honest_feedback_still_shows_the_scores(nbgraded_hostile):
    _, course, _ = nbgraded_hostile
    page = Page(_feedback(course, "honest"))
    assert "20 / 20, " in page.text and "Because b - a + c stays nearest to" in page.text
    assert "em" in page.tags, "honest Markdown is still rendered"
    assert "(Score: 100.0 / " in page.text or "Score: 100" in page.text


def test_nbgrader_stages_csv_has_no_formula(nbgraded_hostile):
    _, course, _ = nbgraded_hostile
    rows = _rows(course / "stages.csv")
    assert_no_formula(rows)
    learners = {row[0] for row in rows[1:]}
    assert {"evil", "honest", "'=HYPERLINK(\"x\",\"y\")", "'+1+cmd|' \\C calc'!A0"} <= learners
    evil = next(row for row in rows if row[0] == "evil")
    assert RENAMED in evil[-1] and evil[1] == "20"


def test_feedback_with_live_html_is_withheld(tmp_path):
    """The read-back after generate_feedback: a page that a sanitiser let through is never
    sent; one from an honest notebook is left as it is."""
    folder = tmp_path / "feedback"
    folder.mkdir()
    safe = ("<html><head><script src='https://cdn/mathjax.js'></script><style>a{}</style>"
            "</head><body><p>20 / 20</p></body></html>")
    (folder / "lab.html").write_text(safe)
    assert nbgrade.withhold_live_feedback(folder) is None
    assert (folder / "lab.html").read_text() == safe
    for live in ("<script>x</script>", "<img src=x onerror=y>", '<a href=" JaVa\tscript:x">',
                 "<svg><animate onbegin=x></svg>", '<iframe srcdoc="x"></iframe>',
                 '<form action="javascript:x">'):
        (folder / "lab.html").write_text(safe.replace("<p>", live + "<p>"))
        note = nbgrade.withhold_live_feedback(folder)
        assert note and "withheld" in note, live
        assert not Page((folder / "lab.html").read_text()).live()


def test_repair_keeps_the_learners_cells_and_the_releases_metadata():
    """Only cell types, sources and well-formed images are the learner's: forged nbgrader
    metadata, points, notebook metadata and malformed cell metadata are not carried over."""
    import nbformat

    from solutions import notebook

    release = nbformat.read(ROOT / "exercises" / notebook.NOTEBOOK, as_version=4)
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    gid = next(iter(load().written))
    answer = notebook.nbgrader_cells(nb)[gid]
    answer.source = "my answer"
    answer.metadata.nbgrader["points"] = 1000  # forged points on a real cell
    answer.attachments = {"a.png": {"image/png": "iVBORw0KGgo="}}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"x": 1}}
    nb.cells.append(nbformat.from_dict({"cell_type": "markdown", "id": "f", "source": "f",
                                        "metadata": {"nbgrader": {"grade_id": "<b>x</b>"}},
                                        "attachments": {"b.png": "not a dict"}}))
    nb.cells.append(nbformat.from_dict({"cell_type": "raw", "id": "r", "source": ["a", "b"],
                                        "metadata": {"raw_mimetype": 5}}))
    nb.cells.append(nbformat.from_dict({"cell_type": "heading", "id": "h", "source": "old"}))
    repaired, notes = nbgrade.repair(nb, release)
    cells = notebook.nbgrader_cells(repaired)
    assert set(cells) == set(notebook.nbgrader_cells(release))
    assert cells[gid].source == "my answer"
    assert cells[gid].metadata.nbgrader == notebook.nbgrader_cells(release)[gid].metadata.nbgrader
    assert cells[gid].attachments == {"a.png": {"image/png": "iVBORw0KGgo="}}
    assert repaired.metadata == release.metadata
    forged, raw = repaired.cells[-2:]
    assert forged.source == "f" and not forged.metadata and "attachments" not in forged
    assert raw.source == "ab" and not raw.metadata
    assert notes == ["1 cell(s) of lab.ipynb carried nbgrader metadata the assignment does not "
                     "have: they are graded as ordinary cells"]
    nbformat.validate(repaired)
