"""Stage 'neighbours': cosine similarity, nearest neighbours, the analogy.

Chapter: "Measuring similarity: cosine" and "Vector arithmetic and the famous analogy". The
reference is PyTorch's ``F.cosine_similarity``, ranked by hand.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's usual name)

pytestmark = pytest.mark.neighbours


def ranked(E: torch.Tensor, query: torch.Tensor, exclude: list[int], k: int) -> list[int]:
    """The ``k`` rows of ``E`` nearest to ``query`` by cosine, ``exclude`` left out."""
    sims = F.cosine_similarity(E, query.unsqueeze(0), dim=-1)
    sims[exclude] = -2.0  # below any cosine
    return sims.argsort(descending=True, stable=True)[:k].tolist()


def test_cosine_similarity_matches_pytorch(embeddings):
    a, b = torch.randn(6, 16), torch.randn(6, 16)
    out = embeddings.cosine_similarity(a, b)
    expected = F.cosine_similarity(a, b, dim=-1)  # (6,)
    assert out.shape == expected.shape, (
        f"expected one cosine per pair, shape {tuple(expected.shape)}, got {tuple(out.shape)}"
    )
    torch.testing.assert_close(out, expected, msg="cosine = a.b / (|a| |b|), over the last dim")
    E, q = torch.randn(10, 16), torch.randn(16)
    out = embeddings.cosine_similarity(E, q)
    assert tuple(out.shape) == (10,), (
        f"(V, d) against (d,) should broadcast to one score per row, (10,); got {tuple(out.shape)}"
    )
    torch.testing.assert_close(out, F.cosine_similarity(E, q.unsqueeze(0), dim=-1))


def test_lengths_cancel(embeddings):
    a, b = torch.randn(8), torch.randn(8)
    cos = embeddings.cosine_similarity
    torch.testing.assert_close(
        cos(3.0 * a, b),
        cos(a, b),
        msg="a token 3 times as loud that points the same way scores the same",
    )
    torch.testing.assert_close(cos(a, 2.5 * a), torch.tensor(1.0), msg="same direction: 1")
    torch.testing.assert_close(cos(a, -a), torch.tensor(-1.0), msg="opposite directions: -1")
    perpendicular = cos(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 3.0]))
    torch.testing.assert_close(perpendicular, torch.tensor(0.0), msg="perpendicular: 0")


def test_a_zero_vector_scores_zero_not_nan(embeddings):
    out = embeddings.cosine_similarity(torch.zeros(4), torch.randn(4))
    assert not torch.isnan(out), (
        "expected 0 for a zero vector, got nan: 0 / 0. Clamp the lengths from below by eps"
    )
    assert out.item() == 0.0, f"expected 0 for a zero vector, got {out.item()}"


def test_neighbours_rank_by_cosine_and_leave_out_the_token(embeddings):
    E = torch.randn(30, 8)
    ids, sims = embeddings.cosine_neighbours(E, 7, k=5)
    expected = ranked(E, E[7], exclude=[7], k=5)
    assert ids.dtype == torch.long and tuple(ids.shape) == (5,), (
        f"expected ids as a LongTensor of shape (5,), got {ids.dtype} {tuple(ids.shape)}"
    )
    assert 7 not in ids.tolist(), "token 7 is its own nearest row: leave it out of its neighbours"
    assert ids.tolist() == expected, (
        f"expected the 5 nearest rows, most similar first: {expected}; got {ids.tolist()}"
    )
    torch.testing.assert_close(sims, F.cosine_similarity(E[expected], E[7].unsqueeze(0), dim=-1))


def test_a_copy_of_the_token_still_counts(embeddings):
    E = torch.randn(12, 6)
    E[9] = 2.0 * E[4]  # the same direction, twice as long
    ids, sims = embeddings.cosine_neighbours(E, 4, k=1)
    assert ids.tolist() == [9], (
        f"row 9 points exactly where row 4 does, so it is token 4's nearest neighbour; got "
        f"{ids.tolist()} (the token is left out by its index, not by its value)"
    )
    torch.testing.assert_close(sims, torch.tensor([1.0]))


def test_a_query_vector_leaves_nothing_out(embeddings):
    E = torch.randn(12, 6)
    ids, _ = embeddings.cosine_neighbours(E, E[3].clone(), k=2)
    assert ids.tolist()[0] == 3, (
        f"a query vector (d,) equal to row 3 has row 3 as its nearest row; got {ids.tolist()}: "
        "only a token index is left out of its own neighbours"
    )


def test_analogy_needs_the_exclusion(embeddings):
    # A toy table in 3-d, like the chapter's map: king is long, so it dominates b - a + c.
    words = ["man", "woman", "king", "queen", "apple", "river"]
    E = torch.tensor(
        [
            [1.0, 0.0, 0.0],  # man
            [0.0, 1.0, 0.0],  # woman
            [3.0, 0.0, 3.0],  # king
            [0.0, 3.0, 3.0],  # queen
            [0.0, 0.0, -1.0],  # apple
            [-1.0, -1.0, 0.0],  # river
        ]
    )
    man, woman, king = 0, 1, 2
    ids, _ = embeddings.analogy(E, man, king, woman, k=1)
    got = words[ids[0]]
    assert got == "queen", (
        f"man : king :: woman : ? should be queen with the inputs excluded, got {got}"
    )
    ids, _ = embeddings.analogy(E, man, king, woman, k=1, exclude_inputs=False)
    got = words[ids[0]]
    assert got == "king", (
        f"without exclude_inputs the nearest row to king - man + woman is king itself here, "
        f"got {got}: leave a, b and c out only when exclude_inputs is true"
    )


def test_king_minus_man_plus_woman_on_glove(vectors):
    try:
        words = vectors.load_glove(50_000)
    except ImportError as error:
        pytest.skip(f"GloVe is not installed ({error})")
    found = [word for word, _ in words.analogy("man", "king", "woman", k=1)]
    assert found == ["queen"], f"GloVe's man : king :: woman : ? is queen, got {found}"
