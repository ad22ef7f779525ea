# Generated from autograder/rules/check.py by `make stubs`: the grader's code,
# which the visible tests use. Learners: nothing to write here. Course staff: edit that file.
"""The entry points: check a set of files against the rules, read a folder, the command line.

``check`` reads every file (all three run in each stage's process, so each may hand a
built-in to another), follows re-exports between them, and reports the files asked for. It
never raises on a learner's file: a reading that fails is a finding ("unreadable").
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from .deadcode import _live_nodes, _sets_guards
from .findings import Finding, _one_per_line, _unreadable
from .parsing import _parse
from .policy import BANS, FILES
from .reader import _Reader


def check(files: Mapping[str, str], stage: str | None = None,
          among: Iterable[str] = FILES) -> list[Finding]:
    """Every finding in ``files`` (file name -> source) among the files ``among``:
    ``stage``'s banned built-ins (none when ``stage`` is None or bans nothing) and every way
    around a ban, in file order.

    A file that does not parse is skipped: it cannot be imported, so it runs nothing. A file
    past the reading's limits (``MAX_DEPTH``, ``MAX_NODES``), or one whose reading fails in
    any other way, is one finding ("unreadable"): never read in part, never an exception.
    """
    ban = BANS.get(stage) if stage is not None else None
    trees: dict[str, ast.Module] = {}
    findings: list[Finding] = []
    unread = False  # a file that runs but was not read: it could change a guard too
    for name in FILES:
        if name in files:
            parsed = _parse(files[name], name)
            if isinstance(parsed, ast.Module):
                trees[name] = parsed
            elif parsed is not None:
                unread = True
                if name in among:
                    line, found = parsed
                    findings.append(_unreadable(name, line, found, files[name]))
    # Dead blocks stay dead while no live code, in any file, can change a guard; and code in a
    # dead block runs only once a guard changes. So: read each file as if every guard held,
    # and if the code that would then run could change one, trust no guard anywhere.
    try:
        tampered = unread or any(_sets_guards(_live_nodes(tree, False))
                                 for tree in trees.values())
    except Exception as error:  # noqa: BLE001 - a bug of the reading fails closed
        tampered = True
        findings.append(_unreadable(FILES[0], 0, f"reading failed: {type(error).__name__}"))
    readers = {name: _Reader(name, files[name], tree, ban, tampered)
               for name, tree in trees.items()}
    # What each file binds to a module, for the others: ``from .params import F`` is params'
    # F. Each round follows a re-export one file further (gpt2 from params from embeddings).
    exports: dict[str, dict[str, set[str | None]]] = {}
    for _ in readers:
        exports = {name.removesuffix(".py"): _bound(reader, exports)
                   for name, reader in readers.items()}
    for name, reader in readers.items():
        if name in among:
            try:
                findings += reader.findings(exports)
            except Exception as error:  # noqa: BLE001 - fails closed, as a finding
                findings.append(_unreadable(name, 0, f"reading failed: {type(error).__name__}"))
    return _one_per_line(findings)


def _bound(reader: _Reader, exports: Mapping[str, Mapping[str, set[str | None]]]
           ) -> dict[str, set[str | None]]:
    """The module paths ``reader``'s file binds each name to, given the other files'
    ``exports``; nothing if the reading fails (the file's own reading says so)."""
    try:
        return {name: set(paths) for name, paths in reader.bind(exports).items()}
    except Exception:  # noqa: BLE001 - reported by reader.findings, which fails the same way
        return {}


def read(folder: Path) -> dict[str, str]:
    """The graded files in ``folder`` (those that exist), as ``check`` takes them."""
    return {name: (folder / name).read_text(encoding="utf-8")
            for name in FILES if (folder / name).is_file()}


def main(argv: list[str] | None = None) -> int:
    """``python -m exercises.rules [FOLDER]``: list what the grader would find in your files."""
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else Path(__file__).resolve().parents[1]  # beside rules/
    files = read(folder)
    if not files:
        print(f"no {', '.join(FILES)} in {folder}")
        return 2
    findings = sorted({f for stage in BANS for f in check(files, stage)})
    for finding in findings:
        print(finding)
    if not findings:
        print(f"{', '.join(files)} in {folder}: nothing the grader refuses")
    return 1 if findings else 0
