"""Hidden tests, stage 'embedding': the Embedding module is a V x d Parameter and a row lookup.

Compared with ``weight[ids]`` (PyTorch's own lookup, computed here) on fresh seeded inputs,
exactly (torch.equal), because a lookup does no arithmetic. The learner's Embedding runs with
the init stage's functions replaced by public scaffolds (``autograder/sandboxed/scaffolds.py``),
never the reference solution. Every failure says what was expected and the likely mistake, in
the chapter's words.

Every point is earned by values the learner's code computes, with the grader's own matrix
copied into the layer's weight. What its process reports about itself (the weight's type, an
input changed in place) earns points behind the rules (``bans.certify``; docs/threat-model.md);
the built-in ban is judged from the submitted source alone (``autograder/suites/bans.py``). The
meta-device pass only ever takes points away, never from correct code (tests/test_meta_pass.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from autograder.sandboxed.scaffolds import SCALE_FACTOR
from autograder.suites import bans, id_dtypes, values
from autograder.suites.feedback import (
    Mistake,
    check_signature,
    checked_devices,
    describe_error,
    expect_error,
    expect_tensor,
    expect_unchanged,
    first_difference,
    remembered,
    same,
    unwrap,
    unwrap_on,
    verdict_of,
)
from autograder.suites.promises.sweeps import (
    EDGE_VOCAB,
    INTEGER_DTYPES,
    edge_ids,
    top_id,
    wrap_hint,
)

if TYPE_CHECKING:
    from autograder.boundary.session import Outcome

STAGE = "embedding"
MODULE = "embeddings"
SHAPES = {(): "a single id (0-D)", (7,): "a sequence (1-D)", (3, 5): "a batch (2-D)",
          (2, 3, 4): "a 3-D block of ids", (0,): "no ids at all (an empty sequence)",
          (1, 4): "a batch of one sequence", (3, 1): "sequences of one id each"}
EMBEDDING = "Embedding(vocab_size, d_model, std=0.02, scale=False)"
CHECK_IDS = "check_ids(ids, vocab_size)"
#: The lookup's fix when the ids' dtype is not what went wrong.
LOOK_UP = "look the rows up as weight[ids.long()], on ids of any shape and layout"

#: Each hidden test -> the visible tests (exercises/tests/test_embedding.py) that check the same
#: requirement on other inputs (tests/test_requirements.py holds every hidden test to one).
VISIBLE: dict[str, tuple[str, ...]] = {
    "test_weight_is_a_parameter": ("test_weight_is_a_registered_v_by_d_parameter",),
    "test_lookup_every_shape": ("test_forward_is_the_row_lookup", "test_ids_of_any_shape"),
    "test_ids_are_left_unchanged": ("test_forward_leaves_the_ids_as_they_were",),
    "test_meta_device_and_dtypes": ("test_output_keeps_the_weights_dtype_and_device",),
    "test_out_of_range_ids_are_refused": ("test_ids_outside_the_vocabulary_raise",),
    "test_non_integer_ids_are_refused": ("test_check_ids_refuses_what_is_not_integer_ids",),
    "test_integer_dtypes_accepted": ("test_every_integer_dtype_and_layout",
                                     "test_ids_at_the_edges_of_their_dtype",
                                     "test_ids_of_any_shape"),
    "test_repeated_ids_accumulate_gradients": ("test_repeated_ids_add_up_their_gradients",),
    "test_scale_is_applied_once": ("test_forward_returns_its_rows_through_scale_output",),
    "test_no_builtin_embedding": ("test_the_lookup_is_written_by_hand",),
    "test_layer_as_you_wrote_it": ("test_given_code_is_left_as_it_is",
                                   "test_forward_is_the_row_lookup", "test_ids_of_any_shape"),
}


def _reference(weight: torch.Tensor, ids: torch.Tensor, scale: bool = False) -> torch.Tensor:
    """What the learner's forward must return: ``weight[ids]``, through PyTorch's own lookup,
    then the scaffold's ``scale_output``: times SCALE_FACTOR when ``scale`` (stage 'init',
    graded on its own, owns the real sqrt(d_model) scaling)."""
    rows = F.embedding(ids.long(), weight)  # (..., d), in weight's dtype
    return rows * SCALE_FACTOR if scale else rows


def _not_a_parameter(facts: dict, V: int, d: int, seen: str) -> Mistake:
    """Why values say the weight is not a registered (V, d) Parameter, by what it reports."""
    if not facts["has_weight"]:
        return Mistake("your Embedding has no attribute `weight`: the whole layer is the V x d "
                       "matrix self.weight")
    if facts["weight_type"] != "Parameter" or not facts["registered"]:
        return Mistake(
            f"self.weight is a {facts['weight_type']} that .parameters() does not list: wrap it "
            "in nn.Parameter(...) so that optimisers, .to() and state_dict see it "
            f"(parameters found: {[p[0] for p in facts['parameters']] or 'none'})"
        )
    shape = tuple(facts["shape"] or ())
    if shape != (V, d):
        return Mistake(f"weight has shape {shape}, expected (vocab_size, d_model) = {(V, d)}: "
                       "one row per token, d numbers per row")
    if not facts["requires_grad"]:
        return Mistake("weight does not require grad: the table is learned, it must get "
                       "gradients")
    return Mistake(f"Embedding({V}, {d}): {seen}: self.weight must be one registered "
                   "nn.Parameter of shape (vocab_size, d_model), nothing else")


def test_weight_is_a_parameter(learner, seed, gen, grading):
    """weight is a registered nn.Parameter of shape (vocab_size, d_model)

    A fresh (V, d) matrix W loaded with load_state_dict({"weight": W}) must be what the
    Parameter registered as "weight" holds, a gradient must reach its .grad and one SGD step
    over layer.parameters() must move it to W - lr * grad; built with std=None (or 0.3) the
    layer keeps that std, as the given lines store it. All of it is computed in the
    learner's process, from W alone, so its points depend on the rules (``bans.certify``)."""
    V, d, lr = 11, 6, 0.5
    W = torch.randn(V, d, generator=gen)
    ids = torch.randint(0, V, (3, 4), generator=gen)
    grad = torch.randn(3, 4, d, generator=gen)
    for positional, built in ((None, f"Embedding({V}, {d})"),
                              (0, f"Embedding(vocab_size={V}, d_model={d})")):
        outcome = learner.call("embedding_parameter", seed=seed, vocab_size=V, d_model=d,
                               weight=W, ids=ids, grad=grad, lr=lr, positional=positional)
        check_signature(outcome, built, EMBEDDING)
        _check_parameter(unwrap(outcome, built, MODULE), W, ids, grad, lr)
    for std in (None, 0.3):  # the given lines store std as it came; reset_parameters reads it
        built = f"Embedding({V}, {d}, std={std})"
        kept = unwrap(learner.call("embedding_parameter", seed=seed, vocab_size=V, d_model=d,
                                   weight=W, ids=ids, grad=grad, lr=lr, std=std),
                      built, MODULE)["std"]
        if kept != std:
            raise Mistake(
                f"{built}: once built, the layer's std is {kept!r}, not {std!r}: the given "
                "lines of __init__ store std as it came (None means 1/sqrt(d_model), which "
                "reset_parameters works out when it draws), so YOUR CODE HERE leaves "
                "self.std as it is")
    bans.certify(grading.files, "the weight as a registered Parameter that trains")


