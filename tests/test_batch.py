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
import os
import re
import signal
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from autograder import mistakes
from autograder.boundary.intake import MAX_FILE
from autograder.frontends import batch, batch_records, batch_server, classbook, provenance
from autograder.frontends.summary import histogram_figure, write_summary
from autograder.options import Limits, Options
from autograder.results import RECORD_VERSION, Grade, StageGrade, TestResult
from lumen.stages import STAGE_NAMES, SUBMISSION_FILES
from tests.helpers import full_marks

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


def _run(submissions: Path, out: Path, probe_seconds: float = Limits.probe_seconds,
         **settings) -> tuple[int, str]:
    """grade-batch over ``submissions`` with ``settings`` (``batch.Batch``'s)."""
    progress = io.StringIO()
    options = Options(stages=STAGES, limits=Limits(probe_seconds=probe_seconds))
    code = batch.run(submissions, out, options, batch.Batch(**settings), progress=progress)
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
    assert rows["correct"]["total"] == rows["correct"]["embedding"] == full_marks("embedding")
    assert rows["correct"]["onehot"] == "", "a stage not graded is left empty, not 0"
    for learner, words in expected.items():
        if learner == "correct":
            continue
        assert rows[learner]["total"] == rows[learner]["embedding"] == "0", learner
        results = json.loads((root / "grades" / learner / "results.json").read_text())
        messages = " ".join([*results["extra_data"]["notes"],
                             *(t["output"] for t in results["tests"])])
        assert words in messages, f"{learner}: no {words!r} in {messages[:500]}"
        assert words in rows[learner]["notes"] or learner == "stubs"
    # the note names the file, the error and its line, like the other malformed files'
    assert re.search(r"embeddings\.py: SyntaxError at line \d+: ", rows["syntax"]["notes"]), \
        rows["syntax"]["notes"]
    assert "[9/9] " in progress, progress


def test_per_learner_files(graded):
    root, expected, _, _ = graded
    for learner in expected:
        folder = root / "grades" / learner
        results = json.loads((folder / "results.json").read_text())
        assert results["extra_data"]["learner"] == learner
        assert results["extra_data"]["graded_stages"] == STAGES
        assert {t["tags"][0] for t in results["tests"]} == set(STAGES), "the graded ones only"
        feedback = (folder / "feedback.txt").read_text()
        assert feedback.startswith("lumen autograder:") and "embedding" in feedback
        assert "Not graded in this run (--stage): onehot" in feedback
        assert not (folder / "error.txt").exists()
        # the submission's own name, never where the instructor keeps it
        name = next(p.name for p in (root / "submissions").iterdir()
                    if p.name in (learner, f"{learner}.zip"))
        assert feedback.splitlines()[0] == f"lumen autograder: {name}", feedback[:200]
        for path in (folder / "feedback.txt", folder / "results.json", root / "grades.csv"):
            assert str(root) not in path.read_text(encoding="utf-8"), f"{path} names {root}"


def _unescaped(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown)


def mistakes_table(summary: str) -> list[dict]:
    """The rows of summary.md's "what to re-teach" table, each with its full entry below the
    table: label, learners (count), stages, check, id, who (all of them) and the message."""
    section = summary.split("## What to re-teach", 1)[1]
    table, details = section.split("### Each mistake in full", 1)
    rows = {}
    for line in table.splitlines():
        if re.match(r"\| M\d+ \|", line):
            label, count, stages, check, found, _ = (c.strip() for c in line[2:-2].split(" | "))
            rows[label] = {"label": label, "learners": int(count), "stages": stages.split(", "),
                           "check": _unescaped(check), "id": found.strip("`")}
    for entry in re.split(r"\n(?=\*\*M\d+\*\* )", details.strip()):
        head = re.match(r"\*\*(M\d+)\*\* `([^`]+)`: (\d+) learners? \((.*?)\)\. (.*?)'s "
                        r"message:\n\n((?:> .*\n?)+)", entry)
        assert head, f"a details entry not as written: {entry[:300]}"
        label, found, count, who, _, quoted = head.groups()
        row = rows[label]
        assert (row["id"], row["learners"]) == (found, int(count)), (row, entry[:300])
        row["who"] = _unescaped(who).split(", ")
        row["message"] = _unescaped("\n".join(line[2:] for line in quoted.rstrip().splitlines()))
    assert all("who" in row for row in rows.values()), "a row without its full entry"
    return list(rows.values())


