"""Grading a class: ``python -m autograder grade-batch``.

One small class holds a correct learner, one at the stubs and every malformed submission the
grader must survive; each gets a clear message and 0 on what it affects, and the batch goes on.
Then: the CSV, the per-learner files and the summary; resume (a rerun grades nobody, --force
everyone); a kill mid-batch leaves only whole files, and a rerun finishes the class. Only the
'embedding' stage is graded, to keep this quick: the other stages work the same way.
"""

from __future__ import annotations

import csv
import io
import json
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from autograder import batch
from autograder.submission import MAX_FILE
from lumen.stages import STAGE_NAMES, SUBMISSION_FILES

ROOT = Path(__file__).resolve().parents[1]
STAGES = ["embedding"]
IMPORT_FAILED = "your embeddings.py could not be imported"


def _lumen(name: str) -> str:
    return (ROOT / "lumen" / name).read_text(encoding="utf-8")


def _folder(path: Path, files: dict[str, bytes]) -> None:
    path.mkdir(parents=True)
    for name, data in files.items():
        (path / name).write_bytes(data)


def make_class(folder: Path) -> dict[str, str]:
    """The class: learner id -> what their notes (or first failure) must say."""
    lumen = {name: _lumen(name).encode() for name in SUBMISSION_FILES}
    stubs = {n: (ROOT / "exercises" / n).read_bytes() for n in SUBMISSION_FILES}
    _folder(folder / "correct", lumen)
    _folder(folder / "stubs", stubs)
    _folder(folder / "syntax", {**lumen, "embeddings.py": lumen["embeddings.py"].replace(
        b"def check_ids(", b"def check_ids((", 1)})
    _folder(folder / "missing", {k: v for k, v in lumen.items() if k != "embeddings.py"})
    _folder(folder / "latin1", {**lumen, "embeddings.py": b"# caf\xe9\n" + lumen["embeddings.py"]})
    zipfile.ZipFile(folder / "empty.zip", "w").close()
    with zipfile.ZipFile(folder / "dotdot.zip", "w") as archive:
        for name, data in lumen.items():
            archive.writestr(f"../{name}", data)
    with zipfile.ZipFile(folder / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("embeddings.py", b"#" * (64 * MAX_FILE))  # 64 MiB in ~64 KiB
        for name in SUBMISSION_FILES[1:]:
            archive.writestr(name, lumen[name])
    (folder / "liar.zip").write_bytes(_lying_bomb(lumen))
    return {
        "correct": "", "stubs": "",
        "syntax": "SyntaxError",
        "missing": "embeddings.py is missing from the submission",
        "latin1": "embeddings.py is not UTF-8 text",
        "empty": "embeddings.py is missing from the submission",
        "dotdot": "absolute or ../ paths are never extracted",
        "bomb": f"embeddings.py in the zip is larger than {MAX_FILE:,} bytes",
        "liar": "embeddings.py could not be read from the zip",
    }


def _lying_bomb(lumen: dict[str, bytes]) -> bytes:
    """A zip whose embeddings.py says it is 100 bytes and inflates to 8 MiB."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("embeddings.py", b"#" * (8 * MAX_FILE))
        for name in SUBMISSION_FILES[1:]:
            archive.writestr(name, lumen[name])
    data = bytearray(buffer.getvalue())
    local = data.find(b"PK\x03\x04")  # the first member's local header and central entry
    central = data.find(b"PK\x01\x02")
    data[local + 22 : local + 26] = (100).to_bytes(4, "little")  # uncompressed size
    data[central + 24 : central + 28] = (100).to_bytes(4, "little")
    return bytes(data)


def _rows(csv_path: Path) -> dict[str, dict[str, str]]:
    with open(csv_path, newline="", encoding="utf-8") as f:
        return {row["learner"]: row for row in csv.DictReader(f)}


def _run(submissions: Path, out: Path, **options) -> tuple[int, str]:
    progress = io.StringIO()
    code = batch.run(submissions, out, stages=STAGES, progress=progress, **options)
    return code, progress.getvalue()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class, graded once with two grading processes."""
    root = tmp_path_factory.mktemp("batch")
    expected = make_class(root / "submissions")
    code, progress = _run(root / "submissions", root / "grades.csv", jobs=2)
    return root, expected, code, progress


def test_every_learner_gets_a_row_and_a_clear_message(graded):
    root, expected, code, progress = graded
    assert code == 0, progress
    rows = _rows(root / "grades.csv")
    assert list(rows) == sorted(expected), "one row per learner, sorted by id"
    assert list(rows["correct"]) == ["learner", "total", *STAGE_NAMES, "seconds", "notes"]
    assert rows["correct"]["total"] == rows["correct"]["embedding"] == "20"
    assert rows["correct"]["onehot"] == "", "a stage not graded is left empty, not 0"
    for learner, words in expected.items():
        if learner == "correct":
            continue
        assert rows[learner]["total"] == rows[learner]["embedding"] == "0", learner
        results = json.loads((root / "grades" / learner / "results.json").read_text())
        messages = " ".join([*results["extra_data"]["notes"],
                             *(t["output"] for t in results["tests"])])
        assert words in messages, f"{learner}: no {words!r} in {messages[:500]}"
        assert words in rows[learner]["notes"] or learner in ("stubs", "syntax")
    assert "[9/9] " in progress, progress


def test_per_learner_files(graded):
    root, expected, _, _ = graded
    for learner in expected:
        folder = root / "grades" / learner
        results = json.loads((folder / "results.json").read_text())
        assert results["extra_data"]["learner"] == learner
        assert results["extra_data"]["graded_stages"] == STAGES
        assert {t["tags"][0] for t in results["tests"]} == set(STAGE_NAMES)
        feedback = (folder / "feedback.txt").read_text()
        assert feedback.startswith("lumen autograder:") and "embedding" in feedback
        assert not (folder / "error.txt").exists()


def test_summary_ranks_the_mistakes(graded):
    root, _, _, _ = graded
    summary = (root / "grades" / "summary.md").read_text()
    assert "9 of 9 learners graded" in summary
    assert "| embedding | 2.2 | 20 | 1 | 1 |" in summary  # average, max, full marks, untouched
    assert "| onehot |" not in summary, "a stage not graded has no average"
    table = summary.split("## What to re-teach", 1)[1]
    first = next(line for line in table.splitlines() if line.startswith("| 7 |"))
    assert IMPORT_FAILED in first, "the commonest mistake (7 learners) comes first"
    rows = [line.split(" | ") for line in table.splitlines() if line[:3].strip("| ").isdigit()]
    assert not [r for r in rows if "stubs" in r[-1]], "an unwritten stub is not a mistake"
    counts = [int(r[0].strip("| ")) for r in rows]
    assert counts == sorted(counts, reverse=True) and counts[0] == 7
    assert (root / "grades" / "histogram.png").read_bytes().startswith(b"\x89PNG")


def test_resume_skips_the_graded_and_force_regrades(graded):
    root, expected, _, _ = graded
    results = root / "grades" / "correct" / "results.json"
    before, csv_before = results.read_bytes(), (root / "grades.csv").read_bytes()
    code, progress = _run(root / "submissions", root / "grades.csv")
    assert code == 0 and "grading 0 of 9 learners" in progress, progress
    assert results.read_bytes() == before
    assert (root / "grades.csv").read_bytes() == csv_before

    code, progress = _run(root / "submissions", root / "grades.csv", jobs=2, force=True)
    assert code == 0 and "grading 9 of 9 learners" in progress, progress
    assert json.loads(results.read_text())["extra_data"]["seed"] != \
        json.loads(before)["extra_data"]["seed"], "regraded with a fresh seed"


def _without_seconds(rows: dict[str, dict[str, str]]) -> dict:
    return {k: {c: v for c, v in row.items() if c != "seconds"} for k, row in rows.items()}


def test_a_lost_learner_is_regraded_and_the_csv_stays_whole(graded):
    root, _, _, _ = graded
    before = _rows(root / "grades.csv")
    (root / "grades" / "latin1" / "results.json").unlink()  # as if killed before it was written
    code, progress = _run(root / "submissions", root / "grades.csv")
    assert code == 0 and "grading 1 of 9 learners" in progress and "latin1" in progress
    assert _without_seconds(_rows(root / "grades.csv")) == _without_seconds(before)


def test_killed_mid_batch_leaves_whole_files(tmp_path):
    make_class(tmp_path / "submissions")
    out = tmp_path / "grades.csv"
    proc = subprocess.Popen(
        [sys.executable, "-m", "autograder", "grade-batch", str(tmp_path / "submissions"),
         "--out", str(out), "--jobs", "1", "--stage", "embedding"],
        cwd=ROOT, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:  # until the third learner is written
        if line.startswith("[3/9]"):
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    time.sleep(0.5)  # its grading process sees the pipe close and ends
    graded = [p for p in (tmp_path / "grades").glob("*/results.json")]
    assert 3 <= len(graded) < 9
    for path in graded:
        json.loads(path.read_text())  # whole, or not there at all
    code, progress = _run(tmp_path / "submissions", out)
    assert code == 0 and f"grading {9 - len(graded)} of 9" in progress, progress
    rows = _rows(out)
    assert len(rows) == 9 and all(row["total"] for row in rows.values())


class _FailingProcess:
    """Stands in for a grading process: 'stubs' breaks the grader, the rest score 1."""

    def __init__(self, index, config, log) -> None:
        pass

    def grade(self, job: dict) -> dict:
        if job["learner"] == "stubs":
            return {"learner": "stubs", "error": "WorkerError: the grading worker broke"}
        results = {"score": 1.0, "execution_time": 0.1, "tests": [],
                   "extra_data": {"stages": {"embedding": {"score": 1.0, "max_score": 20}},
                                  "notes": [], "mistakes": [], "graded_stages": STAGES}}
        return {"learner": job["learner"], "score": 1.0, "seconds": 0.1, "results": results,
                "feedback": "ok\n"}

    def stop(self) -> None:
        pass


def test_a_grader_failure_costs_one_learner_not_the_batch(tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "GradingProcess", _FailingProcess)
    for learner in ("alice", "bob", "stubs", "zoe"):
        (tmp_path / "submissions" / learner).mkdir(parents=True)
    code, progress = _run(tmp_path / "submissions", tmp_path / "grades.csv", jobs=2)
    assert code == 1, "some learners could not be graded: exit 1"
    rows = _rows(tmp_path / "grades.csv")
    assert rows["stubs"]["total"] == "" and "not graded: WorkerError" in rows["stubs"]["notes"]
    assert [rows[x]["total"] for x in ("alice", "bob", "zoe")] == ["1", "1", "1"]
    assert (tmp_path / "grades" / "stubs" / "error.txt").is_file()
    code, progress = _run(tmp_path / "submissions", tmp_path / "grades.csv")
    assert "grading 1 of 4" in progress, "a rerun retries only the failed learner"


def test_a_broken_grader_stops_the_batch_early(tmp_path, monkeypatch):
    class Broken(_FailingProcess):
        def grade(self, job: dict) -> dict:
            return {"learner": job["learner"], "error": "WorkerError: no sandbox"}

    monkeypatch.setattr(batch, "GradingProcess", Broken)
    for learner in range(10):
        (tmp_path / "submissions" / f"learner{learner}").mkdir(parents=True)
    code, progress = _run(tmp_path / "submissions", tmp_path / "grades.csv")
    assert code == 2 and "the batch stopped" in progress
    assert progress.count("not graded") == batch.GIVE_UP_AFTER


def test_discover_names_learners_and_clashes(tmp_path):
    for name in ("alice", "bob", "__MACOSX", ".hidden"):
        (tmp_path / name).mkdir()
    zipfile.ZipFile(tmp_path / "bob.zip", "w").close()
    zipfile.ZipFile(tmp_path / "carol.ZIP", "w").close()
    (tmp_path / "notes.txt").write_text("x")
    learners, ignored = batch.discover(tmp_path)
    assert [x.id for x in learners] == ["alice", "bob", "carol"]
    assert learners[1].problem and "keep only one" in learners[1].problem
    assert ignored == ["notes.txt"]


def test_first_clause_groups_a_mistake_without_its_particulars():
    assert batch.first_clause("weight has shape (4, 3), expected (3, 4): one row per token") \
        == "weight has shape (4, 3), expected (3, 4)"
    assert batch.first_clause("uses F.embedding; write it yourself") == "uses F.embedding"


def test_out_dir_is_the_csv_without_its_suffix():
    assert batch.default_out_dir(Path("marks/grades.csv")) == Path("marks/grades")
    with pytest.raises(ValueError):
        batch.default_out_dir(Path("grades"))


def test_hostile_learners_never_stop_the_honest_ones(tmp_path, monkeypatch):
    """First in the class (each grading thread takes one first): a learner whose messages hold
    lone surrogates and terminal escapes, and one whose files cannot be written. Every honest
    learner is graded with full marks, each hostile one has a row, the batch ends normally."""
    from tests.variants.build import make_submission

    submissions = tmp_path / "submissions"
    make_submission(submissions / "aa-surrogate", {"embeddings:Embedding.forward":
                    "def forward(self, ids):\n    raise ValueError('\\ud800\\x1b[2J ...')\n"})
    make_submission(submissions / "ab-unwritable", {})
    honest = ["honest1", "honest2", "honest3"]
    for learner in honest:
        make_submission(submissions / learner, {})
    write_json = batch.write_json

    def full_disk_for_one(path: Path, data: dict) -> None:
        if path.parent.name == "ab-unwritable":
            raise OSError(28, "No space left on device")
        write_json(path, data)

    monkeypatch.setattr(batch, "write_json", full_disk_for_one)
    code, progress = _run(submissions, tmp_path / "grades.csv", jobs=2, probe_seconds=5)
    assert code == 1 and "the batch stopped" not in progress, progress
    rows = _rows(tmp_path / "grades.csv")
    assert [rows[x]["total"] for x in honest] == ["20", "20", "20"], progress
    assert rows["aa-surrogate"]["total"] not in ("", "20"), "graded, and lost the forward points"
    feedback = (tmp_path / "grades" / "aa-surrogate" / "feedback.txt").read_text("utf-8")
    assert "\x1b" not in feedback and "\\x1b[2J" in feedback
    assert rows["ab-unwritable"]["total"] == ""
    assert "grading error" in rows["ab-unwritable"]["notes"]
    assert "No space left on device" in rows["ab-unwritable"]["notes"]
    assert "4 of 5 learners graded" in (tmp_path / "grades" / "summary.md").read_text()


def test_a_reply_that_breaks_costs_one_learner_not_a_thread(tmp_path, monkeypatch):
    """One grading thread: a learner whose grading raises in the batch itself (a reply that
    is not JSON) is a row with the reason, and the thread grades the rest."""

    class Garbled(_FailingProcess):
        def grade(self, job: dict) -> dict:
            if job["learner"] == "aaa":
                return json.loads("half a reply {")
            return super().grade(job)

    monkeypatch.setattr(batch, "GradingProcess", Garbled)
    for learner in ("aaa", "bob", "carol"):
        (tmp_path / "submissions" / learner).mkdir(parents=True)
    code, progress = _run(tmp_path / "submissions", tmp_path / "grades.csv", jobs=1)
    assert code == 1, progress
    rows = _rows(tmp_path / "grades.csv")
    assert [rows[x]["total"] for x in ("bob", "carol")] == ["1", "1"], progress
    assert rows["aaa"]["total"] == "" and "not graded" in rows["aaa"]["notes"]
    assert "JSONDecodeError" in rows["aaa"]["notes"]
