# Generated from autograder/rules/refusals.py by `make stubs`: the grader's code,
# which the visible tests use. Learners: nothing to write here. Course staff: edit that file.
"""The refusals of what live code names: attributes, built-ins, definitions and class factories.

The reader's second phase (``_Refusals``, a part of ``reader._Reader``): a banned name, an
attribute refused on the module it is read from (or on any object, for frames and code
objects), a computed ``getattr``, ``eval`` and its kind, a hook definition, a metaclass or a
class built from computed names. Each finding's kind is a key of ``policy.WHY``.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable

from .findings import _shown
from .nodes import UNKNOWN, _constant_name, _plain
from .policy import (
    ALWAYS,
    ATTRIBUTE_BUILTINS,
    GLOBAL_HOOKS,
    METACLASSES,
    MODULE_ONLY,
    REFUSED,
    REFUSED_BUILTINS,
    REFUSED_DEFINITIONS,
    SYS_ALLOWED,
)


class _Refusals:
    """The uses phase of ``reader._Reader``: names, attributes, definitions."""

    def _attribute(self, node: ast.AST, attr: str, base: ast.expr) -> None:
        """``base.attr`` (or ``getattr(base, "attr")``) in live code."""
        own = isinstance(base, ast.Name) and base.id in self.own
        for path in sorted(self._qualify(base), key=str):
            found = f"{path}.{attr}" if path else lambda: f"{_shown(base)}.{attr}"
            self._check_attribute(node, attr, path, own, found)

    def _check_attribute(self, node: ast.AST, attr: str, path: str | None, own: bool,
                         found: str | Callable[[], str]) -> None:
        """The rules for one attribute name, on a base that is ``path`` (a module path, or
        UNKNOWN when the grader cannot tell) and is or is not your own module or class
        (``self`` can be anything: ``f(torch.nn.functional)`` makes it a module)."""
        top = path.split(".")[0] if path else None
        if self.ban and not own and _plain(attr) in self.ban.names:
            self._add(node, found, f"{self.ban.what} is banned in stage '{self.ban.stage}': "
                      "write it yourself", banned=True)
        elif self.ban and not own and attr in self.ban.routes and top in (UNKNOWN, "torch"):
            self._add(node, found, f"{self.ban.what} is banned in stage '{self.ban.stage}', "
                      "and this module calls it for you: write it yourself", banned=True)
        if attr in ALWAYS or (attr in REFUSED and not own):
            self._add(node, found, REFUSED[attr])
        elif attr in MODULE_ONLY and not own and top in (UNKNOWN, *MODULE_ONLY[attr][1]):
            self._add(node, found, MODULE_ONLY[attr][0])
        elif attr.startswith(GLOBAL_HOOKS) and not own:
            self._add(node, found, "program")
        elif path == "sys" and attr not in SYS_ALLOWED:
            self._add(node, found, "program")
        elif attr.startswith("_") and not attr.startswith("__") and not own and (
                path is not UNKNOWN or attr in _MODULE_PRIVATE):
            self._add(node, found, "torch" if top in (UNKNOWN, "torch") else "program")

    def _dynamic_attribute(self, call: ast.Call) -> None:
        """``getattr(x, name)``, ``setattr``, ``delattr``: fine with a constant name only."""
        name = _constant_name(call)
        if name is None:
            self._add(call, f"{call.func.id}(..., <a name computed at run time>)", "names")
        elif call.args:
            self._attribute(call, name, call.args[0])
            if call.func.id != "getattr":
                self._changed(call, call.args[0], ast.Store() if call.func.id == "setattr"
                              else ast.Del(), name)

    def _name(self, node: ast.Name, called: bool) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del) or node.id in self.own:
            return
        if node.id in REFUSED_BUILTINS:
            self._add(node, node.id, REFUSED_BUILTINS[node.id])
        elif node.id in ATTRIBUTE_BUILTINS and not called:
            self._add(node, node.id, "names")  # getattr passed around: a computed name
        elif node.id == "type" and not called and id(node) not in self.harmless_types:
            self._add(node, "type", "names")  # t = type; t(name, bases, {computed: ...})
        elif node.id == "__loader__":
            self._add(node, node.id, "code")

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        if node.name in REFUSED_DEFINITIONS:
            self._add(node, f"def {node.name}", "program")
        if not isinstance(node, ast.ClassDef):
            return
        for keyword in node.keywords:  # class A(metaclass=M): M builds the namespace
            if keyword.arg == "metaclass" and ast.unparse(keyword.value) not in METACLASSES:
                self._add(node, f"class {node.name}(metaclass={_shown(keyword.value)})",
                          "names")
        for base in node.bases:  # class M(type): a metaclass of your own
            if ast.unparse(base) in {"type", *METACLASSES} or ast.unparse(base).endswith(
                    ("EnumMeta", "EnumType")):
                self._add(node, f"class {node.name}({_shown(base)})", "names")

    def _call(self, call: ast.Call) -> None:
        """``type(name, bases, namespace)`` and ``Enum("E", names)``: a class whose names are
        computed at run time (``"__array_" + "interface__"``)."""
        callee = call.func.id if isinstance(call.func, ast.Name) else None
        paths = {p for p in self._qualify(call.func) if p}
        enum = any(p.startswith("enum.") for p in paths) or callee in self.enums
        if callee == "type" and len(call.args) >= 3 or enum and (
                len(call.args) >= 2 or any(k.arg in {"names", None} for k in call.keywords)):
            self._add(call, lambda: f"{_shown(call.func)}(<names computed at run time>)",
                      "names")

    def _match_class(self, node: ast.MatchClass) -> None:
        """``case ModuleType(one_hot=f)``: each keyword is an attribute read by name."""
        for attr in node.kwd_attrs:
            self._check_attribute(node, attr, UNKNOWN, False, f"case ...({attr}=...)")

    def _assigned_name(self, node: ast.Assign | ast.AnnAssign) -> None:
        """``__array_interface__ = {...}`` in a class body: numpy reads memory at its address."""
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id in REFUSED_DEFINITIONS:
                self._add(node, f"{target.id} = ...", "program")

    def _special_key(self, node: ast.Constant | ast.keyword) -> None:
        """``type("T", (), {"__torch_function__": f})`` and ``dict(__array_interface__=...)``:
        the same definitions, spelled as a key."""
        key = node.value if isinstance(node, ast.Constant) else node.arg
        if isinstance(key, str) and key in REFUSED_DEFINITIONS:
            self._add(node, repr(key), "program")


def _module_private() -> frozenset[str]:
    """The single-underscore names of torch's and numpy's main namespaces that hold a module
    or data rather than a function (``_C``, ``_VF``, ``_ops``, ``_utils``, ``_dynamo``,
    registries and hooks): refused on any object that is not your own, since ``self`` or a
    local can hold the module itself. A private function (``torch._check``) is harmless unless
    banned by name; your own private attributes (``self._rows``) keep other names."""
    names: set[str] = set()
    try:
        # here, not at the top: without torch the checker still loads (refusing no such name)
        import numpy
        import torch
        spaces = (torch, torch.nn, torch.nn.functional, torch.autograd, numpy)
    except ImportError:  # pragma: no cover - the exercise always has torch
        return frozenset()
    for space in spaces:
        for name in dir(space):
            if name.startswith("_") and not name.startswith("__"):
                value = getattr(space, name, None)
                if isinstance(value, types.ModuleType) or not callable(value):
                    names.add(name)
    return frozenset(names)


_MODULE_PRIVATE = _module_private()
