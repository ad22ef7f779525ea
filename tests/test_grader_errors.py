"""A grader that cannot run, or fails on its own side, never gives a grade: ``grade`` exits 2
with the reason and writes no results, instead of recording a zero the learner did not earn."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from autograder import __main__ as cli
from tests.helpers import full_marks

REPO = Path(__file__).resolve().parents[1]


def _with_default(name: str, value: float) -> tuple:
    """Limits' constructor defaults with ``name`` changed (its field order)."""
    from autograder.boundary.client import Limits

    return tuple(value if f.name == name else f.default for f in dataclasses.fields(Limits))


def test_a_worker_that_never_starts_gives_no_grade(tmp_path, monkeypatch, capsys):
    from autograder.boundary import launcher

    monkeypatch.setattr(launcher.BwrapLauncher, "command",
                        lambda self, *a, **k: ["sleep", "30"])
    monkeypatch.setattr(launcher.PlainLauncher, "command", lambda self, *a, **k: ["sleep", "30"])
    monkeypatch.setattr("autograder.boundary.client.Limits.__init__.__defaults__",
                        _with_default("startup_seconds", 1.0))
    out = tmp_path / "results.json"
    code = cli.main(["grade", str(REPO / "lumen"), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 2
    assert "did not start" in captured.err
    assert "/ 100" not in captured.out
    assert not out.exists()


BROKEN_SUITE = """
import sys
import autograder.suites.feedback as feedback

def broken(*args, **kwargs):
    raise KeyError("a bug in the hidden suite")

feedback.first_difference = broken  # the lookup suite calls it when values differ
from autograder.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def test_an_internal_error_in_a_hidden_test_gives_no_grade(tmp_path):
    """A check that crashes on the grader's side (here: the message helper) makes the run
    fail with exit 2 and the reason, whatever the learner's code did."""
    from tests.variants.build import make_submission

    wrong = make_submission(tmp_path / "wrong", {"embeddings:Embedding.forward":
                            "def forward(self, ids):\n    return self.weight[ids] + 1\n"})
    out = tmp_path / "results.json"
    run = subprocess.run([sys.executable, "-c", BROKEN_SUITE, "grade", str(wrong), "--out",
                          str(out), "--stage", "embedding"],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "internal error" in run.stderr and "a bug in the hidden suite" in run.stderr
    assert not out.exists()


def test_grade_batch_retries_then_marks_a_grading_error(tmp_path, monkeypatch):
    """A grader that fails on its side (here: --sandbox bwrap where no bwrap can be found)
    costs no learner a score: each is tried twice, then its row says "grading error" with no
    total, the summary lists it, and a later run with a working grader grades it."""
    import csv
    import io

    from autograder.frontends import batch
    from autograder.options import Options

    submissions = tmp_path / "submissions"
    for learner in ("alice", "bob"):
        (submissions / learner).mkdir(parents=True)
        for name in ("embeddings.py", "params.py", "gpt2.py"):
            (submissions / learner / name).write_text((REPO / "lumen" / name).read_text())
    out = tmp_path / "grades.csv"
    empty = tmp_path / "no-programs"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # the grading processes find no bwrap
    progress = io.StringIO()
    params = Options(sandbox="bwrap", stages=["params"])
    code = batch.run(submissions, out, params, batch.Batch(jobs=1), progress=progress)
    assert code in (1, 2), progress.getvalue()
    rows = {r["learner"]: r for r in csv.DictReader(out.open())}
    for learner in ("alice", "bob"):
        assert rows[learner]["total"] == "", rows[learner]
        assert "grading error (tried 2 times" in rows[learner]["notes"], rows[learner]
    assert "grading error" in (tmp_path / "grades" / "summary.md").read_text()
    monkeypatch.undo()
    code = batch.run(submissions, out, params, batch.Batch(jobs=1), progress=io.StringIO())
    rows = {r["learner"]: r for r in csv.DictReader(out.open())}
    assert code == 0 and rows["alice"]["total"] == rows["bob"]["total"] == full_marks("params")
