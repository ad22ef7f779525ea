"""Fail closed: learner code never runs unsandboxed unless the operator asks for it by name,
never as a user who can read the grader's files, and operator notes never reach a learner.

Every front end's ``--sandbox`` is ``autograder/boundary/launcher.py``'s one option: bwrap by
default, where a bwrap that is missing or cannot start is an error naming the fix (exit 2, no
grade), never a quiet plain process. ``unsafe-process`` run as root still gives each stage process
an unprivileged user and a private root (``sandboxed/isolation.py``): the attacks below, written
by someone who knows where everything lives, find nothing of the grader in either mode.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from autograder.__main__ import main
from autograder.boundary.launcher import (
    FIRST_UID,
    GRADER,
    BwrapLauncher,
    PlainLauncher,
    choose_launcher,
    view,
)
from autograder.grading import Grader, GraderError
from autograder.options import Limits, Options
from autograder.results import Grade
from autograder.views import report
from lumen.stages import SUBMISSION_FILES
from tests.variants.build import make_submission

REPO = Path(__file__).resolve().parents[1]
AS_ROOT = os.geteuid() == 0
HAS_BWRAP = BwrapLauncher.find() is not None
MODES = [pytest.param("bwrap", marks=pytest.mark.skipif(not HAS_BWRAP, reason="no bwrap")),
         pytest.param("unsafe-process", marks=pytest.mark.skipif(
             not AS_ROOT, reason="as anyone but root, the unsafe mode cannot hide anything"))]

#: What the learner's code tries to read: the reference, the hidden suites, the generator, the
#: course source, this repository's tests, the grader's CLI, its process's own files.
SECRETS = {
    "lumen": REPO / "lumen" / "embeddings.py",
    "suite": REPO / "autograder" / "suites" / "test_embedding.py",
    "rubric": REPO / "autograder" / "rubric.toml",
    "solutions": REPO / "solutions" / "release.py",
    "course": REPO / "solutions" / "course" / "nbgrader_config.py",
    "tests": REPO / "tests" / "test_fail_closed.py",
    "grader": REPO / "autograder" / "grading.py",
}


def _attack(targets: dict[str, str], writes: list[str]) -> dict:
    """A forward that tries every read and write, by path and by listing, and raises with what
    it managed: the grader's message then carries it back (``found: ...``)."""
    body = f'''
        import os
        caps = [line.split()[1] for line in open("/proc/self/status")
                if line.startswith("CapEff")]
        found = ["uid=%d" % os.getuid(), "euid=%d" % os.geteuid(), "caps=" + caps[0]]
        for name, path in {targets!r}.items():
            try:
                with open(path, "rb") as f:
                    found.append("read:" + name + ":" + str(len(f.read())))
            except OSError as e:
                pass
            try:
                os.listdir(os.path.dirname(path))
                found.append("listed:" + name)
            except OSError:
                pass
        for path in {writes!r}:
            try:
                with open(path, "w") as f:
                    f.write("pwned")
                found.append("wrote:" + path)
            except OSError:
                pass
        try:
            if os.getuid() != 0:  # (uid 0 of bwrap's own user namespace: caps say the rest)
                os.setuid(0)
                found.append("became-root")
        except OSError:
            pass
        raise RuntimeError("found: " + " ".join(found) + " :end")
    '''
    code = "def forward(self, ids):\n" + textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return {"embeddings:Embedding.forward": code + "\n"}


def _found(result) -> list[str]:
    for stage in result.stages:
        for r, _, _ in stage.tests:
            match = re.search(r"found: (.*?) :end", r.message)
            if match:
                return match.group(1).split()
    messages = [r.message for s in result.stages for r, _, _ in s.tests]
    raise AssertionError(f"the attack never reported: {messages}")


@pytest.mark.parametrize("mode", MODES)
def test_learner_code_reads_and_writes_nothing_of_the_grader(mode, tmp_path):
    other = make_submission(tmp_path / "others" / "alice", {})  # another learner, graded before
    targets = {name: str(path) for name, path in SECRETS.items()}
    targets["other-learner"] = str(other / "embeddings.py")
    outside = [str(tmp_path / "written-outside"), str(REPO / "written-outside"),
               "/root/written-outside", str(other / "embeddings.py")]
    folder = make_submission(tmp_path / "attacker", _attack(targets, outside))
    limits = Limits(probe_seconds=10, submission_seconds=60)
    with Grader(Options(device="cpu", sandbox=mode, limits=limits)) as grader:
        result = grader.grade(folder, stages=["embedding"])
    found = _found(result)
    uid = int(found[0].removeprefix("uid="))
    assert found[1] == f"euid={uid}" and found[2] == "caps=0000000000000000", found
    if AS_ROOT:  # a user of its own; else bwrap's user namespace's only user, no capability
        assert uid >= FIRST_UID, found
    assert found[3:] == [], f"learner code under --sandbox {mode} got: {found[3:]}"
    for path in outside[:-1]:
        assert not Path(path).exists(), path
    assert "pwned" not in (other / "embeddings.py").read_text()
    assert result.stages[0].score < result.stages[0].max_score


