"""The Gradescope autograder zip: what it holds, and run_autograder run as Gradescope would.

A temporary folder is laid out like Gradescope's /autograder (source/ from the zip,
submission/, results/) and run_autograder runs against it through AUTOGRADER_ROOT, with this
repository's interpreter (LUMEN_PYTHON) instead of the one setup.sh would install.

Hidden means hidden: results.json is read as a learner sees it before the due date, after it
and once grades are published (``learner_view``, Gradescope's visibility rules), and no hidden
test's title, message or printed output may show before its time.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from autograder.boundary.launcher import GRADER
from autograder.frontends import gradescope
from autograder.results import Grade, StageGrade, TestResult
from autograder.views import report
from lumen.stages import STAGE_NAMES, SUBMISSION_FILES
from tests.helpers import full_marks
from tests.variants.build import make_submission

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
                   "autograder/sandboxed/worker.py", "autograder/sandboxed/loader.py",
                   "autograder/sandboxed/probes/tying.py", "lumen/embeddings.py",
                   "autograder/publish/stubber.py", gradescope.GRADER_REQUIREMENTS):
        assert needed in names, f"{needed} is missing from the autograder zip"
    assert modes["setup.sh"] & stat.S_IXUSR and modes["run_autograder"] & stat.S_IXUSR
    assert not [n for n in names if n.startswith(("tests/", "exercises/", ".venv/"))]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert 'TORCH="${TORCH:-torch==2.13.0}"' in setup  # pinned, and overridable
    assert f"-r {gradescope.GRADER_REQUIREMENTS}" in setup and "bubblewrap" in setup
    assert "requirements.txt" not in names, "make setup's whole environment: not the grader's"
    subprocess.run(["bash", "-n", "-c", setup], check=True)  # it parses


def test_the_built_zip_installs_torchs_cpu_build_by_default(tmp_path):
    """PyPI's Linux torch is the CUDA build (several GB the grader never uses): the zip that
    `make gradescope` builds installs the pinned torch from PyTorch's CPU wheel index."""
    out = tmp_path / "autograder.zip"
    done = subprocess.run([sys.executable, "-m", "autograder.frontends.gradescope", "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(out) as archive:
        setup = archive.read("setup.sh").decode()
    assert f'TORCH="${{TORCH:-{gradescope.CPU_TORCH}}}"' in setup
    assert gradescope.CPU_TORCH.endswith("--index-url https://download.pytorch.org/whl/cpu")


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to trace the grade")
def test_the_zip_holds_exactly_what_a_grade_reads(autograder_zip, tmp_path):
    """run_autograder grades lumen from the unpacked zip under strace, following every process
    (the grader's, pytest's and the sandbox's, where source/autograder/sandboxed/ is seen as
    /grader): the files it opened from source/ are exactly the zip's, less the scripts and
    setup.sh's requirements-grader.txt. Without bytecode caches, every module imported is opened."""
    root = _gradescope_root(autograder_zip, tmp_path)
    log = tmp_path / "trace.txt"
    env = {**_run_env(root), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(["strace", "-f", "--seccomp-bpf", "-z", "-qq", "-e", "signal=none",
                           "-e", "trace=open,openat,openat2,execve", "-o", str(log),
                           str(root / "source" / "run_autograder")],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((root / "results" / "results.json").read_text())["score"] == 100
    source = (root / "source").resolve()
    grader = PurePosixPath(GRADER)
    opened = set()
    for path in re.findall(r'(?:open|openat|openat2|execve)\((?:AT_FDCWD, )?"([^"]+)"',
                           log.read_text(errors="replace")):
        path = PurePosixPath(path)
        if path.is_relative_to(grader):  # the sandbox's view of autograder/sandboxed/
            path = source / "autograder" / "sandboxed" / path.relative_to(grader)
        elif not path.is_absolute():
            path = source / path
        if Path(path).is_relative_to(source) and Path(path).is_file():
            opened.add(Path(path).relative_to(source).as_posix())
    with zipfile.ZipFile(autograder_zip) as archive:
        shipped = set(archive.namelist()) - {"setup.sh", "run_autograder", *gradescope.SETUP}
    opened -= {"run_autograder"}
    assert opened == shipped, (f"read but not in the zip: {sorted(opened - shipped)}; in the zip "
                               f"but never read: {sorted(shipped - opened)}")


def test_zip_ships_nothing_grading_does_not_need(autograder_zip):
    """Learner code cannot read the zip (it runs in bubblewrap), and the zip holds nothing it
    could use if it did but what grading needs: no course source, handout or dev tools."""
    with zipfile.ZipFile(autograder_zip) as archive:
        names = set(archive.namelist())
    for unneeded in ("solutions/", "autograder/publish/handout.py", "autograder/publish/zips.py",
                     "autograder/publish/render.py", "autograder/publish/notebook.py",
                     "requirements.txt", "requirements-dev.txt", "handout/", "tools/",
                     "benchmarks/", "Makefile",
                     "README.md", ".github/"):
        assert not [n for n in names if n == unneeded or n.startswith(unneeded)], unneeded
    publish = {n for n in names if n.startswith("autograder/publish/")}
    assert publish == {"autograder/publish/__init__.py", "autograder/publish/stubber.py"}  # the
    # stub maker alone of the release


def _fake_programs(folder: Path, programs: dict[str, str]) -> str:
    """A PATH of only ``programs`` (name -> shell body) and dirname: no real bwrap or apt."""
    folder.mkdir()
    for name, body in {**programs, "dirname": 'exec /usr/bin/dirname "$@"'}.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    return str(folder)


@pytest.mark.parametrize("programs, says", [
    ({"apt-get": "exit 100"}, "could not be installed"),
    ({"apt-get": "exit 0",
      "bwrap": "echo 'bwrap: No permissions to creating new namespace' >&2; exit 1"},
     "cannot start a sandbox"),
])
def test_setup_fails_the_build_without_a_working_bubblewrap(autograder_zip, tmp_path, programs,
                                                            says):
    """Gradescope shows a failed build, not an image that would grade without the sandbox:
    setup.sh stops before installing anything else."""
    _unpack(autograder_zip, tmp_path / "source")
    path = _fake_programs(tmp_path / "bin",
                          {**programs, "python3": "echo ran >> ../python; exit 1"})
    done = subprocess.run(["/bin/bash", str(tmp_path / "source" / "setup.sh")],
                          env={"PATH": path}, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert says in done.stderr and "learner code runs only inside it" in done.stderr
    assert not (tmp_path / "python").exists(), "it went on to install python's packages"


def test_setup_probes_bubblewrap_as_the_grader_does(autograder_zip):
    from autograder.boundary.launcher import PROBE

    with zipfile.ZipFile(autograder_zip) as archive:
        setup = archive.read("setup.sh").decode()
    assert f"if ! bwrap {shlex.join(PROBE)}; then" in setup
    assert "|| true" not in setup.split("bubblewrap || true")[1].split("python3-venv")[0]
    with zipfile.ZipFile(autograder_zip) as archive:
        run = archive.read("run_autograder").decode()
    assert "unsafe" not in run and "--sandbox" not in run  # the grader's default: bwrap


def test_run_autograder_without_a_sandbox_tells_the_learner_plainly(autograder_zip, tmp_path):
    """A grader that cannot run (here: a bwrap that cannot start) grades nothing; the learner
    reads that it failed on the grader's side, and nothing of the grader; the reason goes to
    stdout, for instructors."""
    root = tmp_path / "autograder"
    _unpack(autograder_zip, root / "source")
    make_submission(root / "submission", {})
    (root / "results").mkdir()
    (root / "results" / "results.json").write_text('{"score": 100}')  # never kept
    fake = _fake_programs(tmp_path / "bin", {"bwrap": "echo 'bwrap: setting up uid map: "
                                             "Permission denied' >&2; exit 1"})
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "LUMEN_PYTHON": sys.executable,
           "PATH": f"{fake}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "apt-get install bubblewrap" in done.stdout and "Permission denied" in done.stdout
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert results["output"] == gradescope.GRADER_FAILED and results["tests"] == []
    assert results["stdout_visibility"] == "hidden"
    for moment in MOMENTS:
        seen = json.dumps(learner_view(results, moment)).lower()
        for internal in ("bwrap", "bubblewrap", "sandbox", "traceback", "error:", str(root)):
            assert internal.lower() not in seen, (moment, internal)


FAKE_GRADERS = {
    # what `python -m autograder grade ... --out FILE` does instead of grading
    "hangs": ("sleep 60", 124, "LUMEN_TIME_LIMIT=2"),
    "writes NaN and exits 0": ('printf \'{"score": NaN, "tests": []}\' > "$out"', 2,
                               "no valid results.json"),
    "writes half a file and exits 0": ('printf \'{"score": 10, "tes\' > "$out"', 2,
                                       "no valid results.json"),
    "is killed mid-grade": ('printf \'{"score": 100, "tests": []}\' > "$out"; kill -9 $$', 137,
                            "the grader was killed"),
}


@pytest.mark.parametrize("case", list(FAKE_GRADERS))
def test_run_autograder_leaves_a_clear_failure_whatever_the_grader_does(autograder_zip,
                                                                        tmp_path, case):
    """A grader that hangs, is killed, or writes what Gradescope cannot read leaves the learner
    GRADER_FAILED in results.json (never Gradescope's generic failure, never the half-written
    file), and instructors the reason on stdout."""
    body, status, said = FAKE_GRADERS[case]
    root = tmp_path / "autograder"
    _unpack(autograder_zip, root / "source")
    make_submission(root / "submission", {})
    python = tmp_path / "python"  # the real interpreter, except for the grade itself
    python.write_text(f"""#!/usr/bin/env bash
if [ "$1 $2 $3" = "-m autograder grade" ]; then
    while [ "$#" -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done
    {body}
    exit 0
fi
exec {sys.executable} "$@"
""")
    python.chmod(0o755)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "LUMEN_PYTHON": str(python),
           "LUMEN_TIME_LIMIT": "2"}
    done = subprocess.run([str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == status, done.stdout
    assert said in done.stdout, done.stdout
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert results == json.loads(gradescope.failed_results())
    assert sorted(p.name for p in (root / "results").iterdir()) == ["results.json"]


def test_make_gradescope_passes_the_visibility(tmp_path):
    """`make gradescope VISIBILITY=...` builds a run_autograder with that visibility."""
    done = subprocess.run(["make", "-n", "gradescope", "VISIBILITY=hidden"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    recipe = done.stdout.replace("\\\n", " ")  # the recipe's lines joined, as the shell does
    (line,) = [c for c in recipe.splitlines() if "-m autograder.frontends.gradescope" in c]
    argv = shlex.split(line.replace("build/autograder.zip", str(tmp_path / "a.zip")))
    subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, check=True, capture_output=True,
                   timeout=120)
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        assert "--visibility hidden" in archive.read("run_autograder").decode()


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


def _gradescope_root(autograder_zip: Path, tmp_path: Path) -> Path:
    """A folder laid out as Gradescope's /autograder: source/ from the zip, lumen's files as
    the submission (uploaded inside a folder), an empty results/."""
    root = tmp_path / "autograder"
    _unpack(autograder_zip, root / "source")
    (root / "submission" / "exercises").mkdir(parents=True)  # as uploaded: inside a folder
    for name in SUBMISSION_FILES:
        text = (ROOT / "lumen" / name).read_text(encoding="utf-8")
        (root / "submission" / "exercises" / name).write_text(text, encoding="utf-8")
    (root / "results").mkdir()
    return root


def _run_env(root: Path) -> dict[str, str]:
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "LUMEN_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)  # the grader must come from source/, not this checkout
    return env


def test_run_autograder_grades_lumen(autograder_zip, tmp_path):
    root = _gradescope_root(autograder_zip, tmp_path)
    env = _run_env(root)
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


# --- hidden means hidden ---------------------------------------------------------------------

#: The moments a learner may look, in order; each shows what the one before did, and more.
MOMENTS = ("before the due date", "after the due date", "once grades are published")


def shown(visibility: str, moment: str) -> bool:
    """Gradescope's rule for one visibility setting (its autograder specifications, "Controlling
    test case visibility"): hidden never, after_due_date once the due date has passed,
    after_published once the grades are published (after the due date here), visible always."""
    return {"hidden": False, "visible": True,
            "after_due_date": moment != MOMENTS[0],
            "after_published": moment == MOMENTS[2]}[visibility]


def learner_view(results: dict, moment: str) -> dict:
    """What a learner sees of ``results`` at ``moment``, on Gradescope's rules, taking the worst
    case wherever the specifications leave room:

    - a test entry (name, output, score) is shown by its own visibility, else the top level's,
      else "visible";
    - the total score only when no test that is held back for now counts (tests whose
      visibility is "hidden" do not hide it: they are meant to be worth nothing);
    - stdout by stdout_visibility (default: instructors only);
    - the top-level output always and at once (the specifications do not say the top-level
      visibility hides it, so a summary must be safe to show at any time);
    - extra_data never (it is stored for instructors).
    """
    default = results.get("visibility", "visible")
    tests = [t for t in results["tests"] if shown(t.get("visibility", default), moment)]
    held_back = [t for t in results["tests"] if t.get("visibility", default) != "hidden"
                 and not shown(t.get("visibility", default), moment)]
    view = {"output": results.get("output", ""), "tests": tests}
    if not held_back:
        view["score"] = results.get("score")
    if shown(results.get("stdout_visibility", "hidden"), moment):
        view["stdout"] = "<whatever run_autograder printed: the whole report>"
    return view


def _windows(text: str, size: int = 40, step: int = 10) -> list[str]:
    """Pieces of ``text``: none of them may show, so neither may any long part of it."""
    text = text.strip()
    if len(text) <= size:
        return [text] if text else []
    return [text[i : i + size] for i in range(0, len(text) - size + 1, step)]


def assert_nothing_hidden_shows(results: dict, printed: list[str]) -> None:
    """At every moment, no test entry the learner may not see yet leaks its title, its message
    or what the learner's code printed into what they do see; and each shows in its time."""
    default = results.get("visibility", "visible")
    for moment in MOMENTS:
        view = learner_view(results, moment)
        seen = "\n".join([view["output"], view.get("stdout", ""),
                          *(f"{t['name']}\n{t.get('output', '')}" for t in view["tests"])])
        for test in results["tests"]:
            if shown(test.get("visibility", default), moment):
                assert test in view["tests"]
                continue
            title = test["name"].split(": ", 1)[1]
            secrets = [title, *_windows(test["output"])]
            leaked = [piece for piece in secrets if piece in seen]
            assert not leaked, f"{moment}, hidden {test['name']!r} shows: {leaked[:3]}"
        for text in printed:
            hidden_output = [t for t in results["tests"] if text in t["output"]
                             and not shown(t.get("visibility", default), moment)]
            if hidden_output:
                assert text not in seen, f"{moment}: the printed {text!r} shows"


def _grade() -> Grade:
    """A grade with a failing check that printed, a passing one and a stage at the stubs."""
    failing = TestResult(name="test_lookup_every_shape", stage="embedding",
                         title="Every id becomes one row, whatever the shape", passed=False,
                         message="Embedding(23, 5) on a single id: output shape (1, 5), "
                                 "expected (5,) = ids.shape + (d_model,): one row per id",
                         output="SECRET PRINTED BY THE LEARNER\n")
    passing = TestResult(name="test_weight_is_a_parameter", stage="embedding",
                         title="The table is an nn.Parameter of shape (V, d)", passed=True)
    stub = TestResult(name="test_parameter_count", stage="tying",
                      title="Tied weights are counted once", passed=False,
                      message="GPT2.tie_weights is not implemented yet", not_implemented=True)
    return Grade(submission="/home/instructor/class/alice.zip",
                 stages=[StageGrade("embedding", 3.0, 8.0, [(passing, 3.0, 3.0),
                                                            (failing, 0.0, 5.0)]),
                         StageGrade("tying", 0.0, 10.0, [(stub, 0.0, 10.0)])],
                 seed=7, devices=["cpu"], sandbox="bwrap", seconds=1.5)


@pytest.mark.parametrize("visibility", gradescope.VISIBILITIES)
def test_the_summary_reveals_no_more_than_the_tests(visibility):
    """Whatever the tests' visibility, the top-level output (shown at once) holds the stage
    scores and no hidden test's title, message or printed output."""
    results = json.loads(json.dumps(report.gradescope(_grade(), visibility)))
    assert_nothing_hidden_shows(results, ["SECRET PRINTED BY THE LEARNER"])
    output = results["output"]
    assert "embedding" in output and "3.0 / 8" in output, "the stage scores are shown at once"
    assert "/home/instructor" not in output, "the submission's name, not the grader's path"
    if visibility != "visible":
        assert "SECRET PRINTED" not in output and "shape" not in output
    assert results["stdout_visibility"] == "hidden", "stdout holds the whole report"


def test_the_model_shows_each_hidden_test_in_its_time():
    """The model itself: an after_due_date test is seen after the due date, not before."""
    results = report.gradescope(_grade(), "after_due_date")
    before, after = (learner_view(results, moment) for moment in MOMENTS[:2])
    assert before["tests"] == [] and "score" not in before
    assert len(after["tests"]) == 3 and after["score"] == 3.0
    assert "SECRET PRINTED" in json.dumps(after)


def test_run_autograder_keeps_hidden_tests_hidden(autograder_zip, tmp_path):
    """Graded by run_autograder as on Gradescope: a submission whose forward prints and fails.
    Before the due date the learner sees the stage scores and nothing of the hidden tests."""
    root = tmp_path / "autograder"
    _unpack(autograder_zip, root / "source")
    make_submission(root / "submission", {"embeddings:Embedding.forward": '''
        def forward(self, ids):
            print("SECRET PRINTED BY THE LEARNER")
            check_ids(ids, self.vocab_size)
            return self.weight[ids.reshape(-1).long()]
    '''})
    (root / "results").mkdir()
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "LUMEN_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(root / "source" / "run_autograder"), "--stage", "embedding"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    failed = [t for t in results["tests"] if t["status"] == "failed"]
    assert failed and any("SECRET PRINTED" in t["output"] for t in failed), results["tests"]
    assert "What to fix first" in done.stdout, "the whole report still goes to stdout"
    assert_nothing_hidden_shows(results, ["SECRET PRINTED BY THE LEARNER"])
    assert "embedding" in results["output"] and f"/ {full_marks('embedding')}" in results["output"]
    assert str(root) not in results["output"]
