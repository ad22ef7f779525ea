"""A class graded as shards and merged: ``grade-batch --shard K/N`` and ``merge-shards``.

A small class (a correct learner, one at the stubs, a known mistake, a syntax error, a missing
file and a learner whose name is a spreadsheet formula and HTML) is graded once as a single
batch and once as three shards, each its own process, run at the same time; the merge must
write what the single run's own code renders from the same records, byte for byte, and the
same grades as the single run. Then the refusals: a shard missing, given twice, of another N,
rubric, grader, option or class, a record changed or replaced by a link, a folder that is not
a finished shard; and a shard that died, rerun alone. Only the 'embedding' stage is graded,
to keep this quick.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.frontends import batch, provenance, shards
from autograder.options import Options
from autograder.views.escape import csv_text
from lumen.stages import SUBMISSION_FILES
from tests.helpers import full_marks
from tests.variants.build import make_submission
from tests.variants.embedding import MISTAKES

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "=cmd|x <b>y</b>".replace("/", "")  # a formula and HTML; "/" cannot be in a name
CLASS_FILES = ("grades.csv", "grades/summary.md", "grades/histogram.png")
EMBEDDING = Options(stages=["embedding"])  # what these batches grade: one stage, quickly


def make_class(folder: Path) -> None:
    lumen = {n: (ROOT / "lumen" / n).read_bytes() for n in SUBMISSION_FILES}
    stubs = {n: (ROOT / "exercises" / n).read_bytes() for n in SUBMISSION_FILES}

    def write(name: str, files: dict[str, bytes]) -> None:
        (folder / name).mkdir(parents=True)
        for file, data in files.items():
            (folder / name / file).write_bytes(data)

    write("correct", lumen)
    write("stubs", stubs)
    make_submission(folder / "mistake", MISTAKES["weight a plain tensor"][0])
    write("syntax", {**lumen, "embeddings.py": lumen["embeddings.py"].replace(
        b"def check_ids(", b"def check_ids((", 1)})
    write("missing", {k: v for k, v in lumen.items() if k != "embeddings.py"})
    make_submission(folder / HOSTILE, MISTAKES["weight a plain tensor"][0])  # in the summary


def _grade_batch(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "autograder", "grade-batch", *args,
                             "--stage", "embedding", "--jobs", "1"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class graded once whole and once as three shards (four processes at once), then
    the shards merged."""
    root = tmp_path_factory.mktemp("shards")
    make_class(root / "submissions")
    runs = [_grade_batch(str(root / "submissions"), "--out", str(root / "single" / "grades.csv"))]
    runs += [_grade_batch(str(root / "submissions"), "--out", str(root / f"shard{k}.csv"),
                          "--shard", f"{k}/3") for k in (1, 2, 3)]
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    for run, output in zip(runs, outputs, strict=True):
        assert run.returncode == 0, output
    merge = subprocess.run([sys.executable, "-m", "autograder", "merge-shards",
                            *(str(root / f"shard{k}.csv") for k in (3, 1, 2)),
                            "--out", str(root / "merged" / "grades.csv")],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert merge.returncode == 0, merge.stderr
    return root, outputs


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return {row["learner"]: row for row in csv.DictReader(f)}


def test_each_shard_grades_its_part_and_the_merge_holds_the_class(graded):
    root, outputs = graded
    parts = {k: set(_rows(root / f"shard{k}.csv")) for k in (1, 2, 3)}
    assert all(parts.values()), f"every shard has learners in this class: {parts}"
    everyone = {csv_text(p.name) for p in (root / "submissions").iterdir()}  # as the CSV has
    assert set().union(*parts.values()) == everyone
    assert sum(len(p) for p in parts.values()) == len(everyone), "no learner in two shards"
    for k, part in parts.items():
        assert all(shards.shard_of(x.removeprefix("'"), 3) == k for x in part)
    assert set(_rows(root / "merged" / "grades.csv")) == everyone


def test_the_merge_writes_what_a_single_run_renders_from_the_same_records(graded):
    """By construction: a single run ends by rendering the class files from the per-learner
    records (classbook.write_class_files); rerun over the merged folder (everyone graded, so it
    only renders), it must leave every class-level byte as the merge wrote it."""
    root, _ = graded
    merged = root / "merged"
    before = {name: (merged / name).read_bytes() for name in CLASS_FILES}
    again = _grade_batch(str(root / "submissions"), "--out", str(merged / "grades.csv"))
    output = again.communicate(timeout=300)[0]
    assert again.returncode == 0, output
    assert "grading 0 of 6 learners" in output, output
    for name in CLASS_FILES:
        assert (merged / name).read_bytes() == before[name], f"{name} differs"


def assert_merged_as_single(single: Path, merged: Path, shard_folders: list[Path]) -> dict:
    """The merge's ``merged`` CSV (and its folder) against a single run's ``single`` over the
    whole class: the same scores, stages and notes (the seconds differ, as between any two
    runs), the same histogram and summary table; each learner's own files are their shard's
    (``shard_folders[K - 1]``), byte for byte. Returns the merged rows, without the seconds."""
    rows = _rows(single), _rows(merged)
    assert list(rows[0]) == list(rows[1])
    for table in rows:
        for row in table.values():
            del row["seconds"]
    assert rows[0] == rows[1]
    folders = single.with_suffix(""), merged.with_suffix("")
    assert (folders[0] / "histogram.png").read_bytes() == \
        (folders[1] / "histogram.png").read_bytes()
    summary = [(f / "summary.md").read_text().split("### Each mistake")[0] for f in folders]
    assert summary[0] == summary[1]
    for learner in (x.removeprefix("'") for x in rows[1]):
        shard = shard_folders[shards.shard_of(learner, len(shard_folders)) - 1]
        for name in ("grade.json", "results.json", "feedback.txt"):
            assert (folders[1] / learner / name).read_bytes() == \
                (shard / learner / name).read_bytes()
    return rows[1]


def test_the_merge_gives_the_single_runs_grades(graded):
    """Against the single run over the whole class (assert_merged_as_single), and the
    learners' own grades."""
    root, _ = graded
    merged = assert_merged_as_single(root / "single" / "grades.csv",
                                     root / "merged" / "grades.csv",
                                     [root / f"shard{k}" for k in (1, 2, 3)])
    full = full_marks("embedding")
    assert merged["correct"]["total"] == full and merged["stubs"]["total"] == "0"
    assert float(merged["mistake"]["total"]) < float(full)
    assert "SyntaxError" in merged["syntax"]["notes"]


def test_learner_names_stay_escaped_in_the_merge(graded):
    root, _ = graded
    text = (root / "merged" / "grades.csv").read_text(encoding="utf-8")
    assert "\n=cmd" not in text and "'=cmd|x <b>y<b>" in text, "csv_text's formula guard"
    summary = (root / "merged" / "grades" / "summary.md").read_text(encoding="utf-8")
    assert "<b>" not in summary and r"\=cmd\|x \<b\>y\<b\>" in summary, "markdown_inline"


def test_shard_of_is_stable_and_not_pythons_salted_hash():
    """Pinned values (SHA-256 of the id), the same in a process with another hash seed, and
    unchanged by adding learners or shuffling them."""
    assert [shards.shard_of(x, 3) for x in ("correct", "stubs", "mistake", "syntax")] == \
        [3, 2, 1, 2]
    assert shards.shard_of("alice", 7) == int(hashlib.sha256(b"alice").hexdigest()[:16], 16) \
        % 7 + 1
    names = [f"learner{i:03d}" for i in range(60)]
    first = {x: shards.shard_of(x, 4) for x in names}
    more = names + [f"late{i}" for i in range(100)]
    random.Random(0).shuffle(more)
    assert {x: shards.shard_of(x, 4) for x in more if x in first} == first
    assert len(set(first.values())) == 4
    code = ("from autograder.frontends.shards import shard_of; "
            "print([shard_of(f'l{i}', 5) for i in range(30)])")
    seen = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in "12"}
    assert len(seen) == 1 and seen != {""}