@pytest.mark.parametrize("mode", MODES)
def test_an_honest_submission_grades_the_same_in_every_mode(mode, tmp_path):
    folder = tmp_path / "lumen-copy"
    folder.mkdir()
    for name in SUBMISSION_FILES:
        (folder / name).write_text((REPO / "lumen" / name).read_text())
    with Grader(Options(device="cpu", sandbox=mode)) as grader:
        result = grader.grade(folder, seed=11)
    assert result.score == 100, report.terminal(result)
    assert result.sandbox == mode


# --- no bwrap: an error that names the fix, in every front end ------------------------------


@pytest.fixture
def no_bwrap(monkeypatch):
    """bwrap as on a machine where it is missing, or present but unable to start."""
    monkeypatch.setattr(BwrapLauncher, "probe", staticmethod(
        lambda: (None, "/usr/bin/bwrap cannot start a sandbox here (bwrap: setting up uid "
                       "map: Permission denied)")))


def _says_the_fix(text: str) -> None:
    assert "apt-get install bubblewrap" in text, text
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in text, text
    assert "--sandbox unsafe-process" in text and "lumen/" in text, text


def test_no_bwrap_is_an_error_naming_the_fix(no_bwrap):
    with pytest.raises(GraderError) as raised:
        choose_launcher()
    _says_the_fix(str(raised.value))
    assert "Permission denied" in str(raised.value)  # what bwrap said
    with pytest.raises(GraderError):
        Grader(Options(device="cpu"))


@pytest.mark.parametrize("kind", ["auto", "process", "", "none"])
def test_only_the_named_sandboxes_exist(kind):
    """The old silent ``auto`` and the plain ``process`` are gone: nothing falls back."""
    with pytest.raises(GraderError):
        choose_launcher(kind)
    with pytest.raises(SystemExit):
        main(["grade", "lumen", "--sandbox", kind])


def test_grade_without_bwrap_exits_2_and_writes_no_results(no_bwrap, tmp_path, capsys):
    out = tmp_path / "results.json"
    assert main(["grade", str(REPO / "lumen"), "--out", str(out)]) == 2
    _says_the_fix(capsys.readouterr().err)
    assert not out.exists()


def test_grade_batch_without_bwrap_stops_before_any_learner(no_bwrap, tmp_path, capsys):
    make_submission(tmp_path / "class" / "alice", {})
    out = tmp_path / "grades.csv"
    assert main(["grade-batch", str(tmp_path / "class"), "--out", str(out)]) == 2
    _says_the_fix(capsys.readouterr().err)
    assert not out.exists() and not (tmp_path / "grades").exists()


def test_nbgrade_without_bwrap_stops_before_any_learner(no_bwrap, tmp_path, capsys):
    (tmp_path / "class" / "alice").mkdir(parents=True)
    course = tmp_path / "course"
    assert main(["nbgrade", str(tmp_path / "class"), "--course", str(course)]) == 2
    _says_the_fix(capsys.readouterr().err)
    assert not course.exists()


