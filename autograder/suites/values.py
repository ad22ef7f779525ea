"""What the hidden suites compute in the grader: the states they send, the values they expect.

A probe's reply comes from the learner's process, where learner code could have rewritten it.
So nothing a reply holds goes into an expected value: the grader draws every state it compares
against (``grader_state``, from the suite's seeded generator), a probe loads it into the
learner's model, and the expected logits, gradients and weights are computed here, by PyTorch
and by lumen's GPT-2 holding that same state. A structural fact a reply reports (the same
Parameter, a count, a recorded call) only picks the message.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from lumen import gpt2 as ref


@contextmanager
def one_thread() -> Iterator[None]:
    """A model this small runs fastest on one thread (50x on a busy CPU)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def fresh_lumen(config: dict, seed: int) -> ref.GPT2:
    """lumen's GPT2 of ``config`` as initialised from ``seed``, without disturbing the grader's
    own random state."""
    with torch.random.fork_rng(devices=[]):  # the CPU generator only: never start CUDA here
        torch.default_generator.manual_seed(seed)  # (torch.manual_seed would queue CUDA's)
        return ref.GPT2(ref.GPT2Config(**config)).eval()


def grader_state(config: dict, gen: torch.Generator, **weights: torch.Tensor) -> dict:
    """A state_dict for a GPT2 of ``config``, every tensor drawn here from ``gen``: weights
    N(0, 0.02^2), biases N(0, 0.02^2), LayerNorm scales 1 + N(0, 0.1^2) (so that no layer is
    the identity, and none is zero), with ``weights`` (``wte``, ``lm_head``: the matrices of
    those layers) put in their place. Tied (``config["tie_weights"]``, the default), the
    checkpoint stores the shared matrix once, as wte.weight: loading it must load the head."""
    tied = config.get("tie_weights", True)
    state = {}
    for name, like in fresh_lumen(config, 0).state_dict().items():  # the names and shapes
        if tied and name == "lm_head.weight":
            continue
        noise = torch.randn(like.shape, generator=gen)
        scale = "ln_" in name and name.endswith(".weight")
        state[name] = 1.0 + 0.1 * noise if scale else 0.02 * noise
    for layer, tensor in weights.items():
        state[f"{layer}.weight"] = tensor
    return state


def lumen_gpt2(config: dict, state: dict, dtype: torch.dtype | None = None,
               **weights: torch.Tensor) -> ref.GPT2:
    """lumen's GPT2 of ``config`` holding the grader's ``state`` (``grader_state``), with
    ``weights`` (``wte``, ``lm_head``) put in its place. Tied (``config["tie_weights"]``, the
    default), lm_head IS wte, so an ``lm_head`` entry is ignored and the head follows wte."""
    tied = config.get("tie_weights", True)
    model = fresh_lumen(config, 0)  # its values are all replaced below
    if dtype is not None:
        model = model.to(dtype)
    wanted = {**state, **{f"{layer}.weight": t for layer, t in weights.items()}}
    if tied:
        wanted.pop("lm_head.weight", None)
    result = model.load_state_dict(wanted, strict=False)
    if result.unexpected_keys or set(result.missing_keys) - ({"lm_head.weight"} if tied else set()):
        raise RuntimeError(f"the grader's state does not fit lumen's GPT2: {result}")  # a bug here
    return model.eval()


def logits(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """``model(ids)`` without a graph."""
    with one_thread(), torch.no_grad():
        return model(ids)


def logits_and_grads(model: ref.GPT2, ids: torch.Tensor,
                     grad: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The logits on ``ids`` and the gradients of sum(logits * grad) for wte and lm_head."""
    with one_thread():
        out = model(ids)
        (out * grad).sum().backward()
    grads = {name: getattr(model, name.split(".")[0]).weight.grad
             for name in ("wte.weight", "lm_head.weight")}
    return out.detach(), grads


def logits_after_sgd(model: ref.GPT2, ids: torch.Tensor, grad: torch.Tensor,
                     ids_after: torch.Tensor, lr: float, weight_decay: float) -> torch.Tensor:
    """One SGD step over model.parameters() on sum(model(ids) * grad), then the logits."""
    params = list(model.parameters())
    with one_thread():
        (model(ids) * grad).sum().backward()
        with torch.no_grad():  # torch.optim.SGD's step, as the probe takes it
            for p in params:
                p.add_(p.grad + weight_decay * p, alpha=-lr)
    return logits(model, ids_after)


def comparable(number: int | float) -> int | float:
    """A number the learner's code returned, as the suites compare and show it: an int too big
    for a float (10**400 is a Python int like any other) becomes +-inf, so that math.isclose,
    division and "{:.6g}" judge it instead of raising OverflowError."""
    if isinstance(number, int) and not isinstance(number, bool):
        try:
            float(number)
        except OverflowError:
            return float("inf") if number > 0 else float("-inf")
    return number


def _scale(expected: torch.Tensor) -> float:
    """The largest finite entry's size: an inf or NaN (from a learner's own weights) must not
    make every value close (atol = inf) or the comparison raise (atol = NaN)."""
    finite = expected[torch.isfinite(expected)]
    return float(finite.abs().max()) if finite.numel() else 0.0


def close(got: object, expected: torch.Tensor, rtol: float = 1e-4) -> bool:
    """``got`` is a tensor of ``expected``'s shape, equal within ``rtol`` of its largest entry
    (float32 noise of a tiny model computed twice; a wrong tie is off by percents)."""
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape) \
            or got.is_complex() != expected.is_complex():  # .double() would drop the imaginary
        return False
    got, expected = got.double(), expected.double()
    scale = _scale(expected)
    return bool(torch.allclose(got, expected, rtol=rtol, atol=rtol * scale))


def first_gap(got: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-4) -> str:
    """Where two tensors first differ beyond ``close``'s tolerance, for a message ("" if
    nowhere); the learner's ``got`` may have any shape or dtype."""
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape):
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        return f"(it has shape {shape}, expected {tuple(expected.shape)})"
    if got.is_complex() != expected.is_complex():
        return f"(it is {got.dtype}, expected {expected.dtype})"
    got, expected = got.double(), expected.double()
    atol = rtol * _scale(expected)
    far = ~torch.isclose(got, expected, rtol=rtol, atol=atol)
    if not bool(far.any()):
        return ""
    index = tuple(int(i) for i in torch.nonzero(far)[0])
    return (f"at index {list(index)}: got {got[index].item():.6g}, "
            f"expected {expected[index].item():.6g}")
