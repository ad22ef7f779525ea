"""Every hand-kept list of the stages agrees with lumen/stages.py, the one source of them:
the README's and the handout's tables, pyproject's pytest markers, the rubric, the package's
own instructions, the visible and the hidden suites."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from autograder.rubric import load
from lumen.stages import STAGE_NAMES, STAGES
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


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_each_stage_has_a_visible_and_a_hidden_suite(stage):
    visible = (ROOT / "exercises" / "tests" / f"test_{stage}.py").read_text(encoding="utf-8")
    hidden = (ROOT / "autograder" / "suites" / f"test_{stage}.py").read_text(encoding="utf-8")
    assert f"pytest.mark.{stage}" in visible
    assert f'STAGE = "{stage}"' in hidden


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_each_stage_has_its_variants(stage):
    """The grader's evidence for a stage: correct variants it must keep at full marks and known
    mistakes it must catch (tests/test_grader_variants.py grades both, and skips nothing)."""
    import importlib

    module = importlib.import_module(f"tests.variants.{stage}")
    assert module.CORRECT and module.MISTAKES, f"tests/variants/{stage}.py: add both"
