"""Lets instructors run the hidden suites with plain pytest:

    pytest autograder/suites --submission exercises/ [-m embedding]

``python -m autograder grade`` registers its own GradingPlugin instead (and adds the rubric,
the report and results.json).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.boundary.intake import prepare
from autograder.grading import Grader, Submission
from autograder.options import ARGUMENTS, Options
from autograder.suites.plugin import GradingPlugin


def pytest_addoption(parser: pytest.Parser) -> None:
    _, device = ARGUMENTS["device"]  # the same choices, default and words as every front end's
    group = parser.getgroup("lumen autograder")
    group.addoption("--submission", help="the learner's folder (embeddings.py, params.py, gpt2.py)")
    group.addoption("--grade-device", **device)
    group.addoption("--grade-seed", type=int, default=None, help="reproduce a run's inputs")


def pytest_configure(config: pytest.Config) -> None:
    if any(isinstance(p, GradingPlugin) for p in config.pluginmanager.get_plugins()):
        return  # the runner brought its own
    submission = config.getoption("--submission")
    if not submission:
        raise pytest.UsageError("the hidden suites need --submission PATH (a learner's folder)")
    grader = Grader(Options(device=config.getoption("--grade-device")))
    config.add_cleanup(grader.close)
    direct = _Direct(grader, Path(submission), config.getoption("--grade-seed"))
    config.pluginmanager.register(direct, "lumen-direct")


class _Direct:
    """Grades the --submission once per pytest session, for instructors running the suites."""

    def __init__(self, grader, submission: Path, seed: int | None) -> None:
        files = prepare(submission).files
        context = Submission(worker=grader.worker, devices=grader.devices, files=files)
        if seed is not None:
            context.seed = seed
        self.plugin = GradingPlugin(context)

    def pytest_configure(self, config: pytest.Config) -> None:
        config.pluginmanager.register(self.plugin, "lumen-grading")
        config.add_cleanup(self.plugin.context.close)
