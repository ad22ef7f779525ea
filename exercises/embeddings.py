# Generated from lumen/embeddings.py by `make stubs`: do not edit this header.
# Learners: write your code only where it says YOUR CODE HERE, then run
#   pytest exercises -m <stage>
# Course staff: edit lumen/embeddings.py (the single source) and run `make stubs`.
"""The embedding layer: token ids in, dense vectors out.

Companion code for the chapter "The Embedding Layer". Read top to bottom:

1. ``Embedding``: a V x d matrix whose forward pass is a row lookup, ``E[ids]``.
2. ``one_hot`` and ``embed_via_onehot``: the slow way, proving that a one-hot vector times a
   matrix selects a row.
3. ``cosine_similarity``, ``cosine_neighbours`` and ``analogy``: measuring what the rows mean.
4. ``expected_dot_std``: why the rows start small.

Shapes use V for the vocabulary size and d for the embedding width (d_model).

Rules: the grader reads your source. Two stages ask you to write by hand what PyTorch already
has, so their built-ins are banned anywhere in your three files (embeddings.py, params.py,
gpt2.py), helpers included: stage 'embedding' bans nn.Embedding, F.embedding, torch.embedding,
F.embedding_bag and nn.EmbeddingBag; stage 'onehot' bans F.one_hot. Your code runs inside the
grader's process, next to the code that watches which torch functions run, so these are
refused anywhere in your three files too, being what code would need to get around that watch
or rewrite what the grader sees: eval, exec, compile, __import__ and importlib; a getattr,
setattr or delattr whose name is not a plain string, vars, globals, locals and __dict__; gc,
inspect, ctypes, sys.modules and sys._getframe, frames and code objects (f_back, f_locals,
f_globals, tb_frame, __code__, __closure__, __globals__); threads and processes (threading,
concurrent, multiprocessing, subprocess, os); torch's internals (torch._C, torch.ops,
torch.library, torch.overrides, torch.jit, torch.utils); open; and importing modules other
than math, torch and a few from the standard library (rules.py lists them). Only the two
"written by hand" tests depend on this; every other test looks at what your code computes.
Comments, strings and an ``if __name__ == "__main__":`` block are not read, so a self-check
against F.one_hot may live there. ``python -m exercises.rules`` checks your files as the
grader does, and so do the visible tests.
"""

from __future__ import annotations

import math  # noqa: F401 (the code you write uses it)

import torch
from torch import Tensor, nn


def check_ids(ids: Tensor, vocab_size: int) -> None:
    """Reject anything that is not a valid tensor of token ids for a vocabulary of ``vocab_size``.

    Ids are labels, not quantities, so they must be integers. Plain indexing would silently
    accept a negative id (``E[-1]`` is the last row) and would treat a bool tensor as a mask,
    so both are refused here, with a message that names the offending id.

    Args:
        ids: token ids, an integer tensor of any shape ``(...)``.
        vocab_size: V, the number of rows; valid ids are ``0 <= id < V``.

    Raises:
        TypeError: ``ids`` is not a tensor, or holds floats, complex numbers or bools.
        IndexError: some id is outside ``[0, vocab_size)``; the message names the first one.
    """
    # YOUR CODE HERE (stage: embedding)
    raise NotImplementedError("check_ids is not implemented yet (stage 'embedding')")


class RowLookup(torch.autograd.Function):
    """``weight[index]`` for a flat LongTensor ``index``, with its gradient written out.

    The gradient of a row lookup is a scatter-add: row ``i`` of ``weight.grad`` is the sum of
    the upstream gradients of every position that looked up ``i``, so repeated ids add up.
    (Plain ``weight[index]`` does the same through autograd's index_put, a little slower.)
    """

    @staticmethod
    def forward(ctx, weight: Tensor, index: Tensor) -> Tensor:
        """``weight`` (V, d), ``index`` (N,) int64 -> rows (N, d)."""
        # YOUR CODE HERE (stage: embedding)
        raise NotImplementedError("RowLookup.forward is not implemented yet (stage 'embedding')")

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:
        """``grad`` (N, d) -> (weight's gradient (V, d), None for the index)."""
        # YOUR CODE HERE (stage: embedding)
        raise NotImplementedError("RowLookup.backward is not implemented yet (stage 'embedding')")


