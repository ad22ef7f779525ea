"""Probes: small, fixed procedures the worker runs on learner code, returning data only.

Each probe takes the loaded modules (``embeddings``, ``params``, ``gpt2``) and plain arguments
chosen by the grader (tensors on the CPU, numbers, a device name), calls the learner's code,
and returns what came out. Probes decide nothing; the hidden suites compare in the parent.

Learner code runs in this process and can rewrite anything here, so a reply is only as good as
what it would cost to forge. Replies therefore carry VALUES computed from the grader's fresh
inputs (rows looked up, logits after an in-place change, weights after an optimiser step),
which only a correct implementation produces, and the suites earn points on those alone.
Structural facts (``same_object``, a parameter count, the recorded calls) come along only to
choose the message that explains a wrong value.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

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


# --- the call recorder ------------------------------------------------------------------------


@dataclass
class Record:
    """What ran while ``record_calls`` was on: torch function and ATen operator names."""

    names: set[str] = field(default_factory=set)
    problem: str | None = None  # why the all-threads watch could not run, if it could not


class _FunctionNames(TorchFunctionMode):
    """This thread's torch functions by their Python names (F.one_hot -> "one_hot")."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.add(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Kineto prints a line to fd 2 when it starts and stops: keep it out of the learner's
    captured output."""
    sys.stderr.flush()
    try:
        saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    except OSError:
        yield
        return
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _profiler_config():
    """torch's profiler on the CPU, every thread: it sees each ATen operator at the dispatcher
    (aten::embedding, aten::one_hot), whether it came from F.embedding, torch.ops, inside
    torch._C.DisableTorchFunction() or from a thread the learner started."""
    from torch._C._profiler import (
        ProfilerActivity,
        ProfilerConfig,
        ProfilerState,
        _ExperimentalConfig,
    )

    config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False,
                            _ExperimentalConfig(profile_all_threads=True))
    return config, {ProfilerActivity.CPU}


@contextmanager
def record_calls() -> Iterator[Record]:
    """Record the torch functions (this thread) and ATen operators (every thread) that run.

    Learner code in this process could switch either watch off; that is why the grader also
    reads the submitted source (lumen/rules.py) and why a clean record earns nothing by itself:
    it only names a banned built-in that the source check could not see.
    """
    from torch.autograd import _disable_profiler, _enable_profiler, _prepare_profiler

    record = Record()
    watching = False
    try:
        config, activities = _profiler_config()
        with _quiet_stderr():
            _prepare_profiler(config, activities)
            _enable_profiler(config, activities)
        watching = True
    except Exception as exc:  # noqa: BLE001 - e.g. a profiler already on: say so, go on
        record.problem = f"{type(exc).__name__}: {exc}"[:300]
    try:
        with _FunctionNames(record.names):
            yield record
    finally:
        if watching:
            try:
                with _quiet_stderr():
                    events = _disable_profiler().events()
                record.names |= {event.name() for event in events}
            except Exception as exc:  # noqa: BLE001 - reported, never raised into the probe
                record.problem = f"{type(exc).__name__}: {exc}"[:300]


def _recorded(record: Record) -> dict:
    return {"calls": sorted(record.names), "watch_problem": record.problem}


def _attempt(get: Callable[[], object]) -> object:
    """``get()``, or the learner's exception as data (so that the facts still come back)."""
    try:
        return get()
    except Exception as exc:  # noqa: BLE001 - a refusal is a result here
        message = str(exc)[:500]
        return {"error": type(exc).__name__, "message": message,
                "not_implemented": isinstance(exc, NotImplementedError)
                and "not implemented yet" in message}


class SGD:
    """Plain SGD over a list of parameters fixed when it is made, as torch.optim.SGD steps
    (p -= lr * (p.grad + weight_decay * p), each listed parameter once per step), written out
    because torch.optim imports torch._dynamo, which the sandbox does not load."""

    def __init__(self, params, lr: float, weight_decay: float = 0.0) -> None:
        self.params, self.lr, self.weight_decay = list(params), lr, weight_decay

    @torch.no_grad()
    def step(self) -> None:
        for p in self.params:
            if p.grad is not None:
                p.add_(p.grad + self.weight_decay * p, alpha=-self.lr)


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


def _load(module: nn.Module, state: dict, strict: bool = True) -> dict:
    result = module.load_state_dict(state, strict=strict)
    return {"missing": list(result.missing_keys), "unexpected": list(result.unexpected_keys)}


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


