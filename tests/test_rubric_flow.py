"""One edit of autograder/rubric.toml and one ``make release`` change the points everywhere.

In a scratch copy of this repository (its tracked and new files, .venv linked), a weight is
moved, the release is run as course staff run it (``python -m solutions.release``), and every
front end is asked for its points: ``grade``'s results.json (which Gradescope's
run_autograder writes as it is), the source and released notebooks, nbgrader's gradebook (the
course folder ``nbgrade`` builds, after ``generate_assignment``), the Gradescope zip's rubric,
and GitHub Classroom's workflow and runner results. One learner, one stage: a lookup that
scales twice, which fails ``test_scale_is_applied_once`` (and loses its weight there).

Two moves: within a stage (its total stays, so the notebook must not change), and between two
stages (rubric.py allows it: only the sum of 100 is fixed), which the release must write into
the notebook's cells, metadata and text alike. ~70 s in all on an idle core.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

from tests.variants.build import make_submission
from tests.variants.embedding import MISTAKES

ROOT = Path(__file__).resolve().parents[1]
SCALED_TWICE = MISTAKES["scales twice"][0]  # fails test_scale_is_applied_once

#: Run inside the scratch copy, with its rubric: every front end's points, as JSON.
PROBE = textwrap.dedent('''
    import json, sys, tempfile, zipfile
    from pathlib import Path
    import nbformat
    from autograder.frontends import classroom, classroom_runner, gradescope, nbgrade
    from autograder.rubric import load
    from autograder.publish import notebook

    results = json.loads(Path(sys.argv[1]).read_text())
    stage = results["extra_data"]["stages"]["embedding"]
    mine = [t for t in results["tests"] if "embedding" in t["tags"]]  # in the rubric's order
    tests = {name: [t["score"], t["max_score"]]
             for name, t in zip(load().points["embedding"], mine, strict=True)}
    def cells(nb):
        return {gid: (c.metadata["nbgrader"]["points"],
                      notebook.POINTS_TEXT.search(
                          notebook.nbgrader_cells(nb).get(gid + "_question", c).source)[0])
                for gid, c in notebook.nbgrader_cells(nb).items()
                if c.metadata["nbgrader"].get("grade")}
    with tempfile.TemporaryDirectory() as scratch:
        course = Path(scratch) / "course"
        nbgrade.prepare_course(course, "scores")
        from nbgrader.api import Gradebook
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}", notebook.COURSE_ID) as gb:
            gradebook = {c.name: c.max_score for c in
                         gb.find_notebook(notebook.NOTEBOOK.removesuffix(".ipynb"),
                                          notebook.ASSIGNMENT).grade_cells}
        zipped = Path(scratch) / "autograder.zip"
        gradescope.build(zipped)
        with zipfile.ZipFile(zipped) as z:
            zipped_rubric = z.read("autograder/rubric.toml").decode()
    runner = classroom_runner.runner_result("embedding", stage["score"], stage["max_score"],
                                            "hidden checks")
    print(json.dumps({
        "grade": [stage["score"], stage["max_score"]], "tests": tests,
        "source": cells(nbformat.read(notebook.SOURCE, as_version=4)),
        "released": cells(nbformat.read("exercises/lab.ipynb", as_version=4)),
        "gradebook": gradebook,
        "gradescope_rubric": zipped_rubric == Path("autograder/rubric.toml").read_text(),
        "classroom_workflow": classroom.workflow("visible"),
        "classroom_runner": [runner["max_score"],
                             sum(t["score"] for t in runner["tests"])],
    }))
''')


def _scratch(tmp_path: Path) -> Path:
    """A copy of the repository's tracked and new files, with .venv linked."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    copy = tmp_path / "repo"
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    (copy / ".venv").symlink_to((ROOT / ".venv").resolve())
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)  # release compares with git
    subprocess.run(["git", "add", "-A"], cwd=copy, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy"],
                   cwd=copy, check=True)
    return copy


