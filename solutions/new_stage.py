"""Write the skeleton of a new stage for a maintainer to fill: ``make new-stage STAGE=<name>``.

The stage must already be in lumen/stages.py, its functions in lumen/ (the recipe's first
step, docs/changing-the-assignment.md). This writes the stage's probe module, hidden suite,
promise table, visible tests and variants, and registers them where the grader lists its
stages' pieces (the probe table, the reply schemas, the scaffolds, the rubric). Every piece it
writes says SKELETON where the maintainer has work to do, and tests/test_stage_lists.py fails,
naming the file, until none is left. It never overwrites a file, and it changes nothing when
any file it would write exists already.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from autograder.publish import SKELETON
from lumen.stages import STAGES, Stage

ROOT = Path(__file__).resolve().parent.parent
MARK = SKELETON  # what tests/test_stage_lists.py looks for in a stage's files
#: The files that list every stage's pieces, where ``registrations`` adds a new stage's.
REGISTRIES = ("autograder/sandboxed/probes/__init__.py", "autograder/boundary/replies.py",
              "autograder/sandboxed/scaffolds.py", "autograder/rubric.toml")

PROBE = '''"""The {name} stage's probes (suites/test_{name}.py).

{Title}.
{MARK}: each probe calls a function of the learner's on the grader's arguments and
returns what came out, as data; it decides nothing (probes/__init__.py says why).
"""

from __future__ import annotations

from .shared import {imports}


{probes}

#: This stage's probes, by the names its suite calls (the registry: probes/__init__.py).
PROBES = ({names},)
'''

FUNCTION_PROBE = '''def {probe}(m, arguments: dict, positional: int | None = None):
    """``{qualname}(**arguments)`` on the grader's arguments ({MARK}: say which), and the
    tensor arguments afterwards (``_watched``)."""
    tensors = {{k: v for k, v in arguments.items() if hasattr(v, "_version")}}
    function = m["{module}"].{qualname}
    return _watched(lambda: _call(function, arguments, positional), **tensors)
'''

METHOD_PROBE = '''def {probe}(m, arguments: dict, positional: int | None = None):
    """``{qualname}`` on an object the grader builds ({MARK}: build it, load the grader's
    state into it, call the method, return what came out)."""
    raise ProbeError("{MARK}: write the probe of {qualname} in probes/{name}.py")
'''

SUITE = '''"""Hidden tests, stage '{name}'.

