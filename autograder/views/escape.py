"""Learner-derived text, escaped for the file it lands in: one function per kind of output.

``boundary/clean.py`` makes learner text *visible* where it arrives; that is not enough where
it is written next (``=HYPERLINK(...)`` is a formula in a spreadsheet, ``<script>`` a tag in
summary.md). Learner-derived means submission names, notebook and file names, and anything
from the learner's files or process. Every writer passes it through its output's function:
``csv_text`` for a CSV cell (``csv_number`` for the grader's numbers, never escaped);
``markdown_text`` / ``markdown_inline`` for Markdown (summary.md, nbgrade's notes in a
notebook); ``terminal`` for a terminal (the ``grade`` report, feedback.txt, batch progress).

``csv_text`` and ``terminal`` leave honest text as it is, so an honest class's CSVs and reports
are unchanged; the Markdown escapes change summary.md's bytes (``carol\\_2``) but not what it
renders. Escaping twice escapes nothing more, except in Markdown, whose writers escape once.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable

from ..boundary.clean import clean_text

# --- CSV ----------------------------------------------------------------------------------------

#: What makes a spreadsheet (Excel, LibreOffice, Google Sheets) read a cell as a formula or a
#: command (OWASP, "CSV Injection"): = + - @ at its start (after any spaces, which Excel
#: skips), and their full-width forms, which some spreadsheets fold to ASCII. Tab, carriage
#: return and the other control characters are escaped as text by ``clean_text`` first, so
#: they never reach the start of a cell raw.
FORMULA_START = re.compile(r"^\s*[=+\-@\uff1d\uff0b\uff0d\uff20]")


def csv_text(text: object) -> str:
    """A learner-derived CSV cell: control characters shown as ``\\x1b``-style text, and a
    cell a spreadsheet would run as a formula prefixed with a single quote, which spreadsheets
    read as "this is text" (``'=1+1`` shows as ``=1+1``, never computed)."""
    text = clean_text(text, limit=1 << 30)  # no cut here: the writer decides how long
    return f"'{text}" if FORMULA_START.match(text) else text


def csv_number(x: float | None) -> str:
    """A number the grader computed (a score, seconds), as the CSV's number: "" for none.
    Never escaped, so a spreadsheet or an LMS reads it as the number it is."""
    return "" if x is None else f"{x:g}"


def formula_like(text: str) -> bool:
    """Whether ``text`` would be a formula, or carries a control character, in a spreadsheet:
    for values that must reach an LMS unchanged (its ids), which can be refused, not escaped."""
    return bool(FORMULA_START.match(text)) or clean_text(text, limit=1 << 30) != text


# --- Markdown and HTML --------------------------------------------------------------------------

#: Characters with a meaning inside a Markdown line: code (`), emphasis (* _ ~), links and
#: images ([ ] and the ! before them), raw HTML and autolinks (< >), entities (&), table
#: cells (|), the backslash itself, and the dot, so that no bare name becomes a link
#: ("evil.example", "www.evil.example": GitHub's autolinks, and the fuzzy ones of
#: markdown-it's linkify, which editors' previews use). CommonMark shows a backslash-escaped
#: ASCII punctuation character as itself.
_INLINE = re.compile(r"([\\`*_\[\]<>|~&!.])")
#: The rest of a bare URL or e-mail address: "http://" and "me@host".
_AUTOLINK = re.compile(r"(?i)(?<=[a-z])(:)(?=//)|(@)")
#: What starts a block at the beginning of a line: a heading (#), quote (>), list (- + and
#: "1." or "1)"), a setext underline (=) or a thematic break (- * _).
_BLOCK = re.compile(r"^(\s*)([#>+\-=])")
_ORDERED = re.compile(r"^(\s*\d+)([.)])")


def _inline(text: str) -> str:
    text = _INLINE.sub(r"\\\1", text)
    text = _AUTOLINK.sub(r"\\\g<0>", text)
    text = _BLOCK.sub(r"\1\\\2", text)
    return _ORDERED.sub(r"\1\\\2", text)


def markdown_text(text: object) -> str:
    """Learner-derived text shown as it is in Markdown, line by line: it can start no block
    (heading, quote, list, table, code fence) and hold no link, image, HTML tag or entity.
    Control characters are escaped as for the terminal."""
    text = clean_text(text, limit=1 << 30, keep_lines=True).replace("\t", " ")
    return "\n".join(_inline(line) for line in text.splitlines() or [""])


def markdown_inline(text: object, limit: int | None = None) -> str:
    """Learner-derived text as one Markdown line: a table cell or a list item. Whitespace
    (newlines too) becomes one space; cut to ``limit`` characters of the text (before
    escaping, so an escape is never cut in two) with "..." added."""
    text = " ".join(clean_text(text, limit=1 << 30).split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 3] + "..."
    return _inline(text)


# --- the terminal -------------------------------------------------------------------------------


def terminal(text: object, limit: int | None = None, keep_lines: bool = False) -> str:
    """Learner-derived text for a terminal: escape sequences, carriage returns and bidi
    overrides shown as ``\\x1b``-style text, never live (``boundary/clean.clean_text``); kept
    whole unless ``limit`` is given. ``keep_lines``: printed output keeps its lines."""
    return clean_text(text, limit=limit or 1 << 30, keep_lines=keep_lines)


# --- a learner's own Markdown, kept as Markdown but inert -----------------------------------------

#: A fenced code block at the top level (column 0: inside a list or quote its extent depends on
#: the renderer, so such a fence is not trusted to be code) and its closing line.
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
#: What stays as the learner wrote it, searched in this order at each position, as nbconvert's
#: parser does (its math rules first): math (``$...$``, ``$$...$$``, ``\\(...\\)``,
#: ``\\[...\\]``, ``\begin{env}...\end{env}``, nbconvert's own patterns), a backslash escape,
#: a code span (never across a blank line, where a paragraph ends), an attached image.
_ESCAPE = r"(?P<esc>\\[!-/:-@\[-`{-~])"
_CODE = r"(?P<code>`+)"  # its closing run: ``_closing``
_ATTACHED = r"(?P<attached>!\[[^\[\]\\`<>&\n]*\]\(attachment:(?P<name>[^\s()<>&\\]+)\))"
#: Blockquote markers at the start of a line: their ">" is Markdown, kept.
_QUOTE = re.compile(r"(?m)^[ \t]*(?:>[ \t]*)+")
#: A link destination that names its scheme in plain letters: nothing can decode it into
#: another scheme. Any other destination (javascript:, data:, attachment:, a relative path,
#: one written with escapes or on the next line) is not made a link.
_SAFE_TARGET = re.compile(r"(?i)\s*(https?://|mailto:|#)")
_TAG_LIKE = re.compile(r"<[A-Za-z/!?]|&#?\w+;")
_SHOWN = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MATH_SHOWN = {"<": r"\lt ", ">": r"\gt "}  # MathJax reads \lt as <; no "<" is left


def _closing(text: str) -> Callable[[int, int], int | None]:
    """For a chunk: where the code span opened by the backtick run at ``start`` ends (the end
    of the next run as long, before a blank line), or None. Every run is indexed once, so a
    chunk of many unclosed runs costs no more than reading it."""
    runs: dict[int, list[int]] = {}
    for m in re.finditer("`+", text):
        runs.setdefault(len(m.group()), []).append(m.start())
    breaks = [m.start() for m in re.finditer(r"\n[ \t]*\n", text)]

    def close(start: int, length: int) -> int | None:
        later = runs[length]
        k = bisect_right(later, start)
        limit = breaks[b] if (b := bisect_right(breaks, start)) < len(breaks) else len(text)
        return later[k] + length if k < len(later) and later[k] < limit else None

    return close


def _scanner() -> re.Pattern:
    # nbconvert (the notebook's Markdown grammar): only nbgrader's feedback needs it, once
    from nbconvert.filters.markdown_mistune import MathInlineParser as M

    math = "|".join(f"(?:{p})" for p in (M.BLOCK_MATH_TEX, M.BLOCK_MATH_LATEX, M.INLINE_MATH_TEX,
                                         M.INLINE_MATH_LATEX, M.LATEX_ENVIRONMENT))
    return re.compile(f"(?P<math>{math})|{_ESCAPE}|{_CODE}|{_ATTACHED}")


def _plain(text: str, start: int, end: int, quotes: set[int], found: set[str]) -> str:
    """``text[start:end]``, outside code and math: ``& < >`` as entities (a blockquote's ">"
    kept), an image made a link, a link to an unsafe target left as text."""
    out = []
    for i in range(start, end):
        char = text[i]
        if char in _SHOWN and i not in quotes:
            if _TAG_LIKE.match(text, i):
                found.add("html")
            out.append(_SHOWN[char])
            continue
        if char == "!" and text.startswith("[", i + 1):
            found.add("image")  # not attached to the notebook: a link at most, never loaded
            out.append("\\")
        elif char == "]" and text.startswith(("(", ":"), i + 1) and not _SAFE_TARGET.match(
                text, i + 2):
            found.add("link")
            out.append("\\")
        out.append(char)
    return "".join(out)


def inert_markdown(source: str, attachments: dict | None = None) -> tuple[str, set[str]]:
    """A learner's Markdown cell as Markdown that holds no live HTML, for nbgrader's submitted
    notebook (formgrader and the feedback page render it without sanitising).

    Outside code (spans, top-level fences) and math, ``& < >`` become entities, so no tag,
    comment, entity trick or autolink is made (a ``<`` shows as ``<``); inside math ``<`` and
    ``>`` become ``\\lt`` and ``\\gt``. A link keeps only an http, https, mailto or #anchor
    target; an image only when it is attached to the cell (``attachment:NAME``), any other one
    becomes a link, so nothing loads from elsewhere. A mermaid fence is shown as plain code
    (nbconvert writes its text into the page as it is). Emphasis, lists, tables, quotes, code,
    math and plain links are unchanged. Returns the new source and what was made inert:
    "html", "link", "image" (a ``<`` or ``&`` that only looked like HTML counts too)."""
    scanner, names = _scanner(), set(attachments or ())
    found: set[str] = set()
    out, lines, fence = [], source.split("\n"), None
    chunk: list[str] = []

    def flush() -> None:
        text = "\n".join(chunk)
        quotes = {m.start() + k for m in _QUOTE.finditer(text)
                  for k, c in enumerate(m.group()) if c == ">"}
        pieces, pos, close = [], 0, _closing(text)
        while (m := scanner.search(text, pos)) is not None:
            kind, body = m.lastgroup, m.group()  # the outer group of its alternative
            if kind == "code":
                end = close(m.start(), len(body))
                if end is None:  # an unclosed run is text, kept as it is
                    pieces += [_plain(text, pos, m.start(), quotes, found), body]
                    pos = m.end()
                    continue
                body = text[m.start():end]
            if kind == "math" and (re.search(r"\n[ \t]*\n", body) or re.search(r"\]\(|\]:|!\[",
                                                                               body)):
                kind = None  # not one paragraph's math, or holding a link: plain text
            if kind == "attached" and m.group("name") not in names:
                kind = None
            if kind is None:
                pieces.append(_plain(text, pos, m.start() + 1, quotes, found))
                pos = m.start() + 1
                continue
            pieces.append(_plain(text, pos, m.start(), quotes, found))
            if kind == "math":
                body = re.sub("[<>]", lambda c: _MATH_SHOWN[c.group()], body)
            elif kind == "esc" and body[1] in _SHOWN:
                body = _SHOWN[body[1]]  # \< meant a plain "<": the entity shows just that
            pieces.append(body)
            pos = m.start() + len(body) if kind == "code" else m.end()
        pieces.append(_plain(text, pos, len(text), quotes, found))
        out.append("".join(pieces))
        chunk.clear()

    for line in lines:
        if fence is None:
            opening = _FENCE.fullmatch(line)
            if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
                if chunk:
                    flush()
                fence, info = opening.group(1), opening.group(2)
                if info.strip().lower().startswith("mermaid"):
                    info = ""
                    found.add("html")
                out.append(fence + "".join(_SHOWN.get(c, c) for c in info))
            else:
                chunk.append(line)
        else:
            out.append(line)
            if re.fullmatch(f" {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*", line):
                fence = None
    if chunk or not out:
        flush()
    return "\n".join(out), found
