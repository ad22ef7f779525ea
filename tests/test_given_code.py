"""Given code is the grader's: in a stage process only the functions the stage owns are the
learner's, and the learner's classes are also checked as they wrote them.

autograder/sandboxed/given.py pins the stub's given code on the learner's classes, replaces
what they override of nn.Module, and makes given and torch methods impossible to shadow; each
stage's "as you wrote it" tests run the learner's classes unpinned. Proved here through one
warm Grader, as for a class:

- what runs in the stage process is the stub's given code, not the learner's file;
- every way of doing a stage's work outside the function it owns (forward, __init__, a base
  class, a metaclass, an override of nn.Module's methods, an attribute, a module-level name
  given code uses) earns nothing for it, and is named as changed given code.

The known mistakes and correct layouts are graded in tests/test_grader_variants.py and
tests/test_scaffolds.py; that the request carries only the stub is tests/test_scaffolds.py's.
"""

from __future__ import annotations

import ast
import textwrap

import pytest
import torch
from torch import nn

from autograder.grading import Grader
from autograder.sandboxed import given
from tests.variants.build import LUMEN, make_submission


@pytest.fixture(scope="module")
def grader():
    """One warm worker for every submission here, as for a class."""
    with Grader() as g:
        yield g


def _graded(grader, tmp_path, replacements: dict[str, str], stage: str) -> dict:
    """The stage's verdicts, test name -> TestResult, of lumen with ``replacements``."""
    folder = make_submission(tmp_path / "submission", replacements)
    result = grader.grade(folder, seed=5, stages=[stage])
    graded = next(s for s in result.stages if s.name == stage)
    verdicts = {r.name: r for r, _, _ in graded.tests}
    assert not [r for r in verdicts.values() if r.grader_error], verdicts
    return verdicts


NO_TIE = '''
    def tie_weights(self):
        pass  # the tie is made elsewhere
'''


def _gpt2_class(bases: str = "nn.Module", header: str = "", extra: str = "",
                tie: str = NO_TIE) -> str:
    """lumen's GPT2 with ``bases``, its tie_weights replaced by ``tie`` and ``extra`` methods
    added; ``header``: source put before the class."""
    source = (LUMEN / "gpt2.py").read_text(encoding="utf-8")
    cls = next(n for n in ast.parse(source).body
               if isinstance(n, ast.ClassDef) and n.name == "GPT2")
    lines = source.splitlines()
    tie_node = next(n for n in cls.body
                    if isinstance(n, ast.FunctionDef) and n.name == "tie_weights")
    body = textwrap.indent(textwrap.dedent(tie).strip("\n") + "\n\n"
                           + textwrap.dedent(extra).strip("\n"), "    ").splitlines()
    text = (lines[cls.lineno - 1:tie_node.lineno - 1] + body
            + lines[tie_node.end_lineno:cls.end_lineno])
    text[0] = f"class GPT2({bases}):"
    return textwrap.dedent(header).strip("\n") + "\n\n\n" + "\n".join(text) + "\n"


# What runs in the stage process

SPY = '''
    def tie_weights(self):
        raise RuntimeError("FORWARD-FROM " + type(self).forward.__code__.co_filename
                           + " INIT-FROM " + type(self).__init__.__code__.co_filename)
'''


def test_the_given_code_that_runs_is_the_stubs(grader, tmp_path):
    """The learner's tie_weights looks at where its class's forward and __init__ come from:
    the stub compiled by the grader, not the learner's gpt2.py."""
    verdicts = _graded(grader, tmp_path, {"gpt2:GPT2.tie_weights": SPY}, "tying")
    message = verdicts["test_tied_head_is_the_embedding"].message
    assert "FORWARD-FROM <the stub of gpt2.py>" in message, message
    assert "INIT-FROM <the stub of gpt2.py>" in message, message


# The tie made anywhere but tie_weights earns nothing for it

