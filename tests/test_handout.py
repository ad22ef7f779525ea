"""The learners' handout zip: what it holds, what it must never hold, and that it works.

Closed: no hidden test (nothing of autograder/), no reference (nothing of lumen/), and no line
of any solution region, wherever it might have leaked. Working: unzipped on its own, away from
this repository, the visible tests run and fail on the stubs with "not implemented yet", and
every command its README gives runs, or stops where the README says it will.
"""

from __future__ import annotations

import ast
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest

from autograder.publish import handout, render
from solutions import release

ROOT = release.ROOT
MIN_LINE = 20  # shorter solution lines ("else:", "return x", ")") are common in given code


def solution_lines() -> set[str]:
    """Every non-trivial line inside lumen's ### BEGIN/END SOLUTION regions, stripped."""
    lines = set()
    for name in release.STUBBED:
        source = (release.LUMEN / name).read_text(encoding="utf-8")
        numbered = source.splitlines()
        for region in release.find_regions(source, name):
            for line in numbered[region.begin : region.end - 1]:  # between the markers
                text = line.strip()
                if len(text) >= MIN_LINE and not text.startswith("#"):
                    lines.add(text)
    return lines


@pytest.fixture(scope="module")
def handout_zip(tmp_path_factory) -> Path:
    return handout.build(tmp_path_factory.mktemp("build") / "handout.zip")


@pytest.fixture(scope="module")
def members(handout_zip) -> dict[str, bytes]:
    with zipfile.ZipFile(handout_zip) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_handout_holds_what_a_learner_needs(members):
    top = handout.FOLDER
    for needed in ("README.md", "requirements.txt", "exercises/__init__.py",
                   "exercises/embeddings.py", "exercises/params.py", "exercises/gpt2.py",
                   "exercises/explore.py", "exercises/stages.py", "exercises/tests/conftest.py",
                   "exercises/tests/test_embedding.py"):
        assert f"{top}/{needed}" in members, f"{needed} is missing from the handout"
    assert all(name.startswith(f"{top}/") for name in members), "one folder, nothing loose"
    requirements = members[f"{top}/requirements.txt"].decode()
    assert "pytest==" in requirements and "numpy==" in requirements
    assert "nbgrader" not in requirements  # the grader's, not the learner's
    readme = members[f"{top}/README.md"].decode()
    assert "pip install torch==2.13.0" in readme and "pytest exercises -m embedding" in readme


def test_no_hidden_test_and_no_reference(members):
    leaked = [n for n in members if "/autograder/" in n or "/lumen/" in n
              or n.split("/", 1)[1].startswith(("autograder", "lumen", "solutions", "tests/"))]
    assert not leaked, f"the handout holds grader or reference files: {leaked}"
    assert not [n for n in members if "__pycache__" in n or n.endswith(".pyc")]
    grader = {p.read_bytes() for p in (ROOT / "autograder").rglob("*.py") if p.stat().st_size}
    copies = [n for n, data in members.items() if data in grader]
    assert not copies, f"these are copies of autograder/ files: {copies}"


def test_no_line_of_the_reference_solution(members):
    lines = solution_lines()
    assert len(lines) > 30, "too few solution lines found: is find_regions still right?"
    leaks = [(name, line) for name, data in members.items()
             for line in lines if line in data.decode("utf-8")]
    assert not leaks, "solution lines in the handout:\n" + "\n".join(
        f"  {name}: {line}" for name, line in leaks)


