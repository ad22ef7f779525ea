"""A class graded as shards, then merged: ``grade-batch --shard K/N`` and ``merge-shards``.

No scheduler of our own: a Slurm job array, a Kubernetes Indexed Job or a GitHub Actions matrix
(``deploy/``) runs each shard into its own output, and one ``merge-shards`` combines them.
``shard_of`` hashes the learner's id with SHA-256 (never the salted ``hash()``), so a learner
falls in the same shard on every node, whatever the order or number of learners. A shard is a
batch like any other (``frontends/batch.py``): it resumes, and one that died is rerun alone.

A finished shard writes a manifest, ``.shard.json``: K and N, the digests of the grader's code
and rubric, the options that change a verdict, the class it saw, and the SHA-256 of each file
it wrote per learner (``RECORD_FILES``). The merge copies exactly those files, checked against
the digests, and refuses, saying why and how to fix it, anything that does not add up (a
shard unfinished, missing or given twice; another N, grader, rubric, options or class; a file
changed since). It renders the class files with a single run's code
(``classbook.write_class_files``), so a merge writes the same bytes as one run.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from ..boundary.clean import MAX_NAME
from ..options import Options
from ..views.escape import terminal
from ..views.report import write_atomic, write_json
from ..words import counted
from . import classbook
from .classbook import ERROR, FEEDBACK, GRADE, RESULTS
from .provenance import versions

MANIFEST = ".shard.json"  # a dot name: discover() never takes it for a learner
MERGED = ".merged.json"  # marks a folder merge-shards wrote, which a later merge may refresh
FORMAT = 1
#: The seed policy: every learner is graded with a seed of their own, drawn fresh (stored in
#: their grade.json). A future policy (a fixed seed per class) gets another name here.
SEED_POLICY = "fresh per learner"
#: The files the grader writes for a learner, which the merge carries over (the record last).
RECORD_FILES = (RESULTS, FEEDBACK, ERROR, GRADE)
#: The options that change a learner's verdict or record: shards must agree on each.
VERDICT_OPTIONS = ("stages", "visibility", "probe_seconds", "sandbox")
#: How a shard is graded, in docs/cluster.md's layout: the merge's refusal of a missing shard
#: names it, and tests/test_shards.py checks docs/cluster.md still does.
SHARD_COMMAND = ("python -m autograder grade-batch SUBMISSIONS/ --shard K/N "
                 "--out grades/shard-K.csv")


class ShardError(ValueError):
    """The shards cannot be merged as given; the message names the problem and the fix."""


def parse_shard(value: str) -> tuple[int, int]:
    """``"2/3"`` -> (2, 3): shard K of N, counted from 1."""
    try:
        k, n = (int(part) for part in value.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--shard {value!r}: write K/N, e.g. 2/3 for the second of three shards") from None
    if n < 1 or not 1 <= k <= n:
        raise argparse.ArgumentTypeError(
            f"--shard {value}: K must be between 1 and N (N at least 1), e.g. 1/{max(n, 1)}")
    return k, n


def _id_bytes(learner: str) -> bytes:
    """The id as the file system holds it (a folder name may be any bytes)."""
    return os.fsencode(learner)


def shard_of(learner: str, n: int) -> int:
    """The shard (1..n) that grades ``learner``: SHA-256 of its id, the same on every machine
    and in every process (Python's ``hash()`` is salted per process)."""
    digest = hashlib.sha256(_id_bytes(learner)).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def _key(learner: str) -> str:
    """The manifest's key for a learner: the id, or for one that is not UTF-8 its bytes in hex
    behind a '/' (which no folder name holds), so any id survives JSON exactly."""
    try:
        learner.encode("utf-8")
        return learner
    except UnicodeEncodeError:
        return "/hex/" + _id_bytes(learner).hex()


def _unkey(key: str) -> str:
    return os.fsdecode(bytes.fromhex(key[len("/hex/"):])) if key.startswith("/hex/") else key


def class_digest(learners: list[str]) -> str:
    return hashlib.sha256(b"\n".join(_id_bytes(x) for x in sorted(learners))).hexdigest()


def _file_digest(path: Path) -> str:
    return hashlib.sha256(_read_regular(path)).hexdigest()


def _read_regular(path: Path) -> bytes:
    """A regular file's bytes, never through a link (O_NOFOLLOW) nor from a FIFO or device."""
    not_plain = ShardError(f"{terminal(str(path), 300)} is not a plain file: only files the "
                           "grader wrote are merged; rerun that shard with --force")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:  # a symbolic link
            raise not_plain from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise not_plain
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def forget(out_dir: Path) -> None:
    """A shard starts: its old manifest goes, so a shard that dies now is never merged with
    records the manifest does not describe."""
    (out_dir / MANIFEST).unlink(missing_ok=True)


def write_manifest(out_dir: Path, shard: tuple[int, int], everyone: list[str],
                   mine: list[str], options: Options, started_with: dict[str, str]) -> None:
    """The shard's manifest, written last, once the shard finished (``batch.run``), with the
    ``options`` it graded under; ``started_with``: ``provenance.versions()`` as the shard
    started."""
    graded = options.to_json() | {"probe_seconds": options.limits.probe_seconds}
    records = {}
    for learner in mine:
        folder = out_dir / learner
        records[_key(learner)] = {name: _file_digest(folder / name) for name in RECORD_FILES
                                  if (folder / name).is_file()}
    write_json(out_dir / MANIFEST, {
        "format": FORMAT, "shard": shard[0], "of": shard[1],
        "grader": started_with["grader"], "rubric": started_with["rubric"],
        "seed": SEED_POLICY,
        "options": {k: graded[k] for k in VERDICT_OPTIONS},
        "device": options.device,  # noted, not compared: scores are device-independent
        "class": {"learners": len(everyone), "digest": class_digest(everyone)},
        "learners": records})


# --- the merge ---------------------------------------------------------------------------------


@dataclass
class Shard:
    where: str  # the folder as given, for messages
    folder: Path
    manifest: dict

    @property
    def name(self) -> str:
        return f"shard {self.manifest['shard']}/{self.manifest['of']} ({self.where})"


def shard_folder(path: Path) -> Path:
    """A shard's per-learner folder, from its CSV (grades-2.csv -> grades-2/) or the folder."""
    return path if path.is_dir() or not path.suffix else path.with_suffix("")


def load(path: Path) -> Shard:
    folder = shard_folder(path)
    where = terminal(str(path), 300)
    try:
        manifest = json.loads(_read_regular(folder / MANIFEST).decode("utf-8"))
    except FileNotFoundError:
        raise ShardError(
            f"{where} holds no shard manifest ({MANIFEST}): either it is not the output of "
            "`grade-batch --shard K/N`, or that shard stopped before it finished; rerun it with "
            "the same command (it resumes where it stopped), then merge again") from None
    except (OSError, ValueError) as error:
        raise ShardError(f"{where}: its {MANIFEST} cannot be read ({error}): rerun that shard "
                         "(it resumes), then merge again") from None
    if not _well_formed(manifest):
        raise ShardError(f"{where}: its {MANIFEST} is not one this grader writes: rerun that "
                         "shard with this grader, then merge again")
    return Shard(where, folder, manifest)


#: A manifest's fields and their types, as ``write_manifest`` writes them.
FIELDS = {"format": int, "shard": int, "of": int, "grader": str, "rubric": str, "seed": str,
          "options": dict, "class": dict, "learners": dict}


def _well_formed(manifest: object) -> bool:
    """Whether ``manifest`` has the fields and types ``write_manifest`` writes (so the
    checks that follow compare values, never trip over a missing key)."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return False
    if not all(isinstance(manifest.get(k), t) for k, t in FIELDS.items()):
        return False
    seen = manifest["class"]
    return (1 <= manifest["shard"] <= manifest["of"]
            and isinstance(seen.get("learners"), int) and isinstance(seen.get("digest"), str)
            and all(isinstance(files, dict) and set(files) <= set(RECORD_FILES)
                    and all(isinstance(v, str) for v in files.values())
                    for files in manifest["learners"].values()))


def check(shards: list[Shard]) -> dict[str, Shard]:
    """Every learner of the class and the shard holding their records; raises ShardError
    naming the problem and the fix."""
    if not shards:
        raise ShardError("no shards given: name each shard's CSV or folder")
    first = shards[0]
    rerun = ("grade them all with the same grader, rubric and options (delete the odd one's "
             "folder and rerun it), then merge again")
    for s in shards[1:]:
        m, f = s.manifest, first.manifest
        if m["of"] != f["of"]:
            raise ShardError(f"{s.name} and {first.name} split the class into different numbers "
                             f"of shards ({m['of']} and {f['of']}): every shard of one merge "
                             "needs the same N")
        for field, what in (("rubric", "rubric (autograder/rubric.toml)"),
                            ("grader", "version of the grader"), ("seed", "seed policy")):
            if m[field] != f[field]:
                raise ShardError(f"{s.name} and {first.name} were graded with a different "
                                 f"{what}: {rerun}")
        for option in VERDICT_OPTIONS:
            if m["options"].get(option) != f["options"].get(option):
                raise ShardError(
                    f"{s.name} and {first.name} were graded with different --"
                    f"{option.replace('_', '-')} ({m['options'].get(option)!r} and "
                    f"{f['options'].get(option)!r}): {rerun}")
        if m["class"] != f["class"]:
            same = m["class"]["learners"] == f["class"]["learners"]
            raise ShardError(
                f"{s.name} saw a class of {counted(m['class']['learners'], 'learner')} and "
                f"{first.name} one of {counted(f['class']['learners'], 'learner')}"
                f"{' (other names)' if same else ''}: "
                "the submissions folder changed between shards. Rerun every shard on the same "
                "copy of it (each resumes, grading only who is new), then merge again")
    now = versions()
    for field, what in (("grader", "version of the grader"), ("rubric", "rubric")):
        if first.manifest[field] != now[field]:
            raise ShardError(f"the shards were graded with another {what} than this merge "
                             "runs: merge with the grader that graded them, or regrade the "
                             "shards with this one (--force), so the class-level files are "
                             "rendered by the code that graded it")
    n = first.manifest["of"]
    seen: dict[int, Shard] = {}
    for s in shards:
        k = s.manifest["shard"]
        if k in seen:
            raise ShardError(f"shard {k}/{n} is given twice ({seen[k].where} and {s.where}): "
                             "overlapping shards; give each shard's output once")
        seen[k] = s
    missing = [k for k in range(1, n + 1) if k not in seen]
    if missing:
        raise ShardError(
            f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{k}/{n}' for k in missing)} "
            f"missing: run `{SHARD_COMMAND.replace('K/N', f'K/{n}')}` for each (with the other "
            "shards' options) and give its output too")
    holder: dict[str, Shard] = {}
    for s in shards:
        for key in s.manifest["learners"]:
            learner = _unkey(key)
            shown = terminal(learner, MAX_NAME)
            if Path(learner).name != learner or learner in ("", ".", ".."):
                raise ShardError(f"{s.name} names a learner {shown!r} that is not a folder "
                                 "name: its manifest is not the grader's; regrade that shard")
            if learner in holder:
                raise ShardError(f"{shown} was graded in both {holder[learner].name} and "
                                 f"{s.name}: overlapping shards; regrade them from one split")
            if shard_of(learner, n) != s.manifest["shard"]:
                raise ShardError(f"{shown} was graded in {s.name} but belongs in shard "
                                 f"{shard_of(learner, n)}/{n}: the shards were not split by "
                                 "this grader's --shard; regrade them")
            holder[learner] = s
    if len(holder) != first.manifest["class"]["learners"]:
        raise ShardError(f"the shards hold {counted(len(holder), 'learner')} but the class has "
                         f"{first.manifest['class']['learners']}: regrade the shards")
    return holder


def _prepare_out_dir(out_dir: Path, shards: list[Shard]) -> None:
    """Refuse to write into a shard's folder or over a folder merge-shards did not write."""
    resolved = out_dir.resolve()
    for s in shards:
        if s.folder.resolve() == resolved:
            raise ShardError(f"--out would merge into {s.name}'s own folder: give another "
                             "--out (e.g. grades.csv next to the shards)")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / MERGED).is_file():
        raise ShardError(f"{terminal(str(out_dir), 300)} exists and was not written by "
                         "merge-shards: give another --out, or move that folder away (nothing "
                         "is overwritten)")


