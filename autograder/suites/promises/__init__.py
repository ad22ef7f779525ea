"""Every behavioural promise the stubs' docstrings make, each with the checks that hold it.

One module per stage (``promises/<stage>.py``) holds a ``PROMISES`` list; ``ALL`` joins them in
stage order. A row names the owned function (``"module:Qualified.name"``, as ``lumen.stages``),
the docstring sentence it stands for, the inputs the hidden check sends, the hidden test
(``autograder/suites/test_<stage>.py::test_name``), the visible test
(``exercises/tests/test_<stage>.py::test_name``), and may name the **edge classes** its check
sends (``EDGES``) and its **mutant** (a known mistake of ``tests/variants/<stage>.py``).

``tests/test_promises.py`` fails when a promise has no row, a row names a check that does not
exist, a check does not send an edge class that applies (save its ``GAPS``) or a mutant is not
a known mistake; ``make promise-mutants`` requires each mutant to lose points at its row's
check, on its own stage only.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

from lumen.stages import STAGE_NAMES


@dataclass(frozen=True)
class Promise:
    """One promise of one owned function's docstring, and the checks that hold it."""

    function: str  # "embeddings:Embedding.forward", as in lumen.stages.Stage.owns
    says: str  # the docstring's words (a fragment that occurs in it verbatim, whitespace folded)
    #: what the hidden check sends: dtypes, shapes, devices, argument forms; a part that another
    #: check holds names that check's test (``(certified, test_inputs_are_left_unchanged)``)
    inputs: str
    hidden: str  # "test_embedding.py::test_lookup_every_shape" (autograder/suites/)
    visible: str  # "test_embedding.py::test_lookup" (exercises/tests/)
    edges: tuple[str, ...] = ()  # the EDGES classes its hidden check sends
    mutant: str = ""  # the MISTAKES entry of tests/variants/<stage>.py that breaks it alone


#: A test of the row's own stage that its inputs name, bare (``test_ties_go_to_smaller_id``,
#: not ``test_init.py::...`` of another stage): the check that holds a part of the promise.
CHECK_NAMED = re.compile(r"(?<![\w:.])test_\w+\b(?!\.py)")


#: The classes of input where a plausible mistake bites, which a check must send when they
#: apply to its function (``tests/test_promises.py`` says when each applies).
EDGES: dict[str, str] = {
    "size-1": "a size-1 dimension in every position of every tensor argument (a squeeze() "
              "turns ids of shape (1, 3) into (3, d))",
    "0-d": "a 0-d tensor, where the function takes any shape",
    "empty": "a tensor with no elements, where the function takes any shape",
    "float dtypes": "every float dtype the docstring allows (float16, bfloat16, float32, "
                    "float64), each kept where it is promised",
    "mixed dtypes": "two tensor arguments of different float dtypes, where the signature "
                    "allows them",
    "integer dtypes": "every integer dtype ids may have (int8, int16, int32, int64, uint8)",
    "by hand": "a record built by hand, its fields disagreeing with any config",
    "defaults": "every default argument left out",
    "examples": "every example the docstring states, run as a check",
    "devices": "the device pass seeing any tensor not on the inputs' device (a tensor made "
               "on a fixed device, a result left on the CPU)",
}


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