class Embedding(nn.Module):
    """A learned lookup table: row ``i`` of ``weight`` is the vector for token ``i``.

    Equivalent to ``nn.Embedding``, written out so that nothing is hidden: the whole layer is a
    V x d ``nn.Parameter`` and the forward pass is ``weight[ids]``. Stage 'embedding' bans
    nn.Embedding, F.embedding, torch.embedding, F.embedding_bag and nn.EmbeddingBag anywhere in
    your files (see "Rules" at the top of this file): write the lookup yourself.

    Args:
        vocab_size: V, the number of tokens (rows).
        d_model: d, the width of each row (the residual stream's width).
        std: standard deviation of the N(0, std^2) initialisation; ``None`` means
            ``1/sqrt(d_model)``. GPT-2 uses 0.02 for tokens and 0.01 for positions.
        scale: multiply the output by ``sqrt(d_model)``, as the original Transformer did.

    Shapes:
        forward: ids ``(...)`` integer -> ``(..., d_model)`` in ``weight``'s dtype and device.
    """

    def __init__(
        self, vocab_size: int, d_model: int, std: float | None = 0.02, scale: bool = False
    ) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("d_model", d_model)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if std is not None and not std >= 0:
            raise ValueError(f"std must be >= 0 or None (meaning 1/sqrt(d_model)), got {std!r}")
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.std = std
        self.scale = scale
        # YOUR CODE HERE (stage: embedding)
        raise NotImplementedError("Embedding.__init__ is not implemented yet (stage 'embedding')")
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Fill ``weight`` with N(0, std^2) draws, in place (``std=None``: ``1/sqrt(d_model)``).

        Not zeros: identical rows would get identical gradients and never become different.
        Small: the rows are the residual stream's starting value.
        """
        # YOUR CODE HERE (stage: init)
        raise NotImplementedError(
            "Embedding.reset_parameters is not implemented yet (stage 'init')"
        )

    def scale_output(self, x: Tensor) -> Tensor:
        """Apply the optional output scaling: ``x * sqrt(d_model)`` if ``scale`` else ``x``.

        Args:
            x: looked-up rows, ``(..., d_model)``.

        Returns:
            ``(..., d_model)``, the same tensor when ``scale`` is off.
        """
        # YOUR CODE HERE (stage: init)
        raise NotImplementedError("Embedding.scale_output is not implemented yet (stage 'init')")

    def forward(self, ids: Tensor) -> Tensor:
        """Look up the rows of ``weight`` for ``ids``, by indexing ``self.weight`` yourself (no
        F.embedding: see "Rules" at the top of this file).

        Args:
            ids: integer token ids of any shape ``(...)``, each in ``[0, vocab_size)``.

        Returns:
            ``(..., d_model)``: row ``ids[...]`` of ``weight``, then ``scale_output``.

        Raises:
            TypeError, IndexError: as ``check_ids``.
        """
        # YOUR CODE HERE (stage: embedding): set rows, used below
        raise NotImplementedError("Embedding.forward is not implemented yet (stage 'embedding')")
        return self.scale_output(rows)  # noqa: F821 (rows: yours to set above)

    def extra_repr(self) -> str:
        return f"{self.vocab_size}, {self.d_model}, std={self.std}, scale={self.scale}"


def one_hot(ids: Tensor, num_classes: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """One-hot encode ``ids``: a 1 at each id's position, zeros elsewhere.

    Build the vectors yourself: stage 'onehot' bans F.one_hot anywhere in your files, helpers
    included (see "Rules" at the top of this file).

    Args:
        ids: integer token ids of any shape ``(...)``, each in ``[0, num_classes)``.
        num_classes: V, the length of each one-hot vector. Always given, never guessed from
            ``ids.max()``: a batch that lacks the last token still has V classes.
        dtype: the result's dtype (float, so it can be multiplied by a weight matrix).

    Returns:
        ``(..., num_classes)`` on ``ids``'s device.
    """
    # YOUR CODE HERE (stage: onehot)
    raise NotImplementedError("one_hot is not implemented yet (stage 'onehot')")


def embed_via_onehot(weight: Tensor, ids: Tensor) -> Tensor:
    """The embedding the slow way: ``one_hot(ids) @ weight``, equal to ``weight[ids]``.

    Args:
        weight: the embedding matrix E, ``(V, d)``.
        ids: integer token ids of any shape ``(...)``.

    Returns:
        ``(..., d)`` in ``weight``'s dtype, on ``weight``'s device: the same numbers as the
        lookup, V times slower.
    """
    # YOUR CODE HERE (stage: onehot)
    raise NotImplementedError("embed_via_onehot is not implemented yet (stage 'onehot')")


def cosine_similarity(a: Tensor, b: Tensor, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``a`` and ``b`` over the last dimension.

    Lengths cancel: a token twice as "loud" that points the same way scores the same.

    Args:
        a: ``(..., d)``.
        b: ``(..., d)``, broadcastable against ``a``.
        eps: lengths below ``eps`` are treated as ``eps``, so a zero vector scores 0, not NaN.

    Returns:
        ``(...)``, the broadcast shape without the last dimension, values in [-1, 1].
    """
    # YOUR CODE HERE (stage: neighbours)
    raise NotImplementedError("cosine_similarity is not implemented yet (stage 'neighbours')")


