"""What the probes of several stages share: calling learner code as a learner's caller may,
moving the grader's tensors, and small helpers (loading a state, building a GPT2).

Nothing here is a probe; each stage's probes are in the module named as the stage.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable

import torch
from torch import nn

# The meta-device runner, for the stage modules. Inside the package, so that one name reaches it
# whoever imports the package: the worker (as probes) or the grader's parent (for PROBES' names).
from .meta_device import on_meta  # noqa: F401
from .recorder import _recorded, record_calls


def builtin_bases(obj: object, limit: int = 20) -> list[str]:
    """The built-in classes in the MRO of ``obj``'s type (``IndexError``, ``LookupError``, ...),
    read without running code ``obj`` defines: what ``except IndexError`` matches against."""
    try:
        mro = type.__getattribute__(type(obj), "__mro__")
        out = []
        for cls in mro[:64]:
            name = type.__getattribute__(cls, "__qualname__")
            # the built-in itself, not a class that calls itself one (__module__ = "builtins")
            if type(name) is str and vars(builtins).get(name) is cls:
                out.append(name)
        return out[:limit]
    except Exception:  # noqa: BLE001 - a metaclass can make even this raise
        return []


class ProbeError(Exception):
    """The grader asked for something the probe cannot do (a grader bug, not the learner's)."""


def _attempt(get: Callable[[], object]) -> object:
    """``get()``, or the learner's exception as data (so that the facts still come back)."""
    try:
        return get()
    except Exception as exc:  # noqa: BLE001 - a refusal is a result here
        return refusal(exc)


def refusal(exc: Exception) -> dict:
    """The learner's exception as data (``replies.REFUSAL``): whether it is a stub's, the
    grader reads from the message; ``bases``, the built-in classes it derives from, say
    whether it keeps a promised class (``feedback.is_one_of``)."""
    return {"error": type(exc).__name__, "message": str(exc)[:500], "bases": builtin_bases(exc)}


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


def _pinned_and_shipped(m, run: Callable[[], object]) -> dict:
    """``run`` twice from the same random state: with the given code pinned, then as the
    learner shipped it (``m["shipped"]``), so that where the two differ, only the code does."""
    start = torch.get_rng_state()
    out = {"pinned": _attempt(run)}
    with m["shipped"]():
        torch.set_rng_state(start)
        out["shipped"] = _attempt(run)
    return out


def _on(t: torch.Tensor, device: str) -> torch.Tensor:
    """``t`` on ``device``; on the meta device only its shape and dtype survive."""
    if device == "meta":
        return torch.empty(t.shape, dtype=t.dtype, device="meta")
    return t.to(device)


# --- calling the stubs as a learner's caller may ------------------------------------------


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


# --- models with the grader's state ------------------------------------------------------


def _load(module: nn.Module, state: dict, strict: bool = True) -> dict:
    result = module.load_state_dict(state, strict=strict)
    return {"missing": list(result.missing_keys), "unexpected": list(result.unexpected_keys)}


def _build(m, config: dict, device: str = "cpu") -> nn.Module:
    model = m["gpt2"].GPT2(m["gpt2"].GPT2Config(**config))
    return model.to(device) if device != "cpu" else model


def _own_dict(obj: object) -> dict:
    """An object's own attributes, past any __getattr__ or property its class defines."""
    return object.__getattribute__(obj, "__dict__")
