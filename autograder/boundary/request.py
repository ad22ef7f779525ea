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
from dataclasses import asdict, dataclass

from lumen import stages

from ..publish.stubber import LUMEN, stub

#: The learner's modules, in dependency order (gpt2 imports the other two): every request names
#: them, and the stage process loads what its request names (the worker keeps no list).
MODULES = tuple(name.removesuffix(".py") for name in stages.SUBMISSION_FILES)


@functools.cache
def given_source(module: str) -> str:
    """The learner's stub of ``module``: exercises/``module``.py, every solution stubbed."""
    name = f"{module}.py"
    return stub((LUMEN / name).read_text(encoding="utf-8"), name)


@dataclass(frozen=True)
class StageRequest:
    """Everything one stage process is sent, and nothing else."""

    stage: str  # the stage graded
    modules: list[str]  # the learner's modules, in dependency order: what the process loads
    owns: dict[str, list[str]]  # module -> the qualnames the graded stage owns
    foreign: dict[str, list[str]]  # module -> the qualnames the other stages own (scaffolded)
    given: dict[str, str]  # module -> the learner's stub file: the fallback of a broken module
    files: dict[str, str]  # the learner's files, name -> text
    limits: dict  # what the process may use (memory, user id, ...: autograder/boundary/launcher.py)

    def message(self) -> dict:
        """The request as the worker reads it (plain data for the wire)."""
        return asdict(self)


@functools.cache
def _ownership(stage: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    stages.stage(stage)  # a ValueError for an unknown name
    owns: dict[str, list[str]] = {m: [] for m in MODULES}
    foreign: dict[str, list[str]] = {m: [] for m in MODULES}
    for each in stages.STAGES:
        for key in each.owns:
            module, qualname = key.split(":")
            (owns if each.name == stage else foreign)[module].append(qualname)
    return owns, foreign


def stage_request(stage: str, files: dict[str, str], limits: dict) -> StageRequest:
    """What the process grading ``stage`` of a submission with ``files`` is sent."""
    owns, foreign = _ownership(stage)
    return StageRequest(stage=stage, modules=list(MODULES), owns=owns, foreign=foreign,
                        given={m: given_source(m) for m in MODULES}, files=files, limits=limits)
