"""PrairieLearn's external grader: ``python -m autograder prairielearn --root ROOT``.

Each case lays out a /grade tree as PrairieLearn does (PrairieLearn/PrairieLearn,
docs/externalGrading.md: student/, tests/, results/ made by us) in a temporary folder and runs
the entry point as PrairieLearn would, in its own process: the reference, the stubs, a partial
submission, a known mistake with hidden and with visible checks, a syntax error, a missing file,
a grader that runs out of time and settings it cannot use. results.json is checked against the
format PrairieLearn documents (``RESULTS_SCHEMA``, transcribed from that page); the question's
info.json against the fields of PrairieLearn's own question schema that it uses
(``INFO_SCHEMA``, transcribed from apps/prairielearn/src/schemas/schemas/infoQuestion.json).
Two stages are graded (``lumen.json``), to keep this quick: the others work the same way.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from autograder.frontends import gradescope, prairielearn, prairielearn_build
from lumen.stages import SUBMISSION_FILES
from solutions import release
from tests.variants.build import make_submission
from tests.variants.embedding import MISTAKES

ROOT = Path(__file__).resolve().parents[1]
STAGES = ["embedding", "params"]
MISTAKE, MISTAKE_TEST, MISTAKE_WORDS = MISTAKES["weight a plain tensor"]

#: results.json as docs/externalGrading.md describes it ("Grading results"): score in [0, 1]
#: when gradable; gradable false with format_errors (a string or a list of strings); tests
#: with name, points, max_points, message, output. Our own additions are refused, so
#: nothing reaches the student that this test has not seen.
_TEST = {"type": "object", "additionalProperties": False,
         "required": ["name", "points", "max_points", "message", "output"],
         "properties": {"name": {"type": "string"}, "points": {"type": "number", "minimum": 0},
                        "max_points": {"type": "number", "minimum": 0},
                        "message": {"type": "string"}, "output": {"type": "string"}}}
RESULTS_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "properties": {"gradable": {"type": "boolean"},
                   "score": {"type": "number", "minimum": 0, "maximum": 1},
                   "message": {"type": "string"}, "output": {"type": "string"},
                   "format_errors": {"anyOf": [{"type": "string"},
                                               {"type": "array", "items": {"type": "string"}}]},
                   "tests": {"type": "array", "items": _TEST}},
    "if": {"properties": {"gradable": {"const": False}}},
    "then": {"required": ["gradable", "format_errors"]},
    "else": {"required": ["gradable", "score", "tests"]},
}
#: The fields of PrairieLearn's question schema (infoQuestion.json) that info.json uses, with
#: its constraints: required uuid (v4-shaped), type, title, topic; no other top-level key
#: than those it knows; externalGradingOptions requires image and entrypoint, knows only its
#: own keys, and a timeout is an integer (at most 600 s: docs/externalGrading.md).
INFO_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["uuid", "type", "title", "topic"],
    "properties": {
        "uuid": {"type": "string", "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                                              "[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"},
        "type": {"enum": ["Calculation", "MultipleChoice", "Checkbox", "File",
                          "MultipleTrueFalse", "v3"]},
        "title": {"type": "string"}, "topic": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "gradingMethod": {"enum": ["Internal", "External", "Manual"]},
        "singleVariant": {"type": "boolean"}, "partialCredit": {"type": "boolean"},
        "externalGradingOptions": {
            "type": "object", "additionalProperties": False, "required": ["image", "entrypoint"],
            "properties": {"enabled": {"type": "boolean"}, "image": {"type": "string"},
                           "entrypoint": {"type": "string"},
                           "serverFilesCourse": {"type": "array", "items": {"type": "string"}},
                           "timeout": {"type": "integer", "maximum": 600},
                           "enableNetworking": {"type": "boolean"},
                           "environment": {"type": "object"}}}}}


def grade(root: Path, files: dict[str, str] | None, settings: dict | None = None,
          *options: str) -> tuple[int, dict, str]:
    """Lay out ROOT as PrairieLearn's /grade and run the entry point there."""
    if files is not None:
        (root / "student").mkdir(parents=True)
        for name, text in files.items():
            (root / "student" / name).write_text(text, encoding="utf-8")
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "tests" / prairielearn.SETTINGS).write_text(
        json.dumps(settings if settings is not None else {"stages": STAGES}))
    run = subprocess.run([sys.executable, "-m", "autograder", "prairielearn", "--root",
                          str(root), *options], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, RESULTS_SCHEMA)
    return run.returncode, data, run.stdout + run.stderr


