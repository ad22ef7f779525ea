"""The learners' exercises/ is generated from lumen/, and stays true to it.

Fresh (the committed files are what ``make stubs`` writes), faithful (every signature,
docstring and line of given code survives), closed (no solution line reaches a learner) and
checkable (the self-check tests pass on lumen, fail with "not implemented yet" on the stubs,
and each stage's tests need only the stages before it).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lumen import stages
from solutions import release

ROOT = release.ROOT
EXERCISES = release.EXERCISES
STUB_FILES = [Path(name) for name in release.STUBBED]


def _definitions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.ClassDef]:
    """Every function and class by qualname (methods as ``Class.name``)."""
    found: dict[str, ast.FunctionDef | ast.ClassDef] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found[prefix + child.name] = child
                nested = "." if isinstance(child, ast.ClassDef) else ".<locals>."
                visit(child, prefix + child.name + nested)

    visit(tree, "")
    return found


def _interface(node: ast.FunctionDef | ast.ClassDef) -> tuple[str, ...]:
    """What a caller and a reader see: signature, decorators, docstring."""
    if isinstance(node, ast.ClassDef):
        head = [ast.dump(b) for b in node.bases]
    else:
        head = [ast.dump(node.args), ast.dump(node.returns) if node.returns else ""]
    decorators = [ast.dump(d) for d in node.decorator_list]
    return (*head, *decorators, ast.get_docstring(node) or "")


def _parse_pair(name: Path) -> tuple[ast.Module, ast.Module]:
    lumen = ast.parse((release.LUMEN / name).read_text(encoding="utf-8"))
    stub = ast.parse((EXERCISES / name).read_text(encoding="utf-8"))
    return lumen, stub


def _owned(module: str) -> dict[str, str]:
    """qualname -> stage, for the functions of ``module`` that learners write."""
    owned = {}
    for s in stages.STAGES:
        for key in s.owns:
            owner_module, qualname = key.split(":")
            if owner_module == module:
                owned[qualname] = s.name
    return owned


# Fresh


def test_committed_exercises_are_fresh():
    stale = release.stale()
    assert not stale, (
        f"exercises/ is stale: {[p.as_posix() for p in stale]} differ from what lumen/ "
        "generates. Run `make stubs` and commit the result (never edit exercises/ by hand)"
    )


def test_a_submission_is_the_handouts_files():
    """``render.submission`` (what the benchmarks and the front ends' tests hand in) is the
    handout's own .py files, for any stages solved."""
    for solved in ([], ["embedding", "params"], list(stages.STAGE_NAMES)):
        handout = release.render(solved)
        assert release.submission(solved) == {Path(n): handout[Path(n)]
                                               for n in stages.SUBMISSION_FILES}
    with pytest.raises(release.ReleaseError, match="unknown stages"):
        release.submission(["embeding"])


def test_exercises_is_what_the_release_writes_and_the_visible_tests():
    """Every file under exercises/ is generated or written by hand, never both, and README's
    Layout says which: the visible tests (and their glue) are the hand-written ones."""
    tracked = subprocess.run(["git", "ls-files", "exercises"], cwd=release.ROOT, check=True,
                             capture_output=True, text=True).stdout.split()
    generated = {path.as_posix() for path in release.render()}
    hand = set(release.HAND_WRITTEN)
    assert not generated & hand
    assert {p.removeprefix("exercises/") for p in tracked} == generated | hand
    layout = (release.ROOT / "README.md").read_text(encoding="utf-8")
    row = next(line for line in layout.splitlines() if line.startswith("| `exercises/` |"))
    assert "**generated**" in row and "**written by hand**" in row
    names = {"test_<stage>.py" if Path(p).name.startswith("test_") else Path(p).name
             for p in hand}
    assert all(name in row for name in names), (names, row)


def test_check_lists_stale_files_and_writes_nothing(tmp_path, capsys):
    target = tmp_path / "exercises"
    assert release.main(["--check", "--target", str(target)]) == 1
    assert "stale" in capsys.readouterr().out
    assert not target.exists(), "--check must not write"
    assert release.main(["--target", str(target)]) == 0
    assert release.main(["--check", "--target", str(target)]) == 0
    (target / "params.py").write_text("# edited by hand\n", encoding="utf-8")
    assert release.main(["--check", "--target", str(target)]) == 1
    assert "params.py" in capsys.readouterr().out


@pytest.mark.parametrize(
    "source, complaint",
    [
        (
            "def f():\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    return 1\n",
            "inside the region",
        ),
        ("def f():\n    return 1\n    ### END SOLUTION\n", "without a"),
        ("def f():\n    ### BEGIN SOLUTION\n    return 1\n", "never closed"),
        ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n", "in no function"),
        ("def helper():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n", "no stage"),
    ],
    ids=["nested", "unopened", "unclosed", "module level", "unowned"],
)
def test_bad_regions_fail_loudly(source, complaint):
    with pytest.raises(release.ReleaseError, match=complaint):
        release.find_regions(source, "params.py")


def test_an_owned_function_without_a_region_fails_loudly():
    source = (release.LUMEN / "params.py").read_text(encoding="utf-8")
    start = source.index('    """Count a GPT-2-style')
    unmarked = source[:start] + source[start:].replace(release.BEGIN, "#", 1).replace(
        release.END, "#", 1
    )
    with pytest.raises(release.ReleaseError, match="count_params belongs to stage 'params'"):
        release.stub(unmarked, "params.py")


# Faithful


@pytest.mark.parametrize("name", STUB_FILES, ids=str)
def test_stubs_keep_every_signature_and_docstring(name):
    lumen, stub = _parse_pair(name)
    assert ast.get_docstring(stub) == ast.get_docstring(lumen), f"{name}: module docstring"
    ours, theirs = _definitions(lumen), _definitions(stub)
    assert sorted(theirs) == sorted(ours), f"{name}: the stubs define other names than lumen"
    for qualname, node in ours.items():
        assert _interface(theirs[qualname]) == _interface(node), (
            f"{name}: {qualname}'s signature, decorators or docstring differ from lumen's"
        )


@pytest.mark.parametrize("name", STUB_FILES, ids=str)
def test_given_code_is_given_verbatim(name):
    lumen, stub = _parse_pair(name)
    owned = _owned(name.stem)
    top = [ast.dump(n) for n in lumen.body if not isinstance(n, ast.FunctionDef | ast.ClassDef)]
    top_stub = [ast.dump(n) for n in stub.body if not isinstance(n, ast.FunctionDef | ast.ClassDef)]
    assert top_stub == top, f"{name}: a module-level statement differs from lumen's"
    ours, theirs = _definitions(lumen), _definitions(stub)
    for qualname, node in ours.items():
        if isinstance(node, ast.FunctionDef) and qualname not in owned:
            assert ast.dump(theirs[qualname]) == ast.dump(node), (
                f"{name}: {qualname} is given code (no stage owns it) but differs from lumen's"
            )


@pytest.mark.parametrize("name", STUB_FILES, ids=str)
def test_every_owned_function_raises_naming_its_stage(name):
    _, stub = _parse_pair(name)
    definitions = _definitions(stub)
    for qualname, stage in _owned(name.stem).items():
        expected = f"{qualname} is not implemented yet (stage '{stage}')"
        raised = [
            node.exc.args[0].value
            for node in ast.walk(definitions[qualname])
            if isinstance(node, ast.Raise)
            and isinstance(node.exc, ast.Call)
            and getattr(node.exc.func, "id", None) == "NotImplementedError"
            and node.exc.args
            and isinstance(node.exc.args[0], ast.Constant)
        ]
        assert raised == [expected], (
            f"{name}: {qualname} should raise {expected!r}, raises {raised}"
        )
        comment = f"# YOUR CODE HERE (stage: {stage})"
        assert comment in ast.get_source_segment(
            (EXERCISES / name).read_text(encoding="utf-8"), definitions[qualname]
        ), f"{name}: {qualname}'s stub lacks {comment!r}"


# Closed


def _region_lines() -> dict[str, str]:
    """Every solution line (stripped) of lumen -> where it is, minus the given code's lines."""
    lines: dict[str, str] = {}
    given: set[str] = set()
    for name in release.STUBBED:
        source = (release.LUMEN / name).read_text(encoding="utf-8").splitlines()
        inside = [False] * len(source)
        for region in release.find_regions("\n".join(source), name):
            for n in range(region.begin, region.end - 1):
                inside[n] = True
                lines.setdefault(source[n].strip(), f"lumen/{name}:{n + 1}")
        given |= {line.strip() for line, solved in zip(source, inside, strict=True) if not solved}
    return {line: where for line, where in lines.items() if line not in given}


def _telling(line: str) -> bool:
    """Worth hiding: three words or more (``return x``, ``)`` and ``else:`` tell nothing)."""
    return len(re.findall(r"\w+", line)) >= 3


def test_no_solution_line_reaches_the_learners():
    handed_out = {
        line.strip(): path.relative_to(ROOT).as_posix()
        for path in sorted(EXERCISES.rglob("*.py"))
        for line in path.read_text(encoding="utf-8").splitlines()
    }
    solution = {line: where for line, where in _region_lines().items() if _telling(line)}
    assert len(solution) > 50, "the leak check found suspiciously few solution lines"
    leaks = [
        f"{where} in {handed_out[line]}: {line}"
        for line, where in solution.items()
        if line in handed_out
    ]
    assert not leaks, "solution lines reached exercises/:\n" + "\n".join(leaks)


def test_the_package_imports_nothing():
    init = ast.parse((EXERCISES / "__init__.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(init) if isinstance(n, ast.Import | ast.ImportFrom)]


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is a dev dependency")
def test_stubbing_adds_no_pyflakes_error():
    # Only the F rules: the stubs may not add an unused import or an undefined name. (The
    # rest of ruff's rules apply to lumen/ itself, and `make lint` checks them there.)
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "F", "--no-cache", "exercises"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# Checkable: the self-check tests, run as a learner runs them.


def test_each_stage_has_one_marked_test_file():
    files = sorted(p.name for p in (EXERCISES / "tests").glob("test_*.py"))
    assert files == sorted(f"test_{name}.py" for name in stages.STAGE_NAMES)
    for name in stages.STAGE_NAMES:
        tree = ast.parse((EXERCISES / "tests" / f"test_{name}.py").read_text(encoding="utf-8"))
        marks = [
            ast.unparse(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "pytestmark"
        ]
        assert marks == [f"pytest.mark.{name}"], f"test_{name}.py should set pytestmark"


def test_impl_comes_from_the_option_then_the_environment():
    from exercises.tests.conftest import impl_package

    assert impl_package(None, {}) == "exercises"
    assert impl_package(None, {"LUMEN_IMPL": "lumen"}) == "lumen"
    assert impl_package("lumen", {"LUMEN_IMPL": "other"}) == "lumen"


def _handout(folder: Path, solved: list[str]) -> Path:
    """An unzipped handout: exercises/ alone, no pyproject, ``solved`` stages filled in."""
    release.write(folder / "exercises", solved)
    shutil.copytree(
        EXERCISES / "tests",
        folder / "exercises" / "tests",
        ignore=shutil.ignore_patterns("__pycache__"),
        dirs_exist_ok=True,  # the release wrote exercises/tests/meta_device.py already
    )
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """The self-check tests as a learner runs them: "lumen", the reference passes; "stubs", a
    handout of untouched stubs fails. Side by side."""
    return _self_checks(tmp_path_factory, {
        "lumen": (["exercises/tests", "--impl=lumen"], ROOT),
        "stubs": (["exercises"], _handout(tmp_path_factory.mktemp("stubs"), [])),
    })


@pytest.fixture(scope="module")
def stage_runs(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """One per stage but the last (whose check is the lumen run): a handout with only the
    stages up to it solved, its tests run (the full tier: five handouts, five pytest runs)."""
    plans = {}
    for i, name in enumerate(stages.STAGE_NAMES[:-1]):
        solved = list(stages.STAGE_NAMES[: i + 1])
        plans[name] = (["exercises", "-m", name], _handout(tmp_path_factory.mktemp(name), solved))
    return _self_checks(tmp_path_factory, plans)


def _self_checks(tmp_path_factory, plans: dict[str, tuple[list[str], Path]]
                 ) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """Each plan (its pytest arguments and folder) run as a learner runs the self-check tests,
    a few at a time: its completed process and its JUnit report."""
    # One thread per run: the runs are many and small, and torch would start a thread per core.
    env = {k: v for k, v in os.environ.items() if k != "LUMEN_IMPL"} | {"OMP_NUM_THREADS": "1"}
    pytest_cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    reports = tmp_path_factory.mktemp("reports")
    waiting = list(plans.items())
    running: dict[str, tuple[subprocess.Popen, Path]] = {}
    results = {}
    while waiting or running:
        while waiting and len(running) < max(2, os.cpu_count() or 1):
            key, (args, cwd) = waiting.pop(0)
            report = reports / f"{key}.xml"
            command = [*pytest_cmd, *args, f"--junitxml={report}"]
            process = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            running[key] = (process, report)
        key = next(iter(running))
        process, report = running.pop(key)
        out, _ = process.communicate(timeout=300)
        results[key] = (subprocess.CompletedProcess(process.args, process.returncode, out), report)
    return results


def _cases(report: Path) -> list[ET.Element]:
    return list(ET.parse(report).getroot().iter("testcase"))


def test_the_self_check_passes_on_lumen(runs):
    done, report = runs["lumen"]
    assert done.returncode == 0, done.stdout[-4000:]
    cases = _cases(report)
    assert len(cases) >= 6 * 4, f"expected at least 4 tests per stage, found {len(cases)}"
    assert not [c for c in cases if c.find("skipped") is not None], "no test may skip on lumen"


#: The line each failure of an unwritten function is, as the handout promises.
NOT_WRITTEN = re.compile(r"not implemented yet: [\w.]+ \(stage '\w+'\)[^\n]*")


def _failure_sections(out: str) -> list[tuple[str, str]]:
    """Each failure pytest printed (its FAILURES section), as (test name, text): what the
    learner reads under each ``____ test_name ____`` header."""
    failures = re.search(r"^=+ FAILURES =+$(.*?)^=+ .* =+$", out, re.M | re.S)
    parts = re.split(r"^_+ (\S.*?) _+$", failures[1] if failures else "", flags=re.M)[1:]
    return [(name, body.strip()) for name, body in zip(parts[::2], parts[1::2], strict=True)]


def test_the_self_check_fails_on_the_untouched_stubs_saying_not_implemented(runs):
    """Every test of every stage fails on the stubs with one line, the handout's
    ``not implemented yet: <function> (stage ...)``, in the JUnit report and on the terminal;
    also a test that expected another error and met the stub's instead. (One run of
    ``pytest exercises``: ``-m <stage>`` only selects among the same tests.)"""
    done, report = runs["stubs"]
    cases = _cases(report)
    assert done.returncode == 1 and cases, done.stdout[-4000:]
    unexplained = [
        f"{c.get('name')}: {ET.tostring(c, encoding='unicode')[:300]}"
        for c in cases
        if c.find("failure") is None
        or not NOT_WRITTEN.fullmatch((c.find("failure").text or "").strip())
    ]
    assert not unexplained, (
        "every test must fail with the one line 'not implemented yet: <function> (stage ...)':"
        "\n" + "\n".join(unexplained))
    printed = _failure_sections(done.stdout)
    assert len(printed) == len(cases), f"{len(printed)} failures printed of {len(cases)}"
    long = [f"{name}:\n{body}" for name, body in printed if not NOT_WRITTEN.fullmatch(body)]
    assert not long, f"{len(long)} failures print more than the one line, the first:\n" + (
        long[0][:3000] if long else "")


@pytest.mark.parametrize("stage", stages.STAGE_NAMES[:-1])
def test_each_stage_needs_only_the_stages_before_it(stage_runs, stage):
    """A handout with the stages up to ``stage`` solved passes that stage's own tests: no
    test needs a later stage's code."""
    done, report = stage_runs[stage]
    assert done.returncode == 0 and _cases(report), (
        f"with stages up to '{stage}' solved and later ones stubbed, `pytest exercises -m {stage}` "
        f"should pass in a handout folder:\n{done.stdout[-4000:]}"
    )


def test_regenerating_never_silently_overwrites_a_learners_edits(tmp_path, capsys):
    """A learner's work in the stubs is refused with the file named; --force keeps a backup;
    files the generator wrote itself are regenerated without a word."""
    from solutions import release

    target = tmp_path / "exercises"
    release.write(target)
    mine = target / "embeddings.py"
    mine.write_text(mine.read_text() + "\n# my own work\n")
    before = (target / "params.py").read_text()
    (target / "params.py").write_text(before)  # untouched content: not an edit
    with pytest.raises(release.ReleaseError, match=r"holds edits \(embeddings.py\)"):
        release.write(target)
    assert "# my own work" in mine.read_text(), "refused: nothing was written"
    release.write(target, force=True)
    assert "# my own work" not in mine.read_text()
    backups = list(target.glob(".backup-*/embeddings.py"))
    assert backups and "# my own work" in backups[0].read_text()
    assert "kept your edited files in" in capsys.readouterr().out
    assert release.edited(target) == []


def test_make_release_refuses_edits_saying_how_to_keep_or_drop_them(tmp_path):
    """`make release` (python -m solutions.release) on an exercises/ with a learner's edits, in
    a scratch copy of the repository: refused in the handout's words, with the command
    docs/changing-the-assignment.md names (make release FORCE=1), where the backup goes and how
    to drop the edits."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", ".hypothesis", ".ruff_cache", "build", ".backup-*"))
    mine = repo / "exercises" / "embeddings.py"
    mine.write_text(mine.read_text(encoding="utf-8") + "\n# my own work\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "solutions.release"], cwd=repo,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: exercises/ holds edits (embeddings.py), and "
                                  "regenerating would overwrite them: "), done.stderr
    for told in ("commit or copy them elsewhere", "`make release FORCE=1`",
                 "a backup of each in exercises/.backup-<time>/",
                 "undo them with `git checkout -- exercises/`"):
        assert told in done.stderr, (told, done.stderr)
    assert "make stubs" not in done.stderr and "# my own work" in mine.read_text()


def test_pip_install_editable_leaves_nothing_untracked(tmp_path):
    """`pip install -e .` (docs/learners.md, "The chapter, live") writes its egg-info and
    build/ only where .gitignore ignores them: a clone's `git status` stays clean."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")  # as this checkout has it now
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam",
                    "this checkout's ignores", "--allow-empty"], cwd=repo, check=True)
    venv = tmp_path / "venv"
    subprocess.run([str((ROOT / ".venv" / "bin" / "python").resolve()), "-m", "venv",
                    "--system-site-packages", "--without-pip", str(venv)], check=True)
    # --system-site-packages sees the base Python's packages, not .venv's: link those in, so
    # pip and setuptools are the pinned environment's (its own would be ensurepip's old ones)
    ours = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_path("
                           "'purelib'))"], capture_output=True, text=True, check=True).stdout
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print("
                           "sysconfig.get_path('purelib'))"], capture_output=True, text=True,
                          check=True).stdout.strip()
    Path(site, "lumen_venv.pth").write_text(ours)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                                "-e", ".", "--no-deps", "--no-build-isolation"], cwd=repo,
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    # What an older setuptools (or pip's fallback, `setup.py develop`) writes into the
    # project itself, whichever setuptools this environment pins: <name>.egg-info/, build/
    legacy = subprocess.run([str(venv / "bin" / "python"), "-c", "from setuptools import "
                             "setup; setup()", "-q", "egg_info", "build"], cwd=repo,
                            capture_output=True, text=True, timeout=600)
    assert legacy.returncode == 0, legacy.stdout + legacy.stderr
    assert list(repo.glob("*.egg-info")), "setuptools' egg_info wrote no egg-info here"
    status = subprocess.run(["git", "status", "--porcelain", "--ignored=no"], cwd=repo,
                            capture_output=True, text=True, check=True).stdout
    assert status == "", f"pip install -e . left untracked files:\n{status}"