def _move(repo: Path, moves: dict[str, int]) -> None:
    """Move points in the copy's rubric.toml: each named check gains (or loses) so many."""
    path = repo / "autograder" / "rubric.toml"
    text = path.read_text(encoding="utf-8")
    for test, delta in moves.items():
        found = re.findall(rf"^{test} = (\d+)$", text, flags=re.M)
        assert len(found) == 1, test
        text = re.sub(rf"^{test} = \d+$", f"{test} = {int(found[0]) + delta}", text, flags=re.M)
    path.write_text(text, encoding="utf-8")


def _run(repo: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(repo)}
    return subprocess.run([str(repo / ".venv" / "bin" / "python"), *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _points_everywhere(repo: Path, tmp_path: Path) -> dict:
    released = _run(repo, "-m", "solutions.release")
    assert released.returncode == 0, released.stdout + released.stderr
    check = _run(repo, "-m", "solutions.release", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    learner = make_submission(tmp_path / "learner", SCALED_TWICE)
    graded = _run(repo, "-m", "autograder", "grade", str(learner), "--stage", "embedding",
                  "--seed", "11", "--out", str(tmp_path / "results.json"))
    assert graded.returncode == 0, graded.stdout + graded.stderr
    probe = _run(repo, "-c", PROBE, str(tmp_path / "results.json"))
    assert probe.returncode == 0, probe.stdout + probe.stderr
    return {"release": released.stdout, **json.loads(probe.stdout.splitlines()[-1])}


def _points(stage: str, test: str) -> int:
    """A check's points in the repository's own rubric.toml, before any move."""
    from autograder.rubric import load

    return int(load().points[stage][test])


def _full(stage: str) -> int:
    from autograder.rubric import load

    return int(load().stage_max(stage))


def _agree(seen: dict, stage_points: dict[str, int], scale_points: int) -> None:
    """Every front end shows ``stage_points`` per stage, and the learner loses ``scale_points``."""
    embedding = stage_points["embedding"]
    assert seen["tests"]["test_scale_is_applied_once"] == [0, scale_points]
    score = sum(got for got, _ in seen["tests"].values())
    assert sum(out_of for _, out_of in seen["tests"].values()) == embedding
    assert seen["grade"] == [score, embedding] and score <= embedding - scale_points
    assert seen["classroom_runner"] == [embedding, score]
    assert seen["gradescope_rubric"]
    for stage, points in stage_points.items():
        gid = f"stage_{stage}"
        assert seen["source"][gid] == [points, f"{points} points"], gid
        assert seen["released"][gid] == [points, f"{points} points"], gid
        assert seen["gradebook"][gid] == points, gid
        assert f"{stage}={points}" in seen["classroom_workflow"], stage


def test_points_moved_within_a_stage_flow_everywhere(tmp_path):
    repo = _scratch(tmp_path)
    _move(repo, {"test_lookup_every_shape": -1, "test_scale_is_applied_once": 1})
    seen = _points_everywhere(repo, tmp_path)
    assert "lab.ipynb" not in seen["release"]  # the stage totals, so the notebook, stay
    _agree(seen, {"embedding": _full("embedding"), "onehot": _full("onehot")},
           scale_points=_points("embedding", "test_scale_is_applied_once") + 1)


def test_points_moved_between_stages_flow_everywhere(tmp_path):
    repo = _scratch(tmp_path)
    _move(repo, {"test_lookup_every_shape": -1, "test_one_hot_rows": 1})
    seen = _points_everywhere(repo, tmp_path)
    assert "solutions/course/source/embedding_layer/lab.ipynb (points from rubric.toml)" in \
        seen["release"] and "exercises/lab.ipynb" in seen["release"]
    _agree(seen, {"embedding": _full("embedding") - 1, "onehot": _full("onehot") + 1},
           scale_points=_points("embedding", "test_scale_is_applied_once"))
