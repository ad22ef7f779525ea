"""Expected values and structure come from the grader, never from the learner's process.

Three promises of the hidden suites (docs/threat-model.md), each checked here:

1. Every state compared against is the grader's. ``values.grader_state`` draws the checkpoint
   from the suite's seeded generator; the probes load it into the learner's model, and lumen
   computes the expected values from the same checkpoint in the grader. So what a reply says
   about the model's own state cannot move a verdict: honest code keeps full marks when its
   process reports garbage state and garbage facts (the state and facts only choose messages).
2. A check judged from what the learner's process reports (a structural requirement) carries
   no points: its docstring says so, and the rubric gives it 0. The rubric and the docstrings
   are one list, checked against each other.
3. A known mistake whose named test carries no points still loses points elsewhere, unless it
   is one of the mistakes that only a structural check can see (``STRUCTURAL_ONLY``): those
   keep every point, by design, and the list says which they are.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
import torch

from autograder.grading import Grader
from autograder.rubric import load as load_rubric
from autograder.suites import values
from autograder.views import report
from lumen.stages import STAGE_NAMES
from tests.test_forgery import payload
from tests.variants.build import make_submission

ROOT = Path(__file__).resolve().parents[1]
STRUCTURAL = "Structural, so it carries no points"
CONFIG = {"vocab_size": 97, "n_ctx": 16, "d_model": 32, "n_layers": 2, "n_heads": 4}


# --- the grader's checkpoint --------------------------------------------------------------


def test_grader_state_is_drawn_from_the_generator():
    """The same seed gives the same checkpoint, another seed another one; it fits lumen's
    GPT-2; tied, it stores the shared matrix once; no LayerNorm is the identity or zero."""
    one = values.grader_state(CONFIG, torch.Generator().manual_seed(5))
    again = values.grader_state(CONFIG, torch.Generator().manual_seed(5))
    other = values.grader_state(CONFIG, torch.Generator().manual_seed(6))
    assert one.keys() == again.keys() and all(torch.equal(one[k], again[k]) for k in one)
    assert not torch.equal(one["wte.weight"], other["wte.weight"])
    assert "lm_head.weight" not in one  # E stored once: loading it must load the head
    model = values.fresh_lumen(CONFIG, 0)
    assert set(model.state_dict()) - set(one) == {"lm_head.weight"}
    for name, tensor in one.items():
        assert tensor.shape == model.state_dict()[name].shape, name
        assert bool(tensor.ne(0).all()), f"{name} holds zeros"
        if "ln_" in name and name.endswith(".weight"):
            assert not torch.equal(tensor, torch.ones_like(tensor)), name
    untied = values.grader_state({**CONFIG, "tie_weights": False}, torch.Generator())
    assert not torch.equal(untied["wte.weight"], untied["lm_head.weight"])


def test_lumen_holds_the_grader_state_exactly():
    """``lumen_gpt2`` holds the checkpoint as drawn, tied through wte; a state that does not fit
    is the grader's bug, never the learner's Mistake."""
    state = values.grader_state(CONFIG, torch.Generator().manual_seed(1))
    delta = torch.full((CONFIG["vocab_size"], CONFIG["d_model"]), 0.5)
    model = values.lumen_gpt2(CONFIG, state, wte=state["wte.weight"] + delta)
    assert model.lm_head.weight is model.wte.weight
    assert torch.equal(model.wte.weight, state["wte.weight"] + delta)
    for name, tensor in state.items():
        if name != "wte.weight":
            assert torch.equal(model.state_dict()[name], tensor), name
    with pytest.raises(RuntimeError, match="does not fit"):
        values.lumen_gpt2(CONFIG, {**state, "blocks.9.ln_1.weight": torch.ones(32)})


def test_no_suite_builds_an_expected_value_from_a_reply_state():
    """Only the init suite reads a reply's "state" (the draws it judges, which are the thing
    under test); no other suite reads one at all."""
    for stage in STAGE_NAMES:
        source = (ROOT / "autograder" / "suites" / f"test_{stage}.py").read_text("utf-8")
        reads = [node for node in ast.walk(ast.parse(source))
                 if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                 and node.slice.value == "state" and not isinstance(node.ctx, ast.Store)]
        if stage == "init":
            assert len(reads) == 1, "the init suite reads a reply's state once, in _state"
        else:
            assert not reads, f"test_{stage}.py reads a reply's state at line {reads[0].lineno}"


# --- structural checks carry no points ----------------------------------------------------


def _hidden_tests(stage: str) -> dict[str, str]:
    suite = importlib.import_module(f"autograder.suites.test_{stage}")
    return {name: inspect.getdoc(fn) or "" for name, fn in vars(suite).items()
            if name.startswith("test_") and callable(fn)}


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_structural_checks_and_zero_points_are_one_list(stage):
    points = load_rubric().points[stage]
    for name, doc in _hidden_tests(stage).items():
        structural = STRUCTURAL in " ".join(doc.split())
        if structural:
            assert points[name] == 0, f"{name} is structural but carries {points[name]:g} points"
        else:
            assert points[name] > 0, f"{name} carries no points: say why in its docstring"


def test_hidden_test_names_are_unique_across_stages():
    """Verdicts are scored by test name (results.score), so a name in two stages would give
    one stage's verdict to the other's rubric entry."""
    seen: dict[str, str] = {}
    for stage in STAGE_NAMES:
        for name in _hidden_tests(stage):
            assert name not in seen, f"{name} is a hidden test of {seen[name]} and of {stage}"
            seen[name] = stage


# --- honest code whose process reports garbage keeps full marks ---------------------------

#: Every reply's reported state and structural facts replaced by what a broken model would
#: report: the state all zeros, not tied, no Parameter, a count off by a million.
GARBAGE = '''
    FALSE = ("same_object", "same_storage", "head_is_param", "registered", "same_values",
             "transposed")

    def _garbage(value):
        if type(value) is list:
            return [_garbage(v) for v in value]
        if type(value) is not dict:
            return value
        out = {k: _garbage(v) for k, v in value.items()}
        for key in FALSE:
            if key in out:
                out[key] = key == "transposed"
        if type(out.get("n_params")) is int:
            out["n_params"] += 1_000_000
        if type(out.get("state")) is dict:
            out["state"] = {k: torch.zeros_like(v) if isinstance(v, torch.Tensor) else v
                            for k, v in out["state"].items()}
        return out

    def _forge(value, args):
        return _garbage(value)
'''


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


def _stage(grader, folder: Path, stage: str, seed: int = 11):
    return next(s for s in grader.grade(folder, seed=seed, stages=[stage]).stages
                if s.name == stage)


@pytest.mark.parametrize("stage", ["tying", "embedding"])
def test_reported_state_and_facts_move_no_point(grader, tmp_path, stage):
    """Correct code with every reported state and fact forged keeps the stage's marks: no
    expected value and no point rests on them. (The forgery's own code, which reaches into the
    running program, is refused by the source check: the ban test alone loses its points.)"""
    folder = make_submission(tmp_path / "garbage", payload("gc.get_objects", GARBAGE))
    graded = _stage(grader, folder, stage)
    lost = {r.name: r.message for r, got, worth in graded.tests if got < worth}
    assert set(lost) <= {"test_no_builtin_embedding"}, lost


# --- a mistake that a 0-point check names still loses points, unless structural only ------

#: Mistakes (tests/variants/<stage>.py) that only a structural check can see: they keep every
#: point, by design (docs/threat-model.md: the structural checks and why they carry none).
STRUCTURAL_ONLY = {
    ("embedding", "the caller's ids changed in place (unsqueeze_)"),
    ("onehot", "the caller's ids changed in place (unsqueeze_)"),
    ("onehot", "embed_via_onehot looks the rows up (weight[ids]), no product"),
    ("onehot", "the one-hot built, then its argmax looked up"),
    ("neighbours", "cosine_similarity divides its inputs in place"),
    ("init", "scale_output in place (x.mul_)"),
}


def _zero_point_mistakes() -> list:
    rubric = load_rubric()
    out = []
    for stage in STAGE_NAMES:
        module = importlib.import_module(f"tests.variants.{stage}")
        for name, (replacements, test, _words) in module.MISTAKES.items():
            if rubric.points[stage][test] == 0:
                out.append(pytest.param(stage, name, replacements, id=f"{stage}: {name}"))
    return out


@pytest.mark.parametrize(("stage", "name", "replacements"), _zero_point_mistakes())
def test_a_mistake_named_by_a_structural_check(grader, tmp_path, stage, name, replacements):
    grade = grader.grade(make_submission(tmp_path / "mistake", replacements), seed=11,
                         stages=[stage])
    graded = next(s for s in grade.stages if s.name == stage)
    if (stage, name) in STRUCTURAL_ONLY:
        assert graded.score == graded.max_score, "listed as structural only, yet it lost points"
        # a 0-point check still teaches: the report says which check failed, and why
        shown = report.terminal(grade)
        first = graded.first_failure
        assert "the others carry no points" in shown and first.title in shown, shown
        assert report.shown(first.message, keep_lines=True).splitlines()[0] in shown, shown
    else:
        assert graded.score < graded.max_score, (
            f"{name} loses no points: list it in STRUCTURAL_ONLY (and docs/threat-model.md's "
            "table) if only a structural check can see it")


def test_structural_only_names_real_mistakes():
    for stage, name in STRUCTURAL_ONLY:
        assert name in importlib.import_module(f"tests.variants.{stage}").MISTAKES


def test_garbage_forgery_reaches_the_probes(grader, tmp_path):
    """The canary: the same forgery costs the init stage points, where the reported state is
    the thing under test (the draws judged statistically), so it does reach the replies."""
    folder = make_submission(tmp_path / "garbage", payload("gc.get_objects", GARBAGE))
    graded = _stage(grader, folder, "init")
    lost = {r.name for r, got, worth in graded.tests if got < worth}
    assert {"test_gpt2_weight_stds", "test_gpt2_biases_and_layernorm"} <= lost, lost