def _check_parameter(reply: dict, W: torch.Tensor, ids: torch.Tensor, grad: torch.Tensor,
                     lr: float) -> None:
    """The layer's Parameter registered as "weight" holds W once loaded, gets the gradient
    and moves by one SGD step (the probe ``embedding_parameter``)."""
    V, d = W.shape
    loaded = reply["load"]
    if isinstance(loaded, dict) and "error" in loaded:
        raise _not_a_parameter(reply, V, d, "load_state_dict({'weight': W}) raised "
                               f"{loaded['error']}: {loaded['message']}")
    trained = reply.get("trained")
    if not isinstance(trained, dict) or "error" in trained:
        raise _not_a_parameter(reply, V, d, "named_parameters() has no 'weight' to train")
    summed = torch.zeros(V, d).index_add_(0, ids.flatten(), grad.reshape(-1, d))
    if not values.close(trained["rows"], W[ids], rtol=0):
        raise _not_a_parameter(reply, V, d, "after load_state_dict({'weight': W}) the "
                               "Parameter registered as 'weight' does not hold W")
    if not values.close(trained["grad"], summed, rtol=1e-6):
        raise _not_a_parameter(reply, V, d, "no gradient reached the Parameter's .grad")
    if not values.close(trained["after"], W - lr * summed, rtol=1e-6):
        raise _not_a_parameter(reply, V, d, "one SGD step over layer.parameters() did not "
                               "move the Parameter registered as 'weight'")


