"""The grader's folder is its architecture: which room may import which, no cycle, one job each.

The rooms and what each may import are README's "Layout" table; this file is that table's
check. Every import counts, wherever it is written (top of a module, inside a function, under
``TYPE_CHECKING``): a back-reference is one whether or not it runs at import time. No cycle
either between modules or between packages (the grader's rooms, and solutions/, lumen/,
tools/, exercises/), and no module imports another room's private (``_``) name. And no
module is over ``MAX_MODULE_LINES`` lines (issue 31): a module that long holds several jobs.
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

from autograder import ROOT

PACKAGE = ROOT / "autograder"
#: The packages whose modules the cycle checks walk: the grader, the release tooling that uses
#: it (solutions/: the rubric's points, wording, autograder/publish/), the reference and its
#: generated copy, and the tools.
OURS = ("autograder", "solutions", "lumen", "tools", "exercises")
CORE = {"autograder", "autograder.results", "autograder.rubric", "autograder.mistakes",
        "autograder.words", "autograder.phases", "autograder.options"}

#: room -> the rooms its modules may import (besides their own room and anything outside the
#: grader: lumen, the standard library, torch, pytest; never solutions/, which imports it).
MAY_IMPORT: dict[str, set[str]] = {
    "core": set(),
    "sandboxed": set(),  # all the sandbox sees of the grader: it imports nothing of it
    "rules": set(),  # learners get it whole as exercises/rules/: it must stand alone
    # what the grader needs of the release: the stubber, exercises/'s files, the notebook, the
    # handout, zips; solutions/ (the release command) imports it
    "publish": {"core"},
    "boundary": {"core", "sandboxed", "publish"},
    "suites": {"core", "boundary", "sandboxed", "rules"},
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
    if len(parts) >= 2 and parts[1] in {"sandboxed", "rules", "boundary", "suites", "views",
                                        "frontends", "publish"}:
        return parts[1]
    raise AssertionError(f"{module} is in no room: add it to a room of README's Layout table "
                         "and to this test")


def import_lines(path: Path) -> dict[str, list[int]]:
    """Our modules the file ``path`` imports, each with the lines that import it."""
    return import_lines_of(path.read_text(encoding="utf-8"), module_name(path),
                           path.name == "__init__.py")


def imports_of(source: str, module: str, is_package: bool = False) -> set[str]:
    """Our modules ``source`` (the text of ``module``) imports, resolved to module names
    (``from . import x`` names the module ``x`` when it is one)."""
    return set(import_lines_of(source, module, is_package))


def _target(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a ``from ... import`` statement of ``module`` imports from."""
    if not node.level:
        return node.module or ""
    package = module if is_package else module.rpartition(".")[0]
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def import_lines_of(source: str, module: str, is_package: bool = False) -> dict[str, list[int]]:
    """As ``imports_of``, each module with the line numbers of the statements importing it."""
    found: dict[str, list[int]] = {}
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _target(node, module, is_package)
            names = [target]
            for alias in node.names:  # `from . import batch`: the module autograder.x.batch
                candidate = f"{target}.{alias.name}"
                if _exists(candidate):
                    names.append(candidate)
        for name in names:
            if name.split(".")[0] in OURS and node.lineno not in found.setdefault(name, []):
                found[name].append(node.lineno)
    return {name: sorted(lines) for name, lines in found.items()}


def _exists(module: str) -> bool:
    relative = Path(*module.split("."))
    candidates = (relative.with_suffix(".py"), relative / "__init__.py")
    return any((ROOT / candidate).is_file() for candidate in candidates)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
FILES = {module_name(path): path for top in OURS for path in sorted((ROOT / top).rglob("*.py"))
         if "__pycache__" not in path.parts}