def test_summary_ranks_the_mistakes(graded):
    """Seven learners whose embeddings.py was never imported, each failing all nine checks: a
    row per fix, not a row per check (nor one learner per check), each message in full, once.
    Nothing handed in (no embeddings.py, none in an empty zip, one only under ../), a file
    that could not be read (not UTF-8, too large) and a syntax error are three rows."""
    root, _, _, _ = graded
    summary = (root / "grades" / "summary.md").read_text()
    assert "9 of 9 learners graded" in summary
    full = full_marks("embedding")  # one learner of the nine has them, one left it untouched
    assert f"| embedding | {float(full) / 9:.1f} | {full} | 1 | 1 |" in summary
    assert "| onehot |" not in summary, "a stage not graded has no average"
    rows = {row["id"]: row for row in mistakes_table(summary)}
    assert list(rows) == ["missing-file", "unusable-file", "import-failure"], rows
    assert {kind: sorted(row["who"]) for kind, row in rows.items()} == {
        "missing-file": ["dotdot", "empty", "missing"],
        "unusable-file": ["bomb", "latin1", "liar"],
        "import-failure": ["syntax"]}, "each learner once; an unwritten stub is no mistake"
    assert rows["missing-file"]["check"] == mistakes.KINDS[mistakes.MISSING_FILE]
    for kind, says in (("missing-file", "embeddings.py is missing from the submission, so "),
                       ("unusable-file", IMPORT_FAILED), ("import-failure", IMPORT_FAILED)):
        row = rows[kind]
        results = json.loads((root / "grades" / row["who"][0] / "results.json").read_text())
        messages = [m["message"] for m in results["extra_data"]["mistakes"]]
        assert row["message"] in messages, "the example message, in full"
        assert says in row["message"], row["message"]
        assert {m["id"] for m in results["extra_data"]["mistakes"]} == {kind}
    assert "SyntaxError" in rows["import-failure"]["message"]
    assert (root / "grades" / "histogram.png").read_bytes().startswith(b"\x89PNG")


def _mistake(stage: str, test: str, message: str, kind: str = mistakes.MISTAKE) -> dict:
    return {"stage": stage, "test": test, "message": message, "title": f"the {test} check",
            "kind": kind}


def test_summary_groups_by_mistake_and_counts_each_learner_once(tmp_path):
    """The summary of a class with two bugs, each made by two learners on other inputs, a
    syntax error failing five checks, a hang failing eight and a crash: five rows, each
    learner once in each, every message whole."""
    def dtype(d: int) -> str:
        return (f"Embedding({d}, 4) with a torch.float64 weight has dtype torch.float32, expected "
                "torch.float64: keep the weight's dtype (no float32 default, no .float()); "
                + " ".join(["a long explanation that must not be cut."] * 8))

    def shape(n: int) -> str:
        return f"Embedding(5, 3) on ids of shape ({n},): output shape ({n * 3},), expected ({n}, 3)"

    imports = [_mistake("embedding", f"test_{i}", "your embeddings.py could not be imported, so "
                        f"Embedding({i}, 3) could not be graded: SyntaxError: 'invalid syntax'",
                        mistakes.IMPORT_FAILED)
               for i in range(5)]
    hangs = [_mistake("embedding", f"test_{i}", f"Embedding({i}, 2) did not finish in time"
                      ": look for a loop that never ends", mistakes.TIMED_OUT) for i in range(8)]
    crash = _mistake("onehot", "test_one_hot_rows", "one_hot(ids of shape (3,)) on cpu"
                     " could not finish: the process running your code ended (EOFError)",
                     mistakes.CRASHED)
    learners = {
        "ann": [_mistake("embedding", "test_meta", dtype(13))],
        "bob": [_mistake("embedding", "test_meta", dtype(7)),
                _mistake("embedding", "test_shape", shape(4))],
        "cat": [_mistake("embedding", "test_shape", shape(9))],
        "dan": imports, "eve": hangs, "fay": [crash], "gus": [],
    }
    rows = [{"learner": name, "total": 10.0, "stages": {"embedding": 10.0}, "seconds": 1.0,
             "notes": [], "mistakes": found, "max": {"embedding": 20.0}}
            for name, found in learners.items()]
    write_summary(tmp_path, rows)
    table = mistakes_table((tmp_path / "summary.md").read_text(encoding="utf-8"))
    assert len(table) == 5, table
    by_id = {row["id"].split("/")[1] if "/" in row["id"] else row["id"]: row for row in table}
    assert set(by_id) == {"test_meta", "test_shape", "import-failure", "timeout", "crash"}
    assert by_id["test_meta"]["who"] == ["ann", "bob"] and by_id["test_meta"]["learners"] == 2
    assert by_id["test_shape"]["who"] == ["bob", "cat"]
    assert by_id["import-failure"]["who"] == ["dan"] and by_id["timeout"]["who"] == ["eve"]
    assert by_id["crash"]["stages"] == ["onehot"] and by_id["crash"]["who"] == ["fay"]
    assert by_id["test_meta"]["check"] == "the test_meta check"
    assert by_id["test_meta"]["message"] == dtype(13), "the message, whole"
    assert [row["learners"] for row in table] == sorted((r["learners"] for r in table),
                                                        reverse=True)


