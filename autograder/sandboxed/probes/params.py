"""The params stage's probes (suites/test_params.py): the learner's count_params, and a
ParamCount the grader filled in (its embedding_share and memory_bytes), as plain numbers.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import torch

from .shared import refusal


def _count(value: object) -> dict:
    """A count as data, by the contract's rule for whole numbers: whatever ``operator.index``
    accepts (int, numpy's integers, a 0-d integer tensor) gives its int; anything else gives
    its type's name, and a float its value, for the message."""
    kind = type(value).__name__
    try:
        return {"int": int(operator.index(value)), "type": kind}
    except Exception:  # noqa: BLE001 - not a whole number: the grader says what it was
        return {"int": None, "type": kind, "float": float(value) if isinstance(value, float)
                else None}


def _number(get: Callable) -> object:
    """``get()`` if it gives a float (numpy's float64, a float subclass, too) or an int, as
    a plain float or int; else its exception, or its type, as data (a Fraction or a float32
    is a number, but not the float the docstring promises)."""
    try:
        value = get()
    except Exception as exc:  # noqa: BLE001 - a refusal is a result here
        return refusal(exc)
    if isinstance(value, float):
        return float.__float__(value)  # the value itself, whatever the subclass says
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__index__(value)
    return {"type": type(value).__name__}


def _whole(get: Callable) -> dict:
    """``get()`` as ``_count`` reports it, or its exception as data."""
    try:
        value = get()
    except Exception as exc:  # noqa: BLE001 - a refusal is a result here
        return refusal(exc)
    return _count(value)


#: count_params's parameters in the stub's order, for a positional call.
SIGNATURE = ("vocab_size", "d_model", "n_layers", "n_ctx", "tied")


def count_params(m, fields, positional=False, **shape):
    """The learner's ParamCount for ``shape`` (the five arguments by name), called by keyword
    or, with ``positional``, as ``count_params(V, d, N, n_ctx, tied)``: its type, and each of
    ``fields`` as ``_count`` reports it. ``tied=None`` leaves the argument out (its default)."""
    if shape.get("tied", 0) is None:
        del shape["tied"]
    if positional:
        count = m["params"].count_params(*(shape[name] for name in SIGNATURE if name in shape))
    else:
        count = m["params"].count_params(**shape)
    return {"type": type(count).__name__,
            "fields": {name: _count(getattr(count, name, None)) for name in fields}}


def _memory(count: object, spec: str) -> dict:
    """``count.memory_bytes`` as ``spec`` asks: "default" (no argument), "fp16" (a string),
    "torch.float16" (torch's dtype); with a "dtype=" prefix, passed by keyword."""
    name = spec.removeprefix("dtype=")
    if name == "default":
        return _whole(lambda: count.memory_bytes())
    dtype = getattr(torch, name.removeprefix("torch.")) if name.startswith("torch.") else name
    if spec.startswith("dtype="):
        return _whole(lambda: count.memory_bytes(dtype=dtype))
    return _whole(lambda: count.memory_bytes(dtype))


def param_count(m, counts, dtypes=(), share=False):
    """A ParamCount the grader filled in, ``ParamCount(**counts)`` (so the learner's
    count_params plays no part): its ``embedding_share`` if ``share``, and ``memory_bytes`` for
    each of ``dtypes`` (see ``_memory``). A property or method that raises is reported, not
    propagated, so an unfinished ``memory_bytes`` does not hide a finished share."""
    count = m["params"].ParamCount(**counts)
    out: dict = {"memory": {spec: _memory(count, spec) for spec in dtypes}}
    if share:
        out["embedding_share"] = _number(lambda: count.embedding_share)
    return out


#: This stage's probes, by the names its suite calls (the registry: probes/__init__.py).
PROBES = (
    count_params, param_count,
)