def test_visible_tests_run_and_fail_on_the_stubs(handout_zip, tmp_path):
    with zipfile.ZipFile(handout_zip) as archive:
        archive.extractall(tmp_path)
    folder = tmp_path / handout.FOLDER
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LUMEN_IMPL")}
    where = subprocess.run([sys.executable, "-c", "import exercises; print(exercises.__file__)"],
                           cwd=folder, env=env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(folder), "exercises came from elsewhere"
    report = tmp_path / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "exercises", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(folder), f"--junitxml={report}"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 1, f"expected failing tests (exit 1), got {done.returncode}:\n{out}"
    cases = ElementTree.parse(report).getroot().iter("testcase")
    verdicts = {case.get("name"): [f.get("message", "") for f in case.iter("failure")]
                for case in cases}
    assert len(verdicts) > 20, f"too few visible tests ran: {sorted(verdicts)}"
    not_stub = {name: messages for name, messages in verdicts.items()
                if not messages or "not implemented yet" not in messages[0]}
    assert not not_stub, f"on the stubs, these did not fail with 'not implemented yet': {not_stub}"


def _unpacked(handout_zip: Path, target: Path) -> Path:
    with zipfile.ZipFile(handout_zip) as archive:
        archive.extractall(target)
    return target / handout.FOLDER


def _alone() -> dict[str, str]:
    """The environment of a learner's shell: nothing of this repository on the path."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LUMEN_IMPL")}


def readme_commands(readme: str) -> list[str]:
    """The commands of the README's ``sh`` blocks that run the learner's code, as typed."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", readme, re.S):
        for line in block.splitlines():
            command = line.split(" #", 1)[0].strip()
            if command.startswith(("python -m ", "pytest ")):
                commands.append(command)
    return commands


def _run(command: str, folder: Path) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    argv = [sys.executable, *argv[1:]] if argv[0] == "python" else \
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *argv[1:]]
    return subprocess.run(argv, cwd=folder, env=_alone(), capture_output=True, text=True,
                          timeout=600)


def test_the_readmes_commands_work_from_the_handout_alone(handout_zip, tmp_path):
    """Unzipped away from this repository, each command of the handout's README runs on the
    stubs, or stops with the very words the README says it will; and the calculator prints
    its table once stage params is written (lumen's params.py standing in for the learner's)."""
    folder = _unpacked(handout_zip, tmp_path)
    readme = (folder / "README.md").read_text(encoding="utf-8")
    commands = readme_commands(readme)
    calculator = "python -m exercises.params gpt2 --untied"
    assert calculator in commands and "python -m exercises.explore --figure explore.png" in \
        commands, commands
    # Two at a time (each starts a Python that imports torch): they write no file in common.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda command: _run(command, folder), commands))
    for command, done in zip(commands, runs, strict=True):
        out = done.stdout + done.stderr
        assert "No module named" not in out, f"{command}:\n{out[-2000:]}"
        if done.returncode != 0:  # only where a stage is missing, and as the README says
            stub = re.search(r"\w+ is not implemented yet \(stage '\w+'\)", out)
            assert stub and f"`{stub.group()}`" in readme, f"{command}:\n{out[-2000:]}"
    assert (folder / "explore.png").is_file()
    (folder / "exercises" / "params.py").write_text(
        (ROOT / "lumen" / "params.py").read_text(encoding="utf-8"), encoding="utf-8")
    done = _run(calculator, folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "token embedding (wte)" in done.stdout and "163,037,184" in done.stdout


def _make_targets() -> set[str]:
    """The targets of this repository's Makefile, none of which the handout has."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][\w-]*):", text, re.M))


def _told_to_run(text: str) -> list[str]:
    """The commands in ``text`` that a handout cannot run: a make target, or the reference
    package (python -m lumen...)."""
    targets = "|".join(sorted(_make_targets(), key=len, reverse=True))
    return re.findall(rf"\bmake (?:{targets})\b|python -m lumen\b[\w.]*", text)


def learner_visible_text(members: dict[str, bytes]) -> dict[str, list[str]]:
    """What a learner reads in the handout: the README, and every string of its Python files
    (messages, docstrings, help), but not comments (the generated headers are for staff)."""
    texts = {}
    for name, data in members.items():
        text = data.decode("utf-8")
        if name.endswith(".py"):
            texts[name] = [node.value for node in ast.walk(ast.parse(text))
                           if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        elif name.endswith(".md"):
            texts[name] = [text]
    return texts


def test_the_readme_names_no_command_the_handout_lacks(members):
    readme = members[f"{handout.FOLDER}/README.md"].decode("utf-8")
    assert not _told_to_run(readme)
    init = learner_visible_text(members)[f"{handout.FOLDER}/exercises/__init__.py"]
    assert not [c for text in init for c in _told_to_run(text)]  # solutions/release.py's text


def test_no_message_names_a_command_the_handout_lacks(members):
    """No text a handout learner reads (an error message, a docstring, --help) tells them to
    run a make target or the reference package: the handout has neither."""
    found = {name: commands for name, texts in learner_visible_text(members).items()
             if (commands := [c for text in texts for c in _told_to_run(text)])}
    assert not found, found


def _pinned(requirements: str) -> list[str]:
    """The distribution names pinned in a requirements text (``name==version``)."""
    return [m[1] for m in re.finditer(r"^([A-Za-z0-9][\w.-]*)==", requirements, re.M)]


def minimum_python(names: list[str]) -> str:
    """The oldest Python 3.x that every installed distribution in ``names`` accepts, by its
    own Requires-Python metadata (importlib.metadata: what pip read from it, no network)."""
    from importlib import metadata

    from packaging.specifiers import SpecifierSet

    specs = [SpecifierSet(metadata.metadata(name).get("Requires-Python") or "") for name in names]
    return next(f"3.{minor}" for minor in range(0, 40)
                if all(f"3.{minor}" in spec for spec in specs))


def test_the_python_each_readme_names_installs_the_pinned_packages():
    """The handout's README names the oldest Python its pins accept (torch and the learner's
    requirements.txt), read from the installed distributions' Requires-Python; this
    repository's README, pyproject and Makefile name the one the whole environment accepts."""
    learner = minimum_python(["torch", *_pinned(handout.requirements())])
    pins = "\n".join(handout.requirement_lines(ROOT / "requirements.txt"))  # -r followed
    grader = minimum_python(["torch", *_pinned(pins)])
    told = re.findall(r"Python (3\.\d+) or newer", handout.README.read_text(encoding="utf-8"))
    assert told and set(told) == {learner}, f"the handout says {told}; its pins need {learner}"
    told = re.findall(r"Python (3\.\d+) or newer", (ROOT / "README.md").read_text())
    assert told and set(told) == {grader}, f"README.md says {told}; the pins need {grader}"
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'requires-python = ">={grader}"' in pyproject
    major, minor = grader.split(".")
    assert f"sys.version_info >= ({major}, {minor})" in (ROOT / "Makefile").read_text()


