"""What a stage's worker child receives: which functions are graded, and no solution at all.

A stage is graded in isolation: whatever it builds on is a public scaffold
(``sandboxed/scaffolds.py``), so a broken Embedding does not cost the tying points. The child
that runs learner code is told only names (the functions its stage owns, and those the other
stages own, which the scaffolds replace) and the learner's own stub files (``given``), the
fallback for a module of theirs that cannot be imported. No line of lumen's solutions is ever
sent: learner code could read anything in its process and carry it out.
"""

from __future__ import annotations

import functools

from lumen import stages
from solutions.release import LUMEN, stub

MODULES = tuple(name.removesuffix(".py") for name in stages.SUBMISSION_FILES)


@functools.cache
def given_source(module: str) -> str:
    """The learner's stub of ``module``: exercises/``module``.py, every solution stubbed."""
    name = f"{module}.py"
    return stub((LUMEN / name).read_text(encoding="utf-8"), name)


@functools.cache
def stage_request(stage: str) -> dict:
    """What a worker child needs to grade ``stage``::

        {"stage": name,
         "owns": {module: [qualnames the graded stage owns]},
         "foreign": {module: [qualnames the other stages own]},
         "given": {module: the learner's stub file}}
    """
    stages.stage(stage)  # a ValueError for an unknown name
    owns: dict[str, list[str]] = {m: [] for m in MODULES}
    foreign: dict[str, list[str]] = {m: [] for m in MODULES}
    for each in stages.STAGES:
        for key in each.owns:
            module, qualname = key.split(":")
            (owns if each.name == stage else foreign)[module].append(qualname)
    return {
        "stage": stage,
        "owns": owns,
        "foreign": foreign,
        "given": {m: given_source(m) for m in MODULES},
    }