def test_unsafe_mode_not_as_root_says_what_learner_code_can_read(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    launcher = PlainLauncher()
    assert not launcher.uses_uids() and launcher.child_limits(200_000) == {}
    for words in ("uid 1000", "outside any sandbox", "lumen/", "autograder/suites/",
                  "solutions/", "other learners' submissions", "network"):
        assert words in launcher.warning, launcher.warning
    assert "--private-root" not in launcher.command(Path("w.py"), Path("/x"), Path("/r"),
                                                    Path("/s"))


def test_unsafe_mode_as_root_confines_every_stage_process(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    launcher = PlainLauncher()
    assert launcher.uses_uids() and launcher.child_limits(200_000)["uid"] == 200_000
    args = launcher.command(Path("w.py"), Path("/x"), Path("/r"), Path("/s"))
    shown = json.loads(args[args.index("--private-root") + 1])
    assert shown == json.loads(json.dumps(view(Path("/x"), GRADER, False)))
    assert not any(inside == str(REPO) or inside.startswith(str(REPO) + "/lumen")
                   or inside.startswith(str(REPO) + "/autograder")
                   for _, inside in shown["read_only"])


# --- operator notes stay with the operator ---------------------------------------------------

OPERATOR_WORDS = ("sandbox", "unsafe", "bubblewrap", "bwrap", "memory bound", "as root")


def _learner_sees(text: str, where: str) -> None:
    for word in OPERATOR_WORDS:
        assert word not in text.lower(), f"{where} shows the operator's {word!r}: {text}"


@pytest.mark.skipif(not AS_ROOT, reason="the unsafe mode confines learner code only as root")
def test_operator_notes_never_reach_the_learner(tmp_path, capsys):
    """Gradescope's top-level output and test entries, the batch's feedback.txt, the
    Classroom step's printed summary: none says how the sandbox ran; the operator's stderr and
    extra_data (instructors only) do."""
    from autograder.frontends import batch_records, batch_server, classbook, classroom
    from autograder.frontends.summary import write_summary

    folder = make_submission(tmp_path / "bob", {"embeddings:Embedding.forward":
                                                "def forward(self, ids):\n    return 0\n"})
    out = tmp_path / "results.json"
    assert main(["grade", str(folder), "--sandbox", "unsafe-process", "--out", str(out),
                 "--stage", "embedding"]) == 0
    err = capsys.readouterr().err
    assert "unsafe-process" in err and "memory bound" in err  # the operator is told
    data = json.loads(out.read_text())
    _learner_sees(data["output"], "results.json's output")
    for test in data["tests"]:
        _learner_sees(test["name"] + test["output"], "a test entry")
    assert data["extra_data"]["sandbox"] == "unsafe-process"
    assert any("unsafe-process" in n for n in data["extra_data"]["operator_notes"])

    with Grader(Options(device="cpu", sandbox="unsafe-process")) as grader:
        reply = batch_server.grade_one(grader, {"learner": "bob", "path": str(folder),
                                         "stages": ["embedding"]})
    batch_records.write_learner(tmp_path / "grades" / "bob", Grade.from_json(reply["grade"]),
                        "after_due_date")
    _learner_sees((tmp_path / "grades" / "bob" / "feedback.txt").read_text(), "feedback.txt")
    _learner_sees(json.loads((tmp_path / "grades" / "bob" / "results.json").read_text())[
        "output"], "the batch's results.json output")
    write_summary(tmp_path / "grades", classbook.collect(
        [classbook.Learner("bob", folder)], tmp_path / "grades"))
    summary = (tmp_path / "grades" / "summary.md").read_text()
    assert "Not graded in bubblewrap" in summary and "unsafe-process" in summary, summary

    capsys.readouterr()
    record = tmp_path / "grade.json"  # Classroom's hidden mode: its grading step, its report
    assert classroom.grade(folder, record, "unsafe-process") == 0
    capsys.readouterr()  # the full report, which the workflow sends nowhere
    classroom.report(record, 0, github_output=str(tmp_path / "github-output"))
    printed = capsys.readouterr().out
    assert "total" in printed and classroom.GRADER_FAILED not in printed, printed
    _learner_sees(printed, "Classroom's summary")


# --- make sandbox: fails, never a note, unless the operator opted out --------------------------


def _make_sandbox(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new "
                                "namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "sandbox", *extra],
                          env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"},
                          capture_output=True, text=True, timeout=120)


def test_make_sandbox_fails_where_bwrap_cannot_start(tmp_path):
    done = _make_sandbox(tmp_path)
    assert done.returncode != 0, done.stdout + done.stderr
    _says_the_fix(done.stderr)


def test_make_sandbox_passes_when_the_operator_opts_out(tmp_path):
    done = _make_sandbox(tmp_path, "SANDBOX=unsafe-process")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: --sandbox unsafe-process" in done.stderr


@pytest.mark.skipif(not AS_ROOT, reason="the private root is built only as root")
def test_a_private_root_that_cannot_be_built_stops_the_worker_not_a_stage(monkeypatch):
    """The zygote tries the whole isolation once before it says ready: where it fails, the
    worker does not start (a grading error, exit 2), instead of a stage crashing as if the
    learner's code had."""
    import sys

    monkeypatch.syspath_prepend(str(REPO / "autograder" / "sandboxed"))
    import isolation  # the worker's own module, as the zygote imports it

    good = json.dumps(view(REPO / "autograder" / "sandboxed", GRADER, False))
    try:
        isolation.confine_to(good)
        broken = json.loads(good)
        broken["links"] = {"/usr": "elsewhere"}  # a link where a folder is shown: mkdir fails
        with pytest.raises(SystemExit, match="cannot build its private root"):
            isolation.confine_to(json.dumps(broken))
    finally:
        isolation.confine_to(None)
        sys.modules.pop("isolation", None)


@pytest.mark.parametrize("root", [True, False])
def test_bwrap_gives_every_stage_process_an_unprivileged_user(monkeypatch, tmp_path, root):
    """As root: a user id of its own per stage process. As anyone else, bwrap's user namespace
    maps only that user: the worker is root there, so that stage processes can still isolate
    themselves, and each then drops every capability (the attack above, run without root,
    reads CapEff 0)."""
    monkeypatch.setattr(os, "geteuid", lambda: 0 if root else 1000)
    (tmp_path / "run").mkdir()
    launcher = BwrapLauncher("/usr/bin/bwrap")
    try:
        args = launcher.command(Path("w.py"), Path("/x"), tmp_path / "run", tmp_path)
    finally:
        launcher.release()
    limits = launcher.child_limits(FIRST_UID)
    if root:
        assert launcher.uses_uids() and limits["uid"] == FIRST_UID
        assert "--unshare-user" not in args and "--cap-add" not in args
    else:
        assert not launcher.uses_uids() and limits["uid"] is None
        assert limits["drop_capabilities"] and limits["processes"] >= 64
        assert args[args.index("--unshare-user"):][:7] == [
            "--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL"]
