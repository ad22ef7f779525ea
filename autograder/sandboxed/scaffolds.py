"""Scaffolds: public stand-ins for the functions of the stages that are not being graded.

A stage is graded in isolation: while tying is graded, the learner's Embedding and
initialisation are replaced by these, so a broken Embedding does not cost the tying points.
The child that runs learner code never holds the reference solution, only these. Each is
written to two rules, both proved in tests/test_scaffolds.py: (a) good enough for every stage
that builds on it (the reference and every correct variant keep full marks, every known
mistake is still named); (b) not an answer (graded as a learner's code for its own stage, it
loses points there). So each is wrong in a way only its own stage looks at, or built from the
built-in its stage bans; functions no other stage calls refuse to run, saying why.

This file ships next to worker.py into the sandbox: it imports only torch, math and the
standard library, never lumen, and holds no line of lumen's solutions.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

#: What ``scale_output`` multiplies by when ``scale=True``: a fixed number, not sqrt(d_model),
#: so the init stage rejects it; the embedding stage expects its rows times this factor.
SCALE_FACTOR = 3.0


class ScaffoldError(RuntimeError):
    """Code of the graded stage called a function of another stage that it does not need."""


def _stand_in(key: str, stage: str) -> Callable:
    """A function for ``key`` ("module:Qual.name") that refuses to run, saying why."""
    qualname = key.split(":", 1)[1]

    def stand_in(*args: object, **kwargs: object) -> None:
        raise ScaffoldError(
            f"{qualname} belongs to stage '{stage}', which is graded on its own: while another "
            "stage is graded, it is only a stand-in here, so the code of that stage must not "
            "need it"
        )

    stand_in.__name__ = qualname.rsplit(".", 1)[-1]
    stand_in.__qualname__ = qualname
    return stand_in


# --- stage 'embedding': what GPT2 and one_hot build on -----------------------------------


def check_ids(ids: Tensor, vocab_size: int) -> None:
    """Refuses non-integer and out-of-range ids, but its messages name neither the id nor V
    (the embedding stage requires both; one_hot only needs valid ids to pass)."""
    integer = isinstance(ids, Tensor) and not (
        ids.dtype == torch.bool or ids.dtype.is_floating_point or ids.dtype.is_complex
    )
    if not integer:
        raise TypeError("check_ids (scaffold): token ids must be a tensor of integers")
    if ids.device.type != "meta" and ids.numel() > 0:
        wide = ids.to(torch.int64)  # uint8 or int16 could not hold vocab_size itself
        if bool(wide.lt(0).any()) or bool(wide.ge(vocab_size).any()):
            raise IndexError("check_ids (scaffold): an id is outside the vocabulary")


def embedding_init(
    self: nn.Module, vocab_size: int, d_model: int, std: float | None = 0.02, scale: bool = False
) -> None:
    """Embedding.__init__: the given validation and attributes, a registered (V, d) Parameter
    and the final reset_parameters(); but the weight is left without requires_grad, which the
    embedding stage requires (the tying and init probes that train a model turn it on)."""
    # nn.Module.__init__ itself, not super().__init__(): the learner's Embedding may derive
    # from a base class of their own whose __init__ takes other arguments.
    nn.Module.__init__(self)
    for name, value in (("vocab_size", vocab_size), ("d_model", d_model)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if std is not None and not std >= 0:
        raise ValueError(f"std must be >= 0 or None (meaning 1/sqrt(d_model)), got {std!r}")
    self.vocab_size = vocab_size
    self.d_model = d_model
    self.std = std
    self.scale = scale
    table = torch.zeros(vocab_size, d_model)
    self.weight = nn.Parameter(table)
    self.reset_parameters()
    # After reset_parameters, not before: the init stage still sees a learner's in-place
    # fill without torch.no_grad fail, as it would on a weight that requires grad.
    self.weight.requires_grad_(False)


def embedding_forward(self: nn.Module, ids: Tensor) -> Tensor:
    """Embedding.forward through PyTorch's own F.embedding, without check_ids: the embedding
    stage forbids the built-in and wants float ids refused; GPT2 only passes valid ids."""
    index = ids.to(self.weight.device, torch.int64)
    return self.scale_output(F.embedding(index, self.weight))


# --- stage 'init': what Embedding and GPT2 build on --------------------------------------


def reset_parameters(self: nn.Module) -> None:
    """Zeros (the chapter's symmetry mistake): the embedding and tying stages only need a
    weight of the right shape, which their probes or GPT2's init_weights then fill."""
    nn.init.zeros_(self.weight)  # in place, without recording a gradient


def scale_output(self: nn.Module, x: Tensor) -> Tensor:
    """``x * SCALE_FACTOR`` when ``scale`` is on, not ``x * sqrt(d_model)``."""
    if self.scale:
        return x * SCALE_FACTOR
    return x


def _uniform(tensor: Tensor, std: float) -> None:
    """Fill ``tensor`` in place from U(-a, a) with a = std * sqrt(3): standard deviation std."""
    bound = std * math.sqrt(3.0)
    nn.init.uniform_(tensor, -bound, bound)  # in place, without recording a gradient


def init_weights(self: nn.Module) -> None:
    """GPT2.init_weights with uniform draws of GPT-2's standard deviations (tying's initial
    loss needs only wte's spread), but no 1/sqrt(2 n_layers) for c_proj and PyTorch's own
    random Linear biases left in place, both of which the init stage rejects."""
    for linear in [m for m in self.modules() if isinstance(m, nn.Linear)]:
        _uniform(linear.weight, 0.02)
    _uniform(self.wte.weight, 0.02)
    _uniform(self.wpe.weight, 0.01)


# --- stage 'tying': what the init stage builds on ----------------------------------------


def tie_weights(self: nn.Module) -> None:
    """A copy instead of a tie (lm_head starts with wte's values but is its own Parameter):
    the tying stage names that mistake; the init stage grades untied models."""
    if not self.config.tie_weights:
        return
    values = self.wte.weight.detach().clone()
    self.lm_head.weight = nn.Parameter(values)


# --- stage 'onehot': what a lookup written as one_hot(ids) @ E builds on --------------------


def one_hot(ids: Tensor, num_classes: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """PyTorch's own F.one_hot, the built-in the onehot stage bans: copied out, it loses the
    stage's "written by hand" points, and earns what writing F.one_hot would."""
    return F.one_hot(ids.long(), num_classes).to(dtype)


def embed_via_onehot(weight: Tensor, ids: Tensor) -> Tensor:
    """The chapter's own two lines, with F.one_hot (banned in the onehot stage, see one_hot)."""
    onehot = F.one_hot(ids.to(weight.device).long(), weight.shape[0]).to(weight.dtype)
    return onehot @ weight


# --- the table the worker reads -----------------------------------------------------------

#: Every function a stage owns (lumen/stages.py's keys) -> what stands in for it while another
#: stage is graded. Methods are plain functions taking self and embedding_share a property,
#: as in lumen, so each moves into the learner's class as it is.
SCAFFOLDS: dict[str, object] = {
    # embedding
    "embeddings:check_ids": check_ids,
    "embeddings:Embedding.__init__": embedding_init,
    "embeddings:Embedding.forward": embedding_forward,
    # onehot: an Embedding.forward may compute its lookup as one_hot(ids) @ E
    "embeddings:one_hot": one_hot,
    "embeddings:embed_via_onehot": embed_via_onehot,
    # neighbours and params: nothing of another stage calls them
    **{key: _stand_in(key, "neighbours")
       for key in ("embeddings:cosine_similarity", "embeddings:_top_k",
                   "embeddings:cosine_neighbours", "embeddings:analogy")},
    "params:count_params": _stand_in("params:count_params", "params"),
    "params:ParamCount.embedding_share": property(
        _stand_in("params:ParamCount.embedding_share", "params")),
    "params:ParamCount.memory_bytes": _stand_in("params:ParamCount.memory_bytes", "params"),
    # tying
    "gpt2:GPT2.tie_weights": tie_weights,
    # init
    "embeddings:Embedding.reset_parameters": reset_parameters,
    "embeddings:Embedding.scale_output": scale_output,
    "embeddings:expected_dot_std": _stand_in("embeddings:expected_dot_std", "init"),
    "gpt2:GPT2.init_weights": init_weights,
}
