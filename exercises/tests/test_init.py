"""Stage 'init': why the numbers start small (chapter: "Initialisation").

The references are the chapter's formula, measured on PyTorch's own random numbers, and GPT-2's
published initialisation.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's usual name)
from torch import nn

pytestmark = pytest.mark.init


def spread(t: torch.Tensor) -> float:
    return t.detach().double().std().item()


def test_expected_dot_std_is_the_chapters_formula(embeddings):
    got = embeddings.expected_dot_std(0.02, 768)
    assert math.isclose(got, 0.02**2 * math.sqrt(768), rel_tol=1e-12), (
        f"std 0.02 and d = 768 should give about 0.011 (std^2 sqrt(d)), got {got}"
    )


@pytest.mark.parametrize("std, d", [(0.02, 768), (1.0, 64)])
def test_the_prediction_matches_a_measurement(embeddings, std, d):
    a, b = torch.randn(20_000, d) * std, torch.randn(20_000, d) * std  # PyTorch's N(0, std^2)
    measured = spread((a * b).sum(dim=-1))
    predicted = embeddings.expected_dot_std(std, d)
    assert math.isclose(measured, predicted, rel_tol=0.05), (
        f"dot products of random rows with std {std}, d = {d} measure {measured:.4g}; "
        f"expected_dot_std predicts {predicted:.4g}"
    )


@pytest.mark.parametrize("std", [0.02, 0.01])
def test_rows_start_small_and_random(embeddings, std):
    weight = embeddings.Embedding(1000, 64, std=std).weight
    measured, mean = spread(weight), weight.mean().item()
    assert abs(measured - std) < 0.05 * std, (
        f"expected N(0, {std}^2) numbers, measured std {measured:.4g}"
    )
    assert abs(mean) < 0.05 * std, f"expected mean 0, got {mean:.4g}"
    differ = not torch.equal(weight[0], weight[1])
    assert differ, "rows 0 and 1 are identical: identical rows get identical gradients forever"


def test_std_none_means_one_over_sqrt_d(embeddings):
    measured = spread(embeddings.Embedding(2000, 256, std=None).weight)
    assert abs(measured - 1 / 16) < 0.05 / 16, (
        f"std=None should mean 1/sqrt(d_model) = 1/16 = 0.0625, measured {measured:.4g}"
    )


def test_reset_parameters_refills_in_place(embeddings):
    emb = embeddings.Embedding(50, 8)
    weight, before = emb.weight, emb.weight.detach().clone()
    emb.reset_parameters()
    assert emb.weight is weight, (
        "reset_parameters replaced the Parameter: an optimiser holding the old one would "
        "never see the new numbers; fill the existing one in place"
    )
    assert not torch.equal(emb.weight, before), "reset_parameters left the numbers unchanged"
    assert weight.is_leaf and weight.requires_grad and weight.grad_fn is None, (
        "the refill was recorded by autograd: the weight must stay a trainable leaf"
    )


def test_scale_output_multiplies_by_sqrt_d(embeddings):
    ids = torch.tensor([[3, 0, 19]])
    plain = embeddings.Embedding(20, 16)
    assert torch.equal(plain(ids), F.embedding(ids, plain.weight)), "scale=False: no scaling"
    scaled = embeddings.Embedding(20, 16, scale=True)
    expected = F.embedding(ids, scaled.weight) * 4.0  # sqrt(16)
    assert torch.equal(scaled(ids), expected), (
        "scale=True multiplies the looked-up rows by sqrt(d_model) = 4, as the original "
        "Transformer did"
    )


def test_gpt2_initialisation(gpt2):
    n_layers = 4
    config = gpt2.GPT2Config(vocab_size=500, n_ctx=64, d_model=64, n_layers=n_layers, n_heads=4)
    model = gpt2.GPT2(config)
    residual = 0.02 / math.sqrt(2 * n_layers)
    weights: dict[str, list[torch.Tensor]] = {"residual projections (c_proj)": [], "other": []}
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear) and module is not model.lm_head:
            key = "residual projections (c_proj)" if name.endswith("c_proj") else "other"
            weights[key].append(module.weight.flatten())
            bias = module.bias if module.bias is not None else torch.zeros(1)
            assert not bias.any(), f"{name}.bias should start at 0"
        if isinstance(module, nn.LayerNorm):
            assert torch.all(module.weight == 1) and not module.bias.any(), (
                f"{name} should start as the identity: scale 1, shift 0"
            )
    expected = {
        "token embedding (wte)": (model.wte.weight, 0.02),
        "position embedding (wpe)": (model.wpe.weight, 0.01),
        "residual projections (c_proj)": (
            torch.cat(weights["residual projections (c_proj)"]),
            residual,
        ),
        "other Linear weights": (torch.cat(weights["other"]), 0.02),
    }
    for part, (weight, std) in expected.items():
        measured = spread(weight)
        assert abs(measured - std) < 0.1 * std, (
            f"{part}: GPT-2 draws N(0, {std:.4g}^2), measured std {measured:.4g}"
            + (
                " (0.02 / sqrt(2 * n_layers): two residual adds per block)"
                if std == residual
                else ""
            )
        )
