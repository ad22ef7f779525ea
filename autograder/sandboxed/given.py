"""Given code is the grader's: in a stage process only the functions the stages own are the
learner's; everything else of the stub is the stub's own copy, and no class of theirs changes
what nn.Module does (the rule the stubs state as "Given code").

After the learner's module is loaded with its scaffolds (``loader.load``), three steps, each
recorded in a ``Pins``: ``pin`` puts the stub's own copy (compiled from request["given"]) of
every function, class, constant and class attribute no stage owns into the learner's module
and classes; ``unshadow`` replaces what their classes, bases, mixins or metaclass define under
a name of nn.Module's (or type's) with the base's own, and removes a class attribute named as
a member the given code sets (``lm_head``); ``guard`` makes given methods and torch's
``Fixed``, so an object cannot shadow them at run time.

``Pins.undone`` undoes it all for a block, to run the learner's classes as written: the hidden
suites compare that run with the pinned one, so changed given code loses the owning stage's
points. docs/threat-model.md ("Given code is the grader's") says why each step is needed.
"""

from __future__ import annotations

import ast
import functools
import operator
import types
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain

from torch import nn

MISSING = object()  # a name the holder did not have in its own namespace

#: Class attributes that hold no behaviour, or that Python keeps per class by itself.
DATA = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                  "__annotations__", "__firstlineno__", "__static_attributes__", "__slots__",
                  "__orig_bases__", "__parameters__", "__abstractmethods__", "_abc_impl"})


@dataclass
class _Change:
    holder: object  # a module or a class
    name: str
    old: object  # the holder's own value before, or MISSING
    new: object


def _own(holder: object, name: str) -> object:
    return vars(holder).get(name, MISSING)


def _put(holder: object, name: str, value: object) -> None:
    """Set (or, for MISSING, remove) ``holder``'s own ``name``, past any __setattr__ or
    __delattr__ that the learner's class or metaclass defines."""
    setter = type.__setattr__ if isinstance(holder, type) else object.__setattr__
    deleter = type.__delattr__ if isinstance(holder, type) else object.__delattr__
    if value is MISSING:
        if name in vars(holder):
            deleter(holder, name)
    else:
        setter(holder, name, value)


class _Snapshot:
    """Some modules' and classes' namespaces as they are now: each one's size, and the object
    under each of its names. ``same()`` reads them all again (an ``itemgetter`` per namespace)
    and compares by identity only, in C (``map(operator.is_, ...)``): no __eq__ or __hash__
    of anything the learner made runs, and an equal but other object is a difference. The
    same size and every name still there with the same object: the same namespace (nothing
    added, removed or rebound). A namespace that may not change is therefore never missed,
    and one that changes in a harmless way only costs a full pass."""

    __slots__ = ("key", "spaces", "sizes", "full", "getters", "objects")

    def __init__(self, key: tuple[int, ...], holders: list[object]) -> None:
        self.key = key  # the counts of changes it was taken for
        spaces = [vars(h) for h in {id(h): h for h in holders}.values()]  # live views
        self.spaces = tuple(spaces)
        self.sizes = list(map(len, spaces))
        self.full = tuple(space for space in spaces if len(space))
        # itemgetter of one name returns the object itself, not a 1-tuple: repeat the first
        self.getters = tuple(operator.itemgetter(*space, next(iter(space))) for space in self.full)
        self.objects = tuple(self._read())

    def _read(self) -> chain:
        """The object under every name, namespace after namespace (in C: no loop of ours)."""
        return chain.from_iterable(map(operator.call, self.getters, self.full))

    def same(self) -> bool:
        try:
            return (list(map(len, self.spaces)) == self.sizes  # a list of ints: no learner code
                    and all(map(operator.is_, self._read(), self.objects)))
        except (KeyError, RuntimeError):  # a name gone, or changed while read: not the same
            return False


