"""Every hand-kept list of the stages agrees with lumen/stages.py, the one source of them:
the README's and the handout's tables, pyproject's pytest markers, the rubric, the package's
own instructions, the visible and the hidden suites."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from autograder.publish import notebook
from autograder.rubric import load
from lumen.stages import STAGE_NAMES, STAGES
from solutions import new_stage
from solutions.release import PACKAGE_INIT

ROOT = Path(__file__).resolve().parents[1]


def _table(path: Path) -> dict[str, list[str]]:
    """The rows of the markdown table whose first column is a stage name: name -> cells."""
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and cells[0].strip("`") in STAGE_NAMES:
            rows[cells[0].strip("`")] = cells
    return rows


@pytest.mark.parametrize(("path", "column"), [("README.md", 2), ("handout/README.md", 1)])
def test_stage_tables_list_each_stage_its_functions_and_section(path, column):
    """The tables are written by the release (solutions/stage_tables.py); this checks what it
    writes, independently: every owned function named, and no other."""
    rows = _table(ROOT / path)
    assert list(rows) == list(STAGE_NAMES), f"{path}: the stages, in the chapter's order"
    for stage in STAGES:
        cells = rows[stage.name]
        written = {w for w in re.findall(r"`([^`]+)`", cells[column])
                   if re.fullmatch(r"[\w.]+", w)}
        for owned in stage.owns:
            qualname = owned.split(":")[1]
            short = {qualname, qualname.rsplit(".", 1)[-1]}
            assert short & written or any(w.endswith(qualname) for w in written), \
                f"{path}: stage {stage.name} does not name {qualname}"
        for name in written:  # and no function the stage does not own
            assert any(name in owned.split(":")[1].split(".") or owned.endswith(name)
                       for owned in stage.owns), \
                f"{path}: stage {stage.name} names {name}, which it does not own"
        assert stage.section.startswith(cells[-1]), f"{path}: {stage.name}'s section"


def test_pyproject_markers_are_the_stages():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    markers = config["tool"]["pytest"]["ini_options"]["markers"]
    stage_markers = [m for m in markers if m.split(":")[0] in STAGE_NAMES]
    assert stage_markers == [f"{s.name}: stage '{s.name}', {s.title}" for s in STAGES]


def test_rubric_stages_in_order():
    assert list(load().points) == list(STAGE_NAMES)


def test_the_package_instructions_list_the_stages_in_order():
    assert re.findall(r"pytest exercises -m (\w+)", PACKAGE_INIT) == list(STAGE_NAMES)


#: The lab notebook's source, where the release adds a stage's cells (its introduction says
#: SKELETON until written).
LAB_SOURCE = notebook.SOURCE.relative_to(ROOT).as_posix()
#: What ``make new-stage`` writes for a stage, and what marks it unfilled.
NEW_STAGE = f"make new-stage STAGE=<name> writes the skeleton of every piece ({new_stage.__file__})"


def _stage_file(stage: str, path: str) -> str:
    """The text of a stage's piece at ``path`` (``{stage}`` filled in), or a failure naming it."""
    full = ROOT / path.format(stage=stage)
    if not full.exists():
        pytest.fail(f"stage {stage} has no {full.relative_to(ROOT)}: write it ({NEW_STAGE})")
    return full.read_text(encoding="utf-8")


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_each_stage_has_a_visible_and_a_hidden_suite(stage):
    visible = _stage_file(stage, "exercises/tests/test_{stage}.py")
    hidden = _stage_file(stage, "autograder/suites/test_{stage}.py")
    assert f"pytest.mark.{stage}" in visible, f"exercises/tests/test_{stage}.py: mark its tests"
    assert f'STAGE = "{stage}"' in hidden, f'autograder/suites/test_{stage}.py: STAGE = "{stage}"'


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_no_stage_is_left_a_skeleton(stage):
    """Every piece of a stage that ``make new-stage`` writes or registers is filled in: no line
    of it still says SKELETON. The failure lists each file and line left to write."""
    spec = STAGES[STAGE_NAMES.index(stage)]
    names = {stage, *(new_stage.probe_name(key) for key in spec.owns)}  # in a shared file's line
    shared = [*new_stage.REGISTRIES, LAB_SOURCE]  # every stage's: a line must name this one
    left = [f"{path}:{number}: {line.strip()}"
            for path in [*new_stage.files(spec), *shared] if (ROOT / path).exists()
            for number, line in enumerate((ROOT / path).read_text(encoding="utf-8").splitlines(),
                                          start=1)
            if new_stage.MARK in line and (path not in shared
                                           or any(re.search(rf"\b{n}\b", line) for n in names))]
    assert not left, (f"stage {stage} is still a skeleton where these lines say "
                      f"{new_stage.MARK} (fill each in, then make release):\n  "
                      + "\n  ".join(left))


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_each_stage_has_its_variants(stage):
    """The grader's evidence for a stage: correct variants it must keep at full marks and known
    mistakes it must catch (tests/test_grader_variants.py grades both, and skips nothing)."""
    import importlib

    _stage_file(stage, "tests/variants/{stage}.py")
    module = importlib.import_module(f"tests.variants.{stage}")
    assert module.CORRECT and module.MISTAKES, f"tests/variants/{stage}.py: add both"


#: A count of the stages written out, which a new stage would make wrong: the count lives in
#: lumen/stages.py alone.
#: ("two stages" is a pair of them, not their count.)
NUMBER = r"(?:three|four|five|six|seven|eight|nine|ten|eleven|twelve|[3-9]|1[0-2])"
COUNTED = re.compile(rf"\b{NUMBER}\s+(?:stages?|stage processes|runners?(?: outputs)?)\b",
                     re.IGNORECASE)


def test_no_text_counts_the_stages_by_hand():
    """No comment, docstring or guide says how many stages there are ("the six stages"): it
    reads "the stages", or derives the number from lumen/stages.py."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                              "*.py", "*.md", "*.html", "*.toml", "Makefile"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    tracked.remove("tests/test_stage_lists.py")  # this file's examples
    found = [f"{name}:{number}: {match[0]}" for name in tracked if (ROOT / name).is_file()
             for number, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(),
                                           start=1) for match in COUNTED.finditer(line)]
    assert not found, "stages counted by hand (say \"the stages\"):\n  " + "\n  ".join(found)


def test_the_count_check_can_fail():
    assert COUNTED.search("the six stages") and COUNTED.search("all seven stage processes")
    assert not COUNTED.search("the six figures") and not COUNTED.search("the stages")
    assert not COUNTED.search("no two stage processes share a user")
