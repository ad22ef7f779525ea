# Generated from lumen/rules.py by `make stubs`: given code, nothing to write here.
# Learners: read it, run it, no need to change it. Course staff: edit lumen/rules.py.
"""The rules the grader reads your source for: what your three files may not contain.

The grader runs your code on fresh inputs and compares the results with PyTorch's, but whether
a stage's built-in ran cannot be seen from results, so two tests (stage 'embedding''s "written
by hand" and stage 'onehot''s) also read embeddings.py, params.py and gpt2.py, without running
them, with this checker. Nine checks see what only your code's process can see (an input
left as it was, a registered Parameter, the product, one shared table, the parameter count, a
refill in place): they trust it only where rules 2 and 3 find nothing in your files that could
change what that process sees. Every other test looks only at what your code computes.

1. **Banned built-ins** (``BANS``). Stage 'embedding' bans PyTorch's own lookup (nn.Embedding,
   F.embedding, torch.embedding, F.embedding_bag, nn.EmbeddingBag, torch.ops.aten.embedding)
   and the torch modules that call it for you (quantized embeddings: ``torch.ao``,
   ``torch.nn.quantized``, ``torch.nn.qat``); stage 'onehot' bans F.one_hot and
   ``torch.distributions`` (OneHotCategorical calls it for you).
2. **Ways around a ban** (``REFUSED``). The grader judges a ban from your source alone, so code
   that could call a built-in without naming it is refused, each for its reason (``WHY``):
   strings turned into code or modules loaded by name (eval, exec, compile, __import__,
   importlib, pickle, torch.load, numpy.load, subprocess, os); names computed at run time (a
   getattr, setattr or delattr whose name is not a plain string, vars, globals, locals,
   __dict__, operator.attrgetter, typing.get_type_hints, a class built from computed names by
   type(), a metaclass, Enum('E', names) or make_dataclass, a __getattr__ hook); reaching
   into the running program (gc, inspect, ctypes, sys.modules, sys._getframe, frames, code
   objects, __subclasses__, threading's trace hooks, raw memory such as
   open('/proc/self/mem'), numpy's stride tricks, ctypes and __array_interface__, torch's
   global hooks and function modes); torch's internals (torch._C, torch.ops, torch.library,
   torch.jit, torch.compile, torch.utils, ..., and the _private modules and data of torch
   and numpy on any object, since ``self`` can hold a module); ``import *``; and importing a
   module the grader has not checked (anything but ``ALLOWED_MODULES``: numpy, math,
   functools, itertools, collections, dataclasses, typing, warnings and the like are fine)
   or a file it does not read.
3. **Changing torch** (``WHY["redirect"]``). An attribute of torch's modules or of anything
   reached through them by name set or deleted (``F.linear = ...``, ``torch.Tensor.x = ...``,
   ``nn.Linear.forward = ...``, ``setattr(F, "linear", f)``, ``del torch.zeros``,
   ``torch.backends.cudnn.benchmark = True``), and one of torch's modules handed on as a value
   (``f(F)``, ``[nn]``, ``self.F = F``, a module as a class attribute), where what is done to
   it cannot be followed; and so is an attribute set or deleted on an object's class
   (``type(self.lm_head).forward = ...``, ``m.__class__.x = ...``, ``setattr(type(m), ...)``),
   which may be torch's: name your own class instead (``MyModel.x = ...``). Reading through
   a module (``F.relu``, ``G = F``) is fine, and so is handing on torch's classes, functions
   and dtypes (``torch.float64``, ``nn.Linear``).
4. **Limits** (``MAX_DEPTH``, ``MAX_NODES``). A file with an expression nested more than 100
   deep, or of more than 100,000 parts (AST nodes; your files hold a few thousand), or one
   Python's own parser gives up on, is not read: it is refused as a whole ("unreadable"),
   since what it calls cannot be told.

All three files are read for every check that applies the rules, because all three run in
each stage's process: code in params.py could hand a built-in to embeddings.py. A refused
construct costs those two tests and the nine checks above; a banned built-in of one stage
costs only that stage's test.

Dead code is not read: comments, strings and docstrings, and the bodies of ``if False:`` (or
another false constant), of ``if __name__ == "__main__":`` and of ``if TYPE_CHECKING:``, the
last two only while they provably cannot run: ``TYPE_CHECKING`` imported once, at the top of
the file, as ``from typing import TYPE_CHECKING`` (or ``typing.TYPE_CHECKING`` after
``import typing``), neither it, ``typing`` nor ``__name__`` bound again anywhere in the file
(assigned, a parameter, a loop variable, imported as, ...), and no code that runs, in any of
your files, able to change one (``m.__name__ = ...``, a computed setattr, ``globals()``,
``vars()``, ``__dict__``). So a self-check that compares your code with F.one_hot
can stay in a ``__main__`` block. Your files are read, and run, as the UTF-8 text they are: an
encoding declaration (``# -*- coding: ... -*-``) changes neither. Check your own files, as
the grader does::

    python -m exercises.rules
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

#: The files the grader reads (lumen/stages.py's SUBMISSION_FILES).
FILES: tuple[str, ...] = ("embeddings.py", "params.py", "gpt2.py")
#: Your own modules: importing them (``from .embeddings import Embedding``) is always fine.
OWN_MODULES = frozenset({"embeddings", "params", "gpt2"})
#: The package your files live in when you run them yourself (``exercises.embeddings``).
OWN_PACKAGE = "exercises"


@dataclass(frozen=True)
class Ban:
    """What a stage forbids: torch's own version of what its functions build by hand."""

    stage: str
    names: frozenset[str]  # torch's names for it, leading underscores dropped (see _plain)
    routes: frozenset[str]  # torch modules that call it for you: refused under this ban
    ops: frozenset[str]  # the same as recorded while the code runs, normalised (see op_name)
    what: str  # for a message: the banned built-ins, as a learner writes them


