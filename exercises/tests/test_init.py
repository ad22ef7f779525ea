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


def normal_gap(t: torch.Tensor, std: float) -> tuple[float, float]:
    """How far ``t``'s values are from N(0, std^2) draws: (the largest gap between their
    distribution and PyTorch's normal CDF, torch.special.ndtr; the most that as many normal
    draws show but for a one-in-a-million chance, by the Dvoretzky-Kiefer-Wolfowitz bound)."""
    z = (t.detach().double().flatten() / std).sort().values
    n = z.numel()
    cdf = torch.special.ndtr(z)
    levels = torch.arange(n + 1, dtype=torch.float64) / n  # the sample's own CDF, step by step
    gap = torch.maximum(levels[1:] - cdf, cdf - levels[:-1]).max().item()
    return gap, math.sqrt(math.log(2e6) / (2 * n))


def assert_normal(t: torch.Tensor, std: float, what: str) -> None:
    gap, bound = normal_gap(t, std)
    x = t.detach().double()
    kurtosis = (x.pow(4).mean() / x.pow(2).mean() ** 2 - 3).item()
    assert gap <= bound, (
        f"{what}: the right std, but not normal draws: their distribution is {gap:.3f} away "
        f"from N(0, {std:.4g}^2)'s (normal draws stay within {bound:.3f}); excess kurtosis "
        f"{kurtosis:.2f} (normal 0, uniform -1.2, every entry +-std -2). Draw with normal_, "
        "not uniform_ or a pattern"
    )


def test_expected_dot_std_is_the_chapters_formula(embeddings):
    got = embeddings.expected_dot_std(0.02, 768)
    assert math.isclose(got, 0.02**2 * math.sqrt(768), rel_tol=1e-12), (
        f"std 0.02 and d = 768 should give about 0.011 (std^2 sqrt(d)), got {got}"
    )
    by_name = embeddings.expected_dot_std(std=0.5, d_model=10)  # the stub's parameter names
    assert math.isclose(by_name, 0.5**2 * math.sqrt(10), rel_tol=1e-12), (
        f"expected_dot_std(std=0.5, d_model=10) should be 0.25 * sqrt(10) = 0.79, got {by_name}"
    )
    zero = embeddings.expected_dot_std(0.0, 5)  # the edge: rows of zeros have dot products 0
    assert zero == 0.0, f"expected_dot_std(0.0, 5) should be 0.0, got {zero}"


@pytest.mark.parametrize("std, d", [(0.02, 768), (1.0, 64)])
def test_the_prediction_matches_a_measurement(embeddings, std, d):
    a, b = torch.randn(20_000, d) * std, torch.randn(20_000, d) * std  # PyTorch's N(0, std^2)
    measured = spread((a * b).sum(dim=-1))
    predicted = embeddings.expected_dot_std(std, d)
    assert math.isclose(measured, predicted, rel_tol=0.05), (
        f"dot products of random rows with std {std}, d = {d} measure {measured:.4g}; "
        f"expected_dot_std predicts {predicted:.4g}"
    )


@pytest.mark.parametrize("std", [0.02, 0.01, 0.4])
def test_rows_start_small_and_random(embeddings, std):
    weight = embeddings.Embedding(1000, 64, std, False).weight  # V, d, std, scale by position
    measured, mean = spread(weight), weight.mean().item()
    assert abs(measured - std) < 0.05 * std, (
        f"expected N(0, {std}^2) numbers, measured std {measured:.4g}"
    )
    assert abs(mean) < 0.05 * std, f"expected mean 0, got {mean:.4g}"
    distinct = torch.unique(weight.detach(), dim=0).shape[0]
    assert distinct == 1000, (
        f"only {distinct} of the 1000 rows differ: identical rows get identical gradients "
        "forever (not zeros, not a repeated row: random draws)"
    )


@pytest.mark.parametrize("std", [0.02, None])
def test_rows_are_normal_draws(embeddings, std):
    weight = embeddings.Embedding(2000, 64, std=std).weight
    assert_normal(weight, std or 1 / 8, f"Embedding(2000, 64, std={std}).weight")


@pytest.mark.parametrize("d", [256, 16])
def test_std_none_means_one_over_sqrt_d(embeddings, d):
    measured = spread(embeddings.Embedding(2000, d, std=None).weight)
    expected = 1 / math.sqrt(d)
    assert abs(measured - expected) < 0.05 * expected, (
        f"std=None should mean 1/sqrt(d_model) = 1/sqrt({d}) = {expected:.4g}, measured "
        f"{measured:.4g}"
    )