def _lumen() -> dict[str, str]:
    return {n: (ROOT / "lumen" / n).read_text(encoding="utf-8") for n in SUBMISSION_FILES}


def _solved(stages: list[str]) -> dict[str, str]:
    return {path.name: text for path, text in release.submission(solved=stages).items()}


def _mistake(tmp: Path) -> dict[str, str]:
    folder = make_submission(tmp / "made", MISTAKE)
    return {n: (folder / n).read_text(encoding="utf-8") for n in SUBMISSION_FILES}


def test_the_reference_scores_one(tmp_path):
    code, data, log = grade(tmp_path, _lumen())
    assert code == 0, log
    assert data["gradable"] is True and data["score"] == 1.0
    assert [t["name"] for t in data["tests"]] == STAGES, "a test per stage"
    assert all(t["points"] == t["max_points"] > 0 for t in data["tests"])


def test_the_stubs_score_zero_and_say_not_implemented(tmp_path):
    code, data, log = grade(tmp_path, _solved([]))
    assert code == 0, log
    assert data["gradable"] is True and data["score"] == 0
    assert all(t["points"] == 0 and t["message"] == "not implemented yet" for t in data["tests"])


def test_a_partial_submission_gets_its_stages(tmp_path):
    code, data, log = grade(tmp_path, _solved(["embedding"]))
    assert code == 0, log
    points = {t["name"]: (t["points"], t["max_points"]) for t in data["tests"]}
    assert points["embedding"][0] == points["embedding"][1] > 0 and points["params"][0] == 0
    total = sum(p for p, _ in points.values()) / sum(m for _, m in points.values())
    assert data["score"] == pytest.approx(total)


def test_hidden_checks_show_nothing_of_a_hidden_test(tmp_path):
    """The default: a known mistake costs points, and results.json (all of which PrairieLearn
    shows the student) holds no check's title or message; stdout (the staff's job log) has
    the whole report."""
    code, data, log = grade(tmp_path, _mistake(tmp_path))
    assert code == 0, log
    assert 0 < data["score"] < 1
    text = json.dumps(data)
    assert MISTAKE_WORDS not in text and MISTAKE_TEST not in text
    assert "nn.Parameter" not in text and "shown to your instructor only" in text
    assert MISTAKE_WORDS in log, "the staff's log has the diagnosis"


def test_visible_checks_show_each_check_and_add_up(tmp_path):
    code, data, log = grade(tmp_path, _mistake(tmp_path), {"stages": STAGES,
                                                          "visibility": "visible"})
    assert code == 0, log
    names = [t["name"] for t in data["tests"]]
    assert len(names) > len(STAGES) and all(n.split(":")[0] in STAGES for n in names)
    failed = [t for t in data["tests"] if t["message"] == "failed"]
    assert any(MISTAKE_WORDS in t["output"] for t in failed)
    earned = sum(t["points"] for t in data["tests"]) / sum(t["max_points"] for t in data["tests"])
    assert data["score"] == pytest.approx(earned, abs=1e-6)


