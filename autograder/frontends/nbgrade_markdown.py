"""A learner's written answers, stored inert: Markdown that renders to Markdown's own HTML only.

formgrader renders written answers in the instructor's browser without sanitising, so each
Markdown cell of the learner's is stored as ``written_answer`` makes it: raw HTML shown as
text, a link keeping only an http, https or mailto target and an image only an attachment
(``escape.inert_markdown``), read back through nbconvert's own renderer
(``markdown_problems``); where that still shows anything else, the cell is stored as plain
text, failing closed.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from ..views.escape import inert_markdown, markdown_text

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