def test_summary_shows_a_checks_title_whole(tmp_path):
    """A check's title is one sentence (``plugin.check_title``), which summary.md's table shows
    whole, however long: here the longest a suite has."""
    from autograder.suites import test_init
    from autograder.suites.plugin import check_title

    title = check_title(test_init.test_scale_output.__doc__, "test_scale_output")
    assert len(title) > 200, title
    mistake = {**_mistake("init", "test_scale_output", "scale_output returned x * d"),
               "title": title}
    write_summary(tmp_path, [{"learner": "ann", "total": 0.0, "stages": {"init": 0.0},
                              "seconds": 1.0, "notes": [], "mistakes": [mistake],
                              "max": {"init": 15.0}}])
    table = mistakes_table((tmp_path / "summary.md").read_text(encoding="utf-8"))
    assert [row["check"] for row in table] == [title]


def test_the_histograms_learner_axis_counts_whole_learners():
    """The histogram's y axis counts learners: its ticks are whole numbers, for one learner
    (where matplotlib would tick 0.2, 0.4, ...) as for many."""
    plt = pytest.importorskip("matplotlib.pyplot")
    for totals in ([50.0], [20.0, 25.0, 90.0], [float(x) for x in range(0, 100, 3)]):
        figure = histogram_figure(totals)
        ticks = [t for t in figure.axes[0].get_yticks() if t >= 0]
        plt.close(figure)
        assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), (totals, ticks)


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


