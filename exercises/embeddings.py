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

What every function here promises, beyond its own docstring (the grader checks each):

- It takes its arguments as its signature says, positionally and by name: keep the stub's
  parameter names and order (``one_hot(ids, 10, torch.float64)`` and
  ``one_hot(ids=ids, num_classes=10)`` must both work).
- It leaves what it is given as it was: work on new tensors (``x = x / n``), never in place on
  an argument (``x /= n``, ``ids.unsqueeze_(-1)``, ``E[b] -= ...``), since the caller goes on
  using it. Careful: ``ids.long()`` of int64 ids, and ``E[b]`` of a table, are not copies.
- Token ids may have any integer dtype (int8, int16, int32, int64, uint8) and any layout,
  contiguous or not (a transposed batch): widen them with ``.long()`` where an operation needs
  int64, and flatten with ``reshape``, not ``view``.
- New tensors go on the inputs' device (``device=ids.device``, or the weight's), never a
  hard-coded one; results keep the weight's dtype. On a machine without a GPU the grader checks
  this on the meta device, with the values kept behind it, so reading values there (a range
  check) is fine.

Given code: everything outside YOUR CODE HERE is given, and the grader's. That is the given
lines of ``Embedding.__init__`` (the checks, the attributes and its last line,
``self.reset_parameters()``), ``extra_repr``, ``RowLookup``, ``_row_index``, and in the other
two files all but the functions the stages own (lumen/stages.py lists them). The grader runs
the stub's own copy of it, whatever your file holds, so leave it as it is: a stage's work done
in given code (a tie in ``GPT2.forward``) is lost there. Helpers of your own are fine (new
functions, methods, base classes, mixins), but a method of yours that overrides one of
nn.Module's (``to``, ``double``, ``load_state_dict``, ``state_dict``, ``parameters``,
``__call__``, ``__setattr__``, ``__getattr__``, ...) is replaced by nn.Module's own, a class
attribute of yours named as a member the given code sets on each object (``lm_head``, ``wte``,
``config``) is removed, and no object's given or nn.Module method can be replaced
(``self.forward = ...`` raises). Your classes
are also run as you wrote them: an Embedding must hold what its reset_parameters drew, a GPT2
what its init_weights drew and be tied by tie_weights alone; changed given code loses the
points of the stage it affects, with a message that says so.

