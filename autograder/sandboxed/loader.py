"""The loader: the learner's modules imported for one stage, with scaffolds and given code.

A stage process (worker.py) calls ``load`` once, before it answers probes. The request the
grader sent (autograder/boundary/request.py) says everything: which modules the submission has,
in dependency order (``request["modules"]``, from lumen.stages.SUBMISSION_FILES: this folder
keeps no copy), which functions the graded stage owns and which the other stages own (those
are replaced by public scaffolds, scaffolds.py), and the learner's stubs (the given code,
pinned by given.py, and the fallback for a module that cannot be imported). No reference
source is involved. The learner's files run from the text in the request, the text the
grader's rules read (``Checked``), never from their bytes on disk.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterator

import given as given_code
import protocol
import scaffolds
from probes.shared import builtin_bases  # an exception's built-in classes, as a probe reports them

PACKAGE = "submission"  # the learner's files are imported as submission.embeddings, ...


def _package(name: str, path: list[str]) -> types.ModuleType:
    package = types.ModuleType(name)
    package.__path__ = path
    sys.modules[name] = package
    return package


def error_data(exc: BaseException, files: tuple[str, ...] = ()) -> dict:
    """An exception as data: type, message, and the traceback lines inside the learner's files."""
    frames = [
        f"{os.path.basename(f.filename)}, line {f.lineno}, in {f.name}: {(f.line or '').strip()}"
        for f in traceback.extract_tb(exc.__traceback__)
        if not files or os.path.abspath(f.filename) in files
    ]
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a learner's exception can break str()
        message = "<an exception whose message could not be read>"
    return {
        "type": protocol.type_name(exc),
        # the built-in classes it is an instance of: a TokenIndexError(IndexError) is caught
        # by every ``except IndexError``, so it keeps that promise (feedback.expect_error)
        "bases": builtin_bases(exc),
        "message": message[: protocol.MAX_STRING],
        "where": frames[-5:],  # whether it is a stub's is read from the message, by the grader
    }


def _resolve(module: types.ModuleType, qualname: str) -> tuple[object, str]:
    """The object that holds ``qualname``'s last part, and that part's name."""
    *outer, last = qualname.split(".")
    holder: object = module
    for part in outer:
        holder = getattr(holder, part)
    return holder, last


def _transplant(target: types.ModuleType, module: str, foreign: list[str],
                given: Callable[[], types.ModuleType],
                record: dict[str, given_code.Pins] | None = None) -> None:
    """Put into ``target`` the scaffold of each function in ``foreign`` (qualnames of
    ``module`` that other stages own), in place of the learner's.

    A scaffold is set on the learner's own class, whatever its bases, mixins or helpers: a
    method the learner inherits from a base of their own is shadowed there, and nothing of
    the learner's is called by a scaffold. Properties and staticmethods move as they are. When
    the learner removed the class, ``given()``'s (the stub's, already scaffolded) stands in.
    ``record`` gets "module:qualname" -> the change, which a probe may undo to run the
    learner's own function again (``Shipped``).
    """
    for qualname in foreign:
        value = scaffolds.SCAFFOLDS[f"{module}:{qualname}"]
        try:
            holder, name = _resolve(target, qualname)
        except AttributeError:  # the learner removed the class: the stub's whole class
            top = qualname.split(".")[0]
            setattr(target, top, getattr(given(), top))
            continue
        if isinstance(holder, type):
            # super() in a scaffold would reach the learner's own base: the scaffolds use none
            # (they call nn.Module.__init__ directly), so this only keeps a future one right
            value = given_code.rebind_super(value, holder)
        change = given_code.Pins()
        change.set(holder, name, value)
        if record is not None:
            record[f"{module}:{qualname}"] = change