class Pins:
    """Every change made to the learner's modules and classes (and torch's), in order."""

    #: How many ``undone`` blocks are open: while one is, nothing is made again.
    suspended = 0

    def __init__(self) -> None:
        self.changes: list[_Change] = []
        self.owns: list[object] = []  # each change's holder's own attributes (a live view)
        self.others: list[Pins] = []  # made again with these (the scaffolds' changes)
        #: classes that may gain no attribute shadowing their bases': (class, its names, bases)
        self.watched: list[tuple[type, frozenset[str], tuple[type, ...]]] = []
        self._snapshot: _Snapshot | None = None  # as the last full pass of reapply left them
        self.running = 0  # owned calls in progress (``repinning``)

    def watch(self, cls: type, bases: tuple[type, ...]) -> None:
        self.watched.append((cls, frozenset(vars(cls)), bases))

    def set(self, holder: object, name: str, value: object) -> None:
        self.changes.append(_Change(holder, name, _own(holder, name), value))
        self.owns.append(vars(holder))
        _put(holder, name, value)

    def reapply(self) -> None:
        """Make every change again where code has since undone it (``GPT2.forward = ...`` in
        a learner's method): run after each call of the learner's own functions and before
        each probe, so that what they change on a class lasts no longer than their call.

        Cheap when nothing changed, as almost always: ``_Snapshot`` compares every pinned and
        watched namespace (~360, most of them torch's layers) with how the last full pass
        left it, in C. Any difference in any of them, and the full pass runs, then a new
        snapshot is taken."""
        if Pins.suspended:
            return
        key = (len(self.changes), len(self.watched), *(len(p.changes) for p in self.others))
        if self._snapshot is not None and self._snapshot.key == key and self._snapshot.same():
            return
        for pins in (self, *self.others):
            for own, c in zip(pins.owns, pins.changes, strict=True):
                if own.get(c.name, MISSING) is not c.new:
                    _put(c.holder, c.name, c.new)
        for cls, names, bases in self.watched:  # a name added since, over one of nn.Module's
            if vars(cls).keys() != names:
                for name in set(vars(cls)) - names - DATA:
                    if _lookup(bases, name) is not MISSING:
                        _put(cls, name, MISSING)
        holders = [c.holder for pins in (self, *self.others) for c in pins.changes]
        self._snapshot = _Snapshot(key, holders + [cls for cls, _, _ in self.watched])

    @contextmanager
    def undone(self) -> Iterator[None]:
        """The learner's code as they wrote it for the length of the block, then pinned
        again."""
        Pins.suspended += 1
        for c in reversed(self.changes):
            _put(c.holder, c.name, c.old)
        try:
            yield
        finally:
            for c in self.changes:
                _put(c.holder, c.name, c.new)
            Pins.suspended -= 1


def repinning(value: object, pins: Pins) -> object:
    """An owned function (method, property) that makes ``pins`` again once it returns: what
    the learner's code changes of given code, on a class or a module, is undone as soon as
    their call is over, before any given code runs.

    Only the outermost owned call makes them again: one owned function returning into
    another (``forward`` calling ``check_ids``) returns into the learner's code, which may
    run what it likes anyway; whatever given code that code calls gives its results to the
    learner's, never to a probe. When the last owned call returns, the pins are made again,
    before the given code or the probe that called it goes on."""
    if isinstance(value, property):
        return property(*(None if f is None else repinning(f, pins)
                          for f in (value.fget, value.fset, value.fdel)), value.__doc__)
    if isinstance(value, staticmethod | classmethod):
        return type(value)(repinning(value.__func__, pins))
    if not callable(value) or isinstance(value, type):
        return value

    @functools.wraps(value)
    def owned(*args: object, **kwargs: object) -> object:
        pins.running += 1
        try:
            return value(*args, **kwargs)
        finally:
            pins.running -= 1
            if pins.running <= 0:
                pins.reapply()

    return owned


