"""A stable id for every mistake the hidden suites diagnose, and the kinds of code that never ran.

A failing test's message has particulars (the call it made, the values, the learner's line and
exception text), so two learners with one mistake get different messages with one *template*:
the message with those particulars replaced. A mistake's id is its stage, its test and a
digest of that template, so the class summary counts each mistake once per learner.

Code that never ran (a file that could not be imported, a call that did not finish, a process
that ended) is one mistake per kind, whichever test met it. The kind is data, set where the
verdict is made (``suites/feedback.py``'s ``Mistake.kind``, ``results.score``) and kept in
``results.TestResult.kind``: never read back from a message, which a learner's exception text
could imitate.

Plain text only (no torch, no pytest): the class summary computes ids from the records.
"""

from __future__ import annotations

import hashlib
import re

MISTAKE = "mistake"  # a test that ran the learner's code and found it wrong
MISSING_FILE = "missing-file"  # the file it needs was not handed in
UNUSABLE_FILE = "unusable-file"  # handed in, but not read (not UTF-8, too large, a link)
IMPORT_FAILED = "import-failure"  # read, but its import raised (a syntax error, say)
TIMED_OUT = "timeout"
CRASHED = "crash"
NOT_RUN = "not-run"
#: What each kind of code that never ran is, for the summary's table: a file not handed in,
#: one that could not be read and one that raised on import are three fixes, so three rows.
KINDS = {
    MISSING_FILE: "was not handed in (a file missing from the submission)",
    UNUSABLE_FILE: "was handed in but could not be read (not UTF-8, too large, a link)",
    IMPORT_FAILED: "could not be imported (a syntax error, or an exception while importing)",
    TIMED_OUT: "did not finish in time (a loop that never ends, or work that grows too fast)",
    CRASHED: "the process running the code ended (os._exit, a segfault, too much memory)",
    NOT_RUN: "did not run (the grading run was cut short)",
}
EVERY_KIND = (MISTAKE, *KINDS)  # what a TestResult's kind may be

#: What a rubric test without a verdict says (``results.score``; kind NOT_RUN).
NOT_RUN_MESSAGE = "this test did not run (the grading run was cut short)"

#: The particulars a template drops, in this order: code in backticks (learner code), quoted
#: strings (feedback.describe_error quotes the learner's exception text; repr() escapes inside),
#: then every (...) and [...] group, innermost first (call arguments, shapes, ids, details),
#: then dtypes, devices and numbers.
_CODE = re.compile(r"`[^`\n]*`")
_QUOTED = re.compile(r"""(?<![\w'"])(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")(?![\w'"])""")
_GROUP = re.compile(r"\([^()\[\]]*\)|\[[^()\[\]]*\]")
_NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:0x[0-9a-fA-F]+|\d[\d,_]*(?:\.\d+)?(?:[eE][-+]?\d+)?%?)(?!\w)")
_DTYPE = re.compile(
    r"\btorch\.(?:u?int\d+|float\d+|bfloat16|complex\d+|bool|half|double|long|float|int)\b")
_DEVICE = re.compile(r"\b(?:cpu|cuda(?::\d+)?|meta|mps)\b")
# Stand-ins for a group while the groups around it are collapsed: a placeholder with brackets
# in it would itself be a group and stop the outer one from collapsing.
_PAREN, _BRACKET = "\x00", "\x01"  # never in a message: boundary/clean.clean_text escapes them


def template(message: str) -> str:
    """``message`` with its particulars replaced: what stays the same from learner to learner."""
    text = _CODE.sub("`…`", message)
    text = _QUOTED.sub("'…'", text)
    while True:
        collapsed = _GROUP.sub(lambda m: _PAREN if m.group().startswith("(") else _BRACKET, text)
        if collapsed == text:
            break
        text = collapsed
    text = text.replace(_PAREN, "(…)").replace(_BRACKET, "[…]")
    text = _DTYPE.sub("torch.<dtype>", text)
    text = _DEVICE.sub("<device>", text)  # before the numbers: cuda:0
    text = _NUMBER.sub("#", text)
    return " ".join(text.split())


def mistake_id(stage: str, test: str, message: str, kind: str = MISTAKE) -> str:
    """The mistake's stable id: the ``kind`` for code that never ran (one of KINDS), else
    ``stage/test/<8 hex digits of the template's SHA-256>``."""
    if kind != MISTAKE:
        return kind
    digest = hashlib.sha256(template(message).encode("utf-8", "backslashreplace")).hexdigest()
    return f"{stage}/{test}/{digest[:8]}"
