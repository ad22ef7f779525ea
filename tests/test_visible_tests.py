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
#: (The rules the visible tests apply are exercises/rules/, beside them, whatever the package.)
GIVEN = ("__init__.py", "stages.py", "tokenizer.py", "vectors.py", "explore.py")

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


# The messages of a refused dtype: named where the ids were refused, in the dtype sent.

#: Runs in a fresh interpreter: pytest once per package on the selected tests, recording each
#: failure's text (what the learner reads under the test's name) by file and test.
MESSAGES_DRIVER = """
import json, sys
import pytest

class Failures:
    def __init__(self):
        self.texts = {}
    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.texts[report.nodeid.split("/")[-1]] = report.longreprtext

out, selected, *packages = sys.argv[1:]
results = {}
for package in packages:
    failures = Failures()
    pytest.main(["exercises/tests", "-k", selected, f"--impl={package}", "-q",
                 "-p", "no:cacheprovider", "--no-header", "-o", "addopts="], plugins=[failures])
    results[package] = failures.texts
with open(out, "w") as f:
    json.dump(results, f)
"""

#: Mistakes with token ids of one dtype (tests/variants/embedding.py's, and one of int32).
DTYPE_MISTAKES = {
    "plain weight[ids]": "plain weight[ids] (int16 refused, uint8 read as a mask)",
    "compared in their own dtype":
        "a range check made in the ids' own dtype (vocab_size wraps in uint8, int8, int16)",
    "float16 accepted": "float16 ids accepted (only float32 and float64 refused)",
    "float accepted": "float ids accepted",
}
ONLY_INT64 = {"embeddings:check_ids": '''
    def check_ids(ids, vocab_size):
        if not isinstance(ids, torch.Tensor) or ids.dtype != torch.int64:
            raise TypeError(f"token ids must be int64, got {getattr(ids, 'dtype', ids)}")
        bad = (ids < 0) | (ids >= vocab_size)
        if ids.device.type != "meta" and bool(bad.any()):
            raise IndexError(f"token id {int(ids[bad][0])} is outside [0, {vocab_size})")
'''}
#: (mistake, visible test of test_embedding.py) -> the message's first words, the words that
#: must follow them in order, and words it must not hold (another dtype's story, another
#: function's fix).
DTYPE_MESSAGES = {
    ("plain weight[ids]", "test_ids_at_the_edges_of_their_dtype[torch.int16-33000]"): (
        "Embedding.forward raised", ["torch.int16 ids", "refuse torch.int16 ids", "ids.long()"],
        ["uint8", "vocab_size", "wraps"]),
    ("plain weight[ids]", "test_every_integer_dtype_and_layout[contiguous-torch.uint8]"): (
        "Embedding.forward raised", ["torch.uint8 ids", "as a mask", "ids.long()"],
        ["int16", "wraps"]),
    ("compared in their own dtype", "test_ids_at_the_edges_of_their_dtype[torch.int16-33000]"): (
        "check_ids refused valid torch.int16 ids",
        ["33000 does not fit in torch.int16", "becomes -32536", "32767 >= 33000", "ids.long()"],
        ["uint8", "250", "lookup"]),
    ("compared in their own dtype", "test_ids_at_the_edges_of_their_dtype[torch.uint8-300]"): (
        "check_ids refused valid torch.uint8 ids", ["becomes 44", "255 >= 300", "ids.long()"],
        ["int16", "lookup"]),
    ("only int64", "test_every_integer_dtype_and_layout[contiguous-torch.int32]"): (
        "check_ids refused valid torch.int32 ids", ["every integer dtype"],
        ["uint8", "int16", "mask", "lookup"]),
    ("float16 accepted", "test_check_ids_refuses_what_is_not_integer_ids[check_ids-float16]"): (
        "check_ids accepted torch.float16 ids", ["TypeError", "is_floating_point"],
        ["isinstance", "bool"]),
    ("float accepted", "test_check_ids_refuses_what_is_not_integer_ids[forward-float]"): (
        "forward accepted torch.float32 ids", ["TypeError", "is_floating_point"],
        ["isinstance", "mask"]),
}


@pytest.fixture(scope="module")
def dtype_messages(tmp_path_factory) -> dict[str, dict[str, str]]:
    """{mistake: {visible test: the text of its failure}} for the tests DTYPE_MESSAGES names."""
    variants = importlib.import_module("tests.variants.embedding")
    root = tmp_path_factory.mktemp("dtype_messages")
    packages = {"only int64": _package(root / "dtype_only_int64", ONLY_INT64).name}
    for i, (key, name) in enumerate(DTYPE_MISTAKES.items()):
        packages[key] = _package(root / f"dtype_mistake_{i}", variants.MISTAKES[name][0]).name
    selected = " or ".join(sorted({test.split("[")[0] for _, test in DTYPE_MESSAGES}))
    out = root / "results.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(ROOT)]),
           "OMP_NUM_THREADS": "1"}
    env.pop("LUMEN_IMPL", None)
    done = subprocess.run([sys.executable, "-c", MESSAGES_DRIVER, str(out), selected,
                           *packages.values()], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    return {key: results[package] for key, package in packages.items()}


@pytest.mark.parametrize(("mistake", "test"), [pytest.param(*key, id=" in ".join(key))
                                              for key in DTYPE_MESSAGES])
def test_a_refused_dtype_is_told_where_and_in_the_dtype_sent(dtype_messages, mistake, test):
    """int16, int32, uint8 and float ids: the failure's message says first which function
    refused (or accepted) them, in the dtype that was sent, and then the fix; never another
    dtype's story or another function's fix."""
    first, then, never = DTYPE_MESSAGES[mistake, test]
    text = dtype_messages[mistake].get(f"test_embedding.py::{test}")
    assert text is not None, f"{test} passed with the mistake {mistake!r}"
    raised = "\n".join(line[4:] for line in text.splitlines() if line.startswith("E   "))
    message = raised.rpartition("Failed: ")[2]  # the test's own message, after PyTorch's
    assert message.startswith(first), raised
    at = 0
    for words in then:
        found = message.find(words, at)
        assert found >= 0, f"{words!r} should come after {then[:then.index(words)]}:\n{message}"
        at = found + len(words)
    assert not [w for w in never if w in message], message
