"""The reference a stage's worker child may see: lumen, minus the stage being graded.

A stage is graded in isolation: whatever it builds on comes from the reference, so a broken
Embedding does not cost the tying points. The child gets lumen's source with the graded
stage's solution regions stubbed out (by the same code that makes the learners' stubs), so the
answers it is graded on are never within its reach.
"""

from __future__ import annotations

import functools

from lumen import stages
from solutions.release import LUMEN, stub

MODULES = tuple(name.removesuffix(".py") for name in stages.SUBMISSION_FILES)


@functools.cache
def _source(module: str) -> str:
    return (LUMEN / f"{module}.py").read_text(encoding="utf-8")


def stubbed_source(module: str, stage: str) -> str:
    """lumen/``module``.py with ``stage``'s solution regions replaced by stubs."""
    others = [s for s in stages.STAGE_NAMES if s != stage]
    return stub(_source(module), f"{module}.py", solved=others)


@functools.cache
def stage_request(stage: str) -> dict:
    """What a worker child needs to grade ``stage``: stubbed reference and foreign functions."""
    stages.stage(stage)  # a ValueError for an unknown name
    foreign: dict[str, list[str]] = {m: [] for m in MODULES}
    for other in stages.STAGES:
        if other.name != stage:
            for owned in other.owns:
                module, qualname = owned.split(":")
                foreign[module].append(qualname)
    return {
        "stage": stage,
        "reference": {m: stubbed_source(m, stage) for m in MODULES},
        "foreign": foreign,
    }
