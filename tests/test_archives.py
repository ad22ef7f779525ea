"""Links and special files in submissions: refused with a message naming the file, never read.

A symbolic link could point at the reference solution (the grader reads with its own rights),
a hard link is the same danger under a second name, and a FIFO would block whoever opens it.
Each problem costs only the file it affects: the other files are taken as they are and graded.
"""

from __future__ import annotations

import os
import stat
import threading
import zipfile
from pathlib import Path

import pytest

from autograder.boundary.intake import (
    MAX_FOLDER_DEPTH,
    MAX_ZIP_MEMBERS,
    UNUSABLE,
    missing,
    prepare,
)
from autograder.grading import Grader
from autograder.options import Limits, Options
from lumen.stages import SUBMISSION_FILES

LUMEN = Path(__file__).resolve().parents[1] / "lumen"
SOURCES = {name: (LUMEN / name).read_bytes() for name in SUBMISSION_FILES}


def _link_entry(archive: zipfile.ZipFile, name: str, target: str) -> None:
    """A zip entry that is a symbolic link, as ``zip --symlinks`` stores one."""
    info = zipfile.ZipInfo(name)
    info.create_system = 3  # Unix: the high 16 bits of external_attr are the mode
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    archive.writestr(info, target)


def _prepared(source: Path, timeout: float = 20.0):
    """``prepare(source)``, failing (not hanging) if it blocks."""
    done: list = []
    thread = threading.Thread(target=lambda: done.append(prepare(source)), daemon=True)
    thread.start()
    thread.join(timeout)
    assert done, f"preparing {source.name} did not finish within {timeout:.0f} s (it blocked)"
    return done[0]


def _check(prepared, bad: str, *words: str) -> None:
    """``bad`` refused with a message holding ``words``; the other two files taken as they are."""
    why = prepared.problems[bad]
    for word in (bad, *words):
        assert word in why, f"{word!r} not in {why!r}"
    assert prepared.files[bad] == UNUSABLE.format(why=why), \
        "an unusable file becomes the stand-in that fails to import with the reason"
    for name in SUBMISSION_FILES:
        if name != bad:
            assert name not in prepared.problems, prepared.problems
            assert prepared.files[name].encode() == SOURCES[name]


def test_a_symlink_entry_in_a_zip_is_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "learner.zip", "w") as archive:
        _link_entry(archive, "exercises/embeddings.py", str(LUMEN / "embeddings.py"))
        for name in ("params.py", "gpt2.py"):
            archive.writestr(f"exercises/{name}", SOURCES[name])
    _check(_prepared(tmp_path / "learner.zip"), "embeddings.py", "symbolic link",
           "submit the file itself")


def test_a_file_behind_a_linked_folder_in_a_zip_is_named(tmp_path):
    """zip --symlinks of an exercises/ folder whose code/ links to the real folder."""
    with zipfile.ZipFile(tmp_path / "learner.zip", "w") as archive:
        _link_entry(archive, "exercises/code", "../../my-lumen")
        for name in ("params.py", "gpt2.py"):
            archive.writestr(f"exercises/{name}", SOURCES[name])
    _check(_prepared(tmp_path / "learner.zip"), "embeddings.py", "exercises/code",
           "symbolic link", "file itself")


def test_entries_under_a_path_the_zip_stores_as_a_link_are_refused(tmp_path):
    """The zip-slip shape: 'exercises' a link and 'exercises/embeddings.py' a file in it."""
    with zipfile.ZipFile(tmp_path / "learner.zip", "w") as archive:
        _link_entry(archive, "exercises", "/tmp")
        archive.writestr("exercises/embeddings.py", SOURCES["embeddings.py"])
        for name in ("params.py", "gpt2.py"):
            archive.writestr(name, SOURCES[name])
    _check(_prepared(tmp_path / "learner.zip"), "embeddings.py", "symbolic link",
           "submit the file itself")


def _folder(path: Path, skip: str) -> Path:
    path.mkdir(parents=True)
    for name in SUBMISSION_FILES:
        if name != skip:
            (path / name).write_bytes(SOURCES[name])
    return path


def test_a_symlinked_file_in_a_folder_is_refused(tmp_path):
    folder = _folder(tmp_path / "learner", skip="gpt2.py")
    (folder / "gpt2.py").symlink_to(LUMEN / "gpt2.py")  # the reference: never read
    _check(_prepared(folder), "gpt2.py", "symbolic link", "submit the file itself")


def test_a_file_behind_a_linked_folder_is_named(tmp_path):
    outside = _folder(tmp_path / "elsewhere", skip="")
    folder = tmp_path / "learner"
    _folder(folder / "exercises", skip="gpt2.py")
    (folder / "exercises" / "code").symlink_to(outside, target_is_directory=True)
    _check(_prepared(folder), "gpt2.py", str(Path("exercises") / "code"), "symbolic link",
           "submit the file itself")


