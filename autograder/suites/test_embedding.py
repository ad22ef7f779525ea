"""Hidden tests, stage 'embedding': the Embedding module is a V x d Parameter and a row lookup.

Compared with lumen on fresh seeded inputs; exact (torch.equal) because a lookup does no
arithmetic. Every failure says what was expected and the likely mistake, in the chapter's words.
"""

from __future__ import annotations

import ast

import torch

from autograder.feedback import (
    Mistake,
    expect_error,
    expect_tensor,
    first_difference,
    unwrap,
    unwrap_meta,
)
from lumen import embeddings as ref

STAGE = "embedding"
MODULE = "embeddings"
SHAPES = {(): "a single id (0-D)", (7,): "a sequence (1-D)", (3, 5): "a batch (2-D)",
          (2, 3, 4): "a 3-D block of ids"}


def _reference(weight: torch.Tensor, ids: torch.Tensor, scale: bool = False) -> torch.Tensor:
    layer = ref.Embedding(weight.shape[0], weight.shape[1], scale=scale)
    with torch.no_grad():
        layer.weight.copy_(weight)
    return layer.to(weight.dtype)(ids).detach()


def test_weight_is_a_parameter(learner, seed):
    """weight is a registered nn.Parameter of shape (vocab_size, d_model)"""
    V, d = 11, 6
    built = unwrap(learner.call("embedding_build", seed=seed, vocab_size=V, d_model=d),
                   f"Embedding({V}, {d})", MODULE)
    if not built["has_weight"]:
        raise Mistake("your Embedding has no attribute `weight`: the whole layer is the V x d "
                      "matrix self.weight")
    if built["weight_type"] != "Parameter" or not built["registered"]:
        raise Mistake(
            f"self.weight is a {built['weight_type']} that .parameters() does not list: wrap it "
            "in nn.Parameter(...) so that optimisers, .to() and state_dict see it "
            f"(parameters found: {[p[0] for p in built['parameters']] or 'none'})"
        )
    shape = tuple(built["weight"].shape)
    if shape != (V, d):
        raise Mistake(f"weight has shape {shape}, expected (vocab_size, d_model) = {(V, d)}: "
                      "one row per token, d numbers per row")
    if not built["requires_grad"]:
        raise Mistake("weight does not require grad: the table is learned, it must get gradients")


def test_lookup_every_shape(learner, seed, gen, devices):
    """forward(ids) is weight[ids] exactly, for 0-D, 1-D, 2-D and 3-D ids, on every device"""
    V, d = 23, 5
    weight = torch.randn(V, d, generator=gen)
    for shape, name in SHAPES.items():
        ids = torch.randint(0, V, shape, generator=gen)
        expected = _reference(weight, ids)
        for device in devices:
            outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                                   weight=weight, ids=ids, device=device)
            what = f"Embedding({V}, {d}) on {name}, shape {tuple(shape)}, on {device}"
            out = expect_tensor(unwrap(outcome, what, MODULE)["out"], what, device=device)
            if tuple(out.shape) != tuple(expected.shape):
                raise Mistake(
                    f"{what}: output shape {tuple(out.shape)}, expected {tuple(expected.shape)} = "
                    "ids.shape + (d_model,): every id becomes one row, whatever the ids' shape"
                )
            if not torch.equal(out, expected):
                where = first_difference(out, expected)
                raise Mistake(f"{what}: the rows differ from weight[ids] {where}; "
                              "a lookup copies rows, it does no arithmetic")


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
    if "cuda" not in devices:  # no GPU here: the meta device still catches a hard-coded device
        weight = torch.randn(V, d, generator=gen)
        outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                               weight=weight, ids=ids, device="meta")
        what = f"Embedding({V}, {d}) with weight and ids on the meta device"
        out = expect_tensor(unwrap_meta(outcome, what, MODULE)["out"], what, device="meta")
        if tuple(out.shape) != (2, 3, d):
            raise Mistake(f"{what}: shape {tuple(out.shape)}, expected {(2, 3, d)}")