class Checked(importlib.abc.Loader):
    """Runs a learner's file from the text the grader's rules read (``request["files"]``,
    the submission decoded once, as UTF-8, in the grader), never from its bytes on disk: the
    import system would decode those by the file's own encoding declaration (``# -*- coding:
    utf-7 -*-``), and run text the rules never saw (a comment holding ``+AAo-``, a newline in
    UTF-7, then a line of code). ``compile`` of a str ignores the declaration, as ``ast.parse``
    does in autograder/rules/: both read the same characters. Its lines are what tracebacks
    quote (``linecache``) and what ``get_source`` returns."""

    def __init__(self, text: str) -> None:
        self.text = text

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: types.ModuleType) -> None:
        path = module.__spec__.origin
        # mtime None: linecache never checks the file against it, nor reads the file instead
        linecache.cache[path] = (len(self.text), None, self.text.splitlines(True), path)
        exec(compile(self.text, path, "exec", dont_inherit=True), module.__dict__)

    def get_source(self, fullname: str) -> str:
        return self.text


def _absent(module: str, name: str) -> type:
    """A stand-in for a name the graded stage owns but the learner's file lacks: calling it
    says so, instead of the stub saying "not implemented yet"."""
    message = (f"your {module}.py has no {name}: keep every class and function of the stub, "
               "with its name and signature")

    def refuse(cls, *args, **kwargs):
        raise AttributeError(message)

    return type(name, (), {"__new__": refuse, "__doc__": message})


#: The stubs compiled by the zygote (``precompile``), each under (its module, its text): a stage
#: process whose request holds the same text runs that code instead of compiling it again.
_COMPILED: dict[tuple[str, str], types.CodeType] = {}


def _stub_file(name: str) -> str:
    return f"<the stub of {name}.py>"


def precompile(given: dict[str, str]) -> None:
    """In the zygote, before the forks that need them: the stubs compiled (and their top-level
    names read) once, not in each stage process of a learner (~7 ms of CPU each)."""
    for name, text in given.items():
        if isinstance(name, str) and isinstance(text, str):
            _COMPILED[name, text] = compile(text, _stub_file(name), "exec")
            given_code.top_level(text)


def _stub(name: str, request: dict) -> types.ModuleType:
    """The learner's stub of ``name``.py (``request["given"]``, no solution in it), compiled and
    run here as a module of the submission's package: the grader's copy of the given code."""
    module = types.ModuleType(f"{PACKAGE}.{name}")
    module.__package__ = PACKAGE  # its relative imports reach the learner's other modules
    module.__file__ = _stub_file(name)
    # Registered while it runs (@dataclass looks its module up there), then the learner's own
    # module is put back: when only a class of theirs is missing, the rest of it stays in use.
    previous = sys.modules.get(module.__name__)
    sys.modules[module.__name__] = module
    try:
        text = request["given"][name]
        code = _COMPILED.get((name, text)) or compile(text, module.__file__, "exec")
        exec(code, module.__dict__)
    finally:
        if previous is not None:
            sys.modules[module.__name__] = previous
    return module


def _given(name: str, request: dict) -> types.ModuleType:
    """The stub of ``name``.py with the scaffolds of every other stage in it: what the other
    stages build on when the learner's own file cannot be used."""
    module = _stub(name, request)
    _transplant(module, name, request["foreign"].get(name, []), lambda: module)
    return module


class Shipped:
    """The learner's code as they wrote it, for a probe that checks it (``given.py``).

    In a stage process given code is the grader's and scaffolds stand in for the other stages;
    ``with modules["shipped"](keys):`` undoes the first, and the scaffolds of ``keys``
    ("embeddings:Embedding.__init__"), for the length of the block."""

    def __init__(self, pinned: given_code.Pins, scaffolded: dict[str, given_code.Pins]) -> None:
        self.pinned, self.scaffolded = pinned, scaffolded
        pinned.others = list(scaffolded.values())
        self.reapply = pinned.reapply  # before each probe (stage_process)

    @contextlib.contextmanager
    def __call__(self, keys: tuple[str, ...] = ()) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for key in keys:
                if key in self.scaffolded:
                    stack.enter_context(self.scaffolded[key].undone())
            stack.enter_context(self.pinned.undone())
            yield


#: torch's classes guarded (``given.guard_torch``) in the zygote, once, before it forks: the
#: same in every stage process, which takes its copy (``load``) instead of guarding ~360
#: classes itself (~15 ms of CPU and the pages it copies, six times a learner).
_GUARDED: list[given_code.Pins] = []


