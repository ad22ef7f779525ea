"""The README is a screen or two, and every guide beside it in docs/ is reachable from it.

Every file under docs/ is linked from README.md; every relative link of README.md and the
guides leads to a file that exists, and its ``#anchor`` to a heading of that file (GitHub's
anchors: the heading in lower case, punctuation dropped, spaces made hyphens). Every
citation of a README section elsewhere in the repository (``README, "The threat model"``)
names a heading README.md still has, and every guide a comment or message cites
(``docs/threat-model.md``) exists: a section that moves to a guide takes its pointers along.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: "A screen or two": the README says what this is and where to read on, no more.
MAX_README_LINES = 200

_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.I)


def _prose(path: Path) -> list[str]:
    """The lines of a Markdown file outside its fenced code blocks, inline code spans blanked."""
    lines, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            lines.append("")
            continue
        lines.append("" if fenced else re.sub(r"`[^`]*`", "``", line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def headings(path: Path) -> list[str]:
    """The headings of a Markdown file, as written."""
    return [m.group(2) for line in _prose(path) if (m := _HEADING.match(line))]


def anchors(path: Path) -> set[str]:
    """Every ``#anchor`` GitHub gives the file's headings (a repeated one gets -1, -2, ...)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in headings(path):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every relative link or image in a Markdown file."""
    return [(number, target) for number, line in enumerate(_prose(path), start=1)
            for target in _LINK.findall(line) if not _EXTERNAL.match(target)]


def guides(root: Path) -> list[Path]:
    """Every file under docs/ (the guides, and anything they show)."""
    return sorted(p for p in (root / "docs").rglob("*") if p.is_file())


def documents(root: Path) -> list[Path]:
    return [root / "README.md", *(p for p in guides(root) if p.suffix == ".md")]


def broken(root: Path) -> list[str]:
    """Each relative link of the README and the guides that leads nowhere, and why."""
    found = []
    for doc in documents(root):
        for number, target in links(doc):
            where = f"{doc.relative_to(root)}:{number}: {target}"
            file, _, anchor = target.partition("#")
            destination = (doc.parent / file).resolve() if file else doc
            if not destination.exists():
                found.append(f"{where}: no file {destination.relative_to(root.resolve())}"
                             if destination.is_relative_to(root.resolve()) else
                             f"{where}: outside the repository")
            elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
                found.append(f"{where}: {destination.name} has no heading #{anchor}")
    return found


def unlinked(root: Path) -> list[str]:
    """Each file under docs/ that no link of README.md leads to."""
    readme = root / "README.md"
    linked = {(readme.parent / target.partition("#")[0]).resolve()
              for _, target in links(readme)}
    return [str(p.relative_to(root)) for p in guides(root) if p.resolve() not in linked]


# -- citations elsewhere: README sections by name, guides by path -------------------------

_SKIP = {".git", ".venv", "build", "__pycache__", ".pytest_cache", ".ruff_cache",
         ".hypothesis", ".mutmut-cache", "mutants", "node_modules"}
_TEXT = {".py", ".sh", ".yml", ".yaml", ".toml", ".md", ".txt", ".cfg", ".ini", ".html"}
#: ``README, "The threat model"``, ``README.md ('GitHub Classroom')``, ``README's "Layout"``.
_SECTION = re.compile(r"\bREADME(?:\.md)?(?:'s)?,?\s*\(?([\"'])([A-Z][^\"'\n]{2,60}?)\1")
#: A guide cited by path: ours are named in lower case with hyphens (another project's, such as
#: PrairieLearn's docs/externalGrading.md, is not).
_GUIDE = re.compile(r"(?<![\w/.-])docs/[a-z][a-z0-9-]*\.md\b")
_GUIDE_NAME = re.compile(r"[a-z][a-z0-9-]*\.md")


def sources(root: Path) -> list[Path]:
    """The repository's text files a maintainer writes comments and messages in (not this
    one, whose examples cite sections on purpose)."""
    found = []
    for path in sorted(root.rglob("*")):
        if path == Path(__file__).resolve():
            continue
        parts = path.relative_to(root).parts
        if any(part in _SKIP or part.startswith(".backup-") or part.endswith(".egg-info")
               for part in parts) or not path.is_file():
            continue
        if path.suffix in _TEXT or path.name == "Makefile" or parts[:1] == (".ci",):
            found.append(path)
    return found