@remembered
def test_lookup_every_shape(learner, seed, gen, devices):
    """forward(ids) is weight[ids] exactly, for 0-D, 1-D, 2-D and 3-D ids and none at all, on
    every device"""
    V, d = 23, 5
    weight = torch.randn(V, d, generator=gen)
    for n, (shape, name) in enumerate(SHAPES.items()):
        ids = torch.randint(0, V, shape, generator=gen)
        expected = _reference(weight, ids)
        positional = 0 if n == 1 else None  # once built by name: Embedding(vocab_size=V, ...)
        built = f"Embedding(vocab_size={V}, d_model={d})" if positional == 0 else \
            f"Embedding({V}, {d})"
        for device in devices:
            outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                                   weight=weight, ids=ids, device=device, positional=positional)
            what = f"{built} on {name}, shape {tuple(shape)}, on {device}"
            check_signature(outcome, built, EMBEDDING)
            result = unwrap(outcome, what, MODULE)
            out = expect_tensor(result["out"], what, device=device)
            if tuple(out.shape) != tuple(expected.shape):
                raise Mistake(
                    f"{what}: output shape {tuple(out.shape)}, expected {tuple(expected.shape)} = "
                    "ids.shape + (d_model,): every id becomes one row, whatever the ids' shape"
                )
            if not torch.equal(out, expected):
                where = first_difference(out, expected)
                raise Mistake(f"{what}: the rows differ from weight[ids] {where}; "
                              "a lookup copies rows, it does no arithmetic")


def test_ids_are_left_unchanged(learner, seed, gen, grading):
    """forward leaves the ids it is given as they were (values, shape, no in-place operation)

    What the ids hold afterwards is reported by the learner's process, so its points depend on
    the rules (``bans.certify``)."""
    V, d = 23, 5
    weight = torch.randn(V, d, generator=gen)
    for shape, name in SHAPES.items():
        ids = torch.randint(0, V, shape, generator=gen)
        what = f"Embedding({V}, {d}) on {name}, shape {tuple(shape)}"
        result = unwrap(learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                                     weight=weight, ids=ids), what, MODULE)
        out = result["out"]
        if not isinstance(out, torch.Tensor) or not same(out, _reference(weight, ids)):
            raise Mistake(f"{what} does not return weight[ids] yet (see the lookup check), so "
                          "there is no lookup to judge here")
        expect_unchanged(result, {"ids": ids}, what)
    bans.certify(grading.files, "the ids left as they were")


