"""What a reading reports: one ``Finding`` per line that breaks a rule, and the words for it.

A finding quotes at most ``SHOWN`` characters of the construct and of its line, and turns at
most ``SHOWN_PARTS`` parts of an expression back into code, so that however long a learner's
line is, each finding costs a bounded time and a message stays readable.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from .policy import SHOWN, WHY


@dataclass(frozen=True, order=True)
class Finding:
    """One line of a learner's file that breaks a rule."""

    file: str
    line: int
    code: str  # the line as written, stripped
    found: str  # what was found there: "torch.nn.functional.one_hot", "import threading"
    why: str  # the rule, in words
    banned: bool = False  # a banned built-in (True) or a way around a ban (False)
    kind: str = "banned"  # "banned" or one of EVASIONS

    def __str__(self) -> str:
        if not self.line:  # the whole file
            return f"{self.file} ({self.found}): {self.why}"
        return f"{self.file}, line {self.line}: `{self.code}` ({self.found}): {self.why}"


def _unreadable(file: str, line: int, found: str, source: str = "") -> Finding:
    """The one finding of a file the rules could not read (at ``line``, 0: the whole file)."""
    lines = source.splitlines()[line - 1 : line] if line > 0 else []
    code = _cut(lines[0][: 4 * SHOWN].strip()) if lines else ""
    return Finding(file, line, code, found, WHY["unreadable"], False, "unreadable")


def _one_per_line(findings: list[Finding]) -> list[Finding]:
    """One finding of each kind per line: the shortest, the root of a chain such as
    ``torch.ops.aten.embedding`` (``torch.ops``), in file order."""
    best: dict[tuple[str, int, bool], Finding] = {}
    for f in findings:
        key = (f.file, f.line, f.banned)
        if key not in best or len(f.found) < len(best[key].found):
            best[key] = f
    return sorted(best.values())


def explain(findings: Iterable[Finding], limit: int = 4, sep: str = "; ") -> str:
    """The findings for a message, at most ``limit`` of them (then how many more)."""
    found = list(findings)
    lines = [str(f) for f in found[:limit]]
    if len(found) > limit:
        lines.append(f"and {len(found) - limit} more")
    return sep.join(lines)


def _cut(text: str) -> str:
    """``text`` at most ``SHOWN`` characters long, an ellipsis marking a cut."""
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


#: How many parts of an expression a finding turns back into code (``_shown``).
SHOWN_PARTS = 24


def _shown(node: ast.AST) -> str:
    """``node`` as code, for a finding, if it has at most ``SHOWN_PARTS`` parts: each finding
    costs a bounded time (``ast.unparse`` of a chain at each of its links would be quadratic
    in its length)."""
    if sum(1 for _, _ in zip(ast.walk(node), range(SHOWN_PARTS + 1), strict=False)) \
            > SHOWN_PARTS:
        return "<a long expression>"
    return ast.unparse(node)
