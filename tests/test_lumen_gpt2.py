"""lumen/gpt2.py against Hugging Face's GPT-2, the parameter calculator and probability theory.

- the parameter counts of the four GPT-2 sizes, tied and untied, against ``count_params`` and
  against Hugging Face's ``GPT2LMHeadModel`` of the same shape (built on the meta device),
- the logits against ``GPT2LMHeadModel`` carrying the same random weights, in float64,
- weight tying: ``lm_head.weight`` is ``wte.weight`` itself, through ``.to()``, ``state_dict``
  and backward (the tied gradient is the sum of the two untied ones),
- the initialisation against the normal distributions GPT-2 uses, with tolerances derived from
  the sample size, and a fresh model's loss against ln V.

transformers is a test-only dependency: without it the tests that need it are skipped. Nothing
is downloaded; every Hugging Face model here is built from a config.
"""

from __future__ import annotations

import copy
import math
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 - F, as in the chapter
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

from lumen.gpt2 import GPT2, GPT2Config
from lumen.params import PRESETS, count_params
from tests.helpers import assert_normal, random_ids

SMALL = {"vocab_size": 1000, "n_ctx": 128, "d_model": 64, "n_layers": 4, "n_heads": 4}


def small_model(seed: int = 0, **overrides: object) -> GPT2:
    torch.manual_seed(seed)
    return GPT2(GPT2Config(**{**SMALL, **overrides}))


def expected_count(config: GPT2Config) -> int:
    return count_params(
        config.vocab_size, config.d_model, config.n_layers, config.n_ctx, config.tie_weights
    ).total


# --- parameter counts ----------------------------------------------------------------------


@pytest.mark.params
@pytest.mark.tying
@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_models_have_the_calculated_parameter_count(name: str, tied: bool) -> None:
    config = GPT2Config.from_preset(name, tie_weights=tied)
    with torch.device("meta"):  # shapes only: GPT-2 XL would need 6 GB
        model = GPT2(config)
    assert sum(p.numel() for p in model.parameters()) == expected_count(config)
    assert model.num_params() == expected_count(config)


@pytest.mark.params
@settings(max_examples=25, deadline=None)
@given(
    V=st.integers(1, 500),
    n_ctx=st.integers(1, 64),
    head_dim=st.integers(1, 8),
    n_heads=st.integers(1, 4),
    n_layers=st.integers(1, 3),
    tied=st.booleans(),
)
def test_any_model_has_the_calculated_parameter_count(
    V: int, n_ctx: int, head_dim: int, n_heads: int, n_layers: int, tied: bool
) -> None:
    config = GPT2Config(V, n_ctx, head_dim * n_heads, n_layers, n_heads, tied)
    with torch.device("meta"):
        model = GPT2(config)
    assert sum(p.numel() for p in model.parameters()) == expected_count(config)


# --- weight tying --------------------------------------------------------------------------


@pytest.mark.tying
def test_tied_head_is_the_embedding_parameter_itself() -> None:
    model = small_model()
    assert model.lm_head.weight is model.wte.weight, "the tied head must be wte's Parameter"
    assert isinstance(model.wte.weight, nn.Parameter)
    names = [name for name, _ in model.named_parameters()]
    assert "wte.weight" in names and "lm_head.weight" not in names, "counted once"
    V, d = SMALL["vocab_size"], SMALL["d_model"]
    shared = [p for p in model.parameters() if p.shape == (V, d)]
    assert len(shared) == 1


@pytest.mark.tying
def test_tied_logits_are_h_times_e_transposed() -> None:
    model = small_model().eval()
    ids = random_ids((2, 10), SMALL["vocab_size"], seed=1)
    captured = {}
    model.ln_f.register_forward_hook(lambda _m, _i, out: captured.setdefault("h", out))
    logits = model(ids)  # (B, T, V)
    torch.testing.assert_close(logits, captured["h"] @ model.wte.weight.T)


@pytest.mark.tying
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
def test_tie_survives_to_dtype(dtype: torch.dtype) -> None:
    model = small_model().to(dtype)
    assert model.lm_head.weight is model.wte.weight
    assert model.wte.weight.dtype == dtype
    assert model.num_params() == expected_count(model.config)


@pytest.mark.tying
def test_tie_survives_a_state_dict_round_trip() -> None:
    source, fresh = small_model(seed=1), small_model(seed=2)
    assert not torch.equal(source.wte.weight, fresh.wte.weight)
    fresh.load_state_dict(source.state_dict())
    assert fresh.lm_head.weight is fresh.wte.weight, "loading must not untie"
    assert torch.equal(fresh.wte.weight, source.wte.weight)
    ids = random_ids((2, 16), SMALL["vocab_size"], seed=3)
    assert torch.equal(fresh.eval()(ids), source.eval()(ids))

    clone = copy.deepcopy(source)
    assert clone.lm_head.weight is clone.wte.weight
    assert clone.wte.weight is not source.wte.weight


