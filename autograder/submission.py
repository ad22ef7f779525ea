"""Taking in a submission: a folder or a .zip, copied into a private folder the worker can see.

Only the three files a learner submits are taken, each at most ``MAX_FILE`` bytes. From a zip
or a folder they are found wherever they sit (a zipped or uploaded exercises/ folder is
common; the shallowest copy wins), symbolic links are never followed, and nothing is extracted
by the zip's own paths, so an absolute or ``../`` name cannot write outside. Problems do not
stop grading: each one is recorded, and what it affects gets 0 with that message. A file that
is there but unusable (not UTF-8, too large, unreadable in the zip, a symbolic link) is
replaced by a two-line module that fails to import with the problem, so every test that needs
it says why, not just "missing".
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from lumen.stages import SUBMISSION_FILES

MAX_FILE = 1 << 20  # 1 MiB: far more than any honest embeddings.py
MAX_ZIP_MEMBERS = 2000
#: What an unusable file becomes: importing it raises the problem (the docstring) as its error.
UNUSABLE = "{why!r}\nraise ImportError(__doc__)  # the grader's stand-in: your file was unusable\n"


@dataclass
class Prepared:
    """The submission's private copy and what was wrong with it."""

    folder: Path
    problems: dict[str, str] = field(default_factory=dict)  # file -> why it is unusable
    notes: list[str] = field(default_factory=list)  # things worth saying that cost nothing

    def cleanup(self) -> None:
        shutil.rmtree(self.folder.parent, ignore_errors=True)


def _check_text(name: str, data: bytes, prepared: Prepared) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        prepared.problems[name] = (
            f"{name} is not UTF-8 text (byte {data[error.start]:#04x} at position "
            f"{error.start}): save it as UTF-8"
        )
        return False
    return True


def _find_in_folder(source: Path, name: str) -> Path | None:
    """``name`` at the top of ``source``, else the shallowest one below it (an uploaded
    repository or an unzipped exercises/ folder); never through a linked folder."""
    if (source / name).exists() or (source / name).is_symlink():
        return source / name
    seen, best = 0, None
    for folder, subfolders, files in os.walk(source):  # does not follow links
        subfolders[:] = sorted(d for d in subfolders if not d.startswith((".", "__MACOSX")))
        seen += len(files) + len(subfolders)
        if seen > MAX_ZIP_MEMBERS:
            break
        here = Path(folder)
        if name in files and (best is None or len(here.parts) < len(best.parent.parts)):
            best = here / name
    return best


def _from_folder(source: Path, prepared: Prepared) -> dict[str, bytes]:
    found = {}
    for name in SUBMISSION_FILES:
        path = _find_in_folder(source, name)
        if path is None:
            continue
        if path.is_symlink():  # never read through a link: it could point at any file here
            prepared.problems[name] = f"{name} is a symbolic link: submit the file itself"
            continue
        if not path.is_file():
            prepared.problems[name] = f"{name} is not a regular file"
            continue
        if path.stat().st_size > MAX_FILE:
            prepared.problems[name] = f"{name} is larger than {MAX_FILE:,} bytes"
            continue
        found[name] = path.read_bytes()
    return found


def _from_zip(source: Path, prepared: Prepared) -> dict[str, bytes]:
    try:
        archive = zipfile.ZipFile(source)
    except Exception as error:  # noqa: BLE001 - any malformed zip is the learner's to fix
        prepared.notes.append(f"{source.name} is not a readable zip file ({error})")
        return {}
    found: dict[str, bytes] = {}
    with archive:
        members = archive.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            prepared.notes.append(f"the zip holds {len(members):,} entries; only the first "
                                  f"{MAX_ZIP_MEMBERS:,} were looked at")
        candidates: dict[str, list[zipfile.ZipInfo]] = {}
        for info in members[:MAX_ZIP_MEMBERS]:
            path = PurePosixPath(info.filename.replace("\\", "/"))
            if info.is_dir() or "__MACOSX" in path.parts:
                continue
            if path.is_absolute() or ".." in path.parts:
                prepared.notes.append(f"ignored {info.filename!r}: absolute or ../ paths are "
                                      "never extracted")
                continue
            if path.name in SUBMISSION_FILES:
                candidates.setdefault(path.name, []).append(info)
        for name, infos in candidates.items():
            info = min(infos, key=lambda i: len(PurePosixPath(i.filename).parts))  # the shallowest
            if info.file_size > MAX_FILE:
                prepared.problems[name] = f"{name} in the zip is larger than {MAX_FILE:,} bytes"
                continue
            try:
                with archive.open(info) as member:
                    data = member.read(MAX_FILE + 1)  # never trust the header's size (bombs)
            except Exception as error:  # noqa: BLE001 - bad CRC, corrupt data, encrypted, ...
                prepared.problems[name] = (f"{name} could not be read from the zip "
                                           f"({type(error).__name__}: {error}): zip it again")
                continue
            if len(data) > MAX_FILE:
                prepared.problems[name] = f"{name} in the zip is larger than {MAX_FILE:,} bytes"
                continue
            found[name] = data
    return found


def prepare(source: Path) -> Prepared:
    """Copy the submission at ``source`` (folder or .zip) into a new private folder."""
    root = Path(tempfile.mkdtemp(prefix="lumen-submission-"))
    folder = root / "submission"
    folder.mkdir()
    prepared = Prepared(folder)
    source = Path(source)
    if source.is_dir():
        found = _from_folder(source, prepared)
    elif source.is_file() and zipfile.is_zipfile(source):
        found = _from_zip(source, prepared)
    elif source.exists():
        prepared.notes.append(f"{source} is neither a folder nor a .zip file")
        found = {}
    else:
        raise FileNotFoundError(f"no submission at {source}")
    for name in SUBMISSION_FILES:
        if name not in found and name not in prepared.problems:
            prepared.problems[name] = f"{name} is missing from the submission"
            continue  # the worker says so itself, in every test that needs it
        if name in found and _check_text(name, found[name], prepared):
            (folder / name).write_bytes(found[name])
        else:  # there but unusable: a stand-in whose import fails with the reason
            why = prepared.problems[name]
            (folder / name).write_text(UNUSABLE.format(why=why), encoding="utf-8")
    return prepared