def test_the_handout_installs_the_cpu_build_of_torch_as_classroom_does():
    """PyPI's Linux torch is the CUDA build (gigabytes): the README's torch line takes the CPU
    wheel index the Classroom workflow uses, and says why."""
    from autograder.frontends.gradescope import CPU_TORCH

    readme = handout.README.read_text(encoding="utf-8")
    commands = [line.split(" #", 1)[0].strip() for block in re.findall(r"```sh\n(.*?)```",
                readme, re.S) for line in block.splitlines()]
    torch_lines = [c for c in commands if c.startswith("pip install torch")]
    assert torch_lines == [f"pip install {CPU_TORCH}"], torch_lines
    assert "CUDA build" in readme and "CPU build" in readme


def test_edited_exercises_are_named_as_edits_with_both_ways_out(tmp_path, monkeypatch):
    """An edited exercises/ is not "stale": `make stubs` would refuse it. The message says it
    holds edits and gives both ways out (FORCE=1 with a backup, or git checkout)."""
    # Edited in a copy that stands for the repository's exercises/, never in place: the release
    # freshness tests read the real one, perhaps at this moment in another pytest-xdist worker.
    exercises = tmp_path / "exercises"
    shutil.copytree(release.EXERCISES, exercises, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(render, "EXERCISES", exercises.resolve())  # git's copy is HEAD's
    path = exercises / "embeddings.py"
    path.write_bytes(path.read_bytes() + b"\n# a learner's note\n")
    with pytest.raises(handout.HandoutError) as caught:
        handout.contents(tmp_path)
    with pytest.raises(release.ReleaseError, match=r"holds edits \(embeddings.py\)") as refused:
        release.write(exercises)  # what the old message sent the user to: it refuses
    message = str(caught.value)
    assert "holds edits (embeddings.py)" in message and "stale" not in message
    for text in (message, str(refused.value)):  # the handout's words and the release's
        assert "make release FORCE=1" in text and "git checkout -- exercises/" in text
        assert "a backup of each in exercises/.backup-<time>/" in text, text
        assert "make stubs" not in text, text
