"""lumen/vectors.py on real word vectors (GloVe 6B, 50-d) against the chapter's claims.

- the famous analogy: man : king :: woman : queen, but only with the inputs excluded; without
  the exclusion the nearest word is king itself (Nissim et al., 2020),
- cat's neighbours include dog,
- the answers against a brute-force search in numpy over the same table.

Only the 50,000 most frequent words are loaded, to keep the tests fast.
"""

from __future__ import annotations

import numpy as np
import pytest

from lumen.vectors import WordVectors, load_glove

pytestmark = pytest.mark.neighbours


@pytest.fixture(scope="module")
def glove() -> WordVectors:
    return load_glove(50_000)


def brute_force(glove: WordVectors, query: np.ndarray, k: int, exclude: set[str]) -> list[str]:
    """The ``k`` words whose vectors have the largest cosine with ``query``, in float64."""
    E = glove.E.double().numpy()
    scores = (E / np.linalg.norm(E, axis=1, keepdims=True)) @ (query / np.linalg.norm(query))
    order = np.argsort(-scores, kind="stable")
    return [glove.words[i] for i in order if glove.words[i] not in exclude][:k]


def test_the_table(glove: WordVectors) -> None:
    assert glove.E.shape == (50_000, 50)
    assert len(glove.words) == 50_000 and glove.words[0] == "the"  # by frequency
    assert glove.words[glove.id("king")] == "king"
    with pytest.raises(KeyError, match="not among"):
        glove.id("notawordatallxyz")


def test_man_is_to_king_as_woman_is_to_queen(glove: WordVectors) -> None:
    answers = glove.analogy("man", "king", "woman", k=5)
    assert answers[0][0] == "queen", answers
    assert not {"man", "king", "woman"} & {word for word, _ in answers}


def test_without_the_exclusion_the_answer_is_king_itself(glove: WordVectors) -> None:
    answers = glove.analogy("man", "king", "woman", k=5, exclude_inputs=False)
    assert answers[0][0] == "king", answers
    assert "queen" in [word for word, _ in answers]


def test_cat_is_near_dog(glove: WordVectors) -> None:
    neighbours = glove.neighbours("cat", k=10)
    words = [word for word, _ in neighbours]
    assert "dog" in words and "cat" not in words, neighbours
    sims = [sim for _, sim in neighbours]
    assert sims == sorted(sims, reverse=True)


@pytest.mark.parametrize(
    "a, b, c", [("man", "king", "woman"), ("paris", "france", "rome"), ("good", "better", "bad")]
)
def test_analogies_match_brute_force(glove: WordVectors, a: str, b: str, c: str) -> None:
    E = glove.E.double().numpy()
    query = E[glove.id(b)] - E[glove.id(a)] + E[glove.id(c)]
    words = [word for word, _ in glove.analogy(a, b, c, k=5)]
    assert words == brute_force(glove, query, 5, exclude={a, b, c})


def test_neighbours_match_brute_force(glove: WordVectors) -> None:
    E = glove.E.double().numpy()
    words = [word for word, _ in glove.neighbours("cat", k=10)]
    assert words == brute_force(glove, E[glove.id("cat")], 10, exclude={"cat"})
