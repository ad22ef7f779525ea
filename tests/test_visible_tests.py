"""The visible tests tell the hidden suite's rules: every known mistake fails them, no correct
alternative does.

For each stage listed in STAGES, each known mistake (tests/variants/<stage>.py MISTAKES: the
hidden test it must fail) must fail one of the visible tests that the hidden suite names for
that hidden test (``VISIBLE`` in autograder/suites/test_<stage>.py), and every correct
alternative must pass all of the stage's visible tests. So a learner who passes
``pytest exercises -m <stage>`` has been shown every rule the grader will apply, and a rule
the visible tests do not yet check fails here, naming the mistake that slips through.

Each variant becomes a package of its own (lumen's files, with the variant's functions
swapped in), checked with ``pytest exercises -m <stage> --impl=<package>``, all the variants
of a stage in one process.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lumen.stages import STAGE_NAMES
from tests.variants.build import LUMEN, make_submission

ROOT = Path(__file__).resolve().parents[1]
#: Every stage: its visible tests are checked against every known mistake of its own.
STAGES = STAGE_NAMES
#: lumen's given modules, copied next to the variant's three files so that it is a package.
GIVEN = ("__init__.py", "stages.py", "rules.py", "tokenizer.py", "vectors.py", "explore.py")

#: Runs in a fresh interpreter: pytest once per package, recording which tests failed.
DRIVER = """
import json, sys
import pytest

class Failed:
    def __init__(self):
        self.names = []
    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.names.append(report.nodeid.split("::")[-1].split("[")[0])

stage, out, *packages = sys.argv[1:]
results = {}
for package in packages:
    failed = Failed()
    code = pytest.main(["exercises/tests", "-m", stage, f"--impl={package}", "-q",
                        "-p", "no:cacheprovider", "--no-header", "-o", "addopts="],
                       plugins=[failed])
    results[package] = {"code": int(code), "failed": sorted(set(failed.names))}
with open(out, "w") as f:
    json.dump(results, f)
"""


def _package(folder: Path, replacements: dict[str, str]) -> Path:
    make_submission(folder, replacements)
    for name in GIVEN:
        shutil.copy(LUMEN / name, folder / name)
    return folder


@pytest.fixture(scope="module", params=STAGES)
def checked(request, tmp_path_factory) -> tuple[str, dict, dict]:
    """(stage, {variant: (kind, hidden test or None)}, {variant: pytest's result})."""
    stage = request.param
    variants = importlib.import_module(f"tests.variants.{stage}")
    root = tmp_path_factory.mktemp(f"visible_{stage}")
    plan: dict[str, tuple[str, str | None]] = {}
    packages = {}
    table = [("correct", name, replacements, None)
             for name, replacements in variants.CORRECT.items()]
    table += [("mistake", name, replacements, test)
              for name, (replacements, test, _) in variants.MISTAKES.items()]
    for i, (kind, name, replacements, test) in enumerate(table):
        package = f"variant_{stage}_{i}"
        _package(root / package, replacements)
        plan[name] = (kind, test)
        packages[name] = package
    out = root / "results.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(ROOT)]),
           "OMP_NUM_THREADS": "1"}
    env.pop("LUMEN_IMPL", None)
    done = subprocess.run([sys.executable, "-c", DRIVER, stage, str(out), *packages.values()],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    return stage, plan, {name: results[package] for name, package in packages.items()}


def test_every_correct_alternative_passes_the_visible_tests(checked):
    stage, plan, results = checked
    failing = {name: results[name] for name, (kind, _) in plan.items()
               if kind == "correct" and results[name]["code"] != 0}
    assert not failing, f"correct alternatives of {stage} fail visible tests: {failing}"


def test_every_known_mistake_fails_its_visible_counterpart(checked):
    stage, plan, results = checked
    visible = importlib.import_module(f"autograder.suites.test_{stage}").VISIBLE
    missed = {}
    for name, (kind, hidden) in plan.items():
        if kind != "mistake":
            continue
        caught = set(results[name]["failed"]) & set(visible[hidden])
        if results[name]["code"] != 1 or not caught:
            missed[name] = (f"hidden {hidden}; visible {visible[hidden]} passed "
                            f"(failed: {results[name]['failed']}, exit {results[name]['code']})")
    assert not missed, f"known mistakes of {stage} that its visible tests miss:\n" + "\n".join(
        f"  {name}: {why}" for name, why in missed.items())
