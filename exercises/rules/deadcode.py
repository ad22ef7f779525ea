# Generated from autograder/rules/deadcode.py by `make stubs`: the grader's code,
# which the visible tests use. Learners: nothing to write here. Course staff: edit that file.
"""Dead code: which blocks provably never run, so that the rules do not read them.

``if False:``, ``if __name__ == "__main__":`` and ``if TYPE_CHECKING:`` (rules/README.md, its
paragraph on dead code). The last two count as dead only while nothing can change their guard: the
guard is bound once, as the rule says, and no live code in any of the files could set it.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator

from .nodes import _constant_name
from .parsing import _bindings

#: Names whose value decides whether a dead block runs (see README.md).
GUARDS = frozenset({"__name__", "TYPE_CHECKING"})


def _sets_guards(nodes: Iterable[ast.AST]) -> bool:
    """Whether code of these ``nodes`` could change a guard, its own module's or another's:
    it sets or deletes an attribute called ``__name__`` or ``TYPE_CHECKING`` (or a module's
    ``__class__``, which can give ``typing`` a TYPE_CHECKING property), calls setattr or
    delattr with a name the grader cannot read, or reaches a namespace as a dictionary
    (``globals()``, ``vars()``, ``__dict__``, ``sys.modules``, ``exec``)."""
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del) \
                and node.attr in TAMPERS:
            return True
        if isinstance(node, ast.Name) and node.id in NAMESPACES or isinstance(
                node, ast.Attribute) and (node.attr == "__dict__" or node.attr == "modules"
                                          and isinstance(node.value, ast.Name)
                                          and node.value.id == "sys"):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in {"setattr", "delattr"}:
            name = _constant_name(node)
            if name is None or name in TAMPERS:
                return True
    return False


#: Attributes whose change could make a guard of another module lie.
TAMPERS = GUARDS | {"__class__"}
#: Built-ins that reach a module's names as a dictionary, or run code that could.
NAMESPACES = frozenset({"globals", "vars", "locals", "exec", "eval", "__builtins__",
                        "__import__"})


def _is_import(node: ast.AST, module: str, name: str | None) -> bool:
    """Whether ``node`` is ``import module`` (``name`` None) or ``from module import name``
    (among others), with no ``as``."""
    if name is None:
        return isinstance(node, ast.Import) and any(
            a.name == module and a.asname is None for a in node.names)
    return isinstance(node, ast.ImportFrom) and node.module == module and node.level == 0 \
        and any(a.name == name and a.asname is None for a in node.names)


class _Guards:
    """Which dead-code tests provably hold in one file (see the module's docstring)."""

    def __init__(self, tree: ast.Module, tampered: bool) -> None:
        bound = _bindings(tree)
        top = {id(node) for node in tree.body}
        trusted = "*" not in bound and not tampered

        def only(name: str, module: str, imported: str | None) -> bool:
            """``name`` is bound once, by a top-level import of ``module``, and never else."""
            places = bound.get(name, [])
            return trusted and len(places) == 1 and id(places[0]) in top \
                and _is_import(places[0], module, imported)

        self.type_checking = only("TYPE_CHECKING", "typing", "TYPE_CHECKING")
        self.typing = only("typing", "typing", None)
        self.main = trusted and "__name__" not in bound

    def dead(self, test: ast.expr) -> bool:
        """Whether an ``if`` with this test provably never runs its body under the grader."""
        if isinstance(test, ast.Constant):
            return not test.value
        if isinstance(test, ast.Name):
            return test.id == "TYPE_CHECKING" and self.type_checking
        if isinstance(test, ast.Attribute):
            return (test.attr == "TYPE_CHECKING" and isinstance(test.value, ast.Name)
                    and test.value.id == "typing" and self.typing)
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.Eq)):
            sides = [test.left, test.comparators[0]]
            names = {s.id for s in sides if isinstance(s, ast.Name)}
            texts = {s.value for s in sides if isinstance(s, ast.Constant)}
            return names == {"__name__"} and texts == {"__main__"} and self.main
        return False


@functools.lru_cache(maxsize=8)
def _live_nodes(tree: ast.Module, tampered: bool) -> tuple[ast.AST, ...]:
    """``_live`` of ``tree`` when guards are (not) trusted everywhere, kept for every check
    of the same files (a grader makes three)."""
    return tuple(_live(tree, _Guards(tree, tampered)))


def _live(tree: ast.AST, guards: _Guards) -> Iterator[ast.AST]:
    """Every node of ``tree`` except those in provably dead blocks (see ``_Guards.dead``)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and guards.dead(node.test):
            stack.extend(reversed(node.orelse))  # the test itself is only a name or constant
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
