"""The "written by hand" tests: a stage's banned built-in, judged outside the learner's reach.

Two witnesses, and the verdict takes the stricter:

1. **The source**, read here in the grader with ``lumen/rules.py`` (the checker the learners'
   visible tests run too, as ``exercises/rules.py``): a banned name in live code, or any
   construct that could switch off or fool the in-process recorder or rewrite a reply
   (``eval``, ``gc``, threads, ``torch._C``, a computed ``getattr``, ...), fails the test, and
   the message names the line and the rule. Learner code cannot touch this check: it never
   runs in this process.
2. **The recorder** in the learner's process (``record_calls`` in sandboxed/probes.py): the
   torch functions and ATen operators that ran, in every thread. It can only add a finding
   (a banned operator reached through code the source check cannot follow, such as a library
   that calls it), never clear one: learner code could have silenced it.

Only these tests depend on either witness; every other test earns its points from values.
"""

from __future__ import annotations

from collections.abc import Mapping

from autograder.suites.feedback import Mistake
from lumen import rules

RULES = "the rules at the top of embeddings.py (and exercises/rules.py, which checks them)"


def judge(files: Mapping[str, str], stage: str, reply: Mapping, lesson: str) -> None:
    """Fail with ``lesson`` (the stage's teaching message) when the submitted ``files`` or the
    recorded calls in ``reply`` show the stage's banned built-in; fail naming the line when the
    files hold a refused construct; else pass."""
    findings = rules.check(files, stage)
    banned = [f for f in findings if f.banned]
    refused = [f for f in findings if not f.banned]
    recorded = rules.banned_calls(reply.get("calls") or (), stage)
    if banned or recorded:
        seen = [str(f) for f in banned[:3]]
        if recorded and not banned:
            seen.append(f"recorded while your code ran: {', '.join(recorded)}")
        also = f"; also refused: {refused[0]}" if refused else ""
        raise Mistake(f"{lesson} (found: {'; '.join(seen)}{also})")
    if refused:
        raise Mistake(
            "the result is right, but the grader refuses code in your files that could hide "
            f"what your code calls from it: {rules.explain(refused, limit=3)}. Remove it (see "
            f"{RULES}): only this test depends on it"
        )
