"""Small readings of one syntax node, shared by the reader's parts.

A name without its leading underscores, an attribute name given as a constant, what a class
body binds, which expressions are only read through (``F.relu``) and which ``type`` names are
types, and ``UNKNOWN``: the base of an attribute that is no module the grader can name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from .policy import ATTRIBUTE_BUILTINS


def _plain(name: str) -> str:
    """A name without its leading underscores: torch's ``_embedding_bag`` is ``embedding_bag``."""
    return name.lstrip("_") or name


def _constant_name(call: ast.Call) -> str | None:
    """The attribute name of ``getattr(x, "name")`` and the like, if it is a constant."""
    if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant):
        value = call.args[1].value
        return value if isinstance(value, str) else None
    return None


def _targets(statement: ast.stmt) -> list[ast.expr]:
    """The names a statement of a class body binds there (``F = ...``, ``import x``: as
    ``ast.alias`` nodes)."""
    if isinstance(statement, ast.Assign):
        return statement.targets
    if isinstance(statement, ast.AnnAssign | ast.AugAssign):
        return [statement.target]
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return list(statement.names)
    return []


def _followed(nodes: Iterable[ast.AST], aliases: set[int]) -> set[int]:
    """The expressions the rules follow where they go: the bases of attributes (``F`` in
    ``F.relu``, also as ``getattr(F, "relu")``, ``hasattr``, ``setattr`` and ``delattr``, whose
    computed names are refused as such) and
    the values named again (``G = F``, whose target is one of ``aliases``)."""
    followed: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Attribute | ast.Subscript):
            followed.add(id(node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args \
                and node.func.id in {*ATTRIBUTE_BUILTINS, "hasattr"}:  # a computed name: "names"
            followed.add(id(node.args[0]))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and id(node.targets[0]) in aliases:
            followed.add(id(node.value))
    return followed


def _type_as_a_type(nodes: list[ast.AST]) -> set[int]:
    """The ``type`` names used as a type, not as a class factory: in annotations and in
    isinstance or issubclass (``isinstance(t, type)``)."""
    harmless: set[int] = set()
    for node in nodes:
        spots: list[ast.AST] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in {"isinstance", "issubclass"}:
            spots = node.args[1:]
        elif isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            spots = [node.annotation]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            spots = [node.returns]
        for spot in spots:
            harmless |= {id(n) for n in ast.walk(spot) if isinstance(n, ast.Name)}
    return harmless


#: What the grader cannot tell: the base of ``x.attr`` when ``x`` is no module it can name.
UNKNOWN = None


def _class_of(node: ast.expr) -> bool:
    """``type(x)`` or ``x.__class__``: an object's class, whatever it is (torch's ``nn.Linear``
    for ``type(self.lm_head)``), which no reading of the source can tell apart."""
    if isinstance(node, ast.Attribute):
        return node.attr == "__class__"
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "type" and len(node.args) == 1 and not node.keywords)