BANS: dict[str, Ban] = {
    "embedding": Ban(
        stage="embedding",
        names=frozenset({"embedding", "Embedding", "embedding_bag", "EmbeddingBag",
                         "embedding_bag_forward_only", "embedding_ops"}),
        routes=frozenset({"ao", "quantized", "qat", "quantizable", "quantization"}),
        ops=frozenset({"embedding", "embedding_bag", "embedding_bag_forward_only"}),
        what="PyTorch's own embedding (nn.Embedding, F.embedding, torch.embedding, "
        "F.embedding_bag, nn.EmbeddingBag)",
    ),
    "onehot": Ban(
        stage="onehot",
        names=frozenset({"one_hot"}),
        routes=frozenset({"distributions"}),
        ops=frozenset({"one_hot"}),
        what="PyTorch's own one-hot (F.one_hot)",
    ),
}

#: Why each kind of construct is refused, as the learner reads it. Every kind is a way to run
#: a banned built-in that the grader, reading your source, could not see.
WHY = {
    "code": "it runs code the grader cannot read (a string turned into code, a module or "
    "object loaded by name, a pickle, another program)",
    "names": "it reaches a function by a name computed at run time, which hides from the "
    "grader what your code calls",
    "program": "it reaches into the running program (its frames, objects, memory, loaded "
    "modules, or the calls other code makes), where a built-in can be picked up unnamed",
    "torch": "it uses torch's internals, which reach torch's built-ins without their names",
    "star": "`import *` brings in names the grader cannot see",
    "relative": "it imports a file the grader does not read: only embeddings.py, params.py "
    "and gpt2.py are submitted",
    "redirect": "it changes torch (an attribute of one of its modules or classes set or "
    "deleted, or one of its modules handed on where the grader cannot follow what is done to "
    "it), which the given code and the grader's checks call as it is: leave torch as it is",
}
#: How much of a file the rules read: honest files nest about 12 deep and hold a few thousand
#: parts (AST nodes; 1 MiB of ordinary code, the most a submitted file may be, holds ~80,000).
#: A file past either limit is not read but refused as a whole ("unreadable"), so that no
#: step of the reading is deeper or longer than these allow.
MAX_DEPTH = 100
MAX_NODES = 100_000
#: Characters of a construct, or of its line, quoted in a finding.
SHOWN = 160
WHY["unreadable"] = (
    f"the grader reads a file only within its limits (expressions nested at most {MAX_DEPTH} "
    f"deep, {MAX_NODES:,} parts in all) or as Python parses it, and this one is past them, so "
    "it cannot tell what the file calls: write it plainly")
#: The kinds that make a verdict read from the source unprovable: each "written by hand" test
#: applies all (autograder/suites/bans.py).
EVASIONS: tuple[str, ...] = ("code", "names", "program", "torch", "star", "relative", "import",
                             "redirect", "unreadable")

#: Modules your files may import, and any of their submodules, each name along the way checked
#: against the rules below (``torch.utils`` is refused). Each was read for ways around a ban;
#: the few it has are refused by name (numpy.load, operator.attrgetter, typing.get_type_hints).
ALLOWED_MODULES: tuple[str, ...] = (
    "__future__", "abc", "argparse", "bisect", "cmath", "collections", "contextlib", "copy",
    "dataclasses", "decimal", "enum", "fractions", "functools", "heapq", "itertools", "math",
    "numbers", "numpy", "operator", "random", "re", "statistics", "sys", "textwrap", "time",
    "torch", "typing", "warnings",
)
WHY["import"] = ("the grader has not checked this module for ways around the bans: your three "
                 "files may import only " + ", ".join(ALLOWED_MODULES) + " and each other")
#: What ``sys`` may give: nothing that reaches modules, frames, tracing or the interpreter.
SYS_ALLOWED = frozenset({"stdout", "stderr", "maxsize", "float_info", "int_info",
                         "version_info", "version", "platform", "byteorder", "getsizeof",
                         "hexversion", "float_repr_style", "exit"})
#: Built-ins refused wherever they are named, with the kind of reason.
REFUSED_BUILTINS: dict[str, str] = {
    "eval": "code", "exec": "code", "compile": "code", "__import__": "code",
    "globals": "names", "locals": "names", "vars": "names", "__builtins__": "names",
    "breakpoint": "program",
    "open": "program",  # open('/proc/self/mem', 'r+b') rewrites the running program
}
#: Built-ins that take an attribute name: fine with a constant name, refused otherwise.
ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "delattr"})