#: Each: the learner's GPT2 (tie_weights does nothing), where the tie is made instead.
TIED_ELSEWHERE = {
    "__call__ overridden: tie on every call": _gpt2_class(extra='''
        def __call__(self, ids):
            if self.config.tie_weights:
                self.lm_head.weight = self.wte.weight
            return super().__call__(ids)
    '''),
    "_call_impl overridden": _gpt2_class(extra='''
        def _call_impl(self, *args, **kwargs):
            if self.config.tie_weights:
                self.lm_head.weight = self.wte.weight
            return self.forward(*args, **kwargs)
    '''),
    "__setattr__ overridden: lm_head built tied": _gpt2_class(extra='''
        def __setattr__(self, name, value):
            super().__setattr__(name, value)
            if name == "lm_head" and self.config.tie_weights:
                value.weight = self.wte.weight
    '''),
    "a mixin's load_state_dict and to re-tie": _gpt2_class(
        bases="_Retie, nn.Module",
        header='''
        class _Retie:
            """Ties again whenever the model is loaded or moved."""

            def _tie(self):
                if self.config.tie_weights:
                    self.lm_head.weight = self.wte.weight

            def to(self, *args, **kwargs):
                model = nn.Module.to(self, *args, **kwargs)
                model._tie()
                return model

            def load_state_dict(self, *args, **kwargs):
                result = nn.Module.load_state_dict(self, *args, **kwargs)
                self._tie()
                return result

            def train(self, mode=True):
                self._tie()
                return nn.Module.train(self, mode)
        '''),
    "a metaclass ties every model it builds": _gpt2_class(
        bases="nn.Module, metaclass=_Tying",
        header='''
        class _Tying(type):
            """Ties each GPT2 as it is built."""

            def __call__(cls, *args, **kwargs):
                model = super().__call__(*args, **kwargs)
                if model.config.tie_weights:
                    model.lm_head.weight = model.wte.weight
                return model
        '''),
    "__getattr__ overridden: lm_head tied whenever it is read": _gpt2_class(extra='''
        def __getattr__(self, name):
            module = super().__getattr__(name)
            if name == "lm_head" and self.config.tie_weights:
                module.weight = self.wte.weight
            return module
    '''),
}


@pytest.mark.parametrize("name", list(TIED_ELSEWHERE))
def test_a_tie_made_outside_tie_weights_earns_nothing(grader, tmp_path, name):
    verdicts = _graded(grader, tmp_path, {"gpt2:GPT2": TIED_ELSEWHERE[name]}, "tying")
    assert not verdicts["test_tied_head_is_the_embedding"].passed, \
        f"{name}: the tie made outside tie_weights got its points"
    assert not verdicts["test_tie_as_you_wrote_it"].passed


#: Each: tie_weights replaces given code on an object at run time (it raises there).
REPLACED_ON_AN_OBJECT = {
    "the model's forward": '''
        def tie_weights(self):
            def forward(ids):
                return type(self).forward(self, ids) @ torch.eye(self.config.vocab_size)
            self.forward = forward
    ''',
    "lm_head's forward (h @ E.T, no shared Parameter)": '''
        def tie_weights(self):
            if self.config.tie_weights:
                wte = self.wte
                self.lm_head.forward = lambda h: h @ wte.weight.T
    ''',
    "the model's _call_impl, past __setattr__": '''
        def tie_weights(self):
            if self.config.tie_weights:
                object.__setattr__(self, "_call_impl", lambda ids: self.lm_head(self.ln_f(
                    self.wte(ids) + self.wpe(torch.arange(ids.shape[1])))))
    ''',
}


@pytest.mark.parametrize("name", list(REPLACED_ON_AN_OBJECT))
def test_given_methods_cannot_be_replaced_on_an_object(grader, tmp_path, name):
    verdicts = _graded(grader, tmp_path, {"gpt2:GPT2.tie_weights": REPLACED_ON_AN_OBJECT[name]},
                       "tying")
    message = verdicts["test_tied_head_is_the_embedding"].message
    assert not verdicts["test_tied_head_is_the_embedding"].passed, name
    assert "is given code, not yours to replace" in message, message


