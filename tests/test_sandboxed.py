"""The folder that runs next to learner code (``autograder/sandboxed/``) keeps its rule and shape.

- **Its rule**: it imports nothing of the grader, the hidden suites or lumen (only the standard
  library, torch and its own modules), and never pickle: it speaks JSON plus raw tensor bytes.
- **The probes**: one module per stage, named as the stage and its hidden suite, and each probe
  in exactly one of them, the stage whose suite asks for it; ``PROBES`` is built from them.
- **The loader takes its module list from the request**: the grader builds the list from
  ``lumen.stages.SUBMISSION_FILES`` (the worker keeps no copy), and a request naming another
  list changes what a stage process writes and loads.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from autograder.boundary.request import MODULES, stage_request
from autograder.boundary.session import StageSession
from autograder.grading import Grader, Submission
from autograder.options import Options
from autograder.sandboxed import probes
from lumen.stages import STAGE_NAMES, SUBMISSION_FILES

ROOT = Path(__file__).resolve().parents[1]
SANDBOXED = ROOT / "autograder" / "sandboxed"
SUITES = ROOT / "autograder" / "suites"

# --- the rule: imports -----------------------------------------------------------------------

#: The folder's own modules and packages, as the worker imports them (by file name).
OWN = frozenset(p.stem for p in SANDBOXED.iterdir()
                if p.suffix == ".py" or (p / "__init__.py").is_file())
#: Modules that would unpickle (run code from bytes): never on the learner's side.
PICKLING = frozenset({"pickle", "marshal", "shelve", "copyreg", "dill", "cloudpickle", "joblib"})
ALLOWED = (frozenset(sys.stdlib_module_names) - PICKLING) | {"torch"} | OWN


def violations(source: str, path: Path) -> list[str]:
    """What ``source`` (the file at ``path``, inside sandboxed/) imports or calls that the
    folder's rule forbids: a module outside ``ALLOWED``, a relative import that leaves the
    folder, or torch.load/torch.save (pickle underneath)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.ImportFrom):
            package = path.parent
            for _ in range(node.level - 1):
                package = package.parent
            if not package.is_relative_to(SANDBOXED):
                found.append(f"line {node.lineno}: a relative import out of sandboxed/")
            continue
        elif (isinstance(node, ast.Attribute) and node.attr in ("load", "save")
              and isinstance(node.value, ast.Name) and node.value.id == "torch"):
            found.append(f"line {node.lineno}: torch.{node.attr} (pickle underneath)")
            continue
        else:
            continue
        found += [f"line {node.lineno}: imports {name}" for name in names
                  if name.split(".")[0] not in ALLOWED]
    return found


def test_the_folder_imports_nothing_of_the_grader_and_never_pickles():
    files = sorted(p for p in SANDBOXED.rglob("*.py") if "__pycache__" not in p.parts)
    assert SANDBOXED / "probes" / "__init__.py" in files  # the walk reaches the package
    found = {p.relative_to(ROOT).as_posix(): v for p in files
             if (v := violations(p.read_text(encoding="utf-8"), p))}
    assert not found, found


@pytest.mark.parametrize("source", [
    "import pickle", "from autograder import grading", "import lumen.stages",
    "from autograder.publish.stubber import stub", "import numpy", "from ...grading import Grader",
    "x = torch.load(f)",
])
def test_the_rule_check_sees_a_breach(source):
    assert violations(source, SANDBOXED / "probes" / "shared.py")


@pytest.mark.parametrize("source", ["import torch.nn.functional as F", "from . import shared",
                                    "from .meta_device import on_meta", "import protocol",
                                    "from collections.abc import Callable"])
def test_the_rule_check_allows_the_folder_its_own(source):
    assert violations(source, SANDBOXED / "probes" / "shared.py") == []


# --- the probes: one module per stage ------------------------------------------------------


def _stage(module) -> str:
    return module.__name__.rsplit(".", 1)[1]


def _strings(path: Path) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def test_every_stage_has_its_probe_module_named_as_its_suite():
    assert [_stage(m) for m in probes.STAGE_MODULES] == list(STAGE_NAMES)
    for stage in STAGE_NAMES:
        assert (SANDBOXED / "probes" / f"{stage}.py").is_file()
        assert (SUITES / f"test_{stage}.py").is_file()


def test_every_probe_belongs_to_one_stage_the_one_whose_suite_asks_for_it():
    """A probe is listed in the module that defines it, and its name is asked for by its own
    stage's suite and no other's: the registry is the stage modules' lists, joined."""
    owner = {}
    for module in probes.STAGE_MODULES:
        public = {name for name, value in vars(module).items() if callable(value)
                  and getattr(value, "__module__", None) == module.__name__
                  and not name.startswith("_") and not isinstance(value, type)}
        listed = {fn.__name__ for fn in module.PROBES}
        assert listed == public, f"{module.__name__}: a public function that is not a probe"
        owner.update((name, _stage(module)) for name in listed)
    assert sum(len(m.PROBES) for m in probes.STAGE_MODULES) == len(owner)  # no name twice
    assert set(probes.PROBES) == set(owner)
    asked = {stage: _strings(SUITES / f"test_{stage}.py") for stage in STAGE_NAMES}
    for name, stage in owner.items():
        askers = sorted(s for s in STAGE_NAMES if name in asked[s])
        assert askers == [stage], f"probe {name} is in probes/{stage}.py; asked for by {askers}"


