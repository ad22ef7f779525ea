"""The one record of a graded submission: ``Grade``'s versioned JSON form (autograder/results.py).

Every front end reads a ``Grade`` back from it, so reading must give back exactly what was
written, and refuse, with a message naming the problem, anything that is not such a record:
its strings came from learner code, and the file may be from another grader or damaged.
"""

from __future__ import annotations

import json
import random

import pytest

from autograder import mistakes
from autograder.results import RECORD_VERSION, Grade, RecordError, StageGrade, TestResult
from lumen.stages import STAGE_NAMES

#: Text a learner's code may have put in a message, printed output or a note.
HOSTILE = ["", "plain", "quote \" and \\ backslash", "\x1b[31mred\x1b[0m", "line\nbreak",
           "ünïcödé ✓ 🙂", "{\"version\": 2}", "\u2028\u2029", "a" * 3000]


def random_grade(seed: int) -> Grade:
    """A Grade of some stages (the rest not graded), with every kind of failure."""
    rng = random.Random(seed)
    chosen = sorted(rng.sample(STAGE_NAMES, rng.randint(1, len(STAGE_NAMES))),
                    key=STAGE_NAMES.index)
    kinds = list(mistakes.EVERY_KIND)
    stages = []
    for stage in chosen:
        rows = []
        for n in range(rng.randint(1, 6)):
            passed = rng.random() < 0.4
            result = TestResult(
                name=f"test_{n}_{rng.choice(HOSTILE)[:20]}", stage=stage,
                title=rng.choice(HOSTILE), passed=passed,
                message="" if passed else rng.choice(HOSTILE),
                not_implemented=not passed and rng.random() < 0.3,
                seconds=rng.random() * 3, output=rng.choice(HOSTILE),
                kind=mistakes.MISTAKE if passed else kinds[(seed + n) % len(kinds)])
            most = rng.choice([0.0, 1.0, 2.5, 5.0, 1 / 3])
            rows.append((result, most if passed else 0.0, most))
        stages.append(StageGrade(stage, sum(r[1] for r in rows), rng.choice([15.0, 20.0]), rows))
    return Grade(submission=rng.choice(HOSTILE), stages=stages, seed=rng.randrange(2**31),
                 devices=rng.choice([["cpu"], ["cpu", "cuda"]]), sandbox="bwrap",
                 seconds=rng.random() * 30, notes=rng.sample(HOSTILE, 3),
                 operator_notes=rng.sample(HOSTILE, 2),
                 not_graded=[s for s in STAGE_NAMES if s not in chosen],
                 made_by={"grader": f"{seed:064x}", "rubric": "0" * 64} if seed % 2 else {},
                 graded_from=f"{seed:064x}" if seed % 3 else "")


@pytest.mark.parametrize("seed", range(12))
def test_a_record_reads_back_equal(seed):
    grade = random_grade(seed)
    assert Grade.from_json(grade.to_json()) == grade
    through_text = json.loads(json.dumps(grade.to_json()))  # as a file holds it
    assert Grade.from_json(through_text) == grade
    assert through_text["version"] == RECORD_VERSION
    data = grade.to_json()  # a record shares no list with its Grade, either way
    data["notes"].append("added later")
    data["made_by"]["grader"] = "another"
    assert grade == random_grade(seed)
    Grade.from_json(through_text).notes.append("added later")
    assert through_text["notes"] == grade.notes


def test_every_kind_and_every_field_survives():
    grades = [random_grade(seed) for seed in range(12)]
    kinds = {r.kind for g in grades for s in g.stages for r, _, _ in s.tests if not r.passed}
    assert kinds == set(mistakes.EVERY_KIND)
    assert all(g.notes and g.operator_notes for g in grades)
    assert any(g.not_graded for g in grades) and any(g.made_by for g in grades)
    assert any(g.graded_from for g in grades)


def _broken(change) -> dict:
    data = json.loads(json.dumps(random_grade(3).to_json()))
    change(data)
    return data


def _first_test(data: dict) -> dict:
    return data["stages"][0]["tests"][0]


@pytest.mark.parametrize("change, says", [
    (lambda d: d.update(version=RECORD_VERSION + 1), f"version {RECORD_VERSION + 1}"),
    (lambda d: d.update(version=1), "version 1"),  # before graded_from
    (lambda d: d.update(version=True), "version True"),
    (lambda d: d.pop("version"), "missing or unknown fields: version"),
    (lambda d: d.pop("notes"), "missing or unknown fields: notes"),
    (lambda d: d.update(score=100), "missing or unknown fields: score"),
    (lambda d: d.update(seed="7"), "seed is not a int"),
    (lambda d: d.update(seed=True), "seed is not a int"),
    (lambda d: d.update(notes=["a", 3]), "notes is not a list[str]"),
    (lambda d: d.update(stages={}), "stages is not a list"),
    (lambda d: d["stages"].append(d["stages"][0]), "a stage twice"),
    (lambda d: d["stages"][0].update(name="hacked"), "stage 'hacked'"),
    (lambda d: d["stages"][0].update(score=1e9), "not the sum"),
    (lambda d: _first_test(d)["result"].update(passed="yes"), "passed is not a bool"),
    (lambda d: _first_test(d)["result"].update(message=None), "message is not a str"),
    (lambda d: _first_test(d)["result"].update(kind="forged"), "stage, kind or points"),
    (lambda d: _first_test(d)["result"].update(stage="init"), "stage, kind or points"),
    (lambda d: _first_test(d).update(score=-1.0), "stage, kind or points"),
    (lambda d: _first_test(d).pop("result"), "missing or unknown fields: result"),
    (lambda d: d["stages"].__setitem__(0, "embedding"), "stage 0 is a str"),
])
def test_what_is_not_a_record_is_refused_with_its_reason(change, says):
    with pytest.raises(RecordError, match=None) as refused:
        Grade.from_json(_broken(change))
    assert says in str(refused.value), str(refused.value)


@pytest.mark.parametrize("data", [None, [], "grade", 1, {"version": 1}])
def test_anything_else_is_refused(data):
    with pytest.raises(RecordError):
        Grade.from_json(data)