def _joined(text: str) -> str:
    """``text`` with comment continuations and Python's adjacent string literals joined, so
    that a citation wrapped over two lines reads as one."""
    text = re.sub(r"\s*\n\s*(?:#:?|//|\*)?\s*", " ", text)
    return re.sub(r"([\"'])\s+\1", "", text)


def stale_citations(root: Path) -> list[str]:
    """Each README section cited by name that README.md has no heading for, and each guide
    cited by path that docs/ does not hold."""
    sections = headings(root / "README.md")
    linked = set(documents(root))  # their links are broken()'s; a path there may be another's
    found = []
    for path in sources(root):
        text = _joined(path.read_text(encoding="utf-8", errors="replace"))
        where = str(path.relative_to(root))
        for _, name in _SECTION.findall(text):
            if not any(h.lower().startswith(name.lower()) for h in sections):
                found.append(f"{where}: cites README section {name!r}, which README.md "
                             "does not have: point it at the guide in docs/ that holds it")
        for guide in set() if path in linked else set(_GUIDE.findall(text)):
            if not (root / guide).is_file():
                found.append(f"{where}: cites {guide}, which does not exist")
    return sorted(set(found))


# -- the tests ------------------------------------------------------------------------------

def test_the_readme_fits_on_a_screen_or_two():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, (
        f"README.md has {lines} lines, more than {MAX_README_LINES}: move the detail into the "
        "guide in docs/ for its reader and leave one line pointing at it")


def test_every_guide_is_linked_from_the_readme():
    assert guides(ROOT), "docs/ holds the guides"
    odd = [p.name for p in guides(ROOT) if p.suffix == ".md" and not _GUIDE_NAME.fullmatch(p.name)]
    assert not odd, f"name each guide in lower case with hyphens (as citations are found): {odd}"
    missing = unlinked(ROOT)
    assert not missing, ("files under docs/ that README.md links to nowhere: add a line for "
                         "each to README.md's \"Guides\" ([docs/x.md](docs/x.md)): "
                         + ", ".join(missing))


def test_every_relative_link_leads_to_a_file_and_heading():
    assert not broken(ROOT), "\n".join(broken(ROOT))


def test_every_citation_of_a_readme_section_or_guide_exists():
    stale = stale_citations(ROOT)
    assert not stale, "\n".join(stale)


def test_the_checks_can_fail(tmp_path):
    """A guide nobody links to, a link to a missing file or heading, a README grown too long and
    a citation of a section that moved are each found (the checks above are not vacuous)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "linked.md").write_text(
        "# Linked guide\n\n## Its part\n\nBack to the [README](../README.md#lumen), to\n"
        "[the part](#its-part), to [nothing](gone.md) and [no heading](linked.md#absent).\n"
        "```sh\n[not a link](inside-code.md)\n```\n", encoding="utf-8")
    (tmp_path / "docs" / "orphan.md").write_text("# Nobody links here\n", encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "# lumen\n\n## Guides\n\n- [the linked guide](docs/linked.md#its-part)\n"
        "- `[code](docs/orphan.md)` is code, not a link\n", encoding="utf-8")
    (tmp_path / "tool.py").write_text(
        '"""Why it is safe (README, "The threat model"); the guides: README, "Guides",\n'
        'docs/linked.md and docs/moved.md."""\n', encoding="utf-8")
    assert unlinked(tmp_path) == ["docs/orphan.md"]
    assert broken(tmp_path) == ["docs/linked.md:6: gone.md: no file docs/gone.md",
                                "docs/linked.md:6: linked.md#absent: linked.md has no "
                                "heading #absent"]
    stale = stale_citations(tmp_path)
    assert len(stale) == 2, stale
    assert any("cites README section 'The threat model'" in s for s in stale), stale
    assert any("cites docs/moved.md, which does not exist" in s for s in stale), stale
    (tmp_path / "docs" / "orphan.md").unlink()
    (tmp_path / "docs" / "linked.md").write_text("# Linked guide\n\n## Its part\n")
    (tmp_path / "tool.py").write_text('"""README, "Guides"; docs/linked.md."""\n')
    assert unlinked(tmp_path) == [] and broken(tmp_path) == [] == stale_citations(tmp_path)


def test_slugs_are_githubs():
    assert slug("Gradebook exports (Canvas, Moodle)") == "gradebook-exports-canvas-moodle"
    assert slug("The threat model: what learner code can and cannot do") == \
        "the-threat-model-what-learner-code-can-and-cannot-do"
    assert slug("The tests' own times") == "the-tests-own-times"
    assert slug("`make test` and `.ci/run`") == "make-test-and-cirun"
