"""Comments say what the code does and why, and every path they cite exists (issue 31).

Two checks, pure text (no import of the code they read):

- ``long_docstrings``: a module docstring is at most ``MAX_DOCSTRING_LINES`` lines, so it says
  what the module does, why, and its one non-obvious rule; history goes in commit messages and
  long rationale in docs/.
- ``missing_citations``: every repository path that a comment, a docstring or a Markdown guide
  cites (``autograder/boundary/request.py``, ``docs/speed.md``, ``sandboxed/scaffolds.py``,
  ``lumen/stages.py``, a bare ``test_rules.py``) names a file or folder that exists, and a
  ``path/module.name`` citation (``boundary/request.StageRequest``) a name that module has.
  Templates (``test_<stage>.py``, ``{name}``, ``*.py``) and names of other projects'
  files (``NOT_OURS``) are skipped.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_DOCSTRING_LINES = 15

#: Where module docstrings are held to the limit.
DOCSTRING_FOLDERS = ("autograder", "solutions", "lumen", "tests", "exercises/tests")
#: The chapter's companion code, not the grader's: their module docstrings are the learner's
#: stubs' (copied into exercises/), where they state the rules the hidden tests apply.
CHAPTER_CODE = {"lumen/embeddings.py", "lumen/gpt2.py"}

#: Where citations are looked for: comments and docstrings of these folders' Python files, and
#: the whole text of these Markdown files.
SOURCE_FOLDERS = ("autograder", "solutions", "lumen", "tests", "exercises", "tools",
                  "benchmarks", "deploy", ".ci")
MARKDOWN = ("README.md", "docs/*.md", "solutions/README.md", "exercises/README*",
            "handout/README.md")
#: A path under one of these is cited from the repository's root.
TOP_FOLDERS = ("autograder", "solutions", "lumen", "exercises", "tests", "docs", ".ci",
               "tools", "benchmarks", "deploy", "handout")
#: Names cited that are not files of this repository, each with what it is.
NOT_OURS = {
    "docs/externalGrading.md": "PrairieLearn's guide to external grading",
    "tiktoken_ext/openai_public.py": "tiktoken's table of encodings",
    "setup.py": "setuptools' build script (`setup.py develop`), which pyproject.toml replaces",
    "summary.md": "the class summary grade-batch writes beside grades.csv",
    "grades/summary.md": "the same, in the batch's example output folder",
    "tests/lumen.json": "the grader's settings in a PrairieLearn question's tests/ folder, "
                        "written by autograder/frontends/prairielearn_build.py",
    "test_x.py": "a placeholder for any test file's name",
    "notes.py": "a learner's extra file, written by tests/test_sandboxed.py",
}
#: Modules that are gone, cited by their old name: where their names went.
RETIRED = {"untrusted": "boundary/clean", "sandbox": "boundary/launcher",
           "submission": "boundary/intake", "worker_client": "boundary/client's Worker"}
#: Of those, the ones a code span may not name even alone (the others are ordinary words).
RETIRED_ALONE = {"worker_client", "untrusted"}
#: ``module.name`` citations whose module is not the file of ours with that name.
NOT_OUR_MODULES = {"request": "pytest's ``request`` fixture, as in ``request.param``"}
#: Citations in files other helpers are rewriting now, left for the lead: (file, cited path).
KNOWN_MISSING: set[tuple[str, str]] = set()

_SKIP = {".git", ".venv", "build", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis",
         "mutants", "node_modules"}
_EXTENSIONS = "py|md|toml|json|txt|sh|yml|yaml|html|ipynb|csv|cfg|ini|zip|png"
#: A path under a top folder: ``autograder/boundary/request.py``, ``docs/``, ``.ci/run``.
_ROOTED = re.compile(r"(?<![\w./~$-])((?:" + "|".join(map(re.escape, TOP_FOLDERS))
                     + r")/[\w./<>{}*-]*)")
#: A file cited by name, perhaps with folders: ``scaffolds.py``, ``boundary/client.py``.
_NAMED = re.compile(r"(?<![\w./~$<{*-])((?:[\w-]+/)*[\w-]+\.(?:py|md|toml))(?![\w/.-]*[\w<{*])")
#: A name in a module cited by path, ``boundary/request.StageRequest``, or by module name in
#: a code span, ````probes.PROBES````.
_MEMBER = re.compile(r"(?<![\w./~$-])((?:[\w-]+/)+\w+)\.([A-Za-z_]\w*)\b"
                     r"|(?<=`)([a-z_]\w*)\.([A-Za-z_]\w*)\b")

#: A code span holding one name: ``StageRequest``.
_SPAN = re.compile(r"(?<!`)``?(\w+)``?(?!`)")


def _tree(root: Path) -> list[Path]:
    """Every file and folder under ``root``, build outputs and environments left out."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP and not d.startswith(".backup-")
                         and not d.endswith(".egg-info"))
        found += [Path(folder, name) for name in [*dirs, *sorted(files)]]
    return found


