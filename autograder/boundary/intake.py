"""Taking in a submission: a folder or a .zip, read into memory as the files the worker imports.

Only the three files a learner submits are taken, each at most ``MAX_FILE`` bytes. From a zip
or a folder they are found wherever they sit (a zipped or uploaded exercises/ folder is
common; the shallowest copy wins), and nothing is extracted by the zip's own paths, so an
absolute or ``../`` name cannot write outside. Only regular files are read: a symbolic link (to
a file, or a folder on the way to one, in a folder or stored as a link in a zip) could point
at the reference solution, so it is refused, as are hard links, FIFOs and devices (a FIFO is
never opened, so it cannot hang the grader). Problems do not stop grading: each one is
recorded, and what it affects gets 0 with that message. A file that is there but unusable (not
UTF-8, too large, unreadable in the zip, a link) is replaced by a two-line module that fails to
import with the problem, so every test that needs it says why, not just "missing".
"""

from __future__ import annotations

import os
import re
import stat
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from lumen.stages import SUBMISSION_FILES

from .clean import clean_text

MAX_FILE = 1 << 20  # 1 MiB: far more than any honest embeddings.py
MAX_ZIP_MEMBERS = 2000
MAX_FOLDER_DEPTH = 32  # folders below a submission's top: an uploaded repository nests a few
#: The grader's line in an unusable file's stand-in (``UNUSABLE``): never quoted to a learner.
STAND_IN = "raise ImportError(__doc__)  # the grader's stand-in: your file was unusable\n"
#: What an unusable file becomes: importing it raises the problem (the docstring) as its error.
UNUSABLE = "{why!r}\n" + STAND_IN
#: A traceback frame as the worker writes it (sandboxed/loader.py's ``error_data``).
FRAME = re.compile(r"(?P<file>[^,]+), line (?P<line>\d+), in (?P<function>[^:]*): (?P<code>.*)",
                   re.DOTALL)


def learner_frames(where: list[str], files: dict[str, str]) -> list[str]:
    """The frames of a learner's traceback that quote code the learner wrote: a frame is kept
    only where ``files`` (name -> the text the worker imported) holds, at that line of a file
    that is not the grader's stand-in (``UNUSABLE``), the very code the frame quotes.

    Every other frame is dropped: a stand-in's line, given code or a scaffold under a learner's
    file name, or a frame the learner's process made up. The frames come from that process, so
    this is checked here, against the files the grader itself sent: no grader source reaches a
    learner's message through ``feedback.describe_error``."""
    kept = []
    for frame in where:
        found = FRAME.fullmatch(frame)
        text = files.get(found["file"]) if found else None
        if text is None or text.endswith(STAND_IN):
            continue
        lines, number = text.splitlines(), int(found["line"])
        if 1 <= number <= len(lines) and lines[number - 1].strip() == found["code"]:
            kept.append(frame)
    return kept


@dataclass
class Prepared:
    """The submission's files, as text, and what was wrong with it."""

    files: dict[str, str] = field(default_factory=dict)  # name -> the text the worker imports
    problems: dict[str, str] = field(default_factory=dict)  # file -> why it is unusable
    notes: list[str] = field(default_factory=list)  # things worth saying that cost nothing


#: What the grader found of a file it needs (``finding``), besides the file itself.
MISSING, REPLACED = "missing", "replaced"


def finding(name: str, files: dict[str, str]) -> str | None:
    """What the grader made of the file ``name`` among a submission's ``files``
    (``Prepared.files``): MISSING (not handed in), REPLACED (there, but unusable: replaced by
    the stand-in ``UNUSABLE``), or None (read as handed in). Decided here, from what the grader
    itself sends, never from what the learner's process says."""
    text = files.get(name)
    return MISSING if text is None else REPLACED if text.endswith(STAND_IN) else None


def hand_in(name: str) -> str:
    """The fix for the file ``name`` missing from a submission, wherever that is said."""
    return f"hand in exercises/{name} (your copy of the stub, with your code in it) with the " \
        "other files"


def missing(name: str) -> str:
    """The note on the file ``name`` missing from a submission: which file, and the fix."""
    return f"{name} is missing from the submission: {hand_in(name)}"


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