def test_counted_nouns_agree_with_their_number():
    from autograder.words import counted

    assert [counted(n, "notebook") for n in (0, 1, 2, 1234)] == [
        "0 notebooks", "1 notebook", "2 notebooks", "1,234 notebooks"]
    assert counted(1, "entry", "entries") == "1 entry" and counted(2.5, "point") == "2.5 points"
    assert counted(1.0, "point") == "1 point"


def test_the_release_writes_the_rubrics_points_into_the_notebook():
    """A notebook whose points disagree with rubric.toml is rewritten, not refused: metadata
    and the "N points" of the text; only cells the rubric does not match are refused."""
    import copy

    import nbformat

    from autograder.publish import notebook
    from autograder.rubric import load

    source = nbformat.read(notebook.SOURCE, as_version=4)
    wrong = copy.deepcopy(source)
    cells = notebook.nbgrader_cells(wrong)
    full = load().stage_max("tying")
    cells["stage_tying"].metadata.nbgrader["points"] = full - 1
    cells["stage_tying"].source = cells["stage_tying"].source.replace(f"{full:g} points",
                                                                      f"{full - 1:g} points")
    cells["written-tsne_question"].source = cells["written-tsne_question"].source.replace(
        "(5 points)", "(1 point)")
    with pytest.raises(notebook.NotebookError,
                       match=f"stage_tying: {full - 1} points.*make release"):
        notebook.check_points(wrong)
    fixed = notebook.with_points(wrong)
    assert nbformat.writes(fixed) == nbformat.writes(source)
    assert notebook.nbgrader_cells(fixed)["stage_tying"].metadata.nbgrader["points"] == \
        load().stage_max("tying")
    del notebook.nbgrader_cells(wrong)["written-tsne"].metadata["nbgrader"]
    with pytest.raises(notebook.NotebookError, match="written-tsne: no graded cell.*rubric.toml"):
        notebook.with_points(wrong)


