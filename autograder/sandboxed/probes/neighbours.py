"""The neighbours stage's probes (suites/test_neighbours.py): the learner's
cosine_similarity, cosine_neighbours and analogy on the grader's vectors. On the meta device
(``device="meta"``), the inputs keep their values behind them (``meta_device.MetaWithValues``)
and only the result comes back.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .shared import ProbeError, _call, _on, _watched, on_meta


def cosine_similarity(m, a, b, device="cpu", eps=None, positional=2):
    """``cosine_similarity(a, b[, eps])``, the arguments passed as ``_call`` says (default:
    ``eps`` by name), and ``a`` and ``b`` afterwards (``_watched``)."""
    def call(a: torch.Tensor, b: torch.Tensor) -> object:
        arguments = {"a": a, "b": b} if eps is None else {"a": a, "b": b, "eps": eps}
        return _call(m["embeddings"].cosine_similarity, arguments, positional)

    if device == "meta":
        return {"out": on_meta(call, a, b)}
    a, b = _on(a, device), _on(b, device)
    return _watched(lambda: call(a, b), a=a, b=b)


def _pair(result: object) -> dict:
    if isinstance(result, tuple | list) and len(result) == 2:
        return {"ids": result[0], "sims": result[1], "kind": "tuple"}
    return {"ids": None, "sims": None, "kind": type(result).__name__}


def _searched(call: Callable[[], object], **inputs: torch.Tensor) -> dict:
    """``_pair`` of what ``call()`` returns, with ``inputs`` afterwards (``_watched``)."""
    result = _watched(call, **inputs)
    return {**_pair(result.pop("out")), **result}


def cosine_neighbours(m, E, token, k, device="cpu", positional=None):
    """``cosine_neighbours(E, token, k)``, the arguments passed as ``_call`` says; ``token``
    an int, a 0-d integer tensor or a query vector (moved to ``device`` with E)."""
    def call(E: torch.Tensor, token: object = token) -> object:
        return _call(m["embeddings"].cosine_neighbours, {"E": E, "token": token, "k": k},
                     positional)

    tensors = {"E": E, "token": token} if isinstance(token, torch.Tensor) else {"E": E}
    if device == "meta":
        return _pair(on_meta(call, *tensors.values()))
    tensors = {name: _on(t, device) for name, t in tensors.items()}
    return _searched(lambda: call(*tensors.values()), **tensors)


def analogy(m, E, a, b, c, device="cpu", positional=4, **kwargs):
    """``analogy(E, a, b, c, **kwargs)`` (``k``, ``exclude_inputs``, in the stub's order), the
    arguments passed as ``_call`` says (default: ``kwargs`` by name)."""
    if set(kwargs) - {"k", "exclude_inputs"}:
        raise ProbeError(f"analogy takes k and exclude_inputs, not {sorted(kwargs)}")
    order = [name for name in ("k", "exclude_inputs") if name in kwargs]

    def call(E: torch.Tensor) -> object:
        arguments = {"E": E, "a": a, "b": b, "c": c, **{name: kwargs[name] for name in order}}
        return _call(m["embeddings"].analogy, arguments, positional)

    if device == "meta":
        return _pair(on_meta(call, E))
    E = _on(E, device)
    return _searched(lambda: call(E), E=E)


#: This stage's probes, by the names its suite calls (the registry: probes/__init__.py).
PROBES = (
    cosine_similarity, cosine_neighbours, analogy,
)