#: Names refused as modules you import and as attributes of anything but your own modules and
#: classes (``torch.os``, ``x.__globals__``), each group with the reason it could get around a
#: ban. Single-underscore names are refused too: every one on a module the grader can name
#: (``torch._C``, ``warnings._setoption``), and torch's and numpy's private modules on any
#: other object (``self._VF``: see _MODULE_PRIVATE).
REFUSED: dict[str, str] = {
    # Strings become code, or objects are found by a name held in a string.
    **dict.fromkeys((
        "importlib", "runpy", "code", "codeop", "pickle", "_pickle", "marshal", "copyreg",
        "shelve", "pydoc", "pkgutil", "zipimport", "types",  # types.FunctionType(code, ...)
        "_imp", "imp", "_frozen_importlib", "_frozen_importlib_external", "site", "sysconfig",
        "subprocess", "_posixsubprocess", "os", "posix", "pty", "multiprocessing",
        "concurrent", "webbrowser",  # other programs, started from strings
        "serialization", "from_file", "hub", "package", "jit", "fx", "export", "compiler",
        "onnx", "jiterator",  # torch code compiled or unpickled from strings and files
        "utils",  # torch.utils.cpp_extension compiles C++ from a string; nn.utils as well
        "f2py", "distutils",
        "loader", "load_module", "exec_module", "get_code", "get_data",  # __spec__.loader
        ), "code"),
    # A name computed at run time.
    **dict.fromkeys((
        "attrgetter", "methodcaller", "get_type_hints", "ForwardRef", "make_dataclass",
        "__dict__",
        "__getattribute__", "__getattr__", "__setattr__", "__delattr__"), "names"),
    # The running program: its frames, objects, memory, modules and the calls others make.
    **dict.fromkeys((
        "gc", "inspect", "ctypes", "_ctypes", "ctypeslib", "sys", "builtins", "traceback",
        "linecache", "weakref", "logging", "signal", "faulthandler", "tracemalloc", "atexit",
        "threading", "_thread", "asyncio", "socket", "dis",
        "io", "_io", "codecs", "pathlib", "glob", "shutil", "mmap", "tempfile", "fileinput",
        "zipfile", "tarfile", "gzip", "bz2", "lzma", "DataSource",  # files: /proc/self/mem
        "string",  # string.Formatter().get_field("0.one_hot", (F,), {})
        "settrace", "setprofile", "settrace_all_threads", "setprofile_all_threads",
        "_getframe", "_current_frames", "f_back", "f_locals", "f_globals", "f_builtins",
        "f_code", "f_trace", "tb_frame", "tb_next", "gi_frame", "gi_code", "cr_frame",
        "cr_code", "ag_frame", "ag_code", "co_code", "co_consts", "co_names", "cell_contents",
        "__code__", "__closure__", "__globals__", "__builtins__", "__self__", "__func__",
        "__wrapped__", "__defaults__", "__kwdefaults__", "__subclasses__", "__bases__",
        "__base__", "__mro__", "__traceback__", "__loader__", "__spec__", "__reduce__",
        "__reduce_ex__", "__array_interface__", "__array_struct__",  # memory at any address
        "__cuda_array_interface__",
        "stride_tricks", "lib", "memmap", "fromfile", "tofile", "FileType",
        "overrides", "TorchFunctionMode", "TorchDispatchMode", "__torch_function__",
        "__torch_dispatch__", "DisableTorchFunction", "DisableTorchFunctionSubclass",
        "profiler", "storage", "untyped_storage", "TypedStorage", "UntypedStorage"),
        "program"),
    # torch's internals: the dispatcher and its operators, reached without the Python names.
    **dict.fromkeys((
        "_C", "_VF", "_ops", "ops", "aten", "library", "classes", "distributed", "futures",
        "_dynamo", "_inductor", "_functorch", "_subclasses", "_python_dispatch", "_refs",
        "_prims", "_decomp", "_library", "_higher_order_ops", "_jit_internal", "_utils",
        "_sources", "_tensor", "_numpy", "_core", "_global_forward_hooks",
        "_global_forward_pre_hooks", "_global_backward_hooks", "_global_backward_pre_hooks",
        "_global_module_registration_hooks", "_global_parameter_registration_hooks",
        "_global_buffer_registration_hooks"), "torch"),
}
#: Refused on every object, your own included: frames, code objects, namespaces by name.
ALWAYS = frozenset(name for name, kind in REFUSED.items()
                   if name.startswith(("__", "f_", "tb_", "gi_", "cr_", "ag_", "co_"))
                   or name == "cell_contents")
#: Refused on the modules named and on objects the grader cannot tell (``model.compile()`` is
#: torch.compile, ``a.dump(f)`` numpy's pickle), fine elsewhere (``re.compile``, your own).
MODULE_ONLY: dict[str, tuple[str, tuple[str, ...]]] = {
    "compile": ("code", ("torch",)),
    **{name: ("code", ("torch", "numpy")) for name in (
        "load", "loads", "save", "savez", "savez_compressed", "savetxt", "loadtxt",
        "genfromtxt", "fromregex", "dump", "dumps")},
    "testing": ("code", ("numpy",)),  # numpy.testing.extbuild compiles C from a string
    "core": ("program", ("numpy",)),  # numpy's internals
}
#: Names refused as definitions (``def``, a class attribute, a key of ``type()``'s namespace):
#: intercepting what other code calls, numpy reading memory at an address you give it
#: (``__array_interface__``, also through an attribute hook), names looked up from strings.
REFUSED_DEFINITIONS = frozenset({
    "__torch_function__", "__torch_dispatch__", "__array_interface__", "__array_struct__",
    "__cuda_array_interface__", "__getattr__", "__getattribute__", "__match_args__",
    "__prepare__"})
#: Metaclasses your classes may name: every other one builds a class's namespace at run time.
METACLASSES = frozenset({"ABCMeta", "abc.ABCMeta"})
#: torch's global hooks (register_module_forward_hook, ...): they hand your code every module
#: that any code runs, the grader's included.
GLOBAL_HOOKS = "register_module_"
#: Names whose value decides whether a dead block runs (see the module's docstring).
GUARDS = frozenset({"__name__", "TYPE_CHECKING"})


@dataclass(frozen=True, order=True)
class Finding:
    """One line of a learner's file that breaks a rule."""

    file: str
    line: int
    code: str  # the line as written, stripped
    found: str  # what was found there: "torch.nn.functional.one_hot", "import threading"
    why: str  # the rule, in words
    banned: bool = False  # a banned built-in (True) or a way around a ban (False)
    kind: str = "banned"  # "banned" or one of EVASIONS

    def __str__(self) -> str:
        if not self.line:  # the whole file
            return f"{self.file} ({self.found}): {self.why}"
        return f"{self.file}, line {self.line}: `{self.code}` ({self.found}): {self.why}"


def check(files: Mapping[str, str], stage: str | None = None,
          among: Iterable[str] = FILES) -> list[Finding]:
    """Every finding in ``files`` (file name -> source) among the files ``among``:
    ``stage``'s banned built-ins (none when ``stage`` is None or bans nothing) and every way
    around a ban, in file order.

    A file that does not parse is skipped: it cannot be imported, so it runs nothing. A file
    past the reading's limits (``MAX_DEPTH``, ``MAX_NODES``), or one whose reading fails in
    any other way, is one finding ("unreadable"): never read in part, never an exception.
    """
    ban = BANS.get(stage) if stage is not None else None
    trees: dict[str, ast.Module] = {}
    findings: list[Finding] = []
    unread = False  # a file that runs but was not read: it could change a guard too
    for name in FILES:
        if name in files:
            parsed = _parse(files[name], name)
            if isinstance(parsed, ast.Module):
                trees[name] = parsed
            elif parsed is not None:
                unread = True
                if name in among:
                    line, found = parsed
                    findings.append(_unreadable(name, line, found, files[name]))
    # Dead blocks stay dead while no live code, in any file, can change a guard; and code in a
    # dead block runs only once a guard changes. So: read each file as if every guard held,
    # and if the code that would then run could change one, trust no guard anywhere.
    try:
        tampered = unread or any(_sets_guards(_live_nodes(tree, False))
                                 for tree in trees.values())
    except Exception as error:  # noqa: BLE001 - a bug of the reading fails closed
        tampered = True
        findings.append(_unreadable(FILES[0], 0, f"reading failed: {type(error).__name__}"))
    readers = {name: _Reader(name, files[name], tree, ban, tampered)
               for name, tree in trees.items()}
    # What each file binds to a module, for the others: ``from .params import F`` is params'
    # F. Each round follows a re-export one file further (gpt2 from params from embeddings).
    exports: dict[str, dict[str, set[str | None]]] = {}
    for _ in readers:
        exports = {name.removesuffix(".py"): _bound(reader, exports)
                   for name, reader in readers.items()}
    for name, reader in readers.items():
        if name in among:
            try:
                findings += reader.findings(exports)
            except Exception as error:  # noqa: BLE001 - fails closed, as a finding
                findings.append(_unreadable(name, 0, f"reading failed: {type(error).__name__}"))
    return _one_per_line(findings)


