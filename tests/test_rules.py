"""The source rules (autograder/rules/, applied by autograder/suites/bans.py): sound, and no broader
than needed.

Both sides are attacked. A learner who has read the checker tries every way to run a banned
built-in without the checker seeing it: fake dead code, computed names, strings made code, the
running program, torch's internals, a library that calls the built-in, a file the grader does
not read. Each must be found. And correct code that imports numpy, math, functools and the
other harmless modules, in any of the three files, must keep full marks, while a rule broken
in one file costs only the checks whose ban needs that rule.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder import ROOT, rules
from autograder.grading import Grader
from autograder.suites import bans
from autograder.suites.feedback import Mistake
from lumen.stages import STAGE_NAMES
from tests.helpers import certified_tests
from tests.variants.build import LUMEN, make_submission

HEAD = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
OWN = (LUMEN / "embeddings.py").read_text(encoding="utf-8")


def _found(code: str, stage: str = "onehot", file: str = "embeddings.py",
           others: dict[str, str] | None = None) -> list[rules.Finding]:
    files = {file: HEAD + textwrap.dedent(code).strip() + "\n", **(others or {})}
    return bans.findings(files, bans.CHECKS[{"onehot": bans.ONEHOT.test,
                                             "embedding": bans.EMBEDDING.test}[stage]])


# --- dead code: only what provably never runs is skipped ------------------------------------

#: One block each that a learner could make run although it looks dead: the F.one_hot in it
#: must be found.
NOT_DEAD = {
    "TYPE_CHECKING assigned": """
        from typing import TYPE_CHECKING
        TYPE_CHECKING = True
        if TYPE_CHECKING:
            x = F.one_hot""",
    "TYPE_CHECKING augmented": """
        from typing import TYPE_CHECKING
        TYPE_CHECKING += 1
        if TYPE_CHECKING:
            x = F.one_hot""",
    "TYPE_CHECKING through global": """
        from typing import TYPE_CHECKING
        def flip():
            global TYPE_CHECKING
            TYPE_CHECKING = 1
        flip()
        def f(i):
            if TYPE_CHECKING:
                return F.one_hot(i, 3)""",
    "TYPE_CHECKING deleted (then a builtin could answer)": """
        from typing import TYPE_CHECKING
        del TYPE_CHECKING
        if TYPE_CHECKING:
            x = F.one_hot""",
    "TYPE_CHECKING imported from elsewhere": """
        from .params import TYPE_CHECKING
        if TYPE_CHECKING:
            x = F.one_hot""",
    "TYPE_CHECKING imported as": """
        from typing import Any as TYPE_CHECKING
        if TYPE_CHECKING:
            x = F.one_hot""",
    "TYPE_CHECKING by walrus": """
        from typing import TYPE_CHECKING
        if (TYPE_CHECKING := True):
            pass
        if TYPE_CHECKING:
            x = F.one_hot""",
    "TYPE_CHECKING as a loop variable": """
        from typing import TYPE_CHECKING
        for TYPE_CHECKING in [True]:
            if TYPE_CHECKING:
                x = F.one_hot""",
    "TYPE_CHECKING from with-as": """
        from typing import TYPE_CHECKING
        import contextlib
        with contextlib.nullcontext(True) as TYPE_CHECKING:
            if TYPE_CHECKING:
                x = F.one_hot""",
    "TYPE_CHECKING as a parameter": """
        from typing import TYPE_CHECKING
        def f(i, TYPE_CHECKING=True):
            if TYPE_CHECKING:
                return F.one_hot(i, 3)""",
    "TYPE_CHECKING as a class attribute": """
        from typing import TYPE_CHECKING
        class A:
            TYPE_CHECKING = True
            if TYPE_CHECKING:
                x = F.one_hot""",
    "TYPE_CHECKING from except-as": """
        from typing import TYPE_CHECKING
        try:
            raise ValueError
        except ValueError as TYPE_CHECKING:
            if TYPE_CHECKING:
                x = F.one_hot""",
    "TYPE_CHECKING never imported": """
        if TYPE_CHECKING:
            x = F.one_hot""",
    "TYPE_CHECKING imported inside a function": """
        def f(i):
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                return F.one_hot(i, 3)""",
    "TYPE_CHECKING through globals()": """
        from typing import TYPE_CHECKING
        globals()["TYPE_CHECK" + "ING"] = True
        if TYPE_CHECKING:
            x = F.one_hot""",
    "TYPE_CHECKING set on typing": """
        import typing
        typing.TYPE_CHECKING = True
        def f(i):
            if typing.TYPE_CHECKING:
                return F.one_hot(i, 3)""",
    "typing rebound": """
        import typing
        import types
        typing = types.SimpleNamespace(TYPE_CHECKING=True)
        if typing.TYPE_CHECKING:
            x = F.one_hot""",
    "typing given a TYPE_CHECKING property": """
        import typing
        class Lying(type(typing)):
            TYPE_CHECKING = property(lambda self: True)
        typing.__class__ = Lying
        def f(i):
            if typing.TYPE_CHECKING:
                return F.one_hot(i, 3)""",
    "typing imported as something else": """
        import warnings as typing
        if typing.TYPE_CHECKING:
            x = F.one_hot""",
    "import *": """
        from typing import TYPE_CHECKING
        from torch.nn import *
        if TYPE_CHECKING:
            x = F.one_hot""",
    "__name__ assigned": """
        __name__ = "__main__"
        if __name__ == "__main__":
            x = F.one_hot""",
    "__name__ as a parameter": """
        def f(i, __name__="__main__"):
            if __name__ == "__main__":
                return F.one_hot(i, 3)""",
    "__name__ through setattr with a computed name": """
        import sys
        setattr(sys.stdout, "__na" + "me__", 1)
        def f(i):
            if __name__ == "__main__":
                return F.one_hot(i, 3)""",
    "not True": """
        if not True:
            x = F.one_hot""",
    "a comparison of constants": """
        if 0 == 1:
            x = F.one_hot""",
    "a constant from another module": """
        from .params import DEBUG
        if DEBUG:
            x = F.one_hot""",
    "TYPE_CHECKING and something": """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING or True:
            x = F.one_hot""",
    "while False, else": """
        while False:
            pass
        else:
            x = F.one_hot""",
    "if False, else": """
        if False:
            pass
        else:
            x = F.one_hot""",
    "after a return, in finally": """
        def f(i):
            try:
                return None
            finally:
                return F.one_hot(i, 3)""",
    "after a return, in a nested function": """
        def f(i):
            return g(i)
            def h():
                pass
        def g(i):
            return F.one_hot(i, 3)""",
    "a lambda default": """
        def f(i, g=lambda i: F.one_hot(i, 3)):
            return g(i)""",
}


@pytest.mark.parametrize("case", list(NOT_DEAD))
def test_code_that_can_run_is_read(case):
    found = [f.found for f in _found(NOT_DEAD[case]) if f.banned]
    assert any(f.endswith(".one_hot") for f in found), (case, found)


#: The same tricks played from another file, on embeddings.py's guarded blocks.
FROM_ANOTHER_FILE = {
    "TYPE_CHECKING set on embeddings": "from . import embeddings\n"
                                       "embeddings.TYPE_CHECKING = True\n",
    "__name__ set on embeddings": "from . import embeddings\nembeddings.__name__ = '__main__'\n",
    "setattr with a constant name": "from . import embeddings\n"
                                    "setattr(embeddings, 'TYPE_CHECKING', True)\n",
    "setattr with a computed name": "from . import embeddings\n"
                                    "setattr(embeddings, 'TYPE_' + 'CHECKING', True)\n",
    "TYPE_CHECKING set on typing": "import typing\ntyping.TYPE_CHECKING = True\n",
    "a module's __class__": "import typing\ntyping.__class__ = type(typing)\n",
}
GUARDED = """
    from typing import TYPE_CHECKING
    import typing
    def f(i):
        if TYPE_CHECKING:
            return F.one_hot(i, 3)
        if typing.TYPE_CHECKING:
            return F.one_hot(i, 3)
        if __name__ == "__main__":
            return F.one_hot(i, 3)
