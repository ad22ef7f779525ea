"""Expected values and structure come from the grader, never from the learner's process.

Three promises of the hidden suites (docs/threat-model.md), each checked here:

1. Every state compared against is the grader's. ``values.grader_state`` draws the checkpoint
   from the suite's seeded generator; the probes load it into the learner's model, and lumen
   computes the expected values from the same checkpoint in the grader. So what a reply says
   about the model's own state cannot move a verdict: honest code keeps full marks when its
   process reports garbage state and garbage facts (the state and facts only choose messages).
2. A check judged from what the learner's process reports about itself (an input left as it
   was, a Parameter, one shared table) earns its points only behind ``bans.certify``: it calls
   it last, its docstring says its points depend on the rules, and every hidden test carries
   points. The suites' calls and the docstrings are one list, checked against each other.
3. Code the rules refuse, which could forge those reports, costs exactly the "written by hand"
   tests and the certified checks, each saying why; every other point rests on values.
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
from lumen.stages import STAGE_NAMES
from tests.helpers import certified_tests
from tests.test_forgery import payload
from tests.variants.build import make_submission

ROOT = Path(__file__).resolve().parents[1]
CERTIFIED = "depend on the rules (``bans.certify``)"
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


# --- a check of what the process reports earns its points behind the rules -------------


def _hidden_tests(stage: str) -> dict[str, str]:
    suite = importlib.import_module(f"autograder.suites.test_{stage}")
    return {name: inspect.getdoc(fn) or "" for name, fn in vars(suite).items()
            if name.startswith("test_") and callable(fn)}


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_certified_checks_say_so_and_call_it_last(stage):
    points = load_rubric().points[stage]
    certified = certified_tests(stage)
    suite = ast.parse((ROOT / "autograder" / "suites" / f"test_{stage}.py").read_text("utf-8"))
    bodies = {n.name: n.body for n in suite.body if isinstance(n, ast.FunctionDef)}
    for name, doc in _hidden_tests(stage).items():
        assert points[name] > 0, f"{name} carries no points"
        says = CERTIFIED in " ".join(doc.split())
        assert says == (name in certified), (
            f"{name}: its docstring {'says' if says else 'does not say'} that its points "
            f"{CERTIFIED[:-len(' (``bans.certify``)')]}, but it "
            f"{'does not call' if says else 'calls'} bans.certify")
        if name in certified:
            last = bodies[name][-1]
            assert isinstance(last, ast.Expr) and ast.unparse(last.value.func) == "bans.certify", \
                f"{name} must call bans.certify last, once what it observed has passed"


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_the_threat_model_lists_every_certified_check(stage):
    """A check whose points depend on the rules is a row of docs/threat-model.md's table,
    marked **Certified**, with why learner code cannot forge it (the recipe for a hidden test,
    docs/changing-the-assignment.md, asks for the row)."""
    rows = [line for line in (ROOT / "docs" / "threat-model.md").read_text("utf-8").splitlines()
            if line.startswith("| ") and "**Certified" in line]
    missing = [name for name in certified_tests(stage)
               if not any(f"`{name}`" in row for row in rows)]
    assert not missing, (f"docs/threat-model.md's table has no **Certified** row for {missing} "
                         f"(autograder/suites/test_{stage}.py calls bans.certify): add one, "
                         "saying how it is judged and why learner code cannot forge it")


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
    """Correct code with every reported state and fact forged keeps every point that values
    earn: no expected value rests on them. The forgery's own code, which reaches into the
    running program, is refused by the rules, so the ban test and the checks of what the
    process reports (``bans.certify``) lose their points, each saying why."""
    folder = make_submission(tmp_path / "garbage", payload("gc.get_objects", GARBAGE))
    graded = _stage(grader, folder, stage)
    lost = {r.name: r.message for r, got, worth in graded.tests if got < worth}
    assert set(lost) <= {"test_no_builtin_embedding", *certified_tests(stage)}, lost
    for name in certified_tests(stage):
        assert "looked right, but it was seen inside your process" in lost[name], lost[name]
        assert "import gc" in lost[name], lost[name]


def test_garbage_forgery_reaches_the_probes(grader, tmp_path):
    """The canary: the same forgery costs the init stage points, where the reported state is
    the thing under test (the draws judged statistically), so it does reach the replies."""
    folder = make_submission(tmp_path / "garbage", payload("gc.get_objects", GARBAGE))
    graded = _stage(grader, folder, "init")
    lost = {r.name for r, got, worth in graded.tests if got < worth}
    assert {"test_gpt2_weight_stds", "test_gpt2_biases_and_layernorm"} <= lost, lost