def _bound(reader: _Reader, exports: Mapping[str, Mapping[str, set[str | None]]]
           ) -> dict[str, set[str | None]]:
    """The module paths ``reader``'s file binds each name to, given the other files'
    ``exports``; nothing if the reading fails (the file's own reading says so)."""
    try:
        return {name: set(paths) for name, paths in reader.bind(exports).items()}
    except Exception:  # noqa: BLE001 - reported by reader.findings, which fails the same way
        return {}


def _unreadable(file: str, line: int, found: str, source: str = "") -> Finding:
    """The one finding of a file the rules could not read (at ``line``, 0: the whole file)."""
    lines = source.splitlines()[line - 1 : line] if line > 0 else []
    code = _cut(lines[0][: 4 * SHOWN].strip()) if lines else ""
    return Finding(file, line, code, found, WHY["unreadable"], False, "unreadable")


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


# --- dead code: only what provably never runs ------------------------------------------------


@functools.lru_cache(maxsize=8)
def _parse(source: str, name: str) -> ast.Module | tuple[int, str] | None:
    """``source`` parsed, once for the checks of every ban (a grader checks two): nothing
    here changes a tree. None when it is not Python (a SyntaxError, null bytes: it cannot be
    imported); (line, what) when it is past the reading's limits or Python's parser gives up
    on it (its recursion or its stack: ``-`` 100,000 times), which fails closed."""
    try:
        tree = ast.parse(source, filename=name)
    except (SyntaxError, ValueError):
        return None
    except Exception as error:  # noqa: BLE001 - RecursionError, MemoryError: too deep for it
        return 0, f"Python's parser gave up on it: {type(error).__name__}"
    return _past_limits(tree) or tree


def _past_limits(tree: ast.AST) -> tuple[int, str] | None:
    """Where ``tree`` first goes past ``MAX_DEPTH`` or ``MAX_NODES`` (its line, and which),
    found by one walk that stops there; None within both."""
    stack, nodes = [(tree, 1, 0)], 0
    while stack:
        node, depth, line = stack.pop()
        nodes += 1
        line = getattr(node, "lineno", line)  # a node without one is on its parent's line
        if depth > MAX_DEPTH:
            return line, f"an expression nested more than {MAX_DEPTH} deep"
        if nodes > MAX_NODES:
            return 0, f"more than {MAX_NODES:,} parts"
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
    return None


@functools.lru_cache(maxsize=8)
def _bindings(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """Every place in ``tree`` (dead code included) that binds a name, by name: assignments
    of every form, parameters, imports, definitions, global and nonlocal, ``except ... as``,
    match captures. A ``from m import *`` binds any name: it is listed under ``"*"``."""
    bound: dict[str, list[ast.AST]] = {}

    def add(name: str | None, node: ast.AST) -> None:
        if name is not None:
            bound.setdefault(name, []).append(node)

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            add(node.id, node)
        elif isinstance(node, ast.arg):
            add(node.arg, node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            add(node.name, node)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if isinstance(node, ast.Import):
                    add(alias.asname or alias.name.split(".")[0], node)
                else:
                    add(alias.asname or alias.name, node)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                add(name, node)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
            add(node.name, node)
        elif isinstance(node, ast.MatchMapping):
            add(node.rest, node)
    return bound


def _sets_guards(nodes: Iterable[ast.AST]) -> bool:
    """Whether code of these ``nodes`` could change a guard, its own module's or another's:
    it sets or deletes an attribute called ``__name__`` or ``TYPE_CHECKING`` (or a module's
    ``__class__``, which can give ``typing`` a TYPE_CHECKING property), calls setattr or
    delattr with a name the grader cannot read, or reaches a namespace as a dictionary
    (``globals()``, ``vars()``, ``__dict__``, ``sys.modules``, ``exec``)."""
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del) \
                and node.attr in TAMPERS:
            return True
        if isinstance(node, ast.Name) and node.id in NAMESPACES or isinstance(
                node, ast.Attribute) and (node.attr == "__dict__" or node.attr == "modules"
                                          and isinstance(node.value, ast.Name)
                                          and node.value.id == "sys"):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in {"setattr", "delattr"}:
            name = _constant_name(node)
            if name is None or name in TAMPERS:
                return True
    return False


#: Attributes whose change could make a guard of another module lie.
TAMPERS = GUARDS | {"__class__"}
#: Built-ins that reach a module's names as a dictionary, or run code that could.
NAMESPACES = frozenset({"globals", "vars", "locals", "exec", "eval", "__builtins__",
                        "__import__"})


def _is_import(node: ast.AST, module: str, name: str | None) -> bool:
    """Whether ``node`` is ``import module`` (``name`` None) or ``from module import name``
    (among others), with no ``as``."""
    if name is None:
        return isinstance(node, ast.Import) and any(
            a.name == module and a.asname is None for a in node.names)
    return isinstance(node, ast.ImportFrom) and node.module == module and node.level == 0 \
        and any(a.name == name and a.asname is None for a in node.names)


class _Guards:
    """Which dead-code tests provably hold in one file (see the module's docstring)."""

    def __init__(self, tree: ast.Module, tampered: bool) -> None:
        bound = _bindings(tree)
        top = {id(node) for node in tree.body}
        trusted = "*" not in bound and not tampered

        def only(name: str, module: str, imported: str | None) -> bool:
            """``name`` is bound once, by a top-level import of ``module``, and never else."""
            places = bound.get(name, [])
            return trusted and len(places) == 1 and id(places[0]) in top \
                and _is_import(places[0], module, imported)

        self.type_checking = only("TYPE_CHECKING", "typing", "TYPE_CHECKING")
        self.typing = only("typing", "typing", None)
        self.main = trusted and "__name__" not in bound

    def dead(self, test: ast.expr) -> bool:
        """Whether an ``if`` with this test provably never runs its body under the grader."""
        if isinstance(test, ast.Constant):
            return not test.value
        if isinstance(test, ast.Name):
            return test.id == "TYPE_CHECKING" and self.type_checking
        if isinstance(test, ast.Attribute):
            return (test.attr == "TYPE_CHECKING" and isinstance(test.value, ast.Name)
                    and test.value.id == "typing" and self.typing)
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.Eq)):
            sides = [test.left, test.comparators[0]]
            names = {s.id for s in sides if isinstance(s, ast.Name)}
            texts = {s.value for s in sides if isinstance(s, ast.Constant)}
            return names == {"__name__"} and texts == {"__main__"} and self.main
        return False


