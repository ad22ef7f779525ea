"""The Makefile, run by make as a user runs it: which torch it installs and when.

Nothing is installed: each run points ``VENV`` at a scratch folder whose ``bin/python`` is a
stand-in that records its arguments (``pip install`` among them) and answers the torch
version the test gives it.
"""

from __future__ import annotations

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
    cuda = f"{gradescope.DEFAULT_TORCH} --index-url https://download.pytorch.org/whl/cu130"
    venv = fake_venv(tmp_path / "venv", stamp=cuda, torch_version="2.13.0+cu130")
    assert stamp_torch(venv) == [], "a GPU runner's choice is kept by later commands"
    assert (venv / ".torch").read_text().strip() == cuda
    plain = gradescope.DEFAULT_TORCH  # asked for on the command line: as asked, even the former
    assert stamp_torch(venv, f"TORCH={plain}") == [f"-m pip install -q --force-reinstall {plain}"]
    assert (venv / ".torch").read_text().strip() == plain
    assert stamp_torch(venv, f"TORCH={plain}") == []


def test_make_gradescope_builds_with_the_cpu_build():
    done = make("-n", "gradescope", "VENV=/nonexistent")
    [command] = [line for line in done.stdout.splitlines() if "frontends.gradescope" in line]
    argv = shlex.split(command)
    assert argv[argv.index("--torch") + 1] == gradescope.CPU_TORCH
