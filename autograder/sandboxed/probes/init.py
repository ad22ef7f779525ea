"""The init stage's probes (suites/test_init.py): fresh draws of the learner's Embedding and
GPT2 (judged statistically in the grader), reset_parameters and scale_output on the grader's
inputs, expected_dot_std; and both classes' construction as the learner wrote it.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from .shared import SGD, _attempt, _build, _own_dict, on_meta


def _state(model: nn.Module) -> dict:
    """The state_dict as copies: the draws the init stage judges statistically (they are what
    init_weights is for), never a state an expected value is computed from."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def embedding_init(m, vocab_size, d_model, **kwargs):
    """A fresh Embedding's weight: the draws under test, judged statistically in the grader."""
    layer = m["embeddings"].Embedding(vocab_size, d_model, **kwargs)
    return {"weight": layer.weight.detach().clone()}


def _unscaled(cls: type) -> type:
    """``cls`` with a scale_output that returns x: its forward then returns its own rows."""
    return type(cls.__name__, (cls,), {"scale_output": lambda self, x: x})


def _step_rows(layer: nn.Module, optimiser, ids: torch.Tensor, rows: torch.Tensor,
               grad: torch.Tensor) -> torch.Tensor:
    """The rows forward returns after ``optimiser`` steps on sum(rows * grad)."""
    (rows * grad).sum().backward()
    optimiser.step()
    with torch.no_grad():
        return layer(ids)


def embedding_reset(m, vocab_size, d_model, std, ids, grad, lr, dtype=None):
    """reset_parameters on a layer whose weight is all 7s (converted to ``dtype`` first, if
    given), with an SGD optimiser built on layer.parameters() BEFORE the reset: the rows
    forward returns afterwards, and the same rows after the optimiser's step. Refilled in
    place, the optimiser moves the new rows and they keep the weight's dtype; a new Parameter
    is out of the optimiser's reach, and a new tensor has torch's default dtype."""
    layer = _unscaled(m["embeddings"].Embedding)(vocab_size, d_model, std=std)
    if dtype is not None:
        layer = layer.to(getattr(torch, dtype))
    layer.weight.requires_grad_(True)  # another stage's stand-in __init__ leaves it off
    with torch.no_grad():
        layer.weight.fill_(7.0)
    weight = layer.weight
    optimiser = SGD(layer.parameters(), lr=lr)
    layer.reset_parameters()
    rows = layer(ids)
    return {"same_object": layer.weight is weight, "rows": rows.detach().clone(),
            "after": _attempt(lambda: _step_rows(layer, optimiser, ids, rows, grad))}


def embedding_scale(m, d_model, scale, x, grad, vocab_size=10):
    """``scale_output`` on a layer built without ``reset_parameters`` (graded on its own),
    given ``x`` as forward gives its rows: a tensor that autograd tracks (a copy of a leaf).
    What it returns, that input afterwards (it must be left as it was), and the gradient of
    sum(out * grad) that reaches the leaf: grad * sqrt(d_model) when scaled, grad when not."""
    cls = m["embeddings"].Embedding
    bare = type(cls.__name__, (cls,), {"reset_parameters": lambda self: None})
    layer = bare(vocab_size, d_model, scale=scale)
    leaf = x.clone().requires_grad_(True)
    rows = leaf.clone()  # (..., d), tracked by autograd, not a leaf
    out = layer.scale_output(rows)
    result = {"out": out.detach() if isinstance(out, torch.Tensor) else out,
              "input_after": rows.detach().clone(), "grad": None}
    if isinstance(out, torch.Tensor) and out.requires_grad:  # else: cut off from x
        result["grad"] = _attempt(lambda: _gradient(out, leaf, grad))
    return result


def embedding_on_device(m, vocab_size, d_model, std, x, method, device):
    """``reset_parameters()`` (its weight afterwards) or ``scale_output(x)`` (what it returns)
    on a layer with scale=True moved to ``device``, with ``x``; on the meta device with the
    values kept behind them (``on_meta``). Only where the result lives is judged."""
    cls = m["embeddings"].Embedding
    layer = cls(vocab_size, d_model, std=std, scale=True)

    def call(x: torch.Tensor) -> dict:
        if method == "reset_parameters":
            layer.reset_parameters()
            return {"out": layer.weight.detach()}
        return {"out": cls.scale_output(layer, x)}

    if device == "meta":
        return on_meta(call, x, module=layer)
    return call(x.to(device)) if layer.to(device) is not None else None


def gpt2_on_device(m, config, device):
    """A GPT2 moved to ``device`` (to the meta device with its values kept behind it,
    ``on_meta``), then ``init_weights()`` again: its state_dict (``placed``), every tensor of
    which must still be there. Only where the tensors live is judged."""
    model = _build(m, config)

    def call() -> dict:
        model.init_weights()
        return {"placed": dict(model.state_dict())}

    if device == "meta":
        return on_meta(call, module=model)
    model.to(device)
    return call()


def _gradient(out: torch.Tensor, leaf: torch.Tensor, grad: torch.Tensor) -> torch.Tensor | None:
    """The gradient of sum(out * grad) that reaches ``leaf``."""
    (out * grad.to(out.dtype)).sum().backward()
    return leaf.grad