def _grade_batch(submissions: Path, out: Path) -> str:
    """``python -m autograder grade-batch`` as an instructor runs it (the 'embedding' stage):
    its progress, after checking it finished."""
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade-batch", str(submissions), "--out", str(out),
         "--stage", "embedding"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_a_rerun_regrades_exactly_the_learners_whose_files_changed(tmp_path):
    """A rerun without --force regrades a learner whose files changed since their grade (here
    bob, who broke his embeddings.py) and keeps the others: by content, so alice's file saved
    again unchanged and carol's zip made again from the same files keep their grades. The
    closing lines say how many it regraded and kept."""
    lumen = {name: _lumen(name).encode() for name in SUBMISSION_FILES}
    submissions, out = tmp_path / "submissions", tmp_path / "grades.csv"
    _folder(submissions / "alice", lumen)
    _folder(submissions / "bob", lumen)

    def carol_zip(year: int) -> bytes:  # the same files, stored with the time of ``year``
        with zipfile.ZipFile(submissions / "carol.zip", "w") as archive:
            for name, data in lumen.items():
                archive.writestr(zipfile.ZipInfo(f"exercises/{name}", (year, 1, 1, 0, 0, 0)),
                                 data)
        return (submissions / "carol.zip").read_bytes()

    first_zip = carol_zip(2024)
    _grade_batch(submissions, out)
    totals = [_rows(out)[x]["total"] for x in ("alice", "bob", "carol")]
    assert totals == [full_marks("embedding")] * 3
    records = {x: (tmp_path / "grades" / x / "grade.json").read_bytes()
               for x in ("alice", "carol")}

    (submissions / "alice" / "embeddings.py").write_bytes(lumen["embeddings.py"])  # the same
    (submissions / "bob" / "embeddings.py").write_bytes(
        (ROOT / "exercises" / "embeddings.py").read_bytes())  # back to the stub
    assert carol_zip(2025) != first_zip, "another zip of the same files"
    progress = _grade_batch(submissions, out)
    assert "grading 1 of 3 learners" in progress, progress
    assert "[1/1] bob 0.0" in progress, progress
    assert "regraded 1 learner whose files or options changed since their last grade; kept 2 " \
           "learners graded before from the same files" in progress, progress
    assert _rows(out)["bob"]["total"] == "0", "bob's grade is his new files'"
    for learner, record in records.items():
        assert (tmp_path / "grades" / learner / "grade.json").read_bytes() == record, learner


def _without_seconds(rows: dict[str, dict[str, str]]) -> dict:
    return {k: {c: v for c, v in row.items() if c != "seconds"} for k, row in rows.items()}


def test_a_lost_learner_is_regraded_and_the_csv_stays_whole(graded):
    root, _, _, _ = graded
    before = _rows(root / "grades.csv")
    (root / "grades" / "latin1" / "grade.json").unlink()  # as if killed before it was written
    code, progress = _run(root / "submissions", root / "grades.csv")
    assert code == 0 and "grading 1 of 9 learners" in progress and "latin1" in progress
    assert _without_seconds(_rows(root / "grades.csv")) == _without_seconds(before)


def test_sigterm_writes_what_is_graded(tmp_path):
    """SIGTERM (kill, a scheduler's time limit) stops the batch as Ctrl-C does: the CSV and the
    summary are written with every learner graded so far, and a rerun finishes the class."""
    make_class(tmp_path / "submissions")
    out = tmp_path / "grades.csv"
    proc = subprocess.Popen(
        [sys.executable, "-m", "autograder", "grade-batch", str(tmp_path / "submissions"),
         "--out", str(out), "--jobs", "1", "--stage", "embedding"],
        cwd=ROOT, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stderr:  # until the second learner is written
        seen.append(line)
        if line.startswith("[2/9]"):
            break
    proc.send_signal(signal.SIGTERM)
    seen += proc.stderr.readlines()
    proc.wait(timeout=120)
    proc.stderr.close()
    progress = "".join(seen)
    assert proc.returncode == 2, progress  # "the batch stopped", not killed by the signal
    assert "interrupted: writing what is graded so far" in progress, progress
    rows = _rows(out)
    assert list(rows) == sorted(rows) and len(rows) == 9, "every learner has a row"
    graded = [lid for lid, row in rows.items() if row["total"]]
    assert len(graded) >= 2, rows
    assert all("not graded yet" in row["notes"] for lid, row in rows.items() if lid not in graded)
    assert f"{len(graded)} of 9 learners graded" in (tmp_path / "grades" / "summary.md").read_text()
    code, progress = _run(tmp_path / "submissions", out)
    assert code == 0 and f"grading {9 - len(graded)} of 9" in progress, progress


def test_outputs_are_readable_by_the_instructors_group(tmp_path, monkeypatch):
    """Every file and folder the batch writes follows the umask, as a plain write would: with
    027, files 0640 and folders 0750 (atomic writes through mkstemp left files 0600)."""
    monkeypatch.setattr(batch, "GradingProcess", _FailingProcess)
    for learner in ("alice", "stubs"):  # a graded one, and one with an error.txt
        (tmp_path / "submissions" / learner).mkdir(parents=True)
    old = os.umask(0o027)
    try:
        _run(tmp_path / "submissions", tmp_path / "grades.csv")
    finally:
        os.umask(old)
    written = [tmp_path / "grades.csv", tmp_path / "grades",
               *(tmp_path / "grades").rglob("*")]
    assert {p.name for p in written} >= {"grades.csv", "summary.md", "results.json",
                                         "feedback.txt", "error.txt", "alice", "stubs"}
    modes = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode)
             for p in written}
    wrong = {name: oct(mode) for name, mode in modes.items()
             if mode != (0o750 if (tmp_path / name).is_dir() else 0o640)}
    assert not wrong, wrong


