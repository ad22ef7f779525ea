"""Probes: small, fixed procedures the worker runs on learner code, returning data only.

Each probe takes the loaded modules (``embeddings``, ``params``, ``gpt2``) and plain arguments
chosen by the grader (tensors on the CPU, numbers, a device name), calls the learner's code,
and returns what came out. Probes decide nothing; the hidden suites compare in the parent.

Learner code runs in this process and can rewrite anything here, so a reply is only as good as
what it would cost to forge. Every state a reply is compared against is the grader's: it
chooses the weights, sends them, and a probe puts them into the learner's model
(``load_state_dict``, or a copy into an Embedding's weight) before it runs; the suites
compute the expected values from that same state with lumen, in the grader's process.
Replies carry the VALUES the learner's code computed (rows looked up, logits, gradients), and
a check earns points only where producing the right value is itself the required behaviour.
Structural facts (``same_object``, a parameter count, the recorded calls, an input changed in
place) are observed here, so learner code can forge them: they choose the message, and the
checks built on them carry no points (README, "The threat model").
"""

from __future__ import annotations

import numbers
import operator
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

if __package__ == "probes":  # the worker imports its folder's modules by file name
    from meta_device import on_meta
else:  # the grader's parent imports this as autograder.sandboxed.probes (for PROBES' names)
    from ..meta_device import on_meta

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

    Learner code in this process could switch either watch off or fill the record with
    anything, so the record decides nothing: the bans are judged from the submitted source in
    the grader (lumen/rules.py, autograder/suites/bans.py), and the record only adds to the
    message of a test that the source already fails.
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
        return {"error": type(exc).__name__, "message": message}  # a stub's? the grader reads it


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


# --- calling the stubs of stages embedding, onehot and neighbours as a learner's caller may ---


def _call(fn: Callable, arguments: dict[str, object], positional: int | None = None) -> object:
    """``fn`` given ``arguments`` (in the stub's order): the first ``positional`` of them
    positionally and the rest by name; ``None``: all positionally. The suites call each stub
    both ways, so a renamed or reordered parameter shows."""
    items = list(arguments.items())
    split = len(items) if positional is None else positional
    return fn(*(value for _, value in items[:split]), **dict(items[split:]))


def _arranged(t: torch.Tensor, layout: str | None) -> torch.Tensor:
    """``t``'s values in a tensor laid out as ``layout`` says: None, as it is; "strided",
    every other element of a larger buffer; "transposed", a (..., m, n) block stored column
    by column. The last two are not contiguous, so ``.view(-1)`` fails on them."""
    if layout is None:
        return t
    if layout == "strided":
        buffer = torch.zeros(*t.shape, 2, dtype=t.dtype, device=t.device)
        view = buffer[..., 1]
    elif layout == "transposed" and t.dim() >= 2:
        view = torch.zeros(*t.shape[:-2], t.shape[-1], t.shape[-2], dtype=t.dtype,
                           device=t.device).mT
    else:
        raise ProbeError(f"no layout {layout!r} for a tensor of shape {tuple(t.shape)}")
    return view.copy_(t)


def _watched(call: Callable[[], object], watch: bool = False, **inputs: torch.Tensor) -> dict:
    """``{"out": call()}``; with ``watch``, what it ran (``record_calls``); and each of
    ``inputs`` as it is afterwards, with the names of those an in-place operation touched (its
    version counter moved): a stub must leave what it is given as it was."""
    versions = {name: t._version for name, t in inputs.items()}
    if watch:
        with record_calls() as record:
            out = call()
        result = {"out": out, **_recorded(record)}
    else:
        result = {"out": call()}
    result["inputs"] = dict(inputs)
    result["in_place"] = sorted(n for n, t in inputs.items() if t._version != versions[n])
    return result


