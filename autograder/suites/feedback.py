"""Turning probe outcomes into verdicts a learner can act on.

A hidden test fails by raising ``Mistake`` with a message in the chapter's words: what was
expected, what came back, and the likely cause. Only that message reaches the learner: never
the test's code, never a traceback of the grader.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from ..boundary.intake import MISSING, REPLACED, hand_in
from ..mistakes import CRASHED, IMPORT_FAILED, MISSING_FILE, MISTAKE, TIMED_OUT, UNUSABLE_FILE
from ..sandboxed.protocol import MetaTensor, RemoteObject

if TYPE_CHECKING:  # the type only: the suites never reach into the worker
    from ..boundary.session import Outcome


class Mistake(AssertionError):
    """The learner's code did something wrong; the message says what and why.

    ``kind`` (``autograder/mistakes.py``): MISTAKE for code that ran and was found wrong, or
    the kind of code that never ran, set here where it is known and carried as data into the
    ``TestResult``: never read back from the message."""

    def __init__(self, message: str, kind: str = MISTAKE) -> None:
        super().__init__(message)
        self.kind = kind


class NotImplementedYet(Mistake):
    """The learner's function still raises the stub's NotImplementedError."""


class Reply(dict):
    """A probe's reply, or a dict in it. Its fields are the probe's
    (``autograder/boundary/replies.py`` checked them where the reply arrived); a key that may be
    absent (a probe's optional field, a name in the learner's state_dict) is, when missing, the
    learner's mistake."""

    def __getitem__(self, key: str) -> object:
        if key not in self:
            raise Mistake(
                f"the answer from your code's process has no {key!r}: a state_dict or result "
                "without it (keep the stub's names for every layer and field), or an answer "
                "the grader's probe did not produce (did your code replace parts of the grader?)"
            )
        return dict.__getitem__(self, key)