def expected_dot_std(m, std, d_model, keyword=False):
    """``expected_dot_std(std, d_model)``, or by name (``keyword``): the value if a real
    number (numpy's too), and its type."""
    fn = m["embeddings"].expected_dot_std
    value = fn(std=std, d_model=d_model) if keyword else fn(std, d_model)
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    return {"value": float(value) if number else None, "type": type(value).__name__}


def gpt2_init(m, config, dtype=None, changed=False):
    """A fresh GPT2's state_dict: the draws under test, judged statistically in the grader.
    With ``dtype``, the model is converted (``.to(dtype)``) and ``init_weights()`` runs again,
    as when a model is re-initialised after a conversion: in-place fills keep the dtype, new
    tensors get torch's default one. With ``changed``, every parameter is set to 3 first (as
    training would move them) and ``init_weights()`` runs again: it must set each anew, the
    LayerNorms' 1 and 0 too."""
    model = _build(m, config)
    if changed:
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.fill_(3.0)
    if dtype is not None:
        model = model.to(getattr(torch, dtype))
    if dtype is not None or changed:
        model.init_weights()
    return {"state": _state(model)}


# --- given code, as the learner wrote it (loader.Shipped, given.py) --------------------------
# In a stage process given code is the grader's own copy (given.py), so these probes run the
# learner's classes twice: pinned, as every other probe does, and as shipped, with the given
# code and nn.Module overrides of the learner's own file (``m["shipped"]``). The suites compare
# both with lumen: right when pinned but wrong as shipped means the given code was changed.


def _true_weight(layer: object) -> object:
    """The tensor a layer holds as ``weight`` (a Parameter, a buffer or a plain attribute),
    read from the layer's own dictionaries rather than through its attribute lookup."""
    own = _own_dict(layer)
    for table in (own.get("_parameters") or {}, own.get("_buffers") or {}, own):
        if isinstance(table.get("weight"), torch.Tensor):
            return table["weight"]
    return None


def _true_state(module: object, prefix: str = "") -> dict:
    """Every parameter of ``module`` and its submodules by name, read from their own
    dictionaries (a class's named_parameters or state_dict cannot change it)."""
    own = _own_dict(module)
    state = {f"{prefix}{name}": p.detach().clone()
             for name, p in (own.get("_parameters") or {}).items() if p is not None}
    for name, child in (own.get("_modules") or {}).items():
        if child is not None:
            state.update(_true_state(child, f"{prefix}{name}."))
    return state


@contextmanager
def _recording(cls: type, name: str, after: Callable[[object], object]) -> Iterator[list]:
    """``cls.name`` (a method) wrapped for the length of the block: each call appends
    ``after(self)`` once the learner's method has returned."""
    own = vars(cls).get(name, _NOTHING)
    method = getattr(cls, name)
    calls: list = []

    def recorded(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        calls.append(after(self))
        return result

    type.__setattr__(cls, name, recorded)
    try:
        yield calls
    finally:
        if own is _NOTHING:
            type.__delattr__(cls, name)
        else:
            type.__setattr__(cls, name, own)


_NOTHING = object()


def _constructed(build: Callable[[], object], cls: type, method: str,
                 read: Callable[[object], object]) -> dict:
    """``build()`` with ``cls.method`` recorded: how often the constructor called it, what
    ``read`` saw after its last call, and what ``read`` sees once the constructor is done."""
    with _recording(cls, method, read) as calls:
        built = _attempt(build)
    if isinstance(built, dict) and "error" in built:
        return {"built": built, "times_called": len(calls)}
    return {"built": None, "times_called": len(calls), "recorded": calls[-1] if calls else None,
            "final": read(built)}


def _clone(t: object) -> object:
    return t.detach().clone() if isinstance(t, torch.Tensor) else None


def embedding_as_shipped(m, vocab_size, d_model, std):
    """The learner's Embedding as they wrote it (their __init__, given lines included, with
    their reset_parameters, whatever the stage's scaffolds): the weight it holds once built,
    and the weight as their reset_parameters left it, at its last call during construction."""
    with m["shipped"](("embeddings:Embedding.__init__",)):
        cls = m["embeddings"].Embedding
        return _constructed(lambda: cls(vocab_size, d_model, std=std), cls,
                            "reset_parameters", lambda layer: _clone(_true_weight(layer)))


def gpt2_as_shipped(m, config):
    """The learner's GPT2 as they wrote it: every parameter once built, and as their
    init_weights left it at its last call during construction."""
    with m["shipped"]():
        cls = m["gpt2"].GPT2
        return _constructed(lambda: cls(m["gpt2"].GPT2Config(**config)), cls, "init_weights",
                            _true_state)


#: This stage's probes, by the names its suite calls (the registry: probes/__init__.py).
PROBES = (
    embedding_init, embedding_reset, embedding_scale, expected_dot_std, gpt2_init,
    embedding_as_shipped, gpt2_as_shipped, embedding_on_device, gpt2_on_device,
)
