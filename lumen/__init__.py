"""lumen: the companion code of "The Embedding Layer", and the reference solution it grades.

Modules: ``embeddings`` (the layer, the one-hot identity, cosine neighbours, the analogy,
initialisation), ``params`` (the parameter calculator), ``gpt2`` (a GPT-2 with weight tying),
``tokenizer`` (GPT-2's tokenizer, offline), ``vectors`` (GloVe word vectors), ``stages``.

The names below load on first use, so ``import lumen.stages`` does not import torch (the
grader starts its worker before paying for that import).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Embedding": "embeddings",
    "analogy": "embeddings",
    "cosine_neighbours": "embeddings",
    "cosine_similarity": "embeddings",
    "embed_via_onehot": "embeddings",
    "expected_dot_std": "embeddings",
    "one_hot": "embeddings",
    "GPT2": "gpt2",
    "GPT2Config": "gpt2",
    "ParamCount": "params",
    "count_params": "params",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'lumen' has no attribute {name!r}")