@pytest.mark.tying
def test_tied_gradient_is_the_sum_of_the_untied_ones() -> None:
    # With the same numbers in both matrices, the untied model computes the same function, and
    # the tied matrix gets the gradient of both its uses: input rows and output scores.
    tied = small_model(seed=4).double()
    untied = small_model(seed=5, tie_weights=False).double()
    state = tied.state_dict()  # lm_head.weight in it is wte's matrix
    untied.load_state_dict(state)
    ids = random_ids((2, 32), SMALL["vocab_size"], seed=6)
    for model in (tied, untied):
        logits = model(ids)
        F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).backward()
    both_uses = untied.wte.weight.grad + untied.lm_head.weight.grad
    torch.testing.assert_close(tied.wte.weight.grad, both_uses)


@pytest.mark.tying
def test_untied_head_is_a_separate_parameter() -> None:
    model = small_model(tie_weights=False)
    assert model.lm_head.weight is not model.wte.weight
    assert model.lm_head.weight.data_ptr() != model.wte.weight.data_ptr(), "not a view either"
    assert not torch.equal(model.lm_head.weight, model.wte.weight), "initialised separately"
    names = [name for name, _ in model.named_parameters()]
    assert "lm_head.weight" in names and "wte.weight" in names


@pytest.mark.tying
def test_forward_shapes_and_context_limit() -> None:
    model = small_model()
    assert model(random_ids((3, 7), SMALL["vocab_size"])).shape == (3, 7, SMALL["vocab_size"])
    assert model(random_ids((1, SMALL["n_ctx"]), SMALL["vocab_size"])).shape[1] == SMALL["n_ctx"]
    with pytest.raises(ValueError):
        model(random_ids((1, SMALL["n_ctx"] + 1), SMALL["vocab_size"]))


# --- initialisation ------------------------------------------------------------------------


@pytest.mark.init
@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
def test_initialisation_follows_gpt2(tied: bool) -> None:
    model = small_model(seed=7, tie_weights=tied)
    n_layers = SMALL["n_layers"]
    residual_std = 0.02 / math.sqrt(2 * n_layers)  # two residual adds per block
    assert_normal(model.wte.weight, 0.02, "wte")
    assert_normal(model.wpe.weight, 0.01, "wpe")
    if not tied:
        assert_normal(model.lm_head.weight, 0.02, "lm_head")

    def weights(suffix: str) -> Tensor:
        return torch.cat(
            [m.weight.flatten() for name, m in model.named_modules() if name.endswith(suffix)]
        )

    assert_normal(weights("attn.c_attn"), 0.02, "every c_attn")
    assert_normal(weights("mlp.c_fc"), 0.02, "every c_fc")
    assert_normal(weights("attn.c_proj"), residual_std, "every attn.c_proj")
    assert_normal(weights("mlp.c_proj"), residual_std, "every mlp.c_proj")
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear) and module.bias is not None:
            assert not module.bias.any(), f"{name}.bias should start at 0"
        if isinstance(module, nn.LayerNorm):
            assert bool((module.weight == 1).all()), f"{name}.weight should start at 1"
            assert not module.bias.any(), f"{name}.bias should start at 0"


@pytest.mark.init
def test_fresh_model_predicts_nearly_uniformly() -> None:
    # The logits h . E_i of a fresh tied model have std about 0.02 sqrt(d) = 0.16 (h is
    # LayerNorm'd, E is N(0, 0.02^2)), so the loss is about ln V + 0.16^2 / 2 = ln V + 0.013,
    # with sampling noise near 0.01 over 504 targets (measured over 20 seeds: +0.000 to +0.029).
    # 0.1 is safe yet catches a table drawn with std 0.1 (+0.5) or 1 (+56).
    V = 2000
    model = small_model(seed=8, vocab_size=V, n_ctx=64, n_layers=2).eval()
    ids = random_ids((8, 64), V, seed=9)
    with torch.no_grad():
        logits = model(ids)  # (B, T, V)
    loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).item()
    assert abs(loss - math.log(V)) < 0.1, f"loss {loss:.4f}, ln V = {math.log(V):.4f}"


# --- Hugging Face's GPT-2 as the reference -------------------------------------------------


@pytest.fixture(scope="module")
def hf() -> ModuleType:
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()  # config chatter is not a test result
    return transformers


