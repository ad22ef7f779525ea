# Generated from autograder/rules/redirects.py by `make stubs`: the grader's code,
# which the visible tests use. Learners: nothing to write here. Course staff: edit that file.
"""Changing torch: refused, since the given code and the grader's checks call torch as it is.

The reader's part for rule 3 (``_Redirects``, a part of ``reader._Reader``): an attribute of
torch, or of anything reached through it by name, set or deleted; one of torch's modules
handed on as a value or held as a class attribute, where what is done to it cannot be
followed; an attribute set on an object's class (``type(m).forward = ...``).
"""

from __future__ import annotations

import ast
import functools
import types

from .findings import _shown
from .nodes import UNKNOWN, _class_of


class _Redirects:
    """The torch-changing refusals of ``reader._Reader``."""

    def _changed(self, node: ast.AST, base: ast.expr, ctx: ast.expr_context,
                 name: str | None = None) -> None:
        """``base.name = ...`` (or ``del``, ``setattr``, ``base[key] = ...``): refused when
        ``base`` is torch or anything reached through it by name (``F``, ``torch.Tensor``,
        ``nn.Linear``), whose attributes the given code and the grader's checks call."""
        if _class_of(base) or isinstance(base, ast.Name) and base.id in self.classes_of:
            # type(m).forward = ...: m's class may be torch's (nn.Linear)
            name = name or (node.attr if isinstance(node, ast.Attribute) else "[...]")
            shown = f"{_shown(base)}{'' if name == '[...]' else '.'}{name}"
            self._add(node, (f"del {shown}" if isinstance(ctx, ast.Del) else f"{shown} = ...")
                      + " (the class of an object, which may be one of torch's: name the "
                      "class itself)", "redirect")
            return
        paths = sorted(p for p in self._qualify(base) if p is not UNKNOWN
                       and p.split(".")[0] == "torch")
        if paths:
            name = name or (node.attr if isinstance(node, ast.Attribute) else "[...]")
            joined = f"{paths[0]}{'' if name == '[...]' else '.'}{name}"
            self._add(node, f"del {joined}" if isinstance(ctx, ast.Del) else f"{joined} = ...",
                      "redirect")

    def _imported_into_a_class(self, node: ast.Import | ast.ImportFrom) -> None:
        """``class A: import torch.nn.functional as F``: a module of torch held as a class
        attribute (``A.F``, ``self.F``), where the grader cannot follow what is done to it."""
        for alias in node.names:
            path = alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
            if id(alias) in self.in_classes and not getattr(node, "level", 0) \
                    and path.split(".")[0] == "torch" and _torch_module(path):
                self._add(node, f"{path}, imported into a class", "redirect")

    def _handed_on(self, node: ast.Name | ast.Attribute) -> None:
        """One of torch's modules used as a value (``f(F)``, ``[nn]``, ``self.F = F``), not
        only read through (``F.relu``) or named again (``G = F``): what is done to it then
        cannot be followed (``m.linear = ...`` on an argument ``m``)."""
        for path in sorted(p for p in self._qualify(node) if p is not UNKNOWN):
            if path.split(".")[0] == "torch" and _torch_module(path):
                self._add(node, f"{path}, handed on as a value", "redirect")
                return


@functools.lru_cache(maxsize=1024)
def _torch_module(path: str) -> bool:
    """Whether ``path`` (``torch.nn.functional``) names one of torch's modules, read from
    torch's own namespaces (a dictionary look-up each, nothing of torch runs); a name torch
    does not have now counts as one, since a module of torch may be loaded when first used."""
    try:
        # here, not at the top: without torch the checker still loads (every path counts)
        import torch
    except ImportError:  # pragma: no cover - the exercise always has torch
        return True
    value: object = torch
    for part in path.split(".")[1:]:
        if not isinstance(value, types.ModuleType):
            return False
        value = vars(value).get(part, _MISSING)
        if value is _MISSING:
            return True
    return isinstance(value, types.ModuleType)


_MISSING = object()
