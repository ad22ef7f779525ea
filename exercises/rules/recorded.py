# Generated from autograder/rules/recorded.py by `make stubs`: the grader's code,
# which the visible tests use. Learners: nothing to write here. Course staff: edit that file.
"""The names recorded while the learner's code ran, read against the bans.

The recorder (autograder/sandboxed/probes/recorder.py) only explains a verdict that the
source already decided; these turn what it recorded (``"aten::embedding"``,
``"embedding.default"``) into the bans' plain names.
"""

from __future__ import annotations

from collections.abc import Iterable

from .policy import BANS


def op_name(recorded: str) -> str:
    """A torch function or ATen operator's name as recorded (``"aten::embedding"``,
    ``"embedding.default"``, ``"aten::_embedding_bag"``, ``"one_hot"``) -> its plain name
    (``"embedding"``, ``"embedding"``, ``"embedding_bag"``, ``"one_hot"``)."""
    name = recorded.rsplit("::", 1)[-1].split(".", 1)[0]
    return name.lstrip("_") or recorded


def banned_calls(recorded: Iterable[str], stage: str) -> list[str]:
    """Of the names recorded while the learner's code ran, those ``stage`` bans (sorted)."""
    ban = BANS.get(stage)
    if ban is None:
        return []
    return sorted({op_name(str(r)) for r in recorded} & ban.ops)
