"""Every behavioural promise the stubs' docstrings make, each with the checks that hold it.

One module per stage (``promises/<stage>.py``) holds a ``PROMISES`` list; ``ALL`` joins them in
stage order. A row names the owned function (as ``lumen.stages`` does: ``"module:Qualified.name"``),
the docstring sentence it stands for, the inputs the hidden check sends, the hidden test that
checks it (``autograder/suites/test_<stage>.py::test_name``) and the visible test that exercises
it on other inputs (``exercises/tests/test_<stage>.py::test_name``). ``tests/test_promises.py``
fails when a docstring promise has no row, or a row names a check that does not exist.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from lumen.stages import STAGE_NAMES


@dataclass(frozen=True)
class Promise:
    """One promise of one owned function's docstring, and the checks that hold it."""

    function: str  # "embeddings:Embedding.forward", as in lumen.stages.Stage.owns
    says: str  # the docstring's words (a fragment that occurs in it verbatim, whitespace folded)
    inputs: str  # what the hidden check sends: dtypes, shapes, devices, argument forms
    hidden: str  # "test_embedding.py::test_lookup_every_shape" (autograder/suites/)
    visible: str  # "test_embedding.py::test_lookup" (exercises/tests/)


def stage_promises(stage: str) -> list[Promise]:
    """The rows of one stage (an empty list until its module is written)."""
    try:
        module = importlib.import_module(f"{__name__}.{stage}")
    except ModuleNotFoundError as missing:
        if missing.name != f"{__name__}.{stage}":
            raise
        return []
    return list(module.PROMISES)


ALL: tuple[Promise, ...] = tuple(p for s in STAGE_NAMES for p in stage_promises(s))
