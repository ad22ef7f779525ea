"""Stage 'tying': one matrix for the embedding and the output layer.

Chapter: "Weight tying with the output layer". Checked on a tiny GPT-2 against its own parts.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's usual name)

pytestmark = pytest.mark.tying

V, D = 37, 16  # a tiny vocabulary and width, so every test runs in a blink


def tiny(gpt2, tie: bool):
    config = gpt2.GPT2Config(
        vocab_size=V, n_ctx=8, d_model=D, n_layers=2, n_heads=2, tie_weights=tie
    )
    return gpt2.GPT2(config)


#: What a tie is (the line itself is yours to write).
TIE = "lm_head's weight must be the Parameter object that wte holds, assigned, not copied"


def not_tied(model) -> str | None:
    """Why ``model``'s lm_head.weight is not wte.weight itself, or None if it is."""
    head, table = model.lm_head.weight, model.wte.weight
    if head is table:
        return None
    if tuple(head.shape) == (D, V):
        return ("lm_head.weight is the table transposed, (d, V): nn.Linear stores its weight "
                f"as (V, d), the table's own layout, so the tie needs no transpose: {TIE}")
    if tuple(head.shape) == tuple(table.shape) and torch.equal(head, table):
        return ("your tied head is a copy, not the same Parameter: lm_head.weight must be "
                f"wte.weight itself, so both jobs train one matrix: {TIE}")
    return f"tied, lm_head.weight must be wte.weight itself (one matrix for both jobs): {TIE}"


def test_tied_head_is_the_same_parameter(gpt2):
    problem = not_tied(tiny(gpt2, tie=True))  # not `assert a is b`: no two 37 x 16 tensors
    assert problem is None, problem


def test_the_tie_keeps_the_embeddings_matrix(gpt2):
    model = tiny(gpt2, tie=False)
    table, head = torch.randn(V, D) * 0.02, torch.randn(V, D) * 0.02  # GPT-2's initial spread
    model.wte.weight.data.copy_(table)  # .data: filled by hand, not recorded by autograd
    model.lm_head.weight.data.copy_(head)
    model.config.tie_weights = True  # tie_weights reads the config when it is called
    model.tie_weights()
    problem = not_tied(model)
    assert problem is None, f"after tie_weights() with config.tie_weights=True: {problem}"
    kept = model.wte.weight.detach()
    assert not torch.equal(kept, head), (
        "tied in the wrong direction: both layers now hold the output layer's matrix. "
        "self.wte.weight = self.lm_head.weight throws away the embedding's matrix (and its "
        f"initialisation); the embedding's matrix is the one kept: {TIE}"
    )
    assert torch.equal(kept, table), (
        "the tie changed the embedding's numbers (rescaled or redrawn): tie the Parameter "
        f"exactly as it is, {TIE}"
    )
    ids = torch.randint(0, V, (8, 8))
    logits = model(ids).detach()  # (8, 8, V)
    loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).item()
    assert abs(loss - math.log(V)) < 0.25, (
        f"an untrained tied model should predict about uniformly: next-token loss ln V = "
        f"{math.log(V):.3f} on random ids, got {loss:.3f}"
    )


def test_tied_counts_the_table_once(gpt2):
    tied, untied = tiny(gpt2, tie=True).num_params(), tiny(gpt2, tie=False).num_params()
    assert untied - tied == V * D, (
        f"tying removes one V x d matrix ({V * D} parameters) from the {untied} of the untied "
        f"model: expected {untied - V * D}, got {tied}"
    )


def test_tied_logits_are_h_times_the_table_transposed(gpt2):
    model = tiny(gpt2, tie=True)
    seen = {}
    model.ln_f.register_forward_hook(lambda module, args, out: seen.update(h=out))
    ids = torch.randint(0, V, (2, 5))
    logits = model(ids)  # (2, 5, V)
    expected = F.linear(seen["h"], model.wte.weight)  # h @ E.T: h against every token's row
    torch.testing.assert_close(
        logits, expected, msg="tied, the score of token i is the dot product of h and row i of E"
    )


