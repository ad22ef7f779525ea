"""Hidden tests, stage 'tying': one matrix for the embedding and the output layer.

The learner's ``GPT2.tie_weights`` runs inside their GPT2, with every other stage's functions
replaced by public scaffolds (``autograder/sandboxed/scaffolds.py``), on tiny configs. Tied
means ``lm_head.weight`` IS ``wte.weight``. Every failure says what was expected and the
likely mistake, in the chapter's words.

Every state compared against is the grader's: ``values.grader_state`` draws a checkpoint (the
shared matrix stored once, as wte.weight), the probe loads it into the learner's model, and
the expected logits are lumen's GPT-2 on the same checkpoint. So points are earned by what a
tied model computes (loading wte.weight alone loads the head, also after ``.to()``; the tie
keeps the embedding's matrix; an untied model keeps two). That the head is the very same
Parameter is observed in the learner's process, so those checks earn their points behind the
rules (``bans.certify``; docs/threat-model.md); the facts a probe reports only pick the message.
"""

from __future__ import annotations

import math

import torch

from autograder.suites import bans, values
from autograder.suites.feedback import Mistake, expect_tensor, remembered, unwrap, verdict_of
from lumen.params import count_params

STAGE = "tying"
MODULE = "gpt2"
CONFIG = {"vocab_size": 97, "n_ctx": 16, "d_model": 32, "n_layers": 2, "n_heads": 4}
UNTIED = {**CONFIG, "tie_weights": False}
# Square (V = d), so that a head tied to the transposed table still runs and can be named.
SQUARE = {"vocab_size": 64, "n_ctx": 16, "d_model": 64, "n_layers": 2, "n_heads": 4}
TIE = "self.lm_head.weight = self.wte.weight"
DELTA = 0.05  # the in-place change of wte.weight, against entries of std 0.02: never missed
LR, WEIGHT_DECAY = 0.5, 0.5  # one SGD step; the decay shows a matrix listed twice
#: How close the logits after .to(dtype) must be: the same layers on the same numbers, so only
#: bfloat16's rounding of 2-block sums (a lost tie is off by the delta, tens of percents).
TO_RTOL = {torch.float64: 1e-6, torch.bfloat16: 2e-2}

#: Hidden test -> the visible tests (exercises/tests/test_tying.py) of the same requirement.
VISIBLE: dict[str, tuple[str, ...]] = {
    "test_tied_head_is_the_embedding": ("test_tied_head_is_the_same_parameter",
                                        "test_every_row_gets_gradient_from_the_output_side"),
    "test_parameter_count": ("test_tied_counts_the_table_once",),
    "test_embedding_matrix_is_kept": ("test_the_tie_keeps_the_embeddings_matrix",),
    "test_tied_logits_and_initial_loss": ("test_tied_logits_are_h_times_the_table_transposed",
                                          "test_the_tie_keeps_the_embeddings_matrix"),
    "test_tie_survives_to_and_load": ("test_the_tie_survives_to_and_a_state_dict_round_trip",),
    "test_untied_keeps_two_matrices": ("test_untied_keeps_two_matrices",),
    "test_tie_as_you_wrote_it": ("test_the_tie_is_made_by_tie_weights_alone",
                                 "test_tied_head_is_the_same_parameter",
                                 "test_every_row_gets_gradient_from_the_output_side"),
}


def _described(config: dict) -> str:
    shape = ", ".join(f"{k}={v}" for k, v in config.items() if k != "tie_weights")
    return f"GPT2({shape}, tie_weights={config.get('tie_weights', True)})"


