"""Every correct variant and every known mistake, graded under many seeds: one score each.

    python -m tools.seeds [--seeds 50] [--stage STAGE ...]

A seed is for replaying a run, never a lottery: a variant whose per-stage verdicts change
with the seed (a test whose inputs sometimes miss the mistake, or one that sometimes has
nothing to judge) is printed with the seeds that disagree, and the exit status is 1.
tests/test_grader_variants.py checks a few seeds in CI; this is the full check (`make seeds`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from pathlib import Path

from autograder.words import counted

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def variants(stages: list[str]) -> list[tuple[str, str, dict]]:
    """(stage, name, replacements) of every correct variant and known mistake."""
    out = []
    for stage in stages:
        module = importlib.import_module(f"tests.variants.{stage}")
        out += [(stage, f"correct: {n}", r) for n, r in module.CORRECT.items()]
        out += [(stage, f"mistake: {n}", m[0]) for n, m in module.MISTAKES.items()]
    return out


def main(argv: list[str] | None = None) -> int:
    from autograder.grading import Grader
    from lumen.stages import STAGE_NAMES
    from tests.variants.build import make_submission

    parser = argparse.ArgumentParser(prog="python -m tools.seeds")
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--stage", action="append", choices=STAGE_NAMES)
    args = parser.parse_args(argv)
    todo = variants(args.stage or list(STAGE_NAMES))
    unstable = 0
    with Grader() as grader, tempfile.TemporaryDirectory() as tmp:
        for n, (stage, name, replacements) in enumerate(todo, start=1):
            folder = make_submission(Path(tmp) / f"v{n}", replacements)
            seen: dict[tuple, list[int]] = {}
            for seed in range(1, args.seeds + 1):
                graded = next(s for s in grader.grade(folder, seed=seed, stages=[stage]).stages
                              if s.name == stage)
                key = tuple((r.name, r.passed) for r, _, _ in graded.tests)
                seen.setdefault(key, []).append(seed)
            print(f"[{n:>3}/{len(todo)}] {stage}: {name}: "
                  + ("one verdict" if len(seen) == 1 else f"{len(seen)} different verdicts"),
                  flush=True)
            if len(seen) > 1:
                unstable += 1
                for key, seeds in seen.items():
                    failed = [t for t, passed in key if not passed]
                    print(f"      seeds {seeds[:8]}{' ...' if len(seeds) > 8 else ''}: "
                          f"failed {failed}")
    print(f"{len(todo) - unstable} of {counted(len(todo), 'variant')} get one verdict under "
          f"{counted(args.seeds, 'seed')}")
    return 1 if unstable else 0


if __name__ == "__main__":
    sys.exit(main())
