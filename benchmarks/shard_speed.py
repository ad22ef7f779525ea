"""What sharding buys on this machine: a class graded as 1 shard and as 2 shards side by side.

    .venv/bin/python benchmarks/shard_speed.py [--learners 24] [--jobs 1] [--stage STAGE ...]

Generates a class (batch_speed.py's: stages solved at random, 1 in 10 malformed), then grades
it twice, alternately to share the machine's noise:

1. one shard: ``grade-batch --shard 1/1 --jobs J``, one process;
2. two shards: ``grade-batch --shard 1/2`` and ``--shard 2/2`` as two processes at once (as
   two nodes of a cluster would, here on one machine), each ``--jobs J``, then
   ``merge-shards``, which is part of the time;

and prints each one's throughput (learners per second) and their ratio. On a cluster each
shard has a node of its own, so the ratio there approaches N; on one machine it shows what a
second process costs and gains on the same cores (two per process: a grader and its
sandbox). No target is set, so the exit status is 0 unless a run fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.batch_speed import available_stages, make_class  # noqa: E402
from lumen.stages import STAGE_NAMES  # noqa: E402


def _run(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "autograder", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        output = process.communicate()[0]
        if process.returncode != 0:
            raise SystemExit(f"a run failed (exit {process.returncode}):\n{output[-3000:]}")


def sharded(work: Path, n: int, common: list[str]) -> float:
    """Seconds to grade the class as ``n`` shards at once, and merge them."""
    out = work / f"n{n}"
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    _wait([_run(["grade-batch", str(work / "class"), "--shard", f"{k}/{n}",
                 "--out", str(out / f"shard-{k}.csv"), *common]) for k in range(1, n + 1)])
    _wait([_run(["merge-shards", *(str(out / f"shard-{k}.csv") for k in range(1, n + 1)),
                 "--out", str(out / "grades.csv")])])
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", type=int, default=24)
    parser.add_argument("--jobs", type=int, default=1, help="grading processes per shard")
    parser.add_argument("--rounds", type=int, default=1, help="alternating runs of each")
    parser.add_argument("--stage", action="append", help="grade only these stages")
    parser.add_argument("--keep", type=Path, help="keep the class and its grades here")
    args = parser.parse_args(argv)

    stages = args.stage or available_stages()
    common = ["--jobs", str(args.jobs)]
    if stages != list(STAGE_NAMES):
        common += ["--stage", ",".join(stages)]
    work = args.keep or Path(tempfile.mkdtemp(prefix="lumen-shards-"))
    try:
        make_class(work / "class", args.learners)
        print(f"{args.learners} learners, stages {', '.join(stages)}; {os.cpu_count()} cores; "
              f"--jobs {args.jobs} per shard", flush=True)
        times: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(args.rounds):
            for n in (1, 2):
                times[n].append(sharded(work, n, common))
                print(f"  {n} shard{'s' if n > 1 else ''}: {times[n][-1]:.1f} s", flush=True)
        best = {n: min(t) for n, t in times.items()}
        for n, seconds in best.items():
            print(f"{n} shard{'s' if n > 1 else ' '}: {args.learners / seconds:.2f} learners/s "
                  f"({seconds:.1f} s, best of {len(times[n])})")
        print(f"ratio (2 shards' throughput / 1 shard's): {best[1] / best[2]:.2f}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