# --- embedding ------------------------------------------------------------------------------


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
def embedding_parameter(m, vocab_size, d_model, weight, ids, grad, lr, positional=None):
    """Whether ``weight`` is the layer's registered, trainable (V, d) Parameter, shown by
    values: ``weight`` is loaded through load_state_dict({"weight": ...}), rows are looked up
    in the Parameter registered as "weight", a backward puts their gradient in its .grad and
    an SGD step over layer.parameters() moves it. The learner's forward is not used here (the
    lookup tests judge it), so this grades __init__ alone. ``positional``: as ``_call``
    (0: ``Embedding(vocab_size=V, d_model=d)``)."""
    layer = _call(m["embeddings"].Embedding, {"vocab_size": vocab_size, "d_model": d_model},
                  positional)
    out = _weight_facts(layer)
    out["load"] = _attempt(lambda: _load(layer, {"weight": weight}))
    if not isinstance(out["load"], dict) or "error" not in out["load"]:
        out["trained"] = _attempt(lambda: _train_registered(layer, ids, grad, lr))
    return out


@probe
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


@probe
def embedding_check_ids(m, ids, vocab_size, positional=None):
    """``check_ids(ids, vocab_size)`` on its own, the arguments passed as ``_call`` says: what
    it returned (None, for valid ids), by its type's name."""
    returned = _call(m["embeddings"].check_ids, {"ids": ids, "vocab_size": vocab_size},
                     positional)
    return {"returned": type(returned).__name__}


# --- onehot ---------------------------------------------------------------------------------


@probe
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


@probe
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


# --- neighbours -----------------------------------------------------------------------------


@probe
def cosine_similarity(m, a, b, device="cpu", eps=None, positional=2):
    """``cosine_similarity(a, b[, eps])``, the arguments passed as ``_call`` says (default:
    ``eps`` by name), and ``a`` and ``b`` afterwards (``_watched``)."""
    a, b = _on(a, device), _on(b, device)
    arguments = {"a": a, "b": b} if eps is None else {"a": a, "b": b, "eps": eps}
    return _watched(lambda: _call(m["embeddings"].cosine_similarity, arguments, positional),
                    a=a, b=b)


def _pair(result: object) -> dict:
    if isinstance(result, tuple | list) and len(result) == 2:
        return {"ids": result[0], "sims": result[1], "kind": "tuple"}
    return {"ids": None, "sims": None, "kind": type(result).__name__}


def _searched(call: Callable[[], object], **inputs: torch.Tensor) -> dict:
    """``_pair`` of what ``call()`` returns, with ``inputs`` afterwards (``_watched``)."""
    result = _watched(call, **inputs)
    return {**_pair(result.pop("out")), **result}


@probe
def cosine_neighbours(m, E, token, k, device="cpu", positional=None):
    """``cosine_neighbours(E, token, k)``, the arguments passed as ``_call`` says; ``token``
    an int, a 0-d integer tensor or a query vector (moved to ``device`` with E)."""
    E = _on(E, device)
    if isinstance(token, torch.Tensor):
        token = _on(token, device)
    arguments = {"E": E, "token": token, "k": k}
    inputs = {"E": E, "token": token} if isinstance(token, torch.Tensor) else {"E": E}
    return _searched(lambda: _call(m["embeddings"].cosine_neighbours, arguments, positional),
                     **inputs)


@probe
def analogy(m, E, a, b, c, device="cpu", positional=4, **kwargs):
    """``analogy(E, a, b, c, **kwargs)`` (``k``, ``exclude_inputs``, in the stub's order), the
    arguments passed as ``_call`` says (default: ``kwargs`` by name)."""
    if set(kwargs) - {"k", "exclude_inputs"}:
        raise ProbeError(f"analogy takes k and exclude_inputs, not {sorted(kwargs)}")
    E = _on(E, device)
    order = [name for name in ("k", "exclude_inputs") if name in kwargs]
    arguments = {"E": E, "a": a, "b": b, "c": c, **{name: kwargs[name] for name in order}}
    return _searched(lambda: _call(m["embeddings"].analogy, arguments, positional), E=E)


# --- params ---------------------------------------------------------------------------------


def _refusal(exc: Exception) -> dict:
    return {"error": type(exc).__name__, "message": str(exc)[:500]}  # a stub's? the grader reads


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
    """``get()`` if it gives a real number (numpy's too, not a bool), as a float or int; else
    its exception, or its type, as data."""
    try:
        value = get()
    except Exception as exc:  # noqa: BLE001 - a refusal is a result here
        return _refusal(exc)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return value if type(value) in (int, float) else float(value)  # np.float32 too
    return {"type": type(value).__name__}