def _top_k(E: Tensor, query: Tensor, k: int, exclude: list[int]) -> tuple[Tensor, Tensor]:
    """The ``k`` rows of ``E`` most similar to ``query``, ties to the smaller id.

    Args:
        E: the table, ``(V, d)``.
        query: ``(d,)``.
        k: how many ids to return.
        exclude: row indices that may never be returned (the query token, analogy inputs).

    Returns:
        ``(ids, sims)``, each ``(k,)``: ``ids`` a LongTensor, ``sims`` as ``cosine_similarity``.
    """
    # YOUR CODE HERE (stage: neighbours)
    raise NotImplementedError("_top_k is not implemented yet (stage 'neighbours')")


def _row_index(E: Tensor, token: object, what: str) -> int:
    """``token`` as a row index of ``E`` (an int or a 0-d integer tensor), checked."""
    if isinstance(token, Tensor):
        if token.dim() != 0 or token.is_floating_point() or token.dtype == torch.bool:
            raise TypeError(f"{what} must be a row index (an int), got a tensor {token}")
        token = int(token)
    if isinstance(token, bool) or not isinstance(token, int):
        raise TypeError(f"{what} must be a row index (an int), got {type(token).__name__}")
    if not 0 <= token < E.shape[0]:
        raise IndexError(f"{what} {token} is outside the table's rows [0, {E.shape[0]})")
    return token


def cosine_neighbours(E: Tensor, token: int | Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The ``k`` rows of ``E`` most similar (by cosine) to a token or to a query vector.

    Args:
        E: the embedding table, ``(V, d)``.
        token: a row index (an int or 0-d integer tensor), whose own row is excluded by index,
            so a duplicate of that row still counts as a neighbour; or a query vector ``(d,)``,
            in which case nothing is excluded.
        k: how many neighbours to return.

    Returns:
        ``(ids, sims)``: ``ids`` a LongTensor ``(k,)`` and ``sims`` ``(k,)``, by descending
        similarity, ties broken by the smaller id.

    Raises:
        ValueError: ``k`` is not from 1 to the number of rows that may be returned.
    """
    # YOUR CODE HERE (stage: neighbours)
    raise NotImplementedError("cosine_neighbours is not implemented yet (stage 'neighbours')")


def analogy(
    E: Tensor, a: int, b: int, c: int, k: int = 1, exclude_inputs: bool = True
) -> tuple[Tensor, Tensor]:
    """"``a`` is to ``b`` as ``c`` is to ?": the rows nearest to ``E[b] - E[a] + E[c]``.

    ``analogy(E, man, king, woman)`` should give queen, but only with ``exclude_inputs``:
    without it the nearest row is very often ``king`` itself (Nissim et al., 2020).

    Args:
        E: the embedding table, ``(V, d)``.
        a, b, c: row indices.
        k: how many answers to return.
        exclude_inputs: leave ``a``, ``b`` and ``c`` out of the answers (the standard test).

    Returns:
        ``(ids, sims)`` as in ``cosine_neighbours``.

    Raises:
        ValueError: as ``cosine_neighbours``, for ``k``.
    """
    # YOUR CODE HERE (stage: neighbours)
    raise NotImplementedError("analogy is not implemented yet (stage 'neighbours')")


def expected_dot_std(std: float, d_model: int) -> float:
    """The spread of the dot product of two random rows: ``std**2 * sqrt(d_model)``.

    Each of the d products of two independent N(0, std^2) numbers has variance std^4, so
    their sum has standard deviation std^2 * sqrt(d). With 0.02 and d = 768 that is about
    0.011: first-block attention scores start near zero, as the rest of the network expects.
    """
    # YOUR CODE HERE (stage: init)
    raise NotImplementedError("expected_dot_std is not implemented yet (stage 'init')")
