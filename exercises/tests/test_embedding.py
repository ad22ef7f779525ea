"""Stage 'embedding': a V x d Parameter and a row lookup (chapter: "Dense embeddings").

The reference here is PyTorch's own ``F.embedding``, which is the same lookup, ``E[ids]``.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's usual name)
from torch import nn

pytestmark = pytest.mark.embedding

INTEGER_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


def test_weight_is_a_registered_v_by_d_parameter(embeddings):
    emb = embeddings.Embedding(11, 4)
    weight = getattr(emb, "weight", None)
    assert isinstance(weight, nn.Parameter), (
        f"expected emb.weight to be an nn.Parameter, got {type(weight).__name__}: a plain tensor "
        "is not learned (.parameters() and the optimiser never see it)"
    )
    assert tuple(weight.shape) == (11, 4), (
        f"expected weight of shape (V, d) = (11, 4), got {tuple(weight.shape)}: one row per token"
    )
    names = [name for name, _ in emb.named_parameters()]
    assert names == ["weight"], f"expected one registered Parameter, 'weight', got {names}"
    by_name = embeddings.Embedding(vocab_size=11, d_model=4)  # the stub's parameter names
    assert tuple(by_name.weight.shape) == (11, 4), (
        "Embedding(vocab_size=11, d_model=4) should build the same (11, 4) table: keep the "
        "stub's parameter names, vocab_size and d_model"
    )
    for std in (None, 0.3):
        kept = embeddings.Embedding(11, 4, std=std).std
        assert kept == std, (
            f"Embedding(11, 4, std={std}).std is {kept!r}: the given lines store std as it "
            "came (None means 1/sqrt(d_model), worked out by reset_parameters): leave it")


def test_forward_is_the_row_lookup(embeddings):
    emb = embeddings.Embedding(50, 8)
    ids = torch.randint(0, 50, (3, 7))  # (batch, seq)
    out = emb(ids)
    expected = F.embedding(ids, emb.weight)  # (3, 7, 8): row ids[b, t] of the weight
    assert out.shape == expected.shape, (
        f"expected shape (batch, seq, d) = {tuple(expected.shape)}, got {tuple(out.shape)}"
    )
    assert torch.equal(out, expected), (
        "expected out[b, t] to be row ids[b, t] of weight, exactly (a lookup does no arithmetic); "
        f"largest difference {(out - expected).abs().max().item():.3g}"
    )


@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4), (4, 0), (1, 4), (3, 1)],
                         ids=["0-d", "1-d", "3-d", "empty", "a batch of one", "length one"])
def test_ids_of_any_shape(embeddings, shape):
    emb = embeddings.Embedding(10, 3)
    ids = torch.randint(0, 10, shape)
    out = emb(ids)
    assert tuple(out.shape) == (*shape, 3), (
        f"ids of shape {shape} should give {(*shape, 3)} (one d-vector per id), "
        f"got {tuple(out.shape)}"
    )
    assert torch.equal(out, F.embedding(ids, emb.weight)), f"wrong rows for ids of shape {shape}"


def test_forward_leaves_the_ids_as_they_were(embeddings):
    emb = embeddings.Embedding(10, 3)
    ids = torch.tensor([[4, 0, 9], [2, 2, 7]])  # int64: ids.long() is ids itself, no copy
    before, version = ids.clone(), ids._version
    emb(ids)
    assert ids.shape == before.shape and torch.equal(ids, before), (
        f"forward changed the ids it was given: now {ids.tolist()}, was {before.tolist()}; "
        "work on new tensors (ids.long().reshape(-1)), never in place (ids.unsqueeze_(-1))"
    )
    assert ids._version == version, (
        "forward ran an in-place operation on the ids it was given (ids.long() of int64 ids "
        "is the same tensor): the caller goes on using them"
    )


def _looked_up(embeddings, id_dtypes, emb, ids, V, layout="contiguous"):
    """``emb(ids)`` for valid ids: a failure names what refused them, check_ids on its own or
    the lookup after it, and why, in the ids' own dtype."""
    what = f"{ids.dtype} ids ({layout}) of a {V}-row table, up to {int(ids.max())}"
    try:
        embeddings.check_ids(ids, V)
    except NotImplementedError:
        raise
    except Exception as error:  # PyTorch's own message does not say what to do: this does
        wrapped = id_dtypes.wraps(ids.dtype, V)
        pytest.fail(f"check_ids refused valid {what}: {type(error).__name__}: {error}\n" + (
            f"{wrapped}. Compare them as int64: ids.long() >= vocab_size" if wrapped else
            "Ids of every integer dtype are token ids: refuse only bool, float and complex "
            "ones (TypeError) and ids outside [0, vocab_size) (IndexError)"))
    try:
        return emb(ids)
    except NotImplementedError:
        raise
    except Exception as error:
        fixes = [id_dtypes.lookup(ids.dtype), "flatten them with reshape, not view (which "
                 "fails on non-contiguous ids)" if layout != "contiguous" else ""]
        pytest.fail(f"Embedding.forward raised {type(error).__name__} on valid {what}, which "
                    f"check_ids accepts, so the lookup refuses them: {error}\n"
                    + ("; ".join(f for f in fixes if f) or "look the rows up as "
                       "weight[ids.long()]"))


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_every_integer_dtype_and_layout(embeddings, id_dtypes, dtype, layout):
    emb = embeddings.Embedding(100, 4)
    ids = torch.randint(0, 100, (3, 5))
    if layout == "transposed":
        ids = ids.T.contiguous().T  # the same values, stored column by column
    out = _looked_up(embeddings, id_dtypes, emb, ids.to(dtype), 100, layout)
    assert torch.equal(out, F.embedding(ids, emb.weight)), (
        f"{dtype} ids ({layout}) should give the same rows as int64 ids: "
        + (id_dtypes.lookup(dtype) or "look the rows up as weight[ids.long()]"))


