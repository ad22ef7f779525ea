"""The import limit is judged when a stage's process answers, not when the grader comes to look.

Every stage process is started at once and loads the submission side by side; the grader then
grades the stages one after another. Were a stage's answer read only when its turn came, a later
stage on a busy machine would be read more than the import limit after it started, and correct
code told that "importing the submission did not finish". So each stage's answer is read as it
comes, in a thread of the grader's (boundary/session.StageSession.start).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from autograder.boundary.session import StageSession
from autograder.grading import Grader
from autograder.options import Limits, Options
from tests.variants.build import make_submission

IMPORT_SECONDS = 2.0
LIMITS = Limits(probe_seconds=10, import_seconds=IMPORT_SECONDS, submission_seconds=90)


@pytest.fixture(scope="module")
def grader():
    with Grader(Options(device="cpu", limits=LIMITS)) as g:
        # One stage after another in this process, as grade-batch grades with a process per
        # core: the case where a later stage is read late (a fork reads its two stages so too)
        g.forks = 1
        yield g


def _busy_first_stage(monkeypatch) -> None:
    """The grader's first check of stage 'embedding' takes longer than the import limit, as a
    grader does on a loaded machine: stage 'onehot' is read only after its limit has passed."""
    call = StageSession.call
    slowed: set[str] = set()

    def busy(self, *args, **kwargs):
        if self.stage == "embedding" and "embedding" not in slowed:
            slowed.add("embedding")
            time.sleep(IMPORT_SECONDS * 1.5)
        return call(self, *args, **kwargs)

    monkeypatch.setattr(StageSession, "call", busy)


def test_a_stage_read_late_keeps_an_import_that_finished_in_time(grader, tmp_path: Path,
                                                                 monkeypatch):
    _busy_first_stage(monkeypatch)
    result = grader.grade(make_submission(tmp_path / "lumen", {}), stages=["embedding", "onehot"])
    onehot = next(s for s in result.stages if s.name == "onehot")
    messages = " ".join(r.message for r, _, _ in onehot.tests if not r.passed)
    assert onehot.score == onehot.max_score, messages[:2000]


def test_an_import_that_never_finishes_still_runs_out_of_time(grader, tmp_path: Path,
                                                              monkeypatch):
    """The other side: the limit still holds for a stage read late (the thread reading its
    answer stops at the same deadline), and the verdict names it."""
    _busy_first_stage(monkeypatch)
    source = (Path(__file__).resolve().parents[1] / "lumen" / "embeddings.py").read_text()
    folder = make_submission(tmp_path / "endless", {})
    (folder / "embeddings.py").write_text(source + "\nwhile True:\n    pass\n")
    started = time.monotonic()
    result = grader.grade(folder, stages=["embedding", "onehot"])
    assert time.monotonic() - started < 60
    onehot = next(s for s in result.stages if s.name == "onehot")
    assert onehot.score == 0
    messages = " ".join(r.message for r, _, _ in onehot.tests)
    assert f"did not finish within {IMPORT_SECONDS:.0f} s" in messages, messages[:2000]