def _python_files(root: Path, folders: tuple[str, ...]) -> list[Path]:
    return [p for folder in folders for p in _tree(root / folder)
            if p.suffix == ".py" and p.is_file()] if root.is_dir() else []


def module_docstring_lines(path: Path) -> int:
    """How many lines the module docstring of ``path`` has (0 without one)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    return len(doc.splitlines()) if doc else 0


def long_docstrings(root: Path) -> list[str]:
    """``file: N lines`` for each module docstring over the limit, outside the exceptions."""
    found = []
    for folder in DOCSTRING_FOLDERS:
        for path in _python_files(root, (folder,)):
            name = path.relative_to(root).as_posix()
            if name in CHAPTER_CODE:
                continue
            lines = module_docstring_lines(path)
            if lines > MAX_DOCSTRING_LINES:
                found.append(f"{name}: {lines} lines")
    return found


@functools.cache
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


#: A comment: from a ``#`` at the start of a line or after a space to the line's end (a ``#``
#: inside a string literal reads as one too, which costs nothing but a look).
_COMMENT = re.compile(r"(?:^|\s)(#.*)$")


def _docstrings(body: list[ast.stmt]):
    """(first line, text) of the docstring of each def and class in ``body``, nested ones too."""
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if (doc := ast.get_docstring(node, clean=False)) is not None:
                yield node.body[0].lineno, doc
            yield from _docstrings(node.body)


def commentary(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of each comment and docstring line of a Python file, or of each line
    of any other text file."""
    text = _text(path)
    lines = list(enumerate(text.splitlines(), start=1))
    if path.suffix != ".py":
        return lines
    found = [(number, m.group(1)) for number, line in lines if (m := _COMMENT.search(line))]
    tree = ast.parse(text)
    module = ast.get_docstring(tree, clean=False)
    for first, doc in [*([(tree.body[0].lineno, module)] if module else []),
                       *_docstrings(tree.body)]:
        found += [(first + i, line) for i, line in enumerate(doc.splitlines())]
    return sorted(found)


def _is_template(cited: str) -> bool:
    return any(mark in cited for mark in "<>{}*") or "..." in cited


def _existing(root: Path) -> tuple[set[str], set[str]]:
    """Every file and folder of the tree (relative, POSIX), and every path's tails
    (``boundary/client.py`` and ``client.py`` for ``autograder/boundary/client.py``)."""
    paths = {p.relative_to(root).as_posix() for p in _tree(root)}
    tails = {"/".join(parts[i:]) for p in paths for parts in [p.split("/")]
             for i in range(len(parts))}
    return paths, tails


def citations(line: str) -> list[str]:
    """The repository paths a line cites: rooted ones and file names, templates skipped."""
    cited = [m.rstrip(".") for m in _ROOTED.findall(line)]
    cited += [m for m in _NAMED.findall(line) if not any(m in c for c in cited)]
    return [c for c in cited if not _is_template(c) and c not in NOT_OURS]


def _sources(root: Path) -> list[Path]:
    markdown = sorted({p for pattern in MARKDOWN for p in root.glob(pattern) if p.is_file()})
    return markdown + _python_files(root, SOURCE_FOLDERS)


def _defines(text: str, name: str) -> bool:
    """Whether module text defines ``name``: a def, a class, an assignment or annotation at
    any indent, an import (one name of a parenthesised list too), or ``self.name = ...``."""
    n = re.escape(name)
    return re.search(rf"^\s*(?:(?:async\s+)?def|class)\s+{n}\b|^\s*{n}\s*[:=]|"
                     rf"^\s*(?:from\s+\S+\s+)?import\b.*\b{n}\b|\bself\.{n}\s*=|"
                     rf"^\s*from\s+\S+\s+import\s*\([^)]*\b{n}\b|"
                     rf"\bas\s+{n}\b", text, re.M) is not None