def test_a_probe_name_in_two_stages_stops_the_import(monkeypatch):
    monkeypatch.setattr(probes, "STAGE_MODULES", (probes.embedding, probes.embedding))
    with pytest.raises(ImportError, match="two probes called"):
        probes._table()


# --- the loader: its module list is the request's -------------------------------------------


def test_the_request_names_the_submission_files_in_dependency_order():
    """From the one source, lumen.stages.SUBMISSION_FILES; of the submission's modules, each
    imports (relatively) only those before it, which the loader will have loaded."""
    assert list(MODULES) == [name.removesuffix(".py") for name in SUBMISSION_FILES]
    for stage in STAGE_NAMES:
        assert stage_request(stage, {}, {}).message()["modules"] == list(MODULES)
    for i, module in enumerate(MODULES):
        tree = ast.parse((ROOT / "lumen" / f"{module}.py").read_text(encoding="utf-8"))
        needs = {node.module for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}
        assert needs & set(MODULES) <= set(MODULES[:i]), (module, needs)


@pytest.fixture(scope="module")
def grader():
    with Grader(Options(device="cpu")) as g:
        yield g


def _loaded(grader, tmp_path: Path, modules: list[str]) -> tuple[str, dict]:
    """What stage 'embedding''s process printed while loading lumen's files plus notes.py,
    each printing its name on import, when its request names ``modules``; and the import
    errors it reported."""
    files = {name: (ROOT / "lumen" / name).read_text(encoding="utf-8") for name in
             SUBMISSION_FILES}
    files["notes.py"] = "NOTES = 1\n"
    files = {name: text + f'\nprint("loaded {name}")\n' for name, text in files.items()}
    uid = grader.uid_range[0] if grader.launcher.uses_uids() else None
    limits = Submission(worker=grader.worker, devices=["cpu"], files=files, uid=uid)
    request = stage_request("embedding", files, limits.limits("embedding"))
    request = replace(request, modules=modules,
                      given={**request.given, "notes": "NOTES = 1\n"},
                      owns={"notes": [], **request.owns}, foreign={"notes": [], **request.foreign})
    session = StageSession(grader.worker, request, time.monotonic() + 120)
    try:
        outcome = session.call("embedding_check_ids", ids=torch.tensor([0, 1]), vocab_size=5)
        assert outcome.ok, outcome
        return session.take_printed(), outcome.import_errors
    finally:
        session.close()
        grader.worker.reap()


def test_a_request_naming_other_modules_changes_what_loads(grader, tmp_path):
    printed, errors = _loaded(grader, tmp_path, list(MODULES))
    assert printed.split() == ["loaded", "embeddings.py", "loaded", "params.py",
                               "loaded", "gpt2.py"], printed
    assert errors == {}
    printed, errors = _loaded(grader, tmp_path, ["embeddings", "notes"])
    assert printed.split() == ["loaded", "embeddings.py", "loaded", "notes.py"], printed
    assert errors == {}


# --- what the zygote does once for every stage process ----------------------------------------


