"""Build what a learner receives: ``python -m solutions.handout --out build/handout.zip``
(or ``make handout``).

What goes in, and what is refused (an edited or stale exercises/), is
autograder/publish/handout.py's: the Classroom template ships the same files.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

from autograder.publish.handout import HandoutError, build
from autograder.words import counted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m solutions.handout",
                                     description="Build the learners' handout zip.")
    parser.add_argument("--out", type=Path, default=Path("build/handout.zip"))
    args = parser.parse_args(argv)
    try:
        out = build(args.out)
    except HandoutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with zipfile.ZipFile(out) as archive:
        count = len(archive.namelist())
    print(f"wrote {out} ({counted(count, 'file')}): give it to learners")
    return 0


if __name__ == "__main__":
    sys.exit(main())
