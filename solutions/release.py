"""Generate the learners' exercises/ from the reference package lumen/ (``make release``).

lumen/ is the single source of every line. In the three files learners submit, each
``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region (nbgrader's markers) becomes a stub that
names its stage; every other file a learner needs is copied as given code, and the lab notebook
is nbgrader's release of solutions/course/. What the files hold is autograder/publish/'s (the
grader needs it too: render.py, stubber.py, notebook.py); this command writes them::

    python -m solutions.release           # write exercises/
    python -m solutions.release --check   # exit 1, listing stale files; writes nothing

The stubs stay ruff-clean without hiding anything: an import that only solution code used
gets ``# noqa: F401``, and a given line that reads a variable only the solution sets gets
``# noqa: F821`` and is named in the stub's comment, so the learner knows what to define.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Collection
from pathlib import Path

import nbformat

from autograder.publish import notebook
from autograder.publish.render import (  # noqa: F401 - what exercises/ holds, as release.X too
    COPIED,
    EXERCISES,
    GRADER_COPIED,
    HAND_WRITTEN,
    MANIFEST,
    PACKAGE_INIT,
    ROOT,
    STUBBED,
    digest,
    edited,
    edits_refusal,
    render,
    stale,
    submission,
)
from autograder.publish.stubber import (  # noqa: F401 - the stubber's names, as release.X too
    BEGIN,
    END,
    LINE_LENGTH,
    LUMEN,
    STUB_HEADER,
    Region,
    ReleaseError,
    find_regions,
    stub,
)
from lumen import stages  # noqa: F401 - as release.stages for its users

from . import stage_tables


def write(target: Path = EXERCISES, solved: Collection[str] = (), force: bool = False,
          out=None) -> list[Path]:
    """Write every generated file whose text changed; return those paths.

    Files that hold a person's edits (a learner's work in exercises/) are never overwritten
    silently: a ReleaseError names them, unless ``force``, which first copies them into
    ``target/.backup-<time>/`` and says so.
    """
    mine = edited(target)
    if mine and not force:
        raise ReleaseError(edits_refusal(mine, target))
    if mine:
        backup = target / f".backup-{time.strftime('%Y%m%d-%H%M%S')}"
        for path in mine:
            (backup / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(target / path, backup / path)
        print(f"kept your edited files in {backup}", file=out or sys.stdout)
    changed, written = [], {}
    for path, text in render(solved).items():
        file = target / path
        written[path.as_posix()] = digest(text)
        if not file.is_file() or file.read_text(encoding="utf-8") != text:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(text, encoding="utf-8", newline="\n")
            changed.append(path)
    (target / MANIFEST).write_text(json.dumps(written, indent=1, sort_keys=True) + "\n")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m solutions.release", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="list stale files, write nothing")
    parser.add_argument("--force", action="store_true",
                        help="overwrite files that hold edits (a backup of each is kept)")
    parser.add_argument(
        "--target", type=Path, default=EXERCISES, help="the folder to write (default: exercises/)"
    )
    parser.add_argument(
        "--solved",
        default="",
        metavar="STAGE,...",
        help="keep these stages solved (a learner part-way through; never for exercises/)",
    )
    args = parser.parse_args(argv)
    solved = [s for s in args.solved.split(",") if s]
    try:
        if args.check:
            outdated = stale(args.target)
            try:
                notebook.check_points(nbformat.read(notebook.SOURCE, as_version=4))
            except notebook.NotebookError as error:
                print(f"stale: {error}")
                outdated.append(notebook.SOURCE)
            if args.target.resolve() == EXERCISES:
                outdated += stage_tables.stale()  # README's, the handout's, pyproject's lists
            for path in outdated:
                print(f"stale: {args.target / path} (run `make release`)")
            if not outdated:
                print(f"{args.target} is up to date with lumen/")
            return 1 if outdated else 0
        if solved and args.target.resolve() == EXERCISES:
            raise ReleaseError("--solved writes a part-solved copy: give it a --target elsewhere")
        if args.target.resolve() == EXERCISES and notebook.write_points():
            print(f"wrote {notebook.SOURCE.relative_to(ROOT)} (points from rubric.toml)")
        for path in write(args.target, solved, force=args.force):
            print(f"wrote {args.target / path}")
        if args.target.resolve() == EXERCISES:
            for path in stage_tables.write():
                print(f"wrote {path.relative_to(ROOT)} (its stage list, from lumen/stages.py)")
        return 0
    except (ReleaseError, notebook.NotebookError, stage_tables.TableError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