LINES = {module: import_lines(path) for module, path in FILES.items()}
GRAPH = {module: set(targets) for module, targets in LINES.items()}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_module_imports_only_the_rooms_its_room_may(module):
    mine = room(module)
    allowed = MAY_IMPORT[mine] | {mine}
    wrong = sorted(target for target in GRAPH[module] if target.startswith("autograder.")
                   and room(target) not in allowed)
    assert not wrong, (f"{module} ({mine}) imports {wrong}, but the {mine} room may import only "
                       f"{sorted(allowed)} (README, Layout)")


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (node -> the nodes it imports), as its nodes with the first one
    again at the end; None when there is none. Edges to a node outside the graph, and a node's
    edge to itself, do not count."""
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if target == node or target not in graph:
                continue
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (cycle := walk(target)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := walk(node)):
            return cycle
    return None


def test_no_module_imports_back_into_a_cycle():
    """Modules, not rooms: a room's (or a package's: lumen/, solutions/, ...) modules may use
    each other, but never in a circle."""
    cycle = find_cycle(GRAPH)
    assert cycle is None, "an import cycle: " + " -> ".join(cycle or ())




def package(module: str, rooms: bool) -> str:
    """The package-level node of ``module``: its top-level package (autograder, solutions,
    lumen, tools, exercises), or with ``rooms`` the grader's room it is in (``autograder:core``,
    ``autograder:boundary``, ...)."""
    top = module.split(".")[0]
    return f"autograder:{room(module)}" if rooms and top == "autograder" else top


def package_edges(lines: dict[str, dict[str, list[int]]],
                  rooms: bool) -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> the import lines that make the edge, each as
    ``module:line imports target``, from ``lines`` (module -> the modules it imports -> the
    lines)."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, targets in sorted(lines.items()):
        for target, numbers in sorted(targets.items()):
            if target not in lines:
                continue
            edge = (package(module, rooms), package(target, rooms))
            if edge[0] != edge[1]:
                edges.setdefault(edge, []).extend(f"{module}:{n} imports {target}"
                                                  for n in numbers)
    return edges


def package_cycle_message(lines: dict[str, dict[str, list[int]]], rooms: bool) -> str | None:
    """What the package check says of ``lines``: a cycle between packages, naming each of its
    edges' import lines; None when there is none."""
    edges = package_edges(lines, rooms)
    graph: dict[str, set[str]] = {package(module, rooms): set() for module in lines}
    for importer, imported in edges:
        graph[importer].add(imported)
    cycle = find_cycle(graph)
    if cycle is None:
        return None
    steps = [f"{a} -> {b}: " + "; ".join(edges[(a, b)])
             for a, b in zip(cycle, cycle[1:], strict=False)]
    return "packages import each other in a circle: " + " -> ".join(cycle) + "\n" + \
        "\n".join(steps)


@pytest.mark.parametrize("rooms", [False, True], ids=["top-level packages", "the grader's rooms"])
def test_no_package_imports_a_package_that_imports_it_back(rooms):
    """Packages as nodes: the top-level ones (autograder, solutions, lumen, tools, exercises),
    then with the grader split into its rooms. One that imports another is never imported
    back, through any chain: the release (solutions/) imports autograder/publish/ and the core,
    so the grader imports nothing of solutions/."""
    message = package_cycle_message(LINES, rooms)
    assert message is None, message


@pytest.mark.parametrize("module", sorted(MODULES))
def test_the_grader_imports_nothing_of_the_release_tooling(module):
    found = sorted(t for t in GRAPH[module] if t.split(".")[0] == "solutions")
    assert not found, (f"{module} imports {found}: what the grader needs of the release is in "
                       "autograder/publish/")




