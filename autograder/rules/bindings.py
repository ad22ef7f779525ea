"""What each name of a file may be bound to: its imports, its aliases, the learner's own modules.

The reader's first phase (``_Bindings``, a part of ``reader._Reader``). It also refuses the
imports themselves: a module outside ``ALLOWED_MODULES``, a file the grader does not read,
``import *``, and each part of an imported path checked as an attribute (``torch.utils``).
"""

from __future__ import annotations

import ast

from .nodes import UNKNOWN, _class_of
from .policy import ALLOWED_MODULES, OWN_MODULES, OWN_PACKAGE, REFUSED


class _Bindings:
    """The binding phase of ``reader._Reader``."""

    def _bind(self, name: str, path: str | None) -> None:
        self.modules.setdefault(name, set()).add(path)

    def _unknown_too(self) -> None:
        """A name bound to a module here and to something else there may be either: the
        rules of every candidate apply (``import sys`` twice is still sys)."""
        for name, paths in self.modules.items():
            places = self.bound.get(name, [])
            if "*" in self.bound or not all(
                    isinstance(p, ast.Import | ast.ImportFrom) or id(p) in self.aliases
                    for p in places):
                paths.add(UNKNOWN)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if self._own_import(node, alias.name, alias.asname):
                    continue
                if self._module_allowed(node, alias.name):
                    self._bind(bound, alias.name if alias.asname else bound)
            return
        module = node.module or ""
        if node.level > 0 or module.split(".")[0] == OWN_PACKAGE:
            self._own_from(node, module)
            return
        if not self._module_allowed(node, module):
            return
        for alias in node.names:
            found = f"from {module} import {alias.name}"
            if alias.name == "*":
                self._add(node, found + " (import *)", "star")
            elif self._path_allowed(node, f"{module}.{alias.name}", found):
                self._bind(alias.asname or alias.name, f"{module}.{alias.name}")

    def _own_import(self, node: ast.Import, name: str, asname: str | None) -> bool:
        """``import exercises.embeddings``: your own module (True); ``import exercises.cli``
        is refused, being no file the grader reads."""
        parts = name.split(".")
        if parts[0] != OWN_PACKAGE:
            return False
        if len(parts) != 2 or parts[1] not in OWN_MODULES:
            self._add(node, f"import {name}", "relative")
        elif asname is not None and self._once(asname):
            self.own.add(asname)
            self.own_modules[asname] = parts[1]
        elif asname is None and self._once(OWN_PACKAGE):
            self.own_modules[OWN_PACKAGE] = ""  # exercises.params.X: the package, then a file
        return True

    def _own_from(self, node: ast.ImportFrom, module: str) -> None:
        """``from .embeddings import Embedding``, ``from . import params``: fine for your three
        files; any other file (``from .helpers import x``, ``from .. import y``) is refused."""
        parts = module.split(".") if module else []
        if node.level == 0:  # from exercises[.embeddings] import ...
            parts = parts[1:]
        shown = f"from {'.' * node.level}{module} import"
        if node.level > 1 or len(parts) > 1 or (parts and parts[0] not in OWN_MODULES):
            self._add(node, f"{shown} ...", "relative")
            return
        for alias in node.names:
            bound = alias.asname or alias.name
            if alias.name == "*":
                self._add(node, f"{shown} * (import *)", "star")
            elif not parts and alias.name not in OWN_MODULES:
                self._add(node, f"{shown} {alias.name}", "relative")
            elif not parts and self._once(bound):
                self.own.add(bound)  # the module itself: its attributes are your names
                self.own_modules[bound] = alias.name
            elif parts:  # a name of another of your files: what that file binds it to
                for path in self.exports.get(parts[0], {}).get(alias.name, ()):
                    self._bind(bound, path)

    def _module_allowed(self, node: ast.stmt, module: str) -> bool:
        top = module.split(".")[0]
        if top not in ALLOWED_MODULES:
            self._add(node, f"import {module}", REFUSED.get(top, "import"))
            return False
        return self._path_allowed(node, module, f"import {module}")

    def _path_allowed(self, node: ast.stmt, path: str, found: str) -> bool:
        """Check each part of an imported path as an attribute: ``torch.utils`` is refused."""
        parts = path.split(".")
        before = len(self.found)
        for i, part in enumerate(parts[1:], start=1):
            self._check_attribute(node, part, ".".join(parts[:i]), own=False, found=found)
        return len(self.found) == before

    def _alias(self, node: ast.Assign) -> None:
        """``F = torch.nn.functional``: F may name that module from here on."""
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and id(node.targets[0]) not in self.in_classes:
            if _class_of(node.value):  # T = type(m): T.forward = ... changes m's class
                self.classes_of.add(node.targets[0].id)
            paths = self._qualify(node.value)
            for path in paths - {UNKNOWN}:
                self._bind(node.targets[0].id, path)
            if UNKNOWN not in paths:
                self.aliases.add(id(node.targets[0]))

    def _qualify(self, node: ast.expr) -> set[str | None]:
        """The module paths an expression may name (``torch.nn.functional``); UNKNOWN among
        them when it may be something else. Without recursion, and once the bindings are
        known, once per node (``self.paths``): each link of a chain of n attributes is read
        once, not n times."""
        chain = []  # the attributes down to the chain's root, outermost first
        while isinstance(node, ast.Attribute) and (self.paths is None
                                                   or id(node) not in self.paths):
            chain.append(node)
            node = node.value
        if isinstance(node, ast.Attribute):  # the rest of the chain is qualified already
            paths = self.paths[id(node)]
        elif isinstance(node, ast.Name) and node.id in self.own_modules and chain:
            paths = self._own_attribute(node.id, chain)
        elif isinstance(node, ast.Name):
            paths = self.modules.get(node.id, {UNKNOWN})
        else:
            paths = {UNKNOWN}
        for link in reversed(chain):
            paths = {UNKNOWN if base is UNKNOWN else f"{base}.{link.attr}" for base in paths}
            if self.paths is not None:
                self.paths[id(link)] = paths
        return paths

    def _own_attribute(self, name: str, chain: list[ast.Attribute]) -> set[str | None]:
        """``params.F`` (or ``exercises.params.F``): what that file binds F to, the links it
        takes off the end of ``chain`` (outermost first); UNKNOWN for anything else."""
        module = self.own_modules[name]
        if not module:  # the package: its attribute is one of your files
            module = chain.pop().attr
            if not chain:
                return {UNKNOWN}
        return set(self.exports.get(module, {}).get(chain.pop().attr, {UNKNOWN}))