def test_the_learners_files_name_the_submission_not_the_instructors_folder(tmp_path):
    """A note that names the submission's path (here: a .zip that is not one) shows only its
    name in results.json and feedback.txt, as the report's first line does: the notes are made
    once, by ``grading.submission_notes``, for every front end."""
    from autograder.boundary.intake import prepare
    from autograder.grading import Grader, submission_notes

    submissions = tmp_path / "home" / "instructor" / "class"
    submissions.mkdir(parents=True)
    (submissions / "bob.zip").write_text("not a zip")

    class Fake(Grader):  # grades nothing; notes what Grader.grade would note of bob.zip
        def __init__(self) -> None:
            self.options = Options()

        def grade(self, path: Path, seed: int | None = None, stages=None):
            return Grade(submission=str(path), stages=[], seed=1, devices=["cpu"],
                         sandbox="bwrap", seconds=0.1, notes=submission_notes(path, prepare(path)))

    reply = batch_server.grade_one(Fake(), {"learner": "bob", "path": str(submissions / "bob.zip")})
    folder = tmp_path / "grades" / "bob"
    batch_records.write_learner(folder, Grade.from_json(reply["grade"]), "after_due_date")
    feedback = (folder / "feedback.txt").read_text(encoding="utf-8")
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    text = json.dumps(results) + feedback
    assert str(tmp_path) not in text, text
    assert feedback.startswith("lumen autograder: bob.zip\n")
    assert "Note: bob.zip is neither a folder nor a .zip file" in feedback
    assert results["extra_data"]["notes"][0] == "bob.zip is neither a folder nor a .zip file"


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
        passed = TestResult(name="test_x", stage="embedding", title="x", passed=True)
        grade = Grade(submission=job["learner"], seed=1, devices=["cpu"], sandbox="bwrap",
                      seconds=0.1, stages=[StageGrade("embedding", 1.0, 20.0,
                                                      [(passed, 1.0, 1.0)])],
                      not_graded=[s for s in STAGE_NAMES if s != "embedding"])
        return {"learner": job["learner"], "grade": grade.to_json()}

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


def test_resume_keeps_only_the_records_this_grader_made(tmp_path, monkeypatch):
    """A rerun skips a learner only when their grade.json is a record of this grader and
    rubric (``provenance.versions``); one of another grader, another record version, a file
    that is no record, or only a results.json (an older batch's) is graded again."""
    monkeypatch.setattr(batch, "GradingProcess", _FailingProcess)
    learners = ("alice", "bob", "carol", "dan", "eve")
    for learner in learners:
        (tmp_path / "submissions" / learner).mkdir(parents=True)
    code, progress = _run(tmp_path / "submissions", tmp_path / "grades.csv")
    assert code == 0 and "grading 5 of 5" in progress, progress
    grades = tmp_path / "grades"
    record = json.loads((grades / "alice" / "grade.json").read_text())
    assert record["made_by"] == provenance.versions() and record["version"] == RECORD_VERSION
    kept = (grades / "dan" / "grade.json").read_bytes()

    def edit(learner: str, change) -> None:
        path = grades / learner / "grade.json"
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))

    edit("alice", lambda d: d["made_by"].update(grader="0" * 64))  # graded by another grader
    edit("bob", lambda d: d.update(version=RECORD_VERSION + 1))
    (grades / "carol" / "grade.json").write_text("{not json")
    (grades / "eve" / "grade.json").unlink()  # results.json alone is not a record
    assert (grades / "eve" / "results.json").is_file()
    code, progress = _run(tmp_path / "submissions", tmp_path / "grades.csv")
    assert code == 0 and "grading 4 of 5" in progress, progress
    assert "kept 1 learner graded before" in progress, progress
    assert (grades / "dan" / "grade.json").read_bytes() == kept
    for learner in learners:
        again = json.loads((grades / learner / "grade.json").read_text())
        assert again["made_by"] == provenance.versions(), learner
        assert again["version"] == RECORD_VERSION, learner
    assert [_rows(tmp_path / "grades.csv")[x]["total"] for x in learners] == ["1"] * 5