class Unusable(Exception):
    """A submitted file that is there but must not be read; the message says why and what to do."""


#: What a non-regular file is, for the message (a link is refused before its kind matters).
KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a named pipe (FIFO)",
         stat.S_IFCHR: "a device file", stat.S_IFBLK: "a device file", stat.S_IFSOCK: "a socket"}


def _refuse_special(name: str, mode: int, links: int) -> None:
    """Only a regular file with one name is read: a link could point at the reference."""
    if stat.S_ISLNK(mode):
        raise Unusable(f"{name} is a symbolic link, which is never followed: submit the file "
                       "itself, not a link to it")
    if not stat.S_ISREG(mode):
        kind = KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise Unusable(f"{name} is {kind}, not a file: submit the file itself")
    if links > 1:
        raise Unusable(f"{name} is a hard link (one file under {links} names), which is never "
                       "read: submit a copy of the file itself")


def read_regular(path: Path, name: str) -> bytes:
    """The bytes of ``path``, a regular file; ``Unusable`` otherwise.

    lstat first, so a FIFO or a device is never opened; then O_NOFOLLOW | O_NONBLOCK and
    fstat, so a file swapped for a link or a FIFO in between is refused, not followed or
    waited on."""
    try:
        before = os.lstat(path)
        _refuse_special(name, before.st_mode, before.st_nlink)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:  # ELOOP: it became a link
        raise Unusable(f"{name} could not be read ({error.strerror}): submit the file itself") \
            from error
    with os.fdopen(fd, "rb") as f:
        now = os.fstat(fd)
        _refuse_special(name, now.st_mode, now.st_nlink)
        if now.st_size > MAX_FILE:
            raise Unusable(f"{name} is larger than {MAX_FILE:,} bytes")
        data = f.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise Unusable(f"{name} is larger than {MAX_FILE:,} bytes")
    return data


def _find_in_folder(source: Path, name: str) -> tuple[Path | None, list[Path]]:
    """``name`` at the top of ``source``, else the shallowest one below it (an uploaded
    repository or an unzipped exercises/ folder; the first by path among equals); never
    through a linked folder. Also the linked folders passed by, to say why a file behind one
    is not taken. Breadth first and bounded: at most ``MAX_FOLDER_DEPTH`` folders deep and
    ``MAX_ZIP_MEMBERS`` entries looked at, so a folder nested past Python's recursion limit
    or holding millions of entries costs no more than an honest one."""
    if os.path.lexists(source / name):
        return source / name, []
    seen, linked, level = 0, [], [source]
    for _ in range(MAX_FOLDER_DEPTH):
        below = []
        for here in level:
            try:
                with os.scandir(here) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError:  # unreadable, or gone: nothing of the learner's to take there
                continue
            seen += len(entries)
            for entry in entries:
                if entry.name == name and not _is_folder(entry):
                    return Path(entry.path), linked
            for entry in entries:
                if _is_folder(entry) and not entry.name.startswith((".", "__MACOSX")):
                    (linked if entry.is_symlink() else below).append(Path(entry.path))
            if seen > MAX_ZIP_MEMBERS:
                return None, linked
        if not below:
            break
        level = below
    return None, linked


def _is_folder(entry: os.DirEntry) -> bool:
    """A folder, or a link to one (as os.walk counts them: passed by, never followed)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _from_folder(source: Path, prepared: Prepared) -> dict[str, bytes]:
    found = {}
    for name in SUBMISSION_FILES:
        path, linked = _find_in_folder(source, name)
        if path is None:
            behind = [d for d in linked if os.path.lexists(d / name)]  # lstat only: not read
            if behind:
                where = behind[0].relative_to(source)
                prepared.problems[name] = (
                    f"{name} is inside {where}, a symbolic link to a folder, and links are "
                    "never followed: submit the file itself, not a link to the folder")
            continue
        try:
            found[name] = read_regular(path, name)
        except Unusable as why:
            prepared.problems[name] = str(why)
    return found


def _zip_kind(info: zipfile.ZipInfo) -> int:
    """The entry's file type from its Unix mode (0 when the zip has none, as on Windows)."""
    return stat.S_IFMT(info.external_attr >> 16)