class Fixed:
    """A method that no object can shadow: a data descriptor, so ``obj.name`` always finds it
    before the object's own attributes, and ``obj.name = ...`` (or ``del``) raises."""

    __slots__ = ("function", "qualname")

    def __init__(self, function: types.FunctionType, qualname: str) -> None:
        self.function = function
        self.qualname = qualname

    def __get__(self, obj: object, owner: type | None = None) -> object:
        return self.function if obj is None else types.MethodType(self.function, obj)

    def __set__(self, obj: object, value: object) -> None:
        raise AttributeError(self._refusal())

    def __delete__(self, obj: object) -> None:
        raise AttributeError(self._refusal())

    def _refusal(self) -> str:
        return (f"{self.qualname} is given code, not yours to replace: the grader runs its own "
                "copy, so write your stage's code in the function it owns (YOUR CODE HERE)")


def _fixed(value: object, qualname: str) -> object:
    """``value`` as a Fixed attribute if it is a plain method (not a dunder, which Python
    looks up on the type anyway), else as it is."""
    name = qualname.rsplit(".", 1)[-1]
    if isinstance(value, types.FunctionType) and not (name.startswith("__")
                                                      and name.endswith("__")):
        return Fixed(value, qualname)
    return value


def rebind_super(value: object, cls: type) -> object:
    """A function moved into ``cls``, with any zero-argument super() pointed at ``cls``
    (super() reads the function's ``__class__`` cell)."""
    if not isinstance(value, types.FunctionType) or "__class__" not in value.__code__.co_freevars:
        return value
    cells = tuple(
        types.CellType(cls) if var == "__class__" else cell
        for var, cell in zip(value.__code__.co_freevars, value.__closure__, strict=True)
    )
    moved = types.FunctionType(value.__code__, value.__globals__, value.__name__,
                               value.__defaults__, cells)
    moved.__kwdefaults__, moved.__qualname__ = value.__kwdefaults__, value.__qualname__
    return moved


def _super_anchor(learner: type, stub: type) -> type:
    """The class of the learner's MRO from which super() reaches what it reaches from the stub's
    class: the one just before the stub's first base (nn.Module), so a given __init__'s
    super().__init__() is nn.Module's, not a learner base's that takes other arguments."""
    bases = stub.__mro__[1:]
    for i, cls in enumerate(learner.__mro__):
        if cls in bases:
            return learner.__mro__[i - 1] if i else learner
    return learner


def lookup(cls: type, name: str) -> object:
    """``cls.name`` as its MRO holds it (a descriptor itself, not what it gives), or MISSING."""
    return _lookup(cls.__mro__, name)


def _lookup(classes: Iterable[type], name: str) -> object:
    for cls in classes:
        if name in vars(cls):
            return vars(cls)[name]
    return MISSING


def unshadow(learner: type, bases: tuple[type, ...], skip: set[str], pins: Pins) -> None:
    """Every attribute that ``learner`` or a class of its MRO outside ``bases`` defines, under a
    name ``bases`` have and not in ``skip``, replaced on ``learner`` by the bases' own."""
    seen = set(skip) | DATA
    for cls in learner.__mro__:
        if cls in bases:
            continue
        for name in list(vars(cls)):
            if name in seen:
                continue
            seen.add(name)
            value = _lookup(bases, name)
            if value is not MISSING:
                pins.set(learner, name, value)


def _pin_class(learner: type, stub: type, owned: set[str], qualname: str, pins: Pins,
               source: str | None = None) -> None:
    """The stub's given attributes into the learner's class; then nothing else of theirs that
    overrides the stub's bases (or the stub's metaclass), and no class attribute of theirs
    under the name of a member the given code sets on each object (``source``: the stub's)."""
    anchor = _super_anchor(learner, stub)
    for name, value in vars(stub).items():
        if name in owned or name in DATA:
            continue
        pins.set(learner, name, _fixed(rebind_super(value, anchor), f"{qualname}.{name}"))
    unshadow(learner, stub.__mro__[1:], set(vars(stub)) | owned, pins)
    if source is not None:
        unshadow_members(learner, stub, instance_members(source, qualname) - owned
                         - set(vars(stub)), pins)  # the stub's own class attributes stay
    pins.watch(learner, stub.__mro__[1:])
    if type(learner) is not type(stub):  # a metaclass of theirs: its __call__ is type's
        unshadow(type(learner), type(stub).__mro__, set(), pins)


