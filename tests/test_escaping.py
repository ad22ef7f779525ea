"""What goes out is escaped for where it goes (autograder/views/escape.py).

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

from autograder.frontends import batch, classbook, exports, nbgrade, nbgrade_markdown
from autograder.frontends.summary import write_summary
from autograder.results import TestResult, score
from autograder.rubric import load
from autograder.views import escape, report
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
    """Batch rows as ``classbook.collect`` makes them: a hostile name, a hostile message and a
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
    classbook.write_csv(tmp_path / "grades.csv", rows)
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
    classbook.write_csv(tmp_path / "grades.csv", rows)
    assert (tmp_path / "grades.csv").read_text() == (
        f"learner,total,{','.join(STAGE_NAMES)},seconds,notes\n"
        f"alice,92.5,20,12.5{',' * (len(STAGE_NAMES) - 1)}3.25,\n"
        f"bob{',' * (len(STAGE_NAMES) + 3)}not graded: both bob and bob.zip: keep only one\n")


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
    write_summary(tmp_path, rows)
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
    code = batch.run(subs, out, batch=batch.Batch(jobs=2, exports=exports.FORMATS,
                                                  roster=roster_), progress=progress)
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
#: Images that would load from elsewhere in the grader's browser (a tracking pixel), links
#: by reference, and a mermaid block, whose text nbconvert writes into the page as it is.
TRACKING = ('![t](http://evil.example/t.png) <img src="http://evil.example/u.png"> [r][bad] '
            '![s][pic] [n](\njavascript:alert(18))\n\n[bad]: javascript:alert(19)\n'
            '[pic]: https://evil.example/v.png\n\n```mermaid\n<img src=x onerror=alert(21)>\n```')
HONEST_ANSWER = ("Because b - a + c stays nearest to *b*: the inputs win unless excluded, "
                 "so $\\cos(a, b) < 1$ alone says little; see `most_similar(a, b)` and "
                 "[the paper](https://arxiv.org/abs/1301.3781).")
RENAMED = "<img src=x onerror=alert(7)>.ipynb"


@pytest.fixture(scope="module")
def nbgraded_hostile(tmp_path_factory):
    """One nbgrade run: ``evil`` (hostile written answers, raw cell, output, a notebook whose
    file name is HTML) and ``honest``, and two folders whose names are formulas."""
    import nbformat

    from autograder.publish import notebook

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
                f"{ANSWER}\n\n{TRACKING}" if name == "evil" else HONEST_ANSWER)
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
    code = nbgrade.run(subs, root / "course", jobs=1, progress=progress)
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
    first = f"{sum(load().points[STAGE_NAMES[0]].values()):g}"  # the first stage's points
    assert f"{first} / {first}, " in page.text and "Because b - a + c stays nearest to" in page.text
    assert "em" in page.tags, "honest Markdown is still rendered"
    assert "(Score: 100.0 / " in page.text or "Score: 100" in page.text


def test_nbgrader_stages_csv_has_no_formula(nbgraded_hostile):
    _, course, _ = nbgraded_hostile
    rows = _rows(course / "stages.csv")
    assert_no_formula(rows)
    learners = {row[0] for row in rows[1:]}
    assert {"evil", "honest", "'=HYPERLINK(\"x\",\"y\")", "'+1+cmd|' \\C calc'!A0"} <= learners
    evil = next(row for row in rows if row[0] == "evil")
    assert RENAMED in evil[-1] and evil[1] == f"{sum(load().points[STAGE_NAMES[0]].values()):g}"


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

    from autograder.publish import notebook

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


# --- a learner's Markdown, stored inert for formgrader ------------------------------------------

