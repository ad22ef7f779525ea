"""Stage 'params': where a GPT-2's parameters live (chapter: "Choosing the embedding dimension").

The references are GPT-2's published sizes and a model built from PyTorch's own layers.
"""

from __future__ import annotations

import dataclasses
import math
import operator

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.params

#: Parameters of the four GPT-2 checkpoints as released (tied), e.g. 124M for GPT-2 small.
PUBLISHED = {
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
}


def shape(params, preset: str) -> dict[str, int]:
    return {k: v for k, v in params.PRESETS[preset].items() if k != "n_heads"}


@pytest.mark.parametrize("preset", list(PUBLISHED))
def test_gpt2_sizes_as_published(params, preset):
    count = params.count_params(**shape(params, preset))
    assert count.total == PUBLISHED[preset], (
        f"{preset} has {PUBLISHED[preset]:,} parameters (tied), got {count.total:,}: {count}"
    )


def test_untying_adds_one_more_table(params):
    tied = params.count_params(50257, 768, 12, 1024, tied=True)
    untied = params.count_params(50257, 768, 12, 1024, tied=False)
    assert tied.lm_head == 0, (
        f"tied, the output layer is the token embedding, counted once: expected lm_head 0, "
        f"got {tied.lm_head:,}"
    )
    assert untied.lm_head == 50257 * 768, (
        f"untied, the output layer is its own d x V matrix (no bias): expected "
        f"{50257 * 768:,}, got {untied.lm_head:,}"
    )
    assert untied.total - tied.total == 50257 * 768, "untying adds exactly V x d parameters"


def pytorch_counts(V: int, d: int, N: int, n_ctx: int, tied: bool) -> dict[str, int]:
    """The same parts built from PyTorch's layers, each counted with numel()."""

    def size(*modules: nn.Module) -> int:
        return sum(p.numel() for m in modules for p in m.parameters())

    block = {
        "attention": size(nn.Linear(d, 3 * d), nn.Linear(d, d)),  # c_attn, c_proj
        "mlp": size(nn.Linear(d, 4 * d), nn.Linear(4 * d, d)),  # c_fc, c_proj
        "layer_norms": size(nn.LayerNorm(d), nn.LayerNorm(d)),  # ln_1, ln_2
    }
    counts = {
        "token_embedding": size(nn.Embedding(V, d)),
        "position_embedding": size(nn.Embedding(n_ctx, d)),
        **{part: N * n for part, n in block.items()},
        "final_norm": size(nn.LayerNorm(d)),
        "lm_head": 0 if tied else size(nn.Linear(d, V, bias=False)),
    }
    return {**counts, "total": sum(counts.values())}


@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
@pytest.mark.parametrize("V, d, N, n_ctx", [(11, 8, 2, 5), (97, 24, 3, 16)])
def test_every_part_matches_pytorchs_layers(params, V, d, N, n_ctx, tied):
    count = params.count_params(V, d, N, n_ctx, tied=tied)
    expected = pytorch_counts(V, d, N, n_ctx, tied)
    for part, n in expected.items():
        assert getattr(count, part) == n, (
            f"{part}: PyTorch's layers hold {n:,} parameters for V={V}, d={d}, {N} blocks, "
            f"n_ctx={n_ctx}, {'tied' if tied else 'untied'}; got {getattr(count, part):,} "
            "(every Linear and LayerNorm has a bias; the MLP is d -> 4d -> d)"
        )


def test_the_table_is_a_large_share_of_a_small_model(params):
    small = params.count_params(**shape(params, "gpt2"))
    share = float(small.embedding_share)  # a float; from counts in tensors, a float32 one
    assert math.isclose(share, 38_597_376 / 124_439_808, rel_tol=1e-6), (
        f"GPT-2 small's table is 38,597,376 of 124,439,808 parameters (31%), "
        f"got a share of {small.embedding_share}"
    )
    shares = [float(params.count_params(**shape(params, p)).embedding_share) for p in PUBLISHED]
    assert shares == sorted(shares, reverse=True), (
        f"the table grows with V x d, the blocks with N x d^2, so its share should shrink from "
        f"GPT-2 small to XL; got {[round(s, 3) for s in shares]}"
    )


def test_arguments_by_position_or_by_name(params):
    V, d, N, n_ctx = 97, 24, 3, 16  # four different sizes, so two swapped arguments show
    expected = pytorch_counts(V, d, N, n_ctx, tied=False)
    calls = {
        f"count_params({V}, {d}, {N}, {n_ctx}, False)": params.count_params(V, d, N, n_ctx, False),
        f"count_params(vocab_size={V}, d_model={d}, n_layers={N}, n_ctx={n_ctx}, tied=False)":
            params.count_params(vocab_size=V, d_model=d, n_layers=N, n_ctx=n_ctx, tied=False),
    }
    for call, count in calls.items():
        assert count.total == expected["total"], (
            f"{call} gives a total of {count.total:,}, expected {expected['total']:,}: keep the "
            "stub's signature, count_params(vocab_size, d_model, n_layers, n_ctx, tied=True), "
            "in that order, so that both calls work"
        )