@pytest.mark.parametrize("stage", ["tying", "init"])  # one in the middle, the last
def test_the_release_writes_the_cells_of_a_stage_the_notebook_lacks(stage):
    """A stage of lumen/stages.py without cells in the notebook gets them from the release:
    its check cell (the text and points another stage's would have) and an introduction that
    says SKELETON, before the next stage's introduction; the result passes check_points."""
    import copy

    import nbformat

    from autograder.publish import notebook
    from lumen.stages import STAGE_NAMES

    source = nbformat.read(notebook.SOURCE, as_version=4)
    lacking = copy.deepcopy(source)
    lacking.cells = [c for c in lacking.cells if c.get("id") not in
                     (f"{stage}-intro", f"{stage}-try", f"stage-{stage}")]
    restored = notebook.with_points(lacking)
    notebook.check_points(restored)
    was, now = notebook.nbgrader_cells(source), notebook.nbgrader_cells(restored)
    assert now[f"stage_{stage}"].source == was[f"stage_{stage}"].source
    assert now[f"stage_{stage}"].metadata == was[f"stage_{stage}"].metadata
    assert f"SKELETON (stage {stage})" in now[f"{stage}_intro"].source
    ids = [c.get("id") for c in restored.cells]
    at = ids.index(f"{stage}-intro")
    assert ids[at + 1] == f"stage-{stage}"
    following = STAGE_NAMES[STAGE_NAMES.index(stage) + 1:]
    if following:  # before the next stage's introduction, else at the end
        assert ids[at + 2] == f"{following[0]}-intro"
    else:
        assert at + 2 == len(ids)
    assert nbformat.writes(notebook.with_points(restored)) == nbformat.writes(restored)


def test_the_stage_lists_outside_lumen_are_written_from_it(tmp_path):
    """README's and the handout's stage tables and pyproject's markers are the release's: fresh
    in the tree, rewritten when a stage changes, and a file that lost its markers is named."""
    from solutions import stage_tables

    assert stage_tables.stale() == []
    for name in stage_tables.BLOCKS:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(release.ROOT / name, tmp_path / name)
    readme = tmp_path / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("| `tying` |", "| `tied` |"),
                      encoding="utf-8")
    assert stage_tables.stale(tmp_path) == [readme]
    assert stage_tables.write(tmp_path) == [readme] and stage_tables.stale(tmp_path) == []
    assert readme.read_text(encoding="utf-8") == (release.ROOT / "README.md").read_text("utf-8")
    begin = stage_tables.BLOCKS["README.md"][0]
    readme.write_text(readme.read_text(encoding="utf-8").replace(begin, ""), encoding="utf-8")
    with pytest.raises(stage_tables.TableError, match="README.md: expected the lines"):
        stage_tables.stale(tmp_path)