@probe
def embedding_parameter(m, vocab_size, d_model, weight, ids, grad, lr):
    """Whether ``weight`` is the layer's registered, trainable (V, d) Parameter, shown by
    values: ``weight`` is loaded through load_state_dict({"weight": ...}), rows are looked up
    in the Parameter registered as "weight", a backward puts their gradient in its .grad and
    an SGD step over layer.parameters() moves it. The learner's forward is not used here (the
    lookup tests judge it), so this grades __init__ alone."""
    layer = m["embeddings"].Embedding(vocab_size, d_model)
    out = _weight_facts(layer)
    out["load"] = _attempt(lambda: _load(layer, {"weight": weight}))
    if not isinstance(out["load"], dict) or "error" not in out["load"]:
        out["trained"] = _attempt(lambda: _train_registered(layer, ids, grad, lr))
    return out


@probe
def embedding_forward(m, vocab_size, d_model, weight, ids, device="cpu", scale=False, grad=None,
                      watch=False):
    """The learner's forward on ``ids`` with ``weight`` copied in; its gradient if ``grad``;
    with ``watch``, the torch functions and ATen operators it ran (``record_calls``)."""
    layer = m["embeddings"].Embedding(vocab_size, d_model, scale=scale)
    _set_weight(layer, weight)
    layer = layer.to(device=device, dtype=weight.dtype) if device != "meta" else layer.to("meta")
    ids = _on(ids, device)
    if watch:
        with record_calls() as record:
            out = layer(ids)
        result = {"out": out, **_recorded(record)}
    else:
        result = {"out": layer(ids)}
        out = result["out"]
    if grad is not None and isinstance(out, torch.Tensor):
        if out.requires_grad:  # else: cut off from the weight, reported as no gradient
            # d(sum(out * grad))/d(out) = grad: the same gradient as out.backward(grad), without
            # the given-gradient path's lazy import of sympy (~0.3 s a child)
            (out * grad.to(out.device, out.dtype)).sum().backward()
        result["grad"] = layer.weight.grad
    return result


# --- onehot ---------------------------------------------------------------------------------


def _watched(call: Callable[[], object], watch: bool) -> dict:
    """``{"out": call()}``, with what it ran if ``watch``."""
    if not watch:
        return {"out": call()}
    with record_calls() as record:
        out = call()
    return {"out": out, **_recorded(record)}


@probe
def one_hot(m, ids, num_classes, dtype=None, device="cpu", watch=False):
    kwargs = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    return _watched(lambda: m["embeddings"].one_hot(_on(ids, device), num_classes, **kwargs),
                    watch)


@probe
def embed_via_onehot(m, weight, ids, device="cpu", ids_device=None, watch=False):
    return _watched(lambda: m["embeddings"].embed_via_onehot(
        _on(weight, device), _on(ids, ids_device or device)), watch)


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
    """What the model says about its tie: only ever used to explain wrong values."""
    head, table = model.lm_head.weight, model.wte.weight
    return {
        "same_object": head is table,
        "same_storage": head.data_ptr() == table.data_ptr(),
        "head_shape": list(head.shape),
        "same_values": head.shape == table.shape and torch.equal(head.detach(), table.detach()),
        "n_params": sum(p.numel() for p in model.parameters()),
        "head_is_param": type(head) is nn.Parameter,
    }


