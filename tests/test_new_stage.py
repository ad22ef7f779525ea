"""``make new-stage STAGE=<name>`` (solutions/new_stage.py), run as a maintainer runs it: in a
scratch copy of the repository where one more stage was added to lumen/ by the recipe's first
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

from lumen.stages import STAGE_NAMES

ROOT = Path(__file__).resolve().parents[1]


#: The stage the test adds: "position", or a free name once a stage of that name is real.
NAME = next(n for n in ("position", "segment", "scratch") if n not in STAGE_NAMES)
FUNCTION = f'''

def add_{NAME}s(x: Tensor, wpe: Tensor) -> Tensor:
    """A learned {NAME} vector added to each position's embedding: ``x + wpe[:T]``."""
    ### BEGIN SOLUTION
    return x + wpe[: x.shape[-2]]
    ### END SOLUTION
'''
STAGE = f'''    Stage(
        "{NAME}",
        "learned {NAME} embeddings: a vector per position, added",
        "Dense embeddings: a lookup table that is also a matrix multiply",
        ("embeddings:add_{NAME}s",),
    ),
)
'''


def _run(copy: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """The repository's files (tracked, or new and not ignored), with stage ``NAME`` in
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

    done = _run(copy, "-m", "solutions.new_stage", NAME)
    assert done.returncode == 0, done.stderr
    written = [f"autograder/sandboxed/probes/{NAME}.py", f"autograder/suites/test_{NAME}.py",
               f"autograder/suites/promises/{NAME}.py", f"exercises/tests/test_{NAME}.py",
               f"tests/variants/{NAME}.py"]
    for path in [*written, *new_stage.REGISTRIES]:
        assert path in done.stdout, (path, done.stdout)
        if path.endswith(".py"):
            ast.parse((copy / path).read_text(encoding="utf-8"), path)
    lint = subprocess.run([str(Path(sys.executable).parent / "ruff"), "check", *written,
                           *new_stage.REGISTRIES[:3]], cwd=copy, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout  # the house style, as written
    assert f"[{NAME}]\ntest_add_{NAME}s_keeps_its_promises = 1\n" in (
        copy / "autograder/rubric.toml").read_text(encoding="utf-8")
    registry = (copy / "autograder/sandboxed/probes/__init__.py").read_text(encoding="utf-8")
    assert "from . import " + ", ".join(sorted([*STAGE_NAMES, NAME])) in registry
    assert f"STAGE_MODULES = ({', '.join([*STAGE_NAMES, NAME])})" in registry

    # Loaded as the worker loads it: the new probe is in the table, under its stage's module.
    probes = _run(copy, "-c", "from autograder.sandboxed import probes; "
                  f"print(probes.PROBES['add_{NAME}s'].__module__)")
    assert probes.stdout.strip() == f"autograder.sandboxed.probes.{NAME}", probes.stderr

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
    number = len(STAGE_NAMES) + 1
    assert f'check(\\"{NAME}\\")' in lab and f"Stage {number}, `{NAME}`" in lab, lab[-3000:]
    assert f"def add_{NAME}s" in (copy / "exercises/embeddings.py").read_text(encoding="utf-8")

    check = _run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "tests/test_stage_lists.py::test_no_stage_is_left_a_skeleton")
    assert check.returncode == 1, check.stdout[-3000:] + check.stderr[-3000:]
    assert "1 failed" in check.stdout and f"stage {NAME} is still a skeleton" in check.stdout
    for path in [*written, "autograder/boundary/replies.py", "autograder/sandboxed/scaffolds.py",
                 "solutions/course/source/embedding_layer/lab.ipynb"]:
        assert f"{path}:" in check.stdout, (path, check.stdout[-3000:])


def test_a_second_run_and_an_unknown_stage_change_nothing(copy):
    suite = copy / f"autograder/suites/test_{NAME}.py"
    if not suite.exists():
        assert _run(copy, "-m", "solutions.new_stage", NAME).returncode == 0
    suite.write_text("# the maintainer's work\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in copy.rglob("*.py")}

    again = _run(copy, "-m", "solutions.new_stage", NAME)
    assert again.returncode == 2 and "exist already: nothing written" in again.stderr
    unknown = _run(copy, "-m", "solutions.new_stage", NAME + "al")
    assert unknown.returncode == 2 and f"no stage '{NAME}al' in lumen/stages.py" in unknown.stderr
    assert {p: p.read_bytes() for p in copy.rglob("*.py")} == before