@functools.lru_cache(maxsize=8)
def _live_nodes(tree: ast.Module, tampered: bool) -> tuple[ast.AST, ...]:
    """``_live`` of ``tree`` when guards are (not) trusted everywhere, kept for every check
    of the same files (a grader makes three)."""
    return tuple(_live(tree, _Guards(tree, tampered)))


def _live(tree: ast.AST, guards: _Guards) -> Iterator[ast.AST]:
    """Every node of ``tree`` except those in provably dead blocks (see ``_Guards.dead``)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and guards.dead(node.test):
            stack.extend(reversed(node.orelse))  # the test itself is only a name or constant
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


# --- the reader ------------------------------------------------------------------------------


def _plain(name: str) -> str:
    """A name without its leading underscores: torch's ``_embedding_bag`` is ``embedding_bag``."""
    return name.lstrip("_") or name


def _constant_name(call: ast.Call) -> str | None:
    """The attribute name of ``getattr(x, "name")`` and the like, if it is a constant."""
    if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant):
        value = call.args[1].value
        return value if isinstance(value, str) else None
    return None


def _targets(statement: ast.stmt) -> list[ast.expr]:
    """The names a statement of a class body binds there (``F = ...``, ``import x``: as
    ``ast.alias`` nodes)."""
    if isinstance(statement, ast.Assign):
        return statement.targets
    if isinstance(statement, ast.AnnAssign | ast.AugAssign):
        return [statement.target]
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return list(statement.names)
    return []


