"""Hidden tests, stage 'tying': one matrix for the embedding and the output layer.

The learner's ``GPT2.tie_weights`` runs inside their GPT2, with every other stage's functions
(Embedding, the initialisation) taken from lumen, on tiny configs so that a build takes
milliseconds. Tied means ``lm_head.weight`` IS ``wte.weight``: the tests look at object
identity, the parameter count, which matrix is kept, the logits ``h E^T`` and the initial loss,
and whether the tie survives ``.to()`` and ``load_state_dict``. Every failure says what was
expected and the likely mistake, in the chapter's words.
"""

from __future__ import annotations

import math

import torch

from autograder.feedback import Mistake, expect_tensor, unwrap
from lumen import gpt2 as ref
from lumen.params import count_params

STAGE = "tying"
MODULE = "gpt2"
CONFIG = {"vocab_size": 97, "n_ctx": 16, "d_model": 32, "n_layers": 2, "n_heads": 4}
UNTIED = {**CONFIG, "tie_weights": False}
# Square (V = d), so that a head tied to the transposed table still runs and can be named.
SQUARE = {"vocab_size": 64, "n_ctx": 16, "d_model": 64, "n_layers": 2, "n_heads": 4}
TIE = "self.lm_head.weight = self.wte.weight"


def _described(config: dict) -> str:
    shape = ", ".join(f"{k}={v}" for k, v in config.items() if k != "tie_weights")
    return f"GPT2({shape}, tie_weights={config.get('tie_weights', True)})"


def _reference_model(config: dict, seed: int) -> ref.GPT2:
    """lumen's GPT2, built from ``seed`` without disturbing the grader's own random state."""
    with torch.random.fork_rng(devices=[]):  # the CPU generator only: never start CUDA here
        torch.manual_seed(seed)
        return ref.GPT2(ref.GPT2Config(**config)).eval()