#: Each part's exact count at two edges, worked out by hand from PyTorch's layer shapes (a
#: Linear n_in x n_out holds n_in * n_out weights and n_out biases; a LayerNorm 2 d numbers)
#: and written out as numbers (building the second model would take hundreds of GB). The
#: second passes 2**32 in its attention, MLP and total. lm_head is for tied=False (tied: 0).
EDGES = {
    "one of each": ((1, 1, 1, 1), {
        "token_embedding": 1, "position_embedding": 1, "attention": 8, "mlp": 13,
        "layer_norms": 4, "final_norm": 2, "lm_head": 1}),
    "past 2**31": ((151_936, 8_192, 80, 32_768), {
        "token_embedding": 1_244_659_712, "position_embedding": 268_435_456,
        "attention": 21_477_457_920, "mlp": 42_952_949_760, "layer_norms": 2_621_440,
        "final_norm": 16_384, "lm_head": 1_244_659_712}),
}


@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
@pytest.mark.parametrize("edge", list(EDGES))
def test_counts_are_exact_at_the_edges(params, edge, tied):
    (V, d, N, n_ctx), parts = EDGES[edge]
    expected = {**parts, "lm_head": 0 if tied else parts["lm_head"]}
    expected["total"] = sum(expected.values())
    count = params.count_params(V, d, N, n_ctx, tied)
    for part, n in expected.items():
        got = operator.index(getattr(count, part))
        wrapped = got != n and (got - n) % 2**32 == 0
        assert got == n, (
            f"count_params({V}, {d}, {N}, {n_ctx}, {tied}).{part} is {got:,}, expected {n:,}"
            + (": the count wrapped around 2**32, so it was computed in int32 (a torch.int32 "
               "tensor or numpy.int32); count in Python's ints" if wrapped else "")
        )


@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
def test_counts_are_whole_numbers(params, tied):
    count = params.count_params(50257, 768, 12, 1024, tied)
    for field in dataclasses.fields(count):
        value = getattr(count, field.name)
        try:
            operator.index(value)  # an int; numpy's integers pass too
        except TypeError:
            pytest.fail(
                f"{field.name} is {value!r}, a {type(value).__name__}: a parameter count is a "
                "whole number (an int), never a float. A / makes a float even when it divides "
                "exactly: keep to +, * and //"
            )


def test_embedding_share_of_any_count(params):
    count = params.ParamCount(token_embedding=300, position_embedding=100, attention=400, mlp=150,
                              layer_norms=20, final_norm=10, lm_head=20, total=1000)
    share = count.embedding_share
    assert isinstance(share, float) and math.isclose(share, 0.3), (
        "embedding_share is token_embedding / total, as a fraction: 300 / 1000 = 0.3 for this "
        f"ParamCount (filled in by hand, not by count_params); got {share!r}"
    )


def test_memory_bytes(params):
    count = params.count_params(**shape(params, "gpt2"))
    n = 124_439_808
    sizes = {"fp32": 4, "fp16": 2, "bf16": 2, torch.float32: 4, torch.float16: 2,
             torch.bfloat16: 2}
    calls = {f"memory_bytes({dtype!r})": (lambda dtype=dtype: count.memory_bytes(dtype), size)
             for dtype, size in sizes.items()}
    calls["memory_bytes()"] = (count.memory_bytes, 4)  # the default is fp32
    calls["memory_bytes(dtype='fp16')"] = (lambda: count.memory_bytes(dtype="fp16"), 2)
    for call, (memory, size) in calls.items():
        got = memory()
        assert got == size * n, (
            f"{call}: {size} bytes per parameter, so {size * n:,} bytes; got {got!r}"
        )
        try:
            operator.index(got)  # an int; numpy's integers pass too
        except TypeError:
            pytest.fail(f"{call} is {got!r}, a {type(got).__name__}: bytes are a whole number "
                        "(an int); use // rather than /")
    by_hand = params.ParamCount(token_embedding=301, position_embedding=99, attention=401,
                                mlp=151, layer_norms=21, final_norm=7, lm_head=21, total=1001)
    assert by_hand.memory_bytes("fp16") == 2002, (
        "memory_bytes('fp16') of a ParamCount filled in by hand (total=1001) is 1001 x 2 = "
        f"2002 bytes, from its own total; got {by_hand.memory_bytes('fp16')!r}")


@pytest.mark.parametrize("dtype", ["int3", "fp12", torch.float64, torch.int8, "FP16", "float16"])
def test_unknown_dtype_is_refused(params, dtype):
    count = params.count_params(**shape(params, "gpt2"))
    try:
        got = count.memory_bytes(dtype)
    except ValueError as error:
        message = str(error)
    except Exception as error:  # noqa: BLE001 - any other exception is the mistake shown
        pytest.fail(f"memory_bytes({dtype!r}) raised {type(error).__name__}: {error}; it should "
                    "raise ValueError, the exception for a bad argument value")
    else:
        pytest.fail(f"memory_bytes({dtype!r}) returned {got!r}: it should raise ValueError, as "
                    "it knows only fp32, fp16 and bf16 (as strings or torch's float32, float16 "
                    "and bfloat16)")
    missing = [known for known in ("fp32", "fp16", "bf16") if known not in message]
    assert not missing, (
        f"memory_bytes({dtype!r}) raised ValueError({message!r}): the message should list the "
        "dtypes it understands (fp32, fp16, bf16), so that the caller can fix the call"
    )