def _merge(paths: list[Path], out: Path) -> tuple[int, str]:
    progress = io.StringIO()
    return shards.merge(paths, out, progress=progress), progress.getvalue()


@pytest.fixture
def copies(graded, tmp_path):
    """Fresh copies of the three shards' outputs, to break."""
    root, _ = graded
    for k in (1, 2, 3):
        shutil.copytree(root / f"shard{k}", tmp_path / f"shard{k}")
    return [tmp_path / f"shard{k}" for k in (1, 2, 3)]


def _edit_manifest(folder: Path, **changes) -> None:
    path = folder / shards.MANIFEST
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if key in shards.VERDICT_OPTIONS:
            data["options"][key] = value
        else:
            data[key] = value
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("breakage, words", [
    ("missing", "shard 2/3 missing: run `python -m autograder grade-batch SUBMISSIONS/ --shard K/3 "
                "--out grades/shard-K.csv` for each"),
    ("twice", "shard 1/3 is given twice"),
    ("other N", "split the class into different numbers of shards (4 and 3)"),
    ("rubric", "different rubric (autograder/rubric.toml)"),
    ("grader", "different version of the grader"),
    ("seed", "different seed policy"),
    ("visibility", "different --visibility ('visible' and 'after_due_date')"),
    ("class", "saw a class of 7 learners and shard 1/3"),
    ("unfinished", "holds no shard manifest (.shard.json)"),
    ("changed", "changed after shard"),
    ("link", "is not a plain file"),
    ("wrong shard", "belongs in shard"),
    ("malformed", "is not one this grader writes"),
])
def test_the_merge_refuses_shards_that_do_not_fit(copies, tmp_path, breakage, words):
    one, two, three = copies
    given = [one, two, three]
    if breakage == "missing":
        given = [one, three]
    elif breakage == "twice":
        given = [one, one, two, three]
    elif breakage == "other N":
        _edit_manifest(two, of=4)
    elif breakage in ("rubric", "grader", "seed"):
        _edit_manifest(two, **{breakage: "0" * 64})
    elif breakage == "visibility":
        _edit_manifest(two, visibility="visible")
    elif breakage == "class":
        data = json.loads((two / shards.MANIFEST).read_text())
        _edit_manifest(two, **{"class": {**data["class"], "learners": 7}})
    elif breakage == "malformed":
        data = json.loads((two / shards.MANIFEST).read_text())
        del data["of"]
        (two / shards.MANIFEST).write_text(json.dumps(data))
    elif breakage == "unfinished":
        (two / shards.MANIFEST).unlink()
    elif breakage in ("changed", "link"):
        learner = next(p for p in two.iterdir() if (p / "results.json").is_file())
        target = learner / "results.json"
        if breakage == "changed":
            data = json.loads(target.read_text())
            data["score"] = 100
            target.write_text(json.dumps(data))
        else:
            target.unlink()
            target.symlink_to(ROOT / "lumen" / "embeddings.py")
    elif breakage == "wrong shard":
        data = json.loads((two / shards.MANIFEST).read_text())
        moved = next(iter(data["learners"]))
        other = json.loads((one / shards.MANIFEST).read_text())
        other["learners"][moved] = data["learners"].pop(moved)
        (two / shards.MANIFEST).write_text(json.dumps(data))
        (one / shards.MANIFEST).write_text(json.dumps(other))
        shutil.copytree(two / moved, one / moved)
    code, said = _merge(given, tmp_path / "out" / "grades.csv")
    assert code == 2
    assert words in said, said
    assert not (tmp_path / "out" / "grades.csv").exists(), "nothing written when refused"


