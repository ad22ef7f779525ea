"""Learner-derived text, escaped for the file it lands in: one function per kind of output.

``untrusted.clean_text`` makes text from learner code *visible* (no live control characters)
where it arrives. That is not enough where the text is written next: a learner id
``=HYPERLINK(...)`` is a formula once a spreadsheet opens grades.csv, ``<script>`` is a tag in
summary.md, ``# Top`` is a heading. Learner-derived means: submission folder and zip names
(the learner ids), notebook and file names, and anything from the learner's files or process.
Every writer passes such text through the function for its output, and only that:

- ``csv_text`` for a CSV cell (grades.csv, the gradebook exports, nbgrade's stages.csv);
  ``csv_number`` for the numbers the grader produced, which are never escaped;
- ``markdown_text`` / ``markdown_inline`` for Markdown (summary.md, the notes nbgrade writes
  into a learner's notebook, which nbgrader renders into the feedback HTML; the learner's own
  Markdown there is cleaned as HTML by ``nbgrade.safe_html``);
- ``terminal`` for what a terminal shows (the ``grade`` report, feedback.txt, batch progress).

``csv_text`` and ``terminal`` leave honest names and texts as they are, so an honest class's
CSVs and reports are byte for byte what they were; the Markdown escapes change summary.md's
bytes (``carol\\_2``) but not what it renders. Escaping twice escapes nothing more, except in
Markdown, whose writers escape once.
"""

from __future__ import annotations

import re

from .untrusted import clean_text

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
    overrides shown as ``\\x1b``-style text, never live (``untrusted.clean_text``); kept
    whole unless ``limit`` is given. ``keep_lines``: printed output keeps its lines."""
    return clean_text(text, limit=limit or 1 << 30, keep_lines=keep_lines)
