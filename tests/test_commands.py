"""Every command the README, its guides and the handout show runs as it is written.

tests/documented.py reads the commands out of the documents; ``HOW`` below says, for each
thing a command runs (its ``head``: ``make grade``, ``python -m lumen neighbours``), how a test
runs it: as written on a tiny input in the fast tier, or, where that is too slow, a quick form
(``--help``, ``make -n``) in the fast tier and as written in the full tier. A command whose head
is not in ``HOW`` fails ``test_every_documented_command_has_a_run``, naming the line to add.

The repository's commands run in a scratch copy of the repository (its files and mtimes, this
checkout's .venv), so ``make handout`` and ``make release`` write there; the handout's run in
the unpacked handout. ``python``, ``pytest``, ``jupyter`` and ``pip`` are the .venv's: a reader
with it activated.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.publish import handout
from solutions import release
from tests import documented

ROOT = documented.ROOT
VENV_BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Run:
    """How the tests run a command.

    ``tier``: ``fast``, run as written in the fast tier; ``full``, as written in the full tier
    (``quick`` in the fast one); ``ci``, run as written by .ci/run itself (``quick`` in the fast
    tier); ``elsewhere``, run as written by the test ``by`` (``quick`` here); ``dry``, never
    run for real here, for the ``why`` given (``quick`` only). ``rc``: the exit statuses a
    tiny run may give; ``first``: a pattern one of the output's first lines matches.
    ``extra``: appended to the written line for the real run (a tiny input: ``ARGS=...``).
    ``setup``: shell lines run first, in the same folder. ``says``: a pattern the whole
    output matches (a benchmark's verdict on its target)."""

    tier: str = "fast"
    rc: tuple[int, ...] = (0,)
    first: str | None = None
    quick: tuple[str, ...] = ()
    extra: str = ""
    setup: str = ""
    by: str = ""
    why: str = ""
    says: str | None = None
    timeout: int = 240


#: A benchmark's statuses: 0, or make's 2 when it missed its target (which it says: _TARGET).
_BENCHMARK = (0, 2)
_TARGET = r"target"
_COLLECT = "python -m pytest --collect-only -q "
#: What a make target says when it refuses: make's own status for a failed recipe.
_MAKE_FAILED = (2,)

_SLURM = "tests/test_slurm.py::test_the_array_and_its_merge_complete"

HOW: dict[str, Run] = {
    # -- the two commands, and the environment
    "make": Run(first=r"^make \S+"),  # the default goal: make help's list
    "make help": Run(first=r"^make \S+"),
    "make setup": Run(),
    "make setup-dev": Run(),
    "make sandbox": Run(),
    "make grade": Run(rc=(0,), first=r"stage|embedding|grade"),
    "make grade-cuda": Run(rc=_MAKE_FAILED, first=r"no CUDA device"),
    "make test": Run(tier="ci", quick=("make -n test PYTEST_ARGS=-x",)),
    "make test-all": Run(tier="ci", quick=("make -n test-all",)),
    "make mutation": Run(tier="ci", quick=("python -m tools.mutation --help", "make -n mutation")),
    "make promise-mutants": Run(tier="ci", quick=("python -m tools.promise_mutants --help",
                                                  "make -n promise-mutants")),
    "make gpu-check": Run(rc=_MAKE_FAILED, first=r"no CUDA device here"),
    "make seeds": Run(tier="full", extra=' ARGS="--seeds 2 --stage params"',
                      quick=("python -m tools.seeds --help", "make -n seeds")),
    "make lint": Run(),
    # -- course staff
    "make release": Run(tier="full",
                        quick=("make -n release", "python -m solutions.release --help")),
    "make stubs": Run(tier="full", quick=("make -n stubs",)),
    "make new-stage": Run(tier="elsewhere", by="tests/test_new_stage.py::"
                          "test_it_writes_and_registers_every_piece_and_the_tests_name_what_is_left",
                          quick=("make -n new-stage STAGE=embedding",
                                 "python -m solutions.new_stage --help")),
    "make handout": Run(tier="full", first=r"build/handout\.zip",
                        quick=("make -n handout", "python -m solutions.handout --help")),
    "make gradescope": Run(first=r"build/autograder\.zip"),
    "make classroom": Run(tier="full", first=r"build/classroom", quick=("make -n classroom",)),
    "make prairielearn": Run(first=r"build/prairielearn"),
    "make nbgrade": Run(tier="full", first=r"graded|learner",
                        quick=("make nbgrade",  # without SUBMISSIONS: its usage, status 2
                               "python -m autograder nbgrade --help")),
    "make benchmark": Run(tier="full", rc=_BENCHMARK, says=_TARGET,
                          extra=' ARGS="--runs 1 --reps 1"',
                          quick=("python benchmarks/grade_speed.py --help", "make -n benchmark")),
    "make benchmark-batch": Run(tier="full", rc=_BENCHMARK, says=_TARGET,
                                extra=' ARGS="--learners 4 --cold-runs 1 --no-floor"',
                                quick=("python benchmarks/batch_speed.py --help",
                                       "make -n benchmark-batch")),
    "make benchmark-nbgrade": Run(tier="full", rc=_BENCHMARK, says=_TARGET, timeout=900,
                                  extra=' ARGS="--learners 1"',
                                  quick=("python benchmarks/nbgrade_speed.py --help",
                                         "make -n benchmark-nbgrade")),
    "make benchmark-shards": Run(tier="full", rc=_BENCHMARK, says=r"ratio|throughput",
                                 extra=' ARGS="--learners 4 --rounds 1"',
                                 quick=("python benchmarks/shard_speed.py --help",
                                        "make -n benchmark-shards")),
    "make clean": Run(tier="dry", why="removes the .venv the other tests run in",
                      quick=("make -n clean",)),
    # -- the grader's command line
    "python -m autograder grade": Run(first=r"stage|embedding"),
    "python -m autograder grade-batch": Run(
        first=r"grad", setup="printf 'submission,name,sis_user_id,sis_login_id,email\\n"
                             "alice,1,1,alice,alice@example.org\\n"
                             "bob,2,2,bob,bob@example.org\\n' > roster.csv"),
    "python -m autograder merge-shards": Run(
        tier="full", quick=("python -m autograder merge-shards --help",),
        first=r"merg|grades", setup=(
            "python -m autograder grade-batch {class_dir}/ --shard 1/2 --out grades/shard-1.csv"
            " && python -m autograder grade-batch {class_dir}/ --shard 2/2 --out "
            "grades/shard-2.csv")),
    "python -m autograder nbgrade": Run(tier="full", first=r"graded|learner",
                                        quick=("python -m autograder nbgrade --help",)),
    "python -m autograder prairielearn": Run(
        extra=" --root pl", setup="mkdir -p pl/student pl/results && cp {submission}/*.py "
                                  "pl/student/", first=r""),
    "python -m autograder.frontends.gradescope": Run(),
    "python -m autograder.frontends.classroom template": Run(
        tier="full", quick=("python -m autograder.frontends.classroom template --help",)),
    "python -m autograder.frontends.prairielearn_build build": Run(),
    "pytest autograder/suites": Run(first=r"passed|collected|test session"),
    "python -m solutions.release": Run(tier="full", quick=("python -m solutions.release --help",)),
    # -- the chapter, live (the repository's reference, or the learner's stubs)
    "python -m lumen": Run(),
    "python -m lumen tokens": Run(first=r"464"),
    "python -m lumen neighbours": Run(first=r"dog|cat"),
    "python -m lumen analogy": Run(first=r"queen|king"),
    "python -m lumen params": Run(),
    "python -m lumen figures": Run(),
    "python -m lumen explore": Run(),
    "python -m lumen.params": Run(),
    "python -m exercises": Run(),
    "python -m exercises.cli": Run(),
    "python -m exercises tokens": Run(first=r"464"),
    "python -m exercises neighbours": Run(),
    "python -m exercises analogy": Run(),
    "python -m exercises params": Run(),
    "python -m exercises figures": Run(),
    "python -m exercises explore": Run(),
    "python -m exercises.cli tokens": Run(first=r"464"),
    "python -m exercises.explore": Run(tier="full", quick=("python -m exercises.explore --help",)),
    "python -m exercises.params": Run(),
    "python -c": Run(),
    # -- the visible tests (a learner's stubs fail them) and this repository's own
    "pytest exercises": Run(rc=(1,), first=r"not implemented yet|test session|FAILED"),
    # this repository's own tests: .ci/run's make test and make test-all run every one of
    # them; here, that the line selects tests
    "pytest .": Run(tier="ci", quick=(_COLLECT + "-m embedding tests/test_lumen_embeddings.py",)),
    "pytest tests/test_grader_variants.py": Run(
        tier="ci", quick=(_COLLECT + "tests/test_grader_variants.py -k onehot",)),
    "pytest tests/test_wire.py": Run(tier="ci", quick=(_COLLECT + "tests/test_wire.py",)),
    "pytest tests/test_scaffolds.py": Run(tier="ci", quick=(_COLLECT + "tests/test_scaffolds.py",)),
    "jupyter lab": Run(tier="full", first=r"is running at|Jupyter Server",
                       quick=("jupyter lab --version",)),
    # -- installing: a fresh environment is the full tier's, never the fast tier's
    "pip install": Run(tier="elsewhere", by="tests/test_commands.py::"
                       "test_the_handouts_setup_installs_into_a_fresh_venv",
                       quick=("pip --version",)),
    "python -m venv": Run(tier="elsewhere", by="tests/test_commands.py::"
                          "test_the_handouts_setup_installs_into_a_fresh_venv",
                          quick=("python3 -m venv --help",)),
    "source": Run(tier="elsewhere", by="tests/test_commands.py::"
                  "test_the_handouts_setup_installs_into_a_fresh_venv",
                  quick=("test -f {venv_bin}/activate",)),
    "lumen": Run(tier="elsewhere",
                 by="tests/test_release.py::test_pip_install_editable_leaves_nothing_untracked",
                 quick=("python -m lumen tokens 'The cat sat'",)),
    # -- the cluster recipes
    "deploy/slurm-submit.sh": Run(tier="elsewhere", by=_SLURM,
                                  quick=("bash -n deploy/slurm-submit.sh",)),
    "deploy/slurm-grade.sh": Run(tier="elsewhere", by=_SLURM,
                                 quick=("bash -n deploy/slurm-grade.sh",)),
    "make slurm": Run(),
    "python -m tools.slurm_local": Run(tier="elsewhere", by=_SLURM,
                                       quick=("python -m tools.slurm_local --help",)),
    "sbatch": Run(tier="elsewhere", by=_SLURM,
                  quick=("bash -n deploy/slurm-grade.sh",)),
}


def _cases() -> dict[tuple[bool, str], list[documented.Documented]]:
    """Each distinct command (in the handout, or not) and every place that shows it."""
    cases: dict[tuple[bool, str], list[documented.Documented]] = {}
    for command in documented.all_commands():
        cases.setdefault((command.in_handout, command.text), []).append(command)
    return cases


CASES = _cases()


def _head(text: str) -> str:
    return documented.head(documented.concrete(text).replace("{{", "{").replace("}}", "}"))


def _ids(key: tuple[bool, str]) -> str:
    return ("handout: " if key[0] else "") + key[1]


def test_every_documented_command_has_a_run():
    missing = sorted({(_head(text), places[0].where) for (_, text), places in CASES.items()
                      if _head(text) not in HOW})
    assert not missing, (
        "documented commands no test runs: add each head to tests/test_commands.py's HOW "
        "(how to run it on a tiny input):\n" + "\n".join(f"  {h!r}  ({w})" for h, w in missing))


def test_the_check_for_a_run_can_fail(tmp_path):
    """A command nobody taught the table about is found (the check above is not vacuous)."""
    doc = tmp_path / "guide.md"
    doc.write_text("Run `make frobnicate` first.\n\n```sh\npython -m lumen teleport cat\n```\n")
    heads = {_head(c.text) for c in documented.commands(doc)}
    assert heads == {"make frobnicate", "python -m lumen teleport"}
    assert not heads & set(HOW)


def test_every_run_points_somewhere_real():
    for head, how in HOW.items():
        assert how.tier in ("fast", "full", "ci", "elsewhere", "dry"), head
        if how.tier != "fast":
            assert how.quick, f"{head}: a {how.tier} command still gets a quick form here"
        if how.tier == "dry":
            assert how.why, f"{head}: say why it is never run for real"
        if how.tier == "elsewhere":
            path, _, name = how.by.partition("::")
            text = (ROOT / path).read_text(encoding="utf-8")
            assert not name or f"def {name}(" in text, f"{head}: {how.by} does not exist"


def test_ci_runs_the_readmes_test_commands_as_written():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for (_, text), places in CASES.items():
        how = HOW.get(_head(text))
        if how and how.tier == "ci" and len(documented.words(text)) == 2:
            assert text in script, f"{places[0].where}: .ci/run does not run {text!r}"


# -- running them -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, Path]:
    """A scratch copy of the repository, the unpacked handout, a solved submission and a
    class of two learners (one solved, one untouched)."""
    base = tmp_path_factory.mktemp("commands")
    repo = base / "repo"
    skip = shutil.ignore_patterns(".git", ".venv", "build", "__pycache__", ".pytest_cache",
                                  ".ruff_cache", "*.egg-info", ".mutmut-cache", "mutants")
    shutil.copytree(ROOT, repo, copy_function=shutil.copy2, symlinks=True, ignore=skip)
    (repo / ".venv").symlink_to(VENV_BIN.parent)
    with zipfile.ZipFile(handout.build(base / "handout.zip")) as archive:
        archive.extractall(base / "unzipped")
    submission = _write(base / "solved", release.submission(release.stages.STAGE_NAMES))
    class_dir = base / "class"
    _write(class_dir / "alice", release.submission(release.stages.STAGE_NAMES))
    _write(class_dir / "bob", release.submission(()))
    return {"repo": repo, "handout": base / "unzipped" / handout.FOLDER,
            "submission": submission, "class_dir": class_dir}


def _write(folder: Path, files: dict[Path, str]) -> Path:
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    return folder


def _environment() -> dict[str, str]:
    # a reader's shell: not this test run's pytest, make (make test runs us) or lumen settings
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST", "LUMEN_", "COV_", "MAKE", "MFLAGS"))
           and k != "PYTHONPATH"}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(VENV_BIN.parent)
    env["MPLBACKEND"] = "Agg"
    return env