def _whole(get: Callable) -> dict:
    """``get()`` as ``_count`` reports it, or its exception as data."""
    try:
        value = get()
    except Exception as exc:  # noqa: BLE001 - a refusal is a result here
        return _refusal(exc)
    return _count(value)


#: count_params's parameters in the stub's order, for a positional call.
SIGNATURE = ("vocab_size", "d_model", "n_layers", "n_ctx", "tied")


@probe
def count_params(m, fields, positional=False, **shape):
    """The learner's ParamCount for ``shape`` (the five arguments by name), called by keyword
    or, with ``positional``, as ``count_params(V, d, N, n_ctx, tied)``: its type, and each of
    ``fields`` as ``_count`` reports it."""
    if positional:
        count = m["params"].count_params(*(shape[name] for name in SIGNATURE))
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


@probe
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
        "transposed": head.shape == table.mT.shape and torch.equal(head.detach(),
                                                                   table.detach().mT),
        "n_params": sum(p.numel() for p in model.parameters()),
        "head_is_param": type(head) is nn.Parameter,
    }


def _state(model: nn.Module) -> dict:
    """The state_dict as copies: the draws the init stage judges statistically (they are what
    init_weights is for), never a state an expected value is computed from."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _trainable(model: nn.Module) -> None:
    """Every parameter requires grad (the stand-in Embedding of another stage's grading leaves
    its weight without), so that a backward reaches the shared matrix."""
    for p in model.parameters():
        p.requires_grad_(True)


@probe
def gpt2_build(m, config, ids):
    """Build a GPT2; the tie and its logits on ``ids``, as built: the initial loss is judged
    on them."""
    model = _build(m, config)
    out = _tie_facts(model)
    model.eval()
    with torch.no_grad():
        out["logits"] = _attempt(lambda: model(ids))
    return out


@probe
def gpt2_perturbed(m, config, state, ids, delta, grad=None, dtype=None, device="cpu"):
    """Build a GPT2 (then ``.to(device, dtype)``, if asked), load the grader's ``state``
    (``load_state_dict(state, strict=False)``), add ``delta`` to wte.weight in place, and return
    the logits on ``ids``.

    Tied, lm_head.weight IS wte.weight, so the logits are h @ (E + delta)^T with E the loaded
    wte.weight; a copy, or a tie that .to() or load_state_dict broke, keeps another head and
    gives other logits. With ``grad``, also the gradients of sum(logits * grad): wte.weight.grad
    holds both uses of E only when the two layers share one Parameter.
    """
    model = _build(m, config)
    out = {"before": _tie_facts(model)}
    if dtype is not None or device != "cpu":
        model = model.to(device=device, dtype=getattr(torch, dtype) if dtype else None)
    out["load"] = _attempt(lambda: _load(model, state, strict=False))
    out.update(_tie_facts(model))
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
def gpt2_sgd_step(m, config, state, ids, grad, ids_after, lr, weight_decay):
    """Load the grader's ``state``, take one SGD step (with weight decay) over
    model.parameters() on sum(logits * grad), then the logits on ``ids_after``.
    parameters() lists a tied matrix once; a head that is its own Parameter (a copy, or .data
    shared by two Parameters) gets an update of its own, or the shared numbers get decayed
    twice, and the logits differ."""
    model = _build(m, config)
    out = _tie_facts(model)
    out["load"] = _attempt(lambda: _load(model, state, strict=False))
    model.eval()
    _trainable(model)
    optimiser = SGD(model.parameters(), lr=lr, weight_decay=weight_decay)
    (model(ids) * grad).sum().backward()
    optimiser.step()
    with torch.no_grad():
        out["logits"] = model(ids_after)
    return out


@probe
def gpt2_tie_direction(m, config, state, ids):
    """Build untied, load the grader's ``state`` (whose wte.weight and lm_head.weight differ),
    then tie; the logits on ``ids`` afterwards."""
    model = _build(m, {**config, "tie_weights": False})
    tied_before = model.lm_head.weight.data_ptr() == model.wte.weight.data_ptr()  # untied: False
    out = {"load": _attempt(lambda: _load(model, state, strict=False))}
    model.config.tie_weights = True
    model.tie_weights()
    out.update(_tie_facts(model))
    out["tied_before"] = tied_before
    model.eval()
    with torch.no_grad():
        out["logits"] = _attempt(lambda: model(ids))
    return out


@probe
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


@probe
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


@probe
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


def _gradient(out: torch.Tensor, leaf: torch.Tensor, grad: torch.Tensor) -> torch.Tensor | None:
    """The gradient of sum(out * grad) that reaches ``leaf``."""
    (out * grad.to(out.dtype)).sum().backward()
    return leaf.grad


@probe
def expected_dot_std(m, std, d_model, keyword=False):
    """``expected_dot_std(std, d_model)``, or by name (``keyword``): the value if a real
    number (numpy's too), and its type."""
    fn = m["embeddings"].expected_dot_std
    value = fn(std=std, d_model=d_model) if keyword else fn(std, d_model)
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    return {"value": float(value) if number else None, "type": type(value).__name__}


@probe
def gpt2_init(m, config, dtype=None):
    """A fresh GPT2's state_dict: the draws under test, judged statistically in the grader.
    With ``dtype``, the model is converted (``.to(dtype)``) and ``init_weights()`` runs again,
    as when a model is re-initialised after a conversion: in-place fills keep the dtype, new
    tensors get torch's default one."""
    model = _build(m, config)
    if dtype is not None:
        model = model.to(getattr(torch, dtype))
        model.init_weights()
    return {"state": _state(model)}


# --- given code, as the learner wrote it (worker.Shipped, given.py) --------------------------
# In a stage process given code is the grader's own copy (given.py), so these probes run the
# learner's classes twice: pinned, as every other probe does, and as shipped, with the given
# code and nn.Module overrides of the learner's own file (``m["shipped"]``). The suites compare
# both with lumen: right when pinned but wrong as shipped means the given code was changed.


def _own_dict(obj: object) -> dict:
    """An object's own attributes, past any __getattr__ or property its class defines."""
    return object.__getattribute__(obj, "__dict__")


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


@probe
def embedding_as_shipped(m, vocab_size, d_model, std):
    """The learner's Embedding as they wrote it (their __init__, given lines included, with
    their reset_parameters, whatever the stage's scaffolds): the weight it holds once built,
    and the weight as their reset_parameters left it, at its last call during construction."""
    with m["shipped"](("embeddings:Embedding.__init__",)):
        cls = m["embeddings"].Embedding
        return _constructed(lambda: cls(vocab_size, d_model, std=std), cls,
                            "reset_parameters", lambda layer: _clone(_true_weight(layer)))


@probe
def gpt2_as_shipped(m, config):
    """The learner's GPT2 as they wrote it: every parameter once built, and as their
    init_weights left it at its last call during construction."""
    with m["shipped"]():
        cls = m["gpt2"].GPT2
        return _constructed(lambda: cls(m["gpt2"].GPT2Config(**config)), cls, "init_weights",
                            _true_state)


def _perturbed_logits(m, config, state, ids, delta) -> dict:
    """Build, convert with .to(torch.float64), load ``state`` (strict=False), add ``delta`` to
    wte.weight in place: the logits."""
    model = m["gpt2"].GPT2(m["gpt2"].GPT2Config(**config)).to(torch.float64)
    model.load_state_dict(state, strict=False)
    model.eval()
    with torch.no_grad():
        model.wte.weight.add_(delta.to(torch.float64))
        return model(ids).detach()


@probe
def gpt2_tie_as_shipped(m, config, state, ids, delta):
    """The logits after ``delta`` is added to wte.weight in place, of a GPT2 converted to
    float64 holding ``state``: pinned (the given code the grader's) and as the learner wrote
    it, from the same random state (so that where the two differ, only the code does)."""
    def run() -> object:  # on copies: a run that changes its inputs leaves the next its own
        return _perturbed_logits(m, config, _copies(state), ids.clone(), delta.clone())

    start = torch.get_rng_state()
    out = {"pinned": _attempt(run)}
    with m["shipped"]():
        torch.set_rng_state(start)
        out["shipped"] = _attempt(run)
    return out


def _copies(state: dict) -> dict:
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in state.items()}


@probe
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

    start = torch.get_rng_state()
    out = {"pinned": _attempt(run)}
    with m["shipped"]():
        torch.set_rng_state(start)
        out["shipped"] = _attempt(run)
    return out