def test_the_merge_never_writes_over_a_folder_it_did_not_write(copies, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("the instructor's")
    code, said = _merge(copies, tmp_path / "mine.csv")
    assert code == 2 and "was not written by merge-shards" in said
    assert (tmp_path / "mine" / "notes.txt").read_text() == "the instructor's"
    code, said = _merge(copies, copies[0].with_suffix(".csv"))
    assert code == 2 and "own folder" in said
    assert _merge(copies, tmp_path / "merged.csv")[0] == 0
    assert _merge(copies, tmp_path / "merged.csv")[0] == 0, "a merge may refresh its own"


def test_a_shard_that_died_is_rerun_alone_and_resumes(graded, copies, tmp_path):
    """Shard 2 killed before it finished: no manifest, one learner without a record. The
    merge refuses it; rerun alone, it grades only that learner, and the merge goes through."""
    root, _ = graded
    two = copies[1]
    (two / shards.MANIFEST).unlink()
    lost = sorted(p for p in two.iterdir() if (p / "grade.json").is_file())[0]
    (lost / "grade.json").unlink()  # the record: killed before it was written
    assert "holds no shard manifest" in _merge(copies, tmp_path / "m.csv")[1]
    progress = io.StringIO()
    code = batch.run(root / "submissions", two.with_suffix(".csv"), EMBEDDING,
                     batch.Batch(shard=(2, 3)), progress=progress)
    assert code == 0, progress.getvalue()
    assert "grading 1 of 3 learners" in progress.getvalue()
    assert (lost / "grade.json").is_file()
    assert _merge(copies, tmp_path / "m.csv")[0] == 0


def _manifest(k: int, n: int, learners: list[str], seen: list[str]) -> dict:
    """A finished shard K/N's manifest, as this grader writes it: ``learners`` graded of the
    class ``seen``."""
    now = provenance.versions()
    return {"format": shards.FORMAT, "shard": k, "of": n, "grader": now["grader"],
            "rubric": now["rubric"], "seed": shards.SEED_POLICY,
            "options": dict.fromkeys(shards.VERDICT_OPTIONS),
            "class": {"learners": len(seen), "digest": shards.class_digest(seen)},
            "learners": dict.fromkeys(learners, {})}


def _refusal(*manifests: dict) -> str:
    with pytest.raises(shards.ShardError) as refused:
        shards.check([shards.Shard(f"s{m['shard']}", Path("."), m) for m in manifests])
    return str(refused.value)


def test_a_missing_shard_is_told_the_command_the_guide_gives():
    """The command the refusal of a missing shard names is docs/cluster.md's, with its file
    layout."""
    guide = (ROOT / "docs" / "cluster.md").read_text(encoding="utf-8")
    command = next(line.split("#")[0].strip() for line in guide.splitlines()
                   if line.startswith("python -m autograder grade-batch"))
    assert "--out grades/shard-K.csv" in command, command
    said = _refusal(_manifest(1, 3, [], []), _manifest(3, 3, [], []))
    assert f"shard 2/3 missing: run `{command.replace('K/N', 'K/3')}` for each" in said, said


def test_counts_agree_in_number(tmp_path, monkeypatch):
    """One learner is "1 learner", one shard "1 shard": in the refusals and in what a merge of
    one shard prints."""
    said = _refusal(_manifest(1, 2, [], ["a"]), _manifest(2, 2, [], ["a", "b"]))
    assert "shard 2/2 (s2) saw a class of 2 learners and shard 1/2 (s1) one of 1 learner:" \
        in said, said
    said = _refusal(_manifest(1, 1, ["a"], ["a", "b"]))
    assert "the shards hold 1 learner but the class has 2" in said, said

    from tests.test_batch import _FailingProcess  # scores 1, without a grader

    monkeypatch.setattr(batch, "GradingProcess", _FailingProcess)
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    progress = io.StringIO()
    assert batch.run(tmp_path / "subs", tmp_path / "shard-1.csv", EMBEDDING,
                     batch.Batch(shard=(1, 1)), progress=progress) == 0
    assert "graded 1 learner in" in progress.getvalue(), progress.getvalue()
    code, said = _merge([tmp_path / "shard-1.csv"], tmp_path / "merged" / "grades.csv")
    assert code == 0 and "merged 1 shard: 1 learner\n" in said, said


def test_the_command_line_says_what_is_wrong(tmp_path):
    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)

    (tmp_path / "subs").mkdir()
    for bad in ("4/3", "0/2", "two", "1/0"):
        result = cli("grade-batch", str(tmp_path / "subs"), "--shard", bad)
        assert result.returncode == 2 and "--shard" in result.stderr, result.stderr
    result = cli("grade-batch", str(tmp_path / "subs"), "--shard", "1/2", "--export", "csv",
                 "--roster", "r.csv")
    assert result.returncode == 2 and "export when merging" in result.stderr
    result = cli("merge-shards", str(tmp_path / "subs"), "--out", str(tmp_path / "g.csv"))
    assert result.returncode == 2 and "holds no shard manifest" in result.stderr


