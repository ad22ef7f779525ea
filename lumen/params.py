"""The chapter's parameter calculator: where a GPT-2-style model keeps its parameters.

The embedding table grows with V x d, the blocks with N x d^2, so the table is a large share
of a small model and a small share of a large one. ``python -m exercises.params gpt2 --untied``
shows the split as a table (once stage 'params' is written).

The grader reads this file too: the rules at the top of embeddings.py apply to it, and so does
what it says of given code: everything here but the functions the stages own is the grader's.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch

#: GPT-2's four published sizes (Radford et al., 2019): shared vocabulary and context.
_GPT2 = {"vocab_size": 50257, "n_ctx": 1024}
PRESETS: dict[str, dict[str, int]] = {
    "gpt2": {**_GPT2, "d_model": 768, "n_layers": 12, "n_heads": 12},
    "gpt2-medium": {**_GPT2, "d_model": 1024, "n_layers": 24, "n_heads": 16},
    "gpt2-large": {**_GPT2, "d_model": 1280, "n_layers": 36, "n_heads": 20},
    "gpt2-xl": {**_GPT2, "d_model": 1600, "n_layers": 48, "n_heads": 25},
}

#: Bytes per number for the dtypes ``memory_bytes`` understands.
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "fp16": 2, "bf16": 2}
_TORCH_DTYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


@dataclass(frozen=True)
class ParamCount:
    """A GPT-2-style model's parameters, by where they live.

    Attributes:
        token_embedding: the V x d table (wte).
        position_embedding: the n_ctx x d table (wpe).
        attention: every block's c_attn and c_proj, weights and biases, summed over blocks.
        mlp: every block's c_fc and c_proj, weights and biases, summed over blocks.
        layer_norms: every block's ln_1 and ln_2 (scale and shift), summed over blocks.
        final_norm: ln_f after the last block.
        lm_head: the d -> V output layer (no bias); 0 when tied to the token embedding.
        total: the sum of all of the above, each Parameter counted once.

    Every field is a whole number of parameters: an int, or another integer type that Python
    accepts as one (``operator.index(value)`` works, as for a 0-d integer tensor). Never a
    float, not even 4.0: a ``/`` makes one even when it divides exactly.
    """

    token_embedding: int
    position_embedding: int
    attention: int
    mlp: int
    layer_norms: int
    final_norm: int
    lm_head: int
    total: int

    @property
    def embedding_share(self) -> float:
        """The token embedding's fraction of all parameters, ``token_embedding / total``, for
        whatever counts this ParamCount holds (one filled in by hand too: use its fields, never
        a config worked back from them): a float, as ``/`` gives it (0.31 for GPT-2 small,
        tied), not a percentage and not a ``Fraction``."""
        ### BEGIN SOLUTION
        return self.token_embedding / self.total
        ### END SOLUTION

    def memory_bytes(self, dtype: str | torch.dtype = "fp32") -> int:
        """Bytes to store every parameter once in ``dtype``: this record's ``total`` x bytes per
        number.

        Args:
            dtype: "fp32" (4 bytes a number, the default), "fp16" or "bf16" (2 each), or the
                same three as torch's dtypes (torch.float32, torch.float16, torch.bfloat16);
                by position or by name (``memory_bytes(dtype="fp16")``).

        Returns:
            A whole number of bytes (an int, as the counts are: use ``//``, never ``/``).

        Raises:
            ValueError: for any other dtype, a torch one too (torch.float64, torch.int8),
                and for the names spelled otherwise ("FP16", "float16": the names are exact);
                the message lists the ones understood.
        """
        ### BEGIN SOLUTION
        name = _TORCH_DTYPES.get(dtype, dtype) if isinstance(dtype, torch.dtype) else dtype
        if name not in DTYPE_BYTES:
            raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}")
        return self.total * DTYPE_BYTES[name]
        ### END SOLUTION


def count_params(
    vocab_size: int, d_model: int, n_layers: int, n_ctx: int, tied: bool = True
) -> ParamCount:
    """Count a GPT-2-style model's parameters without building it.

    The model: token and position embeddings, ``n_layers`` pre-LN blocks (LayerNorm, attention
    with a fused d -> 3d projection and a d -> d output projection, LayerNorm, an MLP d -> 4d
    -> d; every Linear and LayerNorm with a bias), a final LayerNorm, and a d -> V head without
    bias that is the token embedding itself when ``tied``.

    The arguments come by position, in this order, or by name.

    Args:
        vocab_size: V.
        d_model: d.
        n_layers: N, the number of blocks.
        n_ctx: the context length (rows of the position embedding).
        tied: whether the output layer reuses the token embedding (weight tying).

    Returns:
        The ``ParamCount``, every field a whole number;
        ``count_params(50257, 768, 12, 1024).total == 124_439_808``, and
        ``count_params(50257, 768, 12, 1024, False)`` is the same model untied. Exact for any
        sizes, from one of each (``count_params(1, 1, 1, 1)``) to models far larger than
        GPT-2, whose counts pass 2**31: count in Python's ints, never in int32 (a
        ``torch.int32`` tensor or ``numpy.int32`` wraps around past 2,147,483,647).
    """
    ### BEGIN SOLUTION
    d = d_model
    attention = (d * 3 * d + 3 * d) + (d * d + d)  # c_attn, c_proj (weights + biases)
    mlp = (d * 4 * d + 4 * d) + (4 * d * d + d)  # c_fc, c_proj
    layer_norms = 2 * (2 * d)  # ln_1, ln_2: a scale and a shift each
    counts = {
        "token_embedding": vocab_size * d,
        "position_embedding": n_ctx * d,
        "attention": n_layers * attention,
        "mlp": n_layers * mlp,
        "layer_norms": n_layers * layer_norms,
        "final_norm": 2 * d,
        "lm_head": 0 if tied else d * vocab_size,  # tied: the same V x d matrix, counted once
    }
    return ParamCount(**counts, total=sum(counts.values()))
    ### END SOLUTION


def format_table(count: ParamCount, title: str = "") -> str:
    """The calculator's split as a text table, with shares and memory at three precisions."""
    rows = [
        ("token embedding (wte)", count.token_embedding),
        ("position embedding (wpe)", count.position_embedding),
        ("attention", count.attention),
        ("mlp", count.mlp),
        ("layer norms", count.layer_norms),
        ("final norm", count.final_norm),
        ("output layer (lm_head)", count.lm_head),
    ]
    lines = [title] if title else []
    lines.append(f"{'part':<26}{'parameters':>15}{'share':>9}")
    for name, n in rows:
        lines.append(f"{name:<26}{n:>15,}{n / count.total:>9.1%}")
    lines.append(f"{'total':<26}{count.total:>15,}{1:>9.1%}")
    for dtype in DTYPE_BYTES:
        lines.append(f"{'memory, ' + dtype:<26}{count.memory_bytes(dtype) / 2**20:>12,.1f} MiB")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__spec__.name if __spec__ else 'params'}",  # lumen's or yours
        description="Where a GPT-2-style model's parameters live (the chapter's calculator).",
    )
    parser.add_argument("preset", nargs="?", choices=sorted(PRESETS), default="gpt2")
    parser.add_argument("--untied", action="store_true", help="a separate output layer")
    for name in ("vocab_size", "d_model", "n_layers", "n_ctx"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, help=f"override {name}")
    args = parser.parse_args(argv)
    shape = {k: v for k, v in PRESETS[args.preset].items() if k != "n_heads"}
    overrides = {"vocab_size": args.vocab_size, "d_model": args.d_model,
                 "n_layers": args.n_layers, "n_ctx": args.n_ctx}  # named, not getattr(args, k)
    shape.update({k: v for k, v in overrides.items() if v is not None})
    count = count_params(**shape, tied=not args.untied)
    described = ", ".join(f"{k}={v}" for k, v in shape.items())
    tying = "untied" if args.untied else "tied"
    print(format_table(count, f"{args.preset} ({described}, {tying})"))


if __name__ == "__main__":
    # As `python -m exercises params` does: a stub is one line that names its stage, not a
    # traceback (sections.section; this block is neither read by the rules nor run by the grader).
    from .sections import section

    section(f"count_params in {__package__}/", "params", main)  # as the command line says it
