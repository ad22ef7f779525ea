"""The stubber: lumen/'s solution regions found and replaced by stubs that name their stage.

Its own module, apart from the rest of the release (render.py, solutions/release.py), because
grading needs it too: a stage process is sent the learner's stub of each file as its given code
(autograder/boundary/request.py). So it imports only the standard library and lumen/stages.py,
never nbformat, nbgrader or what they pull in (lark, jsonschema: seconds of a cold grade).
"""

from __future__ import annotations

import ast
import builtins
import symtable
import textwrap
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from lumen import stages

LUMEN = Path(__file__).resolve().parents[2] / "lumen"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"  # matched `in line`, as nbgrader does
LINE_LENGTH = 100  # pyproject.toml's [tool.ruff] line-length

#: What every stub file starts with.
STUB_HEADER = """\
# Generated from lumen/{name} by `make stubs`: do not edit this header.
# Learners: write your code only where it says YOUR CODE HERE, then run
#   pytest exercises -m <stage>
# Course staff: edit lumen/{name} (the single source) and run `make stubs`.
"""


class ReleaseError(Exception):
    """lumen/'s solution regions do not match lumen/stages.py; the message says where."""


@dataclass(frozen=True)
class Region:
    """One solution region: 1-based line numbers of its markers, the function that holds it."""

    begin: int
    end: int
    qualname: str
    stage: str


def _functions(tree: ast.Module) -> list[tuple[int, int, str]]:
    """``(first line, last line, qualname)`` of every function, methods as ``Class.name``."""
    found: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                found.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, name + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def find_regions(source: str, name: str) -> list[Region]:
    """The solution regions of lumen/``name``, each checked against lumen/stages.py.

    Raises:
        ReleaseError: unbalanced or nested markers, a region outside any function, across a
            function's end, or in a function that no stage owns.
    """
    module = name.removesuffix(".py")
    functions = _functions(ast.parse(source, filename=f"lumen/{name}"))
    regions: list[Region] = []
    begin: int | None = None
    lines = source.splitlines()
    for number, line in enumerate(lines, start=1):
        where = f"lumen/{name}:{number}"
        if BEGIN in line:
            if begin is not None:
                raise ReleaseError(f"{where}: {BEGIN} inside the region opened at line {begin}")
            begin = number
        elif END in line:
            if begin is None:
                raise ReleaseError(f"{where}: {END} without a {BEGIN} before it")
            code = [
                n
                for n in range(begin + 1, number)
                if lines[n - 1].strip() and not lines[n - 1].lstrip().startswith("#")
            ]
            if not code:
                raise ReleaseError(f"{where}: the region from line {begin} holds no code")
            # The AST ends a function at its last statement, so test the region's code lines.
            holders = [f for f in functions if f[0] < code[0] and code[-1] <= f[1]]
            if not holders:
                raise ReleaseError(f"{where}: the region from line {begin} is in no function")
            qualname = max(holders, key=lambda f: f[0])[2]  # the innermost function
            stage = stages.owner(module, qualname)
            if stage is None:
                raise ReleaseError(
                    f"{where}: the region from line {begin} is in {module}:{qualname}, which "
                    "no stage owns; add it to a stage's owns in lumen/stages.py"
                )
            regions.append(Region(begin, number, qualname, stage))
            begin = None
    if begin is not None:
        raise ReleaseError(f"lumen/{name}:{begin}: {BEGIN} is never closed")
    return regions


def _stub_lines(indent: str, region: Region, sets: list[str]) -> list[str]:
    """The two lines that replace a region (the raise wrapped if it would pass 100 columns)."""
    comment = f"{indent}# YOUR CODE HERE (stage: {region.stage})"
    if sets:
        comment += f": set {', '.join(sets)}, used below"
    message = f"\"{stages.stub_message(region.qualname, region.stage)}\""
    raise_line = f"{indent}raise NotImplementedError({message})"
    if len(raise_line) > LINE_LENGTH:
        wrapped = [f"{indent}raise NotImplementedError(", f"{indent}    {message}", f"{indent})"]
        return [comment, *wrapped]
    return [comment, raise_line]


def _undefined(stub: str, stubbed: set[str]) -> dict[str, set[str]]:
    """For each stubbed function, the names it reads that nothing defines any more."""
    top = symtable.symtable(stub, "stub", "exec")
    defined = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    defined |= set(dir(builtins))
    undefined: dict[str, set[str]] = {}

    def visit(table: symtable.SymbolTable, prefix: str) -> None:
        for child in table.get_children():
            qualname = prefix + child.get_name()
            if child.get_type() == "function" and qualname in stubbed:
                missing = {
                    s.get_name()
                    for s in child.get_symbols()
                    if s.is_referenced() and s.is_global() and s.get_name() not in defined
                }
                if missing:
                    undefined[qualname] = missing
            nested = "." if child.get_type() == "class" else ".<locals>."
            visit(child, qualname + nested)

    visit(top, "")
    return undefined


