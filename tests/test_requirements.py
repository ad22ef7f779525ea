"""No hidden rule: every hidden test names the visible tests that exercise its requirement.

Each hidden suite (autograder/suites/test_<stage>.py) holds ``VISIBLE``: hidden test -> the
visible tests (exercises/tests/test_<stage>.py) that check the same requirement on other
inputs, so a learner who passes the visible tests has been told, and shown, every rule the
hidden suite applies. This test fails when a hidden test has no visible counterpart, or names
one that does not exist. (That the stub's docstring states the rule is for review: each
visible test's failure message quotes it.)
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from autograder.rubric import load
from lumen.stages import STAGE_NAMES

ROOT = Path(__file__).resolve().parents[1]


def _visible_tests(stage: str) -> set[str]:
    tree = ast.parse((ROOT / "exercises" / "tests" / f"test_{stage}.py").read_text("utf-8"))
    return {node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_every_hidden_test_has_a_visible_counterpart(stage):
    suite = importlib.import_module(f"autograder.suites.test_{stage}")
    mapping: dict[str, tuple[str, ...]] = getattr(suite, "VISIBLE", {})
    hidden = set(load().points[stage])
    missing = sorted(hidden - set(mapping))
    assert not missing, f"hidden tests of {stage} with no visible counterpart: {missing}"
    assert not set(mapping) - hidden, "VISIBLE names hidden tests that do not exist"
    visible = _visible_tests(stage)
    for test, names in mapping.items():
        assert names, f"{test}: name at least one visible test"
        unknown = sorted(set(names) - visible)
        assert not unknown, f"{test}: no visible tests called {unknown} in test_{stage}.py"