#: Each: tie_weights replaces given code on a class, or rebinds a name given code uses, at
#: run time: made again as soon as tie_weights returns, before any given code runs.
REPLACED_ON_A_CLASS = {
    "GPT2.forward reassigned": '''
        def tie_weights(self):
            def forward(model, ids):
                x = model.wte(ids) + model.wpe(torch.arange(ids.shape[1]))
                for block in model.blocks:
                    x = block(x)
                return model.ln_f(x) @ model.wte.weight.T
            if self.config.tie_weights:
                type(self).forward = forward
    ''',
    "nn.Linear.forward reassigned": '''
        def tie_weights(self):
            if self.config.tie_weights:
                wte = self.wte
                nn.Linear.forward = lambda linear, h: h @ (
                    wte.weight if linear.out_features == wte.vocab_size else linear.weight).T
    ''',
    "nn.Module.__call__ reassigned": '''
        def tie_weights(self):
            if self.config.tie_weights:
                call = nn.Module.__call__
                def tying(module, *args, **kwargs):
                    if hasattr(module, "lm_head"):
                        module.lm_head.weight = module.wte.weight
                    return call(module, *args, **kwargs)
                nn.Module.__call__ = tying
    ''',
}


@pytest.mark.parametrize("name", list(REPLACED_ON_A_CLASS))
def test_given_code_changed_at_run_time_is_put_back(grader, tmp_path, name):
    verdicts = _graded(grader, tmp_path, {"gpt2:GPT2.tie_weights": REPLACED_ON_A_CLASS[name]},
                       "tying")
    assert not verdicts["test_tied_head_is_the_embedding"].passed, \
        f"{name}: a tie made by changing given code at run time got its points"
    assert not verdicts["test_tie_as_you_wrote_it"].passed


# Module-level names that given code uses are the stub's

REBOUND = '''
class Block(nn.Module):
    """The learner's own Block: the identity."""

    def __init__(self, config):
        super().__init__()

    def forward(self, x):
        return x
'''


def test_module_level_names_of_given_code_are_the_stubs(grader, tmp_path):
    """A learner's gpt2.py whose Block (given code) is the identity: the model the grader
    builds has the stub's blocks, so every pinned check passes, and the one check that runs
    their GPT2 as they wrote it names the changed given code."""
    source = (LUMEN / "gpt2.py").read_text(encoding="utf-8")
    start = source.index("class Block(nn.Module):")
    end = source.index("class GPT2(nn.Module):")
    replaced = source[:start] + REBOUND.lstrip("\n") + "\n\n" + source[end:]
    folder = make_submission(tmp_path / "submission", {})
    (folder / "gpt2.py").write_text(replaced, encoding="utf-8")
    result = grader.grade(folder, seed=5, stages=["tying", "init"])
    failures = {r.name: r.message for s in result.stages for r, _, _ in s.tests if not r.passed}
    assert set(failures) == {"test_tie_as_you_wrote_it"}, failures
    assert "given code outside YOUR CODE HERE was changed" in failures["test_tie_as_you_wrote_it"]


# The rule itself, on classes built here (no sandbox needed)


def test_unshadow_replaces_overrides_and_keeps_helpers():
    import torch
    from torch import nn

    class Mixin:
        def to(self, *args, **kwargs):
            return self

        def helper(self):
            return "mine"

    class Layer(Mixin, nn.Module):
        def forward(self, x):
            return x

        def state_dict(self, *args, **kwargs):
            return {}

    pins = given.Pins()
    given.unshadow(Layer, nn.Module.__mro__, {"forward"}, pins)
    layer = Layer()
    layer.register_parameter("w", nn.Parameter(torch.ones(2)))
    assert set(layer.state_dict()) == {"w"}
    assert layer.to(torch.float64).w.dtype == torch.float64
    assert layer.helper() == "mine" and layer.forward(3) == 3
    with pins.undone():
        assert layer.state_dict() == {} and layer.to(torch.float64) is layer
    assert set(layer.state_dict()) == {"w"}


