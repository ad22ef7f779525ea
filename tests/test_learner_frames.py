"""No grader internals in a learner's message: ``describe_error`` quotes a frame only when it is
code the learner wrote (``boundary/intake.learner_frames``), never the grader's stand-in for an
unusable file, given code, or a frame the learner's process made up."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autograder.boundary.intake import STAND_IN, UNUSABLE, learner_frames
from autograder.grading import Grader
from autograder.suites.feedback import describe_error
from lumen.stages import SUBMISSION_FILES

ROOT = Path(__file__).resolve().parents[1]
MINE = "import torch\n\n\ndef forward(ids):\n    return ids[99]\n"


def test_only_the_learners_own_lines_are_quoted():
    files = {"embeddings.py": MINE, "gpt2.py": UNUSABLE.format(why="gpt2.py is not UTF-8")}
    own = "embeddings.py, line 5, in forward: return ids[99]"
    assert learner_frames([own], files) == [own]
    for foreign in ("gpt2.py, line 2, in <module>: " + STAND_IN.strip(),  # the stand-in
                    "embeddings.py, line 4, in forward: return ids[99]",  # not at that line
                    "embeddings.py, line 5, in forward: return self.weight[ids]",  # given code
                    "embeddings.py, line 50, in forward: ",  # past the file's end
                    "params.py, line 1, in <module>: import torch",  # a file not sent
                    "not a frame at all"):
        assert learner_frames([own, foreign], files) == [own], foreign
    error = {"type": "IndexError", "message": "out of range",
             "where": learner_frames([own, "gpt2.py, line 2, in <module>: " + STAND_IN], files)}
    assert describe_error(error).endswith("(at embeddings.py, line 5, in forward: "
                                          "`return ids[99]`)")


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[str, list[str]]:
    """Learner -> every message they read. "unusable": an embeddings.py that is not UTF-8, so
    the grader's stand-in (``UNUSABLE``) takes its place and its import fails in the stand-in's
    own line; "raises": a params.py of theirs that raises at import, in their own line."""
    root = tmp_path_factory.mktemp("frames")
    messages = {}
    with Grader() as grader:
        for learner in ("unusable", "raises"):
            folder = root / learner
            folder.mkdir()
            for name in SUBMISSION_FILES:
                shutil.copy(ROOT / "lumen" / name, folder / name)
            if learner == "unusable":
                (folder / "embeddings.py").write_bytes(b"# caf\xe9\n")  # Latin-1, not UTF-8
            else:
                text = (folder / "params.py").read_text(encoding="utf-8")
                (folder / "params.py").write_text(f"{text}\nraise ValueError('mine')\n",
                                                  encoding="utf-8")
            result = grader.grade(folder, seed=0, stages=["embedding", "params"])
            messages[learner] = [r.message for s in result.stages for r, _, _ in s.tests
                                 if r.message]
    return messages


def test_a_stand_ins_source_never_reaches_the_learner(graded):
    told = [m for m in graded["unusable"] if "your embeddings.py could not be imported" in m]
    assert told and all("embeddings.py is not UTF-8 text" in m for m in told), graded
    for message in graded["unusable"]:
        assert "stand-in" not in message and "raise ImportError" not in message, message


def test_the_learners_own_line_is_still_quoted(graded):
    lines = (ROOT / "lumen" / "params.py").read_text(encoding="utf-8").count("\n") + 2
    told = [m for m in graded["raises"] if "your params.py could not be imported" in m]
    assert told and all(f"(at params.py, line {lines}, in <module>: `raise ValueError('mine')`)"
                        in m for m in told), graded["raises"]