def _reference_logits(config: dict, state: dict, ids: torch.Tensor, head: torch.Tensor,
                      seed: int) -> torch.Tensor:
    """lumen's logits with the learner's weights, but ``head`` as the output matrix."""
    model = _reference_model({**config, "tie_weights": False}, seed)
    model.load_state_dict({**state, "lm_head.weight": head}, strict=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small runs fastest on one thread (50x on busy CPUs)
    try:
        with torch.no_grad():
            return model(ids)  # (B, T, V)
    finally:
        torch.set_num_threads(threads)


def _first_gap(got: torch.Tensor, expected: torch.Tensor) -> str:
    """Where two logit tensors first differ beyond float32 noise, for a message."""
    index = tuple(int(i) for i in torch.nonzero(~torch.isclose(got, expected, 1e-4, 1e-5))[0])
    got, expected = got[index].item(), expected[index].item()
    return f"at index {list(index)}: got {got:.6g}, expected {expected:.6g}"


def test_tied_head_is_the_embedding(learner, seed):
    """tied: lm_head.weight is wte.weight itself, the same nn.Parameter (not a copy, not a view)"""
    V, d = CONFIG["vocab_size"], CONFIG["d_model"]
    what = _described(CONFIG)
    facts = unwrap(learner.call("gpt2_build", seed=seed, config=CONFIG, state=False), what, MODULE)
    if tuple(facts["head_shape"]) == (d, V):
        raise Mistake(
            f"{what}: lm_head.weight has shape {(d, V)}, the table transposed. nn.Linear stores "
            f"its weight as (out, in) = (V, d), the same layout as wte.weight, so the logits "
            f"h @ E.T need no transpose: {TIE}"
        )
    if not facts["head_is_param"]:
        raise Mistake(f"{what}: lm_head.weight is not an nn.Parameter: tie with {TIE}")
    if facts["same_object"]:
        return
    if facts["same_storage"]:
        raise Mistake(
            f"{what}: lm_head.weight shares wte.weight's numbers but is a second Parameter "
            "(.data sharing, or nn.Parameter(self.wte.weight)): parameters() counts the matrix "
            "twice and .to() splits the two apart. Assign the Parameter itself: " + TIE
        )
    if facts["same_values"]:
        raise Mistake(
            f"{what}: your tied head is a copy, not the same Parameter: lm_head.weight starts "
            "equal to wte.weight but is a different tensor, so the two drift apart as soon as "
            f"training updates them, and the V x d matrix is stored twice. Use {TIE}"
        )
    raise Mistake(
        f"{what}: lm_head.weight is not wte.weight (not even equal to it): with "
        f"config.tie_weights=True the output layer must reuse the embedding's matrix: {TIE}"
    )


def test_parameter_count(learner, seed):
    """parameters() counts the shared matrix once: the totals of count_params, tied and untied"""
    V, d = CONFIG["vocab_size"], CONFIG["d_model"]
    for config in (CONFIG, UNTIED):
        tied = config.get("tie_weights", True)
        expected = count_params(V, d, config["n_layers"], config["n_ctx"], tied=tied).total
        what = _described(config)
        facts = unwrap(learner.call("gpt2_build", seed=seed, config=config, state=False), what,
                       MODULE)
        got = facts["n_params"]
        if got == expected:
            continue
        if tied and got == expected + V * d:
            raise Mistake(
                f"{what} has {got:,} parameters, expected {expected:,} (count_params, tied): the "
                f"V x d = {V * d:,} matrix is counted twice, because lm_head.weight is a second "
                "Parameter (a copy, or .data sharing) rather than wte.weight itself. parameters() "
                f"lists each Parameter object once, so a real tie is counted once: {TIE}"
            )
        if not tied and got == expected - V * d:
            raise Mistake(
                f"{what} has {got:,} parameters, expected {expected:,} (count_params, untied): "
                "the untied model still shares one matrix between wte and lm_head: tie only "
                "when config.tie_weights is True"
            )
        raise Mistake(f"{what} has {got:,} parameters, expected {expected:,} (count_params, "
                      f"{'tied' if tied else 'untied'})")


def test_embedding_matrix_is_kept(learner, seed, gen):
    """tying keeps the embedding's matrix: after the tie both layers hold wte's numbers"""
    V, d = CONFIG["vocab_size"], CONFIG["d_model"]
    table = torch.randn(V, d, generator=gen) * 0.02
    head = torch.randn(V, d, generator=gen) * 0.02
    what = "tie_weights() on a model whose wte and lm_head hold different matrices"
    facts = unwrap(learner.call("gpt2_tie_direction", seed=seed, config=CONFIG, table=table,
                                head=head), what, MODULE)
    if facts["tied_before"]:
        raise Mistake(
            f"{what}: the model was built with config.tie_weights=False, yet lm_head already "
            "shared wte's matrix: tie only when config.tie_weights is True"
        )
    if not facts["same_object"]:
        raise Mistake(f"{what}: afterwards lm_head.weight is not wte.weight: tie with {TIE}")
    shared = expect_tensor(facts["shared"], "the shared matrix", like=table)
    if torch.equal(shared, head):
        raise Mistake(
            f"{what}: tied in the wrong direction: both layers now hold the output layer's "
            "matrix. self.wte.weight = self.lm_head.weight throws away the embedding's matrix "
            "(and its N(0, 0.02^2) initialisation); the embedding's matrix is the one kept: "
            + TIE
        )
    if not torch.equal(shared, table):
        raise Mistake(f"{what}: the shared matrix holds neither wte's nor lm_head's numbers: "
                      f"keep the embedding's matrix as it is, {TIE}")


def test_tied_logits_and_initial_loss(learner, seed, gen):
    """the tied model's logits are h @ E.T, and its initial loss on random ids is about ln V"""
    V = SQUARE["vocab_size"]
    B, T = 8, SQUARE["n_ctx"]
    ids = torch.randint(0, V, (B, T), generator=gen)
    what = f"a freshly built {_described(SQUARE)}"
    built = unwrap(learner.call("gpt2_build", seed=seed, config=SQUARE, ids=ids), what, MODULE)
    logits = expect_tensor(built["logits"], f"{what}: the logits", like=torch.empty(B, T, V))
    # A fresh model knows nothing, so it should predict about uniformly: loss ln V. After ln_f,
    # ||h||^2 = d, so with E's entries N(0, 0.02^2) each logit h . E_i is N(0, s^2) with
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
    state = {k: v for k, v in built["state"].items() if k != "lm_head.weight"}
    E = state["wte.weight"]
    expected = _reference_logits(SQUARE, state, ids, E, seed)
    if torch.allclose(logits, expected, rtol=1e-4, atol=1e-5):
        return
    if torch.allclose(logits, _reference_logits(SQUARE, state, ids, E.T, seed), rtol=1e-4,
                      atol=1e-5):
        raise Mistake(
            f"{what}: the logits are h @ E, not h @ E.T: your head holds the transposed table. "
            "nn.Linear computes h @ weight.T and stores (V, d), the table's own layout, so the "
            f"tie needs no transpose: {TIE}"
        )
    raise Mistake(
        f"{what}: the logits differ from h @ E.T, with E the model's own wte.weight, "
        f"{_first_gap(logits, expected)}: the output layer must score each token by the dot "
        "product of h with that token's embedding row"
    )


def test_tie_survives_to_and_load(learner, seed, gen, devices):
    """the tie survives model.to(dtype, device) and a load_state_dict that stores E once"""
    for device in devices:
        what = f"{_described(CONFIG)}.to('{device}', torch.float64)"
        facts = unwrap(learner.call("gpt2_after_to", seed=seed, config=CONFIG, dtype="float64",
                                    device=device), what, MODULE)
        if facts["same_object"]:
            continue
        before = facts["before"]
        if before["same_object"]:
            raise Mistake(f"after {what}, lm_head.weight is no longer wte.weight: the tie was "
                          "lost after .to(); share the Parameter itself, " + TIE)
        if before["same_storage"]:
            raise Mistake(
                f"after {what}, lm_head.weight and wte.weight hold different tensors: they were "
                "two Parameters sharing storage (.data sharing, or nn.Parameter(self.wte.weight)), "
                "which holds only until .to() gives each Parameter its own converted copy. The "
                f"tie is lost after .to(); share the Parameter itself: {TIE}"
            )
        raise Mistake(f"{what}: lm_head.weight is not wte.weight, before or after .to(): "
                      f"the model is not tied at all; {TIE}")
    V, d = CONFIG["vocab_size"], CONFIG["d_model"]
    table = torch.randn(V, d, generator=gen) * 0.02
    state = _reference_model(CONFIG, seed).state_dict()
    state = {k: v for k, v in state.items() if k != "lm_head.weight"}  # E stored once
    state["wte.weight"] = table
    what = "load_state_dict of a checkpoint that stores the shared matrix once (as wte.weight)"
    facts = unwrap(learner.call("gpt2_after_load", seed=seed, config=CONFIG, state=state), what,
                   MODULE)
    head = expect_tensor(facts["lm_head"], "lm_head.weight after loading", like=table)
    if not facts["same_object"] or not torch.equal(head, table):
        raise Mistake(
            f"after {what}, lm_head.weight does not hold the loaded matrix: the tie was lost "
            "(or never made), so the output layer kept its own numbers. With one shared "
            f"Parameter, loading wte.weight loads the head too: {TIE}"
        )


def test_untied_keeps_two_matrices(learner, seed):
    """untied (config.tie_weights=False): wte and lm_head are two separate matrices"""
    what = _described(UNTIED)
    facts = unwrap(learner.call("gpt2_build", seed=seed, config=UNTIED, state=False), what, MODULE)
    if facts["same_object"] or facts["same_storage"]:
        raise Mistake(
            f"{what}: lm_head.weight shares wte.weight's matrix although config.tie_weights=False: "
            "tie_weights must read self.config.tie_weights and leave the two layers apart when "
            "it is False (an untied model is how large models such as Llama 3 are built)"
        )