@pytest.mark.parametrize(("dtype", "V"), [(torch.uint8, 300), (torch.int8, 200),
                                          (torch.int16, 33_000)], ids=str)
def test_ids_at_the_edges_of_their_dtype(embeddings, id_dtypes, dtype, V):
    """Every value the ids' dtype holds is an id when the table is large enough."""
    emb = embeddings.Embedding(V, 3)
    top = torch.iinfo(dtype).max
    ids = torch.tensor([[top, 0], [top - 1, 5]], dtype=dtype)
    out = _looked_up(embeddings, id_dtypes, emb, ids, V)
    assert torch.equal(out, F.embedding(ids.long(), emb.weight)), (
        f"{dtype} ids up to {top} of a {V}-row table should give rows {top}, 0, {top - 1} and "
        "5: " + (id_dtypes.lookup(dtype) or "look the rows up as weight[ids.long()]"))


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
def test_output_keeps_the_weights_dtype_and_device(embeddings, other_device, dtype):
    emb = embeddings.Embedding(12, 4).to(dtype)
    ids = torch.tensor([[3, 11], [0, 3]])
    out = emb(ids)
    assert out.dtype == dtype, f"expected the weight's dtype {dtype}, got {out.dtype}"
    assert torch.equal(out, F.embedding(ids, emb.weight)), f"wrong rows in {dtype}"
    emb, ids = other_device.to(emb), other_device.to(ids)
    out = other_device.run(lambda: emb(ids))
    assert out.device.type == other_device.name and tuple(out.shape) == (2, 2, 4), (
        f"with the weight and the ids on {other_device.name}, the rows should come back there, "
        f"shape (2, 2, 4); got {out.device}, {tuple(out.shape)}: never create or move tensors "
        "to a hard-coded device (.cpu(), .to('cpu'), device='cpu')"
    )


def test_forward_returns_its_rows_through_scale_output(embeddings):
    emb = embeddings.Embedding(10, 4, scale=True)
    emb.scale_output = lambda x: x * 3.0  # a stand-in, to see that forward uses it
    ids = torch.tensor([1, 8, 1])
    out = emb(ids)
    assert torch.equal(out, F.embedding(ids, emb.weight) * 3.0), (
        "forward should return the looked-up rows through self.scale_output(rows), which does "
        "the optional scaling (stage 'init' writes it): do not scale in forward yourself"
    )


def test_the_chapters_example(embeddings, tokenizer):
    ids = torch.tensor([tokenizer.encode("The cat sat")])  # [[464, 3797, 3332]]
    emb = embeddings.Embedding(50257, 768)  # GPT-2 small's table
    out = emb(ids)
    assert tuple(out.shape) == (1, 3, 768), f"expected (1, 3, 768), got {tuple(out.shape)}"
    for t, token in enumerate(ids[0].tolist()):
        assert torch.equal(out[0, t], emb.weight[token]), (
            f"position {t} holds token {token}, so it should be row {token} of the weight"
        )


def test_same_id_same_vector_whatever_the_context(embeddings):
    emb = embeddings.Embedding(20, 6)
    out = emb(torch.tensor([[7, 3, 7], [1, 7, 2]]))  # "the river bank", "the bank approved"
    assert torch.equal(out[0, 0], out[0, 2]) and torch.equal(out[0, 0], out[1, 1]), (
        "token 7 appears three times and must get the same row each time: the lookup only "
        "receives the id, it cannot know the context"
    )


def test_repeated_ids_add_up_their_gradients(embeddings):
    emb = embeddings.Embedding(6, 3)
    ids = torch.tensor([[1, 1, 4], [1, 0, 0]])
    emb(ids).sum().backward()
    reference = emb.weight.detach().clone().requires_grad_()
    F.embedding(ids, reference).sum().backward()
    assert emb.weight.grad is not None, (
        "no gradient reached emb.weight: the output must be computed from the Parameter itself "
        "(no .detach(), no torch.tensor(...) copy, no .data)"
    )
    assert torch.equal(emb.weight.grad, reference.grad), (
        f"expected gradient rows {reference.grad[:, 0].tolist()} (id 1 used three times, id 0 "
        f"twice, 2, 3 and 5 never), got {emb.weight.grad[:, 0].tolist()}"
    )


