"""Probes: small, fixed procedures the worker runs on learner code, returning data only.

Each probe takes the loaded modules (``embeddings``, ``params``, ``gpt2``) and plain arguments
chosen by the grader (tensors on the CPU, numbers, a device name), calls the learner's code,
and returns what came out: tensors, numbers, booleans about object identity, and the torch
functions that were called. Probes decide nothing; the hidden suites compare in the parent.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

PROBES: dict[str, Callable] = {}


class ProbeError(Exception):
    """The grader asked for something the probe cannot do (a grader bug, not the learner's)."""


def probe(fn: Callable) -> Callable:
    PROBES[fn.__name__] = fn
    return fn


def run(name: str, modules: dict, args: dict) -> object:
    if name not in PROBES:
        raise ProbeError(f"no probe called {name!r}")
    return PROBES[name](modules, **args)


class CallRecorder(TorchFunctionMode):
    """Records the names of torch functions called (F.embedding, F.one_hot, torch.matmul, ...)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.add(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def _on(t: torch.Tensor, device: str) -> torch.Tensor:
    """``t`` on ``device``; on the meta device only its shape and dtype survive."""
    if device == "meta":
        return torch.empty(t.shape, dtype=t.dtype, device="meta")
    return t.to(device)


def _params(module: nn.Module) -> list[list]:
    return [[name, list(p.shape), type(p) is nn.Parameter] for name, p in module.named_parameters()]


def _set_weight(layer: nn.Module, weight: torch.Tensor) -> None:
    with torch.no_grad():
        layer.weight.copy_(weight)


# --- embedding ------------------------------------------------------------------------------


@probe
def embedding_build(m, vocab_size, d_model, **kwargs):
    layer = m["embeddings"].Embedding(vocab_size, d_model, **kwargs)
    weight = getattr(layer, "weight", None)
    return {
        "has_weight": weight is not None,
        "weight_type": type(weight).__name__,
        "registered": any(p is weight for p in layer.parameters()),
        "parameters": _params(layer),
        "weight": weight if isinstance(weight, torch.Tensor) else None,
        "requires_grad": bool(getattr(weight, "requires_grad", False)),
    }


@probe
def embedding_forward(m, vocab_size, d_model, weight, ids, device="cpu", scale=False, grad=None):
    layer = m["embeddings"].Embedding(vocab_size, d_model, scale=scale)
    _set_weight(layer, weight)
    layer = layer.to(device=device, dtype=weight.dtype) if device != "meta" else layer.to("meta")
    ids = _on(ids, device)
    recorder = CallRecorder()
    with recorder:
        out = layer(ids)
    result = {"out": out, "calls": sorted(recorder.names)}
    if grad is not None and isinstance(out, torch.Tensor):
        if out.requires_grad:  # else: cut off from the weight, reported as no gradient
            # d(sum(out * grad))/d(out) = grad: the same gradient as out.backward(grad), without
            # the given-gradient path's lazy import of sympy (~0.3 s a child)
            (out * grad.to(out.device, out.dtype)).sum().backward()
        result["grad"] = layer.weight.grad
    return result


# --- onehot ---------------------------------------------------------------------------------


@probe
def one_hot(m, ids, num_classes, dtype=None, device="cpu"):
    kwargs = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    recorder = CallRecorder()
    with recorder:
        out = m["embeddings"].one_hot(_on(ids, device), num_classes, **kwargs)
    return {"out": out, "calls": sorted(recorder.names)}


@probe
def embed_via_onehot(m, weight, ids, device="cpu", ids_device=None):
    recorder = CallRecorder()
    with recorder:
        out = m["embeddings"].embed_via_onehot(_on(weight, device), _on(ids, ids_device or device))
    return {"out": out, "calls": sorted(recorder.names)}


# --- neighbours -----------------------------------------------------------------------------


@probe
def cosine_similarity(m, a, b, device="cpu", eps=None):
    kwargs = {} if eps is None else {"eps": eps}
    return {"out": m["embeddings"].cosine_similarity(_on(a, device), _on(b, device), **kwargs)}


def _pair(result: object) -> dict:
    if isinstance(result, tuple | list) and len(result) == 2:
        return {"ids": result[0], "sims": result[1], "kind": "tuple"}
    return {"ids": None, "sims": None, "kind": type(result).__name__}


@probe
def cosine_neighbours(m, E, token, k, device="cpu"):
    if isinstance(token, torch.Tensor):
        token = _on(token, device)
    return _pair(m["embeddings"].cosine_neighbours(_on(E, device), token, k))


@probe
def analogy(m, E, a, b, c, device="cpu", **kwargs):
    return _pair(m["embeddings"].analogy(_on(E, device), a, b, c, **kwargs))


# --- params ---------------------------------------------------------------------------------


def _number(get: Callable) -> object:
    """``get()`` if it gives a plain number; else its exception, or its type, as data."""
    try:
        value = get()
    except Exception as exc:  # noqa: BLE001 - a refusal is a result here
        message = str(exc)[:500]
        return {"error": type(exc).__name__, "message": message,
                "not_implemented": isinstance(exc, NotImplementedError)
                and "not implemented yet" in message}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value if type(value) in (int, float) else float(value)  # np.float64 too
    return {"type": type(value).__name__}


@probe
def count_params(m, fields, dtypes=(), share=False, **shape):
    """The learner's ParamCount: its ``fields``, ``embedding_share`` if ``share``, and
    ``memory_bytes(dtype)`` for each of ``dtypes`` ("fp16", "torch.float16"; "default" calls it
    with no argument). A property or method that raises is reported, not propagated, so an
    unfinished ``memory_bytes`` does not hide a finished ``count_params``."""
    count = m["params"].count_params(**shape)
    out: dict = {"type": type(count).__name__, "fields": {}, "memory": {}}
    for name in fields:
        value = getattr(count, name, None)
        out["fields"][name] = value if type(value) in (int, float, bool) else repr(type(value))
    if share:
        out["embedding_share"] = _number(lambda: count.embedding_share)
    for dtype in dtypes:
        if dtype == "default":
            out["memory"][dtype] = _number(lambda: count.memory_bytes())
            continue
        arg = getattr(torch, dtype[len("torch.") :]) if dtype.startswith("torch.") else dtype
        out["memory"][dtype] = _number(lambda arg=arg: count.memory_bytes(arg))
    return out


# --- tying and init -------------------------------------------------------------------------


def _build(m, config: dict, device: str = "cpu") -> nn.Module:
    model = m["gpt2"].GPT2(m["gpt2"].GPT2Config(**config))
    return model.to(device) if device != "cpu" else model


def _tie_facts(model: nn.Module) -> dict:
    head, table = model.lm_head.weight, model.wte.weight
    return {
        "same_object": head is table,
        "same_storage": head.data_ptr() == table.data_ptr(),
        "head_shape": list(head.shape),
        "same_values": head.shape == table.shape and torch.equal(head.detach(), table.detach()),
        "n_params": sum(p.numel() for p in model.parameters()),
        "head_is_param": type(head) is nn.Parameter,
    }


@probe
def gpt2_build(m, config, ids=None, device="cpu", state=True):
    """Build a GPT2, report the tie, its state_dict, and its logits on ``ids``."""
    model = _build(m, config, device)
    out = _tie_facts(model)
    if state:
        out["state"] = {k: v for k, v in model.state_dict().items()}
    if ids is not None:
        model.eval()
        with torch.no_grad():
            out["logits"] = model(ids.to(device))
    return out


@probe
def gpt2_after_to(m, config, dtype="float64", device="cpu"):
    """The tie before and after ``model.to(device, dtype)``."""
    model = _build(m, config)
    before = _tie_facts(model)
    out = _tie_facts(model.to(device=device, dtype=getattr(torch, dtype)))
    out["before"] = before
    return out


@probe
def gpt2_after_load(m, config, state):
    """Load ``state`` into a fresh model: is the tie still there, and which values won?"""
    model = _build(m, config)
    result = model.load_state_dict(state, strict=False)
    out = _tie_facts(model)
    out["missing"] = list(result.missing_keys)
    out["unexpected"] = list(result.unexpected_keys)
    out["wte"] = model.wte.weight
    out["lm_head"] = model.lm_head.weight
    return out


@probe
def gpt2_tie_direction(m, config, table, head):
    """Build untied, fill wte with ``table`` and lm_head with ``head``, then tie."""
    model = _build(m, {**config, "tie_weights": False})
    tied_before = model.lm_head.weight.data_ptr() == model.wte.weight.data_ptr()  # untied: False
    _set_weight(model.wte, table)
    _set_weight(model.lm_head, head)
    model.config.tie_weights = True
    model.tie_weights()
    out = _tie_facts(model)
    out["tied_before"] = tied_before
    out["shared"] = model.lm_head.weight
    return out


@probe
def embedding_init(m, vocab_size, d_model, **kwargs):
    layer = m["embeddings"].Embedding(vocab_size, d_model, **kwargs)
    return {"weight": layer.weight}


@probe
def embedding_reset(m, vocab_size, d_model, std):
    """Call the learner's reset_parameters on a layer whose weight is all 7s."""
    layer = m["embeddings"].Embedding(vocab_size, d_model, std=std)
    with torch.no_grad():
        layer.weight.fill_(7.0)
    weight = layer.weight
    layer.reset_parameters()
    return {"weight": layer.weight, "same_object": layer.weight is weight}


@probe
def embedding_scale(m, d_model, scale, x, vocab_size=10):
    """``scale_output(x)`` on a layer built without ``reset_parameters``: graded on its own."""
    cls = m["embeddings"].Embedding
    bare = type(cls.__name__, (cls,), {"reset_parameters": lambda self: None})
    layer = bare(vocab_size, d_model, scale=scale)
    return {"out": layer.scale_output(x)}


@probe
def expected_dot_std(m, std, d_model):
    value = m["embeddings"].expected_dot_std(std, d_model)
    number = isinstance(value, int | float) and not isinstance(value, bool)  # np.float64 too
    return {"value": float(value) if number else None, "type": type(value).__name__}
