"""The one seam between the self-check tests and the code they check.

Tests never import your code themselves: they take the modules from the fixtures below
(``embeddings``, ``params``, ``gpt2``, ``vectors``, ``tokenizer``), from the ``exercises``
package, yours. ``--impl=PACKAGE`` (or ``LUMEN_IMPL=PACKAGE``) points every test at another
package with the same files, such as the reference: ``pytest exercises --impl=lumen``.
Run one stage at a time, in the chapter's order, from the folder that holds exercises/::

    pytest exercises -m embedding

A stage may use the stages before it, never the ones after it: while an earlier stage's test
runs, the later-stage functions it passes through (``Embedding.reset_parameters``,
``Embedding.scale_output``, ``GPT2.init_weights``) are neutral stand-ins, so 'embedding' can
pass before 'init' is written. A stub not written yet fails its tests with "not implemented
yet", naming the function and its stage.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Generator, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from torch import Tensor

from . import id_dtypes as id_dtype_words
from .meta_device import MetaWithValues

DEFAULT_IMPL = "exercises"
ENV_VAR = "LUMEN_IMPL"
#: The JUnit report's property of a test that failed on a stub, "function:stage": the lab's
#: check cell reads it (``--junitxml``) to say in one line that a stage is not written yet.
STUB_PROPERTY = "not_implemented"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--impl",
        default=None,
        metavar="PACKAGE",
        help=f"the package whose code the tests check (default: ${ENV_VAR} or {DEFAULT_IMPL})",
    )


def impl_package(option: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """The package under test: ``--impl``, else ``$LUMEN_IMPL``, else ``exercises``."""
    return option or environ.get(ENV_VAR) or DEFAULT_IMPL


def load(config: pytest.Config, module: str) -> ModuleType:
    """``module`` (e.g. "embeddings") from the package under test."""
    package = impl_package(config.getoption("--impl"))
    return _import(package, module)


@functools.cache
def _import(package: str, module: str) -> ModuleType:
    try:
        return importlib.import_module(f"{package}.{module}")
    except ModuleNotFoundError as error:
        if error.name in (package, f"{package}.{module}"):
            raise pytest.UsageError(
                f"cannot import {package}.{module}: run pytest from the folder that holds "
                f"{package}/ (--impl and ${ENV_VAR} choose the package)"
            ) from None
        raise


def pytest_configure(config: pytest.Config) -> None:
    # The stage markers, from the same list the stubs and the grader read (stages.py), so
    # that `-m embedding` works without the repository's pyproject.toml.
    for stage in load(config, "stages").STAGES:
        config.addinivalue_line("markers", f"{stage.name}: stage '{stage.name}', {stage.title}")


def pytest_report_header(config: pytest.Config) -> str:
    return f"checking the package: {impl_package(config.getoption('--impl'))}"


def stage_of(item: pytest.Item) -> str | None:
    """The stage a test belongs to: its stage marker (each test file sets one)."""
    names = load(item.config, "stages").STAGE_NAMES
    return next((m.name for m in item.iter_markers() if m.name in names), None)


def stub_behind(error: BaseException, stages: ModuleType) -> tuple[str, str] | None:
    """(function, stage) of the stub whose NotImplementedError is ``error`` or led to it (a
    test that expects, say, a TypeError fails while handling the stub's error), else None."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, NotImplementedError):
            stub = stages.parse_stub_message(str(cause))
            if stub is not None:
                return stub
        cause = cause.__cause__ or cause.__context__
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A stub's NotImplementedError becomes a one-line failure: what to write, and where; so
    does any failure raised while handling one."""
    try:
        return (yield)
    except (Exception, pytest.fail.Exception) as error:
        stub = stub_behind(error, load(item.config, "stages"))
        if stub is None:
            raise
        function, owner = stub
        item.user_properties.append((STUB_PROPERTY, f"{function}:{owner}"))  # for the lab
        stage = stage_of(item)
        needs = "" if stage in (None, owner) else f"; this test of '{stage}' needs it"
        message = (
            f"not implemented yet: {function} (stage '{owner}'){needs}. "
            "Write it where its stub says YOUR CODE HERE."
        )
        raise pytest.fail.Exception(message, pytrace=False) from None


# The fixtures: every test reaches the code under test through these, and only these.


@pytest.fixture(scope="session")
def embeddings(pytestconfig: pytest.Config) -> ModuleType:
    """embeddings.py: Embedding, check_ids, one_hot, embed_via_onehot, cosine_*, analogy."""
    return load(pytestconfig, "embeddings")


@pytest.fixture(scope="session")
def params(pytestconfig: pytest.Config) -> ModuleType:
    """params.py: count_params, ParamCount, PRESETS."""
    return load(pytestconfig, "params")


@pytest.fixture(scope="session")
def gpt2(pytestconfig: pytest.Config) -> ModuleType:
    """gpt2.py: GPT2, GPT2Config."""
    return load(pytestconfig, "gpt2")


@pytest.fixture(scope="session")
def rules() -> ModuleType:
    """rules/ (given): the grader's own checker of the rules at the top of embeddings.py, the
    copy beside these tests (exercises/rules/), whichever package they check."""
    return importlib.import_module("..rules", __package__)


@pytest.fixture(scope="session")
def your_files(pytestconfig: pytest.Config, rules: ModuleType) -> dict[str, str]:
    """Your embeddings.py, params.py and gpt2.py as text: what the grader reads (not runs)."""
    folder = Path(load(pytestconfig, "embeddings").__file__).resolve().parent
    return rules.read(folder)


@pytest.fixture(scope="session")
def tokenizer(pytestconfig: pytest.Config) -> ModuleType:
    """tokenizer.py (given): GPT-2's tokenizer, offline."""
    return load(pytestconfig, "tokenizer")


@pytest.fixture(scope="session")
def vectors(pytestconfig: pytest.Config) -> ModuleType:
    """vectors.py (given): GloVe word vectors, through your cosine_neighbours and analogy."""
    return load(pytestconfig, "vectors")


class OtherDevice:
    """A device other than the CPU, to check that results follow their inputs' device: the
    GPU if there is one, else the meta device (tensors with a shape but no values), with the
    values kept behind it as the grader does (meta_device.py), so a range check still works.
    Only a tensor made on, or moved to, a fixed device (``.cpu()``, ``device="cpu"``) shows."""

    def __init__(self) -> None:
        self.name = "cuda" if torch.cuda.is_available() else "meta"
        self._meta = MetaWithValues() if self.name == "meta" else None

    def to(self, x: Any) -> Any:
        """A tensor or a module on this device (on the meta device: its values kept)."""
        if self._meta is None:
            return x.to(self.name)
        if isinstance(x, torch.nn.Module):
            return self._meta.move(x)
        return self._meta.meta(x)

    def run(self, call: Callable[[], Any]) -> Any:
        """``call()``, on this device's tensors."""
        if self._meta is None:
            return call()
        with self._meta:
            return call()


@pytest.fixture
def other_device() -> OtherDevice:
    """Where to check that results follow their inputs' device (see ``OtherDevice``)."""
    return OtherDevice()


@pytest.fixture(autouse=True)
def _seeded() -> None:
    """Every test draws the same random numbers on every run."""
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def id_dtypes() -> ModuleType:
    """What PyTorch does with token ids of a narrow dtype, in the grader's own words
    (id_dtypes.py, its copy): ``id_dtypes.wraps(dtype, V)``, ``id_dtypes.lookup(dtype)``."""
    return id_dtype_words


# Neutral stand-ins for the later-stage functions an earlier stage passes through. Each does
# just enough for the earlier stage's tests, and none is its own stage's answer.


def _any_values(self: Any) -> None:
    """For ``Embedding.reset_parameters``: any values do, tests before 'init' compare rows."""
    self.weight.data.uniform_(-1.0, 1.0)


def _unscaled(self: Any, x: Tensor) -> Tensor:
    """For ``Embedding.scale_output``: tests before 'init' use the default, scale=False."""
    return x


def _pytorch_defaults(self: Any) -> None:
    """For ``GPT2.init_weights``: tests before 'init' keep PyTorch's default initialisation."""


STAND_INS: dict[str, Any] = {
    "embeddings:Embedding.reset_parameters": _any_values,
    "embeddings:Embedding.scale_output": _unscaled,
    "gpt2:GPT2.init_weights": _pytorch_defaults,
}


@pytest.fixture(autouse=True)
def _later_stages_stand_in(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace the functions of the stages after this test's stage by their stand-ins."""
    stage = stage_of(request.node)
    if stage is None:
        return
    stages = load(request.config, "stages")
    later = stages.STAGE_NAMES[stages.STAGE_NAMES.index(stage) + 1 :]
    for name in later:
        for owned in stages.stage(name).owns:
            if owned in STAND_INS:
                module, qualname = owned.split(":")
                *path, attribute = qualname.split(".")
                target: Any = load(request.config, module)
                for part in path:
                    target = getattr(target, part)
                monkeypatch.setattr(target, attribute, STAND_INS[owned], raising=False)


# Given code is the grader's (see "Given code" at the top of embeddings.py): nn.Module's own
# methods among it. These are the names a class of yours may define although nn.Module has
# them: the ones PyTorch means you to write, and what Python keeps per class by itself.
_YOURS_TO_DEFINE = {"__init__", "forward", "extra_repr", "__module__", "__qualname__",
                    "__doc__", "__dict__", "__weakref__", "__annotations__", "__firstlineno__",
                    "__static_attributes__", "__orig_bases__", "__parameters__", "__slots__"}


def _nn_module_overrides(cls: type, members: Iterable[str] = ()) -> list[str]:
    """The methods of nn.Module (or object) that ``cls`` or a base of yours overrides, and
    its class attributes named as one of ``members`` (what the given code sets on each object:
    a class attribute ``lm_head`` answers in place of the submodule), as "Class.name": the
    grader replaces each override with nn.Module's own, and removes each such attribute."""
    torch_side = set(torch.nn.Module.__mro__)
    members = set(members)
    found = []
    for base in cls.__mro__:
        if base in torch_side or base.__module__.split(".")[0] == "torch":
            continue
        for name in vars(base):
            if name in members or (name not in _YOURS_TO_DEFINE
                                   and any(name in vars(t) for t in torch_side)):
                found.append(f"{base.__qualname__}.{name}")
    return found


@pytest.fixture(scope="session")
def nn_module_overrides() -> Callable[[type], list[str]]:
    """``nn_module_overrides(cls)``: what of nn.Module your class changes (see above)."""
    return _nn_module_overrides
