# Generated from lumen/rules.py by `make stubs`: given code, nothing to write here.
# Learners: read it, run it, no need to change it. Course staff: edit lumen/rules.py.
"""The rules the grader reads your source for: what your three files may not contain.

The grader runs your code on fresh inputs and compares the results with PyTorch's, but two
things cannot be seen from results alone, so it also reads embeddings.py, params.py and gpt2.py
(without running them) with this checker:

1. **Banned built-ins.** A stage that asks you to write something yourself bans PyTorch's own
   version of it, anywhere in your three files, helpers included (``BANS``): stage
   'embedding' bans nn.Embedding, F.embedding, torch.embedding, F.embedding_bag and
   nn.EmbeddingBag; stage 'onehot' bans F.one_hot.
2. **Refused constructs.** Your code runs inside the grader's process, next to the grader's
   own code that watches which torch functions run. Code that could switch that watch off, get
   around it or rewrite what the grader sees is refused, wherever it is in your files:
   turning strings into code (``eval``, ``exec``, ``compile``, ``__import__``, importlib),
   reaching functions by a computed name (``getattr(F, "one_" + "hot")``, ``vars``,
   ``globals``, ``__dict__``), reaching into the running program (``gc``, ``inspect``,
   ``ctypes``, ``sys.modules``, ``sys._getframe``, frames and code objects such as
   ``f_back`` or ``__globals__``), other threads and processes (``threading``,
   ``concurrent``, ``multiprocessing``, ``subprocess``, ``os``), torch's internals
   (``torch._C``, ``torch.ops``, ``torch.library``, ``torch.overrides``, ``torch.jit``,
   ``torch.utils``), files (``open``) and importing modules outside ``ALLOWED_MODULES``. None
   of it is needed to write a lookup table.

Only the two "written by hand" tests depend on this check (stages 'embedding' and 'onehot');
every other test looks at what your code computes. Dead code is not read: comments, strings and
docstrings, and the bodies of ``if __name__ == "__main__":``, ``if False:`` and
``if TYPE_CHECKING:``, so a self-check that compares your code with F.one_hot can stay in a
``__main__`` block. Check your own files, as the grader does::

    python -m exercises.rules
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

#: The files the grader reads (lumen/stages.py's SUBMISSION_FILES).
FILES: tuple[str, ...] = ("embeddings.py", "params.py", "gpt2.py")
#: Your own modules: importing them (``from .embeddings import Embedding``) is always fine.
OWN_MODULES = frozenset({"embeddings", "params", "gpt2", "exercises"})


@dataclass(frozen=True)
class Ban:
    """What a stage forbids: torch's own version of what its functions build by hand."""

    stage: str
    names: frozenset[str]  # attribute and import names (F.embedding, nn.Embedding, ...)
    ops: frozenset[str]  # the same as recorded while the code runs, normalised (see op_name)
    what: str  # for a message: the banned built-ins, as a learner writes them


BANS: dict[str, Ban] = {
    "embedding": Ban(
        stage="embedding",
        names=frozenset({"embedding", "Embedding", "embedding_bag", "EmbeddingBag"}),
        ops=frozenset({"embedding", "embedding_bag", "embedding_bag_forward_only"}),
        what="PyTorch's own embedding (nn.Embedding, F.embedding, torch.embedding, "
        "F.embedding_bag, nn.EmbeddingBag)",
    ),
    "onehot": Ban(
        stage="onehot",
        names=frozenset({"one_hot"}),
        ops=frozenset({"one_hot"}),
        what="PyTorch's own one-hot (F.one_hot)",
    ),
}

