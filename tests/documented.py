"""The commands the README, the guides beside it and the handout show, as a reader types them.

``commands()`` finds every command line of their ``sh`` blocks and every inline `code` span
that starts like a command (``make``, ``python -m``, ``pytest``, ``pip``, a ``deploy/`` recipe
...). ``head()`` names what a command runs (``make grade``, ``python -m lumen neighbours``), the
key tests/test_commands.py looks up to know how to run it; ``concrete()`` turns a synopsis
(``grade PATH [--seed N]``) into a line a shell can run, its placeholders replaced by tiny
inputs. No test keeps a copy of a command's text: it is read here, from the documents.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The documents whose commands a reader runs: the README, its guides (docs/), the handout's.
def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
            ROOT / "handout" / "README.md"]


#: How an inline span must start to be a command (a path such as `deploy/` or `.venv` is not).
_COMMAND_START = re.compile(
    r"^(?:[A-Z_]+=\S+ )*(?:make(?: |$)|python3? -[mc] |\.venv/bin/python -m |pytest(?: |$)|"
    r"pip install |jupyter |sbatch |source |deploy/\S+\.sh)")
_FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Documented:
    """One command as a document shows it: where, and its text (comment and ``\\`` joins
    removed, otherwise as typed)."""

    path: Path
    line: int
    text: str
    block: int | None = None  # which ``sh`` block of the document (None: an inline span)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def in_handout(self) -> bool:
        return self.path == ROOT / "handout" / "README.md"


def _strip_comment(line: str) -> str:
    """The line without its shell comment (a ``#`` outside quotes, after a blank)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _block_commands(lines: list[str], first: int, path: Path, block: int) -> list[Documented]:
    found: list[Documented] = []
    pending, start = "", first
    for number, raw in enumerate(lines, start=first):
        text = _strip_comment(raw)
        if not text.strip():
            continue  # a blank line, or a comment alone (a synopsis's continued comment)
        if pending:
            pending += " " + text.strip()
        elif raw[:1].isspace() and found:
            # an indented line continues the synopsis above it ("    [--export ...]")
            prev = found.pop()
            pending, start = prev.text + " " + text.strip(), prev.line
        else:
            pending, start = text.strip(), number
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        found.append(Documented(path, start, pending, block))
        pending = ""
    return found


def commands(path: Path) -> list[Documented]:
    """Every command ``path`` shows, in order: its ``sh`` blocks' lines, then its inline spans."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found: list[Documented] = []
    fenced: set[int] = set()
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")),
                   len(lines))
        fenced.update(range(i, end + 1))
        if fence.group(1) in ("sh", "bash", "console", "shell"):
            found.extend(_block_commands(lines[i + 1:end], i + 2, path, i))
        i = end + 1
    for number, line in enumerate(lines, start=1):
        if number - 1 in fenced:
            continue
        for span in re.findall(r"`([^`\n]+)`", line):
            if " " in span.strip() and _COMMAND_START.match(span):
                found.append(Documented(path, number, span.strip()))
    return found


def all_commands() -> list[Documented]:
    return [c for path in documents() for c in commands(path)]


#: Modules whose first argument is a command of their own (``python -m lumen neighbours``).
_WITH_SUBCOMMANDS = {"autograder", "lumen", "exercises", "exercises.cli",
                     "autograder.frontends.classroom", "autograder.frontends.prairielearn_build"}


def words(text: str) -> list[str]:
    """The command's words, as the shell splits them (a synopsis's brackets kept as words)."""
    return shlex.split(text, comments=False, posix=True)


def head(text: str) -> str:
    """What the command runs, the key of tests/test_commands.py's table: ``make grade``,
    ``make`` (the default goal), ``python -m lumen neighbours``, ``pytest exercises``,
    ``deploy/slurm-submit.sh``, ``pip install``, ``jupyter lab``."""
    parts = words(text)
    while parts and re.fullmatch(r"[A-Z_]+=.*", parts[0]):
        parts = parts[1:]  # VAR=value before the command
    if not parts:
        return text
    first = parts[0]
    if first == "make":
        targets = [p for p in parts[1:] if "=" not in p and not p.startswith("-")]
        return f"make {targets[0]}" if targets else "make"
    if first in ("python", "python3", ".venv/bin/python") and parts[1:2] == ["-m"]:
        module = parts[2]
        if module == "pytest":
            return "pytest " + _pytest_target(parts[3:])
        rest = parts[3:]
        if module in _WITH_SUBCOMMANDS and rest and re.fullmatch(r"[a-z][a-z-]*", rest[0]):
            return f"python -m {module} {rest[0]}"
        return f"python -m {module}"
    if first in ("python", "python3") and parts[1:2] == ["-c"]:
        return "python -c"
    if first == "pytest":
        return "pytest " + _pytest_target(parts[1:])
    if first in ("pip", "jupyter"):
        return f"{first} {parts[1]}" if len(parts) > 1 else first
    return first


def _pytest_target(args: list[str]) -> str:
    """The folder or file a pytest line runs (``.``: the repository's own ``testpaths``)."""
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        if arg in ("-m", "-k", "--submission", "-n", "-p"):
            skip_next = True
            continue
        if not arg.startswith("-"):
            return arg.split("::")[0]
    return "."


#: Placeholders a synopsis names, and what a tiny run puts there ({...}: the runner's files).
PLACEHOLDERS = {
    "PATH": "{submission}",
    "SUBMISSIONS/": "{class_dir}/",
    "SUBMISSIONS=DIR": "SUBMISSIONS={class_dir}",
    "DIR": "{class_dir}",
    "K/N": "1/2",
    "shard-K.csv": "shard-1.csv",
    "<stage>": "params",
    "STAGE": "params",
    "TAG": "v1",
    "NAME": "The Embedding Layer",
    "COMMAND": "--help",
    "VISIBILITY=...": "VISIBILITY=after_due_date",
}


def concrete(text: str) -> str:
    """``text`` with its optional ``[...]`` groups left out and its placeholders filled, as
    a shell line (``{submission}`` and the like are filled by the runner with ``format``)."""
    depth, kept = 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        elif not depth:
            kept.append(ch)
    line = re.sub(r"\s+", " ", "".join(kept)).strip()
    line = line.replace("{", "{{").replace("}", "}}")
    for name, value in PLACEHOLDERS.items():
        line = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", value, line)
    return line