@functools.lru_cache(maxsize=32)
def instance_members(source: str, qualname: str) -> frozenset[str]:
    """The names the stub's class ``qualname`` sets on ``self`` in its methods (``self.wte =
    ...``, ``self.register_buffer("mask", ...)``): its submodules, Parameters, buffers and
    plain members, which nn.Module keeps per object, where a class attribute shadows them."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.ClassDef) and node.name == qualname):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store) \
                    and isinstance(inner.value, ast.Name) and inner.value.id == "self":
                names.add(inner.attr)
            elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                    and inner.func.attr in REGISTERS and inner.args \
                    and isinstance(inner.args[0], ast.Constant) \
                    and isinstance(inner.args[0].value, str):
                names.add(inner.args[0].value)
    return frozenset(names)


#: nn.Module's methods that set a member by name.
REGISTERS = frozenset({"register_buffer", "register_parameter", "register_module", "add_module"})


def unshadow_members(learner: type, stub: type, members: Iterable[str], pins: Pins) -> None:
    """Each of ``members`` (set on each object by given code: ``lm_head``) removed from the
    learner's classes where they define it as a class attribute: a ``lm_head = property(...)``
    would answer ``model.lm_head`` in place of the submodule the given code made."""
    bases = stub.__mro__[1:]
    for name in sorted(set(members) - DATA):
        for cls in learner.__mro__:
            if cls in bases or cls.__module__.split(".")[0] == "torch":
                continue
            if cls is learner or name in vars(cls):  # on their class even while it has none:
                pins.set(cls, name, MISSING)  # reapply removes one their code sets later


@functools.lru_cache(maxsize=8)
def top_level(source: str) -> tuple[str, ...]:
    """The names a stub's source binds at module level: functions, classes and constants (not
    its imports, which the learner's own code may use as it likes). Kept per source: the
    zygote reads the stubs' once (``loader.precompile``) for every stage process."""
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return tuple(names)


def pin(target: types.ModuleType, stub: types.ModuleType, source: str, owned: list[str],
        skip: set[str], pins: Pins) -> None:
    """Make ``target`` (the learner's module, scaffolds in) run ``stub``'s given code.

    ``stub``: the stub exec'd here from ``source``; ``owned``: the qualnames of this module that
    any stage owns; ``skip``: top-level names of ``target`` that are the grader's stand-ins
    already (a class the learner removed)."""
    owned_set = set(owned)
    holders = {q.split(".")[0] for q in owned if "." in q}
    for name in top_level(source):
        if name not in vars(stub):
            continue
        if name in owned_set or name in holders:
            mine = vars(target).get(name, MISSING)
            if name in holders and isinstance(mine, type) and name not in skip:
                members = {q.split(".", 1)[1] for q in owned if q.startswith(f"{name}.")}
                _pin_class(mine, vars(stub)[name], members, name, pins, source)
            if mine is not MISSING:  # given code calls the learner's (or the scaffold)
                vars(stub)[name] = mine
            continue
        value = vars(stub)[name]
        if isinstance(value, type) and issubclass(value, nn.Module):
            _guard_class(value, pins)
        pins.set(target, name, value)


def _guard_class(cls: type, pins: Pins) -> None:
    """Each method of ``cls`` made Fixed (a dunder kept as it is, but recorded, so that
    ``reapply`` puts it back), and ``cls`` watched for new names over its bases'."""
    for name, value in list(vars(cls).items()):
        if isinstance(value, types.FunctionType):
            pins.set(cls, name, _fixed(value, f"{cls.__qualname__}.{name}"))
    pins.watch(cls, cls.__mro__[1:])


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def guard_torch(pins: Pins) -> None:
    """nn.Module's methods and torch's own layers' (Linear.forward, ...) as Fixed: an object
    cannot shadow them (``model.lm_head.forward = ...``)."""
    seen: set[type] = set()
    for cls in (nn.Module, *_subclasses(nn.Module)):
        if cls in seen or not cls.__module__.startswith("torch."):
            continue
        seen.add(cls)
        _guard_class(cls, pins)