#: Why each kind of construct is refused, as the learner reads it.
WHY = {
    "code": "it runs code the grader cannot read (a string turned into code, or a module "
    "loaded by name)",
    "names": "it reaches a function by a name computed at run time, which hides from the "
    "grader what your code calls",
    "program": "it reaches into the running program (its frames, objects or loaded modules), "
    "where the grader's own code runs",
    "threads": "it runs code in another thread or process, out of the grader's sight",
    "torch": "it uses torch's internals, which can switch off or get around the grader's "
    "watch on which torch functions run",
    "files": "it opens files: your three files compute, they never need to read or write one",
    "dead": "it rebinds a name the grader relies on to recognise dead code (a block under "
    "`if __name__ == \"__main__\":` or `if TYPE_CHECKING:` could then run)",
    "star": "`import *` brings in names the grader cannot see",
}

#: Modules your files may import (and any of their submodules, checked name by name below).
ALLOWED_MODULES: tuple[str, ...] = (
    "__future__", "abc", "argparse", "cmath", "collections", "copy", "dataclasses", "enum",
    "functools", "itertools", "math", "numbers", "operator", "random", "re", "statistics",
    "sys", "textwrap", "torch", "typing", "warnings",
)
WHY["import"] = ("your three files may import only " + ", ".join(ALLOWED_MODULES)
                 + " and each other: this module is not needed for the exercise")
#: What ``sys`` may give: nothing that reaches modules, frames or tracing.
SYS_ALLOWED = frozenset({"stdout", "stderr", "maxsize", "float_info", "int_info",
                         "version_info", "version", "platform", "byteorder", "getsizeof",
                         "hexversion", "float_repr_style"})
#: Builtins refused wherever they are named, with the kind of reason.
REFUSED_BUILTINS: dict[str, str] = {
    "eval": "code", "exec": "code", "compile": "code", "__import__": "code",
    "globals": "names", "locals": "names", "vars": "names", "__builtins__": "names",
    "breakpoint": "program", "open": "files",
}
#: Built-ins that take an attribute name: fine with a constant name, refused otherwise.
ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "delattr"})
#: Attribute (and imported) names refused on anything but your own objects (``self``, your
#: classes and modules), by kind; ``ALWAYS`` are refused on your own objects too.
REFUSED_NAMES: dict[str, str] = {
    **dict.fromkeys(("importlib", "runpy", "code", "codeop", "pickle", "marshal", "copyreg",
                     "shelve", "pydoc", "pkgutil", "serialization", "from_file"), "code"),
    **dict.fromkeys(("attrgetter", "methodcaller", "get_type_hints", "ForwardRef", "__dict__",
                     "__getattribute__", "__getattr__", "__setattr__", "__delattr__"), "names"),
    **dict.fromkeys(("gc", "inspect", "ctypes", "sys", "builtins", "types", "traceback",
                     "weakref", "logging", "signal", "np", "numpy", "_getframe",
                     "settrace", "setprofile", "_current_frames", "f_back", "f_locals",
                     "f_globals", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next",
                     "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code",
                     "co_code", "co_consts", "co_names", "cell_contents", "__code__",
                     "__closure__", "__globals__", "__builtins__", "__self__", "__func__",
                     "__defaults__", "__kwdefaults__", "__subclasses__", "__bases__",
                     "__base__", "__mro__", "__traceback__", "__loader__", "__spec__",
                     "__reduce__", "__reduce_ex__"), "program"),
    **dict.fromkeys(("threading", "_thread", "concurrent", "multiprocessing", "subprocess",
                     "os", "pty", "asyncio", "socket"), "threads"),
    **dict.fromkeys(("_C", "_VF", "_ops", "_dynamo", "_inductor", "_functorch", "_subclasses",
                     "_python_dispatch", "_refs", "_prims", "_decomp", "_library",
                     "_higher_order_ops", "aten", "ops", "library", "overrides", "jit",
                     "profiler", "hub", "package", "fx", "export", "compiler", "distributed",
                     "classes", "utils", "futures", "__torch_function__",
                     "__torch_dispatch__", "DisableTorchFunction",
                     "DisableTorchFunctionSubclass"), "torch"),
    **dict.fromkeys(("io", "pathlib", "glob", "shutil", "mmap"), "files"),
}
#: Refused on every object, your own included: frames, code objects, namespaces by name.
ALWAYS = frozenset({
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next",
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "co_code", "co_consts",
    "co_names", "cell_contents", *(name for name in REFUSED_NAMES if name.startswith("__"))})
