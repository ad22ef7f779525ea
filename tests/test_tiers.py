"""The fast tier stays honest (tests/conftest.py decides the tiers).

``make test`` must still exercise every stage, every front end and at least one attack of each
class; ``make test-all`` adds the rest. These tests read what collection saw: this session's,
when it collected the whole of tests/, or else a collection of it in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lumen.stages import STAGE_NAMES
from tests.conftest import COLLECTED, FULL, SAMPLED, SELF_MARKED

TESTS = Path(__file__).resolve().parent

#: What the fast tier must reach, each with the tests (a file, or file::test) that reach it: at
#: least one case of one of them stays fast. The classes of attack are issue 15's, and the
#: isolation attacks of test_grader_attacks.py.
MUST_STAY_FAST: dict[str, list[str]] = {
    # front ends
    "grade (the command line)": ["test_grader_cli.py"],
    "grade-batch": ["test_batch.py"],
    "Gradescope": ["test_gradescope.py"],
    "GitHub Classroom": ["test_classroom.py"],
    "nbgrader": ["test_nbgrader.py"],
    "the handout": ["test_handout.py"],
    "the offline page": ["test_page.py"],
    "the gradebook exports": ["test_exports.py"],
    "lumen's own command line": ["test_lumen_cli.py"],
    # classes of attack
    "fail closed": ["test_fail_closed.py"],
    "given code pinned": ["test_given_code.py"],
    "expected values and structure from the grader": ["test_expected_values.py",
                                                      "test_forgery.py"],
    "source rules": ["test_rules.py"],
    "the device pass": ["test_meta_pass.py"],
    "the wire": ["test_wire.py::test_whatever_the_process_writes_is_the_learners"],
    "escaping": ["test_escaping.py"],
    "isolation: an attack gains nothing": ["test_grader_attacks.py::test_attack_gains_nothing"],
    "isolation: stage processes cannot pool": [
        "test_grader_attacks.py::test_stage_processes_cannot_pool"],
    "isolation: no network": ["test_grader_attacks.py::test_no_network"],
    "isolation: results and repository out of reach": [
        "test_grader_attacks.py::test_results_and_repository_are_out_of_reach"],
    # the grader's verdicts on the variants
    "a correct alternative": ["test_grader_variants.py::test_correct_alternative_gets_full_marks"],
    "a known mistake": ["test_grader_variants.py::test_mistake_is_named"],
}

#: Collects tests/ in a fresh interpreter and writes what tests/conftest.py saw as JSON.
DUMP = """
import json, sys
import pytest

class Dump:
    def pytest_collection_finish(self, session):
        from tests.conftest import COLLECTED, SELF_MARKED
        _, listing = session.config.stash[COLLECTED]
        with open(sys.argv[1], "w") as f:
            json.dump({"listing": [[n, full, sorted(names)] for n, full, names in listing],
                       "self_marked": session.config.stash[SELF_MARKED]}, f)

sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:xdist", "tests"], plugins=[Dump()]))
"""


@pytest.fixture(scope="module")
def collected(request, tmp_path_factory) -> tuple[list[tuple[str, bool, frozenset]], list[str]]:
    """([(node id, full tier?, marker names)] for every test of tests/, [self-marked ids])."""
    whole, listing = request.config.stash[COLLECTED]
    if whole:
        return listing, request.config.stash[SELF_MARKED]
    out = tmp_path_factory.mktemp("tiers") / "collected.json"
    done = subprocess.run([sys.executable, "-c", DUMP, str(out)], cwd=TESTS.parent,
                          capture_output=True, text=True, timeout=600)
    assert out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads(out.read_text())
    return ([(n, full, frozenset(names)) for n, full, names in data["listing"]],
            data["self_marked"])


def _key(nodeid: str) -> tuple[str, str]:
    """("test_x.py", "test_x.py::test_name") of a node id."""
    path, _, name = nodeid.partition("::")
    file = path.rsplit("/", 1)[-1]
    return file, f"{file}::{name.split('[', 1)[0]}"


def test_every_stage_has_fast_tests(collected):
    listing, _ = collected
    fast = set().union(*(names for _, full, names in listing if not full))
    missing = [stage for stage in STAGE_NAMES if stage not in fast]
    assert not missing, (f"no fast test is marked with these stages: {missing}; the fast tier "
                         "grades one correct variant and one known mistake of each stage: fill "
                         + ", ".join(f"tests/variants/{stage}.py" for stage in missing))


def test_every_front_end_and_class_of_attack_has_fast_tests(collected):
    listing, _ = collected
    fast = {key for nodeid, full, _ in listing if not full for key in _key(nodeid)}
    missing = [what for what, where in MUST_STAY_FAST.items() if not fast & set(where)]
    assert not missing, ("the fast tier (make test) no longer reaches these; keep a case of "
                         f"each in it (tests/conftest.py): {missing}")


def test_every_test_file_has_fast_tests_unless_the_table_moves_it_whole(collected):
    listing, _ = collected
    fast = {_key(nodeid)[0] for nodeid, full, _ in listing if not full}
    files = {p.name for p in TESTS.glob("test_*.py")}
    missing = sorted(files - fast - set(FULL))
    assert not missing, ("these files have no test in the fast tier; keep one there, or "
                         f"name the file in tests/conftest.py's FULL, with why: {missing}")


def test_both_tiers_hold_tests(collected):
    listing, _ = collected
    assert any(full for _, full, _ in listing) and not all(full for _, full, _ in listing)


def test_the_tables_name_tests_that_exist(collected):
    """A renamed test or file must not leave a stale entry that tiers nothing."""
    listing, _ = collected
    known = {key for nodeid, _, _ in listing for key in _key(nodeid)}
    named = [*FULL, *SAMPLED, *(k for where in MUST_STAY_FAST.values() for k in where)]
    stale = [key for key in named if key not in known]
    assert not stale, f"tests/conftest.py or test_tiers.py names what is not collected: {stale}"


def test_the_tiers_are_decided_in_conftest_only(collected):
    _, self_marked = collected
    assert not self_marked, ("these tests mark themselves `slow`; put them in tests/conftest.py's "
                             f"FULL or SAMPLED (with why) instead: {self_marked}")
