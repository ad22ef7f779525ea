"""Forged replies and hidden built-ins: each forgery gains nothing over the honest mistake.

Learner code runs in the same process as the grader's probes, so it can reach them (through
``sys.modules``, ``gc.get_objects()``, the running frames, a thread started at import) and
rewrite what they report or replace the helpers they call; it can call a banned built-in
where the recorder does not look, or leave its model degenerate (all zeros). The hidden
suites therefore compare only against states the grader made, score what the process reports
about itself only behind the rules (``bans.certify``), and judge the bans from the source
alone (``autograder/rules/``).

Each case is a known mistake plus a forgery. Graded on its stage, the forged submission must
fail the tests the forgery targets and earn no point the honest mistake does not. A canary
per route proves that the route really reaches the probes, so the forgeries are not vacuous.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from autograder import rules
from autograder.grading import Grader
from autograder.rubric import load as load_rubric
from autograder.sandboxed.probes.recorder import record_calls
from tests.helpers import certified_tests
from tests.variants.build import make_submission

LUMEN = Path(__file__).resolve().parents[1] / "lumen"
HOST = "embeddings:expected_dot_std"  # the payload goes at the end of embeddings.py, after it


def _lumen_source(module: str, name: str) -> str:
    """lumen's source of the top-level function ``name`` of ``module``."""
    source = (LUMEN / f"{module}.py").read_text(encoding="utf-8")
    node = next(n for n in ast.parse(source).body
                if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_source_segment(source, node)


# --- how learner code reaches the probe table (PROBES: probe name -> function) --------------

ROUTES = {
    "sys.modules": '''
        def _probe_tables():
            import sys
            probes = sys.modules.get("probes")
            return [probes.PROBES] if probes is not None else []
    ''',
    "gc.get_objects": '''
        def _probe_tables():
            import gc
            return [o for o in gc.get_objects() if type(o) is dict and "__name__" not in o
                    and "embedding_forward" in o and "gpt2_build" in o]
    ''',
    "frames from a thread started at import": '''
        def _probe_tables():
            import sys
            import threading
            found = {}

            def holders(value):
                yield value
                yield getattr(value, "__globals__", None)  # probes.run, kept by the worker
                yield getattr(value, "__dict__", None)  # the probes module itself

            def walk():
                for frame in list(sys._current_frames().values()):
                    while frame is not None:
                        for space in (frame.f_globals, frame.f_locals):
                            for value in list(space.values()):
                                for holder in holders(value):
                                    try:
                                        table = holder.get("PROBES")
                                    except Exception:
                                        continue
                                    if type(table) is dict:
                                        found[id(table)] = table
                        frame = frame.f_back

            thread = threading.Thread(target=walk)
            thread.start()
            thread.join(5)
            return list(found.values())
    ''',
}

# --- what the forgery does to each reply ---------------------------------------------------

#: Structural facts set to the answer a correct submission would report.
FACTS = '''
    TRUE = ("same_object", "same_storage", "head_is_param", "registered", "has_weight",
            "requires_grad")

    def _forge(value, args):
        if type(value) is list:
            return [_forge(v, args) for v in value]
        if type(value) is not dict:
            return value
        out = {k: _forge(v, args) for k, v in value.items()}
        for key in TRUE:
            if key in out:
                out[key] = True
        if "tied_before" in out:
            out["tied_before"] = False
        if "weight_type" in out:
            out["weight_type"] = "Parameter"
        if type(out.get("calls")) is list:  # the recorded torch functions, minus the banned
            out["calls"] = [c for c in out["calls"]
                            if "one_hot" not in str(c) and "embedding" not in str(c)]
        if "wte" in out and "lm_head" in out:
            out["lm_head"] = out["wte"]
        config = args.get("config")
        if type(out.get("n_params")) is int and type(config) is dict \\
                and config.get("tie_weights", True):  # a copied head counts V x d twice
            out["n_params"] -= config["vocab_size"] * config["d_model"]
        return out
'''

#: Every float tensor of a GPT-2 probe's reply zeroed: the reported state all zeros, and the
#: logits and gradients that a model in that state gives (all zeros too).
ZEROED = '''
    def _zeroed(value):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return torch.zeros_like(value)
        if type(value) is dict:
            return {k: _zeroed(v) for k, v in value.items()}
        if type(value) is list:
            return [_zeroed(v) for v in value]
        return value

    def _forge(value, args):
        return _zeroed(value) if "config" in args else value
'''

#: Every float tensor scaled by the std the probe asked for: N(0, 1) draws then fit N(0, std^2).
STATISTICS = '''
    def _scaled(value, std):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value * std
        if type(value) is dict:
            return {k: _scaled(v, std) for k, v in value.items()}
        if type(value) is list:
            return [_scaled(v, std) for v in value]
        return value

    def _forge(value, args):
        if "std" not in args:
            return value
        std = args["std"] if args["std"] is not None else args["d_model"] ** -0.5
        return _scaled(value, std)
'''

#: Replies left as they are: the route's code alone, refused by the source check.
UNCHANGED = '''
    def _forge(value, args):
        return value
'''

#: Every probe raises, saying so: proves that a route reaches the probes.
CANARY = '''
    def _forge(value, args):
        raise RuntimeError("FORGERY ACTIVE")
'''

INSTALL = '''
    def _wrap(probe):
        def forged(m, **args):
            return _forge(probe(m, **args), args)
        return forged

    for _table in _probe_tables():
        for _name in list(_table):
            _table[_name] = _wrap(_table[_name])
'''


#: The probes module's own helpers replaced, through the probes' __globals__: the state
#: snapshot (``_state``, and ``_snapshot`` as it was once called) and the state loader
#: (``_load``) each zero the model's parameters, so the model, its reported state and its
#: logits all agree on a degenerate all-zero state (h = 0, so every head gives logits 0).
SNAPSHOT = '''
    def _zero(model):
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
        return {k: torch.zeros_like(v) for k, v in model.state_dict().items()}

    def _zero_load(module, state, strict=True):
        _zero(module)
        return {"missing": [], "unexpected": []}

    HELPERS = {"_state": _zero, "_snapshot": _zero, "_load": _zero_load}
'''

#: The state loader replaced so that a copied head is made to match: after the grader's
#: checkpoint is loaded, a tied model's head gets wte's numbers too (the copy "loads" E).
LOAD_COPIES = '''
    def _helpers(space):
        real = space["_load"]

        def _load(module, state, strict=True):
            out = real(module, state, strict)
            config = getattr(module, "config", None)
            if getattr(config, "tie_weights", False):
                with torch.no_grad():
                    module.lm_head.weight.copy_(module.wte.weight)
            return out

        return {"_load": _load}
'''

REPLACE = '''
    for _table in _probe_tables():
        for _probe in list(_table.values()):
            _space = getattr(_probe, "__globals__", None)
            if type(_space) is dict and "_load" in _space:
                _new = HELPERS if "HELPERS" in globals() else _helpers(_space)
                _space.update(_new)
'''


def payload(route: str, transform: str, install: str = INSTALL) -> dict[str, str]:
    """Replacements that add a forgery at the end of embeddings.py (run at import)."""
    code = "\n".join(textwrap.dedent(part) for part in (ROUTES[route], transform, install))
    return {HOST: _lumen_source("embeddings", "expected_dot_std") + "\n\n\n" + code}


# --- the mistakes, and the ways to hide a banned built-in ----------------------------------

COPIED_HEAD = {"gpt2:GPT2.tie_weights": '''
    def tie_weights(self):
        if self.config.tie_weights:
            self.lm_head.weight = nn.Parameter(self.wte.weight.detach().clone())
'''}
NEW_PARAMETER = {"embeddings:Embedding.reset_parameters": '''
    def reset_parameters(self):
        std = self.std if self.std is not None else 1 / math.sqrt(self.d_model)
        self.weight = nn.Parameter(torch.randn(self.vocab_size, self.d_model) * std)
'''}
NEVER_TIES = {"gpt2:GPT2.tie_weights": '''
    def tie_weights(self):
        pass
'''}
#: No tie, and a degenerate state of the model's own: with ln_f zeroed, h = 0, so the logits
#: are 0 whatever the head, and so are lumen's on that same state (and the initial loss is
#: exactly ln V). Expected values computed from the model's reported state would match.
ZEROED_LN_F = {"gpt2:GPT2.tie_weights": '''
    def tie_weights(self):
        with torch.no_grad():
            self.ln_f.weight.zero_()
            self.ln_f.bias.zero_()
'''}
#: The same, with every parameter zeroed: the state reported is all zeros.
ALL_ZEROS = {"gpt2:GPT2.tie_weights": '''
    def tie_weights(self):
        with torch.no_grad():
            for p in self.parameters():
                p.zero_()
'''}
STD_IGNORED = {"embeddings:Embedding.reset_parameters": '''
    def reset_parameters(self):
        with torch.no_grad():
            self.weight.normal_()
'''}


def one_hot_by(body: str) -> dict[str, str]:
    """``one_hot`` computed with F.one_hot, the way ``body`` hides it."""
    code = "def one_hot(ids, num_classes, dtype=torch.float32):\n"
    return {"embeddings:one_hot": code + textwrap.indent(textwrap.dedent(body).strip(), "    ")}


def lookup_by(body: str) -> dict[str, str]:
    """``Embedding.forward`` computed with the built-in embedding, the way ``body`` hides it."""
    code = "def forward(self, ids):\n    check_ids(ids, self.vocab_size)\n"
    return {"embeddings:Embedding.forward":
            code + textwrap.indent(textwrap.dedent(body).strip(), "    ")}


F_ONE_HOT = one_hot_by("return torch.nn.functional.one_hot(ids.long(), num_classes).to(dtype)")
F_EMBEDDING = lookup_by(
    "return self.scale_output(torch.nn.functional.embedding(ids.long(), self.weight))")

IN_A_THREAD = '''
    import threading
    box = []
    worker = threading.Thread(target=lambda: box.append({call}))
    worker.start()
    worker.join()
    return {wrap}
'''


@dataclass(frozen=True)
class Forgery:
    stage: str
    honest: dict[str, str]  # the mistake, unforged
    forged: dict[str, str]  # the same mistake, with the forgery
    stolen: frozenset[str]  # the tests the forgery targets: each must fail
    route: str | None = field(default=None)  # how it reaches the probes, if it does
    #: Tests whose values under test the forgery produces itself (draws of the right
    #: distribution, made in the probe): passing them is the exercise done in another place,
    #: which no grader can tell from doing it in the stub (docs/threat-model.md).
    redone: frozenset[str] = field(default=frozenset())


def _forging(stage, honest, route, transform, stolen) -> Forgery:
    return Forgery(stage, honest, {**honest, **payload(route, transform)}, frozenset(stolen),
                   route)


TYING = ("test_tied_head_is_the_embedding", "test_parameter_count",
         "test_tie_survives_to_and_load")
#: The tying tests that earn points for a tied model's values (all but the untied one).
TIED_VALUES = ("test_embedding_matrix_is_kept", "test_tied_logits_and_initial_loss",
               "test_tie_survives_to_and_load")
BAN_ONEHOT = ("test_one_hot_written_by_hand",)
BAN_EMBEDDING = ("test_no_builtin_embedding",)

#: Routes that must reach the probes whatever the worker does with sys.modules.
MUST_REACH = ("gc.get_objects", "frames from a thread started at import")

FORGERIES: dict[str, Forgery] = {
    **{f"tying: copied head, facts forged through {route}":
       _forging("tying", COPIED_HEAD, route, FACTS, TYING) for route in ROUTES},
    **{f"init: reset makes a new Parameter, same_object forged through {route}":
       _forging("init", NEW_PARAMETER, route, FACTS, ("test_reset_refills_in_place",))
       for route in ROUTES},
    "tying: no tie, ln_f zeroed so that h = 0 (a degenerate state of its own)": Forgery(
        "tying", NEVER_TIES, ZEROED_LN_F, frozenset(TYING + TIED_VALUES)),
    "tying: no tie, every parameter zeroed (an all-zero state)": Forgery(
        "tying", NEVER_TIES, ALL_ZEROS, frozenset(TYING + TIED_VALUES)),
    **{f"tying: copied head, replies zeroed (state, logits, gradients) through {route}":
       _forging("tying", COPIED_HEAD, route, ZEROED, TYING + TIED_VALUES) for route in MUST_REACH},
    **{f"tying: no tie, the probes' state snapshot and loader zero the model through {route}":
       Forgery("tying", NEVER_TIES, {**NEVER_TIES, **payload(route, SNAPSHOT, REPLACE)},
               frozenset(TYING + TIED_VALUES), route) for route in MUST_REACH},
    **{f"tying: copied head, the probes' loader copies wte into it through {route}":
       Forgery("tying", COPIED_HEAD, {**COPIED_HEAD, **payload(route, LOAD_COPIES, REPLACE)},
               frozenset(TYING + ("test_tied_logits_and_initial_loss",
                                  "test_tie_survives_to_and_load")), route)
       for route in MUST_REACH},
    **{f"init: N(0, 1) draws, statistics forged through {route}": Forgery(
        "init", STD_IGNORED, {**STD_IGNORED, **payload(route, STATISTICS)},
        frozenset({"test_reset_refills_in_place"}), route,
        redone=frozenset({"test_reset_parameters_uses_std", "test_std_none_means_inverse_sqrt_d",
                          # it runs test_reset_parameters_uses_std after its own check
                          "test_embedding_keeps_its_draw_as_you_wrote_it"}))
       for route in MUST_REACH},
    "onehot: F.one_hot inside torch._C.DisableTorchFunction()": Forgery(
        "onehot", F_ONE_HOT, one_hot_by('''
            with torch._C.DisableTorchFunction():
                return torch.nn.functional.one_hot(ids.long(), num_classes).to(dtype)
        '''), frozenset(BAN_ONEHOT)),
    "onehot: F.one_hot in another thread": Forgery("onehot", F_ONE_HOT, one_hot_by(
        IN_A_THREAD.format(call="torch.nn.functional.one_hot(ids.long(), num_classes)",
                           wrap="box[0].to(dtype)")), frozenset(BAN_ONEHOT)),
    "onehot: torch.ops.aten.one_hot": Forgery("onehot", F_ONE_HOT, one_hot_by(
        "return torch.ops.aten.one_hot(ids.long(), num_classes).to(dtype)"),
        frozenset(BAN_ONEHOT)),
    "onehot: getattr(F, 'one_' + 'hot')": Forgery("onehot", F_ONE_HOT, one_hot_by(
        "return getattr(torch.nn.functional, 'one_' + 'hot')(ids.long(), num_classes).to(dtype)"),
        frozenset(BAN_ONEHOT)),
    **{f"onehot: F.one_hot, the recorded calls forged through {route}":
       _forging("onehot", F_ONE_HOT, route, FACTS, BAN_ONEHOT) for route in ROUTES},
    "embedding: torch.ops.aten.embedding.default": Forgery("embedding", F_EMBEDDING, lookup_by(
        "return self.scale_output(torch.ops.aten.embedding.default(self.weight, ids.long()))"),
        frozenset(BAN_EMBEDDING)),
    "embedding: the aten operator by a computed name": Forgery("embedding", F_EMBEDDING,
        lookup_by('''
            op = getattr(torch.ops.aten, "embed" + "ding").default
            return self.scale_output(op(self.weight, ids.long()))
        '''), frozenset(BAN_EMBEDDING)),
    "embedding: F.embedding in another thread": Forgery("embedding", F_EMBEDDING, lookup_by(
        IN_A_THREAD.format(call='getattr(torch.nn.functional, "embed" + "ding")'
                                "(ids.long(), self.weight)",
                           wrap="self.scale_output(box[0])")), frozenset(BAN_EMBEDDING)),
    **{f"embedding: F.embedding, the recorded calls forged through {route}":
       _forging("embedding", F_EMBEDDING, route, FACTS, BAN_EMBEDDING) for route in ROUTES},
}

@pytest.fixture(scope="module")
def grader():
    """One warm worker for every forgery, as for a class."""
    with Grader() as g:
        yield g


@pytest.fixture(scope="module")
def honest_results() -> dict:
    return {}


def _verdicts(grader, folder: Path, stage: str, replacements: dict[str, str]) -> dict:
    result = grader.grade(make_submission(folder, replacements), stages=[stage])
    graded = next(s for s in result.stages if s.name == stage)
    return {r.name: r for r, _, _ in graded.tests}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_forgery_gains_nothing(grader, honest_results, tmp_path, name):
    forgery = FORGERIES[name]
    key = (forgery.stage, repr(sorted(forgery.honest.items())))
    if key not in honest_results:
        honest_results[key] = _verdicts(grader, tmp_path / "honest", forgery.stage,
                                        forgery.honest)
    honest = honest_results[key]
    forged = _verdicts(grader, tmp_path / "forged", forgery.stage, forgery.forged)
    assert not [r.message for r in forged.values() if r.grader_error]
    stole = sorted(t for t in forgery.stolen if forged[t].passed)
    assert not stole, f"the forgery passed {stole}, which the honest mistake fails"
    points = load_rubric().points[forgery.stage]
    gained = sorted(t for t, r in forged.items() if r.passed and not honest[t].passed
                    and points[t] > 0 and t not in forgery.redone)
    assert not gained, f"the forgery passed {gained}, which the honest mistake fails"


@pytest.mark.parametrize("route", MUST_REACH)
def test_route_reaches_the_probes(grader, tmp_path, route):
    """The canary: through ``route``, learner code can make every probe raise."""
    verdicts = _verdicts(grader, tmp_path / "canary", "tying", payload(route, CANARY))
    messages = [r.message for r in verdicts.values()]
    assert all("FORGERY ACTIVE" in m for m in messages), messages


def test_refused_code_costs_only_the_rules_tests(grader, tmp_path):
    """A correct submission with a refused construct keeps every value-backed point: it loses
    the ban test and the checks of what its process reports (``bans.certify``), each naming
    the line."""
    refused = payload("gc.get_objects", UNCHANGED)  # wraps the probes, changes nothing
    for stage, ban in (("embedding", BAN_EMBEDDING), ("onehot", BAN_ONEHOT)):
        verdicts = _verdicts(grader, tmp_path / stage, stage, refused)
        failed = sorted(name for name, r in verdicts.items() if not r.passed)
        assert failed == sorted([*ban, *certified_tests(stage)]), \
            [(n, verdicts[n].message) for n in failed]
        assert all("import gc" in verdicts[name].message for name in failed)


# --- the source check (autograder/rules/), on its own -----------------------------------

HEAD = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"

#: case -> (code after HEAD, the stage, a finding's ``found`` that must be among the findings)
FLAGGED = {
    "F.one_hot": ("x = F.one_hot(i, 3)", "onehot", "torch.nn.functional.one_hot"),
    "from-import under an alias": (
        "from torch.nn.functional import one_hot as oh", "onehot",
        "from torch.nn.functional import one_hot"),
    "a module alias": ("G = torch.nn.functional\nx = G.one_hot(i)", "onehot",
                       "torch.nn.functional.one_hot"),
    "getattr with a constant name": ("x = getattr(F, 'one_hot')", "onehot",
                                     "torch.nn.functional.one_hot"),
    "getattr with a computed name": ("x = getattr(F, 'one_' + 'hot')", "onehot",
                                     "getattr(..., <a name computed at run time>)"),
    "getattr passed around": ("import functools\nh = functools.partial(getattr, F)", "onehot",
                              "getattr"),
    "nn.Embedding": ("e = nn.Embedding(3, 2)", "embedding", "torch.nn.Embedding"),
    "torch.embedding": ("x = torch.embedding(w, i)", "embedding", "torch.embedding"),
    "embedding_bag": ("x = F.embedding_bag", "embedding", "torch.nn.functional.embedding_bag"),
    "torch.ops": ("x = torch.ops.aten.embedding.default(w, i)", "embedding", "torch.ops"),
    "torch._C": ("x = torch._C.DisableTorchFunction()", "onehot", "torch._C"),
    "torch.library": ("x = torch.library.Library", "onehot", "torch.library"),
    "torch.overrides": ("from torch.overrides import TorchFunctionMode", "onehot",
                        "import torch.overrides"),
    "torch.utils": ("from torch.utils import _python_dispatch", "onehot", "import torch.utils"),
    "torch.jit": ("f = torch.jit.script(f)", "onehot", "torch.jit"),
    "a stdlib module through torch": ("torch.os.system('ls')", "onehot", "torch.os"),
    "threading": ("import threading", "onehot", "import threading"),
    "concurrent": ("from concurrent.futures import ThreadPoolExecutor", "onehot",
                   "import concurrent.futures"),
    "multiprocessing": ("import multiprocessing", "onehot", "import multiprocessing"),
    "gc": ("import gc", "embedding", "import gc"),
    "ctypes": ("import ctypes", "embedding", "import ctypes"),
    "inspect": ("import inspect", "embedding", "import inspect"),
    "importlib": ("import importlib", "embedding", "import importlib"),
    "sys.modules": ("import sys\nx = sys.modules", "embedding", "sys.modules"),
    "sys._getframe": ("from sys import _getframe", "embedding", "from sys import _getframe"),
    "a traceback's frame": ("try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__",
                            "embedding", "e.__traceback__"),
    "f_back": ("def f(frame):\n    return frame.f_back", "embedding", "frame.f_back"),
    "__globals__": ("def g():\n    pass\nx = g.__globals__", "embedding", "g.__globals__"),
    "__closure__ on self": ("class A:\n    def f(self):\n        return self.f.__closure__",
                            "embedding", "self.f.__closure__"),
    "__dict__": ("x = F.__dict__['one_' + 'hot']", "onehot", "torch.nn.functional.__dict__"),
    "vars": ("x = vars(F)", "onehot", "vars"),
    "globals": ("x = globals()", "onehot", "globals"),
    "eval": ("x = eval('1')", "onehot", "eval"),
    "exec": ("exec('x = 1')", "onehot", "exec"),
    "compile": ("c = compile('1', 'f', 'eval')", "onehot", "compile"),
    "__import__": ("m = __import__('gc')", "onehot", "__import__"),
    "__builtins__": ("b = __builtins__", "onehot", "__builtins__"),
    "builtins": ("import builtins", "onehot", "import builtins"),
    "open": ("open('/proc/self/mem', 'wb')", "onehot", "open"),
    "import *": ("from torch.nn.functional import *", "onehot",
                 "from torch.nn.functional import * (import *)"),
    "__name__ rebound, so the __main__ block runs": (
        "__name__ = '__main__'\nif __name__ == '__main__':\n    x = F.one_hot", "onehot",
        "torch.nn.functional.one_hot"),
    "TYPE_CHECKING rebound, so the block runs": (
        "from typing import TYPE_CHECKING\nTYPE_CHECKING = True\nif TYPE_CHECKING:\n"
        "    x = F.one_hot", "onehot", "torch.nn.functional.one_hot"),
    "__torch_function__": ("class T(torch.Tensor):\n    def __torch_function__(cls):\n"
                           "        pass", "onehot", "def __torch_function__"),
    "an import outside the list": ("import json", "onehot", "import json"),
}

#: Code that must pass: dead code, your own objects, torch as the exercises use it.
CLEAN = {
    "a lookup": "def f(w, i):\n    return w[i]",
    "a __main__ block": "if __name__ == '__main__':\n    import threading\n    F.one_hot",
    "the __main__ test reversed": "if '__main__' == __name__:\n    F.embedding",
    "if False": "if False:\n    import gc\nelse:\n    x = 1",
    "if TYPE_CHECKING": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import gc",
    "comments and strings": 'def f():\n    """F.one_hot, torch._C"""\n    # F.embedding\n'
                            "    return 'import gc'",
    "your own modules": "from . import embeddings\nx = embeddings.Embedding\n"
                        "from .embeddings import Embedding",
    "your own attributes": "class A:\n    def f(self, m):\n        self._rows = m\n"
                           "        return self.weight, self._rows, A.one_hot",
    "torch as usual": "x = nn.init.normal_(torch.empty(2), 0.0, 0.02)\n"
                      "y = F.scaled_dot_product_attention\nz = torch.autograd.Function",
    "getattr and setattr with a constant name": "class A:\n    def f(self, m, w):\n"
                                                "        setattr(m, 'weight', w)\n"
                                                "        return getattr(m, 'weight')",
    "re.compile": "import re\np = re.compile('x')",
    "sys.stdout": "import sys\nsys.stdout.write('x')",
}


@pytest.mark.parametrize("case", list(FLAGGED))
def test_the_source_check_finds(case):
    code, stage, found = FLAGGED[case]
    findings = rules.check({"embeddings.py": HEAD + code + "\n"}, stage)
    assert found in [f.found for f in findings], findings
    finding = next(f for f in findings if f.found == found)
    assert finding.line > 3 and finding.code and finding.why, finding


@pytest.mark.parametrize("case", list(CLEAN))
def test_the_source_check_passes(case):
    for stage in rules.BANS:
        assert rules.check({"embeddings.py": HEAD + CLEAN[case] + "\n"}, stage) == []


def test_the_source_check_reads_every_submitted_file():
    files = {"embeddings.py": HEAD, "params.py": "import gc\n", "gpt2.py": HEAD + "F.one_hot\n",
             "helper.py": "import gc\n"}  # not a submitted file: never run, never read
    found = {(f.file, f.found) for f in rules.check(files, "onehot")}
    assert found == {("params.py", "import gc"), ("gpt2.py", "torch.nn.functional.one_hot")}


@pytest.mark.parametrize("folder", ["lumen", "exercises"])
def test_lumen_and_the_stubs_follow_the_rules(folder):
    files = rules.read(Path(__file__).resolve().parents[1] / folder)
    assert set(files) == set(rules.FILES)
    for stage in rules.BANS:
        assert rules.check(files, stage) == []


# --- the recorder in the learner's process, on its own -------------------------------------


def _in_a_thread(call) -> None:
    import threading

    worker = threading.Thread(target=call)
    worker.start()
    worker.join()


def _disabled(call) -> None:
    with torch._C.DisableTorchFunction():
        call()


@pytest.mark.parametrize("hide", ["plain", "DisableTorchFunction", "torch.ops", "a thread"])
def test_the_recorder_sees(hide):
    ids, weight = torch.tensor([1, 2]), torch.randn(4, 3)
    calls = {
        "plain": lambda: torch.nn.functional.one_hot(ids, 4),
        "DisableTorchFunction": lambda: _disabled(lambda: torch.nn.functional.one_hot(ids, 4)),
        "torch.ops": lambda: torch.ops.aten.one_hot.default(ids, 4),
        "a thread": lambda: _in_a_thread(lambda: torch.nn.functional.one_hot(ids, 4)),
    }
    with record_calls() as record:
        calls[hide]()
        _in_a_thread(lambda: torch.ops.aten.embedding.default(weight, ids))
    assert record.problem is None, record.problem
    assert rules.banned_calls(record.names, "onehot") == ["one_hot"], sorted(record.names)
    assert rules.banned_calls(record.names, "embedding") == ["embedding"]


def test_op_names_are_normalised():
    assert rules.op_name("aten::embedding") == "embedding"
    assert rules.op_name("embedding.default") == "embedding"
    assert rules.op_name("aten::_embedding_bag") == "embedding_bag"
    assert rules.banned_calls(["aten::embedding_dense_backward", "index_select"],
                              "embedding") == []