def _followed(nodes: Iterable[ast.AST], aliases: set[int]) -> set[int]:
    """The expressions the rules follow where they go: the bases of attributes (``F`` in
    ``F.relu``, also as ``getattr(F, "relu")``, ``hasattr``, ``setattr`` and ``delattr``, whose
    computed names are refused as such) and
    the values named again (``G = F``, whose target is one of ``aliases``)."""
    followed: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Attribute | ast.Subscript):
            followed.add(id(node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args \
                and node.func.id in {*ATTRIBUTE_BUILTINS, "hasattr"}:  # a computed name: "names"
            followed.add(id(node.args[0]))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and id(node.targets[0]) in aliases:
            followed.add(id(node.value))
    return followed


def _type_as_a_type(nodes: list[ast.AST]) -> set[int]:
    """The ``type`` names used as a type, not as a class factory: in annotations and in
    isinstance or issubclass (``isinstance(t, type)``)."""
    harmless: set[int] = set()
    for node in nodes:
        spots: list[ast.AST] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in {"isinstance", "issubclass"}:
            spots = node.args[1:]
        elif isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            spots = [node.annotation]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            spots = [node.returns]
        for spot in spots:
            harmless |= {id(n) for n in ast.walk(spot) if isinstance(n, ast.Name)}
    return harmless


#: What the grader cannot tell: the base of ``x.attr`` when ``x`` is no module it can name.
UNKNOWN = None


class _Reader:
    """Reads one file's live code for banned built-ins and ways around a ban."""

    def __init__(self, file: str, source: str, tree: ast.Module, ban: Ban | None,
                 tampered: bool) -> None:
        self.file, self.lines, self.tree, self.ban = file, source.splitlines(), tree, ban
        self.tampered = tampered  # whether no guard is trusted (see check)
        self.bound = _bindings(tree)
        # local name -> the module paths it may be bound to (UNKNOWN: something else too)
        self.modules: dict[str, set[str | None]] = {}
        self.aliases: set[int] = set()  # the targets of ``F = torch.nn.functional``
        self.own: set[str] = set()  # names that are provably your own modules and classes
        self.found: list[Finding] = []
        self.paths: dict[int, set[str | None]] | None = None  # _qualify's, once bindings are done
        self.codes: dict[int, str] = {}  # line -> its text as quoted (``_code``)
        # your modules by the names they have here ("" for the package: ``exercises.params``)
        self.own_modules: dict[str, str] = {}
        self.exports: Mapping[str, Mapping[str, set[str | None]]] = {}
        # names bound in a class body: class attributes, never followed as aliases
        self.in_classes = {id(target) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                           for statement in c.body for target in _targets(statement)}

    def bind(self, exports: Mapping[str, Mapping[str, set[str | None]]]
             ) -> dict[str, set[str | None]]:
        """The binding phase, from scratch, with the other files' ``exports``: what each name
        of this file may be bound to (imports, aliases, your own modules and names)."""
        self.exports, self.paths, self.found = exports, None, []
        self.modules, self.aliases, self.own, self.own_modules = {}, set(), set(), {}
        self.classes_of: set[str] = set()  # names bound to type(x) or x.__class__ somewhere
        nodes = _live_nodes(self.tree, self.tampered)
        for node in self.tree.body:  # your top-level classes and functions, if never rebound
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) \
                    and self._once(node.name):
                self.own.add(node.name)
        for node in nodes:  # bindings first, so that a later attribute can be resolved
            if isinstance(node, ast.Import | ast.ImportFrom):
                self._import(node)
        for node in nodes:
            if isinstance(node, ast.Assign):
                self._alias(node)
        self._unknown_too()
        return self.modules

    def findings(self, exports: Mapping[str, Mapping[str, set[str | None]]] | None = None
                 ) -> list[Finding]:
        self.bind(exports or {})
        nodes = _live_nodes(self.tree, self.tampered)
        self.enums = {n.name for n in ast.walk(self.tree) if isinstance(n, ast.ClassDef)
                      and any("Enum" in ast.unparse(b) or "Flag" in ast.unparse(b)
                              for b in n.bases)}
        self.paths = {}  # every binding is known: each chain is qualified once from here on
        calls = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        self.harmless_types = _type_as_a_type(nodes)
        self.followed = _followed(nodes, self.aliases)
        for node in nodes:
            if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load) \
                    and id(node) not in self.followed:
                self._handed_on(node)
            if isinstance(node, ast.Attribute | ast.Subscript) \
                    and isinstance(node.ctx, ast.Store | ast.Del):
                self._changed(node, node.value, node.ctx)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                self._imported_into_a_class(node)
            if isinstance(node, ast.Attribute):
                self._attribute(node, node.attr, node.value)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ATTRIBUTE_BUILTINS:
                self._dynamic_attribute(node)
            elif isinstance(node, ast.Name):
                self._name(node, id(node) in calls)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self._definition(node)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                self._assigned_name(node)
            elif isinstance(node, ast.Constant | ast.keyword):
                self._special_key(node)
            elif isinstance(node, ast.MatchClass):
                self._match_class(node)
            if isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Attribute) and node.attr == "__class__" \
                    and isinstance(node.ctx, ast.Store | ast.Del):
                self._add(node, f"{_shown(node)} = ...", "program")
        return self.found

    def _once(self, name: str) -> bool:
        """Whether ``name`` is bound exactly once in the file, and no ``import *`` is there."""
        return len(self.bound.get(name, [])) == 1 and "*" not in self.bound

    # -- bindings

    def _bind(self, name: str, path: str | None) -> None:
        self.modules.setdefault(name, set()).add(path)

    def _unknown_too(self) -> None:
        """A name bound to a module here and to something else there may be either: the
        rules of every candidate apply (``import sys`` twice is still sys)."""
        for name, paths in self.modules.items():
            places = self.bound.get(name, [])
            if "*" in self.bound or not all(
                    isinstance(p, ast.Import | ast.ImportFrom) or id(p) in self.aliases
                    for p in places):
                paths.add(UNKNOWN)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if self._own_import(node, alias.name, alias.asname):
                    continue
                if self._module_allowed(node, alias.name):
                    self._bind(bound, alias.name if alias.asname else bound)
            return
        module = node.module or ""
        if node.level > 0 or module.split(".")[0] == OWN_PACKAGE:
            self._own_from(node, module)
            return
        if not self._module_allowed(node, module):
            return
        for alias in node.names:
            found = f"from {module} import {alias.name}"
            if alias.name == "*":
                self._add(node, found + " (import *)", "star")
            elif self._path_allowed(node, f"{module}.{alias.name}", found):
                self._bind(alias.asname or alias.name, f"{module}.{alias.name}")

    def _own_import(self, node: ast.Import, name: str, asname: str | None) -> bool:
        """``import exercises.embeddings``: your own module (True); ``import exercises.cli``
        is refused, being no file the grader reads."""
        parts = name.split(".")
        if parts[0] != OWN_PACKAGE:
            return False
        if len(parts) != 2 or parts[1] not in OWN_MODULES:
            self._add(node, f"import {name}", "relative")
        elif asname is not None and self._once(asname):
            self.own.add(asname)
            self.own_modules[asname] = parts[1]
        elif asname is None and self._once(OWN_PACKAGE):
            self.own_modules[OWN_PACKAGE] = ""  # exercises.params.X: the package, then a file
        return True

    def _own_from(self, node: ast.ImportFrom, module: str) -> None:
        """``from .embeddings import Embedding``, ``from . import params``: fine for your three
        files; any other file (``from .helpers import x``, ``from .. import y``) is refused."""
        parts = module.split(".") if module else []
        if node.level == 0:  # from exercises[.embeddings] import ...
            parts = parts[1:]
        shown = f"from {'.' * node.level}{module} import"
        if node.level > 1 or len(parts) > 1 or (parts and parts[0] not in OWN_MODULES):
            self._add(node, f"{shown} ...", "relative")
            return
        for alias in node.names:
            bound = alias.asname or alias.name
            if alias.name == "*":
                self._add(node, f"{shown} * (import *)", "star")
            elif not parts and alias.name not in OWN_MODULES:
                self._add(node, f"{shown} {alias.name}", "relative")
            elif not parts and self._once(bound):
                self.own.add(bound)  # the module itself: its attributes are your names
                self.own_modules[bound] = alias.name
            elif parts:  # a name of another of your files: what that file binds it to
                for path in self.exports.get(parts[0], {}).get(alias.name, ()):
                    self._bind(bound, path)

    def _module_allowed(self, node: ast.stmt, module: str) -> bool:
        top = module.split(".")[0]
        if top not in ALLOWED_MODULES:
            self._add(node, f"import {module}", REFUSED.get(top, "import"))
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
        """``F = torch.nn.functional``: F may name that module from here on."""
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and id(node.targets[0]) not in self.in_classes:
            if _class_of(node.value):  # T = type(m): T.forward = ... changes m's class
                self.classes_of.add(node.targets[0].id)
            paths = self._qualify(node.value)
            for path in paths - {UNKNOWN}:
                self._bind(node.targets[0].id, path)
            if UNKNOWN not in paths:
                self.aliases.add(id(node.targets[0]))

    def _qualify(self, node: ast.expr) -> set[str | None]:
        """The module paths an expression may name (``torch.nn.functional``); UNKNOWN among
        them when it may be something else. Without recursion, and once the bindings are
        known, once per node (``self.paths``): each link of a chain of n attributes is read
        once, not n times."""
        chain = []  # the attributes down to the chain's root, outermost first
        while isinstance(node, ast.Attribute) and (self.paths is None
                                                   or id(node) not in self.paths):
            chain.append(node)
            node = node.value
        if isinstance(node, ast.Attribute):  # the rest of the chain is qualified already
            paths = self.paths[id(node)]
        elif isinstance(node, ast.Name) and node.id in self.own_modules and chain:
            paths = self._own_attribute(node.id, chain)
        elif isinstance(node, ast.Name):
            paths = self.modules.get(node.id, {UNKNOWN})
        else:
            paths = {UNKNOWN}
        for link in reversed(chain):
            paths = {UNKNOWN if base is UNKNOWN else f"{base}.{link.attr}" for base in paths}
            if self.paths is not None:
                self.paths[id(link)] = paths
        return paths

    def _own_attribute(self, name: str, chain: list[ast.Attribute]) -> set[str | None]:
        """``params.F`` (or ``exercises.params.F``): what that file binds F to, the links it
        takes off the end of ``chain`` (outermost first); UNKNOWN for anything else."""
        module = self.own_modules[name]
        if not module:  # the package: its attribute is one of your files
            module = chain.pop().attr
            if not chain:
                return {UNKNOWN}
        return set(self.exports.get(module, {}).get(chain.pop().attr, {UNKNOWN}))

    # -- uses

    def _attribute(self, node: ast.AST, attr: str, base: ast.expr) -> None:
        """``base.attr`` (or ``getattr(base, "attr")``) in live code."""
        own = isinstance(base, ast.Name) and base.id in self.own
        for path in sorted(self._qualify(base), key=str):
            found = f"{path}.{attr}" if path else lambda: f"{_shown(base)}.{attr}"
            self._check_attribute(node, attr, path, own, found)

    def _check_attribute(self, node: ast.AST, attr: str, path: str | None, own: bool,
                         found: str | Callable[[], str]) -> None:
        """The rules for one attribute name, on a base that is ``path`` (a module path, or
        UNKNOWN when the grader cannot tell) and is or is not your own module or class
        (``self`` can be anything: ``f(torch.nn.functional)`` makes it a module)."""
        top = path.split(".")[0] if path else None
        if self.ban and not own and _plain(attr) in self.ban.names:
            self._add(node, found, f"{self.ban.what} is banned in stage '{self.ban.stage}': "
                      "write it yourself", banned=True)
        elif self.ban and not own and attr in self.ban.routes and top in (UNKNOWN, "torch"):
            self._add(node, found, f"{self.ban.what} is banned in stage '{self.ban.stage}', "
                      "and this module calls it for you: write it yourself", banned=True)
        if attr in ALWAYS or (attr in REFUSED and not own):
            self._add(node, found, REFUSED[attr])
        elif attr in MODULE_ONLY and not own and top in (UNKNOWN, *MODULE_ONLY[attr][1]):
            self._add(node, found, MODULE_ONLY[attr][0])
        elif attr.startswith(GLOBAL_HOOKS) and not own:
            self._add(node, found, "program")
        elif path == "sys" and attr not in SYS_ALLOWED:
            self._add(node, found, "program")
        elif attr.startswith("_") and not attr.startswith("__") and not own and (
                path is not UNKNOWN or attr in _MODULE_PRIVATE):
            self._add(node, found, "torch" if top in (UNKNOWN, "torch") else "program")

    def _dynamic_attribute(self, call: ast.Call) -> None:
        """``getattr(x, name)``, ``setattr``, ``delattr``: fine with a constant name only."""
        name = _constant_name(call)
        if name is None:
            self._add(call, f"{call.func.id}(..., <a name computed at run time>)", "names")
        elif call.args:
            self._attribute(call, name, call.args[0])
            if call.func.id != "getattr":
                self._changed(call, call.args[0], ast.Store() if call.func.id == "setattr"
                              else ast.Del(), name)

    # -- changing torch

    def _changed(self, node: ast.AST, base: ast.expr, ctx: ast.expr_context,
                 name: str | None = None) -> None:
        """``base.name = ...`` (or ``del``, ``setattr``, ``base[key] = ...``): refused when
        ``base`` is torch or anything reached through it by name (``F``, ``torch.Tensor``,
        ``nn.Linear``), whose attributes the given code and the grader's checks call."""
        if _class_of(base) or isinstance(base, ast.Name) and base.id in self.classes_of:
            # type(m).forward = ...: m's class may be torch's (nn.Linear)
            name = name or (node.attr if isinstance(node, ast.Attribute) else "[...]")
            shown = f"{_shown(base)}{'' if name == '[...]' else '.'}{name}"
            self._add(node, (f"del {shown}" if isinstance(ctx, ast.Del) else f"{shown} = ...")
                      + " (the class of an object, which may be one of torch's: name the "
                      "class itself)", "redirect")
            return
        paths = sorted(p for p in self._qualify(base) if p is not UNKNOWN
                       and p.split(".")[0] == "torch")
        if paths:
            name = name or (node.attr if isinstance(node, ast.Attribute) else "[...]")
            joined = f"{paths[0]}{'' if name == '[...]' else '.'}{name}"
            self._add(node, f"del {joined}" if isinstance(ctx, ast.Del) else f"{joined} = ...",
                      "redirect")

    def _imported_into_a_class(self, node: ast.Import | ast.ImportFrom) -> None:
        """``class A: import torch.nn.functional as F``: a module of torch held as a class
        attribute (``A.F``, ``self.F``), where the grader cannot follow what is done to it."""
        for alias in node.names:
            path = alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
            if id(alias) in self.in_classes and not getattr(node, "level", 0) \
                    and path.split(".")[0] == "torch" and _torch_module(path):
                self._add(node, f"{path}, imported into a class", "redirect")

    def _handed_on(self, node: ast.Name | ast.Attribute) -> None:
        """One of torch's modules used as a value (``f(F)``, ``[nn]``, ``self.F = F``), not
        only read through (``F.relu``) or named again (``G = F``): what is done to it then
        cannot be followed (``m.linear = ...`` on an argument ``m``)."""
        for path in sorted(p for p in self._qualify(node) if p is not UNKNOWN):
            if path.split(".")[0] == "torch" and _torch_module(path):
                self._add(node, f"{path}, handed on as a value", "redirect")
                return

    def _name(self, node: ast.Name, called: bool) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del) or node.id in self.own:
            return
        if node.id in REFUSED_BUILTINS:
            self._add(node, node.id, REFUSED_BUILTINS[node.id])
        elif node.id in ATTRIBUTE_BUILTINS and not called:
            self._add(node, node.id, "names")  # getattr passed around: a computed name
        elif node.id == "type" and not called and id(node) not in self.harmless_types:
            self._add(node, "type", "names")  # t = type; t(name, bases, {computed: ...})
        elif node.id == "__loader__":
            self._add(node, node.id, "code")

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        if node.name in REFUSED_DEFINITIONS:
            self._add(node, f"def {node.name}", "program")
        if not isinstance(node, ast.ClassDef):
            return
        for keyword in node.keywords:  # class A(metaclass=M): M builds the namespace
            if keyword.arg == "metaclass" and ast.unparse(keyword.value) not in METACLASSES:
                self._add(node, f"class {node.name}(metaclass={_shown(keyword.value)})",
                          "names")
        for base in node.bases:  # class M(type): a metaclass of your own
            if ast.unparse(base) in {"type", *METACLASSES} or ast.unparse(base).endswith(
                    ("EnumMeta", "EnumType")):
                self._add(node, f"class {node.name}({_shown(base)})", "names")

    def _call(self, call: ast.Call) -> None:
        """``type(name, bases, namespace)`` and ``Enum("E", names)``: a class whose names are
        computed at run time (``"__array_" + "interface__"``)."""
        callee = call.func.id if isinstance(call.func, ast.Name) else None
        paths = {p for p in self._qualify(call.func) if p}
        enum = any(p.startswith("enum.") for p in paths) or callee in self.enums
        if callee == "type" and len(call.args) >= 3 or enum and (
                len(call.args) >= 2 or any(k.arg in {"names", None} for k in call.keywords)):
            self._add(call, lambda: f"{_shown(call.func)}(<names computed at run time>)",
                      "names")

    def _match_class(self, node: ast.MatchClass) -> None:
        """``case ModuleType(one_hot=f)``: each keyword is an attribute read by name."""
        for attr in node.kwd_attrs:
            self._check_attribute(node, attr, UNKNOWN, False, f"case ...({attr}=...)")

    def _assigned_name(self, node: ast.Assign | ast.AnnAssign) -> None:
        """``__array_interface__ = {...}`` in a class body: numpy reads memory at its address."""
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id in REFUSED_DEFINITIONS:
                self._add(node, f"{target.id} = ...", "program")

    def _special_key(self, node: ast.Constant | ast.keyword) -> None:
        """``type("T", (), {"__torch_function__": f})`` and ``dict(__array_interface__=...)``:
        the same definitions, spelled as a key."""
        key = node.value if isinstance(node, ast.Constant) else node.arg
        if isinstance(key, str) and key in REFUSED_DEFINITIONS:
            self._add(node, repr(key), "program")

    def _add(self, node: ast.AST, found: str | Callable[[], str], kind: str,
             banned: bool = False) -> None:
        """A finding at ``node``'s line: ``found`` (made only now, if it is a function) and
        the line, each cut to ``SHOWN`` characters."""
        line = getattr(node, "lineno", 0)
        why = kind if banned else WHY[kind]
        found = _cut(found() if callable(found) else found)
        self.found.append(Finding(self.file, line, self._code(line), found, why, banned,
                                  "banned" if banned else kind))

    def _code(self, line: int) -> str:
        """Line ``line`` as a finding quotes it, made once however many findings it holds."""
        if line not in self.codes:
            text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            self.codes[line] = _cut(text[: 4 * SHOWN].strip())
        return self.codes[line]