#: Markdown an attacker who has read escape.inert_markdown would write: raw tags and handlers,
#: comments, entities, every way to write a script link (scheme case, tab, entity, backslash,
#: next line, angle brackets, a reference), remote and missing images, a mermaid block, and
#: places where the scanner and the renderer might disagree about what is code or math.
HOSTILE_MARKDOWN = [
    "<script>alert(1)</script>",
    "x <img src=x onerror=alert(1)> y",
    "<div>\n<iframe src=//evil.example></iframe>\n</div>",
    "<!-- c --><style>*{display:none}</style>",
    "<details open ontoggle=alert(1)>z</details>",
    "[a](javascript:alert(1))",
    "[a](JaVaScRiPt:alert(1)) [b]( vbscript:x) [c](data:text/html,x)",
    "[a](jav&#x09;ascript:alert(1)) [b](&#106;avascript:alert(1))",
    "[a](javascript\\:alert(1))",
    "[a](\njavascript:alert(1))",
    "[a](<javascript:alert(1)>)",
    "[a][r]\n\n[r]: javascript:alert(1)",
    "> [a][r]\n>\n> [r]: javascript:alert(1)",
    "<javascript:alert(1)>",
    "![t](http://evil.example/t.png)",
    "![t][r]\n\n[r]: https://evil.example/t.png",
    "[![t](https://evil.example/t.png)](https://ok.example)",
    "![m](attachment:missing.png)",
    "```mermaid\n<img src=x onerror=alert(1)>\n```",
    "```\n<b>fenced</b>\n```\n\n<script>alert(1)</script>",
    "$$\n```\n$$\n<script>alert(1)</script>\n```",
    "$a\n\n<script>alert(1)</script>$",
    "`a\n\n<script>alert(1)</script>`",
    "\\`<script>alert(1)</script>\\`",
    "\\\\<script>alert(1)</script>",
    "$x$<script>alert(1)</script>$y$",
    "| a | <img src=x onerror=alert(1)> |\n|---|---|\n| 1 | 2 |",
    "term\n: <script>alert(1)</script>",
    "- [ ] <svg onload=alert(1)>",
]
#: Safe as nbconvert reads them, live where a renderer reads them otherwise (a fence inside a
#: list item, math that a renderer without math reads as a link): stored inert all the same.
CORNERS = [
    "- a\n   ```\n<script>alert(1)</script>\n```",
    "$[a](javascript:alert(1))$",
    "$<script>alert(1)</script>$",
]

#: Honest answers: each renders exactly as it did (no note).
HONEST_MARKDOWN = [
    HONEST_ANSWER.replace("$\\cos(a, b) < 1$", "$\\cos(a, b)$"),
    "**Why:** the inputs are *nearest*; excluding them, the answer is `queen`.",
    "1. tie when `V x d` is a large share\n2. untie when it is small\n\n- a\n- b",
    "| model | tied |\n|:--|--:|\n| GPT-2 | yes |",
    "> a quote\n> > nested",
    "```python\nif a < b and c > d:\n    print('<ok>')\n```",
    "see https://example.org/?a=1&b=2 or [this](https://example.org \"t\") or [me](mailto:a@b.c)",
    "## Heading\n\n$$\\sum_i x_i^2$$ and $\\sqrt{d}$, a - b, 3 * 4",
    "![plot](attachment:plot.png)",
    "a < b, b > c, x->y",
]
ATTACHED = {"plot.png": {"image/png": "iVBORw0KGgo="}}


def _inert_page(html: str) -> list[str]:
    """What would run or load in a browser: scripts and the like, event handlers, script and
    data links, images from anywhere but the notebook itself."""
    page = Page(html)
    found = page.live()
    for tag, attrs in page.elements:
        if tag in ("iframe", "object", "embed", "style", "form", "base", "link", "meta"):
            found.append(tag)
        url = re.sub(r"[\x00-\x20]", "", attrs.get("href") or attrs.get("src") or "").lower()
        if url.startswith(("data:", "vbscript:")) and not (tag == "img"
                                                          and url.startswith("data:image/")):
            found.append(f"{tag} {url}")
        if tag == "img" and not url.startswith("data:image/"):
            found.append(f"img {url}")
    return found


@pytest.mark.parametrize("source", HOSTILE_MARKDOWN + CORNERS)
def test_a_hostile_markdown_cell_is_stored_inert(source):
    try:  # the attack is real: as sent, nbconvert (formgrader's renderer) makes live HTML
        before = nbgrade.markdown_problems(nbgrade.render_markdown(source, ATTACHED))
    except Exception:  # noqa: BLE001 - a missing attachment stops the page altogether
        before = ["the renderer fails"]
    assert before or source in CORNERS, source
    shown, kinds = nbgrade.written_answer(source, ATTACHED)
    html = nbgrade.render_markdown(shown, ATTACHED)
    assert not nbgrade.markdown_problems(html), (source, shown, html)
    assert not _inert_page(html), (source, shown, html)
    assert kinds <= set(nbgrade.INERT_KINDS) and (kinds or source in CORNERS), source
    if "`" not in source:  # outside code, no "<" is left in what nbgrader stores
        assert "<" not in shown, shown


def test_hostile_text_is_still_shown_as_text():
    shown, kinds = nbgrade.written_answer(
        "<script>alert(1)</script> [a](javascript:alert(2)) ![t](http://evil.example/t.png)", {})
    text = " ".join(Page(nbgrade.render_markdown(shown, {})).text.split())
    assert text == "<script>alert(1)</script> [a](javascript:alert(2)) !t", text
    assert kinds == {"html", "link", "image"}
    link = [a for t, a in Page(nbgrade.render_markdown(shown, {})).elements if t == "a"]
    assert link == [{"href": "http://evil.example/t.png"}], "an image is a link at most"


