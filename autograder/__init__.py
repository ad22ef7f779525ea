"""The hidden autograder: grades a learner's three files against lumen, stage by stage.

``python -m autograder grade PATH`` (or ``make grade SUBMISSION=PATH``). Learner code runs only
in a worker process (``sandboxed/``); the hidden suites (``suites/``), the reference and the
scores stay in this process. Start reading at ``grading.py``: the five steps of a grade.
"""

import sys
from pathlib import Path

if sys.version_info < (3, 11):  # noqa: UP036 - said once, here, before tomllib fails
    raise SystemExit(f"the grader needs Python 3.11 or newer (it reads rubric.toml with "
                     f"tomllib); this is Python {sys.version.split()[0]}")

#: The repository (or the unpacked Gradescope zip) the grader runs from: the one place that
#: computes it, so a module can move between rooms without its paths moving.
ROOT = Path(__file__).resolve().parent.parent
