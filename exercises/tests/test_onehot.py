"""Stage 'onehot': a one-hot vector times E selects a row (chapter: "One-hot encoding").

The references are PyTorch's ``F.one_hot`` and ``F.embedding``.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's usual name)

pytestmark = pytest.mark.onehot


def test_one_hot_matches_pytorch(embeddings):
    ids = torch.randint(0, 10, (4, 5))
    out = embeddings.one_hot(ids, 10)
    expected = F.one_hot(ids, num_classes=10).float()  # (4, 5, 10)
    assert out.dtype == torch.float32, f"expected float32 by default, got {out.dtype}"
    assert out.shape == expected.shape, (
        f"expected shape (..., V) = {tuple(expected.shape)}, got {tuple(out.shape)}"
    )
    assert torch.equal(out, expected), "expected a single 1 at each id's position, zeros elsewhere"


def test_num_classes_is_given_not_guessed(embeddings):
    ids = torch.tensor([0, 2])  # a batch that lacks the vocabulary's last tokens
    out = embeddings.one_hot(ids, 5)
    assert tuple(out.shape) == (2, 5), (
        f"expected (2, 5): a vocabulary of 5 tokens gives vectors of length 5 whatever the "
        f"batch holds; got {tuple(out.shape)} (was the length guessed from ids.max()?)"
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_one_hot_dtype(embeddings, dtype):
    out = embeddings.one_hot(torch.tensor([[3, 1]]), 4, dtype=dtype)
    assert out.dtype == dtype, f"expected dtype {dtype}, got {out.dtype}"
    assert torch.equal(out, F.one_hot(torch.tensor([[3, 1]]), 4).to(dtype))


def test_one_hots_are_neutral(embeddings):
    vocab = ["the", "cat", "sat", "on", "mat"]
    onehots = embeddings.one_hot(torch.arange(len(vocab)), len(vocab))  # (5, 5)
    dots = onehots @ onehots.T  # every pair's dot product
    assert torch.equal(dots, torch.eye(len(vocab))), (
        "expected every one-hot to have length 1 and every pair to be orthogonal (dot product "
        f"0: no token is accidentally close to another); the dot products are\n{dots}"
    )


def test_embed_via_onehot_selects_rows(embeddings):
    weight = torch.randn(10, 4)  # E, (V, d)
    ids = torch.randint(0, 10, (2, 3))
    out = embeddings.embed_via_onehot(weight, ids)
    expected = F.embedding(ids, weight)  # (2, 3, 4)
    assert out.shape == expected.shape, (
        f"expected shape (..., d) = {tuple(expected.shape)}, got {tuple(out.shape)}"
    )
    assert torch.equal(out, expected), (
        "expected one_hot(ids) @ E to be exactly the rows E[ids]: all the zeros contribute "
        f"nothing and the single 1 copies its row; largest difference "
        f"{(out - expected).abs().max().item():.3g}"
    )


def test_embed_via_onehot_keeps_the_weights_dtype(embeddings):
    weight = torch.randn(7, 3, dtype=torch.float64)
    ids = torch.tensor([6, 0, 6])
    out = embeddings.embed_via_onehot(weight, ids)
    assert out.dtype == torch.float64, (
        f"expected the weight's dtype, float64, got {out.dtype}: build the one-hots in "
        "weight.dtype before multiplying"
    )
    assert torch.equal(out, weight[ids]), "expected rows 6, 0 and 6 of the weight"


def test_gradient_is_the_same_as_the_lookups(embeddings):
    weight = torch.randn(8, 5, requires_grad=True)
    ids = torch.tensor([[2, 2, 7], [0, 2, 5]])
    embeddings.embed_via_onehot(weight, ids).sum().backward()
    reference = weight.detach().clone().requires_grad_()
    F.embedding(ids, reference).sum().backward()
    assert weight.grad is not None, "no gradient reached the weight: keep it in the graph"
    assert torch.equal(weight.grad, reference.grad), (
        "the slow route should train the table exactly as the lookup does: expected gradient "
        f"rows {reference.grad[:, 0].tolist()}, got {weight.grad[:, 0].tolist()}"
    )


def test_one_hot_is_written_by_hand(embeddings, rules, your_files):
    out = embeddings.one_hot(torch.tensor([2, 0]), 3)
    assert torch.equal(out, torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])), (
        "expected one_hot([2, 0], 3) to be [[0, 0, 1], [1, 0, 0]]"
    )
    findings = rules.check(your_files, "onehot")  # the grader's own check of your source
    if findings:
        pytest.fail("the grader reads your files and would refuse these lines (see 'Rules' at "
                    "the top of embeddings.py):\n" + rules.explain(findings, limit=10, sep="\n"),
                    pytrace=False)
