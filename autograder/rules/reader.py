"""The reader of one file's live code: its bindings, then every construct that breaks a rule.

``_Reader`` is made of three parts, one job each: ``_Bindings`` (what names are bound to),
``_Refusals`` (what live code names) and ``_Redirects`` (changing torch). This module walks
the live nodes (deadcode.py) once and hands each to the parts that judge it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from .bindings import _Bindings
from .deadcode import _live_nodes
from .findings import Finding, _cut, _shown
from .nodes import _followed, _targets, _type_as_a_type
from .parsing import _bindings
from .policy import ATTRIBUTE_BUILTINS, SHOWN, WHY, Ban
from .redirects import _Redirects
from .refusals import _Refusals


class _Reader(_Bindings, _Refusals, _Redirects):
    """Reads one file's live code for banned built-ins and ways around a ban."""

    def __init__(self, file: str, source: str, tree: ast.Module, ban: Ban | None,
                 tampered: bool) -> None:
        self.file, self.lines, self.tree, self.ban = file, source.splitlines(), tree, ban
        self.tampered = tampered  # whether no guard is trusted (see check)
        self.bound = _bindings(tree)
        # local name -> the module paths it may be bound to (UNKNOWN: something else too)
        self.modules: dict[str, set[str | None]] = {}
        self.aliases: set[int] = set()  # the targets of ``F = torch.nn.functional``
        self.own: set[str] = set()  # names that are provably your own modules and classes
        self.found: list[Finding] = []
        self.paths: dict[int, set[str | None]] | None = None  # _qualify's, once bindings are done
        self.codes: dict[int, str] = {}  # line -> its text as quoted (``_code``)
        # your modules by the names they have here ("" for the package: ``exercises.params``)
        self.own_modules: dict[str, str] = {}
        self.exports: Mapping[str, Mapping[str, set[str | None]]] = {}
        # names bound in a class body: class attributes, never followed as aliases
        self.in_classes = {id(target) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                           for statement in c.body for target in _targets(statement)}

    def bind(self, exports: Mapping[str, Mapping[str, set[str | None]]]
             ) -> dict[str, set[str | None]]:
        """The binding phase, from scratch, with the other files' ``exports``: what each name
        of this file may be bound to (imports, aliases, your own modules and names)."""
        self.exports, self.paths, self.found = exports, None, []
        self.modules, self.aliases, self.own, self.own_modules = {}, set(), set(), {}
        self.classes_of: set[str] = set()  # names bound to type(x) or x.__class__ somewhere
        nodes = _live_nodes(self.tree, self.tampered)
        for node in self.tree.body:  # your top-level classes and functions, if never rebound
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) \
                    and self._once(node.name):
                self.own.add(node.name)
        for node in nodes:  # bindings first, so that a later attribute can be resolved
            if isinstance(node, ast.Import | ast.ImportFrom):
                self._import(node)
        for node in nodes:
            if isinstance(node, ast.Assign):
                self._alias(node)
        self._unknown_too()
        return self.modules

    def findings(self, exports: Mapping[str, Mapping[str, set[str | None]]] | None = None
                 ) -> list[Finding]:
        self.bind(exports or {})
        nodes = _live_nodes(self.tree, self.tampered)
        self.enums = {n.name for n in ast.walk(self.tree) if isinstance(n, ast.ClassDef)
                      and any("Enum" in ast.unparse(b) or "Flag" in ast.unparse(b)
                              for b in n.bases)}
        self.paths = {}  # every binding is known: each chain is qualified once from here on
        calls = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        self.harmless_types = _type_as_a_type(nodes)
        self.followed = _followed(nodes, self.aliases)
        for node in nodes:
            if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load) \
                    and id(node) not in self.followed:
                self._handed_on(node)
            if isinstance(node, ast.Attribute | ast.Subscript) \
                    and isinstance(node.ctx, ast.Store | ast.Del):
                self._changed(node, node.value, node.ctx)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                self._imported_into_a_class(node)
            if isinstance(node, ast.Attribute):
                self._attribute(node, node.attr, node.value)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ATTRIBUTE_BUILTINS:
                self._dynamic_attribute(node)
            elif isinstance(node, ast.Name):
                self._name(node, id(node) in calls)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self._definition(node)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                self._assigned_name(node)
            elif isinstance(node, ast.Constant | ast.keyword):
                self._special_key(node)
            elif isinstance(node, ast.MatchClass):
                self._match_class(node)
            if isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Attribute) and node.attr == "__class__" \
                    and isinstance(node.ctx, ast.Store | ast.Del):
                self._add(node, f"{_shown(node)} = ...", "program")
        return self.found

    def _once(self, name: str) -> bool:
        """Whether ``name`` is bound exactly once in the file, and no ``import *`` is there."""
        return len(self.bound.get(name, [])) == 1 and "*" not in self.bound

    def _add(self, node: ast.AST, found: str | Callable[[], str], kind: str,
             banned: bool = False) -> None:
        """A finding at ``node``'s line: ``found`` (made only now, if it is a function) and
        the line, each cut to ``SHOWN`` characters."""
        line = getattr(node, "lineno", 0)
        why = kind if banned else WHY[kind]
        found = _cut(found() if callable(found) else found)
        self.found.append(Finding(self.file, line, self._code(line), found, why, banned,
                                  "banned" if banned else kind))

    def _code(self, line: int) -> str:
        """Line ``line`` as a finding quotes it, made once however many findings it holds."""
        if line not in self.codes:
            text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            self.codes[line] = _cut(text[: 4 * SHOWN].strip())
        return self.codes[line]
