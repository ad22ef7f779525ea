"""Stage 'embedding': a V x d Parameter and a row lookup (chapter: "Dense embeddings").

The reference here is PyTorch's own ``F.embedding``, which is the same lookup, ``E[ids]``.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's usual name)
from torch import nn

pytestmark = pytest.mark.embedding


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


@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)], ids=["0-d", "1-d", "3-d"])
def test_ids_of_any_shape(embeddings, shape):
    emb = embeddings.Embedding(10, 3)
    ids = torch.randint(0, 10, shape)
    out = emb(ids)
    assert tuple(out.shape) == (*shape, 3), (
        f"ids of shape {shape} should give {(*shape, 3)} (one d-vector per id), "
        f"got {tuple(out.shape)}"
    )
    assert torch.equal(out, F.embedding(ids, emb.weight)), f"wrong rows for ids of shape {shape}"


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
    [torch.tensor([1.0, 2.0]), torch.tensor([True, False]), [1, 2]],
    ids=["float", "bool", "list"],
)
def test_check_ids_refuses_what_is_not_integer_ids(embeddings, ids):
    try:
        embeddings.check_ids(ids, 10)
    except TypeError:
        return
    pytest.fail(
        f"check_ids accepted {ids!r}; expected a TypeError: ids are labels, not quantities, so "
        "only an integer tensor will do (a bool tensor would index as a mask)"
    )


@pytest.mark.parametrize("bad", [-1, 10])
def test_ids_outside_the_vocabulary_raise(embeddings, bad):
    emb = embeddings.Embedding(10, 4)
    try:
        emb(torch.tensor([[2, bad, 3]]))
    except IndexError as error:
        assert str(bad) in str(error), (
            f"the IndexError should name the offending id {bad}; it says: {error}"
        )
        return
    pytest.fail(
        f"Embedding(10, 4) looked up id {bad}; expected an IndexError: valid ids are 0 to 9 "
        "(plain indexing would count -1 from the end and hand back the last row)"
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