def test_meta_device_and_dtypes(learner, seed, gen, devices):
    """the output keeps the weight's dtype (float64, bfloat16) and device (the meta device too)"""
    V, d = 13, 4
    ids = torch.randint(0, V, (2, 3), generator=gen)
    for dtype in (torch.float64, torch.bfloat16):
        weight = torch.randn(V, d, generator=gen).to(dtype)
        expected = _reference(weight, ids)
        outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                               weight=weight, ids=ids)
        what = f"Embedding({V}, {d}) with a {dtype} weight"
        out = expect_tensor(unwrap(outcome, what, MODULE)["out"], what, like=expected)
        if not torch.equal(out, expected):
            raise Mistake(f"{what}: rows differ {first_difference(out, expected)}")
    # The device: on a GPU, the lookup test checks every device; without one, the meta device
    # (with the values behind it, so range checks work there) still catches a hard-coded one.
    if "meta" in checked_devices(devices):
        weight = torch.randn(V, d, generator=gen)

        def call(device: str) -> Outcome:
            return learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                                weight=weight, ids=ids, device=device)

        what = f"Embedding({V}, {d}) with weight and ids on the meta device"
        result = unwrap_on("meta", call, what, MODULE)
        if result is None:
            return  # it fails on the CPU as well: the CPU checks judge it
        out = expect_tensor(result["out"], what, device="meta")
        if tuple(out.shape) != (2, 3, d):
            raise Mistake(f"{what}: shape {tuple(out.shape)}, expected {(2, 3, d)}")


def _refused(learner, seed: int, weight: torch.Tensor, ids: object, kinds: tuple[str, ...],
             why: str, positional: int | None = None) -> list[dict]:
    """The learner's forward, then its check_ids on its own (positionally, or as
    ``positional`` says), on ``ids``: each must raise one of ``kinds``. Their errors."""
    V, d = weight.shape
    shown = f"{ids.dtype} ids {_show(ids)}" if isinstance(ids, torch.Tensor) else \
        f"a Python {type(ids).__name__} {ids!r} (not a tensor)"
    forward = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                           weight=weight, ids=ids)
    errors = [expect_error(forward, f"Embedding({V}, {d}) on {shown}", kinds, why, MODULE)]
    call = (f"check_ids(ids={shown}, vocab_size={V})" if positional == 0 else
            f"check_ids({shown}, {V})")
    alone = learner.call("embedding_check_ids", seed=seed, ids=ids, vocab_size=V,
                         positional=positional)
    check_signature(alone, call, CHECK_IDS)
    errors.append(expect_error(alone, call, kinds, f"{why}; forward raises through check_ids, "
                               "so check_ids itself must refuse them", MODULE))
    return errors


def _show(ids: torch.Tensor) -> str:
    return str(ids.tolist()) if ids.numel() <= 8 else f"of shape {tuple(ids.shape)}"


def test_out_of_range_ids_are_refused(learner, seed, gen):
    """ids outside [0, V) raise IndexError naming the id and V; negative ids are not wrapped

    In forward and in check_ids on its own, called by position and by name."""
    V, d = 17, 3
    weight = torch.randn(V, d, generator=gen)
    cases = [(-1, "a negative id (-1): plain indexing would silently return the last row"),
             (-V, f"a negative id (-{V}): plain indexing would silently return row 0"),
             (V, f"id {V}, one past the last row (ids go from 0 to {V - 1})")]
    # the ends of the narrow dtypes' ranges: ids of every integer dtype are checked alike
    edges = [(torch.iinfo(dtype).min if dtype != torch.uint8 else 255, dtype)
             for dtype in (torch.int8, torch.uint8, torch.int16, torch.int64)]
    cases += [(bad, f"{dtype} ids holding {bad}, the end of {dtype}'s range (ids of every "
               "integer dtype are checked, as int64)") for bad, dtype in edges]
    dtypes = [torch.int64] * 3 + [dtype for _, dtype in edges] + [torch.int64]
    past = V + int(torch.randint(1, 40, (), generator=gen))  # this run's own
    cases.append((past, "a single id (a 0-D tensor) past the last row"))
    for n, ((bad, why), dtype) in enumerate(zip(cases, dtypes, strict=True)):
        ids = torch.randint(0, V, (2, 4), generator=gen)
        ids[1, int(torch.randint(0, 4, (1,), generator=gen))] = bad
        ids = ids.to(dtype)
        if n == len(cases) - 1:
            ids = torch.tensor(bad)  # one id, no batch: the check must not skip it
        by_name = 0 if n == 2 else None  # check_ids(ids=..., vocab_size=...) once
        for error in _refused(learner, seed, weight, ids, ("IndexError",), why, by_name):
            if str(bad) not in error["message"] or str(V) not in error["message"]:
                raise Mistake(
                    f"on ids containing {bad}, IndexError({error['message']!r}) was raised; the "
                    f"message should name the offending id ({bad}) and the vocabulary size "
                    f"({V}), so the learner can find it"
                )