#: Refused on torch, and on objects the grader cannot tell (``model.compile()`` is
#: torch.compile), but fine elsewhere (``re.compile``).
TORCH_ONLY: dict[str, str] = {"compile": "torch", "load": "code"}
#: Method names that give a class the power to intercept torch calls, refused as definitions.
REFUSED_DEFINITIONS = frozenset({"__torch_function__", "__torch_dispatch__"})
#: Names the grader's dead-code rules rely on: rebinding them is refused.
GUARDS = frozenset({"__name__", "TYPE_CHECKING"})


@dataclass(frozen=True, order=True)
class Finding:
    """One line of a learner's file that breaks a rule."""

    file: str
    line: int
    code: str  # the line as written, stripped
    found: str  # what was found there: "torch.nn.functional.one_hot", "import threading"
    why: str  # the rule, in words
    banned: bool = False  # a banned built-in (True) or a refused construct (False)

    def __str__(self) -> str:
        return f"{self.file}, line {self.line}: `{self.code}` ({self.found}): {self.why}"


def check(files: Mapping[str, str], stage: str | None = None) -> list[Finding]:
    """Every finding in ``files`` (file name -> source): ``stage``'s banned built-ins (none
    when ``stage`` is None or bans nothing) and every refused construct, in file order.

    A file that does not parse is skipped: it cannot be imported, so it runs nothing.
    """
    ban = BANS.get(stage) if stage is not None else None
    findings: list[Finding] = []
    for name in FILES:
        source = files.get(name)
        if source is None:
            continue
        try:
            tree = ast.parse(source, filename=name)
        except (SyntaxError, ValueError):
            continue
        findings += _Reader(name, source, tree, ban).findings()
    return _one_per_line(findings)


def _one_per_line(findings: list[Finding]) -> list[Finding]:
    """One finding of each kind per line: the shortest, the root of a chain such as
    ``torch.ops.aten.embedding`` (``torch.ops``), in file order."""
    best: dict[tuple[str, int, bool], Finding] = {}
    for f in findings:
        key = (f.file, f.line, f.banned)
        if key not in best or len(f.found) < len(best[key].found):
            best[key] = f
    return sorted(best.values())


def op_name(recorded: str) -> str:
    """A torch function or ATen operator's name as recorded (``"aten::embedding"``,
    ``"embedding.default"``, ``"aten::_embedding_bag"``, ``"one_hot"``) -> its plain name
    (``"embedding"``, ``"embedding"``, ``"embedding_bag"``, ``"one_hot"``)."""
    name = recorded.rsplit("::", 1)[-1].split(".", 1)[0]
    return name.lstrip("_") or recorded


def banned_calls(recorded: Iterable[str], stage: str) -> list[str]:
    """Of the names recorded while the learner's code ran, those ``stage`` bans (sorted)."""
    ban = BANS.get(stage)
    if ban is None:
        return []
    return sorted({op_name(str(r)) for r in recorded} & ban.ops)


def explain(findings: Iterable[Finding], limit: int = 4, sep: str = "; ") -> str:
    """The findings for a message, at most ``limit`` of them (then how many more)."""
    found = list(findings)
    lines = [str(f) for f in found[:limit]]
    if len(found) > limit:
        lines.append(f"and {len(found) - limit} more")
    return sep.join(lines)


def read(folder: Path) -> dict[str, str]:
    """The graded files in ``folder`` (those that exist), as ``check`` takes them."""
    return {name: (folder / name).read_text(encoding="utf-8")
            for name in FILES if (folder / name).is_file()}


# --- the reader ------------------------------------------------------------------------------