def _unused_imports(stub: str) -> set[int]:
    """Line numbers of module-level imports that nothing in ``stub`` uses any more."""
    tree = ast.parse(stub)
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    lines: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.Import) or (
            isinstance(node, ast.ImportFrom) and node.module != "__future__"
        ):
            for alias in node.names:
                bound = (alias.asname or alias.name).split(".")[0]
                if bound not in used:
                    lines.add(alias.lineno)
    return lines


def _append_noqa(line: str, code: str, why: str) -> str:
    if "# noqa" in line:
        raise ReleaseError(f"cannot add noqa {code} to a line that has one: {line.strip()!r}")
    return f"{line}  # noqa: {code} ({why})"


def _binds(block: list[str], where: str) -> set[str]:
    """The names a region's code assigns (it must parse on its own: whole statements only)."""
    try:
        tree = ast.parse(textwrap.dedent("\n".join(block)))
    except SyntaxError as error:
        raise ReleaseError(f"{where}: the region is not whole statements ({error.msg})") from None
    return {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }


def _replace(
    lines: list[str], regions: list[Region], sets: dict[str, list[str]], solved: Collection[str]
) -> str:
    out: list[str] = []
    cursor = 0
    for r in regions:
        out.extend(lines[cursor : r.begin - 1])
        if r.stage in solved:  # keep the solution, drop only its markers
            out.extend(lines[r.begin : r.end - 1])
        else:
            begin_line = lines[r.begin - 1]
            indent = begin_line[: len(begin_line) - len(begin_line.lstrip())]
            out.extend(_stub_lines(indent, r, sets.get(r.qualname, [])))
        cursor = r.end
    out.extend(lines[cursor:])
    return "\n".join(out) + "\n"


def stub(source: str, name: str, solved: Collection[str] = ()) -> str:
    """lumen/``name`` with every solution region replaced by a stub that names its stage.

    ``solved`` names stages whose regions stay solved (markers dropped): a learner part-way
    through, for checking that each stage's tests need only the stages before it.

    Raises:
        ReleaseError: as ``find_regions``; also when a function a stage owns has no region, or
            a given line reads a name that neither the module nor the region defines.
    """
    regions = find_regions(source, name)
    module = name.removesuffix(".py")
    for s in stages.STAGES:
        for owned in s.owns:
            owned_module, qualname = owned.split(":")
            if owned_module == module and qualname not in {r.qualname for r in regions}:
                raise ReleaseError(
                    f"lumen/{name}: {qualname} belongs to stage {s.name!r} but has no "
                    f"{BEGIN} region, so the learner would have nothing to write"
                )

    lines = source.splitlines()
    stubbed = {r.qualname for r in regions if r.stage not in solved}
    binds: dict[str, set[str]] = {q: set() for q in stubbed}
    for r in regions:
        region_binds = _binds(lines[r.begin : r.end - 1], f"lumen/{name}:{r.begin}")
        if r.qualname in stubbed:
            binds[r.qualname] |= region_binds

    # A given line after a stub may read what only the solution sets (Embedding.forward's
    # ``rows``): the stub's comment names it, and that line gets a noqa saying why.
    undefined = _undefined(_replace(lines, regions, {}, solved), stubbed)
    for qualname, missing in undefined.items():
        if not missing <= binds[qualname]:
            raise ReleaseError(
                f"lumen/{name}: the stub of {qualname} reads "
                f"{', '.join(sorted(missing - binds[qualname]))}, which nothing defines"
            )
    text = _replace(lines, regions, {q: sorted(m) for q, m in undefined.items()}, solved)

    out = text.splitlines()
    tree = ast.parse(text)
    for start, end, qualname in _functions(tree):
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Name)
                and isinstance(node.ctx, ast.Load)
                and node.id in undefined.get(qualname, ())
                and start <= node.lineno <= end
                and "# noqa" not in out[node.lineno - 1]
            ):
                why = f"{node.id}: yours to set above"
                out[node.lineno - 1] = _append_noqa(out[node.lineno - 1], "F821", why)
    for number in sorted(_unused_imports(text)):
        out[number - 1] = _append_noqa(out[number - 1], "F401", "the code you write uses it")
    return STUB_HEADER.format(name=name) + "\n".join(out) + "\n"