def test_non_integer_ids_are_refused(learner, seed, gen):
    """float, bool and complex ids, and ids that are not a tensor, raise TypeError

    In forward and in check_ids on its own: ids are labels, not quantities."""
    V, d = 9, 3
    weight = torch.randn(V, d, generator=gen)
    ids = [int(i) for i in torch.randint(0, V, (3,), generator=gen)]
    for bad, why in (
        (torch.tensor(ids, dtype=torch.float32), "float ids are quantities, but token ids are "
         "labels: refuse them rather than truncate 2.7 to 2"),
        (torch.tensor(ids, dtype=torch.float16), "every floating-point dtype is refused, "
         "float16 and bfloat16 too (ids.is_floating_point())"),
        (torch.tensor([True, False, True]), "bool ids would be read as a mask (rows 0 and 2), "
         "not as ids"),
        (torch.tensor(ids, dtype=torch.complex64), "complex numbers are no ids either "
         "(ids.is_complex())"),
        (ids, "token ids come as a torch.Tensor of integers: check isinstance(ids, Tensor) "
         "first, so that a list gets a TypeError that says so (not an AttributeError)"),
    ):
        _refused(learner, seed, weight, bad, ("TypeError",), why)


def test_integer_dtypes_accepted(learner, seed, gen, devices):
    """ids of every integer dtype, contiguous or not, give the rows weight[ids], up to the
    largest value their dtype holds

    int8, int16, int32, int64 and uint8; transposed and strided ids; then each dtype on a table
    larger than its range (uint8 ids up to 255 of a 300-row table), through forward and
    check_ids on its own; check_ids on its own also accepts valid ids of any shape (0-d, none
    at all, a size-1 dimension), on every device of the run."""
    V, d = 120, 4
    weight = torch.randn(V, d, generator=gen)
    ids = torch.randint(0, V, (3, 4), generator=gen)
    expected = _reference(weight, ids)
    cases = [(dtype, None) for dtype in INTEGER_DTYPES]
    cases += [(torch.int64, "transposed"), (torch.int32, "strided"), (torch.uint8, "transposed")]
    for dtype, layout in cases:
        outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                               weight=weight, ids=ids.to(dtype), layout=layout)
        what = f"Embedding({V}, {d}) on {dtype} ids" + (
            f", non-contiguous ({layout}: the same values, laid out otherwise)" if layout else "")
        error = outcome.error
        if error is not None and not error.get("not_implemented"):
            checked = learner.call("embedding_check_ids", seed=seed, ids=ids.to(dtype),
                                   vocab_size=V)
            if checked.error is not None and not checked.error.get("not_implemented"):
                raise Mistake(f"{what} raised {describe_error(error)}, and so does "
                              f"check_ids on these ids: ids of every integer dtype are token "
                              f"ids, {dtype} too; check_ids refuses only bool, float and "
                              "complex ids (TypeError) and ids outside [0, vocab_size)")
            fixes = [id_dtypes.lookup(dtype), "flatten them with reshape, never view, which fails "
                     "on non-contiguous tensors" if layout else ""]
            raise Mistake(
                f"{what} raised {describe_error(error)}, although check_ids accepts these ids: "
                "the lookup refuses them; " + ("; ".join(f for f in fixes if f) or LOOK_UP))
        out = expect_tensor(unwrap(outcome, what, MODULE)["out"], what, like=expected)
        if not torch.equal(out, expected):
            raise Mistake(f"{what}: rows differ from the int64 lookup "
                          f"{first_difference(out, expected)}")
    _integer_dtypes_at_their_edges(learner, seed, gen)
    _check_ids_accepts_any_shape(learner, seed, gen, devices)