def missing_citations(root: Path, known: set[tuple[str, str]] = KNOWN_MISSING) -> list[str]:
    """``file:line: cited`` for each cited path that does not exist, and each cited module
    member its module does not hold, outside ``known``."""
    paths, tails = _existing(root)
    found = []
    for source in _sources(root):
        name = source.relative_to(root).as_posix()
        for number, line in commentary(source):
            for cited in citations(line):
                bare = cited.rstrip("/")
                rooted = bare.split("/")[0] in TOP_FOLDERS
                if (bare in paths if rooted else bare in tails):
                    continue
                if (name, cited) not in known:
                    found.append(f"{name}:{number}: {cited}")
            for alone in _SPAN.findall(line):
                if alone in RETIRED_ALONE and (name, alone) not in known:
                    found.append(f"{name}:{number}: {alone} (gone: see {RETIRED[alone]})")
            for match in _MEMBER.finditer(line):
                module, member = match.group(1, 2) if match.group(1) else match.group(3, 4)
                if (member in _EXTENSIONS.split("|") or _is_template(module)
                        or module in NOT_OUR_MODULES):
                    continue
                if module in RETIRED:
                    cited = f"{module}.{member}"
                    if (name, cited) not in known:
                        found.append(f"{name}:{number}: {cited} ({module} is gone: see "
                                     f"{RETIRED[module]})")
                    continue
                file = module + ".py"
                hits = [p for p in paths if p == file or p.endswith("/" + file)
                        or p.endswith(f"/{module}/__init__.py")]
                hits = [p for p in hits if not p.startswith("exercises/")] or hits
                if module.split("/")[0] in TOP_FOLDERS:
                    hits = [p for p in hits if p == file]
                if not hits:
                    continue  # not a module of ours (a path above says if it should be)
                if not any(_defines(_text(root / p), member) for p in hits):
                    cited = f"{module}.{member}"
                    if (name, cited) not in known:
                        found.append(f"{name}:{number}: {cited} (no {member} in "
                                     f"{' or '.join(sorted(hits))})")
    return found


# -- the tests ------------------------------------------------------------------------------

def test_module_docstrings_are_short():
    long = long_docstrings(ROOT)
    assert not long, (f"module docstrings over {MAX_DOCSTRING_LINES} lines: say what the module "
                      "does and why; move history to the commit message and long rationale to "
                      "docs/:\n" + "\n".join(long))


def test_every_cited_path_exists():
    missing = missing_citations(ROOT)
    assert not missing, ("paths and names cited in comments, docstrings and guides that do not "
                         "exist (update the citation where the file moved):\n"
                         + "\n".join(missing))


def test_the_known_missing_citations_are_still_there():
    """An entry of ``KNOWN_MISSING`` whose citation was fixed (or went) is dropped from the set."""
    found = missing_citations(ROOT, known=set())
    stale = sorted(f"{file}: {cited}" for file, cited in KNOWN_MISSING
                   if not any(f.startswith(f"{file}:") and f.split(": ", 1)[1].split(" (")[0]
                              == cited for f in found))
    assert not stale, f"KNOWN_MISSING lists citations that are gone: {stale}"


def test_the_checks_can_fail(tmp_path):
    """A long module docstring, a cited path or file that is gone and a member a module lacks
    are each found; a template, another project's file and a path that exists are not."""
    (tmp_path / "autograder" / "boundary").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "speed.md").write_text(
        "See `autograder/boundary/client.py` and `autograder/gone.py`, `test_<stage>.py`,\n"
        "PrairieLearn's docs/externalGrading.md and `exercises/.generated.json`.\n",
        encoding="utf-8")
    (tmp_path / "autograder" / "boundary" / "client.py").write_text(
        '"""' + "A line.\n" * (MAX_DOCSTRING_LINES + 1) + '"""\n\n'
        "class StageSession:\n"
        '    """Sent by ``boundary/request.py``; see ``boundary/client.StageSession`` and\n'
        '    ``boundary/client.worker_client``."""\n\n'
        "# what moved: tests/test_probes.py, and scaffolds.py\n"
        "# ``client.StageSession`` is here, ``client.gone`` and ``torch.equal`` are not\n"
        "# and `untrusted.clean_text` went, with ``worker_client``\n",
        encoding="utf-8")
    (tmp_path / "autograder" / "short.py").write_text(
        '"""' + "A line.\n" * MAX_DOCSTRING_LINES + '"""\n', encoding="utf-8")
    exempt = tmp_path / "lumen" / "embeddings.py"  # the chapter's code: named, with the reason
    exempt.parent.mkdir(parents=True, exist_ok=True)
    exempt.write_text('"""' + "A line.\n" * 40 + '"""\n', encoding="utf-8")
    assert long_docstrings(tmp_path) == [
        f"autograder/boundary/client.py: {MAX_DOCSTRING_LINES + 1} lines"]
    assert missing_citations(tmp_path) == [
        "docs/speed.md:1: autograder/gone.py",
        "docs/speed.md:2: exercises/.generated.json",
        "autograder/boundary/client.py:20: boundary/request.py",
        "autograder/boundary/client.py:21: boundary/client.worker_client "
        "(no worker_client in autograder/boundary/client.py)",
        "autograder/boundary/client.py:23: tests/test_probes.py",
        "autograder/boundary/client.py:23: scaffolds.py",
        "autograder/boundary/client.py:24: client.gone (no gone in autograder/boundary/client.py)",
        "autograder/boundary/client.py:25: worker_client (gone: see boundary/client's Worker)",
        "autograder/boundary/client.py:25: untrusted.clean_text (untrusted is gone: see "
        "boundary/clean)",
    ]
    (tmp_path / "autograder" / "boundary" / "request.py").write_text("", encoding="utf-8")
    assert "autograder/boundary/client.py:20: boundary/request.py" not in missing_citations(
        tmp_path)