def prepare() -> None:
    """In the zygote, before any fork: what every stage process's ``load`` would do first."""
    if not _GUARDED:
        pins = given_code.Pins()
        given_code.guard_torch(pins)
        _GUARDED.append(pins)


def _guarded_torch() -> given_code.Pins:
    """The pins that guard torch's classes: the zygote's (``prepare``), taken once per process
    (a second ``load`` in one process guards again, as without ``prepare``)."""
    if _GUARDED:
        return _GUARDED.pop()
    pins = given_code.Pins()
    given_code.guard_torch(pins)
    return pins


def load(submission: str, request: dict) -> tuple[dict, dict]:
    """Import the learner's modules for one stage; return (modules, import errors).

    ``request["modules"]`` names the modules, in dependency order (``file_names``: the
    learner's files the stage process wrote to ``submission``); ``request["owns"]`` and
    ``request["foreign"]`` map module name -> the qualnames the graded stage owns and those
    the other stages own. The latter are replaced by scaffolds
    (scaffolds.py); the given code, everything no stage owns, by the stub's own
    (``request["given"]``, given.py); the rest is the learner's. A module that fails to import
    is replaced by the stub with the scaffolds in it. No reference source is involved.
    ``modules["shipped"]``: the ``Shipped`` that runs the learner's code as they wrote it.
    """
    _package(PACKAGE, [submission])
    modules, errors = {}, {}
    stubs: dict[str, types.ModuleType] = {}
    pinned, scaffolded = _guarded_torch(), {}  # first: what their classes inherit is guarded

    def given(name: str) -> types.ModuleType:
        if name not in stubs:
            stubs[name] = _given(name, request)
        return stubs[name]

    for name in request["modules"]:
        path = os.path.join(submission, f"{name}.py")
        full = f"{PACKAGE}.{name}"
        foreign = request["foreign"].get(name, [])
        owned = request["owns"].get(name, [])
        try:
            text = request.get("files", {}).get(f"{name}.py")
            if not isinstance(text, str) or not os.path.isfile(path):
                raise FileNotFoundError(f"{name}.py is missing from the submission")
            spec = importlib.util.spec_from_file_location(full, path, loader=Checked(text))
            module = importlib.util.module_from_spec(spec)
            sys.modules[full] = module
            spec.loader.exec_module(module)
            before = set(vars(module))
            absent = {q.split(".")[0] for q in owned} - before
            _transplant(module, name, foreign, lambda name=name: given(name), scaffolded)
            removed = {q.split(".")[0] for q in foreign} - before  # the stub's class stands in
            for top in absent:
                setattr(module, top, _absent(name, top))
            given_code.pin(module, _stub(name, request), request["given"][name],
                           [*owned, *foreign], absent | removed, pinned)
            _repinning(module, owned, absent, pinned)
        except BaseException as exc:  # noqa: BLE001 - SystemExit at import is a finding too
            errors[name] = error_data(exc, (os.path.abspath(path),))
            module = given(name)  # what the other stages build on still works
            sys.modules[full] = module
        modules[name] = module
    modules["shipped"] = Shipped(pinned, scaffolded)
    return modules, errors


def file_names(request: dict) -> list[str]:
    """The learner's files a stage process writes and loads: one per module the request
    names (``"embeddings"`` -> ``"embeddings.py"``), in its order."""
    return [f"{name}.py" for name in request["modules"]]


def _repinning(module: types.ModuleType, owned: list[str], absent: set[str],
               pinned: given_code.Pins) -> None:
    """Each function of ``module`` that the graded stage owns, made to pin the given code
    again once it returns (``given.repinning``), on the learner's own class."""
    for qualname in owned:
        if qualname.split(".")[0] in absent:
            continue
        try:
            holder, name = _resolve(module, qualname)
        except AttributeError:
            continue
        value = given_code.lookup(holder, name) if isinstance(holder, type) \
            else vars(holder).get(name, given_code.MISSING)
        if value is not given_code.MISSING:
            pinned.set(holder, name, given_code.repinning(value, pinned))
