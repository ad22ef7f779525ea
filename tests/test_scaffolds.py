"""The scaffolds that stand in for the stages not being graded: enough to build on, no answer.

The process that runs a learner's code for one stage holds no line of lumen's solutions: each
function another stage owns is a public scaffold (``autograder/sandboxed/scaffolds.py``), and
the request the process receives names functions and carries the learner's own stubs. Proved
here, through one warm Grader as for a class:

- complete: a scaffold for every function a stage owns, importing neither lumen nor the grader;
- enough to build on: every correct variant (tests/variants/), class layouts of the learner's
  own included, gets full marks on every stage, not only its own (that each known mistake is
  still named, with scaffolds around it, is tests/test_grader_variants.py's);
- not an answer: a submission whose own functions are the scaffolds loses points there;
- nothing to find: no solution line is in scaffolds.py or in any request, and a submission that
  searches its whole process for the other stages' code shows none in its feedback.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import textwrap
from pathlib import Path

import pytest

from autograder.boundary.request import MODULES, stage_request
from autograder.grading import Grader
from autograder.sandboxed import scaffolds
from autograder.views.report import gradescope, terminal
from lumen import stages
from solutions import release
from tests.variants.build import make_submission

SCAFFOLDS_FILE = Path(scaffolds.__file__)
GIVEN_FILE = SCAFFOLDS_FILE.with_name("given.py")
SUITES = release.ROOT / "autograder" / "suites"
OWNED = [key for s in stages.STAGES for key in s.owns]


def _solution_lines() -> set[str]:
    """Every telling line (three words or more) inside lumen's solution regions, stripped,
    minus the lines that given code holds too (as tests/test_release.py counts them)."""
    lines: set[str] = set()
    given: set[str] = set()
    for name in release.STUBBED:
        source = (release.LUMEN / name).read_text(encoding="utf-8").splitlines()
        inside = [False] * len(source)
        for region in release.find_regions("\n".join(source), name):
            for n in range(region.begin, region.end - 1):
                inside[n] = True
                lines.add(source[n].strip())
        given |= {line.strip() for line, solved in zip(source, inside, strict=True) if not solved}
    return {line for line in lines - given if len(re.findall(r"\w+", line)) >= 3}


SOLUTION = _solution_lines()


def _leaks(text: str, allowed: frozenset[str] = frozenset()) -> list[str]:
    """The solution lines found in ``text``: as a line of it, or inside one."""
    return sorted(line for line in SOLUTION - allowed if line in text)


def _strings(value: object) -> list[str]:
    """Every string in a request (keys and values, nested)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


@pytest.fixture(scope="module")
def grader():
    """One warm worker for every submission here, as for a class."""
    with Grader() as g:
        yield g


def _function(value: object):
    """The function inside a scaffold (a property's getter, a staticmethod's function)."""
    return value.fget if isinstance(value, property) else getattr(value, "__func__", value)


def _is_stand_in(function) -> bool:
    """Whether ``function`` is one of the scaffolds that only refuse to run."""
    return function.__code__ is scaffolds._stand_in("m:f", "s").__code__


def _stage(result, name: str):
    return next(s for s in result.stages if s.name == name)


# Complete


def test_every_owned_function_has_a_scaffold():
    assert sorted(scaffolds.SCAFFOLDS) == sorted(OWNED), \
        "scaffolds.SCAFFOLDS must hold exactly the functions lumen/stages.py gives to stages"


@pytest.mark.parametrize("key", OWNED)
def test_a_stand_in_names_its_stage(key):
    """A scaffold that refuses to run says which stage owns it (never 'not implemented yet',
    which the grader would read as the graded stage's own stub)."""
    function = _function(scaffolds.SCAFFOLDS[key])
    if not _is_stand_in(function):
        return  # a working scaffold
    with pytest.raises(scaffolds.ScaffoldError, match=f"stage '{stages.owner(*key.split(':'))}'"):
        function()


def test_scaffolds_import_only_torch_math_and_the_standard_library():
    tree = ast.parse(SCAFFOLDS_FILE.read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"__future__", "collections", "math", "torch"}, imported


