"""Turning probe outcomes into verdicts a learner can act on.

A hidden test fails by raising ``Mistake`` with a message in the chapter's words: what was
expected, what came back, and the likely cause. Only that message reaches the learner: never
the test's code, never a traceback of the grader.
"""

from __future__ import annotations

import torch

from .sandboxed.protocol import MetaTensor, RemoteObject
from .worker_client import Outcome


class Mistake(AssertionError):
    """The learner's code did something wrong; the message says what and why."""


class NotImplementedYet(Mistake):
    """The learner's function still raises the stub's NotImplementedError."""


class Reply(dict):
    """A probe's reply: a missing key means the worker's answer was tampered with."""

    def __getitem__(self, key: str) -> object:
        if key not in self:
            raise Mistake(
                f"the answer from your code's process lacks {key!r}: it was not produced by the "
                "grader's probe (did your code replace parts of the grader?)"
            )
        return dict.__getitem__(self, key)


def describe_error(error: dict) -> str:
    where = f" (at {error['where'][-1]})" if error.get("where") else ""
    return f"{error['type']}: {error['message']}{where}"


def unwrap(outcome: Outcome, what: str, module: str | None = None) -> object:
    """The outcome's value, or a Mistake that says why there is none."""
    if module and module in outcome.import_errors:
        error = outcome.import_errors[module]
        raise Mistake(
            f"your {module}.py could not be imported, so {what} could not be graded: "
            f"{describe_error(error)}"
        )
    if outcome.timed_out:
        raise Mistake(
            f"{what} did not finish in time"
            + (f" ({outcome.crashed})" if outcome.crashed else "")
            + ": look for a loop that never ends, or work that grows with V x V"
        )
    if outcome.crashed:
        raise Mistake(f"{what}: {outcome.crashed}")
    if outcome.error is not None:
        if outcome.error.get("not_implemented"):
            raise NotImplementedYet(f"{what} is not implemented yet")
        raise Mistake(f"{what} raised {describe_error(outcome.error)}")
    if isinstance(outcome.value, dict):
        return Reply(outcome.value)
    return outcome.value


def unwrap_meta(outcome: Outcome, what: str, module: str | None = None) -> object:
    """``unwrap`` for a call on the meta device, where an error usually means a fixed device."""
    if outcome.error is not None and not outcome.error.get("not_implemented"):
        raise Mistake(
            f"{what} raised {describe_error(outcome.error)}. Tensors on the meta device have a "
            "shape but no values, so this usually means your code moves them to a hard-coded "
            "device (.to('cpu'), .cpu(), device='cpu') or reads values where it needs none: "
            "create new tensors with device=ids.device (or the weight's)"
        )
    return unwrap(outcome, what, module)


def expect_error(outcome: Outcome, what: str, kinds: tuple[str, ...], why: str,
                 module: str | None = None) -> dict:
    """The learner's exception, which must be one of ``kinds``; a Mistake otherwise."""
    if outcome.error is not None and outcome.error.get("not_implemented"):
        raise NotImplementedYet(f"{what} is not implemented yet")
    if outcome.ok:
        raise Mistake(f"{what} returned a result, but should raise {' or '.join(kinds)}: {why}")
    if outcome.error is None:
        unwrap(outcome, what, module)
    if outcome.error["type"] not in kinds:
        raise Mistake(
            f"{what} raised {describe_error(outcome.error)}, but should raise "
            f"{' or '.join(kinds)}: {why}"
        )
    return outcome.error


def expect_tensor(value: object, what: str, like: torch.Tensor | None = None,
                  device: str | None = None) -> torch.Tensor | MetaTensor:
    """``value`` must be a tensor (of ``like``'s shape and dtype, on ``device``)."""
    if isinstance(value, RemoteObject) or not isinstance(value, torch.Tensor | MetaTensor):
        kind = value.type_name if isinstance(value, RemoteObject) else type(value).__name__
        raise Mistake(f"{what} returned a {kind}, not a torch.Tensor")
    if like is not None:
        if tuple(value.shape) != tuple(like.shape):
            raise Mistake(
                f"{what} has shape {tuple(value.shape)}, expected {tuple(like.shape)}"
            )
        if value.dtype != like.dtype:
            raise Mistake(
                f"{what} has dtype {value.dtype}, expected {like.dtype}: keep the weight's dtype "
                "(no float32 default, no .float())"
            )
    if device is not None:
        where = value.device.type if isinstance(value, MetaTensor) else value.remote_device
        if not str(where).startswith(device):
            raise Mistake(
                f"{what} came back on {where} for inputs on {device}: create new tensors on "
                "the inputs' device (device=ids.device), never a hard-coded one"
            )
    return value


def first_difference(got: torch.Tensor, expected: torch.Tensor) -> str:
    """Where two same-shape tensors first differ, for a message."""
    differ = got != expected
    if got.is_floating_point():
        differ = differ & ~(torch.isnan(got) & torch.isnan(expected))
    index = tuple(int(i) for i in torch.nonzero(differ)[0]) if differ.any() else ()
    got_value, expected_value = got[index].item(), expected[index].item()
    return f"at index {list(index)}: got {got_value:.6g}, expected {expected_value:.6g}"
