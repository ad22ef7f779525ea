"""``make new-stage STAGE=<name>`` (solutions/new_stage.py), run as a maintainer runs it: in a
scratch copy of the repository where a seventh stage was added to lumen/ by the recipe's first
step (docs/changing-the-assignment.md). It writes the stage's pieces and registers them, every
one parses, the release (the points rebalanced to 100) writes the stage's notebook cells and
stubs, tests/test_stage_lists.py then names each line left to fill, and a second run, or a
run for a stage lumen does not have, changes nothing."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FUNCTION = '''

def add_positions(x: Tensor, wpe: Tensor) -> Tensor:
    """A learned position vector added to each position's embedding: ``x + wpe[:T]``."""
    ### BEGIN SOLUTION
    return x + wpe[: x.shape[-2]]
    ### END SOLUTION
'''
STAGE = '''    Stage(
        "position",
        "learned positional embeddings: a vector per position, added",
        "Dense embeddings: a lookup table that is also a matrix multiply",
        ("embeddings:add_positions",),
    ),
)
'''


def _run(copy: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """The repository's files (tracked, or new and not ignored), with stage 'position' in
    lumen/stages.py."""
    copy = tmp_path_factory.mktemp("repo")
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    with open(copy / "lumen" / "embeddings.py", "a", encoding="utf-8") as f:
        f.write(FUNCTION)
    stages = (copy / "lumen" / "stages.py").read_text(encoding="utf-8")
    end = stages.index("\n)\n", stages.index("STAGES: tuple")) + 1
    (copy / "lumen" / "stages.py").write_text(stages[:end] + STAGE + stages[end + 2:],
                                              encoding="utf-8")
    return copy


def test_it_writes_and_registers_every_piece_and_the_tests_name_what_is_left(copy):
    from solutions import new_stage

    done = _run(copy, "-m", "solutions.new_stage", "position")
    assert done.returncode == 0, done.stderr
    written = ["autograder/sandboxed/probes/position.py", "autograder/suites/test_position.py",
               "autograder/suites/promises/position.py", "exercises/tests/test_position.py",
               "tests/variants/position.py"]
    for path in [*written, *new_stage.REGISTRIES]:
        assert path in done.stdout, (path, done.stdout)
        if path.endswith(".py"):
            ast.parse((copy / path).read_text(encoding="utf-8"), path)
    lint = subprocess.run([str(Path(sys.executable).parent / "ruff"), "check", *written,
                           *new_stage.REGISTRIES[:3]], cwd=copy, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout  # the house style, as written
    assert "[position]\ntest_add_positions_keeps_its_promises = 1\n" in (
        copy / "autograder/rubric.toml").read_text(encoding="utf-8")
    registry = (copy / "autograder/sandboxed/probes/__init__.py").read_text(encoding="utf-8")
    assert "from . import embedding, init, neighbours, onehot, params, position, tying" in registry
    assert "STAGE_MODULES = (embedding, onehot, neighbours, params, tying, init, position)" \
        in registry

    # Loaded as the worker loads it: the new probe is in the table, under its stage's module.
    probes = _run(copy, "-c", "from autograder.sandboxed import probes; "
                  "print(probes.PROBES['add_positions'].__module__)")
    assert probes.stdout.strip() == "autograder.sandboxed.probes.position", probes.stderr

    # The recipe's next step: the points, the whole still 100; then the release, which writes
    # the stage's cells into the lab notebook (its introduction a skeleton) and the stubs.
    rubric = copy / "autograder/rubric.toml"
    text = rubric.read_text(encoding="utf-8")
    rubric.write_text(text.replace("test_expected_dot_std = 1\n", ""), encoding="utf-8")
    release = _run(copy, "-m", "solutions.release", "--force")
    assert release.returncode == 0, release.stdout[-3000:] + release.stderr[-3000:]
    assert "solutions/course/source/embedding_layer/lab.ipynb (points from rubric.toml)" in \
        release.stdout, release.stdout[-3000:]
    lab = (copy / "exercises/lab.ipynb").read_text(encoding="utf-8")
    assert 'check(\\"position\\")' in lab and "Stage 7, `position`" in lab, lab[-3000:]
    assert "def add_positions" in (copy / "exercises/embeddings.py").read_text(encoding="utf-8")

    check = _run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "tests/test_stage_lists.py::test_no_stage_is_left_a_skeleton")
    assert check.returncode == 1, check.stdout[-3000:] + check.stderr[-3000:]
    assert "1 failed" in check.stdout and "stage position is still a skeleton" in check.stdout
    for path in [*written, "autograder/boundary/replies.py", "autograder/sandboxed/scaffolds.py",
                 "solutions/course/source/embedding_layer/lab.ipynb"]:
        assert f"{path}:" in check.stdout, (path, check.stdout[-3000:])


def test_a_second_run_and_an_unknown_stage_change_nothing(copy):
    suite = copy / "autograder/suites/test_position.py"
    if not suite.exists():
        assert _run(copy, "-m", "solutions.new_stage", "position").returncode == 0
    suite.write_text("# the maintainer's work\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in copy.rglob("*.py")}

    again = _run(copy, "-m", "solutions.new_stage", "position")
    assert again.returncode == 2 and "exist already: nothing written" in again.stderr
    unknown = _run(copy, "-m", "solutions.new_stage", "positional")
    assert unknown.returncode == 2 and "no stage 'positional' in lumen/stages.py" in unknown.stderr
    assert {p: p.read_bytes() for p in copy.rglob("*.py")} == before