@pytest.mark.parametrize("depth", [1, 3, MAX_FOLDER_DEPTH - 1, MAX_FOLDER_DEPTH + 1, 1200])
def test_a_folder_nested_deep_is_searched_to_a_bound(tmp_path, depth):
    """gpt2.py ``depth`` folders down (an uploaded repository nests a few; 1,200 is past
    Python's recursion limit): taken within MAX_FOLDER_DEPTH, else named missing; either way
    preparing finishes, with the other two files taken as they are."""
    folder = _folder(tmp_path / "learner", skip="gpt2.py")
    deep = folder
    for _ in range(depth):  # one level at a time: Path.mkdir(parents=True) recurses itself
        deep = deep / "d"
        deep.mkdir()
    (deep / "gpt2.py").write_bytes(SOURCES["gpt2.py"])
    try:
        prepared = _prepared(folder)
    finally:  # bottom up: shutil.rmtree (pytest's clean-up) recurses, and would stop the run
        (deep / "gpt2.py").unlink()
        while deep != folder:
            deep.rmdir()
            deep = deep.parent
    if depth < MAX_FOLDER_DEPTH:
        assert not prepared.problems and prepared.files["gpt2.py"].encode() == SOURCES["gpt2.py"]
    else:
        _missing(prepared, "gpt2.py")


def _missing(prepared, name: str) -> None:
    """``name`` named missing, with the fix; the other two files taken as they are."""
    assert prepared.problems == {name: missing(name)} and name not in prepared.files, \
        prepared.problems
    assert all(prepared.files[n].encode() == SOURCES[n] for n in SUBMISSION_FILES if n != name)


@pytest.mark.parametrize("shape", ["wide", "many folders"])
def test_a_folder_of_thousands_of_entries_is_searched_to_a_bound(tmp_path, shape):
    """Thousands of entries before the file (files, or empty folders): the search stops after
    MAX_ZIP_MEMBERS entries and names the file missing, never walking them all."""
    folder = _folder(tmp_path / "learner", skip="gpt2.py")
    crowd = folder / "crowd"
    crowd.mkdir()
    for i in range(MAX_ZIP_MEMBERS + 10):
        (crowd / f"{i:05}").mkdir() if shape == "many folders" else (
            crowd / f"{i:05}").touch()
    (folder / "zz" / "later").mkdir(parents=True)  # sorted after crowd, one level deeper
    (folder / "zz" / "later" / "gpt2.py").write_bytes(SOURCES["gpt2.py"])
    _missing(_prepared(folder), "gpt2.py")


def test_the_shallowest_file_is_taken_first_by_path(tmp_path):
    folder = _folder(tmp_path / "learner", skip="gpt2.py")
    for where, text in (("b/x", "# deeper\n"), ("c", "# c\n"), ("a/deeper/still", "# no\n")):
        (folder / where).mkdir(parents=True)
        (folder / where / "gpt2.py").write_text(text + SOURCES["gpt2.py"].decode())
    assert _prepared(folder).files["gpt2.py"].startswith("# c\n")


def test_a_fifo_in_a_folder_is_refused_without_blocking(tmp_path):
    folder = _folder(tmp_path / "learner", skip="params.py")
    os.mkfifo(folder / "params.py")  # opening it to read would wait for a writer forever
    _check(_prepared(folder), "params.py", "named pipe", "submit the file itself")


def test_a_hard_link_in_a_folder_is_refused(tmp_path):
    folder = _folder(tmp_path / "learner", skip="embeddings.py")
    copy = tmp_path / "elsewhere.py"
    copy.write_bytes(SOURCES["embeddings.py"])
    os.link(copy, folder / "embeddings.py")
    _check(_prepared(folder), "embeddings.py", "hard link", "submit a copy of the file itself")


@pytest.fixture(scope="module")
def grader():
    with Grader(Options(device="cpu", limits=Limits(probe_seconds=5, import_seconds=10,
                                            submission_seconds=60))) as g:
        yield g


def _stage(result, name: str):
    return next(s for s in result.stages if s.name == name)


def test_graded_end_to_end_the_refused_file_costs_its_stage_only(grader, tmp_path):
    """A zip's linked embeddings.py: the embedding stage gets 0 and says why; params (which
    needs only params.py) gets full marks. A folder's FIFO params.py: the reverse."""
    with zipfile.ZipFile(tmp_path / "linked.zip", "w") as archive:
        _link_entry(archive, "embeddings.py", "../lumen/embeddings.py")
        for name in ("params.py", "gpt2.py"):
            archive.writestr(name, SOURCES[name])
    fifo = _folder(tmp_path / "fifo", skip="params.py")
    os.mkfifo(fifo / "params.py")
    for source, bad_stage, good_stage, bad in ((tmp_path / "linked.zip", "embedding", "params",
                                                "embeddings.py"),
                                               (fifo, "params", "embedding", "params.py")):
        result = grader.grade(source, stages=["embedding", "params"])
        refused, graded = _stage(result, bad_stage), _stage(result, good_stage)
        assert refused.score == 0
        message = refused.first_failure.message
        assert bad in message and "submit the file itself" in message, message
        assert graded.score == graded.max_score, \
            [r.message for r, _, _ in graded.tests if not r.passed]
        assert any(bad in note for note in result.notes), result.notes