def _shell(line: str, folder: Path, places: dict[str, Path], timeout: int,
           ) -> subprocess.CompletedProcess:
    line = line.format(submission=places["submission"], class_dir=places["class_dir"],
                       venv_bin=VENV_BIN)
    try:
        return subprocess.run(["bash", "-c", line], cwd=folder, env=_environment(), text=True,
                              capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as late:
        pytest.fail(f"{line!r} still ran after {timeout} s:\n{late.stdout}\n{late.stderr}")


def _check(line: str, done: subprocess.CompletedProcess, rc: tuple[int, ...],
           first: str | None, where: str, says: str | None = None) -> None:
    output = done.stdout + done.stderr
    shown = f"{where}: {line!r} (exit {done.returncode}):\n{output[-3000:]}"
    assert done.returncode in rc, shown
    if not line.lstrip().startswith(("pytest", "python -m pytest", "make test", "make test-all")):
        assert "Traceback (most recent call last)" not in output, shown
    if first:
        head = "\n".join(output.strip().splitlines()[:12])
        assert re.search(first, head, re.M | re.I), f"{shown}\n(expected {first!r} at the top)"
    if says:
        assert re.search(says, output, re.M), f"{shown}\n(expected {says!r} in it)"


def _real(key, places) -> None:
    in_handout, text = key
    how = HOW[_head(text)]
    folder = places["handout" if in_handout else "repo"]
    where = CASES[key][0].where
    if how.setup:
        done = _shell(how.setup, folder, places, how.timeout)
        assert done.returncode == 0, f"{where}: setup failed:\n{done.stdout}{done.stderr}"
    line = documented.concrete(text) + how.extra
    filled_in = re.search(r"<[^>]+>", line)  # a value the reader fills in (a CUDA wheel index)
    if filled_in:  # what make would run with it: the value reaches the command
        assert line.startswith("make "), f"{where}: nothing to put for the <...> in {line!r}"
        line = "make -n " + line[len("make "):]
        done = _shell(line, folder, places, how.timeout)
        _check(line, done, (0,), re.escape(filled_in.group()), where)
        return
    _check(line, _shell(line, folder, places, how.timeout), how.rc, how.first, where, how.says)


FAST = [k for k in CASES if HOW.get(_head(k[1]), Run(tier="?")).tier == "fast"]
QUICK = sorted({(k[0], q) for k in CASES for q in HOW.get(_head(k[1]), Run()).quick
                if HOW.get(_head(k[1]), Run()).tier != "fast"})
FULL = [k for k in CASES if HOW.get(_head(k[1]), Run()).tier == "full"
        and _head(k[1]) != "jupyter lab"  # a server: test_jupyter_lab_opens_the_lab_notebook
        and documented.concrete(k[1]) not in HOW[_head(k[1])].quick]  # run fast already


def _by_head(keys) -> list:
    return [pytest.param(_head(k[1]), k, id=_ids(k)) for k in keys]


@pytest.mark.parametrize(("head", "key"), _by_head(FAST))
def test_documented_command_runs_as_written(head, key, places):
    """The fast tier runs one line of each head (tests/conftest.py), the full tier the rest."""
    _real(key, places)


@pytest.mark.parametrize("key", QUICK, ids=_ids)
def test_slow_commands_quick_form_runs(key, places):
    """The fast tier's look at a command that is too slow to run here: its --help, or what
    make would run (its real run is the full tier's, .ci/run's or the test HOW names)."""
    in_handout, line = key
    folder = places["handout" if in_handout else "repo"]
    rc = (2,) if line == "make nbgrade" else (0,)
    _check(line, _shell(line, folder, places, 240), rc, None, line)


@pytest.mark.parametrize(("head", "key"), _by_head(FULL))
def test_slow_documented_command_runs_as_written(head, key, places):
    _real(key, places)


def _get_json(url: str, seconds: float = 60.0) -> dict:
    """GET ``url``'s JSON, retrying while the server that printed it is not listening yet."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=seconds) as reply:
                return json.load(reply)
        except urllib.error.URLError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_jupyter_lab_opens_the_lab_notebook(places):
    """`jupyter lab exercises/lab.ipynb` starts a server that serves the notebook (headless:
    no browser is opened): the lab's contents come back from its API, then it is stopped."""
    for (in_handout, text), where in CASES.items():
        if _head(text) != "jupyter lab":
            continue
        folder = places["handout" if in_handout else "repo"]
        line = documented.concrete(text) + " --no-browser --ServerApp.port=0 --ServerApp.token=t"
        if os.geteuid() == 0:  # CI runs as root, which Jupyter refuses unless told; a reader is not
            line += " --allow-root"
        server = subprocess.Popen(["bash", "-c", f"exec {line}"], cwd=folder, env=_environment(),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)
        seen, url = [], None
        try:
            for output in server.stdout:
                seen.append(output)
                found = re.search(r"(http://127\.0\.0\.1:\d+/)lab", output)  # token masked
                if found or len(seen) > 400:
                    url = found and found.group(1)
                    break
            assert url, f"{where[0].where}: {line!r} never said where it runs:\n" \
                        f"{''.join(seen)[-3000:]}"
            served = _get_json(f"{url}api/contents/lab.ipynb?token=t")
            assert served["type"] == "notebook" and served["content"]["cells"], served["name"]
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)