{Title}.
{MARK}: say what is compared with what (lumen's functions, on the grader's inputs) and why
a learner who keeps the docstring's promises passes.
"""

from __future__ import annotations

from autograder.suites.feedback import Mistake, unwrap
from lumen import {module} as ref

STAGE = "{name}"
MODULE = "{module}"

#: Hidden test -> the visible tests (exercises/tests/test_{name}.py) of the same requirement.
VISIBLE: dict[str, tuple[str, ...]] = {{
{visible}}}
{tests}'''

SUITE_TEST = '''

def {test}(learner, seed, gen):
    """{qualname} keeps its promises ({MARK}: say which, in the chapter's words)"""
    arguments: dict = {{}}  # {MARK}: inputs the docstring allows, at the edges (promises/)
    what = "{qualname}(...)"
    result = unwrap(learner.call("{probe}", seed=seed, arguments=arguments), what, MODULE)
    expected = ref.{qualname}(**arguments)
    if result["out"] != expected:  # {MARK}: compare as the promise says, exactly where exact
        raise Mistake(f"{{what}}: got {{result['out']}}, expected {{expected}}")
'''

PROMISES = '''"""Stage '{name}': every promise of {functions}, and the check that holds it.

{MARK}: one row per promise of the stubs' docstrings (tests/test_promises.py says which).
"""

from __future__ import annotations

from autograder.suites.promises import Promise

PROMISES: list[Promise] = []
'''

VISIBLE_TESTS = '''"""Stage '{name}' (chapter: "{section}").

{Title}.
{MARK}: the references these tests compare with (PyTorch's built-ins, published numbers).
"""

import pytest

pytestmark = pytest.mark.{name}
{tests}'''

VISIBLE_TEST = '''

def {test}({package}):
    """{MARK}: check a rule of {qualname}'s docstring on inputs of your own."""
    pytest.fail("{MARK}: write this visible test in exercises/tests/test_{name}.py")
'''

VARIANTS = '''"""Stage '{name}': correct variants, and the mistakes its hidden suite names.

{MARK}: fill both (tests/test_grader_variants.py grades every entry).
"""

#: Name -> {{"module:Qual.name": source}}: correct code written differently from lumen's.
CORRECT: dict[str, dict[str, str]] = {{}}

#: Name -> (replacements, the hidden test that must fail, words its message must hold).
MISTAKES: dict[str, tuple[dict[str, str], str, str]] = {{}}
'''


def probe_name(key: str) -> str:
    """A function's probe: its name, ``Class.method`` as ``class_method``."""
    return key.split(":", 1)[1].replace(".", "_").lower().lstrip("_")


def files(stage: Stage) -> dict[str, str]:
    """The new files of ``stage``'s skeleton, path -> text."""
    name, owned = stage.name, [key.split(":", 1) for key in stage.owns]
    modules = sorted({module for module, _ in owned})
    probes, tests, visible, visible_tests = [], [], [], []
    for module, qualname in owned:
        probe = probe_name(f"{module}:{qualname}")
        template = METHOD_PROBE if "." in qualname else FUNCTION_PROBE
        probes.append(template.format(probe=probe, qualname=qualname, module=module,
                                      name=name, MARK=MARK))
        test = f"test_{probe}_keeps_its_promises"
        tests.append(SUITE_TEST.format(test=test, qualname=qualname, probe=probe, MARK=MARK))
        visible.append(f'    "{test}": ("{test}",),\n')
        visible_tests.append(VISIBLE_TEST.format(test=test, qualname=qualname, MARK=MARK,
                                                 name=name, package=module))
    facts = {"name": name, "title": stage.title, "section": stage.section, "MARK": MARK,
             "Title": stage.title[:1].upper() + stage.title[1:]}
    return {
        f"autograder/sandboxed/probes/{name}.py": PROBE.format(
            probes="\n\n".join(probes),
            imports=", ".join(sorted({"_call", "_watched"} | (
                {"ProbeError"} if any("." in q for _, q in owned) else set()))),
            names=", ".join(probe_name(k) for k in stage.owns), **facts),
        f"autograder/suites/test_{name}.py": SUITE.format(
            module=modules[0], visible="".join(visible), tests="".join(tests), **facts),
        f"autograder/suites/promises/{name}.py": PROMISES.format(
            functions=", ".join(q for _, q in owned), **facts),
        f"exercises/tests/test_{name}.py": VISIBLE_TESTS.format(
            tests="".join(visible_tests), **facts),
        f"tests/variants/{name}.py": VARIANTS.format(**facts),
    }


def _insert(text: str, anchor: str, addition: str, where: str, after: str = "") -> str:
    """``text`` with ``addition`` just before the first match of ``anchor`` (a regex) that
    comes after ``after``."""
    start = text.find(after)
    match = re.compile(anchor, re.MULTILINE).search(text, max(start, 0))
    if start < 0 or match is None:
        raise SystemExit(f"new-stage: cannot find where to register the stage in {where} "
                         f"(looked for {anchor!r} after {after!r}); add it by hand")
    return text[:match.start()] + addition + text[match.start():]


def registrations(stage: Stage, root: Path) -> dict[str, str]:
    """The registries that list every stage's pieces, with ``stage`` added: path -> text."""
    name, probes = stage.name, [probe_name(k) for k in stage.owns]
    out = {}
    path = REGISTRIES[0]
    text = (root / path).read_text(encoding="utf-8")
    text = re.sub(r"^from \. import ([\w, ]+)$", lambda m: "from . import " + ", ".join(
        sorted({*m[1].split(", "), name})), text, count=1, flags=re.M)
    text = re.sub(r"^(STAGE_MODULES = \([\w, ]+)\)", rf"\1, {name})", text, count=1, flags=re.M)
    out[path] = text
    path = REGISTRIES[1]
    schemas = "".join(f'    "{p}": watched(),  # {MARK}: the tensors it returns as inputs\n'
                      for p in probes)
    out[path] = _insert((root / path).read_text(encoding="utf-8"), r"^}", schemas, path,
                        after="SCHEMAS: dict")
    path = REGISTRIES[2]
    scaffolds = f"    # {name} ({MARK}: a stand-in another stage can build on, if one needs it)\n"
    scaffolds += "".join(f'    "{k}": _stand_in("{k}", "{name}"),\n' for k in stage.owns)
    out[path] = _insert((root / path).read_text(encoding="utf-8"), r"^}", scaffolds, path,
                        after="SCAFFOLDS: dict")
    path = REGISTRIES[3]
    section = f"[{name}]\n" + "".join(f"test_{p}_keeps_its_promises = 1\n" for p in probes)
    out[path] = _insert((root / path).read_text(encoding="utf-8"), r"^# Written answers",
                        section + "\n", path)
    return out


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(prog="python -m solutions.new_stage", description=__doc__)
    parser.add_argument("stage", help="the new stage's name, as in lumen/stages.py")
    name = parser.parse_args(argv).stage
    stage = next((s for s in STAGES if s.name == name), None)
    if stage is None:
        print(f"new-stage: no stage {name!r} in lumen/stages.py: add its Stage there first "
              "(name, title, chapter section, the functions it owns), then run this again",
              file=sys.stderr)
        return 2
    new = files(stage)
    there = [path for path in new if (root / path).exists()]
    if there:
        print(f"new-stage: {', '.join(there)} exist already: nothing written (this never "
              "overwrites a file; move them away to start again)", file=sys.stderr)
        return 2
    edits = registrations(stage, root)
    for path, text in {**new, **edits}.items():
        (root / path).write_text(text, encoding="utf-8")
    print(f"Stage {name}: wrote {len(new)} files and registered it in {len(edits)}:")
    for path in [*new, *edits]:
        print(f"  {path}")
    print(f"Next: fill every {MARK} (tests/test_stage_lists.py names the files left); give "
          "the stage's checks their points in autograder/rubric.toml, the whole still adding "
          "up to 100; then make release and make test.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
