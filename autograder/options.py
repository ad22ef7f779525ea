"""What grading is configured by, declared once: one frozen ``Options`` for every front end.

A grade depends on where learner code runs (``device``, ``sandbox``), what it may use
(``Limits``), which stages are graded (``stages``), when a learner sees the hidden checks
(``visibility``) and the inputs' seed (``seed``). Each is declared here once, as a command-line
option with its help text (``add_arguments``: every front end shows the same words), has its
default here once, and is read from the parsed command line once (``Options.from_args``).
The pipeline (``grading.Grader``), the batch, nbgrade and PrairieLearn all take the same
object, and the Gradescope build offers grade's visibilities; the batch sends it to its
grading processes as JSON (``to_json``) and they rebuild it (``from_json``), so a grading
process grades under exactly the options the command was given.

Standard library and ``lumen.stages`` only: the sandbox check (``boundary/launcher.py``) and
the Gradescope zip read this module, and neither may pull in torch.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from lumen.stages import STAGE_NAMES

GiB = 1 << 30
#: ``--device``: ``auto`` grades on CPU, and on CUDA too when there is a GPU.
DEVICES = ("auto", "cpu", "cuda")
#: The ``--sandbox`` choices: bubblewrap (the default), or, asked for by name, none at all.
BWRAP, UNSAFE = "bwrap", "unsafe-process"
SANDBOXES = (BWRAP, UNSAFE)
#: What learner code could read without the sandbox, said wherever that choice is offered.
EXPOSED = ("the reference solution (lumen/), the hidden suites (autograder/suites/), "
           "solutions/, this repository and other learners' submissions")
#: Gradescope's test visibilities (its "test case visibility"), the one list of them.
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
DEFAULT_VISIBILITY = "after_due_date"
#: nbgrade's own choices, each default first: here, not in frontends/nbgrade.py, so that the
#: command line builds its parser without importing nbgrader.
FEEDBACK = ("scores", "messages")  # what a check cell's output shows the learner
LATE_PENALTIES = ("none", "zero")  # nbgrader's LateSubmissionPlugin.penalty_method


@dataclass(frozen=True)
class Limits:
    """What one submission may use. Times in seconds, sizes in bytes."""

    probe_seconds: float = 20.0  # one probe (one call into learner code)
    import_seconds: float = 20.0  # importing the learner's three files for one stage
    stage_seconds: float = 120.0  # one stage's checks, from its first
    submission_seconds: float = 300.0  # everything, all stages
    memory_bytes: int = 2 * GiB  # address space a child may add on top of torch's own
    sandbox_memory_bytes: int = 8 * GiB  # all processes of a worker (a cgroup, where possible)
    file_bytes: int = 16 << 20  # largest file (and captured output) a child may write
    startup_seconds: float = 60.0  # the worker's own start (importing torch)


@dataclass(frozen=True)
class Options:
    """How every submission of one command is graded (the defaults: ``python -m autograder
    grade`` with no options)."""

    device: str = "auto"  # one of DEVICES
    sandbox: str = BWRAP  # one of SANDBOXES
    limits: Limits = field(default_factory=Limits)
    stages: tuple[str, ...] | None = None  # in STAGE_NAMES' order; None: every stage
    visibility: str = DEFAULT_VISIBILITY  # one of VISIBILITIES
    seed: int | None = None  # the run's inputs; None: a fresh seed per submission

    def __post_init__(self) -> None:
        """Checked once, here, wherever the options come from (a command line, JSON, a test):
        the message names the value and the choices."""
        for name, value, choices in (("device", self.device, DEVICES),
                                     ("sandbox", self.sandbox, SANDBOXES),
                                     ("visibility", self.visibility, VISIBILITIES)):
            if value not in choices:
                raise ValueError(f"--{name} {value!r}: the choices are {', '.join(choices)}")
        if self.stages is not None:  # any order, any container: one form, so equal compares
            object.__setattr__(self, "stages", tuple(stages_in_order(self.stages)) or None)

    def to_json(self) -> dict:
        """The options as JSON data (the batch's grading processes get them so)."""
        data = dataclasses.asdict(self)
        data["stages"] = None if self.stages is None else list(self.stages)
        return data

    @classmethod
    def from_json(cls, data: dict) -> Options:
        """``to_json``'s data back as the same ``Options``; unknown names are an error, never
        dropped, so a grading process never grades under options it did not understand."""
        data = dict(data)
        limits = data.pop("limits", {})
        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"unknown grading option(s) {', '.join(unknown)}")
        return cls(limits=Limits(**limits), **data)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        """The options a front end's parsed command line gives (``add_arguments``'s); what it
        does not offer keeps its default."""
        given = vars(args)
        chosen = {name: given[name] for name in ("device", "sandbox", "visibility", "seed")
                  if given.get(name) is not None}
        if given.get("stage"):  # --stage a,b --stage c
            chosen["stages"] = [s for names in given["stage"] for s in names]
        if given.get("probe_seconds") is not None:
            chosen["limits"] = Limits(probe_seconds=given["probe_seconds"])
        return cls(**chosen)


def stages_in_order(names: Iterable[str]) -> list[str]:
    """``names`` once each, in the stages' order; an unknown name is a ValueError."""
    names = list(names)
    unknown = [s for s in names if s not in STAGE_NAMES]
    if unknown:
        raise ValueError(f"unknown stage(s) {', '.join(unknown)}; the stages are "
                         f"{', '.join(STAGE_NAMES)}")
    return sorted(set(names), key=STAGE_NAMES.index)


def _stages(value: str) -> list[str]:
    """``--stage a,b``'s value, checked."""
    try:
        return stages_in_order(s for s in value.split(",") if s)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


#: Each option once: its flags and argparse's settings, help text included.
ARGUMENTS: dict[str, tuple[str, dict]] = {
    "device": ("--device", {
        "choices": DEVICES, "default": Options.device,
        "help": "auto: CPU, and CUDA too when there is a GPU (default)"}),
    "sandbox": ("--sandbox", {
        "choices": SANDBOXES, "default": Options.sandbox,
        "help": f"{BWRAP} (default): learner code runs only inside bubblewrap, and grading "
                f"stops with an error where it cannot start; {UNSAFE}: without it (unsafe: "
                f"run as anyone but root, learner code can read {EXPOSED})"}),
    "visibility": ("--visibility", {
        "choices": VISIBILITIES, "default": Options.visibility,
        "help": f"Gradescope visibility of each hidden test (default {Options.visibility})"}),
    "stage": ("--stage", {
        "action": "append", "type": _stages, "metavar": "STAGE[,STAGE]",
        "help": "grade only these stages; default: all"}),
    "probe_seconds": ("--probe-seconds", {
        "type": float, "default": Limits.probe_seconds,
        "help": f"time one call into learner code may take (default "
                f"{Limits.probe_seconds:g}); two timeouts end that stage"}),
    "seed": ("--seed", {"type": int, "help": "reproduce an earlier run's inputs"}),
}
#: What a class is graded with (grade-batch): every option but the one-submission seed.
CLASS = ("device", "sandbox", "visibility", "stage", "probe_seconds")
#: Where the front end decides the rest itself (nbgrade, PrairieLearn): where code runs.
WHERE = ("device", "sandbox")


def add_arguments(parser: argparse.ArgumentParser, names: Iterable[str] = tuple(ARGUMENTS)
                  ) -> None:
    """Add the options ``names`` (keys of ``ARGUMENTS``) to ``parser``: the same flags, choices,
    defaults and help text in every front end."""
    for name in names:
        flag, settings = ARGUMENTS[name]
        parser.add_argument(flag, **settings)
