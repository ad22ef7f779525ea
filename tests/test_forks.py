"""The stages' suites graded side by side in forks of the grader (autograder/forks.py) give
exactly the verdicts of the serial run: the same tests in the same order, the same messages,
the same printed output, the same score, under the same seed."""

from __future__ import annotations

import importlib
import os

import pytest

from autograder import forks, grading
from autograder.grading import Grader
from autograder.results import GraderError
from lumen.stages import STAGE_NAMES
from tests.variants.build import make_submission

REPO = grading.SUITES.parents[1]


def _one_mistake_per_stage() -> dict[str, str]:
    """The first known mistake of each stage whose functions no earlier one replaced: a
    submission that loses points in every stage, each with its own message."""
    replacements: dict[str, str] = {}
    for stage in STAGE_NAMES:
        module = importlib.import_module(f"tests.variants.{stage}")
        for swapped, _test, _words in module.MISTAKES.values():
            if not set(swapped) & set(replacements):
                replacements.update(swapped)
                break
    return replacements


def _verdicts(grade) -> list[tuple]:
    return [(r.name, r.stage, r.title, r.passed, r.message, r.not_implemented, r.grader_error,
             r.output) for stage in grade.stages for r, _, _ in stage.tests]


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


@pytest.mark.parametrize(("submission", "seeds"), [
    ("lumen", (11,)), ("exercises", (11,)), ("mistakes", (11, 2024))])
def test_side_by_side_grades_exactly_as_serial(grader, tmp_path, submission, seeds):
    path = (make_submission(tmp_path / "mistakes", _one_mistake_per_stage())
            if submission == "mistakes" else REPO / submission)
    for seed in seeds:
        graded = {}
        for count in (1, forks.FORKS):
            grader.forks = count
            graded[count] = grader.grade(path, seed=seed)
        serial = graded[1]
        assert serial.score == {"lumen": 100, "exercises": 0}.get(submission, serial.score)
        if submission == "mistakes":
            assert 0 < serial.score < 100
            assert {s.name for s in serial.stages if s.score < s.max_score} == set(STAGE_NAMES)
        for count, grade in graded.items():
            assert grade.score == serial.score, f"{count} forks"
            assert _verdicts(grade) == _verdicts(serial), f"{count} forks, seed {seed}"
    grader.forks = forks.FORKS


def test_the_suites_are_dealt_out_to_end_together():
    """Longest first, each to the fork with the fewest seconds so far (``forks.SECONDS``):
    every suite dealt once, no fork empty, and no fork more than one suite past the other."""
    suites = [(stage, f"test_{stage}.py") for stage in STAGE_NAMES]
    for count in (1, 2, 3, 6, 7):
        groups = forks.deal(suites, count)
        assert sorted(s for g in groups for s in g) == sorted(suites)
        assert len(groups) == min(count, len(suites)) and all(groups)
        seconds = [sum(forks.seconds(stage) for stage, _ in g) for g in groups]
        longest = max(forks.seconds(stage) for stage in STAGE_NAMES)
        assert max(seconds) - min(seconds) <= longest, (count, groups)
    assert forks.deal(suites, 1) == [sorted(suites, key=lambda s: -forks.seconds(s[0]))]
    measured = [(stage, f"test_{stage}.py") for stage in forks.SECONDS]  # the six timed
    assert [[s for s, _ in g] for g in forks.deal(measured, 2)] == [
        ["init", "embedding", "params"], ["neighbours", "tying", "onehot"]]
    new = [("a", "test_a.py"), ("b", "test_b.py")]  # stages the table has not measured yet
    assert forks.deal(new, 2) == [[new[0]], [new[1]]]
    mean = sum(forks.SECONDS.values()) / len(forks.SECONDS)
    assert forks.seconds("a") == mean and forks.seconds("init") == forks.SECONDS["init"]


def test_a_fork_without_verdicts_is_a_grader_error(grader, monkeypatch):
    """A fork that dies before it answers (here: its pytest raises) costs the learner nothing:
    the grade is withheld as the grader's error, never scored."""
    def broken(submission, paths):
        if any("test_init" in p for p in paths):
            os._exit(3)
        return grading._pytest(submission, paths)

    monkeypatch.setattr(grading, "_pytest", broken)
    grader.forks = forks.FORKS
    with pytest.raises(GraderError, match="ended without their verdicts"):
        grader.grade(REPO / "lumen", seed=1)
    monkeypatch.undo()
    assert grader.grade(REPO / "lumen", seed=1).score == 100  # the worker is still usable
