"""What the hidden suites compute in the grader, from what a probe returned.

A probe's reply comes from the learner's process, where learner code could have rewritten it.
So the suites never take the child's word for a structural fact (the same Parameter, a count,
a recorded call): they compare VALUES the learner's code computed on the grader's fresh
inputs with values computed here, by PyTorch and by lumen's GPT-2 loaded with the learner's
own weights. A wrong value fails the test; the facts only pick the message.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from autograder.suites.feedback import Mistake
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
        torch.manual_seed(seed)
        return ref.GPT2(ref.GPT2Config(**config)).eval()


def lumen_gpt2(config: dict, state: dict, dtype: torch.dtype | None = None,
               **weights: torch.Tensor) -> ref.GPT2:
    """lumen's GPT2 of ``config`` holding the learner's ``state`` (a state_dict they returned),
    with ``weights`` (``wte``, ``lm_head``: the matrices of those layers) put in its place.
    Tied (``config["tie_weights"]``, the default), lm_head IS wte, so ``lm_head`` is ignored
    and the head follows wte, as it must."""
    tied = config.get("tie_weights", True)
    model = fresh_lumen(config, 0)  # its values are replaced below; only the shapes matter
    if dtype is not None:
        model = model.to(dtype)
    wanted = dict(state) if isinstance(state, dict) else {}
    for layer, tensor in weights.items():
        wanted[f"{layer}.weight"] = tensor
    if tied:
        wanted.pop("lm_head.weight", None)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(wanted) - ({"lm_head.weight"} if tied else set()))
    wrong = sorted(k for k in set(expected) & set(wanted)
                   if not isinstance(wanted[k], torch.Tensor)
                   or tuple(wanted[k].shape) != tuple(expected[k].shape))
    if missing or wrong:
        names = ", ".join([*missing, *wrong][:3])
        raise Mistake(f"your GPT2's state_dict lacks or reshapes {names}: keep the given code's "
                      "layers, their names and shapes (only tie_weights and init_weights are "
                      "yours to write)")
    model.load_state_dict({k: wanted[k] for k in expected if k in wanted}, strict=False)
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
