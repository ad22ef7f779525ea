"""A class of 100, end to end: correct, buggy, malformed and hostile submissions in one batch.

All six stages are graded by two warm workers, the hostile learners placed before the honest
ones. Every correct learner still gets 100, every learner at the stubs 0, every known mistake
loses points on its stage, every malformed submission gets a clear message, and no attack
gains a point. ``--probe-seconds 3`` keeps the endless loops short.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import zipfile
from pathlib import Path

import pytest

from autograder import batch
from autograder.sandbox import BwrapLauncher
from lumen.stages import STAGE_NAMES, SUBMISSION_FILES
from tests.test_grader_attacks import ATTACKS, HONEST
from tests.variants.build import make_submission

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.slow,
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
    for i, (name, replacements) in enumerate(list(ATTACKS.items())[:15]):
        make_submission(root / f"a{i:02d}-hostile", replacements)
        keeps_init = "embeddings:Embedding.forward" in replacements
        learners[f"a{i:02d}-hostile"] = ("hostile", (name, keeps_init))
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
            itertools.islice(itertools.cycle(_mistakes()), 20)):
        make_submission(root / f"c{i:02d}-buggy", replacements)
        learners[f"c{i:02d}-buggy"] = ("buggy", (stage, test))
    for i in range(20):
        (_zip(root / f"d{i:02d}-stubs.zip", stubs) if i % 2 else
         _write(root / f"d{i:02d}-stubs", stubs))
        learners[f"d{i:02d}-stubs"] = ("stubs", None)
    for i in range(30):  # and b14-folder: 31 correct
        (_zip(root / f"e{i:02d}-correct.zip", lumen) if i % 2 else
         _write(root / f"e{i:02d}-correct", lumen))
        learners[f"e{i:02d}-correct"] = ("correct", None)
    assert len(learners) == 100
    return learners


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    learners = _class(root / "submissions")
    out = root / "grades.csv"
    progress = io.StringIO()
    code = batch.run(root / "submissions", out, jobs=2, progress=progress, probe_seconds=3)
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
            assert _stage(results[lid], "params")["score"] == 0, lid
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