def test_out_of_range_ids_are_refused(learner, seed, gen):
    """ids outside [0, V) raise IndexError naming the id and V; negative ids are not wrapped"""
    V, d = 17, 3
    weight = torch.randn(V, d, generator=gen)
    cases = [(-1, "a negative id (-1): plain indexing would silently return the last row"),
             (-V, f"a negative id (-{V}): plain indexing would silently return row 0"),
             (V, f"id {V}, one past the last row (ids go from 0 to {V - 1})")]
    cases.append((V + 3, "a single id (a 0-D tensor) past the last row"))
    for n, (bad, why) in enumerate(cases):
        ids = torch.randint(0, V, (2, 4), generator=gen)
        ids[1, int(torch.randint(0, 4, (1,), generator=gen))] = bad
        if n == len(cases) - 1:
            ids = torch.tensor(bad)  # one id, no batch: the check must not skip it
        outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                               weight=weight, ids=ids)
        what = f"Embedding({V}, {d}) on ids containing {bad}"
        error = expect_error(outcome, what, ("IndexError",), why, MODULE)
        if str(bad) not in error["message"] or str(V) not in error["message"]:
            raise Mistake(
                f"{what} raised IndexError({error['message']!r}); the message should name the "
                f"offending id ({bad}) and the vocabulary size ({V}), so the learner can find it"
            )


def test_non_integer_ids_are_refused(learner, seed, gen):
    """float and bool ids raise TypeError: ids are labels, not quantities"""
    V, d = 9, 3
    weight = torch.randn(V, d, generator=gen)
    for ids, why in (
        (torch.tensor([1.0, 2.0]), "float ids are quantities, but token ids are labels: refuse "
         "them rather than truncate 2.7 to 2"),
        (torch.tensor([True, False, True]), "bool ids would be read as a mask (rows 0 and 2), "
         "not as ids"),
    ):
        outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                               weight=weight, ids=ids)
        expect_error(outcome, f"Embedding({V}, {d}) on {ids.dtype} ids", ("TypeError",), why,
                     MODULE)


def test_integer_dtypes_accepted(learner, seed, gen):
    """int32, int16 and uint8 ids give the same rows as int64 ids"""
    V, d = 120, 4
    weight = torch.randn(V, d, generator=gen)
    ids = torch.randint(0, V, (3, 4), generator=gen)
    expected = _reference(weight, ids)
    for dtype in (torch.int32, torch.int16, torch.uint8):
        outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                               weight=weight, ids=ids.to(dtype))
        what = f"Embedding({V}, {d}) on {dtype} ids"
        out = expect_tensor(unwrap(outcome, what, MODULE)["out"], what, like=expected)
        if not torch.equal(out, expected):
            raise Mistake(f"{what}: rows differ from the int64 lookup "
                          f"{first_difference(out, expected)}")


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
    expected = _reference(weight, ids, scale=True)
    outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                           weight=weight, ids=ids, scale=True)
    what = f"Embedding({V}, {d}, scale=True)(ids)"
    out = expect_tensor(unwrap(outcome, what, MODULE)["out"], what, like=expected)
    if torch.allclose(out, expected * d**0.5):
        raise Mistake(f"{what} is scaled by sqrt(d_model) twice: forward returns the looked-up "
                      "rows through self.scale_output(...), which does the scaling; do not "
                      "scale in forward yourself")
    if not torch.equal(out, expected):
        raise Mistake(f"{what}: differs from scale_output(weight[ids]) "
                      f"{first_difference(out, expected)}")


BUILTINS = {"embedding", "Embedding", "embedding_bag", "EmbeddingBag"}


def _static_uses(source: str) -> set[str]:
    """Names of torch's embedding built-ins referenced in the learner's code (not in comments)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in BUILTINS:
            found.add(f"{ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
            found |= {f"from {node.module} import {a.name}" for a in node.names
                      if a.name in BUILTINS}
    return found


def test_no_builtin_embedding(learner, seed, gen, grading):
    """the lookup is written by hand: no nn.Embedding, no F.embedding"""
    V, d = 8, 3
    weight = torch.randn(V, d, generator=gen)
    ids = torch.randint(0, V, (4,), generator=gen)
    outcome = learner.call("embedding_forward", seed=seed, vocab_size=V, d_model=d,
                           weight=weight, ids=ids)
    what = f"Embedding({V}, {d})(ids)"
    result = unwrap(outcome, what, MODULE)
    out = expect_tensor(result["out"], what)
    if not isinstance(out, torch.Tensor) or not torch.equal(out, _reference(weight, ids)):
        raise Mistake(f"{what} does not return weight[ids] yet (see the lookup check), so "
                      "there is no lookup to judge here")
    used = sorted(set(result["calls"]) & BUILTINS)
    try:
        static = _static_uses(grading.files.get(f"{MODULE}.py", ""))
    except SyntaxError:
        static = set()
    if used or static:
        found = ", ".join(sorted({*used, *static}))
        raise Mistake(f"your Embedding uses PyTorch's own embedding ({found}): the point of the "
                      "stage is that the layer is just a matrix and forward is weight[ids]; "
                      "write that lookup yourself")
