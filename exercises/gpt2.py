# Generated from lumen/gpt2.py by `make stubs`: do not edit this header.
# Learners: write your code only where it says YOUR CODE HERE, then run
#   pytest exercises -m <stage>
# Course staff: edit lumen/gpt2.py (the single source) and run `make stubs`.
"""A GPT-2 built on the chapter's Embedding, with weight tying as a flag.

Module names follow GPT-2's checkpoints (``blocks[i].attn.c_attn`` and so on), so a state_dict
maps onto GPT-2's and graders can find the residual projections. Shapes: B batch, T tokens,
d model width, V vocabulary.

The grader reads this file too: the rules at the top of embeddings.py apply to it, and so does
what it says of given code: everything here but the functions the stages own is the grader's.
"""

from __future__ import annotations

import math  # noqa: F401 (the code you write uses it)
from dataclasses import astuple, dataclass, fields

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .embeddings import Embedding
from .params import PRESETS


@dataclass
class GPT2Config:
    """The shape of a GPT-2. The defaults are GPT-2 small (124M parameters, tied)."""

    vocab_size: int = 50257
    n_ctx: int = 1024
    d_model: int = 768
    n_layers: int = 12
    n_heads: int = 12
    tie_weights: bool = True  # lm_head reuses wte's matrix (Press & Wolf, 2016)
    dropout: float = 0.0

    def __post_init__(self) -> None:
        # astuple, not getattr(self, f.name): the grader refuses a name computed at run time in
        # the files it reads, this one included (see rules/README.md)
        for f, value in zip(fields(self), astuple(self), strict=True):
            positive_int = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            if f.type == "int" and not positive_int:
                raise ValueError(f"GPT2Config.{f.name} must be a positive int, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
            )

    @classmethod
    def from_preset(cls, name: str, **overrides: object) -> GPT2Config:
        """One of GPT-2's sizes ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl")."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


class CausalSelfAttention(nn.Module):
    """Multi-head attention in which each position sees itself and the positions before it."""

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.c_attn = nn.Linear(config.d_model, 3 * config.d_model)  # q, k, v in one matmul
        self.c_proj = nn.Linear(config.d_model, config.d_model)  # back into the residual stream
        self.dropout = config.dropout

    def forward(self, x: Tensor) -> Tensor:
        B, T, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)  # 3 x (B, T, d)
        q, k, v = (t.view(B, T, self.n_heads, d // self.n_heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(  # (B, h, T, d/h)
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )
        return self.c_proj(y.transpose(1, 2).reshape(B, T, d))  # (B, T, d)


class MLP(nn.Module):
    """Position-wise d -> 4d -> d with GPT-2's tanh-approximated GELU."""

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.d_model, 4 * config.d_model)
        self.gelu = nn.GELU(approximate="tanh")  # GPT-2's "gelu_new"
        self.c_proj = nn.Linear(4 * config.d_model, config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))  # (B, T, d)


class Block(nn.Module):
    """A pre-LN transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.d_model)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.d_model)
        self.mlp = MLP(config)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """GPT-2: embeddings, ``n_layers`` blocks, a final LayerNorm and the output layer.

    Args:
        config: the model's shape; ``config.tie_weights`` decides whether ``lm_head`` reuses
            ``wte``'s matrix.

    Shapes:
        forward: ids ``(B, T)`` integer, ``T <= n_ctx`` -> logits ``(B, T, V)``.
    """

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.config = config
        self.wte = Embedding(config.vocab_size, config.d_model)  # token id -> vector
        self.wpe = Embedding(config.n_ctx, config.d_model)  # position -> vector
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)  # vector -> scores
        self.init_weights()
        self.tie_weights()

    def init_weights(self) -> None:
        """GPT-2's initialisation, in place, on every module.

        Token embedding N(0, 0.02^2), position embedding N(0, 0.01^2) (openai/gpt-2), every
        Linear weight N(0, 0.02^2) (lm_head too, when untied) except the residual projections
        (``c_proj``), which get 0.02 / sqrt(2 * n_layers) so the residual stream's variance
        does not grow with depth (GPT-2 paper, section 2.3); Linear biases 0; LayerNorm scale 1
        and shift 0. Normal draws (``nn.init.normal_``), not uniform ones of the same std.

        In place, on the model's own parameters: it may run again after ``.to(dtype)`` or
        ``.double()``, and each parameter keeps its dtype and device (``.data = torch.randn(...)``
        would not); or on a model whose numbers have changed (trained), so it sets every
        parameter anew, the LayerNorms' 1 and 0 too (not left to their constructor).
        """
        # YOUR CODE HERE (stage: init)
        raise NotImplementedError("GPT2.init_weights is not implemented yet (stage 'init')")

    def tie_weights(self) -> None:
        """Apply ``self.config.tie_weights`` (read when called): share wte's matrix with
        lm_head, or keep them apart.

        Tied: ``lm_head.weight`` must be the very same Parameter as ``wte.weight`` (not a copy,
        not a view), so the logits are ``h @ E.T``, ``parameters()`` counts it once, both uses
        of E add to its one gradient, and the tie survives ``.to(device)`` and a state_dict
        round trip (loading ``wte.weight`` alone loads the head too). The embedding's matrix
        is the one kept, exactly as it is (``self.wte.weight = self.lm_head.weight`` would keep
        the head's instead): not transposed (nn.Linear stores (V, d), the table's own layout),
        not rescaled, so that a fresh model's loss on random ids is about ln V. Untied, it
        changes nothing: two separate Parameters, each keeping its own numbers (no copy of the
        table into the head, no fill of the head's: it may run again on a loaded model).
        """
        # YOUR CODE HERE (stage: tying)
        raise NotImplementedError("GPT2.tie_weights is not implemented yet (stage 'tying')")

    def forward(self, ids: Tensor) -> Tensor:
        B, T = ids.shape
        if T > self.config.n_ctx:
            raise ValueError(f"sequence of {T} tokens is longer than n_ctx={self.config.n_ctx}")
        positions = torch.arange(T, device=ids.device)  # (T,)
        x = self.drop(self.wte(ids) + self.wpe(positions))  # (B, T, d) + (T, d)
        for block in self.blocks:
            x = block(x)  # (B, T, d)
        return self.lm_head(self.ln_f(x))  # (B, T, V)

    def num_params(self) -> int:
        """Parameters counted once each, as ``count_params`` counts them."""
        return sum(p.numel() for p in self.parameters())