Rules: the grader reads your source. Two stages ask you to write by hand what PyTorch already
has, so their built-ins are banned anywhere in your three files (embeddings.py, params.py,
gpt2.py), helpers included, and so are the torch modules that call them for you: stage
'embedding' bans nn.Embedding, F.embedding, torch.embedding, F.embedding_bag, nn.EmbeddingBag
and torch's quantized embeddings (torch.ao, torch.nn.quantized, torch.nn.qat); stage 'onehot'
bans F.one_hot and torch.distributions (OneHotCategorical calls F.one_hot). The grader judges
these bans from your source alone, so anything that could call a built-in without naming it is
refused too, anywhere in your three files (all three run next to your embedding and your
one_hot): turning strings into code or loading modules and objects by name (eval, exec,
compile, __import__, importlib, pickle, torch.load, numpy.load, subprocess, os); names
computed at run time (a getattr, setattr or delattr whose name is not a plain string, vars,
globals, locals, __dict__, operator.attrgetter, typing.get_type_hints, a class built from
computed names: three-argument type(), a metaclass other than ABCMeta, Enum('E', names),
make_dataclass; defining __getattr__ or __getattribute__); reaching into the
running program (gc, inspect, ctypes, sys.modules, sys._getframe, frames and code objects such
as f_back or __globals__, __subclasses__, threading, open, raw memory through numpy's
stride_tricks, .ctypes or __array_interface__, assigning __class__, torch's global hooks and
function modes, __torch_function__); torch's
internals (torch._C, torch.ops, torch.library, torch.jit, torch.compile, torch.utils, and the
_private modules of torch and numpy on any object, ``self`` included, since it can hold a
module: ``self._VF`` is refused, your own ``self._rows`` is fine); ``import *``;
importing a file other than your three, or a module the grader has not checked: numpy, math,
functools, itertools, collections, dataclasses, typing, warnings, numbers, operator, enum, abc
and a few more are fine (rules/policy.py lists them); changing torch, which the given code and the
grader's checks call as it is: setting or deleting an attribute of its modules or classes
(``F.linear = ...``, ``torch.Tensor.x = ...``, ``nn.Linear.forward = ...``, ``setattr(F,
'linear', f)``) or handing one of its modules on as a value (``f(F)``, ``self.F = F``);
and a file the grader cannot read within its limits (an expression nested more than 100
deep, more than 100,000 parts). The two "written by hand" tests depend on this, and so do
nine checks that see what only your code's process can see (an input left as it was, a
registered Parameter, the product, one shared table, the parameter count, a refill in place):
rules/README.md names them. Every other test looks at what your code computes.
Comments, strings and the bodies of ``if __name__ == "__main__":``, ``if TYPE_CHECKING:``
(after ``from typing import TYPE_CHECKING`` at the top) and ``if False:`` are not read, as
long as nothing in your files rebinds those names, so a self-check against F.one_hot may live
in a ``__main__`` block.
``python -m exercises.rules`` checks your files as the grader does, and so do the visible
tests.
"""

from __future__ import annotations

import math  # noqa: F401 (the code you write uses it)

import torch
from torch import Tensor, nn


class Embedding(nn.Module):
    """A learned lookup table: row ``i`` of ``weight`` is the vector for token ``i``.

    Equivalent to ``nn.Embedding``, written out so that nothing is hidden: the whole layer is a
    V x d ``nn.Parameter`` and the forward pass is ``weight[ids]``. Stage 'embedding' bans
    nn.Embedding, F.embedding, torch.embedding, F.embedding_bag and nn.EmbeddingBag anywhere in
    your files (see "Rules" at the top of this file): write the lookup yourself.

    Build it positionally or by name, ``Embedding(V, d)`` or ``Embedding(vocab_size=V,
    d_model=d)``.

    Args:
        vocab_size: V, the number of tokens (rows).
        d_model: d, the width of each row (the residual stream's width).
        std: standard deviation of the N(0, std^2) initialisation; ``None`` means
            ``1/sqrt(d_model)``. GPT-2 uses 0.02 for tokens and 0.01 for positions. Kept as
            it came (``self.std is None`` for None): ``reset_parameters`` works it out.
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
        """Fill ``weight`` with independent N(0, std^2) draws, in place.

        ``std`` is ``self.std``; ``None`` means ``1/sqrt(d_model)``, while ``0.0`` is a std like
        any other (every entry 0). Normal draws, not merely numbers of the right mean and
        spread: a uniform fill or a pattern such as +-std fails, as the tests look at the
        shape of the distribution too. In place: the same Parameter object afterwards (an
        optimiser or a tied lm_head holds it), of the same dtype and device (the layer may
        have been converted with ``.double()``), and not recorded by autograd
        (``torch.no_grad()``), so that the weight stays a trainable leaf.

        Not zeros: identical rows would get identical gradients and never become different.
        Small: the rows are the residual stream's starting value.
        """
        # YOUR CODE HERE (stage: init)
        raise NotImplementedError(
            "Embedding.reset_parameters is not implemented yet (stage 'init')"
        )

    def scale_output(self, x: Tensor) -> Tensor:
        """Apply the optional output scaling: ``x * sqrt(d_model)`` if ``scale`` else ``x``.

        Differentiable and out of place: the gradient with respect to ``x`` is ``sqrt(d_model)``
        (scale on) or 1 (off), so no ``.detach()``, ``.data`` or ``torch.no_grad()``; and ``x``
        is left as it was (no ``x.mul_``), since it holds the rows the caller looked up.

        Args:
            x: looked-up rows, ``(..., d_model)`` (one row ``(d_model,)``, or none at all, such
                as ``(0, T, d_model)``), of any float dtype (float32, float64, bfloat16),
                tracked by autograd.

        Returns:
            ``(..., d_model)``, ``x``'s shape, in ``x``'s dtype (no ``.double()`` or
            ``.float()``); ``x``'s own values when ``scale`` is off (``x`` itself will do).
        """
        # YOUR CODE HERE (stage: init)
        raise NotImplementedError("Embedding.scale_output is not implemented yet (stage 'init')")

    def forward(self, ids: Tensor) -> Tensor:
        """Look up the rows of ``weight`` for ``ids``, by indexing ``self.weight`` yourself (no
        F.embedding: see "Rules" at the top of this file).

        Args:
            ids: token ids of any shape ``(...)`` (a single 0-d id too, and none at all: ids of
                shape ``(4, 0)`` give ``(4, 0, d_model)``), each in
                ``[0, vocab_size)``, of any integer dtype: plain ``weight[ids]`` refuses int8
                and int16 ids and reads uint8 ids as a mask, so widen them with ``.long()``.
                Every value the dtype holds is an id: uint8 ids of a 300-row table go up to
                255 (compared in uint8, ``ids >= 300`` wraps and is True for every id).
                Contiguous or not (flatten with ``reshape``, not ``view``), and left as they
                were (``ids.long()`` of int64 ids is ``ids`` itself: nothing in place on it).

        Returns:
            ``(..., d_model)``: row ``ids[...]`` of ``weight``, exactly, in ``weight``'s dtype
            (float64 and bfloat16 too) and on its device, then ``self.scale_output``, which
            does the optional scaling (so none here). Differentiable: the gradients of
            repeated ids add up in ``weight.grad``.

        Raises:
            TypeError, IndexError: as ``check_ids``.
        """
        # YOUR CODE HERE (stage: embedding): set rows, used below
        raise NotImplementedError("Embedding.forward is not implemented yet (stage 'embedding')")
        return self.scale_output(rows)  # noqa: F821 (rows: yours to set above)

    def extra_repr(self) -> str:
        return f"{self.vocab_size}, {self.d_model}, std={self.std}, scale={self.scale}"


def check_ids(ids: Tensor, vocab_size: int) -> None:
    """Reject anything that is not a valid tensor of token ids for a vocabulary of ``vocab_size``.

    Ids are labels, not quantities, so they must be integers. Plain indexing would silently
    accept a negative id (``E[-1]`` is the last row) and would treat a bool tensor as a mask,
    so both are refused here, with a message that names the offending id. ``forward`` refuses
    bad ids through this function, and the grader calls it on its own too.

    Args:
        ids: token ids, a tensor of any shape ``(...)`` and any integer dtype (int8, int16,
            int32, int64, uint8: compare them as int64, ``ids.long()``, since ``vocab_size``
            may not fit in theirs: compared in uint8, ``250 >= 300`` is True).
        vocab_size: V, the number of rows; valid ids are ``0 <= id < V``.

    Raises:
        TypeError: ``ids`` is not a tensor (a list, say: check ``isinstance`` first, so that
            the error says so), or holds floats (every float dtype, float16 too), complex
            numbers or bools.
        IndexError: some id is outside ``[0, vocab_size)``; the message names that id and
            ``vocab_size``.
    """
    # YOUR CODE HERE (stage: embedding)
    raise NotImplementedError("check_ids is not implemented yet (stage 'embedding')")


class RowLookup(torch.autograd.Function):
    """``weight[index]`` for a flat LongTensor ``index``, with its gradient written out.

    Given code, not graded: a faster lookup you may use in ``Embedding.forward``, or not
    (``self.weight[ids]`` is just as right).

    The gradient of a row lookup is a scatter-add: row ``i`` of ``weight.grad`` is the sum of
    the upstream gradients of every position that looked up ``i``, so repeated ids add up.
    (Plain ``weight[index]`` does the same through autograd's index_put, a little slower.)
    """

    @staticmethod
    def forward(ctx, weight: Tensor, index: Tensor) -> Tensor:
        """``weight`` (V, d), ``index`` (N,) int64 -> rows (N, d)."""
        ctx.save_for_backward(index)
        ctx.vocab_size = weight.shape[0]
        return weight.index_select(0, index)  # (N, d)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:
        """``grad`` (N, d) -> (weight's gradient (V, d), None for the index)."""
        (index,) = ctx.saved_tensors
        grad_weight = grad.new_zeros(ctx.vocab_size, grad.shape[1])  # (V, d)
        return grad_weight.index_add_(0, index, grad), None  # repeated ids add up


def one_hot(ids: Tensor, num_classes: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """One-hot encode ``ids``: a 1 at each id's position, zeros elsewhere.

    Build the vectors yourself: stage 'onehot' bans F.one_hot anywhere in your files, helpers
    included, and the library that would call it for you (``torch.distributions``, whose
    OneHotCategorical does): see "Rules" at the top of this file.

    Args:
        ids: token ids of any shape ``(...)`` (a single 0-d id too), each in
            ``[0, num_classes)``, of any integer dtype (``scatter_`` wants int64 indices and
            indexing reads uint8 as a mask: widen them with ``.long()``), contiguous or not.
            ``num_classes`` may not fit in the ids' dtype (uint8 ids up to 255 with 300
            classes): compare and count in int64, not in theirs (``torch.arange(300,
            dtype=torch.uint8)`` wraps).
            Left as they were: no ``ids.unsqueeze_(-1)`` (``ids.long()`` of int64 ids is
            ``ids`` itself).
        num_classes: V, the length of each one-hot vector. Always given, never guessed from
            ``ids.max()``: a batch that lacks the last token still has V classes.
        dtype: the result's dtype, float32 unless given (by position or by name): a float, so
            it can be multiplied by a weight matrix.

    Returns:
        ``(..., num_classes)`` in ``dtype``, on ``ids``'s device (``device=ids.device``).
    """
    # YOUR CODE HERE (stage: onehot)
    raise NotImplementedError("one_hot is not implemented yet (stage 'onehot')")


def embed_via_onehot(weight: Tensor, ids: Tensor) -> Tensor:
    """The embedding the slow way: ``one_hot(ids) @ weight``, equal to ``weight[ids]``.

    Compute the product: every row of E takes part. Each output number is a sum over all V
    rows, most of them times 0, which is why this route costs V times the lookup; and it shows
    in floating point: a row that no id selects but that holds inf or NaN makes its column NaN
    (0 * inf is NaN), as ``one_hot(ids) @ E`` does and a lookup (``weight[ids]``) does not.

    Args:
        weight: the embedding matrix E, ``(V, d)``; left as it was.
        ids: token ids as in ``one_hot``: any shape, any integer dtype, contiguous or not;
            left as they were.

    Returns:
        ``(..., d)`` in ``weight``'s dtype (float64, float16, bfloat16 too: build the one-hot
        in it), on ``weight``'s device: for a finite E, exactly the lookup's numbers, V times
        slower.
    """
    # YOUR CODE HERE (stage: onehot)
    raise NotImplementedError("embed_via_onehot is not implemented yet (stage 'onehot')")


def cosine_similarity(a: Tensor, b: Tensor, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``a`` and ``b`` over the last dimension.

    Lengths cancel: a token twice as "loud" that points the same way scores the same.

    Args:
        a: ``(..., d)``, for any d (1 and 2 too); left as it was (``a = a / n``, not
            ``a /= n``).
        b: ``(..., d)``, broadcastable against ``a`` as in ``a * b``; left as it was.
        eps: the least length: each vector is divided by ``max(its length, eps)``, each
            length on its own (not their product), so a zero vector scores 0, not NaN, and a
            vector shorter than ``eps`` scores less than its cosine. Given by position or by
            name.

    Returns:
        ``(...)``, the broadcast shape without the last dimension, values in [-1, 1], in the
        inputs' dtype (float64 stays float64, bfloat16 stays bfloat16); inputs of two dtypes
        give the dtype of ``a * b`` (float32 with float64 is float64).
    """
    # YOUR CODE HERE (stage: neighbours)
    raise NotImplementedError("cosine_similarity is not implemented yet (stage 'neighbours')")


def _top_k(E: Tensor, query: Tensor, k: int, exclude: list[int]) -> tuple[Tensor, Tensor]:
    """The ``k`` rows of ``E`` most similar to ``query``, ties to the smaller id.

    The one ranking behind ``cosine_neighbours`` and ``analogy``, so every path ranks alike:
    largest cosine first, and rows with exactly equal cosines in ascending id order (a stable
    descending sort), at the cut-off too (k = 1 included). ``E`` and ``query`` are left as they
    were.

    Args:
        E: the table, ``(V, d)``.
        query: ``(d,)``, in ``E``'s dtype and on its device (``cosine_neighbours`` and
            ``analogy`` make it so).
        k: how many ids to return: from 1 to the number of rows that may be returned (V minus
            the distinct rows of ``exclude``), both ends included.
        exclude: row indices that may never be returned (the query token, analogy inputs).

    Returns:
        ``(ids, sims)``, each ``(k,)``: ``ids`` a LongTensor, ``sims`` as ``cosine_similarity``.

    Raises:
        ValueError: ``k`` is outside that range.
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
        E: the embedding table, ``(V, d)``; left as it was (never normalised in place).
        token: a row index, whose own row is excluded by index, so a duplicate of that row
            still counts as a neighbour: an int, or a 0-d tensor of any integer dtype (take
            ``int(token)``: as an index, a uint8 tensor would read as a mask, and compared
            with V as it is, a uint8 250 is ``>= 300``). Or a query vector ``(d,)`` of any
            float dtype, taken in ``E``'s (``query.to(E.dtype)``), in which case nothing is
            excluded.
        k: how many neighbours to return: from 1 to the number of rows that may be returned,
            both included (V - 1 for a token, V for a query vector).

    Returns:
        ``(ids, sims)``: ``ids`` a LongTensor ``(k,)`` and ``sims`` ``(k,)`` in ``E``'s dtype
        (float32 stays float32 and float64 stays float64, whatever the query's), both on
        ``E``'s device, by descending similarity, ties broken by the smaller id.

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

    Called positionally (``analogy(E, a, b, c, 5, False)``) or by name, so keep the order.

    Args:
        E: the embedding table, ``(V, d)``; left as it was. Build the query out of place:
            ``E[b]`` is a view of row b, so ``q = E[b]; q -= E[a]`` would change the table.
        a, b, c: row indices (ints). They need not differ: ``analogy(E, a, a, c)`` is a
            question too.
        k: how many answers to return, 1 unless given: from 1 to the number of rows that may
            be returned (V without the distinct inputs when they are excluded, so V - 2 for
            ``analogy(E, a, a, c)``; V otherwise).
        exclude_inputs: leave ``a``, ``b`` and ``c`` out of the answers (the standard test);
            with ``False`` they are candidates like any other row.

    Returns:
        ``(ids, sims)`` as in ``cosine_neighbours`` (ties to the smaller id).

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

    Args:
        std: the rows' standard deviation (by position or by name, as ``d_model``).
        d_model: d, the rows' width.

    Returns:
        A float.
    """
    # YOUR CODE HERE (stage: init)
    raise NotImplementedError("expected_dot_std is not implemented yet (stage 'init')")