def _class_of(node: ast.expr) -> bool:
    """``type(x)`` or ``x.__class__``: an object's class, whatever it is (torch's ``nn.Linear``
    for ``type(self.lm_head)``), which no reading of the source can tell apart."""
    if isinstance(node, ast.Attribute):
        return node.attr == "__class__"
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "type" and len(node.args) == 1 and not node.keywords)


def _cut(text: str) -> str:
    """``text`` at most ``SHOWN`` characters long, an ellipsis marking a cut."""
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


#: How many parts of an expression a finding turns back into code (``_shown``).
SHOWN_PARTS = 24


def _shown(node: ast.AST) -> str:
    """``node`` as code, for a finding, if it has at most ``SHOWN_PARTS`` parts: each finding
    costs a bounded time (``ast.unparse`` of a chain at each of its links would be quadratic
    in its length)."""
    if sum(1 for _, _ in zip(ast.walk(node), range(SHOWN_PARTS + 1), strict=False)) \
            > SHOWN_PARTS:
        return "<a long expression>"
    return ast.unparse(node)


def _module_private() -> frozenset[str]:
    """The single-underscore names of torch's and numpy's main namespaces that hold a module
    or data rather than a function (``_C``, ``_VF``, ``_ops``, ``_utils``, ``_dynamo``,
    registries and hooks): refused on any object that is not your own, since ``self`` or a
    local can hold the module itself. A private function (``torch._check``) is harmless unless
    banned by name; your own private attributes (``self._rows``) keep other names."""
    import types

    names: set[str] = set()
    try:
        import numpy
        import torch
        spaces = (torch, torch.nn, torch.nn.functional, torch.autograd, numpy)
    except ImportError:  # pragma: no cover - the exercise always has torch
        return frozenset()
    for space in spaces:
        for name in dir(space):
            if name.startswith("_") and not name.startswith("__"):
                value = getattr(space, name, None)
                if isinstance(value, types.ModuleType) or not callable(value):
                    names.add(name)
    return frozenset(names)


_MODULE_PRIVATE = _module_private()


@functools.lru_cache(maxsize=1024)
def _torch_module(path: str) -> bool:
    """Whether ``path`` (``torch.nn.functional``) names one of torch's modules, read from
    torch's own namespaces (a dictionary look-up each, nothing of torch runs); a name torch
    does not have now counts as one, since a module of torch may be loaded when first used."""
    import types

    try:
        import torch
    except ImportError:  # pragma: no cover - the exercise always has torch
        return True
    value: object = torch
    for part in path.split(".")[1:]:
        if not isinstance(value, types.ModuleType):
            return False
        value = vars(value).get(part, _MISSING)
        if value is _MISSING:
            return True
    return isinstance(value, types.ModuleType)


_MISSING = object()


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
