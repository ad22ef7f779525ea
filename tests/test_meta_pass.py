"""The meta pass never costs correct code a point: the grade is the same with it and without it.

Without a GPU, the suites with device checks run them on the meta device
(``feedback.checked_devices``), with the values kept behind its tensors
(``meta_device.MetaWithValues``), so that code which reads values, such as a range check, runs
there as it runs on the CPU. With the pass off (``feedback.META_PASS = False``) those checks
run nowhere, as on a GPU runner minus the GPU: every correct variant of those stages
(tests/variants/) must get the same verdict on every test both ways, and full marks; and the
hard-coded device the pass is there for must still cost its point, range check or not.
"""

from __future__ import annotations

import importlib

import pytest

from autograder import ROOT
from autograder.grading import Grader
from autograder.suites import feedback
from lumen.stages import STAGE_NAMES
from tests.variants.build import make_submission

#: The stages whose suites have device checks (call ``checked_devices``).
STAGES = tuple(name for name in STAGE_NAMES
               if "checked_devices(" in (ROOT / "autograder" / "suites" / f"test_{name}.py")
               .read_text(encoding="utf-8"))
SEED = 2024


def _correct() -> list:
    out = []
    for stage in STAGES:
        module = importlib.import_module(f"tests.variants.{stage}")
        out += [pytest.param(stage, r, id=f"{stage}: {name}") for name, r in module.CORRECT.items()]
    return out


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        if "cuda" in g.devices:
            pytest.skip("with a GPU the device checks run there, and the meta pass never runs")
        yield g


def _verdicts(grader, folder, stage: str) -> dict[str, bool]:
    graded = next(s for s in grader.grade(folder, seed=SEED, stages=[stage]).stages
                  if s.name == stage)
    return {r.name: r.passed for r, _, _ in graded.tests}


@pytest.mark.parametrize(("stage", "replacements"), _correct())
def test_the_meta_pass_changes_no_verdict_of_correct_code(grader, tmp_path, monkeypatch, stage,
                                                          replacements):
    folder = make_submission(tmp_path / "submission", replacements)
    with_pass = _verdicts(grader, folder, stage)
    monkeypatch.setattr(feedback, "META_PASS", False)
    without = _verdicts(grader, folder, stage)
    changed = sorted(t for t in with_pass if with_pass[t] != without.get(t))
    assert not changed, f"the meta pass changes the verdict of {changed}"
    assert all(with_pass.values()), f"a correct variant lost points: {with_pass}"


@pytest.mark.parametrize(("stage", "mistake", "test"), [
    ("embedding", "a natural range check, then a hard-coded cpu", "test_meta_device_and_dtypes"),
    ("onehot", "an inline range check, then a hard-coded cpu", "test_one_hot_device"),
    ("neighbours", "cosine_neighbours returns its ids on the CPU",
     "test_neighbours_match_reference"),
    ("init", "init_weights puts weights drawn on the CPU in .data", "test_gpt2_weight_stds"),
])
def test_the_meta_pass_still_sees_a_hard_coded_device(grader, tmp_path, monkeypatch, stage,
                                                      mistake, test):
    """Values read on the meta device come from the values behind it, so the code goes on past
    its range check to the fixed device, which the pass then sees (as a GPU would)."""
    replacements = importlib.import_module(f"tests.variants.{stage}").MISTAKES[mistake][0]
    folder = make_submission(tmp_path / "submission", replacements)
    assert not _verdicts(grader, folder, stage)[test], "the meta pass missed the fixed device"
    monkeypatch.setattr(feedback, "META_PASS", False)
    assert _verdicts(grader, folder, stage)[test], f"{test} fails for another reason"


def test_a_tied_model_moved_to_the_meta_device_keeps_one_table():
    """``MetaWithValues.move`` moves each tensor once: a head tied to the token embedding stays
    the same Parameter (``module.to("meta")`` would give each module its own copy)."""
    import torch

    from autograder.sandboxed.probes.meta_device import MetaWithValues
    from lumen import gpt2

    torch.manual_seed(SEED)
    model = gpt2.GPT2(gpt2.GPT2Config(vocab_size=50, n_ctx=16, d_model=32, n_layers=1,
                                      n_heads=4))
    count, table = len(list(model.parameters())), model.wte.weight.detach().clone()
    mode = MetaWithValues()
    mode.move(model)
    assert model.lm_head.weight is model.wte.weight
    assert model.wte.weight.device.type == "meta" and len(list(model.parameters())) == count
    assert torch.equal(mode.values(model.wte.weight), table)
    with mode:
        model.init_weights()
    assert model.lm_head.weight is model.wte.weight and model.wte.weight.device.type == "meta"