def _snapshot(model: nn.Module) -> dict:
    """The state_dict as copies: the probe changes the model afterwards."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _trainable(model: nn.Module) -> None:
    """Every parameter requires grad (the stand-in Embedding of another stage's grading leaves
    its weight without), so that a backward reaches the shared matrix."""
    for p in model.parameters():
        p.requires_grad_(True)


def _unscale(model: nn.Module) -> None:
    """Each embedding's scale_output returns its rows as they are (scale=False's answer), so
    that a model's logits follow from its state_dict whatever scale_output does: the init
    stage grades scale_output on its own."""
    for module in model.modules():
        if hasattr(type(module), "scale_output"):
            object.__setattr__(module, "scale_output", _identity)


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


@probe
def gpt2_build(m, config, ids=None, device="cpu", state=True, unscaled=False):
    """Build a GPT2, report the tie, its state_dict, and its logits on ``ids``."""
    model = _build(m, config, device)
    out = _tie_facts(model)
    if state:
        out["state"] = {k: v for k, v in model.state_dict().items()}
    if ids is not None:
        if unscaled:
            _unscale(model)
        model.eval()
        with torch.no_grad():
            out["logits"] = model(ids.to(device))
    return out


@probe
def gpt2_perturbed(m, config, ids, delta, grad=None, dtype=None, device="cpu", state=None):
    """Build a GPT2 (then ``.to(device, dtype)`` and ``load_state_dict(state)``, if asked), add
    ``delta`` to wte.weight in place, and return the logits on ``ids`` with the state from
    before the change.

    Tied, lm_head.weight IS wte.weight, so the logits are h @ (E + delta)^T; a copy, or a tie
    that .to() or load_state_dict broke, keeps the old head and gives other logits. With
    ``grad``, also the gradients of sum(logits * grad): wte.weight.grad holds both uses of E
    only when the two layers share one Parameter.
    """
    model = _build(m, config)
    out = {"before": _tie_facts(model)}
    if dtype is not None or device != "cpu":
        model = model.to(device=device, dtype=getattr(torch, dtype) if dtype else None)
    if state is not None:
        out["load"] = _attempt(lambda: _load(model, state, strict=False))
    out.update(_tie_facts(model))
    out["state"] = _snapshot(model)
    model.eval()
    _trainable(model)
    table = model.wte.weight
    with torch.no_grad():
        table.add_(delta.to(table.device, table.dtype))
    logits = _attempt(lambda: model(ids.to(table.device)))
    out["logits"] = logits.detach() if isinstance(logits, torch.Tensor) else logits
    if grad is not None and isinstance(logits, torch.Tensor):
        (logits * grad.to(logits.device, logits.dtype)).sum().backward()
        out["grads"] = {"wte.weight": model.wte.weight.grad,
                        "lm_head.weight": model.lm_head.weight.grad}
    return out


@probe
def gpt2_sgd_step(m, config, ids, grad, ids_after, lr, weight_decay):
    """One SGD step (with weight decay) over model.parameters() on sum(logits * grad), then
    the logits on ``ids_after``. parameters() lists a tied matrix once; a head that is its own
    Parameter (a copy, or .data shared by two Parameters) gets an update of its own, or the
    shared numbers get decayed twice, and the logits differ."""
    model = _build(m, config)
    out = _tie_facts(model)
    out["state"] = _snapshot(model)
    model.eval()
    _trainable(model)
    optimiser = SGD(model.parameters(), lr=lr, weight_decay=weight_decay)
    (model(ids) * grad).sum().backward()
    optimiser.step()
    with torch.no_grad():
        out["logits"] = model(ids_after)
    return out


@probe
def gpt2_tie_direction(m, config, table, head, ids):
    """Build untied, fill wte with ``table`` and lm_head with ``head``, then tie; the logits on
    ``ids`` afterwards, and the state they come from."""
    model = _build(m, {**config, "tie_weights": False})
    tied_before = model.lm_head.weight.data_ptr() == model.wte.weight.data_ptr()  # untied: False
    _set_weight(model.wte, table)
    _set_weight(model.lm_head, head)
    model.config.tie_weights = True
    model.tie_weights()
    out = _tie_facts(model)
    out["tied_before"] = tied_before
    out["state"] = _snapshot(model)
    model.eval()
    with torch.no_grad():
        out["logits"] = _attempt(lambda: model(ids))
    return out


def _sgd_step(layer: nn.Module, grad: torch.Tensor, lr: float) -> torch.Tensor:
    """The layer's weight after one SGD step over layer.parameters() on sum(weight * grad)."""
    layer.weight.requires_grad_(True)  # another stage's stand-in __init__ leaves it off
    optimiser = SGD(layer.parameters(), lr=lr)
    (layer.weight * grad).sum().backward()
    optimiser.step()
    return layer.weight.detach().clone()


@probe
def embedding_init(m, vocab_size, d_model, grad, lr, **kwargs):
    """A fresh Embedding's weight, and the same weight after one SGD step: the step shows that
    the numbers returned are the Parameter the layer trains."""
    layer = m["embeddings"].Embedding(vocab_size, d_model, **kwargs)
    out = {"weight": layer.weight.detach().clone()}
    out["after"] = _attempt(lambda: _sgd_step(layer, grad, lr))
    return out


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


@probe
def embedding_reset(m, vocab_size, d_model, std, ids, grad, lr):
    """reset_parameters on a layer whose weight is all 7s, with an SGD optimiser built on
    layer.parameters() BEFORE the reset: the rows forward returns afterwards, and the same rows
    after the optimiser's step. Refilled in place, the optimiser moves the new rows; a new
    Parameter is out of its reach."""
    layer = _unscaled(m["embeddings"].Embedding)(vocab_size, d_model, std=std)
    layer.weight.requires_grad_(True)  # another stage's stand-in __init__ leaves it off
    with torch.no_grad():
        layer.weight.fill_(7.0)
    weight = layer.weight
    optimiser = SGD(layer.parameters(), lr=lr)
    layer.reset_parameters()
    rows = layer(ids)
    return {"same_object": layer.weight is weight, "rows": rows.detach().clone(),
            "after": _attempt(lambda: _step_rows(layer, optimiser, ids, rows, grad))}


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
