"""A grade imports only what grading needs: never the release tooling's nbformat, nbgrader or
lark (through nbformat's jsonschema: seconds of a cold grade), and nothing beyond
torch and requirements-grader.txt, all that the Gradescope zip and the PrairieLearn image
install."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from autograder.frontends.gradescope import GRADER_REQUIREMENTS
from autograder.publish.handout import requirement_lines
from tests.helpers import full_marks

ROOT = Path(__file__).resolve().parents[1]
#: Top-level packages a grade must not import (the release and nbgrader tooling's), and the
#: modules of autograder/publish/ only the release, the handout and nbgrade use.
UNNEEDED = ("nbformat", "nbgrader", "lark", "jsonschema", "rfc3987_syntax", "solutions",
            "autograder.publish.notebook", "autograder.publish.render",
            "autograder.publish.handout")

GRADE_THEN_LIST = """
import json, sys
from autograder.__main__ import main
code = main(["grade", "lumen", "--stage", "params"])
print("MODULES=" + json.dumps([code, sorted(sys.modules)]))
"""


def test_a_grade_imports_no_release_tooling():
    done = subprocess.run([sys.executable, "-c", GRADE_THEN_LIST], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = [x for x in done.stdout.splitlines() if x.startswith("MODULES=")][-1]
    code, modules = json.loads(line.removeprefix("MODULES="))
    full = full_marks("params")
    assert code == 0 and f"{float(full)} / {full}" in done.stdout  # it really graded, and fully
    assert "autograder.publish.stubber" in modules  # the stub maker grading does need
    imported = [m for m in modules if m.split(".")[0] in UNNEEDED or m in UNNEEDED]
    assert not imported, f"a grade imported {imported}"


def _pins(path: Path) -> dict[str, str]:
    """The distributions pinned in a requirements file (name -> its line), ``-r`` followed."""
    return {canonicalize_name(m[1]): line for line in requirement_lines(path)
            if (m := re.match(r"\s*([A-Za-z0-9][\w.-]*)==", line))}


def _with_dependencies(names: list[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions ``names`` and everything they require (no extras)."""
    found: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name not in found:
            found[name] = metadata.distribution(name)
            todo += [r.name for r in map(Requirement, found[name].requires or [])
                     if r.marker is None or r.marker.evaluate({"extra": ""})]
    return found


def test_each_package_is_pinned_once_and_the_grader_set_is_small():
    """requirements.txt includes the grader's pins (one line per package across every file);
    the grader's set holds none of the notebook's, nbgrader's or the figures' packages."""
    lines = [line for name in ("requirements.txt", GRADER_REQUIREMENTS, "requirements-dev.txt")
             for line in (ROOT / name).read_text(encoding="utf-8").splitlines()]
    names = [canonicalize_name(m[1]) for line in lines
             if (m := re.match(r"\s*([A-Za-z0-9][\w.-]*)==", line))]
    assert sorted(names) == sorted(set(names)), "a package pinned twice"
    grader = _pins(ROOT / GRADER_REQUIREMENTS)
    assert set(grader) <= set(_pins(ROOT / "requirements.txt")), "requirements.txt includes it"
    environment = _with_dependencies(["torch", *grader])
    for name in ("jupyterlab", "nbgrader", "matplotlib", "nbformat", "scikit-learn", "tiktoken"):
        assert canonicalize_name(name) not in environment, name


def test_a_grade_needs_only_torch_and_the_grader_requirements(tmp_path):
    """An environment of torch, requirements-grader.txt and their dependencies alone (a venv
    whose site-packages links only those installed distributions) grades lumen fully, the
    stage processes included (they run in it too: unsafe-process, as bubblewrap would not see
    the links' targets)."""
    venv = tmp_path / "grader-venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                                "'purelib'))"], capture_output=True, text=True,
                               check=True).stdout.strip())
    grader = _pins(ROOT / GRADER_REQUIREMENTS)
    for distribution in _with_dependencies(["torch", *grader]).values():
        for top in {Path(f).parts[0] for f in distribution.files or [] if f.parts[0] != ".."}:
            if not (site / top).exists():
                (site / top).symlink_to(Path(distribution.locate_file(top)))
    done = subprocess.run([str(python), "-m", "autograder", "grade", "lumen", "--sandbox",
                           "unsafe-process"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"total\s+100\.0 / 100", done.stdout), done.stdout[-3000:]
    found = subprocess.run([str(python), "-c", "import matplotlib"], capture_output=True)
    assert found.returncode != 0, "the environment holds more than the grader's set"