def _check_ids_accepts_any_shape(learner, seed: int, gen: torch.Generator,
                                 devices: list[str]) -> None:
    """check_ids on its own returns None for valid ids of every shape ``forward`` takes, on
    every device: a 0-d id, no ids at all (a max() of nothing raises), a size-1 dimension."""
    V = 9
    shapes = [(), (0,), (4, 0), (1, 4), (3, 1)]
    for shape in shapes:
        ids = torch.randint(0, V, shape, generator=gen)
        for device in ["cpu", *checked_devices(devices)] if shape == (1, 4) else ["cpu"]:
            what = f"check_ids(ids of shape {tuple(shape)}, {V}) on {device}"
            outcome = learner.call("embedding_check_ids", seed=seed, ids=ids, vocab_size=V,
                                   device=device)
            if outcome.error is not None and not outcome.error.get("not_implemented"):
                raise Mistake(f"{what} raised {describe_error(outcome.error)}, but these ids are "
                              "valid: ids of any shape are token ids, a single 0-d id and none "
                              "at all too (check with (ids < 0).any(), which an empty tensor "
                              "answers False, never ids.max()), on the ids' own device")


def _integer_dtypes_at_their_edges(learner, seed: int, gen: torch.Generator) -> None:
    """Ids up to the largest value of their dtype, on a table larger than that dtype's range
    where one fits (``sweeps.EDGE_VOCAB``): every one is valid, and a check made in the ids'
    own dtype wraps around and refuses them. Through forward, then check_ids on its own."""
    for dtype, V in EDGE_VOCAB.items():
        weight = torch.randn(V, 2, generator=gen)
        ids = edge_ids(gen, dtype, V, (2, 4))
        shown = f"{dtype} ids {ids.tolist()} (the largest, {top_id(dtype, V)}, a valid id)"
        what = f"check_ids({shown}, {V})"  # first: forward refuses bad ids through it
        outcome = learner.call("embedding_check_ids", seed=seed, ids=ids, vocab_size=V)
        _valid_ids_refused(outcome, what, V, wrap_hint(dtype, V) or "; widen them with "
                           "ids.long() before comparing")
        unwrap(outcome, what, MODULE)
        what = f"Embedding({V}, 2) on {shown}"
        outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=2,
                               weight=weight, ids=ids)
        _valid_ids_refused(outcome, what, V, ", and check_ids accepts them: the lookup "
                           f"refuses them; {id_dtypes.lookup(dtype) or LOOK_UP}")
        expected = _reference(weight, ids)
        out = expect_tensor(unwrap(outcome, what, MODULE)["out"], what, like=expected)
        if not torch.equal(out, expected):
            raise Mistake(f"{what}: rows differ from the int64 lookup "
                          f"{first_difference(out, expected)}")


def _valid_ids_refused(outcome, what: str, V: int, why: str) -> None:
    """A Mistake when a call on valid ids (a vocabulary of ``V``) raised; ``why`` says what
    refused them, in the ids' dtype."""
    error = outcome.error
    if error is not None and not error.get("not_implemented"):
        raise Mistake(f"{what} raised {describe_error(error)}: every id from 0 to {V - 1} is "
                      f"valid, whatever the ids' dtype{why}")


