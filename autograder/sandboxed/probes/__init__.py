"""Probes: small, fixed procedures the worker runs on learner code, returning data only.

Each probe takes the loaded modules (``embeddings``, ``params``, ``gpt2``) and plain arguments
chosen by the grader (tensors on the CPU, numbers, a device name), calls the learner's code,
and returns what came out. Probes decide nothing; the hidden suites compare in the parent.

One module per stage holds that stage's probes, named as the stage and its hidden suite
(``embedding.py`` for ``suites/test_embedding.py``, ...); ``recorder.py`` is the call recorder
and ``shared.py`` what several stages' probes use. This file builds the one table the worker
runs probes from, ``PROBES``, out of the stage modules' own lists.

Learner code runs in this process and can rewrite anything here, so a reply is only as good as
what it would cost to forge. Every state a reply is compared against is the grader's: it
chooses the weights, sends them, and a probe puts them into the learner's model
(``load_state_dict``, or a copy into an Embedding's weight) before it runs; the suites
compute the expected values from that same state with lumen, in the grader's process.
Replies carry the VALUES the learner's code computed (rows looked up, logits, gradients), and
a check earns points only where producing the right value is itself the required behaviour.
Structural facts (``same_object``, a parameter count, the recorded calls, an input changed in
place) are observed here, where only code the rules refuse could forge them: they choose the
message, and the checks built on them earn points behind the rules (``bans.certify``).
"""

from __future__ import annotations

from collections.abc import Callable

from . import embedding, init, neighbours, onehot, params, tying
from .shared import ProbeError

#: The stage modules, in the order of lumen's stages (this folder imports nothing of lumen:
#: tests/test_sandboxed.py checks that each stage has its module and each probe one stage).
STAGE_MODULES = (embedding, onehot, neighbours, params, tying, init)


def _table() -> dict[str, Callable]:
    """Every stage module's probes by name; a name in two stages is the grader's bug."""
    table: dict[str, Callable] = {}
    for module in STAGE_MODULES:
        for fn in module.PROBES:
            if fn.__name__ in table:
                raise ImportError(f"two probes called {fn.__name__!r}: "
                                  f"{table[fn.__name__].__module__} and {module.__name__}")
            table[fn.__name__] = fn
    return table


#: Probe name -> function: the one table the worker runs probes from (``run``), and the names
#: the grader may ask for (boundary/client.py).
PROBES: dict[str, Callable] = _table()


def run(name: str, modules: dict, args: dict) -> object:
    """Run probe ``name`` on the learner's ``modules`` with the grader's ``args``."""
    if name not in PROBES:
        raise ProbeError(f"no probe called {name!r}")
    return PROBES[name](modules, **args)
