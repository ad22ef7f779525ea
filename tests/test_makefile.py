"""The Makefile, run by make as a user runs it: which torch it installs and when.

Nothing is installed: each run points ``VENV`` at a scratch folder whose ``bin/python`` is a
stand-in that records its arguments (``pip install`` among them) and answers the torch
version the test gives it.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.frontends import gradescope

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")

FAKE_PYTHON = """\
#!/bin/sh
here="$(dirname "$0")/.."
printf '%s\\n' "$*" >> "$here/calls"
if [ "$1" = -c ]; then cat "$here/torch-version" 2>/dev/null || exit 1; fi
"""


def make(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-f", str(ROOT / "Makefile"), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=60)


def make_variable(name: str) -> str:
    """The value make gives ``name`` in this Makefile, on a fresh clone (no .venv/.torch)."""
    done = make("-s", "VENV=/nonexistent", f"--eval=show-it: ; @echo '$({name})'", "show-it")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def fake_venv(folder: Path, stamp: str | None, torch_version: str | None) -> Path:
    """A VENV that make takes as created (.python) with ``stamp`` in .torch (None: none) and a
    python that says torch is ``torch_version`` (None: torch is not installed)."""
    python = folder / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    (folder / ".python").touch()
    if stamp is not None:
        (folder / ".torch").write_text(stamp + "\n")
    if torch_version is not None:
        (folder / "torch-version").write_text(torch_version + "\n")
    return folder


def stamp_torch(venv: Path, *args: str) -> list[str]:
    """Run make's .venv/.torch step (what every setup runs first); the pip installs it ran."""
    calls = venv / "calls"
    calls.unlink(missing_ok=True)
    done = make(f"VENV={venv}", f"PYTHON={sys.executable}", *args, f"{venv}/.torch")
    assert done.returncode == 0, done.stdout + done.stderr
    return [c for c in (calls.read_text().splitlines() if calls.exists() else []) if "pip" in c]


def test_the_default_torch_is_the_cpu_build_every_front_end_installs():
    """One torch for every install: the Makefile's default is gradescope.CPU_TORCH's text (the
    Gradescope zip's, PrairieLearn's, Classroom's), the pinned torch from the CPU wheel index."""
    assert make_variable("TORCH_DEFAULT") == gradescope.CPU_TORCH
    assert make_variable("TORCH") == gradescope.CPU_TORCH  # no .venv/.torch yet
    assert gradescope.CPU_TORCH == f"{gradescope.DEFAULT_TORCH} --index-url {gradescope.CPU_INDEX}"
    assert gradescope.CPU_INDEX == "https://download.pytorch.org/whl/cpu"


def test_a_fresh_venv_installs_the_cpu_build(tmp_path):
    venv = fake_venv(tmp_path / "venv", stamp=None, torch_version=None)
    assert stamp_torch(venv) == [f"-m pip install -q --force-reinstall {gradescope.CPU_TORCH}"]
    assert (venv / ".torch").read_text().strip() == gradescope.CPU_TORCH
    assert stamp_torch(venv) == [], "stamped: no second install"


def test_the_former_default_moves_to_the_cpu_build_without_reinstalling_it(tmp_path):
    """A .venv stamped with the former default, plain torch==2.13.0, that holds the CPU build
    is only restamped; one holding PyPI's CUDA build (version without +cpu) is reinstalled
    from the CPU index once, and never again."""
    former = gradescope.DEFAULT_TORCH
    venv = fake_venv(tmp_path / "cpu", stamp=former, torch_version="2.13.0+cpu")
    assert stamp_torch(venv) == []
    assert (venv / ".torch").read_text().strip() == gradescope.CPU_TORCH
    venv = fake_venv(tmp_path / "cuda", stamp=former, torch_version="2.13.0")
    assert stamp_torch(venv) == [f"-m pip install -q --force-reinstall {gradescope.CPU_TORCH}"]
    assert stamp_torch(venv) == [], "no reinstall loop"


def test_a_chosen_torch_is_kept_and_a_new_one_installed_once(tmp_path):
    cuda = CUDA_TORCH
    venv = fake_venv(tmp_path / "venv", stamp=cuda, torch_version="2.13.0+cu130")
    assert stamp_torch(venv) == [], "a GPU runner's choice is kept by later commands"
    assert (venv / ".torch").read_text().strip() == cuda
    plain = gradescope.DEFAULT_TORCH  # asked for on the command line: as asked, even the former
    assert stamp_torch(venv, f"TORCH={plain}") == [f"-m pip install -q --force-reinstall {plain}"]
    assert (venv / ".torch").read_text().strip() == plain
    assert stamp_torch(venv, f"TORCH={plain}") == []


def test_make_gradescope_builds_with_the_cpu_build():
    done = make("-n", "gradescope", "VENV=/nonexistent")
    [argv] = [a for a in _commands(done.stdout) if "autograder.frontends.gradescope" in a]
    assert argv[argv.index("--torch") + 1] == gradescope.CPU_TORCH