def _in_the_folder(code: str) -> list[str]:
    """``code`` run by a fresh Python with this folder first on its path, as the worker runs
    (its modules imported by file name); the lines it printed."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=SANDBOXED,
                          env={**os.environ, "PYTHONPATH": str(SANDBOXED)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_stub_the_zygote_compiled_runs_only_where_the_request_holds_its_text():
    """The zygote's compiled stubs are kept under their text: a request whose given code
    differs (another grader's stubs, a bug) runs its own text, never the zygote's."""
    assert _in_the_folder('''
        import loader
        loader.precompile({"params": "X = 'compiled'\\n"})
        loader._COMPILED["params", "X = 'compiled'\\n"] = compile("X = 'kept'", "<k>", "exec")
        print(loader._stub("params", {"given": {"params": "X = 'compiled'\\n"}}).X)
        print(loader._stub("params", {"given": {"params": "X = 'sent'\\n"}}).X)
        print(loader._stub("gpt2", {"given": {"gpt2": "X = 'never offered'\\n"}}).X)
    ''') == ["kept", "sent", "never offered"]


@pytest.mark.parametrize("since", [False, True], ids=["as the zygote had them", "one loaded since"])
def test_every_module_of_the_folder_is_hidden_from_learner_code(since):
    """``_hide_the_grader`` drops the zygote's grader modules by name, and looks at every
    module when one was loaded after the zygote noted them (here: ``scaffolds`` again)."""
    assert _in_the_folder(f'''
        import sys
        import worker
        if {since}:
            del sys.modules["scaffolds"]
        worker._note_the_grader()
        if {since}:
            import scaffolds
        assert "scaffolds" in sys.modules and "probes" in sys.modules
        worker._hide_the_grader()
        print(sorted(n for n, m in sys.modules.items() if worker._from_here(m)))
    ''') == ["[]"]


def test_stubs_offered_to_the_zygote_change_no_grade(grader):
    """What the zygote was sent (``Worker.offer_stubs``) only saves time: stubs it was sent
    that differ from the requests', or a line it cannot read, leave lumen at full marks."""
    grader.worker._command(b"given [not json\n")
    grader.worker._command(b"given " + json.dumps({m: "raise SystemExit('not the stub')\n"
                                                   for m in MODULES}).encode() + b"\n")
    grade = grader.grade(ROOT / "lumen", seed=3)
    assert grade.score == 100, [r.message for r in grade.results if not r.passed]


# --- the loader runs the text the rules read ---------------------------------------------------
# An encoding declaration makes Python's import system decode a file's bytes its own way: in
# UTF-7 ``+AAo-`` is a newline, in (raw_)unicode_escape ``\u000a`` is. A comment the rules read
# as a comment would then hide a line that runs. The loader compiles the text the grader sent
# (the submission decoded once, as UTF-8), so what runs binds exactly what the rules read.

#: Each codec Python accepts in a declaration, with the ways it spells a newline inside text
#: that reads as ASCII (UTF-8) to the rules.
NEWLINES = {
    "utf-7": ["+AAo-", "+AA0ACg-", "+AAoACg-"],
    "unicode_escape": ["\\n", "\\u000a", "\\x0a", "\\012", "\\r\\n"],
    "raw_unicode_escape": ["\\u000a", "\\U0000000a", "\\u000d\\u000a"],
}
DECLARATIONS = ["# -*- coding: {} -*-", "# vim: set fileencoding={} :", "# coding={}",
                "#!/usr/bin/env python\n# -*- coding: {} -*-"]


def _smuggling(rng, case: int) -> tuple[str, str]:
    """A module (its text, as the grader reads it) with a declaration and, in comments, lines
    that only a decoder honouring it would run; and the name those lines would bind."""
    codec = rng.choice(sorted(NEWLINES))
    hidden = f"HIDDEN_{case}"
    payload = rng.choice([f"{hidden} = 1", f"import gc as {hidden}", f"def {hidden}(): pass",
                          f"from math import pi as {hidden}"])
    lines = [rng.choice(DECLARATIONS).format(codec), f"SEEN_{case} = 1"]
    for _ in range(rng.randint(1, 3)):
        escape = rng.choice(NEWLINES[codec])
        lines.insert(rng.randint(1, len(lines)),
                     rng.choice(["# note", f"X_{case} = 2  # note", "    # note"]).split("#")[0]
                     + f"# a comment{escape}{payload}")
    return "\n".join(lines) + "\n", hidden


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_file_runs_as_the_text_the_rules_read_whatever_it_declares(seed, tmp_path):
    import random

    rng = random.Random(seed)
    cases = [_smuggling(rng, case) for case in range(40)]
    for text, hidden in cases:  # the attack is real: Python's own import would run it
        path = tmp_path / "plain.py"
        path.write_text(text, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("plain", path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except SyntaxError:  # a comment line indented into a block of its own
            continue
        assert hidden in vars(module), text
    files = {f"m{i}.py": text for i, (text, _) in enumerate(cases)}
    (tmp_path / "cases.json").write_text(json.dumps(files))
    printed = _in_the_folder(f'''
        import ast, json, os
        import loader
        folder = {str(tmp_path)!r}
        files = json.load(open(os.path.join(folder, "cases.json")))
        for name, text in files.items():
            with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                f.write(text)  # as isolation.write_files writes them
        modules = [name[:-3] for name in files]
        request = {{"modules": modules, "owns": {{m: [] for m in modules}},
                    "foreign": {{m: [] for m in modules}}, "files": files,
                    "given": {{m: "" for m in modules}}}}
        loaded, errors = loader.load(folder, request)
        for name, text in files.items():
            m = name[:-3]
            bound = sorted(n for n in vars(loaded[m]) if not n.startswith("__"))
            read = sorted({{t.id for node in ast.parse(text).body if isinstance(node, ast.Assign)
                           for t in node.targets}})
            print(json.dumps([m, bound, read, m in errors]))
    ''')
    rows = [json.loads(line) for line in printed]
    assert len(rows) == len(cases)
    for (module, bound, read, failed), (_, hidden) in zip(rows, cases, strict=True):
        assert not failed and hidden not in bound and bound == read, (module, bound, read)
