"""Every promise an owned function's docstring makes has a row in the table, and every row a check.

The table is ``autograder/suites/promises``. One promise, read from the docstring of each
function a stage owns (``lumen.stages``; ``Embedding.__init__`` is documented by its class),
is: an entry of ``Args:``, ``Raises:`` or ``Shapes:``; the whole ``Returns:`` section; or a
sentence outside them that states a dtype, a shape, a device or an identity ("the same
tensor", in place). Other sentences need no row, but may have one. A row covers a promise when
its ``says`` occurs, whitespace folded, in the promise's text.

For each stage on its own, the test fails when the stage has no rows, a promise has no row, a
row's ``says`` is not in its function's docstring, a row names a function the stage does not
own, or its hidden test (``autograder/suites/test_<stage>.py``) or visible test
(``exercises/tests/test_<stage>.py``) does not exist, found by the AST.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.suites.promises import ALL, CHECK_NAMED, stage_promises
from lumen.stages import STAGE_NAMES, stage

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("Args", "Returns", "Raises", "Shapes")
#: A sentence outside the sections that states one of these is a promise of its own.
STATED = re.compile(r"dtype|float(16|32|64)|bfloat16|u?int(8|16|32|64)|LongTensor|shape|"
                    r"\(\.\.\.|\(V, d\)|\(d,\)|device|same tensor|same Parameter|in place",
                    re.IGNORECASE)


@dataclass(frozen=True)
class Unit:
    """One promise of one docstring: where it is (``Args: ids``) and its words, folded."""

    where: str
    text: str


def fold(text: str) -> str:
    return " ".join(text.split())


def docstring(owned: str) -> str:
    """The docstring of ``"module:Qualified.name"`` in lumen (a class's for its __init__)."""
    module_name, qualname = owned.split(":")
    target: object = importlib.import_module(f"lumen.{module_name}")
    parts = qualname.split(".")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    for part in parts:
        target = inspect.getattr_static(target, part)
    if isinstance(target, property):
        target = target.fget
    if isinstance(target, staticmethod | classmethod):
        target = target.__func__
    return inspect.cleandoc(target.__doc__ or "")


def units(doc: str) -> list[Unit]:
    """The promises of one docstring, by the rules in this module's docstring."""
    found: list[Unit] = []
    body: list[str] = []
    section = None
    entry: list[str] = []

    def close_entry() -> None:
        if entry:
            head, _, _ = entry[0].strip().partition(":")
            where = section if section == "Returns" else f"{section}: {head.strip()}"
            found.append(Unit(where, fold(" ".join(entry))))
            entry.clear()

    for line in doc.splitlines():
        header = line.strip().rstrip(":")
        if line.strip().endswith(":") and header in SECTIONS and not line.startswith(" "):
            close_entry()
            section = header
            continue
        if section is None:
            body.append(line)
        elif not line.strip():
            continue
        elif not line.startswith(" "):  # back at the left margin: the body again
            close_entry()
            section = None
            body.append(line)
        elif section != "Returns" and not line.startswith("     ") and entry:
            close_entry()
            entry.append(line)
        else:
            entry.append(line)
    close_entry()
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z`\"(])", fold(" ".join(body))):
        if STATED.search(sentence):
            found.append(Unit("body", sentence))
    return found


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    return {node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_the_parser_finds_each_kind_of_promise():
    """The unit of a promise, on a docstring of every kind (so a parser bug cannot hide rows)."""
    doc = docstring("embeddings:Embedding.forward")
    where = [u.where for u in units(doc)]
    assert where == ["Args: ids", "Returns", "Raises: TypeError, IndexError"], where
    init = {u.where for u in units(docstring("embeddings:Embedding.__init__"))}
    assert {"Args: vocab_size", "Args: d_model", "Args: std", "Args: scale",
            "Shapes: forward", "body"} <= init, init
    ids = next(u for u in units(docstring("embeddings:check_ids")) if u.where == "Args: ids")
    assert "compare them as int64" in ids.text and "vocab_size" not in ids.where


@pytest.mark.parametrize("name", STAGE_NAMES)
def test_every_promise_has_a_row_and_every_row_a_check(name):
    rows = stage_promises(name)
    assert rows, (f"stage {name!r} has no table of promises yet: write "
                  f"autograder/suites/promises/{name}.py (PROMISES, one Promise per row)")
    owned = stage(name).owns
    hidden = _tests_in(ROOT / "autograder" / "suites" / f"test_{name}.py")
    visible = _tests_in(ROOT / "exercises" / "tests" / f"test_{name}.py")
    problems = []
    for row in rows:
        if row.function not in owned:
            problems.append(f"{row.function}: not a function stage {name!r} owns ({owned})")
            continue
        if fold(row.says) not in fold(docstring(row.function)):
            problems.append(f"{row.function}: its docstring does not say {row.says!r}")
        if not row.inputs.strip():
            problems.append(f"{row.function} ({row.says!r}): say which inputs the check sends")
        for kind, ref, found, folder in (("hidden", row.hidden, hidden, "autograder/suites"),
                                         ("visible", row.visible, visible, "exercises/tests")):
            file, _, test = ref.partition("::")
            if file != f"test_{name}.py" or test not in found:
                problems.append(f"{row.function} ({row.says!r}): no {kind} test {ref!r} in "
                                f"{folder}/test_{name}.py")
        for named in CHECK_NAMED.findall(row.inputs):  # a check holding a part of it
            if named not in hidden:
                problems.append(f"{row.function} ({row.says!r}): its inputs name {named!r}, "
                                f"not a test of autograder/suites/test_{name}.py")
    for function in owned:
        says = [fold(r.says) for r in rows if r.function == function]
        for unit in units(docstring(function)):
            if not any(s in unit.text for s in says):
                problems.append(f"{function}, {unit.where}: no row for {unit.text[:120]!r}")
    assert not problems, f"stage {name!r}:\n" + "\n".join(problems)


def test_rows_are_unique():
    seen = [(p.function, fold(p.says), p.hidden) for p in ALL]
    repeated = sorted({row for row in seen if seen.count(row) > 1})
    assert not repeated, f"rows given twice: {repeated}"


#: An example a docstring states: a worked call or a number it promises for one.
_EXAMPLE = re.compile(r">>>|\b[Ee]xample\b|\be\.g\.|\d{1,3}(,\d{3}){2,}")
#: What a docstring says when its tensor argument may be 0-d, and when it may be empty.
_ZERO_D = re.compile(r"any shape|0-d")
_ANY_LEADING = re.compile(r"any shape|\(\.\.\.")
#: A query the docstring requires in the table's dtype: the two never meet as two dtypes.
_SAME_DTYPE = re.compile(r"query: [^\n]*in ``E``'s dtype")


def _owned_object(owned: str) -> tuple[object, object]:
    """The function behind ``"module:Qualified.name"`` and the class that holds it (or None)."""
    module_name, qualname = owned.split(":")
    holder: object = None
    target: object = importlib.import_module(f"lumen.{module_name}")
    for part in qualname.split("."):
        holder, target = target, inspect.getattr_static(target, part)
    if isinstance(target, property):
        target = target.fget
    if isinstance(target, staticmethod | classmethod):
        target = target.__func__
    return target, holder if inspect.isclass(holder) else None


def applicable(owned: str) -> set[str]:
    """The EDGES classes that apply to an owned function, from its signature and docstring:

    - every tensor argument: "size-1" and "devices"; "0-d" where the docstring lets it have
      any shape or says 0-d, "empty" where it has any leading dimensions (``(...)``); token
      ids (``ids``): "integer dtypes"; any other tensor: "float dtypes", and "mixed dtypes"
      where two of them meet (``a`` and ``b``; ``E`` and a query), unless the docstring
      requires them to share one (``query: ... in ``E``'s dtype``);
    - a method of a record (a dataclass, ``ParamCount``), or a record argument: "by hand";
    - an argument with a default: "defaults";
    - a docstring that states an example (a worked call, a number like 124,439,808):
      "examples";
    - a method of an nn.Module that makes or fills tensors (``init_weights``,
      ``reset_parameters``, ``tie_weights``, ``scale_output``): "devices".
    """
    import dataclasses

    import torch

    function, holder = _owned_object(owned)
    doc = docstring(owned)
    found: set[str] = set()
    if owned.endswith("__init__") and holder is not None:
        function = holder.__init__
    signature = inspect.signature(function)
    floats = 0
    for name, parameter in signature.parameters.items():
        if name in ("self", "cls"):
            continue
        annotation = str(parameter.annotation)
        if parameter.default is not inspect.Parameter.empty:
            found.add("defaults")
        if "Tensor" in annotation:
            found |= {"size-1", "devices"}
            if _ZERO_D.search(doc):
                found.add("0-d")
            if _ANY_LEADING.search(doc):
                found.add("empty")
            if name == "ids":
                found.add("integer dtypes")
            else:
                found.add("float dtypes")
                floats += 1
        if "ParamCount" in annotation:
            found.add("by hand")
    if floats >= 2 and not _SAME_DTYPE.search(doc):
        found.add("mixed dtypes")
    if holder is not None and dataclasses.is_dataclass(holder):
        found.add("by hand")
    if (holder is not None and issubclass(holder, torch.nn.Module)
            and function.__name__ in ("init_weights", "reset_parameters", "tie_weights",
                                      "scale_output")):
        found.add("devices")
    if _EXAMPLE.search(doc):
        found.add("examples")
    return found


#: Edge classes that apply to a function but that no check sends yet, each with why: the
#: debt, in one place. A gap that a row closes fails the test until it is removed here.
GAPS: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("name", STAGE_NAMES)
def test_every_edge_class_that_applies_is_sent(name):
    """For each function the stage owns, every class of ``EDGES`` that applies to it
    (``applicable``) is named by one of its rows, or listed in ``GAPS`` with its reason;
    every row names only known classes."""
    from autograder.suites.promises import EDGES

    rows = stage_promises(name)
    problems = []
    for row in rows:
        unknown = set(row.edges) - set(EDGES)
        if unknown:
            problems.append(f"{row.function} ({row.says!r}): unknown edge classes "
                            f"{sorted(unknown)}; the classes are {sorted(EDGES)}")
    for function in stage(name).owns:
        sent = {edge for row in rows if row.function == function for edge in row.edges}
        for missing in sorted(applicable(function) - sent):
            if (function, missing) not in GAPS:
                problems.append(f"{function}: no row sends {missing!r} ({EDGES[missing]}): add "
                                f"it to the edges of the row whose check sends it, in "
                                f"autograder/suites/promises/{name}.py")
        for closed in sorted(edge for f, edge in GAPS if f == function and edge in sent):
            problems.append(f"{function}: {closed!r} is sent now: remove it from GAPS in "
                            "tests/test_promises.py")
    assert not problems, f"stage {name!r}:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", STAGE_NAMES)
def test_every_row_names_a_mutant_that_exists(name):
    """Each row names its mutant: a MISTAKES entry of tests/variants/<stage>.py that breaks
    that promise alone (``make promise-mutants`` grades each on every stage)."""
    variants = importlib.import_module(f"tests.variants.{name}")
    problems = [f"{row.function} ({row.says!r}): " + (
                    "name its mutant (mutant=...), the MISTAKES entry that breaks it alone"
                    if not row.mutant else
                    f"its mutant {row.mutant!r} is not in tests/variants/{name}.py's MISTAKES")
                for row in stage_promises(name) if row.mutant not in variants.MISTAKES]
    assert not problems, f"stage {name!r}:\n" + "\n".join(problems)


def test_applicable_edges_follow_the_signature():
    """The rules of ``applicable``, on functions of every kind (so a bug cannot hide a class)."""
    assert applicable("embeddings:Embedding.forward") >= {
        "size-1", "0-d", "empty", "integer dtypes", "devices"}
    assert applicable("embeddings:cosine_similarity") >= {
        "size-1", "float dtypes", "mixed dtypes", "defaults", "devices"}
    assert "mixed dtypes" in applicable("embeddings:cosine_neighbours")
    assert "mixed dtypes" not in applicable("embeddings:_top_k")  # its query is in E's dtype
    assert "by hand" in applicable("params:ParamCount.memory_bytes")
    assert {"defaults", "examples"} <= applicable("params:count_params")
