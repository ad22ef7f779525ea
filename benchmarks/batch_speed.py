"""How much a batch saves: a learner's amortised cost in a batch vs. one cold ``grade``.

    .venv/bin/python benchmarks/batch_speed.py [--learners 100] [--jobs 2] [--stage STAGE ...]

Generates a class of learners part-way through the exercise (each stage solved or still a
stub, chosen at random; a few with a syntax error or a missing file), then measures

1. cold: ``python -m autograder grade LEARNER`` in a fresh process (torch imported twice, the
   sandbox started, every stage graded), for a few of those learners: one run first, not
   counted (it fills the page cache), then the median of ``--cold-runs``;
2. batch: ``python -m autograder grade-batch`` over the whole class;
3. the floor: the same batch for a class of as many learners who each hand in the handout
   untouched. Every stage of theirs fails at its first call, so what it costs is what every
   learner costs whatever they wrote: six fresh stage processes (forked, loaded, ended) and
   one pytest session of the hidden suites. No class can be graded faster per learner;

and prints the batch's seconds per learner divided by the cold grade's, with the CPU the
machine was busy for meanwhile (``/proc/stat``: every process, the sandboxed ones too, and
anything else running). The target is 0.25 on a 2-core machine (a fresh process per stage is
the grade's fairness guarantee, and the untouched class's floor is about half of that); the
exit status is 1 when the ratio misses it. Stages without a hidden suite yet are left out of
every run (``--stage`` overrides).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lumen.stages import STAGE_NAMES, SUBMISSION_FILES  # noqa: E402
from solutions import release  # noqa: E402

TARGET = 0.25  # a learner in a batch / one cold grade


def make_class(folder: Path, learners: int, seed: int = 0, untouched: bool = False) -> list[Path]:
    """``learners`` submissions: random stages solved, 1 in 10 malformed; ``untouched``: every
    learner hands in the handout as it was given."""
    rng = random.Random(seed)
    paths = []
    for i in range(learners):
        solved = [] if untouched else [s for s in STAGE_NAMES if rng.random() < 0.7]
        files = release.submission(solved=solved)
        learner = folder / f"learner{i:03d}"
        learner.mkdir(parents=True)
        for name in SUBMISSION_FILES:
            text = files[Path(name)]
            if not untouched and i % 10 == 7 and name == "params.py":
                text = text.replace("def ", "def (", 1)  # a syntax error
            if not untouched and i % 10 == 9 and name == "gpt2.py":
                continue  # a missing file
            (learner / name).write_text(text, encoding="utf-8")
        paths.append(learner)
    return paths


def busy_seconds() -> float:
    """The CPU seconds this machine has been busy since it started, all cores together."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


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


def batch(work: Path, name: str, jobs: int, stage_args: list[str],
          learners: int) -> tuple[float, float]:
    """``grade-batch`` over ``work/name``: (wall seconds, busy CPU seconds) per learner."""
    log = work / f"{name}-stderr.txt"
    busy, started = busy_seconds(), time.perf_counter()
    with open(log, "wb") as stderr:
        done = subprocess.run(
            [sys.executable, "-m", "autograder", "grade-batch", str(work / name),
             "--out", str(work / f"{name}-grades.csv"), "--jobs", str(jobs), "--force",
             *stage_args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    seconds, busy = time.perf_counter() - started, busy_seconds() - busy
    if done.returncode != 0:
        print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
        raise SystemExit(f"the batch failed (exit {done.returncode})")
    return seconds / learners, busy / learners


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cold-runs", type=int, default=5, help="cold grades, their median")
    parser.add_argument("--no-floor", action="store_true", help="skip the untouched class")
    parser.add_argument("--stage", action="append", help="grade only these stages")
    parser.add_argument("--keep", type=Path, help="keep the class and its grades here")
    args = parser.parse_args(argv)

    stages = args.stage or available_stages()
    stage_args = [] if stages == list(STAGE_NAMES) else ["--stage", ",".join(stages)]
    work = args.keep or Path(tempfile.mkdtemp(prefix="lumen-bench-"))
    try:
        learners = make_class(work / "class", args.learners)
        print(f"stages graded: {', '.join(stages)}; {os.cpu_count()} cores", flush=True)
        cold(learners[0], stage_args)  # not counted: it fills the page cache
        runs = [cold(learners[i % len(learners)], stage_args) for i in range(args.cold_runs)]
        single = statistics.median(runs)
        print(f"cold single grade: {single:.2f} s (median of "
              f"{', '.join(f'{r:.2f}' for r in runs)})", flush=True)

        each, cpu = batch(work, "class", args.jobs, stage_args, args.learners)
        ratio = each / single
        print(f"batch of {args.learners} with --jobs {args.jobs}: {each:.3f} s per learner, "
              f"{cpu:.3f} s of busy CPU per learner; ratio {ratio:.3f} "
              f"({'meets' if ratio <= TARGET else 'misses'} the {TARGET} target)", flush=True)
        if not args.no_floor:
            make_class(work / "untouched", args.learners, untouched=True)
            floor, floor_cpu = batch(work, "untouched", args.jobs, stage_args, args.learners)
            print(f"floor, a class of {args.learners} untouched handouts: {floor:.3f} s per "
                  f"learner, {floor_cpu:.3f} s of busy CPU per learner; ratio "
                  f"{floor / single:.3f}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
