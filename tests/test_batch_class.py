"""A class of 100, end to end: correct, buggy, malformed and hostile submissions in one batch.

Every stage is graded by two warm workers, the hostile learners placed before the honest
ones: every kind of attack the grader withstands (tests/test_grader_attacks.py: crashes,
monkeypatching, fork bombs, filling /tmp, re-forking, pooling between stage processes,
lifting limits; tests/test_forgery.py: forged replies and hidden built-ins;
tests/test_untrusted.py: hostile text; a zip holding a link). Every correct learner still gets
100, every learner at the stubs 0, every known mistake loses points on its stage, every
malformed submission gets a clear message, and no attack gains a point.
``--probe-seconds 3`` keeps the endless loops short.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import zipfile
from pathlib import Path

import pytest

from autograder.boundary.launcher import BwrapLauncher
from autograder.frontends import batch
from autograder.options import Limits, Options
from lumen.stages import STAGE_NAMES, SUBMISSION_FILES
from tests.test_forgery import FORGERIES
from tests.test_grader_attacks import ATTACKS, HONEST, HOSTILE, LIFTING, POOLING
from tests.test_untrusted import ATTACKS as HOSTILE_TEXT
from tests.test_untrusted import RAW
from tests.variants.build import make_submission

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [
    # The hostile learners include a fork bomb: only inside the sandbox (make setup installs it).
    pytest.mark.skipif(BwrapLauncher.find() is None, reason="bubblewrap is not usable here"),
]


def _mistakes() -> list[tuple[str, dict, str]]:
    import importlib

    out = []
    for stage in STAGE_NAMES:
        module = importlib.import_module(f"tests.variants.{stage}")
        for replacements, test, _ in module.MISTAKES.values():
            out.append((stage, replacements, test))
    return out


def _write(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)


def _zip(path: Path, files: dict[str, bytes], prefix: str = "") -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(prefix + name, data)


def _class(root: Path) -> dict[str, tuple[str, object]]:
    """Learner id -> (kind, what to expect). Ids sort hostile first, then the rest."""
    lumen = {n: (ROOT / "lumen" / n).read_bytes() for n in SUBMISSION_FILES}
    stubs = {n: (ROOT / "exercises" / n).read_bytes() for n in SUBMISSION_FILES}
    learners: dict[str, tuple[str, object]] = {}
    hostile = {**ATTACKS, **HOSTILE, "lifting its limits": LIFTING}
    for i, (name, replacements) in enumerate(hostile.items()):
        make_submission(root / f"a{i:02d}-hostile", replacements)
        keeps_init = "embeddings:Embedding.forward" in replacements
        learners[f"a{i:02d}-hostile"] = ("hostile", (name, keeps_init))
    make_submission(root / "a50-pooling", POOLING)
    learners["a50-pooling"] = ("pooling", None)
    forgeries = [n for n in FORGERIES if "gc.get_objects" in n or "thread" in n][:6]
    for i, name in enumerate(forgeries):
        make_submission(root / f"a6{i}-forgery", FORGERIES[name].forged)
        learners[f"a6{i}-forgery"] = ("forgery", name)
    for i, (name, replacements) in enumerate(HOSTILE_TEXT.items()):
        make_submission(root / f"a7{i}-text", replacements)
        learners[f"a7{i}-text"] = ("text", name)
    with zipfile.ZipFile(root / "a80-link.zip", "w") as archive:
        for name, data in lumen.items():
            if name != "embeddings.py":
                archive.writestr(name, data)
        link = zipfile.ZipInfo("embeddings.py")
        link.external_attr = (0o120777 << 16)  # a symbolic link to a file of the grader
        archive.writestr(link, "/etc/passwd")
    learners["a80-link"] = ("link", None)
    malformed = {
        "syntax": {**lumen, "gpt2.py": lumen["gpt2.py"].replace(b"class GPT2(", b"class GPT2((")},
        "missing": {k: v for k, v in lumen.items() if k != "params.py"},
        "latin1": {**lumen, "params.py": b"# \xe9\n" + lumen["params.py"]},
        "no-name": {**lumen, "embeddings.py": lumen["embeddings.py"].replace(
            b"def cosine_neighbours(", b"def cosine_neighbors(")},
        "signature": {**lumen, "params.py": lumen["params.py"].replace(
            b"def count_params(\n    vocab_size: int, d_model: int, n_layers: int, n_ctx: int,",
            b"def count_params(\n    vocab_size: int, d_model: int, n_layers: int,")},
    }
    for i, (kind, files) in enumerate(itertools.islice(itertools.cycle(malformed.items()), 10)):
        _write(root / f"b{i:02d}-{kind}", files)
        learners[f"b{i:02d}-{kind}"] = ("malformed", kind)
    zipfile.ZipFile(root / "b10-empty.zip", "w").close()
    _zip(root / "b11-dotdot.zip", lumen, prefix="../")
    _zip(root / "b12-bomb.zip", {**lumen, "embeddings.py": b"#" * (64 << 20)})
    (root / "b13-notzip.zip").write_text("not a zip")
    _zip(root / "b14-folder.zip", lumen, prefix="learner/exercises/")
    learners.update({"b10-empty": ("malformed", "empty"), "b11-dotdot": ("malformed", "dotdot"),
                     "b12-bomb": ("malformed", "bomb"), "b13-notzip": ("malformed", "notzip"),
                     "b14-folder": ("correct", None)})
    for i, (stage, replacements, test) in enumerate(
            itertools.islice(itertools.cycle(_mistakes()), 12)):
        make_submission(root / f"c{i:02d}-buggy", replacements)
        learners[f"c{i:02d}-buggy"] = ("buggy", (stage, test))
    for i in range(6):
        (_zip(root / f"d{i:02d}-stubs.zip", stubs) if i % 2 else
         _write(root / f"d{i:02d}-stubs", stubs))
        learners[f"d{i:02d}-stubs"] = ("stubs", None)
    for i in range(100 - len(learners)):  # the rest, and b14-folder: correct
        (_zip(root / f"e{i:02d}-correct.zip", lumen) if i % 2 else
         _write(root / f"e{i:02d}-correct", lumen))
        learners[f"e{i:02d}-correct"] = ("correct", None)
    assert len(learners) == 100 and sum(k == "correct" for k, _ in learners.values()) >= 10
    return learners


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    learners = _class(root / "submissions")
    out = root / "grades.csv"
    progress = io.StringIO()
    code = batch.run(root / "submissions", out, Options(limits=Limits(probe_seconds=3)),
                     batch.Batch(jobs=2), progress=progress)
    with open(out, newline="", encoding="utf-8") as f:
        rows = {row["learner"]: row for row in csv.DictReader(f)}
    results = {lid: json.loads((root / "grades" / lid / "results.json").read_text())
               for lid in learners}
    return code, learners, rows, results, progress.getvalue(), root / "grades"


def _stage(results: dict, stage: str) -> dict:
    return results["extra_data"]["stages"][stage]


def test_the_whole_class_is_graded(graded):
    code, learners, rows, _, progress, out_dir = graded
    assert code == 0, progress
    assert set(rows) == set(learners)
    assert (out_dir / "summary.md").is_file()


def test_correct_learners_get_100_whatever_came_before(graded):
    _, learners, rows, _, _, _ = graded
    for lid, (kind, _) in learners.items():
        if kind == "correct":
            assert float(rows[lid]["total"]) == 100, (lid, rows[lid])


def test_stubs_get_0(graded):
    _, learners, rows, _, _, _ = graded
    for lid, (kind, _) in learners.items():
        if kind == "stubs":
            assert float(rows[lid]["total"]) == 0, (lid, rows[lid])


def test_every_mistake_loses_points_on_its_stage(graded):
    _, learners, _, results, _, _ = graded
    for lid, (kind, detail) in learners.items():
        if kind == "buggy":
            stage, test = detail
            failed = {t["name"] for t in results[lid]["tests"] if t["status"] == "failed"}
            assert any(name.startswith(f"{stage}:") for name in failed), (lid, detail)
            assert _stage(results[lid], stage)["score"] < _stage(results[lid], stage)["max_score"]


def test_malformed_submissions_are_told_why(graded):
    _, learners, rows, results, _, _ = graded
    words = {"syntax": "SyntaxError", "missing": "params.py is missing", "latin1": "not UTF-8",
             "no-name": "has no cosine_neighbours", "empty": "missing", "dotdot": "../",
             "bomb": "larger than", "notzip": "not a"}
    for lid, (kind, detail) in learners.items():
        if kind != "malformed":
            continue
        text = json.dumps(results[lid]) + rows[lid].get("notes", "")
        assert detail in words or detail == "signature", detail
        if detail == "signature":
            # Checks that call count_params with n_ctx lose their points and say why; the
            # stage's other functions keep theirs (partial credit, not a zero for the file).
            params = _stage(results[lid], "params")
            assert 0 < params["score"] < params["max_score"], lid
            assert "unexpected keyword argument 'n_ctx'" in text, lid
            assert float(rows[lid]["total"]) < 100, lid
            continue
        assert words.get(detail, "") in text, (lid, detail)
        assert float(rows[lid]["total"]) < 100, lid


def test_no_attack_gains_a_point(graded):
    """At most the honest __init__ check passes (when only forward was replaced)."""
    _, learners, _, results, _, _ = graded
    for lid, (kind, detail) in learners.items():
        if kind != "hostile":
            continue
        name, keeps_init = detail
        passed = [t["name"] for t in results[lid]["tests"]
                  if t["status"] == "passed" and t["tags"] == ["embedding"]]
        assert len(passed) <= (len(HONEST) if keeps_init else 0), (name, passed)


def test_no_stage_process_heard_a_sibling(graded):
    _, learners, _, results, _, _ = graded
    for lid, (kind, _) in learners.items():
        if kind == "pooling":
            heard = [t["output"] for t in results[lid]["tests"] if "heard:" in t["output"]]
            assert heard and all("heard: []" in h for h in heard), heard


def _title(stage: str, test: str) -> str:
    """A hidden test's title in results.json: its stage and its docstring's first sentence."""
    import importlib

    from autograder.suites.plugin import check_title

    function = getattr(importlib.import_module(f"autograder.suites.test_{stage}"), test)
    return f"{stage}: {check_title(function.__doc__, test)}"


def test_forgeries_steal_nothing(graded):
    _, learners, _, results, _, _ = graded
    for lid, (kind, name) in learners.items():
        if kind != "forgery":
            continue
        forgery = FORGERIES[name]
        status = {t["name"]: t["status"] for t in results[lid]["tests"]}
        stolen = [test for test in forgery.stolen
                  if status[_title(forgery.stage, test)] == "passed"]
        assert not stolen, (name, stolen)


def test_hostile_text_stays_data(graded):
    _, learners, rows, results, _, out_dir = graded
    for lid, (kind, name) in learners.items():
        if kind != "text":
            continue
        assert lid in rows, name
        feedback = (out_dir / lid / "feedback.txt").read_text(encoding="utf-8")
        assert not RAW.search(feedback.replace("\n", "").replace("\t", "")), (name, feedback)


def test_a_link_in_a_zip_is_refused(graded):
    _, learners, rows, results, _, _ = graded
    for lid, (kind, _) in learners.items():
        if kind == "link":
            assert "symbolic link" in json.dumps(results[lid]) + rows[lid]["notes"]
            assert "root:" not in json.dumps(results[lid]), "the link was followed"
            assert float(rows[lid]["total"]) < 100


# --- the class summary: what to re-teach --------------------------------------------------------


def _planted() -> dict[str, tuple[str, str, str]]:
    """The buggy learners as ``_class`` plants them: id -> (stage, test, the words its
    message must hold), from tests/variants' MISTAKES in ``_mistakes``'s order."""
    import importlib

    every = [(stage, test, words) for stage in STAGE_NAMES
             for _, test, words in importlib.import_module(f"tests.variants.{stage}")
             .MISTAKES.values()]
    return {f"c{i:02d}-buggy": planted  # _class's twelve buggy learners
            for i, planted in enumerate(itertools.islice(itertools.cycle(every), 12))}


def test_the_summary_has_one_row_per_planted_mistake(graded):
    """Each distinct planted mistake is one row of summary.md's table (one mistake id, whatever
    the learner's seed), every learner planted with it in that row, each learner once in every
    row; code that never ran (the syntax errors, the endless loop, the crashes) is one row per
    kind, not a row per check it cost."""
    from collections import defaultdict

    from tests.test_batch import mistakes_table

    _, learners, _, results, _, out_dir = graded
    table = mistakes_table((out_dir / "summary.md").read_text(encoding="utf-8"))
    by_id = {row["id"]: row for row in table}
    assert len(by_id) == len(table), "one row per mistake id"
    for row in table:
        assert len(set(row["who"])) == len(row["who"]) == row["learners"], row
    ids_of = {lid: {m["id"] for m in results[lid]["extra_data"]["mistakes"]} for lid in learners}
    for found, row in by_id.items():  # each row counts exactly the learners who made it
        assert set(row["who"]) == {lid for lid, ids in ids_of.items() if found in ids}, found

    groups: dict[tuple[str, str, str], set[str]] = defaultdict(set)  # planted -> its ids
    planted = _planted()
    for lid, (stage, test, words) in planted.items():
        assert learners[lid] == ("buggy", (stage, test)), "_class plants another way now"
        diagnosed = {m["id"] for m in results[lid]["extra_data"]["mistakes"]
                     if m["test"] == test and words in m["message"]}
        assert len(diagnosed) == 1, (lid, words, diagnosed)
        groups[(stage, test, words)] |= diagnosed
    assert all(len(ids) == 1 for ids in groups.values()), \
        f"one planted mistake, two ids on two seeds: {groups}"
    rows = {next(iter(ids)) for ids in groups.values()}
    assert len(rows) == len(groups), "two planted mistakes share a row"
    for (stage, test, words), ids in groups.items():
        row = by_id[next(iter(ids))]
        assert {lid for lid, p in planted.items() if p == (stage, test, words)} <= set(row["who"])
        assert row["stages"] == [stage] and row["message"].count(words) >= 1, row

    kinds = {row["id"]: row for row in table if "/" not in row["id"]}
    syntax = [lid for lid, (kind, detail) in learners.items() if detail == "syntax"]
    endless = [lid for lid, (kind, detail) in learners.items()
               if kind == "hostile" and detail[0] == "an infinite loop"]
    crashing = [lid for lid, (kind, detail) in learners.items()
                if kind == "hostile" and detail[0] in ("os._exit in a test",
                                                       "a segfault through ctypes")]
    assert syntax and endless and crashing
    for lid in syntax:  # gpt2.py does not import: the many checks it costs are one row
        cost = [m["id"] for m in results[lid]["extra_data"]["mistakes"]
                if "could not be imported" in m["message"]]
        assert len(cost) >= 5 and set(cost) == {"import-failure"}, (lid, cost)
        assert lid in kinds["import-failure"]["who"]
    assert set(endless) <= set(kinds["timeout"]["who"])
    assert set(crashing) <= set(kinds["crash"]["who"])
