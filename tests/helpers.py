"""Helpers shared by the repository's tests: seeded ids, a normality check, the certified checks."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import torch
from torch import Tensor


def random_ids(shape: tuple[int, ...], vocab_size: int, seed: int = 0) -> Tensor:
    """Seeded random ids ``(*shape)`` in ``[0, vocab_size)``, LongTensor."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, shape, generator=g)


def assert_normal(t: Tensor, std: float, what: str, sigmas: float = 6.0) -> None:
    """``t``'s entries look like N(0, std^2) draws: mean and std within ``sigmas`` standard errors.

    For n normal draws the sample mean has standard error std/sqrt(n) and the sample standard
    deviation about std/sqrt(2(n-1)).
    """
    x = t.detach().double().flatten()
    n = x.numel()
    mean, sample_std = x.mean().item(), x.std().item()
    assert abs(mean) <= sigmas * std / math.sqrt(n), f"{what}: mean {mean:.3g}, expected 0"
    tolerance = sigmas * std / math.sqrt(2 * (n - 1))
    assert abs(sample_std - std) <= tolerance, (
        f"{what}: std {sample_std:.5g}, expected {std:.5g} +- {tolerance:.2g} ({n} draws)"
    )


def certified_tests(stage: str) -> list[str]:
    """The hidden tests of ``stage`` that call ``bans.certify``: the checks of what the
    learner's process reports, whose points depend on the rules (autograder/suites/bans.py)."""
    path = Path(__file__).resolve().parents[1] / "autograder" / "suites" / f"test_{stage}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
            and any(isinstance(call, ast.Call) and ast.unparse(call.func) == "bans.certify"
                    for call in ast.walk(node))]


def full_marks(stage: str) -> str:
    """A stage's points in rubric.toml as grades.csv and the reports write them ("20"), so a
    test of a report holds whatever the weights."""
    from autograder.rubric import load

    return f"{load().stage_max(stage):g}"
