# Generated from autograder/rules/__init__.py by `make stubs`: the grader's code,
# which the visible tests use. Learners: nothing to write here. Course staff: edit that file.
"""The source rules: what a learner's three files may not contain, read without running them.

The grader reads the submitted source with ``check`` for each stage's banned built-ins and
every way around a ban (autograder/suites/bans.py applies it); learners get this package as
exercises/rules/ (solutions/release.py copies it), so their visible tests run the same
checker. README.md beside this file states the rules in the learner's words. Nothing here
imports the rest of the grader, so the copy works on its own: ``python -m exercises.rules``.
"""

from __future__ import annotations

from .check import check, main, read
from .deadcode import GUARDS, NAMESPACES, TAMPERS
from .findings import SHOWN_PARTS, Finding, explain
from .nodes import UNKNOWN
from .parsing import _parse as _parse  # the reading's cache, cleared by a test that counts work
from .policy import (
    ALLOWED_MODULES,
    ALWAYS,
    ATTRIBUTE_BUILTINS,
    BANS,
    EVASIONS,
    FILES,
    GLOBAL_HOOKS,
    MAX_DEPTH,
    MAX_NODES,
    METACLASSES,
    MODULE_ONLY,
    OWN_MODULES,
    OWN_PACKAGE,
    REFUSED,
    REFUSED_BUILTINS,
    REFUSED_DEFINITIONS,
    SHOWN,
    SYS_ALLOWED,
    WHY,
    Ban,
)
from .recorded import banned_calls, op_name

__all__ = [
    "ALLOWED_MODULES", "ALWAYS", "ATTRIBUTE_BUILTINS", "BANS", "EVASIONS", "FILES",
    "GLOBAL_HOOKS", "GUARDS", "MAX_DEPTH", "MAX_NODES", "METACLASSES", "MODULE_ONLY",
    "NAMESPACES", "OWN_MODULES", "OWN_PACKAGE", "REFUSED", "REFUSED_BUILTINS",
    "REFUSED_DEFINITIONS", "SHOWN", "SHOWN_PARTS", "SYS_ALLOWED", "TAMPERS", "UNKNOWN", "WHY",
    "Ban", "Finding", "banned_calls", "check", "explain", "main", "op_name", "read",
]