def test_a_given_init_with_super_runs_in_a_learner_class_with_its_own_base():
    """GPT2.__init__'s super().__init__() is nn.Module's, even in a class whose own base takes
    other arguments (the learner's _Model(config))."""
    from torch import nn

    class Stub(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config

    class Base(nn.Module):
        def __init__(self, config, extra):
            raise AssertionError("a learner's base __init__ must not run for given code")

    class Learner(Base):
        pass

    pins = given.Pins()
    given._pin_class(Learner, Stub, set(), "Learner", pins)
    assert Learner("config").config == "config"


STUB_WITH_MEMBERS = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = {"tie": True}
        self.head = nn.Linear(2, 2)
        self.register_buffer("mask", torch.ones(2))

    def tie(self):
        raise NotImplementedError
"""


@pytest.mark.parametrize("where", ["class", "mixin", "set later"])
def test_a_class_attribute_never_shadows_a_member_given_code_sets(where):
    """A class attribute (a property, or any value) named as a submodule, buffer or plain
    member the given __init__ sets on each object answers before nn.Module's own lookup: the
    pins remove it from the learner's class and mixins (and again when set later), and undo
    it in ``Pins.undone``."""
    assert given.instance_members(STUB_WITH_MEMBERS, "Model") == {"config", "head", "mask"}
    namespace: dict = {}
    exec(STUB_WITH_MEMBERS, namespace)
    stub = namespace["Model"]
    fake = property(lambda self: "the learner's head")

    class Mixin:
        pass

    class Learner(Mixin, nn.Module):
        def tie(self):
            return None

    holder = Mixin if where == "mixin" else Learner
    if where != "set later":
        holder.head = fake
        holder.mask = "a class value"
    pins = given.Pins()
    given._pin_class(Learner, stub, {"tie"}, "Model", pins, STUB_WITH_MEMBERS)
    if where == "set later":  # by the learner's code, at run time
        Learner.head = fake
        pins.reapply()
    model = Learner()
    assert isinstance(model.head, nn.Linear) and torch.equal(model.mask, torch.ones(2))
    assert model.config == {"tie": True}
    if where != "set later":
        with pins.undone():
            assert vars(holder)["head"] is fake  # as they wrote it
        assert "head" not in vars(holder)


class _EqualToAll:
    """A value that says it equals anything: identity, never ==, must decide what changed."""

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def _pinned_layer():
    """A class with a pinned forward and a helper, watched over nn.Module, and its Pins."""
    from torch import nn

    class Layer(nn.Module):
        def forward(self, x):
            return "given"

        def helper(self):
            return "mine"

    pins = given.Pins()
    pins.set(Layer, "forward", Layer.__dict__["forward"])
    pins.watch(Layer, nn.Module.__mro__)
    pins.reapply()  # the first full pass, which takes the snapshot
    return Layer, pins


def test_reapply_undoes_every_change_after_a_pass_that_found_none():
    """reapply's fast path (nothing changed since the last pass) misses no change: a
    rebinding (to an object that claims to equal the given one), a deletion, a new name over
    nn.Module's, and a deletion of an unpinned name with a new shadowing one (same size)."""
    from torch import nn

    Layer, pins = _pinned_layer()
    forward = Layer.__dict__["forward"]
    for _ in range(3):
        pins.reapply()  # nothing changed: nothing done
    assert Layer.__dict__["forward"] is forward

    Layer.forward = _EqualToAll()
    pins.reapply()
    assert Layer.__dict__["forward"] is forward

    del Layer.forward
    pins.reapply()
    assert Layer.__dict__["forward"] is forward

    Layer.state_dict = lambda self: {}
    pins.reapply()
    assert "state_dict" not in vars(Layer) and Layer.state_dict is nn.Module.state_dict

    del Layer.helper  # the same size, one name swapped for another over nn.Module's
    Layer.train = lambda self, mode=True: self
    pins.reapply()
    assert "train" not in vars(Layer)
    Layer.helper2 = lambda self: "a helper under a new name stays"
    pins.reapply()
    assert Layer().helper2() == "a helper under a new name stays"
    Layer.forward = lambda self, x: "changed again, after a pass that kept a new helper"
    pins.reapply()
    assert Layer.__dict__["forward"] is forward


def test_the_outermost_owned_call_makes_the_pins_again():
    """An owned function that changes given code and returns into another owned function
    leaves the change to its caller (the learner's code); when the outermost owned call
    returns, into given code or a probe, the given code is the grader's again."""
    Layer, pins = _pinned_layer()
    forward = Layer.__dict__["forward"]
    seen = []

    def inner():
        Layer.forward = lambda self, x: "changed"

    def outer():
        owned_inner()
        seen.append(Layer()(0))  # inside the learner's own call: whatever it made

    owned_inner, owned_outer = given.repinning(inner, pins), given.repinning(outer, pins)
    owned_outer()
    assert seen == ["changed"]
    assert Layer.__dict__["forward"] is forward and Layer()(0) == "given"
    owned_inner()  # the outermost call itself
    assert Layer.__dict__["forward"] is forward
