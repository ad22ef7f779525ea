"""Hidden tests, stage 'init': why the numbers start small (and not at zero).

The learner's ``Embedding.reset_parameters``, ``scale_output``, ``expected_dot_std`` and
``GPT2.init_weights`` run with every other stage's functions replaced by public scaffolds
(``autograder/sandboxed/scaffolds.py``), whose tie_weights copies (the models here are untied).
A correct solution may draw in another order than lumen, so the statistical checks compare the
sample's spread, mean and shape with the chapter's N(0, std^2), within bounds derived from the
sample size (``_misfit``) and computed here, the draws' dtype included; the rest is exact.

The draws the learner's code makes are the thing under test: drawing numbers that fit is what
reset_parameters and init_weights are for. Two requirements are observed in the learner's
process (reset_parameters refills the SAME Parameter, so an optimiser built before it moves
the new rows; scale_output leaves its input alone): those checks earn their points behind the
rules (``bans.certify``; docs/threat-model.md).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import torch

from autograder.sandboxed.protocol import MetaTensor
from autograder.suites import bans, values
from autograder.suites.feedback import (
    Mistake,
    checked_devices,
    describe_error,
    device_of,
    expect_tensor,
    remembered,
    unwrap,
    unwrap_on,
    verdict_of,
)
from lumen import gpt2 as ref

STAGE = "init"
MODULE = "embeddings"
V, D = 500, 64  # 32,000 draws per table: a sample std within 3% of the true one
#: Every weight of this GPT-2 holds over 36,000 draws (wpe 190 x 192, c_proj 192 x 192), so
#: each is judged on its own with the power of a large sample (see ``_misfit``).
CONFIG = {"vocab_size": 200, "n_ctx": 190, "d_model": 192, "n_layers": 2, "n_heads": 4,
          "tie_weights": False}  # untied, so that lm_head's own initialisation is seen too
RESET = "with torch.no_grad(): self.weight.normal_(0.0, std)"
LR = 0.5  # the SGD step of the in-place check (test_reset_refills_in_place)

#: Hidden test -> the visible tests (exercises/tests/test_init.py) of the same requirement.
VISIBLE: dict[str, tuple[str, ...]] = {
    "test_reset_parameters_uses_std": ("test_rows_start_small_and_random",
                                       "test_rows_are_normal_draws",
                                       "test_reset_parameters_refills_in_place"),
    "test_std_none_means_inverse_sqrt_d": ("test_std_none_means_one_over_sqrt_d",
                                           "test_std_zero_means_zeros"),
    "test_rows_are_not_identical": ("test_rows_start_small_and_random",),
    "test_reset_refills_in_place": ("test_reset_parameters_refills_in_place",
                                    "test_reset_and_scale_stay_on_the_layers_device"),
    "test_scale_output": ("test_scale_output_multiplies_by_sqrt_d",
                          "test_scale_output_gradient_and_input",
                          "test_scale_output_keeps_dtype_and_shape",
                          "test_reset_and_scale_stay_on_the_layers_device"),
    "test_scale_output_leaves_its_input": ("test_scale_output_gradient_and_input",),
    "test_expected_dot_std": ("test_expected_dot_std_is_the_chapters_formula",
                              "test_the_prediction_matches_a_measurement"),
    "test_gpt2_weight_stds": ("test_gpt2_initialisation", "test_untied_head_initialisation",
                              "test_init_weights_keeps_the_dtype",
                              "test_init_weights_keeps_the_models_device"),
    "test_gpt2_biases_and_layernorm": ("test_gpt2_initialisation",
                                       "test_init_weights_sets_every_parameter_again"),
    "test_embedding_keeps_its_draw_as_you_wrote_it": (
        "test_the_constructor_keeps_what_reset_parameters_drew",
        "test_rows_start_small_and_random", "test_rows_are_normal_draws"),
    "test_gpt2_keeps_its_initialisation_as_you_wrote_it": (
        "test_gpt2_keeps_what_init_weights_drew", "test_gpt2_initialisation",
        "test_untied_head_initialisation", "test_init_weights_keeps_the_dtype"),
}

# How far a sample of n correct draws may stray. Each check below is a bound that n
# independent N(0, std^2) draws cross with probability at most FALSE_ALARM (exactly, not by a
# normal approximation); a grade runs fewer than 100 such checks, so a correct initialisation
# loses points with probability below 1e-9.
FALSE_ALARM = 1e-11
_LOG = math.log(2 / FALSE_ALARM)  # each check has two sides, FALSE_ALARM / 2 each
_Z = NormalDist().inv_cdf(1 - FALSE_ALARM / 2)  # 6.8 standard errors


def _spread_bounds(n: int) -> tuple[float, float]:
    """Bounds on rms / std, rms = sqrt(mean(x^2)) of n draws of N(0, std^2): n (rms/std)^2 is
    chi-squared with n degrees of freedom, whose tails Laurent and Massart (2000) bound:
    P(chi2 >= n + 2 sqrt(n t) + 2t) <= e^-t and P(chi2 <= n - 2 sqrt(n t)) <= e^-t."""
    half = 2 * math.sqrt(n * _LOG)
    return math.sqrt(max(n - half, 0.0) / n), math.sqrt((n + half + 2 * _LOG) / n)


def _ks_distance(z: torch.Tensor) -> float:
    """The largest gap between the empirical distribution of ``z`` and N(0, 1)'s (the
    Kolmogorov-Smirnov statistic)."""
    # numpy's sort (vectorised) takes ~15x less time than torch's on one thread, and a sort
    # is exact: the same ascending values, so the same distance
    cdf = torch.special.ndtr(torch.from_numpy(np.sort(z.detach().cpu().numpy())))  # (n,)
    n = z.numel()
    steps = torch.arange(n + 1, dtype=torch.float64) / n  # the empirical CDF's n + 1 levels
    return float(torch.maximum(steps[1:] - cdf, cdf - steps[:-1]).max())


def _misfit(t: torch.Tensor, std: float) -> str | None:
    """Why ``t`` does not look like independent draws of N(0, std^2), or None if it does.

    Three checks, each with a bound derived from the sample size n (FALSE_ALARM above): the
    spread, sqrt(mean(x^2)), within ``_spread_bounds``; the mean within _Z standard errors
    (std / sqrt(n)); and the shape, the Kolmogorov-Smirnov distance to N(0, std^2) within
    sqrt(ln(2 / FALSE_ALARM) / 2n) (the Dvoretzky-Kiefer-Wolfowitz inequality, with
    Massart's constant), so a uniform fill or a fixed pattern with the right std fails too.
    With n >= 32,000 here, the spread is pinned within 3% and the distance within 0.02, while
    every mistake the tests name is at least 41% off in spread (c_proj at 1/sqrt(n_layers))
    or 0.057 in distance (uniform draws).
    """
    if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() == 0:
        kind = (f"a {t.dtype} tensor of shape {tuple(t.shape)}" if isinstance(t, torch.Tensor)
                else f"a {type(t).__name__}")
        return f"is {kind}, not a floating-point tensor of draws"
    x = t.detach().double().flatten()
    n = x.numel()
    mean, rms = float(x.mean()), float(x.square().mean().sqrt())
    if not math.isfinite(mean) or not math.isfinite(rms):
        return "contains NaN or infinity: torch.empty was never filled"
    low, high = _spread_bounds(n)
    if not low <= rms / std <= high:
        sample_std = float(x.std())
        if low <= sample_std / std <= high:  # the spread is right, about the wrong centre
            return f"has mean {mean:.4g}, expected 0 (n = {n:,} draws of std {std:.4g})"
        return f"has sample std {sample_std:.4g}, expected {std:.4g} (n = {n:,} draws)"
    if abs(mean) > _Z * std / math.sqrt(n):
        return f"has mean {mean:.4g}, expected 0 (n = {n:,} draws of std {std:.4g})"
    distance, bound = _ks_distance(x / std), math.sqrt(_LOG / (2 * n))
    if distance > bound:
        kurtosis = float(x.pow(4).mean()) / rms**4 - 3
        return (f"has the right mean and std but is not normally distributed: its distribution "
                f"is {distance:.3f} away from N(0, {std:.4g}^2)'s (n = {n:,} normal draws stay "
                f"within {bound:.3f}), and its excess kurtosis is {kurtosis:.2f} (normal draws "
                "have 0, uniform ones -1.2, every entry +-std -2). Draw from a normal "
                "distribution (normal_, randn), not uniform_, rand or a fixed pattern")
    return None


def _near(t: torch.Tensor, std: float) -> bool:
    """Whether ``t``'s spread is within 6 standard errors of ``std`` (to name a mistake)."""
    if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() < 2:
        return False
    x = t.detach().double().flatten()
    return abs(float(x.std()) - std) <= 6 * std / math.sqrt(2 * x.numel())


def _stepped(weight: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """``weight`` after one SGD step on ``grad``; a bool weight (a learner's) counts as 0/1."""
    return (weight.double() if weight.dtype == torch.bool else weight) - LR * grad


def _trained(after: object, weight: torch.Tensor, grad: torch.Tensor, what: str) -> None:
    """``after`` must be ``weight`` moved by one SGD step on ``grad``: the numbers the probe
    reported are then the Parameter that layer.parameters() trains."""
    if isinstance(after, dict) and "error" in after:
        raise Mistake(f"{what}: one SGD step over layer.parameters() raised {after['error']}: "
                      f"{after['message']}")
    expected = _stepped(weight, grad)
    if not values.close(after, expected, rtol=1e-5):
        where = values.first_gap(after, expected, 1e-5) if isinstance(after, torch.Tensor) else ""
        raise Mistake(f"{what}: after one SGD step over layer.parameters(), self.weight is not "
                      f"weight - lr * grad {where}: the weight must be the layer's one "
                      "registered Parameter, refilled in place")


def _reset(outcome, what: str) -> object:
    """``unwrap`` for a call that runs reset_parameters on a weight that requires grad: an
    in-place fill that autograd refused (no torch.no_grad()) is named as such."""
    error = outcome.error
    message = str(error.get("message", "")) if isinstance(error, dict) else ""
    if "leaf Variable" in message and "in-place operation" in message:
        raise Mistake(f"{what} raised {describe_error(error)}: the weight is a trainable leaf "
                      "(it requires grad), and autograd refuses to record an in-place fill of "
                      f"it. Fill it inside torch.no_grad(), which keeps it a leaf: {RESET}")
    return unwrap(outcome, what, MODULE)


def _weight(learner, seed: int, what: str, vocab_size: int = V, d_model: int = D,
            **kwargs) -> torch.Tensor:
    """The weight of the learner's ``Embedding(vocab_size, d_model, **kwargs)`` after
    construction: the draws under test."""
    built = _reset(learner.call("embedding_init", seed=seed, vocab_size=vocab_size,
                                d_model=d_model, **kwargs), what)
    return expect_tensor(built["weight"], f"{what}.weight", like=torch.empty(vocab_size, d_model))


@remembered
def _on_devices(learner, seed: int, gen: torch.Generator, devices: list[str], method: str,
                like: torch.Tensor) -> None:
    """``method`` (reset_parameters, or scale_output with scale=True) on an Embedding(V, D)
    moved to each device of the device pass (``checked_devices``): its result stays there, in
    ``like``'s shape and dtype. On the meta device an error the CPU shares is judged there."""
    x = torch.randn(3, D, generator=gen)
    for device in checked_devices(devices):
        what = (f"Embedding({V}, {D}, scale=True).{method}("
                + ("" if method == "reset_parameters" else "x of shape (3, 64)")
                + f") on a layer moved to {device}")

        def call(device: str):
            return learner.call("embedding_on_device", seed=seed, vocab_size=V, d_model=D,
                                std=0.02, x=x, method=method, device=device)

        result = unwrap_on(device, call, what, MODULE)
        if result is not None:
            out = expect_tensor(result["out"], what, device=device)
            if tuple(out.shape) != tuple(like.shape) or out.dtype != like.dtype:
                raise Mistake(f"{what}: shape {tuple(out.shape)} {out.dtype}, expected "
                              f"{tuple(like.shape)} {like.dtype}")


def test_reset_parameters_uses_std(learner, seed, gen):
    """reset_parameters draws the rows from N(0, std^2) with the layer's own std (normal
    draws: a uniform fill or a pattern of the right std fails too), in the weight's dtype: run
    again on a layer converted to float64, its draws are float64"""
    fresh = round(0.25 + 0.35 * float(torch.rand((), generator=gen)), 4)  # neither 1 nor 1/8
    for std in (0.02, fresh):
        what = f"Embedding({V}, {D}, std={std})"
        weight = _weight(learner, seed, what, std=std)
        problem = _misfit(weight, std)
        if problem is None:
            continue
        if _near(weight, 1.0):
            raise Mistake(f"{what}.weight {problem}: reset_parameters ignores std and draws "
                          f"N(0, 1) (normal_() without a std); use self.std: {RESET}")
        if _near(weight, 1 / math.sqrt(D)):
            raise Mistake(f"{what}.weight {problem}, that is 1/sqrt(d_model): 1/sqrt(d_model) "
                          "is only for std=None; a given std is used as it is")
        raise Mistake(f"{what}.weight {problem}: draw each entry from N(0, std^2): {RESET}")
    _refilled_draws(learner, seed, gen, 0.05)


def _refilled_draws(learner, seed: int, gen: torch.Generator, std: float) -> None:
    """reset_parameters() run again on a layer converted to float64 whose weight is all 7s:
    the rows forward returns afterwards (the draws under test) must be float64 draws of
    N(0, std^2)."""
    what = (f"reset_parameters() on an Embedding({V}, {D}, std={std}) converted to float64, "
            "whose weight is all 7s")
    ids = torch.randperm(V, generator=gen)  # every row once, in a fresh order
    grad = torch.randn(V, D, generator=gen)
    result = _reset(learner.call("embedding_reset", seed=seed, vocab_size=V, d_model=D, std=std,
                                 ids=ids, grad=grad, lr=LR, dtype="float64"), what)
    rows = result["rows"]
    if isinstance(rows, torch.Tensor) and bool((rows == 7).all()):
        raise Mistake(f"{what}: the weight is still all 7s: reset_parameters must refill it "
                      f"in place, {RESET}")
    kind = rows.dtype if isinstance(rows, torch.Tensor) else torch.float64
    rows = expect_tensor(rows, f"{what}: the rows", like=torch.empty(V, D, dtype=kind))
    if rows.dtype != torch.float64:
        raise Mistake(
            f"{what}: afterwards the weight is {rows.dtype}, no longer float64. Refill it in "
            f"place ({RESET}), which keeps its dtype and device: self.weight.data = "
            "torch.randn(...) puts a new tensor of torch's default dtype in its place"
        )
    problem = _misfit(rows, std)
    if problem is not None:
        raise Mistake(f"{what}: the refilled weight {problem}: {RESET}")


def test_std_none_means_inverse_sqrt_d(learner, seed, gen):
    """std=None means 1/sqrt(d_model), and std=0.0 is a std (all zeros), not 'no std'"""
    for vocab, d in ((V, D), (2000, 16)):  # two widths: 1/sqrt(d) must follow d
        what = f"Embedding({vocab}, {d}, std=None)"
        weight = _weight(learner, seed, what, vocab, d, std=None)
        expected = 1 / math.sqrt(d)
        problem = _misfit(weight, expected)
        if problem is None:
            continue
        hint = ""
        if _near(weight, 0.02):
            hint = "std=None fell back to GPT-2's 0.02; "
        elif _near(weight, 1 / d):
            hint = "that is 1/d_model instead of 1/sqrt(d_model); "
        elif _near(weight, 1.0):
            hint = "that is N(0, 1), with no std at all; "
        raise Mistake(f"{what}.weight {problem}: {hint}std=None means 1/sqrt(d_model) = "
                      f"1/sqrt({d}) = {expected:.4g}, the scale some models use instead of 0.02")
    what = f"Embedding({V}, {D}, std=0.0)"
    weight = _weight(learner, seed, what, std=0.0)
    if bool(weight.any()):
        raise Mistake(
            f"{what}.weight is not all zeros (largest entry {float(weight.abs().max()):.4g}): "
            "std=0.0 is a valid std, not 'no std'. Test `self.std is None`, not "
            "`self.std or ...`, which treats 0.0 like None"
        )


def test_rows_are_not_identical(learner, seed, gen):
    """the initial rows all differ: random, not zero, so that symmetry is broken"""
    vocab, d = 50, 64  # rows this wide never coincide by chance, whatever the draws' shape
    what = f"Embedding({vocab}, {d}, std=0.02)"
    weight = _weight(learner, seed, what, vocab, d, std=0.02)
    distinct = torch.unique(weight.detach(), dim=0).shape[0]
    if distinct < vocab:
        kind = "all zeros" if not bool(weight.any()) else f"only {distinct} distinct rows"
        raise Mistake(
            f"{what}.weight starts with {kind}: identical rows get identical gradients and "
            "never become different, so symmetry never breaks and every token stays the same. "
            f"Not zero: draw the rows from N(0, std^2), {RESET}"
        )


def test_reset_refills_in_place(learner, seed, gen, grading, devices):
    """reset_parameters refills the existing Parameter in place (the same object, dtype and
    device)

    On a layer moved to each device of the run, the weight stays there. The layer is
    converted to float64 and an SGD
    optimiser is built on layer.parameters() before the reset; the rows forward returns after
    it must be float64, fit N(0, std^2), and move with the optimiser's step (it holds the old
    Parameter: a new one is out of its reach). All of it is computed in the learner's process,
    so its points depend on the rules (``bans.certify``)."""
    std = 0.05
    what = (f"reset_parameters() on an Embedding({V}, {D}, std={std}) converted to float64, "
            "whose weight is all 7s")
    ids = torch.randperm(V, generator=gen)  # every row once, in a fresh order
    grad = torch.randn(V, D, generator=gen)
    result = _reset(learner.call("embedding_reset", seed=seed, vocab_size=V, d_model=D, std=std,
                                 ids=ids, grad=grad, lr=LR, dtype="float64"), what)
    rows = result["rows"]
    if isinstance(rows, torch.Tensor) and bool((rows == 7).all()):
        raise Mistake(f"{what}: the weight is still all 7s: reset_parameters must refill it "
                      f"in place, {RESET}")
    kind = rows.dtype if isinstance(rows, torch.Tensor) else torch.float64
    rows = expect_tensor(rows, f"{what}: the rows", like=torch.empty(V, D, dtype=kind))
    after = result["after"]
    moved = not (isinstance(after, dict) and "error" in after) and values.close(
        after, _stepped(rows, grad), rtol=1e-5)
    if not moved:
        if not result["same_object"] or values.close(after, rows, rtol=1e-6):
            raise Mistake(
                f"{what}: self.weight is a new Parameter afterwards. Refill the existing one in "
                f"place ({RESET}): an optimiser, or a tied lm_head, holds the old Parameter and "
                "would never see the new values (an optimiser built before the reset did not "
                "move the rows forward returns)"
            )
        _trained(after, rows, grad, what)
    if rows.dtype != torch.float64:
        raise Mistake(
            f"{what}: afterwards the weight is {rows.dtype}, no longer float64. Refill it in "
            f"place ({RESET}), which keeps its dtype and device: self.weight.data = "
            "torch.randn(...) puts a new tensor of torch's default dtype in its place"
        )
    problem = _misfit(rows, std)
    if problem is not None:
        raise Mistake(f"{what}: the refilled weight {problem}: {RESET}")
    _on_devices(learner, seed, gen, devices, "reset_parameters", torch.empty(V, D))
    bans.certify(grading.files, "the Parameter refilled in place")


def _input_kept(after: object, x: torch.Tensor, what: str) -> None:
    """scale_output's input must come back as it went in."""
    if isinstance(after, torch.Tensor) and after.shape == x.shape and torch.equal(after, x):
        return
    raise Mistake(f"{what} changed its input x in place: return a new tensor (x * "
                  "math.sqrt(self.d_model), never x.mul_ or x *= ...). x holds the rows forward "
                  "looked up, which the caller may still need")


def _gradient_is(grad: object, upstream: torch.Tensor, factor: float, what: str,
                 rtol: float = 1e-6) -> None:
    """The gradient that reached x through scale_output must be ``factor`` * ``upstream``."""
    if isinstance(grad, dict) and "error" in grad:
        raise Mistake(f"{what}: the backward pass through scale_output raised {grad['error']}: "
                      f"{grad['message']}")
    if grad is None:
        raise Mistake(f"{what}: no gradient reaches x through scale_output: its output is cut "
                      "off from autograd (.detach(), .data, torch.no_grad() or a new tensor "
                      "made from the numbers), so the embedding would never train. Compute it "
                      "from x itself: x * math.sqrt(self.d_model)")
    if not values.close(grad, upstream * factor, rtol=rtol):
        ratio = float((grad.double() / upstream).median()) if isinstance(grad, torch.Tensor) \
            and grad.shape == upstream.shape and grad.numel() else math.nan
        raise Mistake(f"{what}: the gradient of scale_output(x) with respect to x is about "
                      f"{ratio:.4g} times the upstream gradient, expected {factor:.4g} "
                      f"({'sqrt(d_model)' if factor != 1 else 'x passes through unchanged'})")


#: scale_output's inputs: (d_model, scale, x's leading shape, x's dtype). Rows (3, 5) in float64
#: first, then the sweep the docstring allows: float32 and bfloat16, one row (d,), no rows at
#: all (0, 5, d), four dimensions, scale off in float32.
SCALE_CASES = ((16, True, (3, 5), torch.float64), (10, True, (3, 5), torch.float64),
               (16, False, (3, 5), torch.float64), (10, True, (2, 3, 4), torch.float32),
               (64, True, (7,), torch.bfloat16), (12, True, (), torch.float32),
               (16, True, (0, 5), torch.float64), (12, False, (4,), torch.float32),
               (9, True, (1, 4), torch.float64), (9, False, (3, 1), torch.float32),
               (1, True, (2, 3), torch.float64))  # size-1 dimensions: a squeeze() shows
#: How close scale_output's output and gradient must be, by dtype: a correct multiply by
#: sqrt(d) computed another way (a float32 sqrt, torch.tensor(d).sqrt()) rounds differently.
SCALE_RTOL = {torch.float64: 1e-6, torch.float32: 1e-5, torch.bfloat16: 1e-2}


def _scale_call(d: int, scale: bool, rows: tuple, dtype: torch.dtype) -> str:
    shape = (*rows, d)
    return (f"scale_output(x) with d_model={d}, scale={scale}, x of shape {shape} "
            f"{str(dtype).removeprefix('torch.')}")


def test_scale_output(learner, seed, gen, devices):
    """scale_output multiplies by sqrt(d_model) exactly once when scale=True, else returns x's
    values; its gradient with respect to x is sqrt(d_model), or 1; in x's dtype, shape and
    device, for float64, float32 and bfloat16 rows, one row, none, or many"""
    for d, scale, rows, dtype in SCALE_CASES:
        x = torch.randn(*rows, d, generator=gen, dtype=torch.float64).to(dtype)
        upstream = torch.randn(*rows, d, generator=gen, dtype=torch.float64).to(dtype)
        expected, rtol = x * math.sqrt(d) if scale else x, SCALE_RTOL[dtype]
        what = _scale_call(d, scale, rows, dtype)
        result = unwrap(learner.call("embedding_scale", seed=seed, d_model=d, scale=scale, x=x,
                                     grad=upstream), what, MODULE)
        out = result["out"]
        if isinstance(out, torch.Tensor) and out.dtype != dtype and \
                tuple(out.shape) == tuple(expected.shape):
            raise Mistake(f"{what} returned {out.dtype} rows, expected {dtype}, x's own: "
                          "multiply x by the Python float math.sqrt(self.d_model), with no "
                          ".double(), .float() or a tensor of another dtype in between")
        out = expect_tensor(out, what, like=expected)
        if values.close(out, expected, rtol=rtol):
            _gradient_is(result["grad"], upstream.double(), math.sqrt(d) if scale else 1.0,
                         what, rtol)
            continue
        if scale and torch.equal(out, x):
            raise Mistake(f"{what} returned x unchanged: with scale=True, multiply by "
                          f"sqrt(d_model) = {math.sqrt(d):.4g}, as the original Transformer did")
        if scale and values.close(out, x * d, rtol=rtol):
            raise Mistake(f"{what} multiplied by d_model = {d}, that is sqrt(d_model) applied "
                          f"twice: multiply once, by sqrt(d_model) = {math.sqrt(d):.4g}")
        if not scale:
            raise Mistake(f"{what} changed x: with scale=False (GPT-2's convention) the rows "
                          "come out as they are")
        ratio = float((out.double() / x.double()).median())
        raise Mistake(f"{what} multiplied x by about {ratio:.4g}, expected sqrt(d_model) = "
                      f"{math.sqrt(d):.4g}")
    _on_devices(learner, seed, gen, devices, "scale_output", torch.empty(3, D))


def test_scale_output_leaves_its_input(learner, seed, gen, grading):
    """scale_output returns a new tensor and leaves its input x as it was

    What x holds afterwards is reported by the learner's process, so its points depend on the
    rules (``bans.certify``)."""
    for d, scale in ((16, True), (16, False)):
        x = torch.randn(3, 5, d, generator=gen, dtype=torch.float64)
        upstream = torch.randn(3, 5, d, generator=gen, dtype=torch.float64)
        what = f"scale_output(x) with d_model={d}, scale={scale}"
        result = unwrap(learner.call("embedding_scale", seed=seed, d_model=d, scale=scale, x=x,
                                     grad=upstream), what, MODULE)
        out, expected = result["out"], x * math.sqrt(d) if scale else x
        if not isinstance(out, torch.Tensor) or out.shape != expected.shape or \
                not torch.allclose(out, expected, rtol=1e-6, atol=0):
            raise Mistake(f"{what} does not return the scaled rows yet (see the scale_output "
                          "check), so there is nothing to judge here")
        _input_kept(result["input_after"], x, what)
    bans.certify(grading.files, "the input x left as it was")


def test_expected_dot_std(learner, seed, gen):
    """expected_dot_std is std^2 * sqrt(d): the spread of the dot product of two random rows"""
    fresh = (round(0.05 + float(torch.rand((), generator=gen)), 4),  # a case of this run's own
             int(torch.randint(2, 4096, (), generator=gen)))
    for std, d, keyword in ((0.02, 768, False), (0.1, 64, False), (0.5, 10, False),
                            (2.0, 3, False), (0.0, 1, False), (*fresh, True)):
        expected = std**2 * math.sqrt(d)
        what = f"expected_dot_std(std={std}, d_model={d})" if keyword else \
            f"expected_dot_std({std}, {d})"
        outcome = learner.call("expected_dot_std", seed=seed, std=std, d_model=d, keyword=keyword)
        if keyword and outcome.error is not None and outcome.error.get("type") == "TypeError":
            raise Mistake(f"{what} raised TypeError: {outcome.error.get('message', '')}: keep the "
                          "stub's signature, expected_dot_std(std, d_model), so that the "
                          "arguments can be given by name too")
        result = unwrap(outcome, what, MODULE)
        got = result["value"]
        if got is None:
            raise Mistake(f"{what} returned a {result['type']}, expected a number (a float): "
                          "math.sqrt keeps it a plain float")
        if math.isclose(got, expected, rel_tol=1e-9):
            continue
        if math.isclose(got, std * math.sqrt(d), rel_tol=1e-9):
            hint = ("that is std * sqrt(d): std instead of std**2. Each product of two "
                    "independent N(0, std^2) numbers has variance std^4, so std^2 per term")
        elif math.isclose(got, std**2 * d, rel_tol=1e-9):
            hint = ("that is std^2 * d: d instead of sqrt(d). The d variances add up to "
                    "std^4 * d; the standard deviation is its square root")
        elif math.isclose(got, std**4 * d, rel_tol=1e-9):
            hint = "that is the variance std^4 * d; return its square root, the standard deviation"
        else:
            hint = "the sum of d products of two N(0, std^2) numbers has std std^2 * sqrt(d)"
        raise Mistake(f"{what} returned {got:.6g}, expected {expected:.6g}: {hint}")


def _plan(config: dict) -> dict[str, tuple[str, float]]:
    """Each parameter of GPT2(config) -> (what it is, its initial std; or "ones"/"zeros")."""
    # Built on the CPU: a tiny model takes ~2 ms, while the meta device's first use costs ~1 s.
    names = [name for name, _ in ref.GPT2(ref.GPT2Config(**config)).named_parameters()]
    residual = 0.02 / math.sqrt(2 * config["n_layers"])
    plan = {}
    for name in names:
        if name == "wte.weight":
            plan[name] = ("the token embedding", 0.02)
        elif name == "wpe.weight":
            plan[name] = ("the position embedding", 0.01)
        elif name.endswith(".bias"):
            plan[name] = ("a bias", 0.0)
        elif "ln_" in name:
            plan[name] = ("a LayerNorm scale", 1.0)
        elif name.endswith("c_proj.weight"):
            plan[name] = ("a residual projection (c_proj)", residual)
        elif name == "lm_head.weight":
            plan[name] = ("the output layer, untied", 0.02)
        else:
            plan[name] = ("a Linear weight", 0.02)
    return plan


def _model(dtype: torch.dtype | None, changed: bool = False) -> str:
    shape = ", ".join(f"{k}={v}" for k, v in CONFIG.items() if k != "tie_weights")
    converted = f", converted with .to({dtype}), then init_weights() again" if dtype else ""
    if changed:
        converted = ", every parameter then set to 3 (as training moves them), then " \
                    "init_weights() again"
    return f"GPT2({shape}, untied){converted}"


def _state(learner, seed: int, dtype: torch.dtype | None = None, changed: bool = False) -> dict:
    """The state_dict of the learner's freshly built GPT2 (converted to ``dtype``, or with
    every parameter changed, and initialised again, if asked): the draws under test."""
    what = _model(dtype, changed)
    name = str(dtype).removeprefix("torch.") if dtype is not None else None
    built = unwrap(learner.call("gpt2_init", seed=seed, config=CONFIG, dtype=name,
                                changed=changed), what, "gpt2")
    state = built["state"]
    if not isinstance(state, dict):
        raise Mistake(f"{what}: the model's state_dict is a {type(state).__name__}")
    changed = [k for k, v in state.items()
               if dtype is not None and isinstance(v, torch.Tensor) and v.dtype != dtype]
    if changed:
        raise Mistake(
            f"{what}: {changed[0]} is {state[changed[0]].dtype} afterwards. init_weights must "
            "fill each parameter in place (nn.init.normal_, zeros_, ones_), which keeps its "
            "dtype and device: assigning .data = torch.randn(...) puts a new tensor of torch's "
            "default dtype in its place"
        )
    return state


def _stds_hint(name: str, kind: str, std: float, weight: torch.Tensor) -> str:
    """The likely mistake behind a weight whose draws do not fit N(0, std^2)."""
    n_layers = CONFIG["n_layers"]
    if name == "wpe.weight" and _near(weight, 0.02):
        return ("the position embedding is at the token embedding's 0.02: GPT-2 starts "
                "positions at 0.01 (nn.init.normal_(self.wpe.weight, 0.0, 0.01))")
    if name.endswith("c_proj.weight") and _near(weight, 0.02):
        return (f"c_proj is missing the 1/sqrt(2 * n_layers) scaling: with {n_layers} blocks, "
                "two residual adds each, the residual stream's variance grows with depth "
                f"unless c_proj starts at 0.02/sqrt(2 * n_layers) = {std:.4g}")
    if name.endswith("c_proj.weight") and _near(weight, 0.02 / math.sqrt(n_layers)):
        return ("c_proj is scaled by 1/sqrt(n_layers), but every block adds to the residual "
                "stream twice (attention and MLP): 0.02/sqrt(2 * n_layers)")
    if name == "lm_head.weight":
        return ("untied, the output layer is a Linear like the others: GPT-2 draws "
                "lm_head.weight from N(0, 0.02^2) too (nn.Linear's own default is uniform, of "
                "std 1/sqrt(3 d_model))")
    return f"GPT-2 draws {kind} from N(0, {std:.4g}^2)"


@remembered
def test_gpt2_weight_stds(learner, seed, gen, devices):
    """init_weights: wte 0.02, wpe 0.01, Linear 0.02 (lm_head too, untied), c_proj
    0.02/sqrt(2 n_layers), all normal draws; run again after .to(float64), the same; run again
    on a model moved to another device, every parameter stays there"""
    for dtype in (None, torch.float64):
        state = _state(learner, seed, dtype)
        for name, (kind, std) in _plan(CONFIG).items():
            if kind in ("a bias", "a LayerNorm scale"):
                continue
            if name not in state:
                raise Mistake(f"the model's state_dict has no {name}: init_weights must only "
                              "change values, never remove or rename parameters")
            problem = _misfit(state[name], std)
            if problem is not None:
                hint = _stds_hint(name, kind, std, state[name])
                raise Mistake(f"{_model(dtype)}: after init_weights, {name} ({kind}) {problem}: "
                              f"{hint}")
    _gpt2_on_devices(learner, seed, devices)


def _gpt2_on_devices(learner, seed: int, devices: list[str]) -> None:
    """init_weights run again on the GPT2 moved to each device of the device pass
    (``checked_devices``): every tensor of its state_dict stays there."""
    for device in checked_devices(devices):
        what = f"{_model(None)} moved to {device}, then init_weights() again"

        def call(device: str):
            return learner.call("gpt2_on_device", seed=seed, config=CONFIG, device=device)

        result = unwrap_on(device, call, what, "gpt2")
        if result is None:
            continue
        state = result["placed"]
        if not isinstance(state, dict):
            raise Mistake(f"{what}: the model's state_dict is a {type(state).__name__}")
        for name, tensor in state.items():
            if not isinstance(tensor, torch.Tensor | MetaTensor):
                raise Mistake(f"{what}: {name} in its state_dict is a {type(tensor).__name__}, "
                              "not a torch.Tensor")
        elsewhere = [name for name, tensor in state.items()
                     if not device_of(tensor).startswith(device)]
        if elsewhere:
            where = device_of(state[elsewhere[0]])
            raise Mistake(
                f"{what}: {elsewhere[0]} is on {where} afterwards, expected {device}. "
                "init_weights fills each parameter in place (nn.init.normal_, zeros_, ones_), "
                "which keeps its dtype and device: a tensor made on a fixed device and put in "
                ".data moves the parameter off the model's device")


def test_gpt2_biases_and_layernorm(learner, seed, gen):
    """init_weights: every bias 0, every LayerNorm scale 1 and shift 0

    On a fresh model, and run again on one whose every parameter was changed (to 3), where a
    LayerNorm's own constructor no longer sets its 1 and 0; the weights' draws then too."""
    _biases_and_layernorms(_state(learner, seed), _model(None))
    state = _state(learner, seed, changed=True)
    _biases_and_layernorms(state, _model(None, True))
    for name, (kind, std) in _plan(CONFIG).items():
        if kind not in ("a bias", "a LayerNorm scale") and name in state:
            problem = _misfit(state[name], std)
            if problem is not None:
                raise Mistake(f"{_model(None, True)}: {name} ({kind}) {problem}: init_weights "
                              "sets every parameter anew when it runs again, "
                              f"{_stds_hint(name, kind, std, state[name])}")


def _biases_and_layernorms(state: dict, what: str) -> None:
    """Every bias 0 and every LayerNorm scale 1, shift 0 in ``state``."""
    for name, (kind, value) in _plan(CONFIG).items():
        if kind not in ("a bias", "a LayerNorm scale"):
            continue
        if name not in state:
            raise Mistake(f"the model's state_dict has no {name}: init_weights must only change "
                          "values, never remove or rename parameters")
        tensor = expect_tensor(state[name], f"{name} in the model's state_dict")
        if bool((tensor == value).all()):
            continue
        off = float((tensor - value).abs().max())
        if "ln_" in name:
            raise Mistake(
                f"{what}: after init_weights, {name} is not all {value:g} (off by up to "
                f"{off:.4g}): a LayerNorm starts as the identity, scale 1 and shift 0, set by "
                "init_weights itself (nn.init.ones_ and zeros_), not left to the LayerNorm's "
                "constructor, as it may run again; never drawn from N(0, 0.02^2)"
            )
        raise Mistake(
            f"{what}: after init_weights, {name} is not all zeros (up to {off:.4g}): every "
            "Linear bias starts at 0 (nn.init.zeros_); nn.Linear's own default bias is random"
        )


# --- given code, as the learner wrote it -----------------------------------------------------
# Graded, every Embedding and GPT2 runs the grader's own copy of the given code (the given
# lines of Embedding.__init__ are the scaffold's here, GPT2.__init__ the stub's:
# sandboxed/given.py). These tests build the learner's classes as they wrote them: the object a
# constructor returns must hold what their reset_parameters, or init_weights, drew. Each holds
# one point of the test it then runs (test_reset_parameters_uses_std, test_gpt2_weight_stds)
# and fails whenever that test does, so a learner who left the given code as it is scores
# exactly as before. A constructor that cannot run (stage 'embedding' unfinished) is judged
# by that stage, not here.

GIVEN_LINES = ("the given lines around YOUR CODE HERE (the checks, the attributes and the "
               "last line, self.reset_parameters()) are the grader's: leave them as the stub "
               "has them")


def _same(drawn: object, held: object) -> bool:
    """Two tensors of the same shape, dtype and numbers."""
    return (isinstance(drawn, torch.Tensor) and isinstance(held, torch.Tensor)
            and drawn.shape == held.shape and drawn.dtype == held.dtype
            and bool(torch.equal(drawn, held)))


def test_embedding_keeps_its_draw_as_you_wrote_it(learner, seed, gen):
    """your Embedding as you wrote it holds what its reset_parameters drew: the given lines of
    Embedding.__init__ around YOUR CODE HERE are left as the stub has them"""
    what = f"Embedding({V}, {D}, std=0.02) as you wrote it (your __init__ and reset_parameters)"
    reply = unwrap(learner.call("embedding_as_shipped", seed=seed, vocab_size=V, d_model=D,
                                std=0.02), what, MODULE)
    if reply["built"] is None:
        if reply["times_called"] == 0:
            raise Mistake(f"{what} never calls reset_parameters: the given last line of "
                          f"Embedding.__init__, self.reset_parameters(), was changed or removed; "
                          f"{GIVEN_LINES}")
        if not _same(reply["recorded"], reply["final"]):
            raise Mistake(
                f"{what}: your Embedding.__init__ as you wrote it does not keep what "
                "reset_parameters drew: the weight it holds once built differs from the one "
                "reset_parameters left. The given lines around YOUR CODE HERE were changed, or "
                "something after the call (or a method of your class) replaces the weight; "
                f"{GIVEN_LINES}"
            )
    verdict_of(test_reset_parameters_uses_std, learner, seed, gen)


def test_gpt2_keeps_its_initialisation_as_you_wrote_it(learner, seed, gen):
    """your GPT2 as you wrote it holds what its init_weights drew: GPT2.__init__, given code,
    is left as the stub has it"""
    what = f"{_model(None)} as you wrote it (your GPT2.__init__ and init_weights)"
    reply = unwrap(learner.call("gpt2_as_shipped", seed=seed, config=CONFIG), what, "gpt2")
    if reply["built"] is None:
        if reply["times_called"] == 0:
            raise Mistake(f"{what} never calls init_weights: GPT2.__init__ is given code, "
                          "which calls self.init_weights() and then self.tie_weights(); leave "
                          "it as the stub has it")
        drawn, held = reply["recorded"], reply["final"]
        if not (isinstance(drawn, dict) and isinstance(held, dict)):
            raise Mistake(f"{what}: the answer from your code's process is not the grader's "
                          "probe's (did your code replace parts of the grader?)")
        changed = sorted(str(k) for k in set(drawn) | set(held)
                         if not _same(drawn.get(k), held.get(k)))
        if changed:
            raise Mistake(
                f"{what}: once built, {changed[0]} is not what init_weights drew: GPT2.__init__ "
                "(given code) was changed after its call to self.init_weights(), or a method "
                "of your class changes the parameters. The grader runs the stub's own "
                "GPT2.__init__; leave it as the stub has it and initialise in init_weights"
            )
    verdict_of(test_gpt2_weight_stds, learner, seed, gen)
