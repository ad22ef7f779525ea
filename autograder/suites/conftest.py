"""Lets instructors run the hidden suites with plain pytest:

    pytest autograder/suites --submission exercises/ [-m embedding]

``python -m autograder grade`` registers its own GradingPlugin instead (and adds the rubric,
the report and results.json).
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lumen autograder")
    group.addoption("--submission", help="the learner's folder (embeddings.py, params.py, gpt2.py)")
    group.addoption("--grade-device", default="auto", choices=("auto", "cpu", "cuda"))
    group.addoption("--grade-seed", type=int, default=None, help="reproduce a run's inputs")


def pytest_configure(config: pytest.Config) -> None:
    from autograder.plugin import GradingPlugin

    if any(isinstance(p, GradingPlugin) for p in config.pluginmanager.get_plugins()):
        return  # the runner brought its own
    submission = config.getoption("--submission")
    if not submission:
        raise pytest.UsageError("the hidden suites need --submission PATH (a learner's folder)")
    from autograder import plugin
    from autograder.__main__ import choose_devices, choose_launcher
    from autograder.submission import prepare
    from autograder.worker_client import Limits

    prepared = prepare(Path(submission))
    context = plugin.start(prepared.folder, choose_devices(config.getoption("--grade-device")),
                           Limits(), choose_launcher("auto"), config.getoption("--grade-seed"))
    config.pluginmanager.register(GradingPlugin(context), "lumen-grading")
    config.add_cleanup(context.close)
    config.add_cleanup(prepared.cleanup)
