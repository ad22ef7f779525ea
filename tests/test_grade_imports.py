"""A grade imports only what grading needs: never the release tooling's nbformat, nbgrader or
lark (through nbformat's jsonschema: seconds of a cold grade, issue 18)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Top-level packages a grade must not import (the release and nbgrader tooling's).
UNNEEDED = ("nbformat", "nbgrader", "lark", "jsonschema", "rfc3987_syntax", "solutions.release",
            "solutions.notebook")

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
    assert code == 0 and "15.0 / 15" in done.stdout  # it really graded, and fully
    assert "solutions.stubber" in modules  # the stub maker grading does need
    imported = [m for m in modules if m.split(".")[0] in UNNEEDED or m in UNNEEDED]
    assert not imported, f"a grade imported {imported}"
