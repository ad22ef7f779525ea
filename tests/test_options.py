"""One options object (``autograder/options.py``): declared once, the same in every front end,
carried to the batch's grading processes as JSON and rebuilt equal, and each default and
choice list written once in the grader."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autograder import ROOT, options
from autograder.__main__ import command_line
from autograder.boundary import launcher
from autograder.frontends import gradescope, prairielearn
from autograder.options import ARGUMENTS, Limits, Options
from lumen.stages import STAGE_NAMES


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _prairielearn() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    prairielearn.add_options(parser)
    return parser


def front_ends() -> dict[str, argparse.ArgumentParser]:
    """Every command line that configures grading, by name."""
    return {**_commands(command_line()), "launcher": launcher.command_line(),
            "prairielearn (its own)": _prairielearn()}


def _action(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


@pytest.mark.parametrize("flag", ["--device", "--sandbox"])
def test_where_code_runs_is_declared_once_for_every_front_end(flag):
    """--device and --sandbox: the same choices, default and help text wherever grading runs
    (grade, grade-batch, nbgrade, prairielearn, the sandbox check)."""
    name = flag.removeprefix("--")
    _, declared = ARGUMENTS[name]
    seen = {}
    for command, parser in front_ends().items():
        action = _action(parser, flag)
        if action is None:
            continue
        seen[command] = (tuple(action.choices), action.default, action.help)
    wanted = {"grade", "grade-batch", "nbgrade", "prairielearn"} | (
        {"launcher"} if flag == "--sandbox" else set())
    assert wanted <= set(seen), sorted(seen)
    assert set(seen.values()) == {(declared["choices"], declared["default"], declared["help"])}


def test_the_batch_offers_every_class_option_and_grade_every_option():
    commands = _commands(command_line())
    for command, names in (("grade", ARGUMENTS), ("grade-batch", options.CLASS)):
        for name in names:
            flag, declared = ARGUMENTS[name]
            action = _action(commands[command], flag)
            assert action is not None and action.help == declared["help"], (command, flag)


def test_help_quotes_the_defaults_it_has():
    """A help text saying "(default X)" is right about X: each default is written once, and
    the help reads it from there."""
    checked = 0
    parsers = {**front_ends(), "gradescope build": gradescope.command_line()}
    for command, parser in parsers.items():
        for action in parser._actions:
            quoted = re.search(r"default ([\w.-]+)\)", action.help or "")
            if quoted and action.default is not None and not isinstance(action.default, Path):
                assert quoted[1] == f"{action.default:g}" if isinstance(
                    action.default, float) else quoted[1] == str(action.default), (command, action)
                checked += 1
    assert checked >= 5


def test_gradescope_build_and_grade_share_the_visibilities():
    build = _action(gradescope.command_line(), "--visibility")
    grade = _action(_commands(command_line())["grade"], "--visibility")
    assert tuple(build.choices) == tuple(grade.choices) == options.VISIBILITIES
    assert build.default == grade.default == options.DEFAULT_VISIBILITY
    assert set(prairielearn.VISIBILITIES) < set(options.VISIBILITIES)


def test_the_command_line_builds_the_options():
    args = command_line().parse_args(
        ["grade", "lumen", "--device", "cpu", "--sandbox", "unsafe-process", "--stage",
         "tying,embedding", "--stage", "embedding", "--probe-seconds", "3.5",
         "--visibility", "hidden", "--seed", "7"])
    assert Options.from_args(args) == Options(
        device="cpu", sandbox="unsafe-process", stages=("embedding", "tying"),
        limits=Limits(probe_seconds=3.5), visibility="hidden", seed=7)
    assert Options.from_args(command_line().parse_args(["grade"])) == Options()
    nbgrade = command_line().parse_args(["nbgrade", "class", "--device", "cpu"])
    assert Options.from_args(nbgrade) == Options(device="cpu")


OPTIONS = st.builds(
    Options,
    device=st.sampled_from(options.DEVICES), sandbox=st.sampled_from(options.SANDBOXES),
    limits=st.builds(Limits, probe_seconds=st.floats(0.5, 600),
                     memory_bytes=st.integers(1, 1 << 40)),
    stages=st.none() | st.lists(st.sampled_from(STAGE_NAMES), min_size=1),
    visibility=st.sampled_from(options.VISIBILITIES), seed=st.none() | st.integers(0, 2**31))


@given(OPTIONS)
def test_the_grading_processes_rebuild_the_same_options(chosen):
    """What the batch sends each grading process (``--serve CONFIG``, JSON) gives back the
    options it was built from."""
    config = json.loads(json.dumps({"options": chosen.to_json()}))
    assert Options.from_json(config["options"]) == chosen


def test_options_that_cannot_be_used_are_refused_with_the_choices():
    with pytest.raises(ValueError, match="--device 'tpu': the choices are auto, cpu, cuda"):
        Options(device="tpu")
    with pytest.raises(ValueError, match="unknown stage"):
        Options(stages=["embeding"])
    with pytest.raises(ValueError, match="unknown grading option"):
        Options.from_json({**Options().to_json(), "probe_second": 3})
    assert Options(stages=[]).stages is None  # no stage named: every stage, as --stage ","


#: Facts each written once in the grader: what -> (a pattern of its value, its one home).
ONCE = {
    "the devices": (r"\(\"auto\", \"cpu\", \"cuda\"\)", "options.py"),
    "Gradescope's visibilities": (r"\"hidden\", \"after_due_date\", \"after_published\"",
                                  "options.py"),
    "the default visibility": (r"= \"after_due_date\"", "options.py"),
    "the sandbox memory bound": (r"\b8 ?(<< ?30|\* ?GiB)\b", "options.py"),
    "the probe time": (r"probe_seconds: float = ", "options.py"),
    "nbgrade's feedback choices": (r"\"scores\", \"messages\"", "options.py"),
    "nbgrader's late penalties": (r"\"none\", \"zero\"", "options.py"),
    "the ids' integer dtypes": (r"\(torch\.int8, torch\.int16, torch\.int32",
                                "suites/promises/sweeps.py"),
}


@pytest.mark.parametrize("what", sorted(ONCE))
def test_each_fact_is_written_once(what):
    pattern, home = ONCE[what]
    found = [f"{path.relative_to(ROOT / 'autograder')}:{number}"
             for path in sorted((ROOT / "autograder").rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(pattern, line)]
    assert len(found) == 1 and found[0].startswith(f"{home}:"), found


def test_the_edge_vocabularies_cover_every_integer_dtype():
    from autograder.suites.promises.sweeps import EDGE_VOCAB, INTEGER_DTYPES

    assert sorted(map(str, EDGE_VOCAB)) == sorted(map(str, INTEGER_DTYPES))


def test_a_class_is_never_graded_under_one_seed(tmp_path):
    """--seed replays one learner's run; a batch under one seed would give every learner the
    same inputs, so it is refused before anything is read or written."""
    from autograder.frontends import batch

    with pytest.raises(ValueError, match="fresh seed per learner"):
        batch.run(tmp_path / "class", tmp_path / "grades.csv", Options(seed=1))
    assert not list(tmp_path.iterdir())
