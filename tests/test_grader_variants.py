"""The hidden suites, checked: correct alternatives get full marks, known mistakes are named.

Each variant is lumen with some functions swapped (tests/variants/<stage>.py), graded on its
stage alone. A correct alternative must get the stage's full marks; a mistake must fail the
named hidden test with a message that contains the expected words.
"""

from __future__ import annotations

import importlib

import pytest

from autograder.grading import Grader
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
