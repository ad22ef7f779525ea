"""Step 5 of nbgrade, inside ``nbgrader generate_feedback``: feedback pages that run nothing.

nbgrader's feedback template renders Markdown cells without nbconvert's ``sanitize_html``, so
``SafeFeedbackHTML`` cleans each one's HTML itself with bleach (``safe_html``: an allowlist of
tags and attributes, links only to http, https, mailto and anchors; any other tag is shown as
text), and the course's ``sanitize_html`` covers raw cells and outputs. The learner's Markdown
is inert already (``nbgrade_markdown.py``), so this is a second line; a third reads each page
back (``live_html``) and withholds one that still holds live HTML. ``WrapLongLines`` wraps
long lines and words there and in formgrader's grading page.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from pygments.style import Style
from traitlets import Type, Unicode, Union

from .nbgrade_course import NOTEBOOK

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
