"""The grader's folder is its architecture: which room may import which, and no cycle.

The rooms and what each may import are README's "Layout" table; this file is that table's
check. Every import counts, wherever it is written (top of a module, inside a function, under
``TYPE_CHECKING``): a back-reference is one whether or not it runs at import time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from autograder import ROOT

PACKAGE = ROOT / "autograder"
#: The packages whose modules the cycle check walks: the grader, and the release tooling that
#: uses it (the rubric's points, wording, autograder/publish/).
OURS = ("autograder", "solutions")
CORE = {"autograder", "autograder.results", "autograder.rubric", "autograder.mistakes",
        "autograder.words", "autograder.phases", "autograder.options"}

#: room -> the rooms its modules may import (besides their own room and anything outside the
#: grader: lumen, the standard library, torch, pytest; never solutions/, which imports it).
MAY_IMPORT: dict[str, set[str]] = {
    "core": set(),
    "sandboxed": set(),  # all the sandbox sees of the grader: it imports nothing of it
    # what the grader needs of the release: the stubber, exercises/'s files, the notebook, the
    # handout, zips; solutions/ (the release command) imports it
    "publish": {"core"},
    "boundary": {"core", "sandboxed", "publish"},
    "suites": {"core", "boundary", "sandboxed"},
    "views": {"core", "boundary"},
    "grading": {"core", "boundary", "suites"},
    "frontends": {"core", "boundary", "grading", "views", "publish"},
    # pytest's entry for an instructor running the hidden suites by hand: a front end that
    # lives beside the suites because pytest looks for it there.
    "suites-entry": {"core", "boundary", "grading", "suites"},
    "command line": {"core", "boundary", "grading", "views", "frontends"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str:
    if module in CORE:
        return "core"
    if module in ("autograder.grading", "autograder.forks"):  # the pipeline, and its forks
        return "grading"
    if module == "autograder.__main__":
        return "command line"
    if module == "autograder.suites.conftest":
        return "suites-entry"
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in {"sandboxed", "boundary", "suites", "views", "frontends",
                                        "publish"}:
        return parts[1]
    raise AssertionError(f"{module} is in no room: add it to a room of README's Layout table "
                         "and to this test")


def imports(path: Path) -> set[str]:
    """The grader modules the file ``path`` imports."""
    return imports_of(path.read_text(encoding="utf-8"), module_name(path),
                      path.name == "__init__.py")


def imports_of(source: str, module: str, is_package: bool = False) -> set[str]:
    """The grader modules ``source`` (the text of ``module``) imports, resolved to module names
    (``from . import x`` names the module ``x`` when it is one)."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            for alias in node.names:  # `from . import batch`: the module autograder.x.batch
                candidate = f"{target}.{alias.name}"
                if _exists(candidate):
                    found.add(candidate)
    return {name for name in found if name.split(".")[0] in OURS}


def _exists(module: str) -> bool:
    relative = Path(*module.split("."))
    candidates = (relative.with_suffix(".py"), relative / "__init__.py")
    return any((ROOT / candidate).is_file() for candidate in candidates)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
GRAPH = {module_name(path): imports(path)
         for package in OURS for path in sorted((ROOT / package).rglob("*.py"))}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_module_imports_only_the_rooms_its_room_may(module):
    mine = room(module)
    allowed = MAY_IMPORT[mine] | {mine}
    wrong = sorted(target for target in GRAPH[module] if target.startswith("autograder.")
                   and room(target) not in allowed)
    assert not wrong, (f"{module} ({mine}) imports {wrong}, but the {mine} room may import only "
                       f"{sorted(allowed)} (README, Layout)")


def test_no_module_imports_back_into_a_cycle():
    """Modules, not rooms: a room's modules may use each other, but never in a circle; nor may
    the grader and the release tooling (solutions/) import each other in a circle."""
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def walk(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(GRAPH.get(module, ())):
            if target == module or target not in GRAPH:
                continue
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (cycle := walk(target)):
                return cycle
        state[module] = 2
        path.pop()
        return None

    for module in sorted(GRAPH):
        if module not in state and (cycle := walk(module)):
            pytest.fail("an import cycle: " + " -> ".join(cycle))


def test_the_checks_can_fail():
    """A boundary module importing a front end breaks the room rule; a core module importing
    the pipeline that imports it closes a cycle."""
    found = imports_of("from ..frontends import batch\n", "autograder.boundary.probe")
    assert "autograder.frontends.batch" in found and room("autograder.frontends.batch") not in (
        MAY_IMPORT["boundary"] | {"boundary"})
    back = imports_of("from .grading import Grader\n", "autograder.results")
    assert "autograder.grading" in back and "autograder.results" in GRAPH["autograder.grading"]


def test_every_import_of_ours_names_a_module_that_exists():
    """An import inside a function runs only when the function does: a module that moved rooms
    must not leave one behind that names its old place."""
    missing = sorted(f"{module} imports {target}" for module, targets in GRAPH.items()
                     for target in targets if not _exists(target))
    assert not missing, missing


def test_an_import_inside_a_function_says_why():
    """An import is written at the top of its module unless it must wait: torch (a grade
    imports it while the worker does), pytest, nbformat, matplotlib and the other heavy or
    optional imports a command does not always need, or a front end that __main__ runs only
    for its own command (the Gradescope zip leaves those out). Then a comment says so: on the
    line above a run of such imports, or on one of their lines."""
    silent = []
    for path in MODULES.values():
        lines = path.read_text(encoding="utf-8").splitlines()
        for function in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            found = sorted((node.lineno, node.end_lineno) for node in ast.walk(function)
                           if isinstance(node, (ast.Import, ast.ImportFrom)))
            runs: list[list[int]] = []  # [first line, last line] of consecutive imports
            for first, last in found:
                if runs and first == runs[-1][1] + 1:
                    runs[-1][1] = last
                elif not runs or first > runs[-1][1]:
                    runs.append([first, last])
            for first, last in runs:
                said = lines[first - 2].strip().startswith("#") or any(
                    "#" in line for line in lines[first - 1:last])
                if not said:
                    silent.append(f"{path.relative_to(ROOT)}:{first}")
    assert not silent, ("imports inside a function without a comment saying why they wait "
                        "(move them to the top of the module, or say why): " + ", ".join(silent))