@pytest.mark.parametrize("source", HONEST_MARKDOWN)
def test_an_honest_markdown_cell_renders_as_it_did(source):
    shown, kinds = nbgrade.written_answer(source, ATTACHED)
    assert kinds == set(), (source, shown)
    assert nbgrade.render_markdown(shown, ATTACHED) == nbgrade.render_markdown(source, ATTACHED)


def test_a_very_long_markdown_cell_is_plain_text_and_quick():
    import time

    # CPU seconds of this process, not the wall clock's: a busy machine stretches the one,
    # never the other, and a pattern that backtracks without end costs minutes of either.
    started = time.process_time()
    crafted = ["".join("`" * k + "<b>x" for k in range(1, 190)),  # unclosed code spans
               "\\begin{a}<b>" * 1600, "$" + "\\begin{a}" * 2000]  # unclosed math
    for source in crafted:
        shown, kinds = nbgrade.written_answer(source, {})
        assert not nbgrade.markdown_problems(nbgrade.render_markdown(shown, {})), source[:50]
        assert "<" not in shown.replace("\\lt", "")
    long = "<script>" * 3000
    shown, kinds = nbgrade.written_answer(long, {}, scan=False)
    assert kinds == {"long"} and not nbgrade.markdown_problems(nbgrade.render_markdown(shown, {}))
    assert nbgrade.written_answer("\\begin{a}" * 9000, {}, scan=False)[1] == {"long"}
    assert time.process_time() - started < 30


def test_math_keeps_its_comparisons_for_mathjax():
    shown, kinds = nbgrade.written_answer("$a<b$ and $$x>y$$ and `a<b>`", {})
    assert shown == "$a\\lt b$ and $$x\\gt y$$ and `a<b>`" and kinds == set()


def test_the_release_notebook_is_stored_as_it_is():
    """Every Markdown cell the course itself wrote (what an honest learner leaves alone)."""
    import nbformat

    from autograder.publish import notebook

    release = nbformat.read(ROOT / "exercises" / notebook.NOTEBOOK, as_version=4)
    for cell in release.cells:
        if cell.cell_type == "markdown":
            assert nbgrade.written_answer(cell.source, {}) == (cell.source, set())


def _notebook(course: Path, folder: str, learner: str):
    import nbformat

    return nbformat.read(course / folder / learner / nbgrade.ASSIGNMENT / "lab.ipynb",
                         as_version=4)


def test_nbgrader_stores_written_answers_inert(nbgraded_hostile):
    """submitted/ (our copy) and autograded/ (nbgrader's, which formgrader renders): the
    hostile learner's written answers hold no raw tag and no script link; the note says
    so; the honest learner's answers are theirs, with no note."""
    from autograder.publish import notebook

    _, course, _ = nbgraded_hostile
    for folder in ("submitted", "autograded"):
        nb = _notebook(course, folder, "evil")
        for gid in load().written:
            source = notebook.nbgrader_cells(nb)[gid].source
            assert "```\n<img src=x onerror=alert(21)>\n```" in source, "mermaid: plain code"
            outside_code = re.sub(r"(?ms)^```.*?^```", "", source)
            assert "<" not in outside_code and "https://example.org/ok" in source, source
            assert not re.search(r"(?<!\\)\]\((?!https?://|mailto:|#)", source), source
        note = Page(nbgrade.render_markdown(nb.cells[0].source, {})).text
        assert ("Markdown cell(s) of lab.ipynb held raw HTML or a link that is not http, "
                "https or mailto or an image not attached to the notebook: shown as text") in note
        honest = _notebook(course, folder, "honest")
        answers = {notebook.nbgrader_cells(honest)[g].source for g in load().written}
        assert answers == {HONEST_ANSWER.replace("<", "\\lt ")}
        assert "shown as text" not in json.dumps(honest.cells[0].source)


