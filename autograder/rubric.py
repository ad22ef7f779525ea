"""The rubric: points per hidden test, grouped by stage, adding up to 100, and the points of
the lab notebook's written answers (``[written]``, marked by hand, outside the 100).

``rubric.toml`` is the one file every front end reads (the terminal report, results.json,
nbgrader, Gradescope). Its stage tables are in the chapter's order; a test's points are all or
nothing, so a stage's partial credit comes from its several tests.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from lumen.stages import STAGE_NAMES

RUBRIC = Path(__file__).resolve().parent / "rubric.toml"
TOTAL = 100
WRITTEN = "written"  # the table of written answers


class RubricError(Exception):
    """rubric.toml does not match the stages or the hidden suites."""


@dataclass(frozen=True)
class Rubric:
    points: dict[str, dict[str, float]]  # stage -> test name -> points
    written: dict[str, float]  # the lab notebook's written answer (nbgrader grade_id) -> points

    def stage_max(self, stage: str) -> float:
        return sum(self.points[stage].values())

    def check_tests(self, collected: set[str]) -> None:
        """Every collected hidden test has points and every rubric entry is a real test."""
        listed = {t for tests in self.points.values() for t in tests}
        if collected - listed:
            missing = sorted(collected - listed)
            raise RubricError(f"hidden tests without points in rubric.toml: {missing}")
        if listed - collected:
            unknown = sorted(listed - collected)
            raise RubricError(f"rubric.toml lists tests that do not exist: {unknown}")


def load(path: Path = RUBRIC) -> Rubric:
    with open(path, "rb") as f:
        data = tomllib.load(f)
    written = {name: float(p) for name, p in data.pop(WRITTEN, {}).items()}
    if any(p <= 0 for p in written.values()):
        raise RubricError(f"rubric.toml's [{WRITTEN}] answers need positive points")
    if list(data) != list(STAGE_NAMES):
        raise RubricError(f"rubric.toml's stages must be {list(STAGE_NAMES)} in that order, "
                          f"got {list(data)}")
    points = {stage: {t: float(p) for t, p in tests.items()} for stage, tests in data.items()}
    for stage, tests in points.items():
        # every check earns points: one that learner code could fool depends on the rules
        # (suites/bans.py's certify) rather than being worth nothing
        if not tests or any(p <= 0 for p in tests.values()):
            zero = sorted(t for t, p in tests.items() if p <= 0)
            raise RubricError(f"stage {stage} needs tests with points, each above 0 "
                              f"(not: {', '.join(zero) or 'no tests listed'})")
    total = sum(sum(t.values()) for t in points.values())
    if abs(total - TOTAL) > 1e-9:
        raise RubricError(f"rubric.toml's points add up to {total:g}, not {TOTAL}")
    return Rubric(points, written)
