"""How much a batch saves: a learner's amortised cost in a batch vs. one cold ``grade``.

    .venv/bin/python benchmarks/batch_speed.py [--learners 100] [--jobs 2] [--stage STAGE ...]

Generates a class of learners part-way through the exercise (each stage solved or still a
stub, chosen at random; a few with a syntax error or a missing file), then measures

1. cold: ``python -m autograder grade LEARNER`` in a fresh process (torch imported twice, the
   sandbox started, every stage graded), for a few of those learners, averaged;
2. batch: ``python -m autograder grade-batch`` over the whole class,

and prints the batch's seconds per learner divided by the cold grade's. The target is 0.1
(issue 18) on a 2-core machine; the exit status is 1 when the ratio misses it. Stages
without a hidden suite yet are left out of both (``--stage`` overrides).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lumen.stages import STAGE_NAMES, SUBMISSION_FILES  # noqa: E402
from solutions import release  # noqa: E402

TARGET = 0.1  # a learner in a batch / one cold grade (issue 18)


def make_class(folder: Path, learners: int, seed: int = 0) -> list[Path]:
    """``learners`` submissions: random stages solved, 1 in 10 malformed."""
    rng = random.Random(seed)
    paths = []
    for i in range(learners):
        solved = [s for s in STAGE_NAMES if rng.random() < 0.7]
        files = release.render(solved=solved)
        learner = folder / f"learner{i:03d}"
        learner.mkdir(parents=True)
        for name in SUBMISSION_FILES:
            text = files[Path(name)]
            if i % 10 == 7 and name == "params.py":
                text = text.replace("def ", "def (", 1)  # a syntax error
            if i % 10 == 9 and name == "gpt2.py":
                continue  # a missing file
            (learner / name).write_text(text, encoding="utf-8")
        paths.append(learner)
    return paths


def available_stages() -> list[str]:
    """The stages that have a hidden suite (all of them once the suites are written)."""
    suites = ROOT / "autograder" / "suites"
    return [s for s in STAGE_NAMES if (suites / f"test_{s}.py").is_file()]


def cold(learner: Path, stage_args: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(learner),
                           *stage_args], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the cold grade failed:\n{done.stderr}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cold-runs", type=int, default=3, help="cold grades to average")
    parser.add_argument("--stage", action="append", help="grade only these stages")
    parser.add_argument("--keep", type=Path, help="keep the class and its grades here")
    args = parser.parse_args(argv)

    stages = args.stage or available_stages()
    stage_args = [] if stages == list(STAGE_NAMES) else ["--stage", ",".join(stages)]
    work = args.keep or Path(tempfile.mkdtemp(prefix="lumen-bench-"))
    try:
        learners = make_class(work / "class", args.learners)
        print(f"stages graded: {', '.join(stages)}; {os.cpu_count()} cores", flush=True)
        runs = [cold(learners[i], stage_args) for i in range(args.cold_runs)]
        single = sum(runs) / len(runs)
        print(f"cold single grade: {single:.2f} s (mean of "
              f"{', '.join(f'{r:.2f}' for r in runs)})", flush=True)

        started = time.perf_counter()
        log = work / "batch-stderr.txt"
        with open(log, "wb") as stderr:
            done = subprocess.Popen(
                [sys.executable, "-m", "autograder", "grade-batch", str(work / "class"),
                 "--out", str(work / "grades.csv"), "--jobs", str(args.jobs), "--force",
                 *stage_args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
            # wait4: the CPU time of the batch and every process it waited for (its graders,
            # their workers and stage processes), which a shared machine's load barely moves
            _, status, usage = os.wait4(done.pid, 0)
            done.returncode = os.waitstatus_to_exitcode(status)
        batch = time.perf_counter() - started
        if done.returncode != 0:
            print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
            raise SystemExit(f"the batch failed (exit {done.returncode})")
        each = batch / args.learners
        cpu = (usage.ru_utime + usage.ru_stime) / args.learners
        print(f"batch of {args.learners} with --jobs {args.jobs}: {batch:.1f} s, "
              f"{each:.3f} s per learner ({cpu:.3f} s of CPU per learner, all its processes)")
        ratio = each / single
        print(f"ratio (batch per learner / cold single): {ratio:.3f} "
              f"({'meets' if ratio <= TARGET else 'misses'} the {TARGET} target)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
