"""Stage 'tying': one matrix for the embedding and the output layer.

Chapter: "Weight tying with the output layer". Checked on a tiny GPT-2 against its own parts.
"""

from __future__ import annotations

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


def test_tied_head_is_the_same_parameter(gpt2):
    model = tiny(gpt2, tie=True)
    head, table = model.lm_head.weight, model.wte.weight
    same = head is table  # compared first, so a failure does not print two 37 x 16 tensors
    copy = tuple(head.shape) == tuple(table.shape) and torch.equal(head, table)
    assert same, (
        "your tied head is a copy, not the same Parameter: lm_head.weight must be wte.weight "
        "itself, so both jobs train one matrix"
        if copy
        else "tied, lm_head.weight must be wte.weight itself (one matrix for both jobs)"
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


def test_the_tie_survives_to_and_a_state_dict_round_trip(gpt2):
    model = tiny(gpt2, tie=True).to(torch.float64)
    tied = model.lm_head.weight is model.wte.weight
    assert tied, "after .to(torch.float64), lm_head.weight should still be wte.weight itself"
    fresh = tiny(gpt2, tie=True).to(torch.float64)
    fresh.load_state_dict(model.state_dict())
    tied = fresh.lm_head.weight is fresh.wte.weight
    assert tied, "after load_state_dict, lm_head.weight should still be wte.weight itself"
    loaded = torch.equal(fresh.lm_head.weight, model.wte.weight)
    assert loaded, "the loaded table differs from the saved one"


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
