"""The "written by hand" tests: a stage's banned built-in, judged outside the learner's reach.

The verdict comes from **the source** alone, read here with ``autograder/rules/`` (which the
learners' visible tests run too, as ``exercises/rules/``): a banned name in live code fails the
test with the stage's lesson; a construct that could call a built-in without naming it fails it
naming the line and the rule. **The recorder** in the learner's process
(``sandboxed/probes/recorder.py``) only explains: it never decides a point.

Each test names what it needs (``Check``): the ban, the rules and the files. **Certified
observations** (``certify``): a check of something only the learner's process can see (ids
left unchanged, a Parameter, one shared table) earns its points when the same rules, without
any stage's ban, find nothing that could reach into that process; a learner whose source is
clean loses nothing to it (docs/threat-model.md, the rule for points).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from autograder import rules
from autograder.suites.feedback import Mistake

RULES = "the rules at the top of embeddings.py (and exercises/rules/, which checks them)"


@dataclass(frozen=True)
class Check:
    """What one "written by hand" test needs from the learner's source."""

    test: str  # the hidden test's name
    ban: str  # the stage whose ban it enforces (rules.BANS)
    # The rules it applies: the ban's own names and the modules that call it for you
    # ("banned"), and every way to call a built-in without naming it (rules.EVASIONS).
    kinds: tuple[str, ...]
    # The files it reads: every file that runs in the process that runs the stage's code.
    # The worker imports all three into every stage's process, so code in params.py could
    # hand a built-in to embeddings.py (``torch.Tensor.rows = <F.embedding, unnamed>``).
    files: tuple[str, ...]


EMBEDDING = Check("test_no_builtin_embedding", "embedding", ("banned", *rules.EVASIONS),
                  rules.FILES)
ONEHOT = Check("test_one_hot_written_by_hand", "onehot", ("banned", *rules.EVASIONS),
               rules.FILES)
CHECKS = {check.test: check for check in (EMBEDDING, ONEHOT)}
#: What ``certify`` applies: every way to reach into the learner's process, no ban.
CERTIFIED = Check("(observed in your process)", "", rules.EVASIONS, rules.FILES)


def findings(files: Mapping[str, str], check: Check) -> list[rules.Finding]:
    """What ``check`` finds in the submitted ``files``: the verdict, from the source alone."""
    found = _read(tuple(sorted(files.items())), check.ban or None, check.files)
    return [f for f in found if f.kind in check.kinds]


@functools.lru_cache(maxsize=16)
def _read(files: tuple[tuple[str, str], ...], ban: str | None,
          among: tuple[str, ...]) -> tuple[rules.Finding, ...]:
    """``rules.check`` (a function of the text alone: ~60 ms a check), kept for the next call
    with the same files: ``prefetch`` reads them before the grader forks."""
    return tuple(rules.check(dict(files), ban, among=among))


def prefetch(files: Mapping[str, str], stages: list[str] | None = None) -> None:
    """The checks of ``stages`` (None: all) read now: a grade calls this while the worker
    starts, so the forks that run the tests (``autograder/forks.py``) inherit the reading
    instead of each making its own while the learner's stage processes wait."""
    for check in CHECKS.values():
        if stages is None or check.ban in stages:
            findings(files, check)
    findings(files, CERTIFIED)


def judge(files: Mapping[str, str], check: Check, reply: Mapping, lesson: str) -> None:
    """Fail with ``lesson`` (the stage's teaching message) when the submitted ``files`` show
    the banned built-in; fail naming the line when they hold a way around the ban; else pass.
    ``reply``'s recorded calls (from the learner's process) only add to a failing message."""
    found = findings(files, check)
    banned = [f for f in found if f.banned]
    refused = [f for f in found if not f.banned]
    if banned:
        also = f"; also refused: {refused[0]}" if refused else ""
        raise Mistake(f"{lesson} (found: {'; '.join(str(f) for f in banned[:3])}{also})")
    if refused:
        calls = reply.get("calls")
        ran = rules.banned_calls(calls if isinstance(calls, list) else (), check.ban)
        seen = (f" (and {', '.join(ran)} ran while your code ran)" if ran else "")
        raise Mistake(
            "the result is right, but the grader refuses code in your files that could call "
            f"{rules.BANS[check.ban].what} without naming it{seen}: "
            f"{rules.explain(refused, limit=3)}. Remove it (see {RULES}): only the \"written "
            "by hand\" tests depend on it"
        )


def certify(files: Mapping[str, str], what: str) -> None:
    """Pass when the submitted ``files`` hold no way to reach into the learner's process (the
    rules' refusals, ``rules.EVASIONS``, no ban): then ``what``, which that process observed
    and the check found right, can be trusted. Else a Mistake naming the lines: a check calls
    this last, once the observation itself has passed."""
    refused = findings(files, CERTIFIED)
    if refused:
        raise Mistake(
            f"{what} looked right, but it was seen inside your process and the grader refuses "
            f"code in your files that could change what that process sees: "
            f"{rules.explain(refused, limit=3)}. Remove it (see {RULES}): a check that reads "
            "what your code's process reports depends on these rules"
        )