def _formgrade_view(course: Path, learner: str) -> str:
    """The page formgrader serves an instructor for a learner's notebook: nbgrader's own
    handler's exporter and template (formgrade/index.html.j2) on the autograded notebook."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    config = Config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    path = course / "autograded" / learner / nbgrade.ASSIGNMENT / "lab.ipynb"
    resources = {"assignment_id": nbgrade.ASSIGNMENT, "notebook_id": "lab",
                 "submission_id": "s1", "index": 0, "total": 2, "base_url": "/x",
                 "student": learner, "last_name": "", "first_name": "",
                 "notebook_path": str(path)}
    return HTMLExporter(config=config).from_filename(str(path), resources=resources)[0]


def test_formgrader_view_holds_no_live_html(nbgraded_hostile, tmp_path):
    _, course, _ = nbgraded_hostile
    html = _formgrade_view(course, "evil")
    # The notebook's part of the page (the template's own navigation has its handlers).
    body = html.split('id="notebook-container"', 1)[1].split('<div class="help">', 1)[0]
    assert not _inert_page(body), _inert_page(body)
    assert "evil.example" not in "".join(
        a.get("src") or "" for _, a in Page(body).elements), "no image loads from elsewhere"
    text = " ".join(Page(body).text.split())
    assert "<script>alert(1)</script>" in text and "fine" in text
    assert "Student's answer" in text  # it is formgrader's view of the written answers
    honest = " ".join(Page(_formgrade_view(course, "honest")).text.split())
    assert "Because b - a + c stays nearest to b: the inputs win unless excluded" in honest
    (tmp_path / "evil.html").write_text(html, encoding="utf-8")


def test_formgrader_view_runs_nothing_in_a_browser(nbgraded_hostile, tmp_path):
    """The same page in headless Chromium, offline: no dialog opens, no request goes out to
    the learner's hosts, no flag is set by anything of the learner's."""
    from tests import test_page

    _, course, _ = nbgraded_hostile
    page_file = tmp_path / "evil.html"
    page_file.write_text(_formgrade_view(course, "evil").replace(
        "alert(", "(window.__pwned=1),alert("), encoding="utf-8")
    executable = test_page._chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is a dev requirement: pip install -r requirements-dev.txt")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        context = browser.new_context(offline=True)
        tab = context.new_page()
        dialogs, requests = [], []
        tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        tab.on("request", lambda r: requests.append(r.url))
        tab.goto(page_file.as_uri(), wait_until="load")
        tab.wait_for_timeout(500)
        answers = "#notebook-container"
        for element in tab.query_selector_all(f"{answers} details, {answers} button"):
            element.click(timeout=1000)  # what a grader might open or press (none is left)
        hrefs = tab.evaluate(f"[...document.querySelectorAll('{answers} a')].map(a => a.href)")
        pwned = tab.evaluate("window.__pwned")
        text = tab.inner_text("body")
        browser.close()
    assert not dialogs and pwned is None, (dialogs, pwned)
    assert not [u for u in requests if "evil.example" in u], requests
    assert hrefs and all(h.startswith(("https:", "http:", "mailto:", "file:")) for h in hrefs), \
        hrefs  # file: is the page itself, for its #anchors
    assert "<script>(window.__pwned=1),alert(1)</script>" in text


def test_repair_scans_only_so_much_markdown(monkeypatch):
    """A notebook of many crafted cells: past ``MAX_MARKDOWN`` in all, cells are plain text,
    and the note says why. The work is bounded, whatever the notebook's size: the scanner
    reads at most ``MAX_MARKDOWN`` characters in all, and the renderer sees only the cells it
    scanned (a few renderings each), never the ones stored as plain text."""
    import nbformat

    from autograder.publish import notebook

    release = nbformat.read(ROOT / "exercises" / notebook.NOTEBOOK, as_version=4)
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    nb.cells += [nbformat.v4.new_markdown_cell("<b>x</b> $a<b$ \\begin{a}" * 400)
                 for _ in range(12)]
    scanned, rendered = [], []

    def counted(calls, real):
        return lambda source, *rest, **named: (calls.append(len(source)),
                                                real(source, *rest, **named))[1]

    markdown = nbgrade_markdown  # where repair's written_answer looks both up
    monkeypatch.setattr(markdown, "inert_markdown", counted(scanned, markdown.inert_markdown))
    monkeypatch.setattr(markdown, "render_markdown", counted(rendered, markdown.render_markdown))
    repaired, notes = nbgrade.repair(nb, release)
    monkeypatch.undo()
    assert 0 < sum(scanned) <= nbgrade.MAX_MARKDOWN, scanned
    assert len(rendered) <= 5 * len(scanned), (len(rendered), len(scanned))
    mine = [c.source for c in repaired.cells[-12:]]
    assert all("<b>" not in s for s in mine) and mine[0] != mine[-1]  # scanned, then plain
    for source in mine:
        assert not nbgrade.markdown_problems(nbgrade.render_markdown(source, {}))
    assert len(notes) == 1 and notes[0].startswith("12 Markdown cell(s) of lab.ipynb held raw "
                                                   "HTML or more than 20,000 characters")
