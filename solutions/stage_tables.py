"""The lists of the stages that live outside lumen/, written from lumen/stages.py by the release.

README's stage table, the handout's, and pyproject's pytest markers each name every stage. They
were kept by hand and checked; now ``make release`` writes each between two marker lines, so
adding a stage touches none of them: ``python -m solutions.release --check`` (and
tests/test_release.py) names a file whose block is stale.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lumen import stages

ROOT = Path(__file__).resolve().parents[1]


class TableError(ValueError):
    """A file lost one of its marker lines: the release will not guess where the block goes."""


def _written(stage: stages.Stage) -> str:
    """The functions a stage owns, as a learner names them: ``Embedding.__init__``, then the
    methods of the same class by their short names."""
    names, seen_classes = [], set()
    for owned in stage.owns:
        qualname = owned.split(":")[1]
        cls, _, method = qualname.rpartition(".")
        names.append(f"`{method}`" if cls and cls in seen_classes else f"`{qualname}`")
        seen_classes.add(cls)
    return ", ".join(names)


def _section(stage: stages.Stage) -> str:
    return stage.section.split(":")[0]


def readme_table() -> list[str]:
    rows = ["| stage | what the learner builds | what they write | chapter section |",
            "| --- | --- | --- | --- |"]
    return rows + [f"| `{s.name}` | {s.title} | {_written(s)} | {_section(s)} |"
                   for s in stages.STAGES]


def handout_table() -> list[str]:
    rows = ["| stage | you write | run its tests | chapter section |",
            "| --- | --- | --- | --- |"]
    return rows + [f"| `{s.name}` | {_written(s)} | `pytest exercises -m {s.name}` "
                   f"| {_section(s)} |" for s in stages.STAGES]


def markers() -> list[str]:
    return [f'    "{s.name}: stage \'{s.name}\', {s.title}",' for s in stages.STAGES]


#: file -> (the block's first line, its last line, what goes between them)
BLOCKS: dict[str, tuple[str, str, Callable[[], list[str]]]] = {
    "README.md": ("<!-- the stage table: written by `make release` from lumen/stages.py -->",
                  "<!-- end of the stage table -->", readme_table),
    # the learner's README names no command of the course's repository
    "handout/README.md": ("<!-- the stage table, written from the course's list of stages -->",
                          "<!-- end of the stage table -->", handout_table),
    "pyproject.toml": ("    # the stages' markers: written by `make release` from "
                       "lumen/stages.py", "    # end of the stages' markers", markers),
}


def render(name: str, text: str) -> str:
    """``text`` (the file ``name``) with its block rewritten."""
    begin, end, rows = BLOCKS[name]
    lines = text.split("\n")
    if lines.count(begin) != 1 or lines.count(end) != 1 or lines.index(begin) > lines.index(end):
        raise TableError(f"{name}: expected the lines {begin!r} and {end!r} once each, in that "
                         "order, around the stage list; put them back (see git log)")
    first, last = lines.index(begin), lines.index(end)
    return "\n".join([*lines[: first + 1], *rows(), *lines[last:]])


def stale(root: Path = ROOT) -> list[Path]:
    """The files whose block differs from lumen/stages.py's stages."""
    return [root / name for name in BLOCKS
            if render(name, (root / name).read_text(encoding="utf-8"))
            != (root / name).read_text(encoding="utf-8")]


def write(root: Path = ROOT) -> list[Path]:
    """Rewrite every stale block; return the files written."""
    written = []
    for path in stale(root):
        name = path.relative_to(root).as_posix()
        path.write_text(render(name, path.read_text(encoding="utf-8")), encoding="utf-8",
                        newline="\n")
        written.append(path)
    return written