def hf_config(hf: ModuleType, config: GPT2Config) -> object:
    """Hugging Face's GPT2Config of the same shape, without dropout."""
    return hf.GPT2Config(
        vocab_size=config.vocab_size,
        n_positions=config.n_ctx,
        n_embd=config.d_model,
        n_layer=config.n_layers,
        n_head=config.n_heads,
        tie_word_embeddings=config.tie_weights,
        activation_function="gelu_new",  # GPT-2's tanh GELU, lumen's nn.GELU("tanh")
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=config.vocab_size - 1,  # GPT-2's 50256 is outside a small vocabulary
        eos_token_id=config.vocab_size - 1,
        attn_implementation="eager",  # the plain softmax, not the SDPA kernel lumen calls
    )


def lumen_state_from_hf(hf_state: dict[str, Tensor]) -> dict[str, Tensor]:
    """Hugging Face's checkpoint names, renamed for lumen: ``transformer.h.0.`` -> ``blocks.0.``.

    HF's Conv1D stores its weight as (in, out); nn.Linear as (out, in), hence the transposes.
    """
    state = {}
    for key, value in hf_state.items():
        name = key.removeprefix("transformer.")
        if name.startswith("h."):
            name = "blocks." + name.removeprefix("h.")
            if (".attn.c_" in name or ".mlp.c_" in name) and name.endswith(".weight"):
                value = value.t()
        state[name] = value
    return state


@pytest.mark.tying
@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
def test_logits_match_hugging_face(hf: ModuleType, tied: bool) -> None:
    config = GPT2Config(300, n_ctx=32, d_model=48, n_layers=3, n_heads=4, tie_weights=tied)
    reference = hf.GPT2LMHeadModel(hf_config(hf, config)).double().eval()
    assert (reference.lm_head.weight is reference.transformer.wte.weight) == tied
    # Random numbers everywhere (HF starts biases at 0 and LayerNorms at 1, which would hide a
    # misplaced bias or a missing transpose).
    g = torch.Generator().manual_seed(10)
    with torch.no_grad():
        for name, p in reference.named_parameters():
            noise = 0.2 * torch.randn(p.shape, generator=g, dtype=p.dtype)
            p.copy_(noise + 1 if ".ln_" in name and name.endswith("weight") else noise)

    model = GPT2(config).double().eval()
    model.load_state_dict(lumen_state_from_hf(reference.state_dict()), strict=True)
    assert (model.lm_head.weight is model.wte.weight) == tied
    if not tied:
        assert not torch.equal(model.lm_head.weight, model.wte.weight)

    for shape in ((3, 32), (2, 7)):  # a full context and a short one
        ids = random_ids(shape, config.vocab_size, seed=11)
        with torch.no_grad():
            expected = reference(input_ids=ids).logits  # (B, T, V)
            actual = model(ids)
        torch.testing.assert_close(actual, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.params
@pytest.mark.tying
@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_parameter_counts_match_hugging_face(hf: ModuleType, name: str, tied: bool) -> None:
    config = GPT2Config.from_preset(name, tie_weights=tied)
    with torch.device("meta"):
        reference = hf.GPT2LMHeadModel(hf_config(hf, config))
        model = GPT2(config)
    # Parameters only: HF may also hold buffers (such as a causal mask) that are not weights.
    total = sum(p.numel() for p in reference.parameters())
    assert total == sum(p.numel() for p in model.parameters()) == expected_count(config)

    def part(*pieces: str) -> int:
        return sum(
            p.numel() for n, p in reference.named_parameters() if any(s in n for s in pieces)
        )

    count = count_params(config.vocab_size, config.d_model, config.n_layers, config.n_ctx, tied)
    assert part("wte.") == count.token_embedding
    assert part("wpe.") == count.position_embedding
    assert part(".attn.") == count.attention
    assert part(".mlp.") == count.mlp
    assert part(".ln_1.", ".ln_2.") == count.layer_norms
    assert part("ln_f.") == count.final_norm
    assert part("lm_head.") == count.lm_head  # a tied head is not listed: counted once


# --- on a GPU, when there is one -----------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.tying
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_tie_survives_the_move_to_cuda() -> None:
    model = small_model(seed=12).double().eval()
    ids = random_ids((2, 16), SMALL["vocab_size"], seed=13)
    with torch.no_grad():
        expected = model(ids)
    model.cuda()
    assert model.lm_head.weight is model.wte.weight and model.wte.weight.is_cuda
    with torch.no_grad():
        actual = model(ids.cuda()).cpu()
    torch.testing.assert_close(actual, expected, rtol=1e-10, atol=1e-10)
