"""The tying stage's probes (suites/test_tying.py): the learner's GPT2 built, loaded with the
grader's state, perturbed, trained one SGD step and re-tied; its logits and gradients show
whether the head and the embedding are one Parameter. And its tie as the learner wrote it.
"""

from __future__ import annotations

import torch
from torch import nn

from .shared import SGD, _attempt, _build, _load, _pinned_and_shipped


def _tie_facts(model: nn.Module) -> dict:
    """What the model says about its tie: only ever used to explain wrong values."""
    head, table = model.lm_head.weight, model.wte.weight
    return {
        "same_object": head is table,
        "same_storage": head.data_ptr() == table.data_ptr(),
        "head_shape": list(head.shape),
        "same_values": head.shape == table.shape and torch.equal(head.detach(), table.detach()),
        "transposed": head.shape == table.mT.shape and torch.equal(head.detach(),
                                                                   table.detach().mT),
        "n_params": sum(p.numel() for p in model.parameters()),
        "head_is_param": type(head) is nn.Parameter,
    }


def _trainable(model: nn.Module) -> None:
    """Every parameter requires grad (the stand-in Embedding of another stage's grading leaves
    its weight without), so that a backward reaches the shared matrix."""
    for p in model.parameters():
        p.requires_grad_(True)


def gpt2_build(m, config, ids):
    """Build a GPT2; the tie and its logits on ``ids``, as built: the initial loss is judged
    on them."""
    model = _build(m, config)
    out = _tie_facts(model)
    model.eval()
    with torch.no_grad():
        out["logits"] = _attempt(lambda: model(ids))
    return out


def gpt2_perturbed(m, config, state, ids, delta, grad=None, dtype=None, device="cpu"):
    """Build a GPT2 (then ``.to(device, dtype)``, if asked), load the grader's ``state``
    (``load_state_dict(state, strict=False)``), add ``delta`` to wte.weight in place, and return
    the logits on ``ids``.

    Tied, lm_head.weight IS wte.weight, so the logits are h @ (E + delta)^T with E the loaded
    wte.weight; a copy, or a tie that .to() or load_state_dict broke, keeps another head and
    gives other logits. With ``grad``, also the gradients of sum(logits * grad): wte.weight.grad
    holds both uses of E only when the two layers share one Parameter.
    """
    model = _build(m, config)
    out = {"before": _tie_facts(model)}
    if dtype is not None or device != "cpu":
        model = model.to(device=device, dtype=getattr(torch, dtype) if dtype else None)
    out["load"] = _attempt(lambda: _load(model, state, strict=False))
    out.update(_tie_facts(model))
    model.eval()
    _trainable(model)
    table = model.wte.weight
    with torch.no_grad():
        table.add_(delta.to(table.device, table.dtype))
    logits = _attempt(lambda: model(ids.to(table.device)))
    out["logits"] = logits.detach() if isinstance(logits, torch.Tensor) else logits
    if grad is not None and isinstance(logits, torch.Tensor):
        (logits * grad.to(logits.device, logits.dtype)).sum().backward()
        out["grads"] = {"wte.weight": model.wte.weight.grad,
                        "lm_head.weight": model.lm_head.weight.grad}
    return out


def gpt2_sgd_step(m, config, state, ids, grad, ids_after, lr, weight_decay):
    """Load the grader's ``state``, take one SGD step (with weight decay) over
    model.parameters() on sum(logits * grad), then the logits on ``ids_after``.
    parameters() lists a tied matrix once; a head that is its own Parameter (a copy, or .data
    shared by two Parameters) gets an update of its own, or the shared numbers get decayed
    twice, and the logits differ."""
    model = _build(m, config)
    out = _tie_facts(model)
    out["load"] = _attempt(lambda: _load(model, state, strict=False))
    model.eval()
    _trainable(model)
    optimiser = SGD(model.parameters(), lr=lr, weight_decay=weight_decay)
    (model(ids) * grad).sum().backward()
    optimiser.step()
    with torch.no_grad():
        out["logits"] = model(ids_after)
    return out


def gpt2_tie_direction(m, config, state, ids, tie=True):
    """Build untied, load the grader's ``state`` (whose wte.weight and lm_head.weight differ),
    then call tie_weights with ``config.tie_weights = tie``: tied, or left untied (which must
    change nothing); the logits on ``ids`` afterwards."""
    model = _build(m, {**config, "tie_weights": False})
    tied_before = model.lm_head.weight.data_ptr() == model.wte.weight.data_ptr()  # untied: False
    out = {"load": _attempt(lambda: _load(model, state, strict=False))}
    model.config.tie_weights = bool(tie)
    model.tie_weights()
    out.update(_tie_facts(model))
    out["tied_before"] = tied_before
    model.eval()
    with torch.no_grad():
        out["logits"] = _attempt(lambda: model(ids))
    return out


# --- given code, as the learner wrote it (loader.Shipped, given.py) --------------------------
# In a stage process given code is the grader's own copy (given.py), so these probes run the
# learner's classes twice: pinned, as every other probe does, and as shipped, with the given
# code and nn.Module overrides of the learner's own file (``m["shipped"]``). The suites compare
# both with lumen: right when pinned but wrong as shipped means the given code was changed.


def _perturbed_logits(m, config, state, ids, delta) -> dict:
    """Build, convert with .to(torch.float64), load ``state`` (strict=False), add ``delta`` to
    wte.weight in place: the logits."""
    model = m["gpt2"].GPT2(m["gpt2"].GPT2Config(**config)).to(torch.float64)
    model.load_state_dict(state, strict=False)
    model.eval()
    with torch.no_grad():
        model.wte.weight.add_(delta.to(torch.float64))
        return model(ids).detach()


def gpt2_tie_as_shipped(m, config, state, ids, delta):
    """The logits after ``delta`` is added to wte.weight in place, of a GPT2 converted to
    float64 holding ``state``: pinned (the given code the grader's) and as the learner wrote
    it, from the same random state (so that where the two differ, only the code does)."""
    def run() -> object:  # on copies: a run that changes its inputs leaves the next its own
        return _perturbed_logits(m, config, _copies(state), ids.clone(), delta.clone())

    return _pinned_and_shipped(m, run)


def _copies(state: dict) -> dict:
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in state.items()}


#: This stage's probes, by the names its suite calls (the registry: probes/__init__.py).
PROBES = (
    gpt2_build, gpt2_perturbed, gpt2_sgd_step, gpt2_tie_direction, gpt2_tie_as_shipped,
)