def _is_dead(test: ast.expr) -> bool:
    """Whether an ``if`` with this test never runs its body under the grader."""
    if isinstance(test, ast.Constant):
        return not test.value
    if isinstance(test, ast.Name | ast.Attribute):  # TYPE_CHECKING, typing.TYPE_CHECKING
        return (test.id if isinstance(test, ast.Name) else test.attr) == "TYPE_CHECKING"
    if (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)):
        sides = [test.left, test.comparators[0]]
        names = {s.id for s in sides if isinstance(s, ast.Name)}
        texts = {s.value for s in sides if isinstance(s, ast.Constant)}
        return names == {"__name__"} and texts == {"__main__"}
    return False


def _live(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` except those in dead blocks (see ``_is_dead``)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_dead(node.test):
            stack.extend(reversed(node.orelse))  # the test itself is only a name or constant
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _root(node: ast.expr) -> ast.expr:
    """The innermost value of an attribute chain: ``torch`` for ``torch.nn.functional``."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _constant_name(call: ast.Call) -> str | None:
    """The attribute name of ``getattr(x, "name")`` and the like, if it is a constant."""
    if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant):
        value = call.args[1].value
        return value if isinstance(value, str) else None
    return None


class _Reader:
    """Reads one file's live code for banned built-ins and refused constructs."""

    def __init__(self, file: str, source: str, tree: ast.Module, ban: Ban | None) -> None:
        self.file, self.lines, self.tree, self.ban = file, source.splitlines(), tree, ban
        self.modules: dict[str, str] = {}  # local name -> the module path it is bound to
        self.own: set[str] = {"self", "cls"} | {
            n.name for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
        self.found: list[Finding] = []

    def findings(self) -> list[Finding]:
        nodes = list(_live(self.tree))
        for node in nodes:  # bindings first, so that a later attribute can be resolved
            if isinstance(node, ast.Import | ast.ImportFrom):
                self._import(node)
            elif isinstance(node, ast.Assign):
                self._alias(node)
        calls = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        for node in nodes:
            if isinstance(node, ast.Attribute):
                self._attribute(node, node.attr, node.value,
                                store=isinstance(node.ctx, ast.Store | ast.Del))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ATTRIBUTE_BUILTINS:
                self._dynamic_attribute(node)
            elif isinstance(node, ast.Name):
                self._name(node, id(node) in calls)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self._definition(node)
            elif isinstance(node, ast.alias) and node.asname in GUARDS:
                self._add(node, f"import ... as {node.asname}", WHY["dead"])
        return self.found

    # -- bindings

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if alias.name.split(".")[0] in OWN_MODULES:
                    self.own.add(bound)
                elif self._module_allowed(node, alias.name):
                    self.modules[bound] = alias.name if alias.asname else bound
            return
        module = node.module or ""
        if node.level > 0 or module.split(".")[0] in OWN_MODULES:
            self.own |= {a.asname or a.name for a in node.names}  # your own modules
            return
        if not self._module_allowed(node, module):
            return
        for alias in node.names:
            found = f"from {module} import {alias.name}"
            if alias.name == "*":
                self._add(node, found + " (import *)", WHY["star"])
            elif {alias.name, alias.asname} & GUARDS and (
                    module, alias.name, alias.asname) != ("typing", "TYPE_CHECKING", None):
                self._add(node, found, WHY["dead"])
            elif self._path_allowed(node, f"{module}.{alias.name}", found):
                self.modules[alias.asname or alias.name] = f"{module}.{alias.name}"

    def _module_allowed(self, node: ast.stmt, module: str) -> bool:
        top = module.split(".")[0]
        if top not in ALLOWED_MODULES:
            self._add(node, f"import {module}", WHY[REFUSED_NAMES.get(top, "import")])
            return False
        return self._path_allowed(node, module, f"import {module}")

    def _path_allowed(self, node: ast.stmt, path: str, found: str) -> bool:
        """Check each part of an imported path as an attribute: ``torch.utils`` is refused."""
        parts = path.split(".")
        before = len(self.found)
        for i, part in enumerate(parts[1:], start=1):
            self._check_attribute(node, part, ".".join(parts[:i]), own=False, found=found)
        return len(self.found) == before

    def _alias(self, node: ast.Assign) -> None:
        """``F = torch.nn.functional``: F names that module from here on."""
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            path = self._qualify(node.value)
            if path is not None:
                self.modules[node.targets[0].id] = path

    def _qualify(self, node: ast.expr) -> str | None:
        """The module path an expression names (``torch.nn.functional``), if it can be told."""
        if isinstance(node, ast.Name):
            return self.modules.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._qualify(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    # -- uses

    def _attribute(self, node: ast.AST, attr: str, base: ast.expr, store: bool = False) -> None:
        """``base.attr`` (or ``getattr(base, "attr")``) in live code."""
        root = _root(base)
        own = isinstance(root, ast.Name) and root.id in self.own
        path = self._qualify(base)
        found = f"{path}.{attr}" if path else f"{ast.unparse(base)}.{attr}"
        if store and attr in GUARDS:
            self._add(node, found + " = ...", WHY["dead"])
        self._check_attribute(node, attr, path, own, found)

    def _check_attribute(self, node: ast.AST, attr: str, path: str | None, own: bool,
                         found: str) -> None:
        """The rules for one attribute name, on a base that is ``path`` (a module path, None
        when the grader cannot tell) and is or is not your own object."""
        if self.ban and attr in self.ban.names and not own:
            self._add(node, found, f"{self.ban.what} is banned in stage '{self.ban.stage}': "
                      "write it yourself", banned=True)
        if attr in ALWAYS or (attr in REFUSED_NAMES and not own):
            self._add(node, found, WHY[REFUSED_NAMES.get(attr, "program")])
        elif attr in TORCH_ONLY and not own and (path is None or path.startswith("torch")):
            self._add(node, found, WHY[TORCH_ONLY[attr]])
        elif path == "sys" and attr not in SYS_ALLOWED:
            self._add(node, found, WHY["program"])
        elif path is not None and attr.startswith("_") and not attr.startswith("__"):
            self._add(node, found, WHY["torch" if path.startswith("torch") else "program"])

    def _dynamic_attribute(self, call: ast.Call) -> None:
        """``getattr(x, name)``, ``setattr``, ``delattr``: fine with a constant name only."""
        name = _constant_name(call)
        if name is None:
            self._add(call, f"{call.func.id}(..., <a name computed at run time>)", WHY["names"])
        elif call.args:
            self._attribute(call, name, call.args[0], store=call.func.id != "getattr")

    def _name(self, node: ast.Name, called: bool) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del):
            if node.id in GUARDS:
                self._add(node, f"{node.id} = ...", WHY["dead"])
        elif node.id in self.own:
            return  # your own function or class of that name
        elif node.id in REFUSED_BUILTINS:
            self._add(node, node.id, WHY[REFUSED_BUILTINS[node.id]])
        elif node.id in ATTRIBUTE_BUILTINS and not called:
            self._add(node, node.id, WHY["names"])  # getattr passed around: a computed name

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        if node.name in REFUSED_DEFINITIONS:
            self._add(node, f"def {node.name}", WHY["torch"])
        elif node.name in GUARDS:
            self._add(node, f"def {node.name}", WHY["dead"])

    def _add(self, node: ast.AST, found: str, why: str, banned: bool = False) -> None:
        line = getattr(node, "lineno", 0)
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.found.append(Finding(self.file, line, code, found, why, banned))


def main(argv: list[str] | None = None) -> int:
    """``python -m exercises.rules [FOLDER]``: list what the grader would find in your files."""
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else Path(__file__).resolve().parent
    files = read(folder)
    if not files:
        print(f"no {', '.join(FILES)} in {folder}")
        return 2
    findings = sorted({f for stage in BANS for f in check(files, stage)})
    for finding in findings:
        print(finding)
    if not findings:
        print(f"{', '.join(files)} in {folder}: nothing the grader refuses")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