def test_repeated_ids_accumulate_gradients(learner, seed, gen):
    """gradients of repeated ids add up in weight.grad, as F.embedding's do"""
    V, d = 10, 4
    weight = torch.randn(V, d, generator=gen, dtype=torch.float64)
    ids = torch.tensor([[3, 1, 3, 7], [3, 0, 1, 9]])
    grad = torch.randn(2, 4, d, generator=gen, dtype=torch.float64)
    outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                           weight=weight, ids=ids, grad=grad)
    what = "backward through Embedding with ids [[3, 1, 3, 7], [3, 0, 1, 9]]"
    result = unwrap(outcome, what, MODULE)
    got = result.get("grad")
    if got is None:
        raise Mistake(f"{what}: weight.grad is None: the output must come from self.weight by "
                      "differentiable indexing (no .detach(), no torch.no_grad, no .data)")
    expected = torch.zeros(V, d, dtype=torch.float64).index_add_(0, ids.flatten(),
                                                                 grad.reshape(-1, d))
    got = expect_tensor(got, "weight.grad", like=expected)
    if not torch.allclose(got, expected, rtol=1e-12, atol=1e-12):
        row = int((got - expected).abs().sum(1).argmax())
        count = int((ids == row).sum())
        raise Mistake(
            f"{what}: weight.grad row {row} is wrong; id {row} appears {count} times, so its "
            f"gradient is the sum of {count} upstream gradients. Gradients of repeated ids must "
            "add up (weight[ids] and index_select do this; writing rows one by one does not)"
        )


def test_scale_is_applied_once(learner, seed, gen):
    """forward leaves the sqrt(d_model) scaling to scale_output: applied exactly once"""
    V, d = 12, 16
    weight = torch.randn(V, d, generator=gen)
    ids = torch.randint(0, V, (5,), generator=gen)
    # scale_output here is the scaffold's, x * SCALE_FACTOR (3, not sqrt(16) = 4): a forward
    # that scales by itself shows, whether or not it also calls scale_output.
    rows, expected = _reference(weight, ids), _reference(weight, ids, scale=True)
    outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                           weight=weight, ids=ids, scale=True)
    what = f"Embedding({V}, {d}, scale=True)(ids)"
    out = expect_tensor(unwrap(outcome, what, MODULE)["out"], what, like=expected)
    if torch.allclose(out, expected * d**0.5):
        raise Mistake(f"{what} is scaled by sqrt(d_model) twice: forward returns the looked-up "
                      "rows through self.scale_output(...), which does the scaling; do not "
                      "scale in forward yourself")
    if torch.allclose(out, rows * d**0.5):
        raise Mistake(f"{what} scales by sqrt(d_model) in forward itself: return the looked-up "
                      "rows through self.scale_output(rows), which does the scaling (and is "
                      "graded on its own, in stage 'init')")
    if torch.equal(out, rows):
        raise Mistake(f"{what} returned the rows unscaled: forward must return them through "
                      "self.scale_output(rows), which applies the scaling when scale=True")
    if not torch.equal(out, expected):
        raise Mistake(f"{what}: differs from scale_output(weight[ids]) "
                      f"{first_difference(out, expected)}")


def test_no_builtin_embedding(learner, seed, gen, grading):
    """the lookup is written by hand: no nn.Embedding, no F.embedding

    Passes only when (1) forward returns weight[ids] on fresh inputs and (2) the submitted
    files, all three (they all run in this stage's process), read here with autograder/rules/,
    use none of torch's embedding built-ins in live code and none of the constructs that could
    call one without naming it (``bans.EMBEDDING``). (2) is out of the learner's reach; the
    recorder in the learner's process only explains a failure (``autograder/suites/bans.py``).
    """
    V, d = 8, 3
    weight = torch.randn(V, d, generator=gen)
    ids = torch.randint(0, V, (4,), generator=gen)
    outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                           weight=weight, ids=ids, watch=True)
    what = f"Embedding({V}, {d})(ids)"
    result = unwrap(outcome, what, MODULE)
    out = expect_tensor(result["out"], what)
    if not isinstance(out, torch.Tensor) or not torch.equal(out, _reference(weight, ids)):
        raise Mistake(f"{what} does not return weight[ids] yet (see the lookup check), so "
                      "there is no lookup to judge here")
    bans.judge(grading.files, bans.EMBEDDING, result,
               "your Embedding uses PyTorch's own embedding: the point of the stage is that the "
               "layer is just a matrix and forward is weight[ids]; write that lookup yourself")


