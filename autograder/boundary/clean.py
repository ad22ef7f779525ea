"""Text from learner code, made safe to store and to show: encodable, visible and bounded.

Every string in a reply from the process that runs learner code was chosen by the learner.
``clean_reply`` is applied once, where a reply enters the grader
(``boundary/session.StageSession``), so everything after it handles ordinary text only:

1. **Encodable**: lone surrogates (``"\\ud800"``, undecodable bytes carried as ``"\\udcff"``)
   and undecodable bytes become U+FFFD, so UTF-8 writers and terminals never raise.
2. **Visible**: control characters (C0, DEL, C1, the bidi embeddings, overrides and isolates,
   U+2028/U+2029) are written as text, ``"\\x1b"``, so a message can neither send terminal
   commands nor draw a line of its own over the report. Printed output keeps ``"\\n"`` and
   ``"\\t"``; a one-line field escapes them too.
3. **Bounded**: at most ``limit`` characters are kept, then ``"... (N more characters)"``.

Cleaning is idempotent for text already clean: an escape is ordinary backslash text.
"""

from __future__ import annotations

import re

MAX_TEXT = 4000  # characters of one string: a message, a traceback line, a value
MAX_NAME = 200  # a dict key, a type name, a device
MAX_OUTPUT = 4096  # characters of printed output kept per reply (shown to the learner)
MAX_DEPTH = 40  # honest replies nest at most 20 deep (protocol._encode)

_SURROGATE = re.compile(r"[\ud800-\udfff]")
#: Characters never shown raw, as regex ranges, by ``keep_lines``: printed output keeps
#: "\n" and "\t", a one-line field (a message, a name) escapes them too.
_CONTROL = {
    False: r"\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069",
    True: r"\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069",
}
_UNSAFE = {keep: re.compile(f"[{ranges}]") for keep, ranges in _CONTROL.items()}
#: One unsafe character, or a run of safe ones: cut at ``limit`` without splitting an escape.
_PIECES = {keep: re.compile(f"[{ranges}]|[^{ranges}]+") for keep, ranges in _CONTROL.items()}
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}  # as Python writes them: readable


def _escape(char: str) -> str:
    """One unsafe character as the text of its Python escape: ESC -> \\x1b, RLO -> \\u202e."""
    code = ord(char)
    return _SHORT.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def encodable(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD: always encodable as UTF-8."""
    return _SURROGATE.sub("\ufffd", text)


def clean_text(text: object, limit: int = MAX_TEXT, keep_lines: bool = False) -> str:
    """``text`` made encodable, its control characters escaped, cut to ``limit`` characters.

    ``keep_lines`` keeps "\\n" and "\\t" (printed output); otherwise they are escaped too.
    Not a str: bytes are decoded (undecodable bytes replaced), anything else is ``str()``-ed.
    """
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", errors="replace")
    elif not isinstance(text, str):
        text = str(text)
    total = len(text)
    text = encodable(text[:limit])  # no more than ``limit`` is kept: look at no more
    unsafe, pieces = _UNSAFE[keep_lines], _PIECES[keep_lines]
    if total <= limit and not unsafe.search(text):
        return text  # the common case: nothing to do
    out: list[str] = []
    size = used = 0  # characters written, characters of ``text`` consumed
    for match in pieces.finditer(text):
        piece = match.group()
        shown = _escape(piece) if unsafe.fullmatch(piece) else piece
        if size + len(shown) > limit:
            if shown is piece:  # a run of plain text: keep what fits
                out.append(piece[: limit - size])
                used += limit - size
            break
        out.append(shown)
        size += len(shown)
        used += len(piece)
    left = total - used
    if left:
        out.append(f"... ({left:,} more characters)")
    return "".join(out)


def clean(value: object, limit: int = MAX_TEXT, depth: int = 0) -> object:
    """A decoded reply with every string in it cleaned: dict keys, string values, the type
    names of described objects. Tensors, numbers, booleans and None pass through."""
    from ..sandboxed.protocol import RemoteObject  # imports torch: only once replies arrive

    def walk(value: object, depth: int) -> object:
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, str):
            return clean_text(value, limit)
        if depth > MAX_DEPTH:  # only a tampered reply nests this deep: never recurse on
            return "<a value nested too deeply>"
        if isinstance(value, dict):
            return {clean_text(k, MAX_NAME): walk(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, depth + 1) for v in value]
        if isinstance(value, RemoteObject):
            value.type_name = clean_text(value.type_name, MAX_NAME)
        elif isinstance(getattr(value, "remote_device", None), str):  # a tensor: where it was
            value.remote_device = clean_text(value.remote_device, MAX_NAME)
        return value

    return walk(value, depth)


def clean_reply(reply: object) -> object:
    """A reply from learner code's process, cleaned; its top-level ``output`` (what the code
    printed) keeps its lines and tabs and has its own, larger cap."""
    if not isinstance(reply, dict):
        return clean(reply)
    return {clean_text(k, MAX_NAME): clean_text(v, MAX_OUTPUT, keep_lines=True)
            if k == "output" and isinstance(v, str) else clean(v, depth=1)
            for k, v in reply.items()}