@pytest.mark.parametrize("case, words", [
    ("syntax", "embeddings.py: SyntaxError at line"),
    ("missing", "gpt2.py is missing from the submission"),
    ("nothing", "no files were submitted"),
])
def test_a_submission_that_cannot_be_graded_is_not_gradable(tmp_path, case, words):
    files = _lumen()
    if case == "syntax":
        files["embeddings.py"] = files["embeddings.py"].replace("def check_ids(",
                                                                "def check_ids((", 1)
    elif case == "missing":
        del files["gpt2.py"]
    code, data, log = grade(tmp_path, None if case == "nothing" else files)
    assert code == 0, log
    assert data["gradable"] is False and "score" not in data
    assert any(words in e for e in data["format_errors"]), data


def test_a_grader_failure_is_never_a_zero(tmp_path):
    """Out of time: the results.json written before grading stays, gradable false, saying
    the grader failed; so does a settings file the grader cannot use."""
    code, data, log = grade(tmp_path / "slow", _lumen(), None, "--time-limit", "1")
    assert code == 2 and "longer than 1 s" in log
    assert data == prairielearn.failed() and "score" not in data
    code, data, log = grade(tmp_path / "settings", _lumen(), {"visibility": "after_due_date"})
    assert code == 2 and "visibility must be one of hidden, visible" in log
    assert data == prairielearn.failed()


def test_the_question_and_the_image(tmp_path):
    """make prairielearn's output: info.json in PrairieLearn's question schema, with our
    image and entry point; question.html uploads the three files and shows the results; the
    image's folder holds the Gradescope zip's files (no tests, no course source) and a
    Dockerfile that installs bubblewrap and the pinned environment."""
    out = prairielearn_build.build(tmp_path, image="registry.example/lumen:1", visibility="visible")
    question = out / "questions" / prairielearn_build.QUESTION
    info = json.loads((question / "info.json").read_text())
    jsonschema.validate(info, INFO_SCHEMA)
    assert info["externalGradingOptions"]["image"] == "registry.example/lumen:1"
    entry = info["externalGradingOptions"]["entrypoint"].split()
    assert entry[0].startswith(prairielearn_build.IMAGE_HOME) and entry[1:4] == ["-m", "autograder",
                                                                         "prairielearn"]
    assert info["externalGradingOptions"]["timeout"] > prairielearn.TIME_LIMIT
    again = prairielearn_build.build(tmp_path / "again") / "questions" / prairielearn_build.QUESTION
    assert info["uuid"] == json.loads((again / "info.json").read_text())["uuid"]
    html = (question / "question.html").read_text()
    files = re.search(r'<pl-file-upload file-names="([^"]+)"', html).group(1)
    assert [f.strip() for f in files.split(",")] == list(SUBMISSION_FILES)
    assert "<pl-external-grader-results>" in html
    assert prairielearn.load_settings(question / "tests")["visibility"] == "visible"
    image = out / "image"
    shipped = sorted(p.relative_to(image) for p in image.rglob("*") if p.is_file()
                     and p.name not in ("Dockerfile", ".dockerignore"))
    assert shipped == gradescope.files()
    docker = (image / "Dockerfile").read_text()
    lines = [line for line in docker.replace("\\\n", " ").splitlines()
             if line.strip() and not line.startswith("#")]
    instructions = [line.split()[0] for line in lines]
    assert instructions[0] == "FROM" and set(instructions) <= {"FROM", "RUN", "WORKDIR", "ARG",
                                                               "COPY", "ENV"}
    assert "bubblewrap" in docker and 'ARG TORCH="torch==2.13.0 --index-url ' \
        f'{gradescope.CPU_INDEX}"' in docker, "the CPU build: PyPI's Linux wheel is CUDA's"
    assert " $TORCH " in docker and '"$TORCH"' not in docker, "unquoted: requirement, options"
    assert f"-r {gradescope.GRADER_REQUIREMENTS}" in docker and "requirements.txt" not in docker
    assert f"WORKDIR {prairielearn_build.IMAGE_HOME}" in docker
    assert "python:3.11" in lines[0]
    for line in lines:  # docker build fails on a COPY of a file the build folder lacks
        if line.split()[0] == "COPY":
            for source in line.split()[1:-1]:
                assert source == "." or (image / source).is_file(), f"{line}: no {source}"