def _as_replies(value: object) -> object:
    """``value`` with every dict in it a ``Reply`` (cleaning bounded the depth)."""
    if isinstance(value, dict):
        return Reply({k: _as_replies(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_as_replies(v) for v in value]
    return value


def describe_error(error: dict) -> str:
    """The learner's exception: its type, its message quoted (repr), and where it was raised,
    the line of code in backticks. Quoted, the learner's own words are told apart from the
    grader's, here and in the mistake's id (``autograder/mistakes.py`` drops quoted text and
    code), so two learners' different words for one mistake give one id."""
    where = ""
    if error.get("where"):  # "embeddings.py, line 7, in forward: return self.weight[ids]"
        place, _, code = str(error["where"][-1]).partition(": ")
        where = f" (at {place}: `{code}`)" if code else f" (at {place})"
    return f"{error['type']}: {str(error['message'])!r}{where}"


def _not_imported(outcome: Outcome, what: str, module: str | None) -> None:
    """A Mistake when ``module``, which ``what`` needs, could not be imported: first of all,
    since the stub that stands in for it would only say "not implemented yet"."""
    if module and module in outcome.import_errors:
        error = outcome.import_errors[module]
        found = error.get("file")  # the grader's own finding (boundary/session.py)
        if found == MISSING:  # one mistake per kind, whichever test meets it
            raise Mistake(f"{module}.py is missing from the submission, so {what} could not "
                          f"be graded: {hand_in(f'{module}.py')}", MISSING_FILE)
        raise Mistake(
            f"your {module}.py could not be imported, so {what} could not be graded: "
            f"{describe_error(error)}", UNUSABLE_FILE if found == REPLACED else IMPORT_FAILED)


def unwrap(outcome: Outcome, what: str, module: str | None = None) -> object:
    """The outcome's value, or a Mistake that says why there is none."""
    _not_imported(outcome, what, module)
    if outcome.timed_out:
        raise Mistake(
            f"{what} did not finish in time"
            + (f" ({outcome.crashed})" if outcome.crashed else "")
            + ": look for a loop that never ends, or work that grows with V x V", TIMED_OUT)
    if outcome.crashed:
        raise Mistake(f"{what} could not finish: {outcome.crashed}", CRASHED)
    if outcome.error is not None:
        if outcome.error.get("not_implemented"):
            raise NotImplementedYet(f"{what} is not implemented yet")
        raise Mistake(f"{what} raised {describe_error(outcome.error)}")
    return _as_replies(outcome.value)


#: Whether a grader without a GPU runs the device checks on the meta device. Off, those checks
#: run nowhere but on a GPU: tests/test_meta_pass.py grades every correct variant both ways and
#: requires the same verdicts, so the meta pass never costs correct code a point.
META_PASS = True


def checked_devices(devices: list[str]) -> list[str]:
    """Where the device checks run: the GPU when there is one, else the meta device (with the
    values behind it, ``meta_device.MetaWithValues``), else nowhere."""
    return [d for d in devices if d != "cpu"] or (["meta"] if META_PASS else [])


def unwrap_meta(outcome: Outcome, what: str, module: str | None,
                on_cpu: Callable[[], Outcome]) -> object | None:
    """``unwrap`` for a call on the meta device, or None when it shows nothing about devices.

    The probes run it with every tensor's values kept behind it, so correct code runs there
    exactly as on the CPU, value reads included. So an error there is judged against the same
    call on CPU tensors, ``on_cpu()`` (made only when needed): code that runs on the CPU and
    fails on the meta device fails the device check, whatever it raises (a message that names
    no device is no excuse: code can choose its error). Only when the CPU call fails too does
    the meta pass abstain: the CPU checks judge that code, and one mistake costs one check."""
    error = outcome.error
    if error is None or error.get("not_implemented"):
        return unwrap(outcome, what, module)
    if "device" not in str(error.get("message", "")).lower() and not on_cpu().ok:
        return None  # it fails on the CPU as well: not a device mistake
    raise Mistake(
        f"{what} raised {describe_error(error)}, though the same call on CPU tensors ran: "
        "code must run on whatever device its inputs are on. Create new tensors on the inputs' "
        "device (device=ids.device, or the weight's), never on a hard-coded one (.to('cpu'), "
        ".cpu(), device='cpu'), and never treat one device differently from another"
    )


def unwrap_on(device: str, call: Callable[[str], Outcome], what: str,
              module: str | None, outcome: Outcome | None = None) -> object | None:
    """``unwrap`` of ``call(device)`` (or of ``outcome``, that call made already); on the meta
    device ``unwrap_meta``, judged against ``call("cpu")``: None when it fails there too."""
    outcome = call(device) if outcome is None else outcome
    if device == "meta":
        return unwrap_meta(outcome, what, module, on_cpu=lambda: call("cpu"))
    return unwrap(outcome, what, module)


#: What a TypeError says when a call does not fit the function's parameters.
_SIGNATURE = re.compile(r"unexpected keyword argument|positional argument|multiple values for "
                        r"argument|required keyword")


def check_signature(outcome: Outcome, what: str, stub: str) -> None:
    """A Mistake when the call itself did not fit: the learner's function does not take its
    arguments as the stub's signature ``stub`` says (a parameter renamed, reordered, dropped
    or made keyword-only). Such a TypeError comes before any line of the learner's code runs,
    so it has no place in the learner's files (``where``); one raised inside them is theirs."""
    error = outcome.error
    if (error is not None and error.get("type") == "TypeError" and not error.get("where")
            and _SIGNATURE.search(str(error.get("message", "")))):
        raise Mistake(
            f"{what} raised {describe_error(error)}: keep the stub's signature, {stub}, with its "
            "parameter names and order. The grader calls it positionally and by name, as any "
            "caller may"
        )


def is_one_of(error: dict, kinds: tuple[str, ...]) -> bool:
    """Whether the learner's exception ``error`` is an instance of one of the built-in
    ``kinds``: a built-in class it is or derives from. A class of the learner's own that is
    merely called ``IndexError`` is not one: ``except IndexError`` would not catch it."""
    bases = error.get("bases")
    if bases:  # the learner's process named them: its class and the built-ins it derives from
        return any(b in kinds for b in bases)
    return error.get("type") in kinds


def expect_error(outcome: Outcome, what: str, kinds: tuple[str, ...], why: str,
                 module: str | None = None) -> dict:
    """The learner's exception, which must be an instance of one of ``kinds`` (a subclass
    keeps the promise: every ``except IndexError`` catches a ``TokenIndexError(IndexError)``);
    a Mistake otherwise."""
    _not_imported(outcome, what, module)
    if outcome.error is not None and outcome.error.get("not_implemented"):
        raise NotImplementedYet(f"{what} is not implemented yet")
    if outcome.ok:
        raise Mistake(f"{what} returned a result, but should raise {' or '.join(kinds)}: {why}")
    if outcome.error is None:
        unwrap(outcome, what, module)
    if not is_one_of(outcome.error, kinds):
        raise Mistake(
            f"{what} raised {describe_error(outcome.error)}, but should raise "
            f"{' or '.join(kinds)}: {why}"
        )
    return outcome.error


def device_of(value: torch.Tensor | MetaTensor) -> str:
    """Where a tensor of a reply lived in the learner's process ("cuda:0", "meta", "cpu")."""
    return str(value.device.type if isinstance(value, MetaTensor) else value.remote_device)


def expect_tensor(value: object, what: str, like: torch.Tensor | None = None,
                  device: str | None = None) -> torch.Tensor | MetaTensor:
    """``value`` must be a tensor (of ``like``'s shape and dtype, on ``device``). A tensor on
    the meta device (no values) passes only when ``device`` is "meta": the caller goes on to
    read the values of any other."""
    if isinstance(value, RemoteObject) or not isinstance(value, torch.Tensor | MetaTensor):
        kind = value.type_name if isinstance(value, RemoteObject) else type(value).__name__
        raise Mistake(f"{what} returned a {kind}, not a torch.Tensor")
    if device is None and isinstance(value, MetaTensor):
        raise Mistake(f"{what} came back on the meta device, without values: create new "
                      "tensors on the inputs' device (device=ids.device), never a fixed one")
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
        where = device_of(value)
        if not where.startswith(device):
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


def same(got: object, expected: torch.Tensor) -> bool:
    """``got`` is a tensor equal to ``expected`` in shape, dtype and every value, NaN where it
    has NaN (torch.equal says NaN != NaN)."""
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape \
            or got.dtype != expected.dtype:
        return False
    if got.is_floating_point():
        nan = torch.isnan(expected)
        return torch.equal(torch.isnan(got), nan) and torch.equal(got[~nan], expected[~nan])
    return torch.equal(got, expected)


def expect_unchanged(reply: Reply, sent: dict[str, torch.Tensor], what: str) -> None:
    """Each tensor of ``sent`` is, after the call, as the grader sent it (shape, dtype, values)
    and no in-place operation ran on it (the probe's ``inputs`` and ``in_place``): a function
    must leave what it is given as it was, since its caller goes on using it."""
    after, touched = reply["inputs"], reply["in_place"]
    for name, original in sent.items():
        got = after.get(name) if isinstance(after, dict) else None
        if not same(got, original):
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else None
            change = (f"its shape is now {shape}, was {tuple(original.shape)}"
                      if shape is not None and shape != tuple(original.shape) else
                      "its values are not the ones it was given")
            raise Mistake(
                f"{what} changed the {name} it was given ({change}): work on new tensors "
                "(x = x / n, x.long().reshape(...)), never in place on an argument (x /= n, "
                ".unsqueeze_(), .clamp_(), an assignment into a view such as E[b]), since "
                "the caller goes on using it"
            )
        if isinstance(touched, list) and name in touched:
            raise Mistake(
                f"{what} changed the {name} it was given in place (an in-place operation ran on "
                "it, though its values came back as they were): work on new tensors, never in "
                "place on an argument, which the caller (and autograd) goes on using"
            )


def remembered(test: Callable) -> Callable:
    """A hidden test whose verdict another test of its stage builds on (each as-you-wrote-it
    check holds one point of such a test and fails whenever it does): its verdict is kept on
    the stage's session, so that ``verdict_of`` repeats it instead of running it again (a
    second run of a heavy test cost a cold grade seconds)."""

    @functools.wraps(test)
    def run(learner, *args, **kwargs) -> None:
        try:
            test(learner, *args, **kwargs)
        except BaseException as error:
            learner.verdicts[test.__name__] = error
            raise
        learner.verdicts[test.__name__] = None

    return run


def verdict_of(test: Callable, learner, *args, **kwargs) -> None:
    """``test``'s verdict on this submission: the one it got when it ran (``remembered``),
    raised again if it failed, or, when it has not run (``-k``, ``--stage``), ``test`` run now."""
    name = test.__name__
    if name not in learner.verdicts:
        test(learner, *args, **kwargs)
    elif (error := learner.verdicts[name]) is not None:
        raise error