@pytest.mark.parametrize(
    "ids",
    [torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0], dtype=torch.float16),
     torch.tensor([True, False]), torch.tensor([1 + 0j, 2 + 0j]), [1, 2]],
    ids=["float", "float16", "bool", "complex", "list"],
)
@pytest.mark.parametrize("through", ["check_ids", "forward"])
def test_check_ids_refuses_what_is_not_integer_ids(embeddings, ids, through):
    call = (lambda: embeddings.check_ids(ids, 10)) if through == "check_ids" else (
        lambda: embeddings.Embedding(10, 4)(ids))
    if not isinstance(ids, torch.Tensor):
        what, check = f"a {type(ids).__name__} of ids", (
            "check isinstance(ids, torch.Tensor) first, so that the TypeError says so")
    else:
        what, check = f"{ids.dtype} ids", (
            "ids.is_floating_point() is True for every float dtype, float16 and bfloat16 too"
            if ids.is_floating_point() else "ids.is_complex()" if ids.is_complex() else
            "ids.dtype == torch.bool: a bool tensor would index as a mask")
    try:
        call()
    except TypeError:
        return
    except Exception as error:  # noqa: BLE001 - the wrong kind of error is the finding
        pytest.fail(f"{through} raised {type(error).__name__} ({error}) for {what}, "
                    f"{ids!r}; expected a TypeError from check_ids: {check}")
    pytest.fail(
        f"{through} accepted {what}, {ids!r}; expected a TypeError from check_ids: {check}. "
        "Ids are labels, not quantities, so only an integer tensor will do"
    )


@pytest.mark.parametrize("bad", [-1, 10])
@pytest.mark.parametrize("through", ["forward", "check_ids", "check_ids by name"])
def test_ids_outside_the_vocabulary_raise(embeddings, bad, through):
    ids = torch.tensor([[2, bad, 3]])
    calls = {"forward": lambda: embeddings.Embedding(10, 4)(ids),
             "check_ids": lambda: embeddings.check_ids(ids, 10),
             "check_ids by name": lambda: embeddings.check_ids(ids=ids, vocab_size=10)}
    try:
        calls[through]()
    except IndexError as error:
        assert str(bad) in str(error) and "10" in str(error), (
            f"the IndexError should name the offending id {bad} and the vocabulary size 10; "
            f"it says: {error}"
        )
        return
    pytest.fail(
        f"{through} accepted id {bad} for a vocabulary of 10; expected an IndexError: valid ids "
        "are 0 to 9 (plain indexing would count -1 from the end and hand back the last row). "
        "check_ids itself must refuse it: forward refuses bad ids through check_ids"
    )


def test_the_lookup_is_written_by_hand(embeddings, rules, your_files):
    emb = embeddings.Embedding(6, 3)
    ids = torch.tensor([[4, 0, 4]])
    assert torch.equal(emb(ids), emb.weight[ids]), "expected forward(ids) to be weight[ids]"
    findings = rules.check(your_files, "embedding")  # the grader's own check of your source
    if findings:
        pytest.fail("the grader reads your files and would refuse these lines (see 'Rules' at "
                    "the top of embeddings.py):\n" + rules.explain(findings, limit=10, sep="\n"),
                    pytrace=False)


def test_given_code_is_left_as_it_is(embeddings, nn_module_overrides):
    """Given code is the grader's ("Given code" at the top of embeddings.py): it runs its own
    copy, so your Embedding must not change what nn.Module does, and RowLookup is as given."""
    layer = embeddings.Embedding(6, 3)
    table = torch.randn(6, 3)
    layer.load_state_dict({"weight": table})  # nn.Module's own methods, as the grader runs them
    ids = torch.tensor([[5, 0], [2, 5]])
    rows = layer.double()(ids)
    assert rows.dtype == torch.float64 and torch.equal(rows, table.double()[ids]), (
        "loaded with load_state_dict and converted with .double(), your layer does not look up "
        "the loaded rows in float64: nn.Module's own methods must work on it as on any module"
    )
    changed = nn_module_overrides(embeddings.Embedding)
    assert not changed, (
        f"your Embedding overrides {', '.join(changed)}, which nn.Module has: the grader "
        "replaces each with nn.Module's own (given code is the grader's), so your layer would "
        "not do there what it does here. Write only inside YOUR CODE HERE"
    )
    weight = torch.randn(6, 3, requires_grad=True)
    index = torch.tensor([4, 1, 4, 4])
    rows = embeddings.RowLookup.apply(weight, index)
    grad = torch.randn(4, 3)
    rows.backward(grad)
    assert torch.equal(rows.detach(), weight.detach()[index]) and torch.allclose(
        weight.grad, torch.zeros(6, 3).index_add_(0, index, grad)), (
        "RowLookup, given code, was changed: its rows are not weight[index] or their gradients "
        "do not add up. The grader runs the stub's own RowLookup: leave it as it is"
    )
