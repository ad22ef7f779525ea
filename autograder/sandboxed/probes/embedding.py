"""The embedding stage's probes (suites/test_embedding.py): the learner's Embedding built,
loaded with the grader's weight, trained one SGD step, and its forward (and check_ids) on the
grader's ids, on any device and memory layout; and its lookup as the learner wrote it.
"""

from __future__ import annotations

import torch
from torch import nn

from .shared import (
    SGD,
    _arranged,
    _attempt,
    _call,
    _load,
    _on,
    _own_dict,
    _pinned_and_shipped,
    _watched,
    on_meta,
)


def _params(module: nn.Module) -> list[list]:
    return [[name, list(p.shape), type(p) is nn.Parameter] for name, p in module.named_parameters()]


def _set_weight(layer: nn.Module, weight: torch.Tensor) -> None:
    with torch.no_grad():
        layer.weight.copy_(weight)


def _weight_facts(layer: nn.Module) -> dict:
    """What the layer says about its weight: only ever used to explain a wrong value."""
    weight = getattr(layer, "weight", None)
    return {
        "has_weight": weight is not None,
        "weight_type": type(weight).__name__,
        "registered": any(p is weight for p in layer.parameters()),
        "parameters": _params(layer),
        "shape": list(weight.shape) if isinstance(weight, torch.Tensor) else None,
        "requires_grad": bool(getattr(weight, "requires_grad", False)),
    }


def _train_registered(layer: nn.Module, ids: torch.Tensor, grad: torch.Tensor,
                      lr: float) -> dict:
    """Rows looked up (by the grader) in the Parameter that named_parameters() calls "weight",
    their gradient, and that Parameter after one SGD step over layer.parameters()."""
    weight = dict(layer.named_parameters())["weight"]  # KeyError: not registered as "weight"
    optimiser = SGD(layer.parameters(), lr=lr)
    rows = weight[ids]
    if rows.requires_grad:  # else: no gradient, reported as None
        (rows * grad).sum().backward()
    out = {"rows": rows.detach().clone(), "grad": weight.grad}
    optimiser.step()
    out["after"] = weight.detach().clone()
    return out


def _kept_std(layer: nn.Module) -> object:
    """The ``std`` the layer holds once built, read past any property: a number, None, or
    NaN for anything else (the given lines store the argument as it came)."""
    value = _own_dict(layer).get("std", float("nan"))
    if value is None or (type(value) in (int, float)):
        return value
    return float("nan")


def embedding_parameter(m, vocab_size, d_model, weight, ids, grad, lr, positional=None,
                        std="default"):
    """Whether ``weight`` is the layer's registered, trainable (V, d) Parameter, shown by
    values: ``weight`` is loaded through load_state_dict({"weight": ...}), rows are looked up
    in the Parameter registered as "weight", a backward puts their gradient in its .grad and
    an SGD step over layer.parameters() moves it. The learner's forward is not used here (the
    lookup tests judge it), so this grades __init__ alone. ``positional``: as ``_call``
    (0: ``Embedding(vocab_size=V, d_model=d)``); ``std``, unless "default", is passed by name,
    and the std the layer keeps is reported."""
    arguments = {"vocab_size": vocab_size, "d_model": d_model}
    if std != "default":
        arguments["std"] = std
    layer = _call(m["embeddings"].Embedding, arguments, 2 if positional is None else positional)
    out = _weight_facts(layer)
    out["std"] = _kept_std(layer)
    out["load"] = _attempt(lambda: _load(layer, {"weight": weight}))
    if not isinstance(out["load"], dict) or "error" not in out["load"]:
        out["trained"] = _attempt(lambda: _train_registered(layer, ids, grad, lr))
    return out


def embedding_forward(m, vocab_size, d_model, weight, ids, device="cpu", scale=False, grad=None,
                      watch=False, layout=None, positional=None):
    """The learner's forward on ``ids`` (laid out as ``layout`` says, see ``_arranged``) with
    the grader's ``weight`` copied into the layer's own (copied, not loaded: whether state_dict
    sees the weight is structural, judged by ``embedding_parameter`` for its message only),
    and the ids afterwards (``_watched``); its gradient if ``grad``; with ``watch``, the torch
    functions and ATen operators it ran (``record_calls``). On the meta device, the output
    alone (``meta_device.MetaWithValues``). ``positional``: how the layer is built, as
    ``_call`` says (None: ``Embedding(V, d, scale=...)``; 0: every argument by name)."""
    layer = _call(m["embeddings"].Embedding, {"vocab_size": vocab_size, "d_model": d_model,
                                              "scale": scale}, 2 if positional is None else 0)
    _set_weight(layer, weight)
    layer = layer.to(dtype=weight.dtype)
    if device == "meta":
        return {"out": on_meta(layer, ids, module=layer)}
    layer = layer.to(device)
    if not isinstance(ids, torch.Tensor):  # a list, say: check_ids must refuse it
        return {"out": layer(ids)}
    ids = _arranged(_on(ids, device), layout)
    result = _watched(lambda: layer(ids), watch, ids=ids)
    out = result["out"]
    if grad is not None and isinstance(out, torch.Tensor):
        if out.requires_grad:  # else: cut off from the weight, reported as no gradient
            # d(sum(out * grad))/d(out) = grad: the same gradient as out.backward(grad), without
            # the given-gradient path's lazy import of sympy (~0.3 s a child)
            (out * grad.to(out.device, out.dtype)).sum().backward()
        result["grad"] = layer.weight.grad
    return result


def embedding_check_ids(m, ids, vocab_size, positional=None, device="cpu"):
    """``check_ids(ids, vocab_size)`` on its own, the arguments passed as ``_call`` says, with
    the ids on ``device`` (on the meta device with their values kept behind them): what it
    returned (None, for valid ids), by its type's name."""
    def check(ids: torch.Tensor) -> object:
        return _call(m["embeddings"].check_ids, {"ids": ids, "vocab_size": vocab_size},
                     positional)

    if device == "meta" and isinstance(ids, torch.Tensor):
        returned = on_meta(check, ids)
    else:
        returned = check(ids.to(device) if isinstance(ids, torch.Tensor) else ids)
    return {"returned": type(returned).__name__}


# --- given code, as the learner wrote it (loader.Shipped, given.py) --------------------------
# In a stage process given code is the grader's own copy (given.py), so these probes run the
# learner's classes twice: pinned, as every other probe does, and as shipped, with the given
# code and nn.Module overrides of the learner's own file (``m["shipped"]``). The suites compare
# both with lumen: right when pinned but wrong as shipped means the given code was changed.


def embedding_lookup_as_shipped(m, vocab_size, d_model, weight, ids, grad):
    """An Embedding loaded with ``weight`` (load_state_dict), converted with .double(): its
    rows on ``ids`` and the gradient of sum(rows * grad) in the Parameter registered as
    "weight"; pinned and as the learner wrote it."""
    def run() -> dict:  # on copies: a run that changes its inputs leaves the next its own
        layer = m["embeddings"].Embedding(vocab_size, d_model)
        layer.load_state_dict({"weight": weight.clone()})
        layer = layer.double()
        rows = layer(ids.clone())
        (rows * grad.to(rows.dtype)).sum().backward()
        registered = (_own_dict(layer).get("_parameters") or {}).get("weight")
        return {"rows": rows.detach(), "grad": None if registered is None else registered.grad}

    return _pinned_and_shipped(m, run)


#: This stage's probes, by the names its suite calls (the registry: probes/__init__.py).
PROBES = (
    embedding_parameter, embedding_forward, embedding_check_ids, embedding_lookup_as_shipped,
)