def test_the_given_code_pinning_imports_only_torch_and_the_standard_library():
    """sandboxed/given.py, which puts the stub's given code into the learner's classes, ships
    into the sandbox next to the scaffolds: it never imports lumen or the grader either."""
    tree = ast.parse(GIVEN_FILE.read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"__future__", "ast", "collections", "contextlib", "dataclasses",
                        "functools", "itertools", "operator", "types", "torch"}, imported
    leaks = _leaks(GIVEN_FILE.read_text(encoding="utf-8"))
    assert not leaks, "solution lines in given.py:\n" + "\n".join(leaks)


def test_no_scaffold_uses_zero_argument_super():
    """super() would go to the learner's own base class, which may take other arguments."""
    for key, value in scaffolds.SCAFFOLDS.items():
        function = _function(value)
        assert "__class__" not in function.__code__.co_freevars, f"{key} uses super()"


# No solution anywhere


def test_the_leak_check_sees_the_solutions():
    assert len(SOLUTION) > 50, "too few solution lines found: is find_regions still right?"
    leaked = _leaks((release.LUMEN / "embeddings.py").read_text(encoding="utf-8"))
    assert len(leaked) > 20, "the leak check does not find lumen's own lines in lumen"


def test_no_solution_line_in_the_scaffolds():
    leaks = _leaks(SCAFFOLDS_FILE.read_text(encoding="utf-8"))
    assert not leaks, "solution lines in scaffolds.py:\n" + "\n".join(leaks)


@pytest.mark.parametrize("stage", stages.STAGE_NAMES)
def test_no_solution_line_in_a_request(stage):
    request = stage_request(stage, files={}, limits={}).message()  # all a process is sent
    assert set(request) == {"stage", "modules", "owns", "foreign", "given", "files", "limits"}
    owned = [f"{m}:{q}" for m, names in request["owns"].items() for q in names]
    assert sorted(owned) == sorted(stages.stage(stage).owns)
    for module in MODULES:  # given = the learner's stub, exactly as exercises/ has it
        assert request["given"][module] == (release.EXERCISES / f"{module}.py").read_text(
            encoding="utf-8")
    leaks = _leaks("\n".join(_strings(request)))
    assert not leaks, f"solution lines in stage {stage!r}'s request:\n" + "\n".join(leaks)


# Enough to build on


def _correct_variants() -> list:
    out = []
    for stage in stages.STAGE_NAMES:
        try:
            module = importlib.import_module(f"tests.variants.{stage}")
        except ModuleNotFoundError:
            continue
        for name, replacements in module.CORRECT.items():
            out.append(pytest.param(replacements, id=f"{stage}: {name}"))
    return out


@pytest.mark.parametrize("replacements", _correct_variants())
def test_correct_variant_gets_full_marks_on_every_stage(grader, tmp_path, replacements):
    """Graded whole: each stage it does not own runs its code next to the scaffolds, so a
    learner's own class layout (a base class, mixins, helpers) must not cost those points."""
    result = grader.grade(make_submission(tmp_path / "submission", replacements))
    failures = [f"{s.name}: {r.name}: {r.message}" for s in result.stages
                for r, _, _ in s.tests if not r.passed]
    assert not failures, "a correct submission lost points:\n" + "\n".join(failures)


@pytest.mark.parametrize(("broken", "kept"), [("embeddings", ("params", "tying")),
                                              ("params", ("embedding", "tying", "init"))])
def test_a_file_that_fails_to_import_leaves_the_other_stages_their_points(grader, tmp_path,
                                                                          broken, kept):
    """A file that does not even parse: the stages it does not hold still build on its stub
    with the scaffolds in it (GPT2 imports the stub's Embedding, or its PRESETS), and get
    full marks."""
    folder = make_submission(tmp_path / "submission", {})
    (folder / f"{broken}.py").write_text("def broken(:\n", encoding="utf-8")
    result = grader.grade(folder)
    for name in kept:
        graded = _stage(result, name)
        failures = [f"{r.name}: {r.message}" for r, _, _ in graded.tests if not r.passed]
        assert not failures, f"stage {name} lost points:\n" + "\n".join(failures)
    assert _stage(result, "embedding" if broken == "embeddings" else "params").score == 0