def test_the_merges_gradebook_exports_are_the_single_runs(graded, copies, tmp_path):
    """--export belongs to the merge: its gradebook files are byte for byte what grade-batch
    writes from the same records (rerun over the merged folder, it grades nobody)."""
    from autograder.frontends.exports import load_roster

    root, _ = graded
    roster = tmp_path / "roster.csv"
    with open(roster, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "name", "canvas_id", "email"])
        for i, learner in enumerate(sorted(p.name for p in (root / "submissions").iterdir())):
            writer.writerow([learner, f"Learner {i}", str(1000 + i), f"l{i}@uni.example"])
    out = tmp_path / "merged" / "grades.csv"
    progress = io.StringIO()
    code = shards.merge(copies, out, ["canvas", "moodle", "csv"], load_roster(roster),
                        progress=progress)
    assert code == 0, progress.getvalue()
    exported = sorted(tmp_path.glob("merged/grades-*.csv"))
    assert [p.name for p in exported] == ["grades-canvas.csv", "grades-moodle.csv",
                                          "grades-roster.csv"]
    before = {p: p.read_bytes() for p in [*exported, out]}
    code = batch.run(root / "submissions", out, EMBEDDING,
                     batch.Batch(exports=("canvas", "moodle", "csv"), roster=load_roster(roster)),
                     progress=progress)
    assert code == 0, progress.getvalue()
    assert "grading 0 of 6 learners" in progress.getvalue()
    assert {p: p.read_bytes() for p in before} == before
