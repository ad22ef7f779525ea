"""The Gradescope autograder zip: what it holds, and run_autograder run as Gradescope would.

A temporary folder is laid out like Gradescope's /autograder (source/ from the zip,
submission/, results/) and run_autograder runs against it through AUTOGRADER_ROOT, with this
repository's interpreter (LUMEN_PYTHON) instead of the one setup.sh would install.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder import gradescope
from lumen.stages import STAGE_NAMES, SUBMISSION_FILES

ROOT = gradescope.ROOT
SUITES = ROOT / "autograder" / "suites"


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    return gradescope.build(tmp_path_factory.mktemp("build") / "autograder.zip",
                            torch="torch==2.13.0")


def test_zip_holds_the_scripts_and_the_grader(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as archive:
        names = set(archive.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
        setup = archive.read("setup.sh").decode()
    for needed in ("setup.sh", "run_autograder", "autograder/__main__.py",
                   "autograder/rubric.toml", "autograder/suites/test_embedding.py",
                   "autograder/sandboxed/worker.py", "lumen/embeddings.py",
                   "solutions/release.py", "requirements.txt", "pyproject.toml"):
        assert needed in names, f"{needed} is missing from the autograder zip"
    assert modes["setup.sh"] & stat.S_IXUSR and modes["run_autograder"] & stat.S_IXUSR
    assert not [n for n in names if n.startswith(("tests/", "exercises/", ".venv/"))]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert 'TORCH="${TORCH:-torch==2.13.0}"' in setup  # pinned, and overridable
    assert "-r requirements.txt" in setup and "bubblewrap" in setup
    subprocess.run(["bash", "-n", "-c", setup], check=True)  # it parses


def test_zip_is_reproducible(autograder_zip, tmp_path):
    again = gradescope.build(tmp_path / "again.zip", torch="torch==2.13.0")
    assert again.read_bytes() == autograder_zip.read_bytes()


def _unpack(archive_path: Path, target: Path) -> None:
    """Like unzip: the files and their permissions (zipfile drops the executable bit)."""
    with zipfile.ZipFile(archive_path) as archive:
        for info in archive.infolist():
            archive.extract(info, target)
            mode = info.external_attr >> 16
            if mode:
                os.chmod(target / info.filename, mode & 0o777)


def test_run_autograder_grades_lumen(autograder_zip, tmp_path):
    root = tmp_path / "autograder"
    _unpack(autograder_zip, root / "source")
    (root / "submission" / "exercises").mkdir(parents=True)  # as uploaded: inside a folder
    for name in SUBMISSION_FILES:
        text = (ROOT / "lumen" / name).read_text(encoding="utf-8")
        (root / "submission" / "exercises" / name).write_text(text, encoding="utf-8")
    (root / "results").mkdir()
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "LUMEN_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)  # the grader must come from source/, not this checkout
    done = subprocess.run([str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr

    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert {"score", "tests", "output", "visibility"} <= set(results)
    assert results["tests"], "no per-test entries"
    for test in results["tests"]:
        assert {"name", "score", "max_score", "status", "tags", "visibility"} <= set(test)
        assert len(test["tags"]) == 1 and test["tags"][0] in STAGE_NAMES
        assert test["visibility"] == "after_due_date"
    assert {t["tags"][0] for t in results["tests"]} == set(STAGE_NAMES)
    assert results["score"] == 100, results["output"]
