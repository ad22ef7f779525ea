"""Probes: small, fixed procedures the worker runs on learner code, returning data only.

Each probe takes the loaded modules (``embeddings``, ``params``, ``gpt2``) and plain arguments
chosen by the grader, calls the learner's code, and returns what came out: probes decide
nothing, the hidden suites compare in the parent. One module per stage holds its probes, named
as the stage and its suite (``embedding.py`` for ``suites/test_embedding.py``);
``recorder.py`` is the call recorder, ``meta_device.py`` the meta-device runner, ``shared.py``
what several stages use; this file joins the stage modules' lists into ``PROBES``.

Learner code can rewrite anything here, so a reply is only as good as what it would cost to
forge. Every state a reply is compared against is the grader's (it sends the weights, a probe
loads them), and replies carry the values the learner's code computed, which earn points only
where producing them is the required behaviour. Structural facts (``same_object``, the
recorded calls, an input changed in place) choose the message, and the checks built on them
earn points behind the rules (``bans.certify``).
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
#: the grader may ask for (boundary/session.py).
PROBES: dict[str, Callable] = _table()


def run(name: str, modules: dict, args: dict) -> object:
    """Run probe ``name`` on the learner's ``modules`` with the grader's ``args``."""
    if name not in PROBES:
        raise ProbeError(f"no probe called {name!r}")
    return PROBES[name](modules, **args)
