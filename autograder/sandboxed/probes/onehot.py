"""The onehot stage's probes (suites/test_onehot.py): the learner's one_hot and
embed_via_onehot on the grader's ids and weights, on any device and memory layout.
"""

from __future__ import annotations

import torch

from .shared import _arranged, _call, _on, _watched, on_meta


def one_hot(m, ids, num_classes, dtype=None, device="cpu", watch=False, layout=None,
            positional=2):
    """``one_hot(ids, num_classes[, dtype])``, ``dtype`` a name ("float64") and the
    arguments passed as ``_call`` says (default: ``dtype`` by name); ``layout`` and ``watch``
    as in ``embedding_forward``."""
    arguments = {"ids": ids, "num_classes": num_classes}
    if dtype is not None:
        arguments["dtype"] = getattr(torch, dtype)

    def call(ids: torch.Tensor) -> object:
        return _call(m["embeddings"].one_hot, {**arguments, "ids": ids}, positional)

    if device == "meta":
        return {"out": on_meta(call, ids)}
    ids = _arranged(_on(ids, device), layout)
    return _watched(lambda: call(ids), watch, ids=ids)


def embed_via_onehot(m, weight, ids, device="cpu", watch=False, layout=None, positional=None):
    """``embed_via_onehot(weight, ids)``, the arguments passed as ``_call`` says; ``layout``
    and ``watch`` as in ``embedding_forward``."""
    def call(weight: torch.Tensor, ids: torch.Tensor) -> object:
        return _call(m["embeddings"].embed_via_onehot, {"weight": weight, "ids": ids},
                     positional)

    if device == "meta":
        return {"out": on_meta(call, weight, ids)}
    weight, ids = _on(weight, device), _arranged(_on(ids, device), layout)
    return _watched(lambda: call(weight, ids), watch, weight=weight, ids=ids)


#: This stage's probes, by the names its suite calls (the registry: probes/__init__.py).
PROBES = (
    one_hot, embed_via_onehot,
)