# --- given code, as the learner wrote it -----------------------------------------------------
# Graded, every Embedding runs the grader's own copy of the given code and of nn.Module's
# methods (sandboxed/given.py): a method of the learner's class that overrides one of
# nn.Module's (load_state_dict, to, double, __call__, ...) is replaced there by nn.Module's.
# This test also runs the learner's layer as they wrote it: if one of the two gives the lookup
# and the other does not, given code was changed. It holds one of
# test_lookup_every_shape's points and fails whenever that test does (it runs it), so a
# learner who left the given code as it is scores exactly as before.


def _lookup_right(run: object, W: torch.Tensor, ids: torch.Tensor, grad: torch.Tensor) -> bool:
    if not isinstance(run, dict) or "error" in run:
        return False
    rows, got = run.get("rows"), run.get("grad")
    if not all(isinstance(t, torch.Tensor) and t.dtype == torch.float64 for t in (rows, got)):
        return False  # .double() must convert the layer, its gradient included
    V, d = W.shape
    summed = torch.zeros(V, d, dtype=torch.float64).index_add_(0, ids.flatten(),
                                                               grad.reshape(-1, d))
    return values.close(rows, W.double()[ids], rtol=1e-12) and values.close(
        got, summed, rtol=1e-12)


def test_layer_as_you_wrote_it(learner, seed, gen, devices):
    """your Embedding as you wrote it loads, converts and looks up as nn.Module does: the given
    code, and nn.Module's own methods, are left as they are

    Earned by values: loaded with load_state_dict, converted with .double(), the layer's rows
    and gradient are W[ids] and their sum per row, both with the grader's given code and with
    the learner's; then test_lookup_every_shape's requirement, on fresh inputs."""
    V, d = 14, 5
    W = torch.randn(V, d, generator=gen)
    ids = torch.randint(0, V, (3, 4), generator=gen)
    ids[1] = ids[0]  # every id of the first row twice: their gradients must add up
    grad = torch.randn(3, 4, d, generator=gen, dtype=torch.float64)
    what = (f"Embedding({V}, {d}) as you wrote it, loaded with load_state_dict({{'weight': W}})"
            " and converted with .double()")
    reply = unwrap(learner.call("embedding_lookup_as_shipped", seed=seed, vocab_size=V,
                                d_model=d, weight=W, ids=ids, grad=grad), what, MODULE)
    pinned, shipped = (_lookup_right(reply[k], W, ids, grad) for k in ("pinned", "shipped"))
    if pinned and not shipped:
        raise Mistake(
            f"{what}: its rows or their gradient are not W[ids] and its sum per row, yet with "
            "nn.Module's own methods and the given code they are: your class changes what "
            "nn.Module does (it overrides load_state_dict, to, double, __call__ or another of "
            "its methods), or given code was changed. The grader runs nn.Module's own and the "
            "stub's given code, whatever your file holds: write only inside YOUR CODE HERE"
        )
    if shipped and not pinned:
        raise Mistake(
            f"{what}: as you wrote it the layer looks up W[ids], but only through code outside "
            "the functions stage 'embedding' owns (an nn.Module method your class overrides, "
            "or changed given code), which the grader replaces by its own: put the lookup in "
            "__init__ and forward themselves"
        )
    verdict_of(test_lookup_every_shape, learner, seed, gen, devices)
