# Generated from autograder/rules/parsing.py by `make stubs`: the grader's code,
# which the visible tests use. Learners: nothing to write here. Course staff: edit that file.
"""A file parsed once, within the reading's budgets, and every place that binds each name.

A file past ``MAX_DEPTH`` or ``MAX_NODES``, or one Python's parser gives up on, is not read in
part: ``_parse`` says where, and the caller refuses it whole ("unreadable"). The results are
cached, since the grader checks the same files for each ban.
"""

from __future__ import annotations

import ast
import functools

from .policy import MAX_DEPTH, MAX_NODES


@functools.lru_cache(maxsize=8)
def _parse(source: str, name: str) -> ast.Module | tuple[int, str] | None:
    """``source`` parsed, once for the checks of every ban (a grader checks two): nothing
    here changes a tree. None when it is not Python (a SyntaxError, null bytes: it cannot be
    imported); (line, what) when it is past the reading's limits or Python's parser gives up
    on it (its recursion or its stack: ``-`` 100,000 times), which fails closed."""
    try:
        tree = ast.parse(source, filename=name)
    except (SyntaxError, ValueError):
        return None
    except Exception as error:  # noqa: BLE001 - RecursionError, MemoryError: too deep for it
        return 0, f"Python's parser gave up on it: {type(error).__name__}"
    return _past_limits(tree) or tree


def _past_limits(tree: ast.AST) -> tuple[int, str] | None:
    """Where ``tree`` first goes past ``MAX_DEPTH`` or ``MAX_NODES`` (its line, and which),
    found by one walk that stops there; None within both."""
    stack, nodes = [(tree, 1, 0)], 0
    while stack:
        node, depth, line = stack.pop()
        nodes += 1
        line = getattr(node, "lineno", line)  # a node without one is on its parent's line
        if depth > MAX_DEPTH:
            return line, f"an expression nested more than {MAX_DEPTH} deep"
        if nodes > MAX_NODES:
            return 0, f"more than {MAX_NODES:,} parts"
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
    return None


@functools.lru_cache(maxsize=8)
def _bindings(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """Every place in ``tree`` (dead code included) that binds a name, by name: assignments
    of every form, parameters, imports, definitions, global and nonlocal, ``except ... as``,
    match captures. A ``from m import *`` binds any name: it is listed under ``"*"``."""
    bound: dict[str, list[ast.AST]] = {}

    def add(name: str | None, node: ast.AST) -> None:
        if name is not None:
            bound.setdefault(name, []).append(node)

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            add(node.id, node)
        elif isinstance(node, ast.arg):
            add(node.arg, node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            add(node.name, node)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if isinstance(node, ast.Import):
                    add(alias.asname or alias.name.split(".")[0], node)
                else:
                    add(alias.asname or alias.name, node)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                add(name, node)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
            add(node.name, node)
        elif isinstance(node, ast.MatchMapping):
            add(node.rest, node)
    return bound