def _zip_refusal(name: str, info: zipfile.ZipInfo, links: set[PurePosixPath]) -> str | None:
    """Why the zip's entry ``info`` for ``name`` must not be read, if it must not."""
    path = PurePosixPath(info.filename.replace("\\", "/"))
    behind = next((p for p in path.parents if p in links), None)
    if behind is not None:
        return (f"{name} is inside {str(behind)!r}, which the zip also stores as a symbolic "
                "link: submit the file itself, in a real folder")
    kind = _zip_kind(info)
    if kind == stat.S_IFLNK:  # its data is the link's target path, not code
        return (f"{name} in the zip is a symbolic link, not the file: submit the file itself "
                "(zip stores a link as a link with --symlinks / -y)")
    if kind not in (0, stat.S_IFREG):
        return f"{name} in the zip is {KINDS.get(kind, 'not a regular file')}, not a file"
    return None


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
        links: set[PurePosixPath] = set()  # entries that are symbolic links (to files or folders)
        for info in members[:MAX_ZIP_MEMBERS]:
            path = PurePosixPath(info.filename.replace("\\", "/"))
            if info.is_dir() or "__MACOSX" in path.parts:
                continue
            if path.is_absolute() or ".." in path.parts:
                prepared.notes.append(f"ignored {info.filename!r}: absolute or ../ paths are "
                                      "never extracted")
                continue
            if _zip_kind(info) == stat.S_IFLNK:
                links.add(path)
            if path.name in SUBMISSION_FILES:
                candidates.setdefault(path.name, []).append(info)
        folder_links = sorted(p for p in links if p.name not in SUBMISSION_FILES)
        for name in SUBMISSION_FILES:
            if name not in candidates and folder_links:  # perhaps behind a linked folder
                shown = ", ".join(repr(str(p)) for p in folder_links[:3])
                prepared.problems[name] = (
                    f"{name} is not in the zip, which holds symbolic links ({shown}) that are "
                    "never followed: zip the file itself, not a link to the folder holding it")
        for name, infos in candidates.items():
            info = min(infos, key=lambda i: len(PurePosixPath(i.filename).parts))  # the shallowest
            if (why := _zip_refusal(name, info, links)) is not None:
                prepared.problems[name] = why
                continue
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
    """Read the submission at ``source`` (folder or .zip): its files as data, for the worker,
    which writes them where only the stage process can read them."""
    prepared = Prepared()
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
    # File and entry names, and zipfile's errors, are the learner's text: cleaned for the report
    prepared.notes = [clean_text(note) for note in prepared.notes]
    prepared.problems = {name: clean_text(why) for name, why in prepared.problems.items()}
    for name in SUBMISSION_FILES:
        if name not in found and name not in prepared.problems:
            prepared.problems[name] = missing(name)
            continue  # the worker says so itself, in every test that needs it
        if name in found and _check_text(name, found[name], prepared):
            prepared.files[name] = found[name].decode("utf-8")
        else:  # there but unusable: a stand-in whose import fails with the reason
            prepared.files[name] = UNUSABLE.format(why=prepared.problems[name])
    return prepared


def syntax_notes(files: dict[str, str]) -> list[str]:
    """A note for each of the submission's ``files`` (``Prepared.files``) that does not compile
    ("embeddings.py: SyntaxError at line 7: ..."), as other malformed files get one. Compiled
    here, never run: the grader reads the source this way anyway (autograder/rules/)."""

    notes = []
    for name, source in files.items():
        try:
            with warnings.catch_warnings():  # SyntaxWarnings are the learner's, not the log's
                warnings.simplefilter("ignore")
                compile(source, name, "exec", dont_inherit=True)
        except SyntaxError as error:  # IndentationError and TabError too
            notes.append(f"{name}: {type(error).__name__} at line {error.lineno}: "
                         f"{clean_text(str(error.msg), 200)}")
        except Exception as error:  # noqa: BLE001 - null bytes, deep nesting, whatever else:
            notes.append(f"{name} cannot be compiled ({type(error).__name__})")  # the learner's
    return notes