def test_untied_keeps_two_matrices(gpt2):
    model = tiny(gpt2, tie=False)
    head, table = model.lm_head.weight, model.wte.weight
    separate = head is not table and head.data_ptr() != table.data_ptr()
    assert separate, (
        "untied, lm_head and wte must be two separate Parameters with their own numbers"
    )
    assert tuple(head.shape) == (V, D), f"lm_head.weight should be (V, d), got {tuple(head.shape)}"
    head.data.copy_(torch.randn(V, D))  # different numbers in the two, as a checkpoint has
    table.data.copy_(torch.randn(V, D))
    before = head.detach().clone()
    model.tie_weights()  # untied, it changes nothing
    assert torch.equal(model.lm_head.weight.detach(), before), (
        "tie_weights() with config.tie_weights=False changed lm_head's numbers: untied, it "
        "changes nothing (no copy of wte's matrix into the head, no fill of its own)")


def test_the_tie_survives_to_and_a_state_dict_round_trip(gpt2):
    half = tiny(gpt2, tie=True).half()  # any float dtype: a conversion keeps one Parameter
    tied = half.lm_head.weight is half.wte.weight and half.wte.weight.dtype == torch.float16
    assert tied, "after .half(), lm_head.weight should still be wte.weight itself"
    model = tiny(gpt2, tie=True).to(torch.float64)
    tied = model.lm_head.weight is model.wte.weight
    assert tied, "after .to(torch.float64), lm_head.weight should still be wte.weight itself"
    fresh = tiny(gpt2, tie=True).to(torch.float64)
    fresh.load_state_dict(model.state_dict())
    tied = fresh.lm_head.weight is fresh.wte.weight
    assert tied, "after load_state_dict, lm_head.weight should still be wte.weight itself"
    loaded = torch.equal(fresh.lm_head.weight, model.wte.weight)
    assert loaded, "the loaded table differs from the saved one"
    # A checkpoint that stores the shared matrix once, as wte.weight: the head follows it.
    once = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}
    once["wte.weight"] = torch.randn(V, D, dtype=torch.float64)
    fresh.load_state_dict(once, strict=False)
    follows = torch.equal(fresh.lm_head.weight, once["wte.weight"])
    assert follows, (
        "after loading a checkpoint whose only copy of the shared matrix is wte.weight, "
        "lm_head.weight should hold it too: one Parameter, loaded once"
    )


def test_every_row_gets_gradient_from_the_output_side(gpt2):
    ids = torch.randint(0, V - 1, (2, 6))  # the last token, V - 1, never appears as input
    rare = V - 1
    for tie in (True, False):
        model = tiny(gpt2, tie=tie)
        logits = model(ids)
        F.cross_entropy(logits.flatten(0, 1), ids.roll(-1, dims=1).flatten()).backward()
        grad = model.wte.weight.grad[rare].abs().sum().item()
        if tie:
            assert grad > 0, (
                "tied, every token's row gets gradient when it is scored as a prediction, even "
                f"if it never appears as input; row {rare} got none"
            )
        else:
            assert grad == 0, f"untied, row {rare} of wte is never looked up and gets no gradient"


def test_the_tie_is_made_by_tie_weights_alone(gpt2, nn_module_overrides):
    """Given code is the grader's ("Given code" at the top of embeddings.py): GPT2.__init__,
    forward and nn.Module's methods run as the stub has them, so only tie_weights may tie."""
    model = tiny(gpt2, tie=False)
    members = [n for n in (*vars(model), *model._modules, *model._parameters, *model._buffers)
               if not n.startswith("_")]  # what the given __init__ set on the model
    changed = nn_module_overrides(gpt2.GPT2, members)
    assert not changed, (
        f"your GPT2 overrides {', '.join(changed)}, which nn.Module has or the given __init__ "
        "sets on each model: the grader replaces each method with nn.Module's own and removes "
        "each class attribute under a member's name, such as lm_head (given code is the "
        "grader's). Write only inside YOUR CODE HERE"
    )
    head = model.lm_head.weight
    ids = torch.randint(0, V, (2, 8))
    logits = model(ids)
    assert model.lm_head.weight is head and head is not model.wte.weight, (
        "untied, the model's own code tied (or replaced) lm_head.weight in __init__ or forward: "
        "those are given code, which the grader runs as the stub has it. Tie in tie_weights "
        "alone, and only when config.tie_weights is True"
    )
    x = model.wte(ids) + model.wpe(torch.arange(8))
    for block in model.blocks:
        x = block(x)
    assert torch.allclose(logits, model.lm_head(model.ln_f(x))), (
        "GPT2.forward, given code, was changed: its logits are not lm_head(ln_f(blocks(wte(ids) + "
        "wpe(positions)))). The grader runs the stub's own forward: leave it as it is"
    )
    model.config.tie_weights = True
    model.tie_weights()
    problem = not_tied(model)
    assert problem is None, f"tie_weights() alone must make the tie: {problem}"