def read_records(holder: dict[str, Shard]) -> dict[str, dict[str, bytes]]:
    """Each learner's files from their shard, checked against its manifest's digests, all
    before anything is written."""
    records: dict[str, dict[str, bytes]] = {}
    for learner, s in sorted(holder.items()):
        expected = s.manifest["learners"][_key(learner)]
        records[learner] = {}
        for name in RECORD_FILES:
            if name not in expected:
                continue
            source = s.folder / learner / name
            try:
                data = _read_regular(source)
            except FileNotFoundError:
                raise ShardError(f"{terminal(str(source), 300)} is gone since {s.name} "
                                 "finished: rerun that shard (it regrades what is missing)") \
                    from None
            if hashlib.sha256(data).hexdigest() != expected[name]:
                raise ShardError(f"{terminal(str(source), 300)} changed after {s.name} wrote "
                                 "it: only the grader's own records are merged; rerun that "
                                 "shard with --force")
            records[learner][name] = data
    return records


def write_records(records: dict[str, dict[str, bytes]], out_dir: Path) -> None:
    for learner, files in records.items():
        target = out_dir / learner
        target.mkdir(parents=True, exist_ok=True)
        for name in RECORD_FILES:
            if name not in files:
                (target / name).unlink(missing_ok=True)  # e.g. an error.txt of an older merge
                continue
            tmp = target / f".{name}.merge.tmp"
            tmp.write_bytes(files[name])
            os.replace(tmp, target / name)