def test_a_class_the_learner_removed_is_taken_from_the_stub(grader, tmp_path):
    """No RowLookup (given code, which a forward by plain indexing does not need): full marks
    everywhere."""
    folder = make_submission(tmp_path / "submission", {
        "embeddings:RowLookup": "",
        "embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                return self.scale_output(self.weight[ids.long()])
        ''',
    })
    assert "class RowLookup" not in (folder / "embeddings.py").read_text(encoding="utf-8")
    result = grader.grade(folder)
    failures = [f"{s.name}: {r.name}: {r.message}" for s in result.stages
                for r, _, _ in s.tests if not r.passed]
    assert not failures, "a correct submission lost points:\n" + "\n".join(failures)


# Not an answer


def _scaffold_source(key: str) -> str:
    """The scaffold of ``key`` as source pasted in place of the learner's function: what a
    learner who copied it out of the grading process would submit. (A stand-in is closed over
    its message, so it is written out with that message.)"""
    name = key.rsplit(".", 1)[-1].split(":")[-1]
    value = scaffolds.SCAFFOLDS[key]
    function = _function(value)
    decorator = ("@property\n" if isinstance(value, property)
                 else "@staticmethod\n" if isinstance(value, staticmethod) else "")
    if _is_stand_in(function):
        try:
            function()
        except scaffolds.ScaffoldError as refused:
            message = str(refused)
        return decorator + (f"def {name}(*args, **kwargs):\n"
                            f"    raise ScaffoldError({message!r})\n")
    source = textwrap.dedent(inspect.getsource(function))
    return decorator + re.sub(r"^def \w+\(", f"def {name}(", source, count=1, flags=re.M)


#: What the pasted scaffolds use from scaffolds.py, appended to each module of the submission.
HELPERS = {
    "embeddings": (f"import torch.nn.functional as F\n\nSCALE_FACTOR = {scaffolds.SCALE_FACTOR!r}"
                   f"\n\n\n{inspect.getsource(scaffolds.ScaffoldError)}"),
    "params": inspect.getsource(scaffolds.ScaffoldError),
    "gpt2": inspect.getsource(scaffolds._uniform),
}


def _grafted(folder: Path, keys: list[str]) -> Path:
    """lumen's files with the functions ``keys`` replaced by their scaffolds' source."""
    make_submission(folder, {key: _scaffold_source(key) for key in keys})
    for module in {key.split(":")[0] for key in keys}:
        path = folder / f"{module}.py"
        path.write_text(f"{path.read_text(encoding='utf-8')}\n\n{HELPERS[module]}",
                        encoding="utf-8")
    return folder


def _own_scaffolds() -> list:
    out = []
    for s in stages.STAGES:
        out += [pytest.param(s.name, [key], id=f"{s.name}: {key}") for key in s.owns]
        if len(s.owns) > 1:
            out.append(pytest.param(s.name, list(s.owns), id=f"{s.name}: all of them"))
    return out


@pytest.mark.parametrize(("stage", "keys"), _own_scaffolds())
def test_scaffold_loses_points_on_its_own_stage(grader, tmp_path, stage, keys):
    result = grader.grade(_grafted(tmp_path / "submission", keys), stages=[stage])
    graded = _stage(result, stage)
    assert not [r for r, _, _ in graded.tests if r.grader_error]
    assert graded.score < graded.max_score, \
        f"the scaffolds of {keys} got stage {stage!r}'s full marks: a copy would be an answer"


# Nothing to find

#: What a hostile submission does: find every text in its process that holds code of the
#: stages' functions and is not in its own files, then show those lines to the world.
SCAN = '''

def _scan_process():
    """Lines of the stages' functions found anywhere in this process, not in my own files."""
    import gc, os, sys, types
    cached = sys.modules.get("_scan_cache")
    if cached is not None:
        return cached.lines
    names = {names!r}
    here = os.path.dirname(os.path.abspath(__file__))
    own = set()
    for file in ("embeddings.py", "params.py", "gpt2.py"):
        try:
            with open(os.path.join(here, file), encoding="utf-8") as f:
                own |= {{line.strip() for line in f}}
        except OSError:
            pass
    texts = []

    def walk(value, depth=0):
        if type(value) is str:
            if "def " in value and "\\n" in value:
                texts.append(value)
        elif depth < 4 and type(value) in (dict, list, tuple, set):
            items = value.items() if type(value) is dict else enumerate(value)
            for key, item in list(items):
                walk(key, depth + 1)
                walk(item, depth + 1)

    import inspect
    for obj in gc.get_objects():
        if type(obj) is types.FunctionType:
            code = obj.__code__
            if "site-packages" in code.co_filename or code.co_filename.startswith(sys.base_prefix):
                continue
            try:
                texts.append(inspect.getsource(obj))
            except Exception:  # no source file (exec'd code), or one it may not read
                pass
            walk(list(code.co_consts))
        elif type(obj) in (dict, list, tuple):
            walk(obj, 2)
    frame = sys._getframe()
    while frame is not None:  # the worker's own frames: load(), the probe loop, their request
        walk(dict(frame.f_locals))
        frame = frame.f_back
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None) or ""
        if file and "site-packages" not in file and not file.startswith(sys.base_prefix):
            try:
                with open(file, encoding="utf-8") as f:
                    texts.append(f.read())
            except (OSError, UnicodeDecodeError):
                pass
    found, seen = [], set()
    for text in texts:  # the body of every def of a stage's function name
        body = None
        for line in text.splitlines():
            stripped = line.strip()
            indent = len(line) - len(line.lstrip())
            if body is not None and stripped and indent <= body:
                body = None
            match = stripped.startswith("def ") and stripped[4:].split("(")[0] in names
            if match:
                body = indent
            elif body is not None and stripped and stripped not in own and stripped not in seen:
                seen.add(stripped)
                found.append(stripped)
    cache = types.ModuleType("_scan_cache")
    cache.lines = found
    sys.modules["_scan_cache"] = cache
    return found


def _findings(where):
    import sys
    found = _scan_process()
    tops = {{m.split(".")[0] for m in sys.modules}}
    suspects = sorted(m for m in tops if "refer" in m or "lumen" in m or "solution" in m)
    head = f"SCAN-FOUND {{len(found)}} lines {{where}}, modules {{suspects}}:"
    return "\\n".join([head, *found])


def _show(where):
    text = _findings(where)
    print(text)
    raise RuntimeError(text)
'''

AT_IMPORT = '''
_show("at import")
'''

IN_PROBES = '''
print(_findings("at import"))


def _attack(*args, **kwargs):
    _show("in a probe")


for _key in {keys!r}:
    *_outer, _name = _key.split(".")
    _value = property(_attack) if _name == "embedding_share" else _attack
    if _outer == ["RowLookup"]:
        _value = staticmethod(_attack)
    if _outer:
        setattr(globals()[_outer[0]], _name, _value)
    else:
        globals()[_name] = _value
'''


def _hostile(folder: Path, when: str) -> Path:
    """The learner's stubs (no solution line in them) with the scan above, run at import
    (``when="import"``: the module fails to import, with the lines in its error) or in every
    function the stages own (``"probes"``)."""
    folder.mkdir(parents=True)
    names = sorted({key.split(":")[1].split(".")[-1] for key in OWNED})
    for module in MODULES:
        text = (release.EXERCISES / f"{module}.py").read_text(encoding="utf-8")
        text += textwrap.dedent(SCAN.format(names=names))
        if when == "import":
            text += AT_IMPORT if module != "params" else ""  # params: gpt2 needs its PRESETS
        else:
            qualnames = [key.split(":")[1] for key in OWNED if key.startswith(f"{module}:")]
            text += IN_PROBES.format(keys=qualnames)
        (folder / f"{module}.py").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("when", ["import", "probes"])
def test_a_search_of_the_whole_process_finds_no_solution(grader, tmp_path, when):
    result = grader.grade(_hostile(tmp_path / "submission", when))
    results = [r for s in result.stages for r, _, _ in s.tests]
    assert not [r for r in results if r.grader_error]
    assert result.score == 0, "the hostile submission has no solution in it: it earns nothing"
    shown = [r.message for r in results] + [r.output for r in results]
    shown += [terminal(result), json.dumps(gradescope(result))]
    assert any("SCAN-FOUND" in text for text in shown), "the search never ran"
    assert not [t for t in shown if "SCAN-FOUND" in t and "modules []" not in t], \
        "a module of the reference (or of lumen) was loaded next to the learner's code"
    # The hidden suites' own hints quote a few solution lines on purpose (TIE, RESET): those
    # are the grader's words, shown to every learner who fails that test, not a leak.
    hints = frozenset(line for line in SOLUTION
                      if any(line in p.read_text(encoding="utf-8") for p in SUITES.glob("*.py")))
    leaks = _leaks("\n".join(shown), hints)
    assert not leaks, "a solution line reached the learner's feedback:\n" + "\n".join(leaks)
