"""Where a grade's time goes: named moments, taken in the grader's own process only.

``mark(name)`` records ``time.monotonic()`` (CLOCK_MONOTONIC: one clock for every process of
the machine, so a benchmark that started the grader can line the moments up with its own).
Nothing here comes from the learner's processes, and nothing reads these moments to decide
anything: they are printed by ``benchmarks/grade_speed.py`` and nowhere else. With
``LUMEN_PHASES=FILE`` in the environment, they are written there as JSON when the command ends
(``write``, called by ``python -m autograder``); without it, ``mark`` costs one dictionary store.
"""

from __future__ import annotations

import json
import os
import time

ENV = "LUMEN_PHASES"
#: name -> when (time.monotonic()); a name marked again keeps its latest moment.
MOMENTS: dict[str, float] = {}


def mark(name: str) -> None:
    """Record that ``name`` happened now (again: its latest moment is kept)."""
    MOMENTS[name] = time.monotonic()


def first(name: str) -> None:
    """Record that ``name`` happened now, unless it already did (its first moment is kept)."""
    if name not in MOMENTS:
        MOMENTS[name] = time.monotonic()


def write() -> None:
    """Write the moments, in order, to the file ``LUMEN_PHASES`` names (if it names one)."""
    path = os.environ.get(ENV)
    if path:
        ordered = sorted(MOMENTS.items(), key=lambda item: item[1])
        with open(path, "w", encoding="utf-8") as f:
            json.dump(ordered, f)


mark("grader: python started, autograder imported")
