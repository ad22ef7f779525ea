"""lumen: the companion code of "The Embedding Layer", and the reference solution it grades.

Modules: ``embeddings`` (the layer, the one-hot identity, cosine neighbours, the analogy,
initialisation), ``params`` (the parameter calculator), ``gpt2`` (a GPT-2 with weight tying),
``tokenizer`` (GPT-2's tokenizer, offline), ``vectors`` (GloVe word vectors), ``stages``.
"""

from .embeddings import (
    Embedding,
    analogy,
    cosine_neighbours,
    cosine_similarity,
    embed_via_onehot,
    expected_dot_std,
    one_hot,
)
from .gpt2 import GPT2, GPT2Config
from .params import ParamCount, count_params

__all__ = [
    "GPT2",
    "Embedding",
    "GPT2Config",
    "ParamCount",
    "analogy",
    "cosine_neighbours",
    "cosine_similarity",
    "count_params",
    "embed_via_onehot",
    "expected_dot_std",
    "one_hot",
]
