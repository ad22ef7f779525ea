"""lumen/params.py, the parameter calculator, against published numbers and a closed form.

- GPT-2's four sizes against the parameter counts of the released checkpoints (tied), and the
  untied counts against those plus one more V x d matrix,
- any shape against the closed form V d + n_ctx d + N (12 d^2 + 13 d) + 2 d (+ V d untied),
- the embedding's share and the memory at three precisions by arithmetic,
- ``python -m lumen.params`` as a learner runs it, in a subprocess.

The parameter counts of the built models (lumen's GPT2 and Hugging Face's) are checked against
the same numbers in test_lumen_gpt2.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lumen.params import PRESETS, ParamCount, count_params

REPO = Path(__file__).resolve().parents[1]

#: GPT-2's published sizes, tied (each checkpoint's own parameter count).
TIED_TOTALS = {
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
}


def preset_count(name: str, tied: bool = True) -> ParamCount:
    shape = {k: v for k, v in PRESETS[name].items() if k != "n_heads"}
    return count_params(**shape, tied=tied)


def closed_form(V: int, d: int, N: int, n_ctx: int, tied: bool) -> int:
    """Per block: c_attn 3d^2 + 3d, attn c_proj d^2 + d, c_fc 4d^2 + 4d, mlp c_proj 4d^2 + d,
    two LayerNorms 4d; in all 12 d^2 + 13 d. Plus wte, wpe, ln_f and an untied head."""
    return V * d + n_ctx * d + N * (12 * d * d + 13 * d) + 2 * d + (0 if tied else V * d)


@pytest.mark.params
@pytest.mark.parametrize("name", list(TIED_TOTALS))
def test_presets_match_the_published_sizes(name: str) -> None:
    V, d = PRESETS[name]["vocab_size"], PRESETS[name]["d_model"]
    assert preset_count(name).total == TIED_TOTALS[name]
    assert preset_count(name, tied=False).total == TIED_TOTALS[name] + V * d
    assert preset_count(name).lm_head == 0
    assert preset_count(name, tied=False).lm_head == V * d


@pytest.mark.params
def test_gpt2_small_in_detail() -> None:
    assert count_params(50257, 768, 12, 1024) == ParamCount(
        token_embedding=38_597_376,
        position_embedding=786_432,
        attention=28_348_416,
        mlp=56_669_184,
        layer_norms=36_864,
        final_norm=1_536,
        lm_head=0,
        total=124_439_808,
    )
    assert count_params(50257, 768, 12, 1024, tied=False).total == 163_037_184


@pytest.mark.params
@given(
    V=st.integers(1, 100_000),
    d=st.integers(1, 4096),
    N=st.integers(0, 96),
    n_ctx=st.integers(1, 8192),
    tied=st.booleans(),
)
def test_any_shape_matches_the_closed_form(V: int, d: int, N: int, n_ctx: int, tied: bool) -> None:
    count = count_params(V, d, N, n_ctx, tied=tied)
    assert count.total == closed_form(V, d, N, n_ctx, tied)
    parts = (
        count.token_embedding,
        count.position_embedding,
        count.attention,
        count.mlp,
        count.layer_norms,
        count.final_norm,
        count.lm_head,
    )
    assert sum(parts) == count.total, "the parts must add up to the total"
    assert count.token_embedding == V * d and count.position_embedding == n_ctx * d
    assert count.lm_head == (0 if tied else V * d)


@pytest.mark.params
def test_embedding_share() -> None:
    assert round(preset_count("gpt2").embedding_share, 3) == 0.310  # the chapter's 31%
    assert preset_count("gpt2").embedding_share == 38_597_376 / 124_439_808
    # A large fraction of a small model and a small fraction of a large one.
    shares = [preset_count(name).embedding_share for name in TIED_TOTALS]
    assert shares == sorted(shares, reverse=True)


@pytest.mark.params
@pytest.mark.parametrize(
    "dtype, size",
    [
        ("fp32", 4),
        ("fp16", 2),
        ("bf16", 2),
        (torch.float32, 4),
        (torch.float16, 2),
        (torch.bfloat16, 2),
    ],
    ids=str,
)
def test_memory_bytes(dtype: str | torch.dtype, size: int) -> None:
    for tied in (True, False):
        count = preset_count("gpt2", tied)
        assert count.memory_bytes(dtype) == size * count.total
    assert preset_count("gpt2").memory_bytes() == 4 * 124_439_808  # fp32 by default


@pytest.mark.params
@pytest.mark.parametrize("dtype", ["fp8", "float32", "", torch.float64, torch.int8], ids=str)
def test_unknown_dtype_raises_value_error_listing_the_known_ones(dtype: str | torch.dtype) -> None:
    with pytest.raises(ValueError, match="fp32"):
        preset_count("gpt2").memory_bytes(dtype)


def run_calculator(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "lumen.params", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.params
def test_command_line_prints_the_untied_table() -> None:
    out = run_calculator("gpt2", "--untied")
    assert "untied" in out
    assert "163,037,184" in out, out  # the total
    assert out.count("38,597,376") == 2, out  # wte and lm_head, the same size
    assert "23.7%" in out, out  # each of them: 38,597,376 / 163,037,184
    assert "621.9 MiB" in out and "311.0 MiB" in out, out  # 4 and 2 bytes each


@pytest.mark.params
def test_command_line_prints_the_tied_table_of_another_preset() -> None:
    out = run_calculator("gpt2-xl")
    assert "1,557,611,200" in out, out
    assert "untied" not in out
