"""`python -m autograder grade`, end to end: the reference gets 100, the stubs 0 and no traceback.

Run as a learner or an instructor would, in a subprocess, and checked through what they see:
the terminal report, results.json (Gradescope's format), JUnit XML and the exit status.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest

from autograder.rubric import load
from lumen.stages import STAGE_NAMES, SUBMISSION_FILES

REPO = Path(__file__).resolve().parents[1]


def _total(report: str) -> str:
    line = next(x for x in report.splitlines() if x.strip().startswith("total"))
    return line.split(None, 1)[1].strip()


def _grade(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", "grade", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_reference_gets_full_marks(tmp_path):
    out, junit = tmp_path / "results.json", tmp_path / "junit.xml"
    run = _grade("lumen", "--out", str(out), "--junit", str(junit))
    assert run.returncode == 0, run.stderr
    assert _total(run.stdout) == "100.0 / 100", run.stdout
    results = json.loads(out.read_text())
    assert results["score"] == 100
    rubric = load()
    assert len(results["tests"]) == sum(len(t) for t in rubric.points.values())
    for test in results["tests"]:
        assert test["status"] == "passed" and test["score"] == test["max_score"]
        assert len(test["tags"]) == 1 and test["tags"][0] in STAGE_NAMES
        assert test["visibility"] == "after_due_date"
    assert set(results["extra_data"]["stages"]) == set(STAGE_NAMES)
    assert isinstance(results["extra_data"]["seed"], int)
    suites = ElementTree.parse(junit).getroot()
    assert [s.get("name") for s in suites] == list(STAGE_NAMES)


def test_stubs_get_zero_and_a_line_per_stage():
    run = _grade("exercises", "--visibility", "visible")
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    for stage in STAGE_NAMES:
        line = next(x for x in run.stdout.splitlines() if x.strip().startswith(stage))
        assert "0.0 /" in line and "not implemented yet" in line, line
    assert _total(run.stdout) == "0.0 / 100"


def test_same_seed_same_report(tmp_path):
    """One seed reproduces a run: the same inputs, so the same verdicts and messages."""
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for path in (first, second):
        assert _grade("exercises", "--seed", "1234", "--out", str(path)).returncode == 0
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    assert [t["output"] for t in a["tests"]] == [t["output"] for t in b["tests"]]
    assert a["extra_data"]["seed"] == b["extra_data"]["seed"] == 1234


def test_zip_submission(tmp_path):
    archive = tmp_path / "alice.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name in SUBMISSION_FILES:
            z.write(REPO / "lumen" / name, f"alice/{name}")
    run = _grade(str(archive))
    assert run.returncode == 0 and _total(run.stdout) == "100.0 / 100", run.stdout


def test_missing_submission_is_a_usage_error(tmp_path):
    run = _grade(str(tmp_path / "nowhere"))
    assert run.returncode == 2 and "no submission" in run.stderr


@pytest.mark.cuda
@pytest.mark.skipif("not __import__('torch').cuda.is_available()", reason="needs a CUDA device")
def test_reference_gets_full_marks_on_cuda():
    run = _grade("lumen", "--device", "cuda")
    assert run.returncode == 0, run.stderr
    assert "devices cpu, cuda" in run.stdout
    assert _total(run.stdout) == "100.0 / 100", run.stdout


def test_what_the_code_printed_is_shown_with_a_failing_check(tmp_path):
    """A print in a failing check appears in the terminal report and in results.json; a flood
    is cut to a few KB with a note."""
    from tests.variants.build import make_submission

    folder = make_submission(tmp_path / "printing", {"embeddings:Embedding.forward": '''
        def forward(self, ids):
            print("looking up", tuple(ids.shape))
            print("x" * 100_000)
            return self.weight[ids] * 2
    '''})
    out = tmp_path / "results.json"
    run = _grade(str(folder), "--stage", "embedding", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert "Your code printed:" in run.stdout and "looking up ()" in run.stdout
    assert "more characters of output not shown" in run.stdout
    assert len(run.stdout) < 20_000, "the flood must be cut"
    tests = json.loads(out.read_text())["tests"]
    failed = next(t for t in tests if t["status"] == "failed")
    assert "Your code printed:" in failed["output"] and "looking up" in failed["output"]


def test_stage_shows_only_the_stages_graded(tmp_path):
    out = tmp_path / "results.json"
    run = _grade("lumen", "--stage", "tying", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert _total(run.stdout) == "15.0 / 15", run.stdout
    assert "cut short" not in run.stdout
    assert "Not graded in this run (--stage): embedding, onehot, neighbours, params, init" \
        in run.stdout
    results = json.loads(out.read_text())
    assert set(results["extra_data"]["stages"]) == {"tying"}
    assert {t["tags"][0] for t in results["tests"]} == {"tying"}


def test_the_hidden_suites_select_a_stage_by_marker():
    """``pytest autograder/suites --submission PATH -m STAGE`` runs that stage's tests only."""
    run = subprocess.run([sys.executable, "-m", "pytest", "autograder/suites", "--submission",
                          "lumen", "-m", "tying", "-q", "-p", "no:cacheprovider"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    tying = len(load().points["tying"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{tying} passed" in run.stdout and "deselected" in run.stdout, run.stdout
