"""The promise gate: each promise broken on its own must cost points, on its own stage only.

    python -m tools.promise_mutants [--seeds 3] [--stage STAGE ...]   (make promise-mutants)

Beside ``make mutation``, which mutates lumen's lines blindly, this breaks the promises the
stubs' docstrings make, one at a time: every row of ``autograder/suites/promises`` names its
**mutant**, a known mistake of ``tests/variants/<stage>.py`` that is lumen with that promise
broken and every other kept. Each mutant is built as a whole submission (the other stages
untouched) and graded by one warm Grader. It is caught when, under every seed:

- its own stage loses points, and the row's hidden check is among the failed tests (the
  check that holds the promise is the one that sees it broken), or a check the row's inputs
  name for a part of the promise (``(certified, test_inputs_are_left_unchanged)``);
- and under the first seed every other stage keeps full marks (a mistake costs points where
  it is made, never in another stage; the stages' isolation does not depend on the seed).

A mutant that keeps full marks under some seed, fails elsewhere than its row's check, or spills
into another stage is printed with the seeds and tests concerned, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from autograder.words import counted

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@dataclass
class Mutant:
    """One known mistake of a stage and the checks of the rows it breaks."""

    stage: str
    name: str
    replacements: dict[str, str]
    checks: set[str] = field(default_factory=set)  # the rows' hidden test names


def mutants(stages: list[str]) -> list[Mutant]:
    """Every row's mutant, once each, with every row's hidden check that names it."""
    from autograder.suites.promises import CHECK_NAMED, stage_promises

    out: dict[tuple[str, str], Mutant] = {}
    for stage in stages:
        mistakes = importlib.import_module(f"tests.variants.{stage}").MISTAKES
        for row in stage_promises(stage):
            if not row.mutant:
                continue  # tests/test_promises.py requires one on every row
            key = (stage, row.mutant)
            if key not in out:
                out[key] = Mutant(stage, row.mutant, mistakes[row.mutant][0])
            out[key].checks.add(row.hidden.split("::", 1)[1])
            out[key].checks.update(CHECK_NAMED.findall(row.inputs))  # the parts others hold
    return list(out.values())


def judge(mutant: Mutant, grades: dict[int, dict]) -> list[str]:
    """What is wrong with how ``mutant`` was graded (``{seed: {stage: StageResult}}``)."""
    problems = []
    for seed, stages in grades.items():
        own = stages[mutant.stage]
        failed = {r.name for r, _, _ in own.tests if not r.passed}
        if own.score >= own.max_score:
            problems.append(f"seed {seed}: full marks on stage {mutant.stage}")
        elif not failed & mutant.checks:
            problems.append(f"seed {seed}: its row's check ({', '.join(sorted(mutant.checks))}) "
                            f"passed; it failed {', '.join(sorted(failed))}")
        for name, other in stages.items():
            if name != mutant.stage and other.score < other.max_score:
                lost = [r.name for r, _, _ in other.tests if not r.passed]
                problems.append(f"seed {seed}: spills into stage {name} ({', '.join(lost)})")
    return problems


def main(argv: list[str] | None = None) -> int:
    from autograder.grading import Grader
    from lumen.stages import STAGE_NAMES
    from tests.variants.build import make_submission

    parser = argparse.ArgumentParser(prog="python -m tools.promise_mutants",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds per mutant (default 3)")
    parser.add_argument("--stage", action="append", choices=STAGE_NAMES)
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    started = time.perf_counter()
    todo = mutants(args.stage or list(STAGE_NAMES))
    caught, missed = 0, defaultdict(list)
    with Grader() as grader, tempfile.TemporaryDirectory() as tmp:
        for n, mutant in enumerate(todo, start=1):
            folder = make_submission(Path(tmp) / f"m{n}", mutant.replacements)
            grades: dict[int, dict] = {}
            for seed in range(1, args.seeds + 1):
                stages = None if seed == 1 else [mutant.stage]
                result = grader.grade(folder, seed=seed, stages=stages)
                grades[seed] = {s.name: s for s in result.stages}
            if problems := judge(mutant, grades):
                missed[mutant.stage].append((mutant.name, problems))
            else:
                caught += 1
            print(f"\r[{n:>3}/{len(todo)}] caught {caught}, missed "
                  f"{sum(map(len, missed.values()))}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(f"promise mutants: {caught} of {counted(len(todo), 'mutant')} lose points on their own "
          f"stage only, at their row's check, under {counted(args.seeds, 'seed')} "
          f"({time.perf_counter() - started:.0f} s)")
    for stage, entries in missed.items():
        for name, problems in entries:
            print(f"  {stage}: {name}")
            for problem in problems:
                print(f"      {problem}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