"""


@pytest.mark.parametrize("case", list(FROM_ANOTHER_FILE))
def test_a_guard_changed_from_another_file_is_not_trusted(case):
    found = _found(GUARDED, others={"params.py": FROM_ANOTHER_FILE[case]})
    lines = {f.line for f in found if f.banned and f.file == "embeddings.py"}
    assert len(lines) == 3, (case, found)


#: Dead code that is provably dead: not read, so a self-check there costs nothing.
DEAD = {
    "if False": "if False:\n    import gc\n    F.one_hot",
    "if 0": "if 0:\n    F.one_hot",
    "if None": "if None:\n    F.one_hot",
    "if ''": "if '':\n    F.one_hot",
    "TYPE_CHECKING": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import gc",
    "TYPE_CHECKING among other names": "from typing import Any, TYPE_CHECKING\n"
                                       "def f(i):\n    if TYPE_CHECKING:\n        F.one_hot",
    "typing.TYPE_CHECKING": "import typing\nif typing.TYPE_CHECKING:\n    F.one_hot",
    "__main__": "if __name__ == '__main__':\n    import threading\n    F.one_hot",
    "__main__ reversed": "if '__main__' == __name__:\n    F.one_hot",
    "__main__ with an else": "if __name__ == '__main__':\n    F.one_hot\nelse:\n    x = 1",
    "a self-check that uses eval and vars, under __main__": (
        "if __name__ == '__main__':\n    import os\n    print(vars(os), eval('1'))\n"
        "    globals()['TYPE_CHECKING'] = True\n    F.one_hot"),
    "TYPE_CHECKING set inside its own block": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    setattr(F, 'x' + 'y', 1)\n    F.one_hot"),
}


@pytest.mark.parametrize("case", list(DEAD))
def test_provably_dead_code_is_not_read(case):
    assert _found(DEAD[case]) == []


# --- ways around a ban: each class, several ways ---------------------------------------------

#: case -> (code, the stage, what must be found: a finding's ``found``, or its kind).
BYPASSES = {
    # the built-in under another name
    "torch.nn.functional.one_hot": ("x = F.one_hot", "onehot", "banned"),
    "from-import as": ("from torch.nn.functional import one_hot as oh", "onehot", "banned"),
    "torch._C._nn.one_hot": ("x = torch._C._nn.one_hot", "onehot", "banned"),
    "torch.ops.aten.one_hot": ("x = torch.ops.aten.one_hot.default", "onehot", "banned"),
    "_embedding_bag": ("x = torch._embedding_bag", "embedding", "banned"),
    "embedding_bag_forward_only": ("x = torch._embedding_bag_forward_only", "embedding",
                                   "banned"),
    "nn.modules.sparse.Embedding": ("x = nn.modules.sparse.Embedding", "embedding", "banned"),
    "a module alias": ("G = F\ny = G.one_hot", "onehot", "banned"),
    "through a list": ("y = [F][0].one_hot", "onehot", "banned"),
    "self holding the module": ("def f(self, i):\n    return self.one_hot(i, 3)\nf(F, 1)",
                                "onehot", "banned"),
    "self holding torch": ("def f(self, w, i):\n    return self.embedding(w, i)\n"
                           "f(torch, 1, 2)", "embedding", "banned"),
    "a class of the same name rebound": ("class A:\n    pass\nA = F\ny = A.one_hot",
                                         "onehot", "banned"),
    "an own module's import": ("from . import params\ny = params.F.one_hot", "onehot",
                               "banned"),
    "getattr with a constant name": ("x = getattr(F, 'one_hot')", "onehot", "banned"),
    "stored on torch": ("torch.nn.functional.one_hot = None", "onehot", "banned"),
    # a library that calls it for you
    "OneHotCategorical": ("d = torch.distributions.OneHotCategorical", "onehot", "banned"),
    "from torch.distributions": ("from torch.distributions import Dirichlet", "onehot",
                                 "banned"),
    "distributions through self": ("def f(self):\n    return self.distributions", "onehot",
                                   "banned"),
    "quantized embedding": ("from torch.ao.nn.quantized import Embedding", "embedding",
                            "banned"),
    "torch.nn.quantized": ("import torch.nn.quantized", "embedding", "banned"),
    # names computed at run time
    "getattr computed": ("x = getattr(F, 'one_' + 'hot')", "onehot", "names"),
    "getattr passed around": ("import functools\nh = functools.partial(getattr, F)", "onehot",
                              "names"),
    "getattr.__call__": ("x = getattr.__call__(F, 'one_' + 'hot')", "onehot", "names"),
    "reduce(getattr)": ("import functools\nx = functools.reduce(getattr, ['a'], F)", "onehot",
                        "names"),
    "operator.attrgetter": ("import operator\nx = operator.attrgetter('one_' + 'hot')(F)",
                            "onehot", "names"),
    "from operator import methodcaller": ("from operator import methodcaller", "onehot",
                                          "names"),
    "__dict__": ("x = F.__dict__['one_' + 'hot']", "onehot", "names"),
    "vars": ("x = vars(F)", "onehot", "names"),
    "globals": ("x = globals()", "onehot", "names"),
    "locals": ("x = locals()", "onehot", "names"),
    "object.__getattribute__": ("x = object.__getattribute__(F, 'one_' + 'hot')", "onehot",
                                "names"),
    "module __getattr__": ("x = F.__getattr__", "onehot", "names"),
    "typing.get_type_hints": ("import typing\nx = typing.get_type_hints(f)", "onehot",
                              "names"),
    "string.Formatter": ("import string", "onehot", "program"),
    # strings made code, objects loaded by name, other programs
    "eval": ("x = eval('F.one_' + 'hot')", "onehot", "code"),
    "exec": ("exec('x = 1')", "onehot", "code"),
    "compile": ("c = compile('1', 'f', 'eval')", "onehot", "code"),
    "__import__": ("m = __import__('gc')", "onehot", "code"),
    "importlib": ("import importlib", "onehot", "code"),
    "pickle": ("import pickle", "onehot", "code"),
    "torch.load": ("x = torch.load(path)", "onehot", "code"),
    "load on an unknown object": ("def f(m):\n    return m.load(path)", "onehot", "code"),
    "numpy.load": ("import numpy as np\nx = np.load(path, allow_pickle=True)", "onehot",
                   "code"),
    "ndarray.dumps": ("def f(a):\n    return a.dumps()", "onehot", "code"),
    "torch.jit": ("f = torch.jit.CompilationUnit('def f(x): return x')", "onehot", "code"),
    "torch.utils.cpp_extension": ("from torch.utils.cpp_extension import load_inline",
                                  "onehot", "code"),
    "torch.compile": ("f = torch.compile(f)", "onehot", "code"),
    "model.compile": ("def f(m):\n    return m.compile()", "onehot", "code"),
    "types.FunctionType": ("import types", "onehot", "code"),
    "subprocess": ("import subprocess", "onehot", "code"),
    "os": ("import os", "onehot", "code"),
    "a module behind torch": ("torch.os.system('ls')", "onehot", "code"),
    "__spec__.loader": ("m = __spec__.loader.load_module('gc')", "onehot", "code"),
    "__loader__": ("m = __loader__", "onehot", "code"),
    "numpy.f2py": ("import numpy.f2py", "onehot", "code"),
    "numpy.testing": ("import numpy as np\nt = np.testing", "onehot", "code"),
    # the running program
    "gc": ("import gc", "embedding", "program"),
    "inspect": ("import inspect", "embedding", "program"),
    "ctypes": ("import ctypes", "embedding", "program"),
    "sys.modules": ("import sys\nx = sys.modules", "embedding", "program"),
    "sys.modules, sys imported twice": ("import sys\ndef f():\n    import sys\n"
                                        "    return sys.modules", "embedding", "program"),
    "sys behind warnings": ("import warnings\nx = warnings.sys", "embedding", "program"),
    "inspect behind dataclasses": ("import dataclasses\nx = dataclasses.inspect", "embedding",
                                   "program"),
    "sys._getframe": ("from sys import _getframe", "embedding", "program"),
    "sys.setprofile": ("import sys\nsys.setprofile(print)", "embedding", "program"),
    "threading.settrace": ("import threading", "embedding", "program"),
    "a traceback's frame": ("try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__",
                            "embedding", "program"),
    "f_back": ("def f(frame):\n    return frame.f_back", "embedding", "program"),
    "__globals__": ("def g():\n    pass\nx = g.__globals__", "embedding", "program"),
    "__closure__": ("class A:\n    def f(self):\n        return self.f.__closure__",
                    "embedding", "program"),
    "__wrapped__": ("x = F.dropout.__wrapped__", "embedding", "program"),
    "__subclasses__": ("x = object.__subclasses__()", "embedding", "program"),
    "__base__": ("x = ().__class__.__base__", "embedding", "program"),
    "open /proc/self/mem": ("f = open('/proc/self/mem', 'r+b')", "embedding", "program"),
    "argparse.FileType": ("import argparse\nf = argparse.FileType('r+b')", "embedding",
                          "program"),
    "numpy as_strided": ("import numpy as np\nx = np.lib.stride_tricks.as_strided",
                         "embedding", "program"),
    "from numpy.lib import stride_tricks": ("from numpy.lib import stride_tricks", "embedding",
                                            "program"),
    "ndarray.ctypes": ("def f(a):\n    return a.ctypes.data", "embedding", "program"),
    "numpy.memmap": ("import numpy as np\nm = np.memmap('/proc/self/mem')", "embedding",
                     "program"),
    "__array_interface__ in a class": ("class M:\n    __array_interface__ = {}", "embedding",
                                       "program"),
    "__array_interface__ as a key": ("M = type('M', (), {'__array_interface__': {}})",
                                     "embedding", "program"),
    "__torch_function__": ("class T(torch.Tensor):\n    def __torch_function__(cls):\n"
                           "        pass", "embedding", "program"),
    "__torch_function__ by type()": ("T = type('T', (), dict(__torch_function__=f))",
                                     "embedding", "program"),
    "TorchFunctionMode": ("from torch.overrides import TorchFunctionMode", "embedding",
                          "program"),
    "a global forward hook": ("h = nn.modules.module.register_module_forward_hook(f)",
                              "embedding", "program"),
    "the global hooks' dict": ("def f(self):\n    return self._global_forward_hooks",
                               "embedding", "torch"),
    "__array_interface__ through an attribute hook": (
        "class M:\n    def __getattr__(self, name):\n        return {}", "embedding", "program"),
    "__array_interface__ by type() with a computed key": (
        "M = type('M', (), {'__array_' + 'interface__': {}})", "embedding", "names"),
    "type() through an alias": ("make = type\nM = make('M', (), {'__array_' + 'x': {}})",
                                "embedding", "names"),
    "type() passed around": ("import functools\nmake = functools.partial(type, 'M')",
                             "embedding", "names"),
    "a metaclass filling the namespace": (
        "class Meta(type):\n    pass\nclass M(metaclass=Meta):\n    pass", "embedding",
        "names"),
    "make_dataclass with computed names": (
        "import dataclasses\nM = dataclasses.make_dataclass('M', [('__array_' + 'x', dict)])",
        "embedding", "names"),
    "enum's functional API": ("import enum\nE = enum.Enum('E', [('__array_' + 'x', 1)])",
                              "embedding", "names"),
    "an own enum's functional API": (
        "import enum\nclass K(enum.Enum):\n    A = 1\nE = K('E', [('__array_' + 'x', 1)])",
        "embedding", "names"),
    "a module's __class__ swapped": ("F.__class__ = type(F)", "embedding", "program"),
    "__match_args__": ("class C:\n    __match_args__ = ('one_' + 'hot',)", "onehot",
                       "program"),
    "match on the module's attributes": (
        "import sys\nmatch F:\n    case object(one_hot=oh):\n        pass", "onehot",
        "banned"),
    "__cuda_array_interface__": ("class M:\n    __cuda_array_interface__ = {}", "embedding",
                                 "program"),
    "__builtins__": ("b = __builtins__", "embedding", "names"),
    "builtins": ("import builtins", "embedding", "program"),
    "storage": ("def f(t):\n    return t.untyped_storage()", "embedding", "program"),
    # torch's internals
    "torch._C": ("x = torch._C", "embedding", "torch"),
    "torch._C through self": ("def f(self):\n    return self._C", "embedding", "torch"),
    "torch._VF": ("def f(m):\n    return m._VF", "embedding", "torch"),
    "a private name of torch": ("x = torch._weight_norm", "embedding", "torch"),
    "a private name on a known path": ("x = nn.modules.module._global_forward_hooks",
                                       "embedding", "torch"),
    "torch.ops": ("x = torch.ops", "embedding", "torch"),
    "torch.library": ("x = torch.library.Library", "embedding", "torch"),
    "a private name of warnings": ("import warnings\nwarnings._setoption('x')", "embedding",
                                   "program"),
    # imports
    "a module the grader has not checked": ("import json", "embedding", "import"),
    "a file the grader does not read": ("from .helpers import lookup", "embedding",
                                        "relative"),
    "a sibling the grader does not read": ("from . import tokenizer", "embedding", "relative"),
    "a parent package": ("from .. import anything", "embedding", "relative"),
    "another exercises module": ("import exercises.cli", "embedding", "relative"),
    "from exercises": ("from exercises.tokenizer import encode", "embedding", "relative"),
    "import *": ("from torch.nn.functional import *", "embedding", "star"),
    "import * from your own module": ("from .params import *", "embedding", "star"),
    # changing torch, which the given code and the grader's checks call (issue 30)
    **{case: (code, "embedding", "redirect") for case, code in {
        "a function of torch replaced": "F.linear = lambda x, w, b=None: x @ w.T",
        "the same by its full name": "torch.nn.functional.linear = None",
        "deleted": "del F.linear",
        "replaced by setattr": "setattr(F, 'linear', None)",
        "deleted by delattr": "delattr(torch, 'zeros')",
        "augmented": "F.dropout += 1",
        "a method of torch's Tensor replaced": "torch.Tensor.__matmul__ = None",
        "a layer's forward replaced": "nn.Linear.forward = lambda self, x: x",
        "a module of torch renamed, then changed": "G = F\nG.linear = None",
        "a module handed to a function that changes it": "def patch(m):\n    m.linear = None"
                                                         "\npatch(F)",
        "a module in a list": "mods = [F, nn]",
        "a module as a default argument": "def f(m=F):\n    return m",
        "a module returned": "def f():\n    return torch.nn.functional",
        "a module stored on a class": "class A:\n    pass\nA.F = F",
        "a module as a class attribute": "class A:\n    F = torch.nn.functional",
        "a module imported into a class": "class A:\n    import torch.nn.functional as F",
        "a module through a walrus": "x = (G := F)",
        "a switch of torch's": "torch.backends.cudnn.benchmark = True",
        "a container of torch's": "F.__all__[0] = 'linear'",
        # an object's class, which is torch's for a layer (nn.Linear for the head)
        "a layer's class changed through type()": "def f(m):\n    type(m).forward = None",
        "through type() of an attribute": "class A:\n    def g(self):\n"
                                          "        type(self.lm_head).forward = None",
        "through __class__": "def f(m):\n    m.__class__.forward = None",
        "through setattr on type()": "def f(m):\n    setattr(type(m), 'forward', None)",
        "deleted through type()": "def f(m):\n    del type(m).forward",
        "through delattr on __class__": "def f(m):\n    delattr(m.__class__, 'forward')",
        "type() named first": "def f(m):\n    T = type(m)\n    T.forward = None",
        "augmented through type()": "def f(m):\n    type(m).count += 1",
    }.items()},
}


@pytest.mark.parametrize("case", list(BYPASSES))
def test_a_way_around_the_ban_is_found(case):
    code, stage, kind = BYPASSES[case]
    found = _found(code, stage)
    assert kind in {f.kind for f in found}, (case, [str(f) for f in found])
    finding = next(f for f in found if f.kind == kind)
    assert finding.line > 3 and finding.code and finding.why, finding


# --- no broader than needed: harmless code passes --------------------------------------------

#: Module-level code using every harmless module the rules allow, live (it runs at import).
HARMLESS = '''


import abc
import bisect
import collections
import contextlib
import copy
import dataclasses
import decimal
import enum
import fractions
import functools
import heapq
import itertools
import math
import numbers
import operator
import random
import re
import statistics
import sys
import textwrap
import time
import typing
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # typing's own: never runs, never read
    from torch.nn.functional import embedding, one_hot  # noqa: F401

_SQUARES = np.arange(5, dtype=np.int64) ** 2
_TOTAL = functools.reduce(operator.add, itertools.chain([1], [2]), 0) + math.isqrt(16)
_MEAN = statistics.mean([1, 2, 3]) + float(fractions.Fraction(1, 2)) + float(decimal.Decimal(1))
_PAIR = collections.namedtuple("_PAIR", "a b")(1, 2)
_HEAP = heapq.nsmallest(2, [3, 1, 2]) + [bisect.bisect([1, 2, 3], 2)]
_WORDS = re.compile(r"\\w+").findall(textwrap.dedent("  a b"))
_COPY = copy.deepcopy({"a": [1]})
_RNG = random.Random(0).random() + time.perf_counter() * 0 + sys.maxsize * 0


class _Kind(enum.Enum):
    A = 1


@dataclasses.dataclass
class _Note(abc.ABC):
    n: numbers.Integral = 0
    rows: Sequence[int] = ()


def _quietly(message: typing.Optional[str] = None) -> float:
    with warnings.catch_warnings(), contextlib.suppress(ValueError):
        warnings.simplefilter("ignore")
        warnings.warn(message or "harmless")
    return float(np.mean(_SQUARES)) + float(np.linalg.norm(np.ones(3)))


_quietly()
'''


def test_harmless_modules_pass_in_every_file():
    files = {name: (LUMEN / name).read_text(encoding="utf-8") + HARMLESS for name in rules.FILES}
    for check in bans.CHECKS.values():
        assert bans.findings(files, check) == [], check.test


#: Correct code that needs no refusal and that a stricter rule would refuse: own private attributes,
#: numpy in a calculator, regular expressions, a module's own names.
CLEAN = {
    "own private attributes": "class A:\n    def __init__(self):\n        self._cache = {}\n"
                              "    def f(self):\n        return self._cache",
    "a private method": "class A:\n    def _rows(self, ids):\n        return ids\n"
                        "    def forward(self, ids):\n        return self._rows(ids)",
    "a dataclass's private field": "import dataclasses\n@dataclasses.dataclass\nclass P:\n"
                                   "    _n: int = 0\ndef f(p):\n    return p._n",
    "numpy counting": "import numpy as np\ndef count(V, d):\n    return int(np.prod([V, d]))",
    "numpy's random and linalg": "import numpy as np\nx = np.random.default_rng(0).normal(size=3)"
                                 "\ny = np.linalg.norm(x) + np.trace(np.eye(2))",
    "torch as usual": "x = nn.init.normal_(torch.empty(2), 0.0, 0.02)\n"
                      "y = F.scaled_dot_product_attention\nz = torch.autograd.Function\n"
                      "t = torch.trace(torch.eye(2)) + torch.select(torch.eye(2), 0, 0).sum()",
    "an object's class read, its own class changed": (
        "class A:\n    count = 0\n    def f(self, m):\n        A.count += 1\n"
        "        T = type(m)\n        return T.__name__, type(self)(), m.__class__ is T"),
    "re.compile": "import re as R\np = R.compile('x')",
    "sys.stdout": "import sys\nsys.stdout.write('x')\nprint(file=sys.stderr)",
    "your own module": "from . import params\nx = params.PRESETS\nfrom .params import count_params",
    "your own class's names": "class A:\n    one_hot = 1\nx = A.one_hot",
    "getattr and setattr with a constant name": "def f(m, w):\n    setattr(m, 'weight', w)\n"
                                                "    return getattr(m, 'weight')",
    "torch.distributions in the embedding stage": "d = torch.distributions.Normal",
    "nn.Embedding in the onehot stage": "e = nn.Embedding",
    "abstract base classes and enums": "import abc\nimport enum\nclass A(abc.ABC):\n    pass\n"
                                        "class B(metaclass=abc.ABCMeta):\n    pass\n"
                                        "class K(enum.Enum):\n    X = 1\nk = K(1)\n"
                                        "t = type(k)\nok = isinstance(t, (type, int))\n"
                                        "def f(c: type) -> type[int]:\n    return c",
    "match statements": "def f(x):\n    match x:\n        case {'a': 1}:\n            return 1\n"
                        "        case [a, b]:\n            return a\n"
                        "        case int(real=r):\n            return r",
    "threads of thought in strings": "s = 'import gc; F.one_hot; eval'\n# torch._C",
    "torch's values handed on": "x = torch.zeros(2, dtype=torch.float64)\n"
                                "y = isinstance(x, torch.Tensor)\nz = [torch.float32, nn.Linear, "
                                "F.relu, torch.Tensor.add]\nw = getattr(F, 'relu')\n"
                                "h = hasattr(torch, 'compiler')",
    "torch's modules named again": "G = torch.nn.functional\ny = G.relu(torch.zeros(1))\n"
                                   "from torch.nn import init\ninit.zeros_(torch.empty(1))",
    "your own layers' attributes set": "class A(nn.Module):\n    def __init__(self):\n"
                                       "        super().__init__()\n"
                                       "        self.lin = nn.Linear(2, 2)\n"
                                       "        self.lin.weight = nn.Parameter(torch.zeros(2, 2))\n"
                                       "        self.lin._parameters['bias'] = None",
}


#: A module of torch reached through another of your files, then changed: (what params.py
#: holds, what gpt2.py does with it).
THROUGH_YOUR_FILES = {
    "from .params import": ("import torch.nn.functional as G", "from .params import G\n"
                            "G.linear = None"),
    "params.G": ("import torch.nn.functional as G", "from . import params\n"
                 "params.G.linear = None"),
    "exercises.params as": ("from torch.nn import functional as G",
                            "import exercises.params as mine\nmine.G.linear = None"),
    "exercises.params.G": ("import torch.nn.functional as G", "import exercises.params\n"
                           "exercises.params.G.linear = None"),
    "sys through params": ("import sys", "from .params import sys\nsys.modules['torch'] = None"),
    "re-exported twice": ("from .embeddings import H as G", "from .params import G\n"
                          "G.linear = None"),
}


@pytest.mark.parametrize("case", list(THROUGH_YOUR_FILES))
def test_a_module_of_torch_through_your_other_files_is_followed(case):
    params, gpt2 = THROUGH_YOUR_FILES[case]
    files = {"embeddings.py": HEAD + "import torch.nn.functional as H\n",
             "params.py": HEAD + params + "\n", "gpt2.py": HEAD + gpt2 + "\n"}
    found = [f for f in bans.findings(files, bans.EMBEDDING) if f.file == "gpt2.py"]
    assert {f.kind for f in found} & {"redirect", "program"}, (case, [str(f) for f in found])


@pytest.mark.parametrize("case", list(CLEAN))
def test_harmless_code_passes(case):
    code = CLEAN[case]
    stages = [s for s in rules.BANS if not (
        ("distributions" in code and s == "onehot") or ("Embedding" in code and s == "embedding"))]
    for stage in stages:
        assert _found(code, stage) == [], (case, stage)


# --- each check: its ban, its rules, its files -----------------------------------------------


def test_each_ban_costs_only_its_own_check():
    files = {"embeddings.py": OWN, "params.py": HEAD + "x = nn.Embedding\n",
             "gpt2.py": HEAD + "d = torch.distributions\n"}
    assert [f.file for f in bans.findings(files, bans.EMBEDDING)] == ["params.py"]
    assert [f.file for f in bans.findings(files, bans.ONEHOT)] == ["gpt2.py"]


def test_every_check_names_its_ban_rules_and_files():
    for name, check in bans.CHECKS.items():
        assert check.test == name and check.ban in rules.BANS
        assert set(check.kinds) == {"banned", *rules.EVASIONS} and set(rules.WHY) <= {
            *rules.EVASIONS}
        assert check.files == rules.FILES  # all three run in each stage's process


def test_the_verdict_is_the_sources_alone():
    """The recorder's list from the learner's process decides nothing, either way."""
    clean = {name: (LUMEN / name).read_text(encoding="utf-8") for name in rules.FILES}
    for check in bans.CHECKS.values():
        bans.judge(clean, check, {"calls": ["aten::one_hot", "aten::embedding"]}, "lesson")
        dirty = {**clean, "params.py": clean["params.py"] + "\nimport gc\n"}
        with pytest.raises(Mistake, match="import gc"):
            bans.judge(dirty, check, {"calls": []}, "lesson")


def test_the_suites_read_no_recorded_calls_themselves():
    """Only bans.py reads a reply's "calls", and only to explain."""
    suites = Path(bans.__file__).parent
    for path in sorted(suites.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        keys = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
        assert "calls" not in keys, f"{path.name} reads the recorded calls"


# --- the library routes are complete for torch's own Python code -----------------------------


def _callers(names: frozenset[str]) -> set[tuple[str, str]]:
    """(module, top-level definition) of every place in torch's Python code that names one of
    ``names`` (leading underscores dropped)."""
    root = Path(torch.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        flat = text.lower().replace("_", "")
        if not any(n.lower().replace("_", "") in flat for n in names):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        module = ".".join(("torch", *path.relative_to(root).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        for top in tree.body:
            if not isinstance(top, ast.FunctionDef | ast.ClassDef):
                continue
            for node in ast.walk(top):
                name = node.attr if isinstance(node, ast.Attribute) else \
                    node.id if isinstance(node, ast.Name) else None
                if name is not None and name.lstrip("_") in names \
                        and top.name.lstrip("_") not in names:
                    found.add((module, top.name))
    return found


@pytest.mark.parametrize("stage", list(rules.BANS))
def test_every_torch_module_that_calls_a_banned_built_in_is_refused(stage):
    """Whatever in torch's Python code calls the built-in for you lives in a module that
    the ban (or a rule) refuses, or is itself one of the banned names."""
    check = bans.CHECKS[{"onehot": bans.ONEHOT.test, "embedding": bans.EMBEDDING.test}[stage]]
    missed = []
    for module, definition in sorted(_callers(rules.BANS[stage].names)):
        files = {"embeddings.py": f"import {module}\n"}
        if not bans.findings(files, check):
            missed.append(f"{module}.{definition}")
    assert not missed, missed


# --- bounded: the reading of hostile shapes and sizes is one finding, never an exception -------
# The rules run in the grader's process, on learner input, before any limit of the sandbox
# starts: every shape of source (deep, long, wide, huge) must come back as findings, in work
# that grows with the file's size alone, never with how deep its expressions nest.

#: Expressions that nest ``n`` deep, each in its own way through the parser and the rules.
DEEP = {
    "an attribute chain": lambda n: "y" + ".a" * n,
    "torch's private chain": lambda n: "torch" + "._C" * n,
    "a call chain": lambda n: "y" + "()" * n,
    "subscripts": lambda n: "y" + "[0]" * n,
    "a unary chain": lambda n: "-" * n + "1",
    "not, not, ...": lambda n: "not " * n + "y",
    "a sum": lambda n: "+".join(["y"] * (n + 1)),
    "a power tower": lambda n: "**".join(["y"] * (n + 1)),
    "conditionals": lambda n: "y if y else " * n + "y",
    "lambdas": lambda n: "lambda: " * n + "0",
    "nested calls": lambda n: "f(" * n + ")" * n,
    "nested lists": lambda n: "[" * n + "]" * n,
    "getattr of getattr": lambda n: "getattr(" * n + "y" + ", 'a')" * n,
}
#: Where an expression sits: each place is read by a different part of the rules.
PLACES = {
    "a never-called function": "def f{i}():\n    return {e}\n",
    "the top level": "x{i} = {e}\n",
    "a base class": "class C{i}({e}):\n    pass\n",
    "a metaclass": "class M{i}(metaclass={e}):\n    pass\n",
    "an isinstance": "def g{i}(v):\n    return isinstance(v, {e})\n",
    "an annotation": "def h{i}(v: {e}) -> {e}:\n    pass\n",
    "a decorator": "@{e}\ndef d{i}():\n    pass\n",
    "a call's callee": "z{i} = ({e})(1, 2, 3)\n",
}


def _shape(tree: ast.AST) -> tuple[int, int]:
    """(depth, parts) of a tree, by a walk of this test's own."""
    deepest, parts, stack = 0, 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest, parts = max(deepest, depth), parts + 1
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest, parts


def _judged(extra: str, file: str = "params.py") -> list[rules.Finding]:
    """Every check's findings for lumen's files with ``extra`` at the end of ``file``: never an
    exception; one "unreadable" finding for that file exactly when it is past the limits."""
    files = {name: (LUMEN / name).read_text(encoding="utf-8") for name in rules.FILES}
    files[file] += "\n" + extra
    findings = [f for stage in (*rules.BANS, None) for f in rules.check(files, stage)]
    try:
        depth, parts = _shape(ast.parse(files[file]))
        past = depth > rules.MAX_DEPTH or parts > rules.MAX_NODES
    except SyntaxError:  # not Python: it cannot be imported, so the file is not read
        return findings
    except (RecursionError, MemoryError):  # Python's parser gives up on it
        past = True
    unreadable = {f.file for f in findings if f.kind == "unreadable"}
    assert unreadable == ({file} if past else set()), (depth if not past else "past", findings)
    return findings


@settings(max_examples=20, deadline=None)
@given(deep=st.sampled_from(sorted(DEEP)), place=st.sampled_from(sorted(PLACES)),
       depth=st.one_of(st.integers(1, 120), st.integers(120, 3000), st.just(100_000)),
       times=st.integers(1, 10), file=st.sampled_from(rules.FILES))
def test_deep_code_anywhere_is_findings_never_an_exception(deep, place, depth, times, file):
    expression = DEEP[deep](depth)
    _judged("".join(PLACES[place].format(i=i, e=expression) for i in range(times)), file)


@settings(max_examples=15, deadline=None)
@given(kind=st.sampled_from(["long names", "a long line", "wide calls", "many statements",
                             "many findings on one line", "a long string"]),
       size=st.integers(1, 200_000))
def test_long_and_wide_code_is_findings_never_an_exception(kind, size):
    extra = {
        "long names": f"def f():\n    return y.{'a' * size}.{'b' * size}._C\n",
        "a long line": "x = (" + " + ".join(["y._C"] * (size // 6 + 1)) + ")\n",
        "wide calls": "x = f(" + ", ".join(["y"] * (size // 3 + 1)) + ")\n",
        "many statements": "x = 1\n" * (size // 6 + 1),
        "many findings on one line": "x = [" + ", ".join(["torch._C"] * (size // 10 + 1)) + "]\n",
        "a long string": f"x = {'a' * size!r}\n",
    }[kind]
    _judged(extra)


def test_a_file_past_the_limits_is_one_finding_that_says_so():
    """The finding names the file, the line where the reading stopped and the limit, and
    fails both "written by hand" checks (its kind is one of the evasions they apply)."""
    deep = next(f for f in _judged("x = y" + ".a" * 150 + "\n") if f.kind == "unreadable")
    assert deep.file == "params.py" and deep.line > 0 and deep.code.startswith("x = y.a.a")
    assert f"nested more than {rules.MAX_DEPTH} deep" in str(deep)
    assert "unreadable" in rules.EVASIONS and all("unreadable" in c.kinds
                                                  for c in bans.CHECKS.values())
    huge = next(f for f in _judged("x = [" + "y, " * rules.MAX_NODES + "]\n")
                if f.kind == "unreadable")
    assert f"more than {rules.MAX_NODES:,} parts" in str(huge)
    parser = next(f for f in _judged("x = " + "-" * 100_000 + "1\n") if f.kind == "unreadable")
    assert "Python's parser gave up on it" in str(parser)


def _calls(files: dict[str, str]) -> int:
    """How many functions (Python's and C's) one reading of ``files`` calls: its work,
    counted, not timed."""
    import sys

    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event in ("call", "c_call")

    rules._parse.cache_clear()
    sys.setprofile(profile)
    try:
        rules.check(files, "embedding")
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("deep", ["an attribute chain", "torch's private chain", "a call chain",
                                  "subscripts", "a sum"])
def test_the_reading_grows_with_the_size_not_with_the_depth(deep):
    """Hundreds of never-called chains, 90 deep (within the limit), cost per part what as
    many chains 9 deep do: no step of the reading is quadratic in a chain's length (each link
    once qualified, a finding's quote bounded). Before, 300 such chains took minutes."""
    files = {name: (LUMEN / name).read_text(encoding="utf-8") for name in rules.FILES}
    base = _calls(files)
    per_part = {}
    for depth, times in ((9, 300), (90, 30)):
        extra = "".join(f"def f{i}():\n    return {DEEP[deep](depth)}\n" for i in range(times))
        files["params.py"] = (LUMEN / "params.py").read_text(encoding="utf-8") + extra
        per_part[depth] = (_calls(files) - base) / _shape(ast.parse(extra))[1]
    assert per_part[90] < 1.3 * per_part[9], per_part


# --- graded: the whole grader keeps full marks, and a broken rule costs only its checks --------


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


@pytest.mark.parametrize("seed", [7, 2024])
def test_correct_code_with_harmless_imports_keeps_full_marks(grader, tmp_path, seed):
    folder = make_submission(tmp_path / "harmless", {})
    for name in rules.FILES:
        path = folder / name
        path.write_text(path.read_text(encoding="utf-8") + HARMLESS, encoding="utf-8")
    grade = grader.grade(folder, seed=seed)
    failed = [(r.name, r.message) for s in grade.stages for r, _, _ in s.tests if not r.passed]
    assert not failed and grade.score == grade.max_score, failed


def test_a_rule_broken_in_params_costs_only_the_checks_that_need_it(grader, tmp_path):
    folder = make_submission(tmp_path / "broken", {})
    params = folder / "params.py"
    params.write_text(params.read_text(encoding="utf-8")
                      + "\n\ndef _dtype(name):\n    return getattr(torch, 'float' + name)\n",
                      encoding="utf-8")
    grade = grader.grade(folder, seed=3)
    failed = {r.name: r.message for s in grade.stages for r, _, _ in s.tests if not r.passed}
    assert sorted(failed) == sorted(RULED), sorted(failed)
    for message in failed.values():
        assert "params.py" in message and "computed at run time" in message, message


#: Every check that applies the rules: the "written by hand" tests and the certified checks.
RULED = (*bans.CHECKS, *(t for stage in STAGE_NAMES for t in certified_tests(stage)))


#: Shapes of params.py that the rules' reading once crashed on or took minutes over, each at
#: the end of lumen's own file: (the code, whether the rules refuse it as unreadable).
HOSTILE = {
    "a chain 150 deep in a function never called": (
        "def never():\n    return y" + ".a" * 150 + "\n", True),
    "300 chains 90 deep, never called": (
        "".join(f"def never{i}():\n    return y{'.a' * 90}\n" for i in range(300)), False),
    "a unary chain 100,000 long": ("x = " + "-" * 100_000 + "1\n", True),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_shape_is_graded_never_an_internal_error(grader, tmp_path, case):
    """Graded whole, through the warm grader: a grade comes back; the "written by hand"
    checks fail saying why where the rules cannot read params.py, and nothing else changes
    but what the file itself breaks (a unary chain 100,000 long does not compile)."""
    code, unreadable = HOSTILE[case]
    folder = make_submission(tmp_path / "hostile", {})
    params = folder / "params.py"
    params.write_text(params.read_text(encoding="utf-8") + "\n" + code, encoding="utf-8")
    grade = grader.grade(folder, seed=11)
    failed = {r.name: r.message for s in grade.stages for r, _, _ in s.tests if not r.passed}
    assert not any(r.grader_error for s in grade.stages for r, _, _ in s.tests)
    if not unreadable:
        assert not failed, failed
        return
    compiles = "-" * 100 not in code
    for check in RULED:  # a file that does not compile may fail a check before the rules
        message = failed.pop(check, None)
        if check in bans.CHECKS or compiles or message and "within its limits" in message:
            assert "params.py" in message and "within its limits" in message, message
    assert not failed if compiles else all(
        stage.name in ("params", "tying", "init") for stage in grade.stages
        for r, _, _ in stage.tests if r.name in failed), failed


def test_a_file_python_cannot_parse_is_a_grade_from_the_command_line(tmp_path):
    """``python -m autograder grade``, as an instructor runs it: exit 0 and results.json, not
    exit 2 (the rules' ast.parse raised MemoryError in the grader's process before)."""
    import json
    import subprocess
    import sys

    folder = make_submission(tmp_path / "hostile", {})
    params = folder / "params.py"
    params.write_text(params.read_text(encoding="utf-8") + "\nx = " + "-" * 100_000 + "1\n",
                      encoding="utf-8")
    out = tmp_path / "results.json"
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--stage",
                          "embedding", "--out", str(out)], cwd=LUMEN.parent,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    refused = [t for t in json.loads(out.read_text())["tests"]
               if "Python's parser gave up on it" in t["output"]]
    assert len(refused) == 1 + len(certified_tests("embedding")), refused
    assert all(t["score"] == 0 for t in refused), refused
    assert sum("written by hand" in t["name"] for t in refused) == 1, refused


def test_the_learners_command_reads_their_folder(tmp_path):
    """``python -m exercises.rules [FOLDER]``, as the stub's docstring tells learners to run
    it: 0 on the handed-out files, 1 naming the line of a banned built-in, 2 on a folder
    without the files."""
    import shutil
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "exercises.rules", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)

    clean = run()
    assert clean.returncode == 0 and "nothing the grader refuses" in clean.stdout, clean
    for name in ("embeddings.py", "params.py", "gpt2.py"):
        shutil.copy(ROOT / "exercises" / name, tmp_path / name)
    with (tmp_path / "embeddings.py").open("a", encoding="utf-8") as f:
        f.write("\n\ndef lookup(w, ids):\n    return torch.nn.functional.embedding(ids, w)\n")
    found = run(str(tmp_path))
    assert found.returncode == 1 and "embeddings.py, line" in found.stdout, found
    assert "is banned in stage 'embedding'" in found.stdout, found
    empty = run(str(tmp_path / "nowhere"))
    assert empty.returncode == 2 and "no embeddings.py" in empty.stdout, empty
