# Generated from lumen/live.py by `make stubs`: given code, nothing to write here.
# Learners: read it, run it, no need to change it. Course staff: edit lumen/live.py.
"""What the command line, the figures and the page share: whose code runs, and what it runs on.

``load_impl("exercises")`` gathers one package's modules (the learner's, or the course's
reference), so every figure and every number of ``python -m exercises COMMAND`` comes from
that package's own functions. The rest is the chapter's material: the models the calculator
knows (GPT-2's four sizes and Llama 3 8B), the toy vocabulary of the chapter's first figure,
its hand-placed 2-D word map, and the GloVe words the projections show.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: The environment variable the visible tests read too (exercises/tests/conftest.py).
ENV_VAR = "LUMEN_IMPL"


def impl_package(option: str | None, default: str, environ: Mapping[str, str] = os.environ) -> str:
    """The package whose code runs: ``--impl``, else ``$LUMEN_IMPL``, else ``default``.

    The same order as the visible tests' ``--impl``; ``default`` is the package this command
    belongs to (the learner's ``exercises`` in a handout).
    """
    return option or environ.get(ENV_VAR) or default


@dataclass(frozen=True)
class Impl:
    """One package's modules: ``embeddings``, ``params`` and ``gpt2`` hold its stages' code."""

    package: str
    embeddings: ModuleType
    params: ModuleType
    tokenizer: ModuleType
    vectors: ModuleType
    explore: ModuleType


def load_impl(package: str) -> Impl:
    """The modules of ``package`` (``"lumen"``, ``"exercises"`` or another with the same files).

    Raises:
        ImportError: ``package`` cannot be imported; the message says from where to run.
    """
    try:
        modules = {
            name: importlib.import_module(f"{package}.{name}")
            for name in ("embeddings", "params", "tokenizer", "vectors", "explore")
        }
    except ModuleNotFoundError as error:
        if error.name and (error.name == package or error.name.startswith(f"{package}.")):
            raise ImportError(
                f"cannot import {error.name}: run this from the folder that holds {package}/"
            ) from None
        raise
    return Impl(package=package, **modules)


def stub_first(call: Callable[[], object]) -> None:
    """``call()``: the package's own functions on ``tiny_words``, before GloVe loads, so that a
    stage not written yet says so at once (its stub's NotImplementedError goes on, to
    ``sections.section``'s one line). Anything else it raises is left to the call on GloVe."""
    try:
        call()
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001, S110 - the real call shows it, on the real words
        pass


def tiny_words(impl: Impl) -> Any:
    """Four words with one-hot rows, in ``impl``'s WordVectors: what ``stub_first`` runs on."""
    import torch

    return impl.vectors.WordVectors(["w0", "w1", "w2", "w3"], torch.eye(4))


# The calculator's models. GPT-2's sizes are params.PRESETS; Llama 3 8B is counted here, since
# its blocks are not GPT-2's (grouped-query attention, a SwiGLU MLP, RMSNorm, rotary positions
# instead of a position table), so count_params cannot count them.

#: Llama 3 8B's shape (Meta's config.json): untied, 8 key/value heads of 32, d_ff 14,336.
LLAMA3_8B: dict[str, int] = {
    "vocab_size": 128256, "d_model": 4096, "n_layers": 32, "n_heads": 32, "n_kv_heads": 8,
    "d_ff": 14336, "n_ctx": 8192,
}
#: Whether each model ties its output layer to the token embedding, as published.
PUBLISHED_TIED: dict[str, bool] = {
    "gpt2": True, "gpt2-medium": True, "gpt2-large": True, "gpt2-xl": True, "llama3-8b": False,
}
MODELS: tuple[str, ...] = tuple(PUBLISHED_TIED)


def llama_count(params: ModuleType, tied: bool = False, **shape: int) -> Any:
    """Llama 3 8B's parameters (or another shape of its kind) as a ``params.ParamCount``.

    Per block: q and o projections d x d, k and v projections d x (d / heads x kv_heads), no
    biases; gate, up and down projections d x d_ff; two RMSNorms (a scale each, d numbers).
    No position table (rotary positions have no parameters), a final RMSNorm, and a V x d head
    unless tied. ``llama_count(params).total == 8_030_261_248``.
    """
    s = {**LLAMA3_8B, **shape}
    V, d, N = s["vocab_size"], s["d_model"], s["n_layers"]
    kv = d // s["n_heads"] * s["n_kv_heads"]  # (d,) -> (kv,): grouped-query attention
    counts = {
        "token_embedding": V * d,
        "position_embedding": 0,
        "attention": N * (2 * d * d + 2 * d * kv),
        "mlp": N * 3 * d * s["d_ff"],
        "layer_norms": N * 2 * d,
        "final_norm": d,
        "lm_head": 0 if tied else V * d,
    }
    return params.ParamCount(**counts, total=sum(counts.values()))


def model_shape(impl: Impl, name: str) -> dict[str, int]:
    """The shape of model ``name``: vocab_size, d_model, n_layers, n_ctx (and Llama's extras)."""
    if name == "llama3-8b":
        return dict(LLAMA3_8B)
    if name not in impl.params.PRESETS:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    return {k: v for k, v in impl.params.PRESETS[name].items() if k != "n_heads"}


def count_model(impl: Impl, name: str, tied: bool | None = None) -> Any:
    """Model ``name``'s ``ParamCount`` by ``impl``'s ``count_params`` (``tied=None``: as
    published). Llama 3 8B is counted by ``llama_count``, in ``impl``'s ParamCount."""
    tied = PUBLISHED_TIED[name] if tied is None else tied
    if name == "llama3-8b":
        return llama_count(impl.params, tied)
    return impl.params.count_params(**model_shape(impl, name), tied=tied)


# The chapter's toy material.

#: The chapter's five-token vocabulary, and a sentence written in it (the first figure).
TOY_VOCAB: tuple[str, ...] = ("the", "cat", "sat", "on", "mat")
TOY_SENTENCE: tuple[str, ...] = ("the", "cat", "sat", "on", "the", "mat")
TOY_D = 8  # the toy table's width: small enough to read every number

#: The chapter's hand-placed 2-D word map: thirty words, six to a cluster, each cluster in a
#: direction of its own (in 2-d a cosine sees only directions). king - man + woman = queen.
TOY_MAP: dict[str, dict[str, tuple[float, float]]] = {
    "animals": {"cat": (4.0, 1.0), "dog": (4.3, 1.4), "rabbit": (3.4, 0.6),
                "horse": (4.6, 2.1), "cow": (4.9, 1.8), "mouse": (3.0, 0.3)},
    "people": {"man": (1.0, 3.0), "woman": (-0.2, 3.1), "boy": (0.9, 2.1),
               "girl": (-0.1, 2.2), "king": (1.8, 5.0), "queen": (0.6, 5.1)},
    "countries": {"france": (-3.5, 2.5), "germany": (-3.0, 2.9), "italy": (-3.8, 2.0),
                  "spain": (-4.1, 1.6), "japan": (-2.5, 3.4), "china": (-2.1, 3.8)},
    "food": {"bread": (-3.0, -2.4), "cheese": (-3.5, -2.0), "rice": (-2.4, -3.0),
             "soup": (-2.8, -2.7), "apple": (-1.9, -3.3), "butter": (-3.8, -1.6)},
    "vehicles": {"car": (2.5, -3.0), "truck": (2.9, -2.6), "bus": (2.1, -3.3),
                 "train": (1.7, -3.7), "bicycle": (3.3, -2.1), "boat": (3.7, -1.6)},
}
TOY_ANALOGY: tuple[str, str, str] = ("man", "king", "woman")  # the chapter's example
TOY_PAIRS: tuple[tuple[str, str], ...] = (("cat", "dog"), ("cat", "car"), ("king", "bread"))


def toy_map() -> tuple[list[str], list[str], list[tuple[float, float]]]:
    """The map's words, each word's cluster, and its (x, y), in one order."""
    words, clusters, xy = [], [], []
    for cluster, members in TOY_MAP.items():
        for word, point in members.items():
            words.append(word)
            clusters.append(cluster)
            xy.append(point)
    return words, clusters, xy


#: GloVe words for the projections: six clusters of eight, all among the 50,000 most frequent.
GLOVE_CLUSTERS: dict[str, tuple[str, ...]] = {
    "animals": ("cat", "dog", "rabbit", "horse", "cow", "mouse", "sheep", "pig"),
    "royalty": ("king", "queen", "prince", "princess", "throne", "royal", "duke", "emperor"),
    "countries": ("france", "germany", "italy", "spain", "japan", "china", "brazil", "canada"),
    "vehicles": ("car", "truck", "bus", "train", "bicycle", "boat", "plane", "motorcycle"),
    "food": ("bread", "cheese", "rice", "soup", "apple", "butter", "meat", "potatoes"),
    "numbers": ("two", "three", "four", "five", "six", "seven", "eight", "nine"),
}