def test_std_zero_means_zeros(embeddings):
    weight = embeddings.Embedding(10, 4, std=0.0).weight
    assert not weight.any(), (
        "std=0.0 is a std (every entry 0), not 'no std': test `self.std is None`, not "
        f"`self.std or ...`, which treats 0.0 like None; got entries up to {weight.abs().max():.3g}"
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
    wide = embeddings.Embedding(500, 64, std=0.05).double()
    weight = wide.weight
    wide.reset_parameters()
    assert wide.weight is weight and weight.dtype == torch.float64, (
        f"after .double() and reset_parameters, the weight is {wide.weight.dtype}: refill it in "
        "place (normal_), which keeps its dtype and device; a new tensor (torch.randn) is float32"
    )
    assert abs(spread(weight) - 0.05) < 0.005, "the refilled float64 weight is not N(0, 0.05^2)"


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


@pytest.mark.parametrize("scale", [True, False], ids=["scaled", "unscaled"])
def test_scale_output_gradient_and_input(embeddings, scale):
    layer = embeddings.Embedding(20, 16, 0.02, scale)  # V, d, std, scale by position
    leaf = torch.randn(3, 16, dtype=torch.float64, requires_grad=True)
    x = leaf.clone()  # as forward gives its rows: tracked by autograd
    before = x.detach().clone()
    out = layer.scale_output(x)
    assert torch.equal(x.detach(), before), (
        "scale_output changed its input x in place: return a new tensor (x * math.sqrt(...)), "
        "never x.mul_ or x *= ..."
    )
    assert out.dtype == torch.float64, f"scale_output turned float64 rows into {out.dtype}"
    one = layer.scale_output(torch.randn(1, 16, dtype=torch.float64))
    assert tuple(one.shape) == (1, 16), (
        f"scale_output turned x of shape (1, 16) into {tuple(one.shape)}: keep x's shape "
        "(no squeeze())"
    )
    assert out.requires_grad, (
        "no gradient can flow through scale_output: its output is cut off from autograd "
        "(.detach(), .data or torch.no_grad()), so the embedding would never train"
    )
    (grad,) = torch.autograd.grad(out.sum(), leaf)
    factor = 4.0 if scale else 1.0  # sqrt(16), or x as it is
    assert torch.allclose(grad, torch.full_like(grad, factor)), (
        f"the gradient of scale_output(x) with respect to x should be {factor:g} everywhere "
        f"(scale={scale}), got {grad.flatten()[:3].tolist()}..."
    )


@pytest.mark.parametrize("shape, dtype", [((5, 9), torch.float32), ((2, 2, 16), torch.bfloat16),
                                          ((16,), torch.float64), ((0, 3, 16), torch.float32)],
                         ids=["float32", "bfloat16", "one row", "no rows"])
@pytest.mark.parametrize("scale", [True, False], ids=["scaled", "unscaled"])
def test_scale_output_keeps_dtype_and_shape(embeddings, shape, dtype, scale):
    d = shape[-1]
    layer = embeddings.Embedding(20, d, 0.02, scale)
    x = torch.randn(shape).to(dtype)
    out = layer.scale_output(x)
    assert out.dtype == dtype and out.shape == x.shape, (
        f"scale_output of {dtype} rows of shape {tuple(shape)} returned {out.dtype} rows of "
        f"shape {tuple(out.shape)}: keep x's dtype and shape (multiply by the Python float "
        "math.sqrt(self.d_model), no .double() or .float())"
    )
    expected = x * math.sqrt(d) if scale else x  # sqrt(9) = 3 and sqrt(16) = 4: exact
    assert torch.equal(out, expected), (
        f"scale={scale}, d_model={d}: expected x * {math.sqrt(d) if scale else 1:g}, got "
        f"{out.flatten()[:3].tolist()}... for x = {x.flatten()[:3].tolist()}..."
    )


def test_reset_and_scale_stay_on_the_layers_device(embeddings, other_device):
    device = other_device.name
    layer = other_device.to(embeddings.Embedding(20, 16, 0.02, True))
    x = other_device.to(torch.randn(3, 16))
    weight = other_device.run(lambda: (layer.reset_parameters(), layer.weight)[1])
    out = other_device.run(lambda: layer.scale_output(x))
    assert weight.device.type == device and out.device.type == device, (
        f"on a layer moved to {device}, reset_parameters left the weight on {weight.device} "
        f"and scale_output returned rows on {out.device}: refill the weight in place and "
        "multiply by a Python float, so both stay on the layer's device (no tensor made on a "
        "fixed device)"
    )


def test_init_weights_keeps_the_models_device(gpt2, other_device):
    device = other_device.name
    config = gpt2.GPT2Config(vocab_size=50, n_ctx=16, d_model=32, n_layers=2, n_heads=4)
    model = other_device.to(gpt2.GPT2(config))
    other_device.run(model.init_weights)  # again, on the model's new device
    moved = [name for name, p in model.named_parameters() if p.device.type != device]
    assert not moved, (
        f"on a model moved to {device}, init_weights() left {moved[0]} elsewhere: fill each "
        "parameter in place (nn.init.normal_, zeros_, ones_), which keeps its device; a tensor "
        "made on a fixed device and put in .data moves the parameter off the model's device"
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
        assert_normal(weight, std, part)


def test_init_weights_sets_every_parameter_again(gpt2):
    config = gpt2.GPT2Config(vocab_size=50, n_ctx=16, d_model=32, n_layers=2, n_heads=4)
    model = gpt2.GPT2(config)
    for parameter in model.parameters():  # as training moves them
        parameter.data.fill_(3.0)
    model.init_weights()  # it may run again: every parameter is set anew
    for name, layer in model.named_modules():
        if isinstance(layer, nn.LayerNorm):
            assert torch.all(layer.weight == 1) and not layer.bias.any(), (
                f"init_weights run again left {name} changed: it sets the LayerNorms' scale 1 "
                "and shift 0 itself (nn.init.ones_, zeros_), not leaving them to the "
                "LayerNorm's constructor")
        if isinstance(layer, nn.Linear):
            assert layer.bias is None or not layer.bias.any(), f"{name}.bias should be 0"
            assert not bool((layer.weight == 3.0).any()), f"{name}.weight was not redrawn"
    assert not bool((model.wte.weight == 3.0).any()), "wte.weight was not redrawn"
    assert not bool((model.wpe.weight == 3.0).any()), "wpe.weight was not redrawn"


def test_untied_head_initialisation(gpt2):
    config = gpt2.GPT2Config(vocab_size=500, n_ctx=64, d_model=64, n_layers=2, n_heads=4,
                             tie_weights=False)
    head = gpt2.GPT2(config).lm_head.weight
    measured = spread(head)
    assert abs(measured - 0.02) < 0.002, (
        f"untied, lm_head is a Linear like the others: N(0, 0.02^2), measured std {measured:.4g} "
        "(nn.Linear's own default is uniform, std 1/sqrt(3 d_model) = 0.072 here)"
    )
    assert_normal(head, 0.02, "the untied lm_head.weight")


def test_init_weights_keeps_the_dtype(gpt2):
    config = gpt2.GPT2Config(vocab_size=500, n_ctx=64, d_model=64, n_layers=2, n_heads=4)
    model = gpt2.GPT2(config).double()
    model.init_weights()  # again, after the conversion
    changed = [name for name, p in model.named_parameters() if p.dtype != torch.float64]
    assert not changed, (
        f"after .double() and init_weights(), {changed[0]} is not float64: fill each parameter "
        "in place (nn.init.normal_, zeros_, ones_), which keeps its dtype; assigning "
        ".data = torch.randn(...) puts a float32 tensor in its place"
    )
    assert abs(spread(model.wte.weight) - 0.02) < 0.002, "wte is not N(0, 0.02^2) after the re-init"


def test_the_constructor_keeps_what_reset_parameters_drew(embeddings, monkeypatch):
    """Given code is the grader's ("Given code" at the top of embeddings.py): the last line of
    Embedding.__init__ calls reset_parameters, and nothing after it changes the draw."""
    cls = embeddings.Embedding
    reset, drawn = cls.reset_parameters, []

    def recorded(self):
        reset(self)
        drawn.append(self.weight.detach().clone())

    monkeypatch.setattr(cls, "reset_parameters", recorded)
    layer = cls(50, 8, std=0.02)
    assert drawn, ("Embedding.__init__ never called reset_parameters: its last line, "
                   "self.reset_parameters(), is given code; leave it as the stub has it")
    assert torch.equal(layer.weight.detach(), drawn[-1]), (
        "your Embedding.__init__ does not keep what reset_parameters drew: the given lines "
        "around YOUR CODE HERE were changed (something after self.reset_parameters() changes "
        "the weight). Initialise in reset_parameters alone"
    )


def test_gpt2_keeps_what_init_weights_drew(gpt2, monkeypatch):
    """Given code is the grader's: GPT2.__init__ calls init_weights, then tie_weights, and
    changes nothing that init_weights drew."""
    cls = gpt2.GPT2
    init, drawn = cls.init_weights, []

    def recorded(self):
        init(self)
        drawn.append({k: v.detach().clone() for k, v in self.named_parameters()})

    monkeypatch.setattr(cls, "init_weights", recorded)
    model = cls(gpt2.GPT2Config(vocab_size=60, n_ctx=16, d_model=16, n_layers=2, n_heads=2,
                                tie_weights=False))
    assert drawn, ("GPT2.__init__ never called init_weights: GPT2.__init__ is given code, "
                   "which calls self.init_weights(); leave it as the stub has it")
    changed = [k for k, v in model.named_parameters()
               if k not in drawn[-1] or not torch.equal(v.detach(), drawn[-1][k])]
    assert not changed, (
        f"once built, {changed[0]} is not what init_weights drew: GPT2.__init__ (given code) "
        "was changed after its call to self.init_weights(). Initialise in init_weights alone"
    )