#: What a user passes that the Makefile hands to a command: (target, variable, its flag or None
#: for a positional argument). Each value must arrive as one argument, exactly as given.
PASSED_ON = [
    ("grade", "SUBMISSION", None), ("grade-cuda", "SUBMISSION", None),
    ("grade", "SANDBOX", "--sandbox"), ("nbgrade", "SUBMISSIONS", None),
    ("nbgrade", "DUE", "--due"), ("nbgrade", "LATE_PENALTY", "--late-penalty"),
    ("gradescope", "VISIBILITY", "--visibility"), ("gradescope", "TORCH", "--torch"),
    ("prairielearn", "IMAGE", "--image"), ("prairielearn", "PL_VISIBILITY", "--visibility"),
    ("prairielearn", "PL_TORCH", "--torch"), ("classroom", "GRADER_REPO", "--grader-repository"),
]
AWKWARD = "Ann's \"final\" try (2).zip"  # spaces, both quotes, parentheses
CUDA_TORCH = f"{gradescope.DEFAULT_TORCH} --index-url https://download.pytorch.org/whl/cu130"


def _commands(text: str) -> list[list[str]]:
    """The shell commands `make -n` printed, each split as the shell will split it."""
    return [shlex.split(line) for line in text.replace("\\\n", " ").splitlines()
            if line.strip() and not line.startswith("make")]


@pytest.mark.parametrize("target, variable, flag", PASSED_ON,
                         ids=[f"{t}-{v}" for t, v, _ in PASSED_ON])
def test_a_value_with_spaces_and_quotes_reaches_the_command_as_one_argument(target, variable,
                                                                            flag):
    # TORCH also goes to pip as words (a requirement and its options): no quotes in it
    value = CUDA_TORCH if variable == "TORCH" else AWKWARD
    done = make("-n", target, f"{variable}={value}", "VENV=/nonexistent")
    assert done.returncode == 0, done.stderr
    commands = [a for a in _commands(done.stdout) if a[:1] == ["/nonexistent/bin/python"]
                and "pip" not in a]
    given = [a for a in commands if (flag in a if flag else value in a)]
    assert given, commands
    for argv in given:
        assert argv[argv.index(flag) + 1] == value if flag else value in argv, argv


def _stamped_venv(folder: Path) -> Path:
    """A VENV that make finds set up (stamped, newer than the requirements): this checkout's
    .venv seen through links, so make installs nothing and the real interpreter grades."""
    real = (ROOT / ".venv").resolve()
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").symlink_to((real / "bin" / "python").resolve())
    (folder / "lib").symlink_to(real / "lib")
    (folder / "pyvenv.cfg").write_text((real / "pyvenv.cfg").read_text())
    for stamp in (".python", ".torch", ".grading"):
        (folder / stamp).write_text(gradescope.CPU_TORCH + "\n" if stamp == ".torch" else "")
    return folder


def test_make_grade_grades_a_zip_whose_name_has_spaces(tmp_path):
    """`make grade SUBMISSION="a name with spaces.zip"`, really run: the grader reads the zip."""
    import zipfile

    from lumen.stages import SUBMISSION_FILES

    folder = tmp_path / "the class's submissions"
    folder.mkdir()
    submission = folder / "a name with spaces.zip"
    with zipfile.ZipFile(submission, "w") as archive:
        for name in SUBMISSION_FILES:
            archive.write(ROOT / "lumen" / name, name)
    venv = _stamped_venv(tmp_path / "venv")
    # unsafe-process: bubblewrap shows learner code the venv's folders, not its links' targets
    done = make("grade", f"SUBMISSION={submission}", f"VENV={venv}", "SANDBOX=unsafe-process")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "pip" not in done.stdout, "it installed: the stamped venv was not taken as set up"
    assert "100.0 / 100" in done.stdout, done.stdout[-3000:]


def _declared_targets() -> dict[str, str]:
    """Every named target the Makefile declares, in order, with its ``##`` text ('' if none)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return {m[1]: (m[2] or "").strip()
            for m in re.finditer(r"^([a-z][\w-]*):[^=\n]*?(?:##(.*))?$", text, re.M)}


def test_make_help_lists_every_target_with_what_it_does():
    """`make help` (and `make` alone, which only lists) names every target the Makefile
    declares, each with its ## text: a target added without one fails here."""
    targets = _declared_targets()
    assert {"help", "grade", "test", "lint", "clean"} <= set(targets)
    assert not [t for t, says in targets.items() if not says], "targets without ## text"
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    phony = {name for line in re.findall(r"^\.PHONY:((?:.*\\\n)*.*)", text, re.M)
             for name in line.replace("\\\n", " ").split()} - {"FORCE"}
    assert phony == set(targets), "every target is .PHONY, and .PHONY names only targets"
    for goal in (["help"], []):
        done = make("-s", *goal, "VENV=/nonexistent")
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        for target, says in targets.items():
            [line] = [line for line in lines if line.split()[1:2] == [target]]
            assert line.split(None, 2)[::2] == ["make", says], (target, line)
    assert not Path("/nonexistent").exists(), "make alone set nothing up"