def test_a_broken_grader_stops_the_batch_early(tmp_path, monkeypatch):
    class Broken(_FailingProcess):
        def grade(self, job: dict) -> dict:
            return {"learner": job["learner"], "error": "WorkerError: no sandbox"}

    monkeypatch.setattr(batch, "GradingProcess", Broken)
    for learner in range(10):
        (tmp_path / "submissions" / f"learner{learner}").mkdir(parents=True)
    code, progress = _run(tmp_path / "submissions", tmp_path / "grades.csv")
    assert code == 2 and "the batch stopped" in progress
    assert "so does the reference solution" in progress, progress
    assert progress.count("not graded") == batch.GIVE_UP_AFTER


class _FailsOnSome(_FailingProcess):
    """A sound grader that fails on the learners named ``aa*`` (their submissions crash it,
    as an attacker's may), and grades the reference, lumen's files, to full marks."""

    jobs: list[str] = []

    def grade(self, job: dict) -> dict:
        self.jobs.append(job["learner"])
        if job["learner"].startswith("aa"):
            return {"learner": job["learner"], "error": "GraderError: the worker broke"}
        if job["learner"] != batch.REFERENCE:
            return super().grade(job)
        assert sorted(p.name for p in Path(job["path"]).iterdir()) == sorted(SUBMISSION_FILES)
        grade = Grade(submission="reference", seed=1, devices=["cpu"], sandbox="bwrap",
                      seconds=0.1, stages=[StageGrade(s, 10.0, 10.0, [(TestResult(
                          name="test_x", stage=s, title="x", passed=True), 10.0, 10.0)])
                                           for s in STAGE_NAMES])
        return {"learner": job["learner"], "grade": grade.to_json()}


@pytest.mark.parametrize("failing", [batch.GIVE_UP_AFTER, 2 * batch.GIVE_UP_AFTER])
def test_learners_who_sort_first_cannot_stop_the_class(tmp_path, monkeypatch, failing):
    """Submissions that fail in the grader, however many sort first, stop nothing: the batch
    grades the reference once, which gets full marks, and goes on to everyone else."""
    _FailsOnSome.jobs = []
    monkeypatch.setattr(batch, "GradingProcess", _FailsOnSome)
    names = [f"aa{i}" for i in range(failing)] + ["bob", "carol"]
    for name in names:
        (tmp_path / "submissions" / name).mkdir(parents=True)
    code, progress = _run(tmp_path / "submissions", tmp_path / "grades.csv")
    assert code == 1 and "the batch stopped" not in progress, progress
    assert _FailsOnSome.jobs.count(batch.REFERENCE) == 1, _FailsOnSome.jobs
    rows = _rows(tmp_path / "grades.csv")
    assert rows["bob"]["total"] == rows["carol"]["total"] == "1", rows
    assert progress.count("not graded") == failing, progress


def _answers(starts: list[float], each: float, total: int) -> list[batch.Answer]:
    """A batch of ``total`` learners on one grading process per start-up time in ``starts``,
    each warm learner taking ``each`` seconds (the first pays for its process's start too),
    taken in turn: the answers in the order they come."""
    answers, free, graded = [], list(starts), [0] * len(starts)  # per process: next free at
    for _ in range(total):
        process = min(range(len(free)), key=free.__getitem__)
        free[process] += each
        answers.append(batch.Answer(process, free[process], fresh=not graded[process]))
        graded[process] += 1
    return sorted(answers, key=lambda a: a.at)


