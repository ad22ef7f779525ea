"""The hidden suites, checked: correct alternatives get full marks, known mistakes are named.

Each variant is lumen with some functions swapped (tests/variants/<stage>.py), graded on its
stage alone. A correct alternative must get the stage's full marks; a mistake must fail the
named hidden test, which carries points, with a message that contains the expected words.
"""

from __future__ import annotations

import importlib

import pytest
import torch

from autograder.grading import Grader
from autograder.rubric import load as load_rubric
from autograder.suites import id_dtypes
from autograder.suites.promises import sweeps
from lumen.stages import STAGE_NAMES
from tests.variants.build import make_submission


def _variants(kind: str) -> list:
    out = []
    for stage in STAGE_NAMES:
        try:
            module = importlib.import_module(f"tests.variants.{stage}")
        except ModuleNotFoundError:
            continue
        for name, value in getattr(module, kind).items():
            out.append(pytest.param(stage, value, id=f"{stage}: {name}"))
    return out


@pytest.fixture(scope="module")
def grader():
    """One warm worker for every variant, as for a class."""
    with Grader() as g:
        yield g


#: Seeds each variant is graded under (``make seeds`` tries 50): a seed replays a run, it is no
#: lottery, so every variant must get the same verdict on every test under each of them.
SEEDS = (11, 2024, 777_777)


def _grade_stage(grader, tmp_path, stage, replacements):
    """The stage's grade under the first seed, after checking that every seed agrees."""
    folder = make_submission(tmp_path / "submission", replacements)
    graded = [next(s for s in grader.grade(folder, seed=seed, stages=[stage]).stages
                   if s.name == stage) for seed in SEEDS]
    verdicts = [{r.name: r.passed for r, _, _ in g.tests} for g in graded]
    for seed, other in zip(SEEDS[1:], verdicts[1:], strict=True):
        changed = sorted(t for t in other if other[t] != verdicts[0][t])
        assert not changed, f"seed {seed} changes the verdict of {changed} (vs seed {SEEDS[0]})"
    return graded[0]


@pytest.mark.parametrize(("stage", "replacements"), _variants("CORRECT"))
def test_correct_alternative_gets_full_marks(grader, tmp_path, stage, replacements):
    graded = _grade_stage(grader, tmp_path, stage, replacements)
    failures = [f"{r.name}: {r.message}" for r, _, _ in graded.tests if not r.passed]
    assert not failures, "a correct alternative lost points:\n" + "\n".join(failures)


@pytest.mark.parametrize(("stage", "mistake"), _variants("MISTAKES"))
def test_mistake_is_named(grader, tmp_path, stage, mistake):
    replacements, test, words = mistake
    graded = _grade_stage(grader, tmp_path, stage, replacements)
    verdicts = {r.name: r for r, _, _ in graded.tests}
    assert test in verdicts, f"no hidden test called {test}"
    verdict = verdicts[test]
    assert not verdict.passed, f"{test} passed a submission with this mistake"
    assert words in verdict.message, \
        f"{test} failed, but its message lacks {words!r}: {verdict.message}"
    assert not verdict.grader_error, verdict.message
    assert load_rubric().points[stage][test] > 0, f"{test} carries no points: the mistake is free"


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32, torch.uint8, torch.float32],
                         ids=str)
def test_the_dtype_hints_speak_of_the_dtype_sent(dtype):
    """The hidden suites' words for ids refused in their own dtype: that dtype's numbers and
    trouble, the fix last; nothing for a dtype without that trouble."""
    V = {torch.int16: 33_000, torch.uint8: 300}.get(dtype, 70_000)
    wrap, lookup = sweeps.wrap_hint(dtype, V), id_dtypes.lookup(dtype)
    if dtype == torch.int16:
        assert "torch.int16 ids it becomes -32536, so the valid id 32767 >= 33000" in wrap
        assert lookup.startswith("plain weight[ids] and index_select refuse torch.int16 ids")
    elif dtype == torch.uint8:
        assert "torch.uint8 ids it becomes 44, so the valid id 255 >= 300" in wrap
        assert lookup.startswith("plain weight[ids] reads torch.uint8 ids as a mask")
    else:  # int32 holds V, and indexing takes it; float ids are check_ids' TypeError
        assert wrap == lookup == ""
    for text in (wrap, lookup):
        others = [str(d) for d in sweeps.INTEGER_DTYPES if d != dtype and str(d) in text]
        assert not others and ("uint8" not in text or dtype == torch.uint8), text
        assert not text or text.rstrip().endswith(("ids.long() >= vocab_size",
                                                    "ids.long() before the lookup")), text