def private_imports(module: str, source: str, is_package: bool = False) -> list[str]:
    """The ``_``-names ``source`` (the text of ``module``) imports from another room."""
    def where(name: str) -> str:
        return room(name) if name.split(".")[0] == "autograder" else name.split(".")[0]

    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        target = _target(node, module, is_package)
        if target.split(".")[0] not in OURS or where(target) == where(module):
            continue
        found += [f"line {node.lineno}: {alias.name} from {target}" for alias in node.names
                  if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


@pytest.mark.parametrize("module", sorted(FILES))
def test_no_module_imports_another_rooms_private_name(module):
    """A ``_`` name is its room's own: another room that needs it asks for it to be public."""
    path = FILES[module]
    found = private_imports(module, path.read_text(encoding="utf-8"), path.name == "__init__.py")
    assert not found, f"{module} imports another room's private names: {found}"


def test_the_checks_can_fail():
    """A boundary module importing a front end breaks the room rule; a core module importing
    the pipeline that imports it closes a cycle; a package importing one that imports it back
    closes a package cycle, named with its import lines; a front end importing intake's
    private name is caught."""
    found = imports_of("from ..frontends import batch\n", "autograder.boundary.probe")
    assert "autograder.frontends.batch" in found and room("autograder.frontends.batch") not in (
        MAY_IMPORT["boundary"] | {"boundary"})
    back = imports_of("from .grading import Grader\n", "autograder.results")
    assert "autograder.grading" in back and "autograder.results" in GRAPH["autograder.grading"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "a"}, "b": set()}) is None
    before = {  # the grader and the release before autograder/publish/: a circle
        "autograder.boundary.request": import_lines_of(
            "import os\nfrom solutions.stubber import stub\n", "autograder.boundary.request"),
        "solutions.stubber": {},
        "solutions.notebook": import_lines_of("from autograder.words import counted\n",
                                              "solutions.notebook"),
        "autograder.words": {},
    }
    message = package_cycle_message(before, rooms=False) or ""
    assert "autograder -> solutions -> autograder" in message, message
    assert "autograder.boundary.request:2 imports solutions.stubber" in message, message
    assert "solutions.notebook:1 imports autograder.words" in message, message
    assert package_cycle_message(before, rooms=True) is None  # core imports no boundary
    rooms = {**before, "solutions.notebook": {"autograder.boundary.request": [3]}}
    message = package_cycle_message(rooms, rooms=True) or ""
    assert "autograder:boundary -> solutions -> autograder:boundary" in message, message
    assert package_cycle_message({"lumen.a": {}, "solutions.b": {"lumen.a": [1]}}, False) is None
    assert private_imports("autograder.frontends.x",
                           "from ..boundary.intake import Unusable, _read_regular\n") == [
        "line 1: _read_regular from autograder.boundary.intake"]
    assert private_imports("autograder.sandboxed.probes.x", "from .shared import _call\n") == []


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


#: The most lines a module may have: past it, a module holds more than one job (issue 31).
MAX_MODULE_LINES = 500
#: Where modules are held to it: the grader, the release tooling, the tools and the chapter.
LINE_LIMITED = ("autograder", "solutions", "tools", "lumen")
#: Long by nature: the hidden suites (a test per promise of a stage) and the chapter's code,
#: which learners read whole beside the chapter. The learners' copies in exercises/ are
#: generated from lumen/ and are not held to it either (exercises/ is not in LINE_LIMITED).
LONG_BY_NATURE = ("autograder/suites/test_*.py", "lumen/embeddings.py", "lumen/gpt2.py",
                  "lumen/figures.py")


def module_lines(root: Path) -> dict[str, int]:
    """Each module under ``LINE_LIMITED`` in ``root`` (relative, POSIX) -> its line count."""
    return {path.relative_to(root).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
            for folder in LINE_LIMITED for path in sorted((root / folder).rglob("*.py"))
            if "__pycache__" not in path.parts}


def long_modules(root: Path) -> list[str]:
    """``file: N lines`` for each module over ``MAX_MODULE_LINES``, outside the exceptions."""
    return [f"{name}: {lines} lines" for name, lines in module_lines(root).items()
            if lines > MAX_MODULE_LINES
            and not any(fnmatch.fnmatchcase(name, pattern) for pattern in LONG_BY_NATURE)]


def test_no_module_is_over_the_line_limit():
    long = long_modules(ROOT)
    assert not long, (f"modules over {MAX_MODULE_LINES} lines: split each by job, a module per "
                      "job (as frontends/nbgrade_*.py), each with a short docstring saying what "
                      "it does and why:\n" + "\n".join(long))


def test_the_line_limit_can_fail(tmp_path):
    """A long module is named with its length; a hidden suite and the chapter's code are not,
    nor is a folder outside ``LINE_LIMITED``."""
    long = "x = 1\n" * (MAX_MODULE_LINES + 1)
    for name in ("tools/long.py", "tools/short.py", "autograder/suites/test_x.py",
                 "lumen/gpt2.py", "exercises/gpt2.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n" if "short" in name else long, encoding="utf-8")
    assert long_modules(tmp_path) == [
        f"tools/long.py: {MAX_MODULE_LINES + 1} lines"]