def test_the_handouts_setup_installs_into_a_fresh_venv(places, tmp_path):
    """The handout's "Set up (once)" block, line by line in one shell, in a copy of the
    unpacked handout with no environment of its own: a fresh venv, torch's CPU build, the
    pinned rest; then the first stage's visible tests run (and fail on the stubs)."""
    folder = tmp_path / handout.FOLDER
    shutil.copytree(places["handout"], folder)
    shown = documented.commands(ROOT / "handout" / "README.md")
    venv = next(c for c in shown if _head(c.text) == "python -m venv")
    block = [c for c in shown if c.block is not None and c.block == venv.block]
    script = " && ".join(c.text for c in block) + " && pytest exercises -m embedding -q"
    env = _environment()
    env["PATH"] = env["PATH"].split(os.pathsep, 1)[1]  # no .venv of ours: the block makes one
    env.pop("VIRTUAL_ENV")
    done = subprocess.run(["bash", "-c", script], cwd=folder, env=env, text=True,
                          capture_output=True, timeout=1500, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, f"{script}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    assert "not implemented yet" in done.stdout
    torch = subprocess.run([str(folder / ".venv/bin/python"), "-c",
                            "import torch; print(torch.__version__, torch.version.cuda)"],
                           capture_output=True, text=True, timeout=120)
    assert torch.stdout.split() == ["2.13.0+cpu", "None"], torch.stdout + torch.stderr