def _ids(gen: torch.Generator, config: dict, batch: int = 2) -> torch.Tensor:
    return torch.randint(0, config["vocab_size"], (batch, config["n_ctx"] // 2), generator=gen)


def _delta(gen: torch.Generator, config: dict) -> torch.Tensor:
    return torch.randn(config["vocab_size"], config["d_model"], generator=gen) * DELTA


def _loaded(reply: dict, what: str) -> None:
    """The grader's checkpoint must load into the learner's model: the given code's layers keep
    their names and shapes (a Mistake naming the first that does not)."""
    loaded = reply["load"]
    if isinstance(loaded, dict) and "error" in loaded:
        raise Mistake(f"{what}: load_state_dict of the grader's checkpoint raised "
                      f"{loaded['error']}: {loaded['message']}: keep the given code's layers, "
                      "their names and shapes (only tie_weights and init_weights are yours)")
    unexpected = loaded.get("unexpected") if isinstance(loaded, dict) else None
    if unexpected:
        names = ", ".join(str(k) for k in list(unexpected)[:3])
        raise Mistake(f"{what}: your GPT2's state_dict lacks {names}: keep the given code's "
                      "layers, their names and shapes (only tie_weights and init_weights are "
                      "yours to write)")


def _logits(reply: dict, what: str, facts: dict | None = None) -> object:
    """The logits of a reply; a Mistake if forward raised (named when the head is transposed)."""
    logits = reply["logits"]
    if isinstance(logits, dict) and "error" in logits:
        if _transposed(facts or reply):
            raise _transposed_mistake(what, facts or reply)
        raise Mistake(f"{what}: the forward pass raised {logits['error']}: {logits['message']}")
    return logits


def _transposed(facts: dict) -> bool:
    """The head holds the table transposed (a fact the learner's process reports)."""
    V, d = CONFIG["vocab_size"], CONFIG["d_model"]
    return tuple(facts["head_shape"]) == (d, V) or facts["transposed"] is True


def _transposed_mistake(what: str, facts: dict) -> Mistake:
    shape = tuple(facts["head_shape"])  # as reported: any length (the schema says a list)
    return Mistake(
        f"{what}: lm_head.weight holds the transposed table (shape {shape}): your "
        "head holds the transposed table. nn.Linear stores its weight as (out, in) = (V, d), "
        f"the same layout as wte.weight, so the logits h @ E.T need no transpose: {TIE}"
    )


def _not_the_same_parameter(what: str, facts: dict, seen: str) -> Mistake:
    """Why a tied model's values say its head is not wte.weight, by what it reports."""
    if _transposed(facts):
        return _transposed_mistake(what, facts)
    if not facts["head_is_param"]:
        return Mistake(f"{what}: lm_head.weight is not an nn.Parameter: tie with {TIE}")
    if facts["same_storage"] and not facts["same_object"]:
        return Mistake(
            f"{what}: lm_head.weight shares wte.weight's numbers but is a second Parameter "
            "(.data sharing, or nn.Parameter(self.wte.weight)): parameters() counts the matrix "
            "twice, each Parameter gets its own gradient and .to() splits the two apart. "
            f"Assign the Parameter itself: {TIE}"
        )
    if facts["same_values"] and not facts["same_object"]:
        return Mistake(
            f"{what}: your tied head is a copy, not the same Parameter: lm_head.weight starts "
            "equal to wte.weight but is a different tensor, so the two drift apart as soon as "
            f"training updates them, and the V x d matrix is stored twice. Use {TIE}"
        )
    if not facts["same_values"]:
        return Mistake(
            f"{what}: lm_head.weight is not wte.weight (not even equal to it): with "
            f"config.tie_weights=True the output layer must reuse the embedding's matrix: {TIE}"
        )
    return Mistake(f"{what}: {seen}, so lm_head does not use wte.weight itself: {TIE}")


def test_tied_head_is_the_embedding(learner, seed, gen, grading):
    """tied: lm_head.weight is wte.weight itself, the same nn.Parameter (not a copy, not a view)

    Observed in the learner's process, so its points depend on the rules (``bans.certify``):
    with the grader's checkpoint loaded, wte.weight is changed in place by a fresh delta, then the
    logits must be h @ (E + delta)^T (a copy keeps another head) and wte.weight.grad must hold
    the gradient of both uses of E (two Parameters sharing storage each get a part)."""
    what = _described(CONFIG)
    ids, delta = _ids(gen, CONFIG), _delta(gen, CONFIG)
    grad = torch.randn(*ids.shape, CONFIG["vocab_size"], generator=gen)
    state = values.grader_state(CONFIG, gen)
    reply = unwrap(learner.call("gpt2_perturbed", seed=seed, config=CONFIG, state=state,
                                ids=ids, delta=delta, grad=grad), what, MODULE)
    _loaded(reply, what)
    logits = _logits(reply, what, reply["before"])
    expected, grads = values.logits_and_grads(
        values.lumen_gpt2(CONFIG, state, wte=state["wte.weight"] + delta), ids, grad)
    if not values.close(logits, expected):
        raise _not_the_same_parameter(
            what, reply["before"], "after wte.weight changed in place, the logits did not "
            "follow it")
    got = (reply.get("grads") or {}).get("wte.weight")
    if not values.close(got, grads["wte.weight"], rtol=1e-3):
        raise _not_the_same_parameter(
            what, reply["before"], "wte.weight.grad lacks the output layer's share of the "
            "gradient")
    bans.certify(grading.files, "one shared table")


def test_parameter_count(learner, seed, gen, grading):
    """parameters() counts the shared matrix once: the totals of count_params, tied and untied

    Observed in the learner's process, so its points depend on the rules (``bans.certify``):
    with the grader's checkpoint loaded, one SGD step with
    weight decay over model.parameters() must move the model exactly as it moves lumen's (a
    matrix listed twice is updated, and decayed, twice). The reported count names the mistake."""
    V, d = CONFIG["vocab_size"], CONFIG["d_model"]
    for config in (CONFIG, UNTIED):
        tied = config.get("tie_weights", True)
        expected_count = count_params(V, d, config["n_layers"], config["n_ctx"], tied=tied).total
        what = _described(config)
        ids, after = _ids(gen, config), _ids(gen, config)
        grad = torch.randn(*ids.shape, V, generator=gen)
        state = values.grader_state(config, gen)
        reply = unwrap(learner.call("gpt2_sgd_step", seed=seed, config=config, state=state,
                                    ids=ids, grad=grad, ids_after=after, lr=LR,
                                    weight_decay=WEIGHT_DECAY), what, MODULE)
        _loaded(reply, what)
        expected = values.logits_after_sgd(values.lumen_gpt2(config, state), ids, grad,
                                           after, LR, WEIGHT_DECAY)
        if values.close(reply["logits"], expected):
            continue
        got = reply["n_params"]
        if tied and got == expected_count + V * d:
            raise Mistake(
                f"{what} has {got:,} parameters, expected {expected_count:,} (count_params, "
                f"tied): the V x d = {V * d:,} matrix is counted twice, because lm_head.weight "
                "is a second Parameter (a copy, or .data sharing) rather than wte.weight itself. "
                f"parameters() lists each Parameter object once, so a real tie is counted once: "
                f"{TIE}"
            )
        if not tied and got == expected_count - V * d:
            raise Mistake(
                f"{what} has {got:,} parameters, expected {expected_count:,} (count_params, "
                "untied): the untied model still shares one matrix between wte and lm_head: "
                "tie only when config.tie_weights is True"
            )
        if got != expected_count:
            raise Mistake(f"{what} has {got:,} parameters, expected {expected_count:,} "
                          f"(count_params, {'tied' if tied else 'untied'})")
        raise Mistake(
            f"{what}: after one SGD step over model.parameters() the logits differ from "
            f"lumen's {values.first_gap(reply['logits'], expected)}: parameters() must list "
            "every matrix once, the shared one included (one Parameter, one update)"
        )
    bans.certify(grading.files, "the parameter count")


def test_embedding_matrix_is_kept(learner, seed, gen):
    """tying keeps the embedding's matrix: after the tie both layers hold wte's numbers

    Earned by values: the model is built untied, the grader's checkpoint (wte and lm_head
    holding different matrices) is loaded, then tie_weights() runs: the logits must be lumen's
    on that checkpoint with wte's matrix as the head too."""
    table = torch.randn(CONFIG["vocab_size"], CONFIG["d_model"], generator=gen) * 0.02
    head = torch.randn(CONFIG["vocab_size"], CONFIG["d_model"], generator=gen) * 0.02
    state = values.grader_state(UNTIED, gen, wte=table, lm_head=head)
    ids = _ids(gen, CONFIG)
    what = "tie_weights() on a model whose wte and lm_head hold different matrices"
    reply = unwrap(learner.call("gpt2_tie_direction", seed=seed, config=CONFIG, state=state,
                                ids=ids), what, MODULE)
    _loaded(reply, what)
    logits = _logits(reply, what)
    if values.close(logits, values.logits(values.lumen_gpt2(CONFIG, state, wte=table), ids)):
        return
    if reply["tied_before"]:
        raise Mistake(
            f"{what}: the model was built with config.tie_weights=False, yet lm_head already "
            "shared wte's matrix: tie only when config.tie_weights is True"
        )
    if values.close(logits, values.logits(values.lumen_gpt2(CONFIG, state, wte=head), ids)):
        raise Mistake(
            f"{what}: tied in the wrong direction: both layers now hold the output layer's "
            "matrix. self.wte.weight = self.lm_head.weight throws away the embedding's matrix "
            "(and its N(0, 0.02^2) initialisation); the embedding's matrix is the one kept: "
            + TIE
        )
    if _transposed(reply):
        raise _transposed_mistake(what, reply)
    if not reply["same_object"]:
        raise Mistake(f"{what}: afterwards lm_head.weight is not wte.weight: tie with {TIE}")
    raise Mistake(f"{what}: the shared matrix holds neither wte's nor lm_head's numbers: "
                  f"keep the embedding's matrix as it is, {TIE}")


@remembered
def test_tied_logits_and_initial_loss(learner, seed, gen):
    """the tied model's logits are h @ E.T, and its initial loss on random ids is about ln V

    The loss is the learner's own model as built (its initial values are what is judged); the
    logits are earned on the grader's checkpoint, loaded into the model, with wte.weight then
    changed in place by a fresh delta: they must be lumen's h @ (E + delta)^T with E the
    checkpoint's wte.weight (stored once), values that only a head sharing wte's matrix gives."""
    V = SQUARE["vocab_size"]
    B, T = 8, SQUARE["n_ctx"]
    ids = torch.randint(0, V, (B, T), generator=gen)
    what = f"a freshly built {_described(SQUARE)}"
    built = unwrap(learner.call("gpt2_build", seed=seed, config=SQUARE, ids=ids), what, MODULE)
    logits = _logits(built, what)
    logits = expect_tensor(logits, f"{what}: the logits", like=torch.empty(B, T, V))
    # A fresh model knows nothing, so it should predict about uniformly: loss ln V. After ln_f,
    # ||h||^2 = d, so with E's entries of std 0.02 (the scaffold's init_weights draws them
    # uniformly; a sum of d of them is as good as normal) each logit h . E_i is N(0, s^2) with
    # s = 0.02 sqrt(d) = 0.16: the expected loss is ln V + s^2/2 (ln V + 0.013), and the mean
    # over N = B (T - 1) = 120 tokens with independent random targets has a standard error of
    # about s / sqrt(N) = 0.015 (0.017 measured over 300 seeds, correlations included). We
    # allow 0.25, over 10 standard errors; scaling E by sqrt(d) = 8 puts the loss ~5.7 above.
    predicted, targets = logits[:, :-1].reshape(-1, V).double(), ids[:, 1:].reshape(-1)
    loss = float(torch.nn.functional.cross_entropy(predicted, targets))  # next-token loss
    if not math.isfinite(loss) or abs(loss - math.log(V)) > 0.25:
        raise Mistake(
            f"{what}: the initial next-token loss on random ids is {loss:.3f}, expected about "
            f"ln V = ln {V} = {math.log(V):.3f}: an untrained model should be near-uniform. "
            "A loss this far off means the tied matrix is not the embedding as initialised (a "
            "rescaled or transposed matrix, or one multiplied by sqrt(d_model)): tie the "
            f"Parameter as it is, {TIE}"
        )
    state, delta = values.grader_state(SQUARE, gen), _delta(gen, SQUARE)
    what = f"{_described(SQUARE)} with a checkpoint loaded that stores E once (as wte.weight)"
    reply = unwrap(learner.call("gpt2_perturbed", seed=seed, config=SQUARE, state=state, ids=ids,
                                delta=delta), what, MODULE)
    _loaded(reply, what)
    logits = _logits(reply, what, reply["before"])
    E = state["wte.weight"]
    expected = values.logits(values.lumen_gpt2(SQUARE, state, wte=E + delta), ids)
    if values.close(logits, expected):
        return
    if _transposed(reply["before"]):
        raise Mistake(
            f"{what}: the logits are h @ E, not h @ E.T: your head holds the transposed table. "
            "nn.Linear computes h @ weight.T and stores (V, d), the table's own layout, so the "
            f"tie needs no transpose: {TIE}"
        )
    if isinstance(logits, torch.Tensor) and tuple(logits.shape) == tuple(expected.shape):
        raise _not_the_same_parameter(
            what, reply["before"], "the logits differ from h @ (E + delta).T with E the loaded "
            f"wte.weight {values.first_gap(logits, expected)}")
    raise Mistake(f"{what}: the logits have shape {_shape(logits)}, expected "
                  f"{tuple(expected.shape)}")


def _shape(value: object) -> object:
    return tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__


def _lost_after_to(what: str, reply: dict) -> Mistake:
    before = reply["before"]
    if before["same_object"] and not reply["same_object"]:
        return Mistake(f"after {what}, lm_head.weight is no longer wte.weight: the tie was lost "
                       "after .to(); share the Parameter itself, " + TIE)
    if before["same_storage"]:
        return Mistake(
            f"after {what}, lm_head.weight and wte.weight hold different tensors: they were "
            "two Parameters sharing storage (.data sharing, or nn.Parameter(self.wte.weight)), "
            "which holds only until .to() gives each Parameter its own converted copy. The "
            f"tie is lost after .to(); share the Parameter itself: {TIE}"
        )
    if not before["same_object"]:
        return Mistake(f"{what}: lm_head.weight is not wte.weight, before or after .to(): "
                       f"the model is not tied at all; {TIE}")
    return Mistake(f"after {what}, loading wte.weight no longer loads the head: the logits "
                   f"are not h @ E^T; the tie did not survive .to(); {TIE}")


def test_tie_survives_to_and_load(learner, seed, gen, devices):
    """the tie survives model.to(dtype, device) and a load_state_dict that stores E once

    Earned by values: after .to(device, float64) on every device of the run, after
    .to('cpu', bfloat16), and on its own, the model loads the grader's
    checkpoint, which stores the shared matrix once (as wte.weight), and wte.weight is changed
    in place by a fresh delta: the logits must be lumen's h @ (E + delta)^T on that checkpoint."""
    for device, dtype in [(device, torch.float64) for device in devices] + \
            [("cpu", torch.bfloat16)]:
        name = str(dtype).removeprefix("torch.")
        what = f"{_described(CONFIG)}.to('{device}', torch.{name}), then load_state_dict"
        ids, delta = _ids(gen, CONFIG), _delta(gen, CONFIG).to(dtype)
        state = values.grader_state(CONFIG, gen)
        reply = unwrap(learner.call("gpt2_perturbed", seed=seed, config=CONFIG, state=state,
                                    ids=ids, delta=delta, dtype=name, device=device),
                       what, MODULE)
        _loaded(reply, what)
        logits = _logits(reply, what)
        E = state["wte.weight"].to(dtype)  # then += delta in that dtype, as the probe does
        model = values.lumen_gpt2(CONFIG, state, dtype=dtype, wte=E + delta)
        if not values.close(logits, values.logits(model, ids), rtol=TO_RTOL[dtype]):
            raise _lost_after_to(what, reply)
    state = values.grader_state(CONFIG, gen)
    what = "load_state_dict of a checkpoint that stores the shared matrix once (as wte.weight)"
    ids, delta = _ids(gen, CONFIG), _delta(gen, CONFIG)
    reply = unwrap(learner.call("gpt2_perturbed", seed=seed, config=CONFIG, state=state,
                                ids=ids, delta=delta), what, MODULE)
    _loaded(reply, what)
    logits = _logits(reply, what)
    expected = values.logits(values.lumen_gpt2(CONFIG, state, wte=state["wte.weight"] + delta),
                             ids)
    if not values.close(logits, expected):
        raise Mistake(
            f"after {what}, lm_head.weight does not hold the loaded matrix: the tie was lost "
            "(or never made), so the output layer kept its own numbers. With one shared "
            f"Parameter, loading wte.weight loads the head too: {TIE}"
        )


def test_untied_keeps_two_matrices(learner, seed, gen):
    """untied (config.tie_weights=False): wte and lm_head are two separate matrices

    Earned by values: the grader's checkpoint holds two different matrices, E and H; loaded,
    and wte.weight changed in place, the logits must be lumen's h @ H^T, the head untouched;
    and tie_weights() run again, untied, on the loaded model changes nothing (no copy of the
    table into the head, no fill of its own)."""
    what = _described(UNTIED)
    ids, delta = _ids(gen, UNTIED), _delta(gen, UNTIED)
    state = values.grader_state(UNTIED, gen)
    E = state["wte.weight"]
    reply = unwrap(learner.call("gpt2_perturbed", seed=seed, config=UNTIED, state=state,
                                ids=ids, delta=delta), what, MODULE)
    _loaded(reply, what)
    logits = _logits(reply, what)
    expected = values.logits(values.lumen_gpt2(UNTIED, state, wte=E + delta), ids)
    logits = expect_tensor(logits, f"{what}: the logits", like=expected)
    if values.close(logits, expected):
        _untied_again(learner, seed, gen)
        return
    if reply["same_object"] or reply["same_storage"] or reply["before"]["same_object"]:
        raise Mistake(
            f"{what}: lm_head.weight shares wte.weight's matrix although config.tie_weights=False: "
            "tie_weights must read self.config.tie_weights and leave the two layers apart when "
            "it is False (an untied model is how large models such as Llama 3 are built)"
        )
    raise Mistake(f"{what}: the logits differ from h @ H^T with H lm_head's own matrix "
                  f"{values.first_gap(logits, expected)}: untied, leave both layers as they are")


def _untied_again(learner, seed: int, gen: torch.Generator) -> None:
    """tie_weights() with config.tie_weights=False, run on a model holding the grader's E and
    H, leaves both as they are: the logits stay h @ H^T."""
    E, H = (torch.randn(CONFIG["vocab_size"], CONFIG["d_model"], generator=gen) * 0.02
            for _ in range(2))
    state = values.grader_state(UNTIED, gen, wte=E, lm_head=H)
    ids = _ids(gen, UNTIED)
    what = ("tie_weights() run again, with config.tie_weights=False, on an untied model whose "
            "wte and lm_head hold different matrices")
    reply = unwrap(learner.call("gpt2_tie_direction", seed=seed, config=UNTIED, state=state,
                                ids=ids, tie=False), what, MODULE)
    _loaded(reply, what)
    logits = _logits(reply, what)
    expected = values.logits(values.lumen_gpt2(UNTIED, state), ids)
    if values.close(logits, expected):
        return
    copied = values.close(logits, values.logits(values.lumen_gpt2(UNTIED, state, lm_head=E),
                                                ids))
    raise Mistake(
        f"{what}: the logits differ from h @ H^T with H lm_head's own matrix "
        f"{values.first_gap(logits, expected)}"
        + (": the head now holds a copy of the table" if copied else
           ": the head's numbers were changed") + ". Untied, tie_weights changes nothing: two "
        "separate Parameters, each keeping its own numbers (no copy of wte's matrix, no fill "
        "of the head's own; init_weights draws them)")


# --- given code, as the learner wrote it -----------------------------------------------------
# Graded, every GPT2 runs the grader's own copy of the given code (GPT2.__init__, forward,
# nn.Module's methods: sandboxed/given.py), so a tie made anywhere but tie_weights is no tie
# there. This test also runs the learner's GPT2 as they wrote it: if one of the two is right
# and the other is not, the given code was changed. It holds one of
# test_tied_head_is_the_embedding's points and fails whenever that test does (it runs it), so
# a learner who left the given code as it is scores exactly as before.

GIVEN = ("the given code of gpt2.py (GPT2.__init__, forward, num_params, the other classes) is "
         "the grader's: it runs the stub's own copy, whatever your file holds")


def _as_shipped_verdict(what: str, tied: bool, pinned_ok: bool, shipped_ok: bool) -> None:
    if pinned_ok and not shipped_ok:
        raise Mistake(
            f"{what}, as you wrote it: after wte.weight changed in place the logits are not "
            f"those of {'a tied' if tied else 'an untied'} model, yet with the given code as "
            "the stub has it they are. So the given code outside YOUR CODE HERE was changed "
            "(GPT2.__init__, forward, or an nn.Module method your class overrides, such as "
            f"load_state_dict): {GIVEN}. Put it back as the stub has it"
        )
    if shipped_ok and not pinned_ok:
        raise Mistake(
            f"{what}: as you wrote it your model is {'tied' if tied else 'untied'} as it "
            "should be, but not through tie_weights: with the given code as the stub has it, "
            f"it is not. The given code was changed (the tie made in forward or __init__?): "
            f"{GIVEN}. Tie in tie_weights alone, {TIE}, and leave the given code as it is"
        )


def test_tie_as_you_wrote_it(learner, seed, gen):
    """your GPT2 as you wrote it ties through tie_weights and nothing else: the given code
    (GPT2.__init__, forward, nn.Module's methods) is left as the stub has it

    Earned by values: a GPT2 converted to float64 and holding a fresh state, tied and untied,
    gets the logits of lumen's after wte.weight changes in place, both with the grader's given
    code and with the learner's; then test_tied_logits_and_initial_loss's requirement (a value
    check: the structural test_tied_head_is_the_embedding carries no points), on fresh inputs."""
    V, d = CONFIG["vocab_size"], CONFIG["d_model"]
    for config in (CONFIG, UNTIED):
        tied = config.get("tie_weights", True)
        state = {k: v for k, v in values.fresh_lumen(config, seed).state_dict().items()
                 if not (tied and k == "lm_head.weight")}  # tied: the matrix stored once
        state["wte.weight"] = torch.randn(V, d, generator=gen) * 0.02
        ids, delta = _ids(gen, config), _delta(gen, config).double()
        what = f"{_described(config)}.to(torch.float64)"
        reply = unwrap(learner.call("gpt2_tie_as_shipped", seed=seed, config=config,
                                    state=state, ids=ids, delta=delta), what, MODULE)
        expected = values.logits(values.lumen_gpt2(
            config, state, dtype=torch.float64, wte=state["wte.weight"].double() + delta), ids)
        _as_shipped_verdict(what, tied, values.close(reply["pinned"], expected, rtol=1e-6),
                            values.close(reply["shipped"], expected, rtol=1e-6))
    verdict_of(test_tied_logits_and_initial_loss, learner, seed, gen)