def merge(paths: list[Path], out: Path, exports: list[str] | None = None, roster=None,
          assignment: str | None = None, progress=None) -> int:
    """Merge the shards at ``paths`` into ``out`` (the class CSV) and its folder, as one
    ``grade-batch`` over the whole class writes them. Returns the exit status: 0 every learner
    graded, 1 some not (their rows say why; rerun their shard), 2 refused or not written."""

    progress = progress or sys.stderr
    try:
        out_dir = classbook.default_out_dir(out)
        shards = [load(p) for p in paths]
        holder = check(shards)
        _prepare_out_dir(out_dir, shards)
        records = read_records(holder)
        out_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(out_dir / MERGED, json.dumps(
            {"shards": sorted(s.manifest["shard"] for s in shards),
             "of": shards[0].manifest["of"]}) + "\n")
        write_records(records, out_dir)
    except (ShardError, ValueError) as error:
        print(f"error: {error}", file=progress)
        return 2
    learners = [classbook.Learner(x, out_dir / x) for x in sorted(holder)]
    print(f"merged {counted(len(shards), 'shard')}: {counted(len(learners), 'learner')}",
          file=progress)
    rows, exported = classbook.write_class_files(learners, out, out_dir, {}, exports, roster,
                                             assignment, progress)
    if not exported:
        return 2
    return 1 if any(row["total"] is None for row in rows) else 0