@pytest.mark.parametrize("jobs", [1, 2, 4])
def test_the_time_left_leaves_the_start_up_out(jobs):
    """A process's start (here 10 s, five warm learners' time) is paid once: the estimate
    after each answer is the time the rest take at the warm pace, within one learner's time,
    and none is given before a process has answered twice (from the batch's start, the first
    estimate was several times too long)."""
    each, total = 2.0, 12
    answers = _answers([10.0 + 0.5 * k for k in range(jobs)], each, total)
    end = answers[-1].at
    told = [batch.seconds_left(answers[:n], total, jobs) for n in range(1, total + 1)]
    assert told[:jobs] == [None] * jobs, "no process has answered twice yet"
    for n, left in enumerate(told[jobs:-1], start=jobs + 1):
        assert left is not None and abs(left - (end - answers[n - 1].at)) <= each, (n, left)
    assert told[-1] is None, "nothing left"


def test_the_time_left_leaves_a_restart_out():
    """After a failure the process starts again (``fresh``): that gap is no learner's."""
    answers = [batch.Answer(0, 12.0, True), batch.Answer(0, 14.0, False),
               batch.Answer(0, 30.0, True), batch.Answer(0, 32.0, False)]
    assert batch.seconds_left(answers, 10, 1) == 6 * 2.0


def test_discover_names_learners_and_clashes(tmp_path):
    for name in ("alice", "bob", "__MACOSX", ".hidden"):
        (tmp_path / name).mkdir()
    zipfile.ZipFile(tmp_path / "bob.zip", "w").close()
    zipfile.ZipFile(tmp_path / "carol.ZIP", "w").close()
    zipfile.ZipFile(tmp_path / "dan.zip", "w").close()
    zipfile.ZipFile(tmp_path / "dan.ZIP", "w").close()
    (tmp_path / "notes.txt").write_text("x")
    learners, ignored = classbook.discover(tmp_path)
    assert [x.id for x in learners] == ["alice", "bob", "carol", "dan"]
    assert not any(x.problem for x in learners)  # a clash costs nobody their grade
    bob, dan = learners[1], learners[3]
    assert bob.path.name == "bob" and bob.set_aside == ("bob.zip",)  # the folder is graded
    assert dan.path.name == "dan.ZIP" and dan.set_aside == ("dan.zip",)  # the first by name
    assert learners[0].set_aside == learners[2].set_aside == ()
    assert ignored == ["notes.txt"]


def test_a_folder_and_an_archive_of_one_name_grade_the_folder(tmp_path, monkeypatch):
    """victim/ and victim.zip side by side (another's upload named after them): the folder is
    graded, the archive set aside and named to the instructor; the learner keeps their grade."""
    monkeypatch.setattr(batch, "GradingProcess", _FailingProcess)
    (tmp_path / "submissions" / "victim").mkdir(parents=True)
    zipfile.ZipFile(tmp_path / "submissions" / "victim.zip", "w").close()
    code, progress = _run(tmp_path / "submissions", tmp_path / "grades.csv")
    assert code == 0, progress
    assert "victim: graded victim; set aside victim.zip" in progress, progress
    assert _rows(tmp_path / "grades.csv")["victim"]["total"] == "1"


def test_out_dir_is_the_csv_without_its_suffix():
    assert classbook.default_out_dir(Path("marks/grades.csv")) == Path("marks/grades")
    with pytest.raises(ValueError):
        classbook.default_out_dir(Path("grades"))


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
    write_json = batch_records.write_json

    def full_disk_for_one(path: Path, data: dict) -> None:
        if path.parent.name == "ab-unwritable":
            raise OSError(28, "No space left on device")
        write_json(path, data)

    monkeypatch.setattr(batch_records, "write_json", full_disk_for_one)
    code, progress = _run(submissions, tmp_path / "grades.csv", jobs=2, probe_seconds=5)
    assert code == 1 and "the batch stopped" not in progress, progress
    rows = _rows(tmp_path / "grades.csv")
    assert [rows[x]["total"] for x in honest] == [full_marks("embedding")] * 3, progress
    assert rows["aa-surrogate"]["total"] not in ("", full_marks("embedding")), \
        "graded, and lost the forward points"
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
