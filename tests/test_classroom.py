"""GitHub Classroom: the workflow, and what its grading reporter makes of our runner results.

``reporter`` below is classroom-resources/autograding-grading-reporter@v1 (commit d13b591, the
one the workflow pins; its dist/main.js bundles the same code) in Python, line for line where
it computes anything: src/main.js (which env var, base64, JSON, when the run fails),
src/helpers/test-helpers.js (the log's per-runner score: tests passed / tests x max_score),
src/notify-classroom.js (the grade sent to Classroom: the sum of the tests' scores out of the
runners' max_score, none at all when that is 0) and src/console-results.js (what the learner's
log prints of each test). Our runner outputs go through it, as on GitHub, and the totals must
be the stage scores, on both of its sums, with no word of a hidden check in anything printed.

The workflow is parsed as YAML and validated against SchemaStore's GitHub workflow schema (as
vendored by check-jsonschema); its steps are then run here: the hidden mode's grading step on
one submission with a known mistake, the visible mode's on the stubs with one stage written.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from autograder.boundary.launcher import BwrapLauncher
from autograder.frontends import classroom, classroom_runner, gradescope
from autograder.results import Grade, TestResult, score
from autograder.rubric import load
from autograder.views import report
from lumen.stages import STAGE_NAMES
from tests.helpers import full_marks
from tests.test_makefile import make_variable
from tests.variants.build import make_submission
from tests.variants.tying import MISTAKES as TYING_MISTAKES

ROOT = classroom.ROOT
SECRET = "SECRET-HIDDEN-WORDS"  # in every hidden title, message and printed output below


# --- the reporter, reimplemented ------------------------------------------------------------


def reporter(env: dict[str, str], runners: str) -> dict:
    """What autograding-grading-reporter@v1 does with ``env``: the log, both sums, the verdict."""
    runner_results = []
    for runner in runners.split(","):  # main.js
        encoded = env[f"{runner.strip().upper()}_RESULTS"]
        results = json.loads(base64.b64decode(encoded).decode("utf-8"))
        runner_results.append((runner, results))

    def max_score(r: dict) -> float:  # getMaxScoreForTest
        return r.get("max_score") or 0

    def test_score(r: dict) -> float:  # getTestScore
        passed = sum(1 for t in r["tests"] if t["status"] == "pass")
        return passed / len(r["tests"]) * (max_score(r) or 0)

    log, console = [], {}
    for runner, r in runner_results:  # console-results.js
        log.append(f"Processing: {runner}")
        for t in r["tests"]:
            line = f" - line {t['line_no']}" if t["line_no"] != 0 else ""
            if t["status"] == "pass":
                log.append(f"PASS {t['name']}{line}")
            elif t["status"] == "error":
                log.append(f"Error: {t.get('message') or f'Failed to run test {t[chr(39)]}'}")
            else:
                log.append(f"FAIL {t['name']}{line}")
            if t.get("test_code"):
                log.append(f"Test code:\n{t['test_code']}")
        console[runner] = test_score(r)
        if max_score(r) != 0:
            log.append(f"Total points for {runner}: {test_score(r):.2f}/{max_score(r)}")
    log.append(f"Total: {sum(console.values())} / {sum(max_score(r) for _, r in runner_results)}")

    total = maximum = 0.0  # notify-classroom.js
    for _, r in runner_results:
        if not r["max_score"]:
            continue
        maximum += r["max_score"]
        total += sum(t["score"] for t in r["tests"])
    notified = (total, maximum) if maximum else None

    failed = None  # main.js
    if any(r["status"] == "fail" for _, r in runner_results):
        failed = "Some tests failed."
    elif any(r["status"] == "error" for _, r in runner_results):
        failed = "Some tests errored."
    return {"log": "\n".join(log), "console": console, "notified": notified, "failed": failed}


def step_outputs(text: str) -> dict[str, str]:
    """``$GITHUB_OUTPUT``'s ``name=value`` lines, as GitHub reads them."""
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def reporter_env(flow: dict, outputs: dict[str, str]) -> tuple[dict[str, str], str]:
    """The reporter step's env with ``${{ steps.grade.outputs.X }}`` filled in, and its
    runners: the workflow's own wiring, not ours retyped."""
    step = next(s for job in flow["jobs"].values() for s in job["steps"]
                if s.get("uses") == classroom.REPORTER)
    env = {}
    for name, value in step["env"].items():
        found = re.fullmatch(r"\$\{\{ steps\.grade\.outputs\.(\w+) \}\}", value)
        assert found, f"{name}: {value}"
        env[name] = outputs[found[1]]
    return env, step["with"]["runners"]


# --- the stage scores, through the reporter -------------------------------------------------


def _through_reporter(results: dict[str, dict]) -> dict:
    env = {f"{s.upper()}_RESULTS": classroom_runner.encode(r) for s, r in results.items()}
    return reporter(env, ",".join(results))


@given(st.integers(1, 60).flatmap(lambda m: st.tuples(st.integers(0, 2 * m), st.just(m))))
def test_both_sums_of_the_reporter_are_the_stage_score(case):
    halves, max_score = case  # any score in half points, on any max
    stage_score = min(halves / 2, max_score)
    result = classroom_runner.runner_result("embedding", stage_score, max_score, "checks")
    seen = _through_reporter({"embedding": result})
    assert seen["console"]["embedding"] == pytest.approx(stage_score)
    assert seen["notified"][0] == pytest.approx(stage_score)
    assert seen["notified"][1] == max_score
    assert len(result["tests"]) <= 2 * max_score  # never more parts than half points
    assert result["status"] == ("pass" if stage_score == max_score else "fail")


def _graded(failing: dict[str, str]) -> report.Grade:
    """A Grade on the real rubric where the tests in ``failing`` fail with that message."""
    rubric = load()
    verdicts = [TestResult(name=t, stage=s, title=f"{SECRET} title of {t}",
                           passed=t not in failing, message=failing.get(t, ""),
                           output=f"{SECRET} printed" if t in failing else "")
                for s in STAGE_NAMES for t in rubric.points[s]]
    return score(verdicts, rubric, submission="/home/instructor/alice", seed=7,
                 devices=["cpu"], sandbox="bwrap", seconds=3.0)


def test_hidden_results_reach_classroom_as_stage_scores_only():
    failing = {"test_lookup_every_shape": f"{SECRET}: wrong rows",
               "test_memory_bytes": f"{SECRET}: fp16 is 2 bytes",
               "test_tie_survives_to_and_load": f"{SECRET}: the tie is lost"}
    grade = _graded(failing)
    lost = sum(load().points[s].get(t, 0) for s in STAGE_NAMES for t in failing)  # the rubric's
    record = Grade.from_json(json.loads(json.dumps(grade.to_json())))  # as written to disk
    outputs = step_outputs(classroom_runner.output_lines(classroom.runner_results(record)))
    flow = yaml.safe_load(classroom.workflow("hidden", repository="course/grader"))
    env, runners = reporter_env(flow, outputs)
    seen = reporter(env, runners)
    assert runners.split(",") == list(STAGE_NAMES)
    for stage in grade.stages:
        assert seen["console"][stage.name] == pytest.approx(stage.score), stage.name
    assert seen["notified"] == (pytest.approx(grade.score), 100.0)
    assert grade.score == 100 - lost and lost > 0
    assert seen["failed"] == "Some tests failed."
    decoded = "".join(base64.b64decode(v).decode() for v in outputs.values())
    assert SECRET not in decoded and SECRET not in seen["log"]  # nothing hidden, anywhere
    assert not any(t in decoded for s in STAGE_NAMES for t in load().points[s])  # no test names


def test_full_marks_pass_and_a_grader_failure_sends_no_points():
    full = classroom.runner_results(_graded({}))
    seen = _through_reporter(full)
    assert seen["notified"] == (100.0, 100.0) and seen["failed"] is None
    assert all(len(r["tests"]) == 1 for r in full.values())

    broken = _through_reporter(classroom.runner_results(None, status=2))
    assert broken["notified"] is None  # no "Autograding report": never a zero not earned
    assert broken["failed"] == "Some tests errored."
    assert classroom.GRADER_FAILED in broken["log"]


def test_report_prints_only_the_visible_summary(tmp_path, capsys):
    grade = _graded({"test_one_hot_rows": f"{SECRET}: row 3 is not one-hot"})
    record = tmp_path / "grade.json"
    report.write_json(record, grade.to_json())
    output = tmp_path / "github_output"
    assert classroom.report(record, 0, str(output)) == 0
    printed = capsys.readouterr().out
    assert "onehot" in printed and "total" in printed and SECRET not in printed
    seen = _through_reporter({k: json.loads(base64.b64decode(v)) for k, v in
                              step_outputs(output.read_text()).items()})
    assert seen["notified"] == (pytest.approx(grade.score), 100.0)
    classroom.report(tmp_path / "missing.json", 0, str(output))  # no record: an error
    assert classroom.GRADER_FAILED in capsys.readouterr().out
    report.write_json(record, report.gradescope(grade, "hidden"))  # a view is not the record
    classroom.report(record, 0, str(output))
    assert classroom.GRADER_FAILED in capsys.readouterr().out


# --- the workflow -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workflow_schema() -> dict:
    vendor = resources.files("check_jsonschema") / "builtin_schemas" / "vendor"
    return json.loads((vendor / "github-workflows.json").read_text(encoding="utf-8"))


def _flows() -> dict[str, dict]:
    return {"visible": yaml.safe_load(classroom.workflow("visible")),
            "hidden": yaml.safe_load(classroom.workflow("hidden", repository="course/grader",
                                                        ref="v1"))}


@pytest.mark.parametrize("mode", classroom.MODES)
def test_workflow_is_a_valid_github_actions_workflow(mode, workflow_schema):
    flow = _flows()[mode]
    jsonschema.validate(flow, workflow_schema)  # SchemaStore's, as GitHub's editor uses
    assert flow["on"] == ["push", "repository_dispatch", "workflow_dispatch"]  # not YAML 1.1 True
    broken = {**flow, "jobs": {"grade": {"runs-on": "ubuntu-24.04", "step": []}}}
    with pytest.raises(jsonschema.ValidationError):  # the schema does catch a wrong key
        jsonschema.validate(broken, workflow_schema)


@pytest.mark.parametrize("mode", classroom.MODES)
def test_workflow_grades_with_the_pinned_environment(mode):
    flow = _flows()[mode]
    assert flow["env"]["TORCH"] == make_variable("TORCH_DEFAULT")  # the CPU build
    grade = flow["jobs"]["grade"]
    runs = [s.get("run", "") for s in grade["steps"]]
    assert any("pip install -q $TORCH" in r and "-r requirements.txt" in r for r in runs)
    (grading,) = [s for s in grade["steps"] if s.get("id") == "grade"]
    assert grade["steps"][-1]["uses"] == classroom.REPORTER  # after the grading step
    env, runners = reporter_env(flow, {s: "x" for s in STAGE_NAMES})
    assert set(env) == {f"{s.upper()}_RESULTS" for s in STAGE_NAMES}
    text = yaml.safe_dump(flow)
    if mode == "visible":
        points = ",".join(f"{s}={p:g}" for s, p in classroom.stage_points().items())
        assert grading["run"].endswith(f"visible --points {points}")
        assert "secrets." not in text  # nothing secret on the runner
        return
    assert "apt-get install -y -q bubblewrap" in "".join(runs)
    assert "classroom grade ../submission/exercises" in grading["run"]
    assert "--sandbox bwrap" in grading["run"] and "classroom report" in grading["run"]
    assert "> /dev/null 2>&1" in grading["run"]  # the full report never reaches the log
    checkout = next(s for s in grade["steps"] if s.get("with", {}).get("path") == "grader")
    assert checkout["with"]["repository"] == "course/grader" and checkout["with"]["ref"] == "v1"
    assert checkout["with"]["token"] == f"${{{{ secrets.{classroom.TOKEN_SECRET} }}}}"
    assert not checkout["with"]["persist-credentials"]
    assert "secrets." not in yaml.safe_dump(flow["jobs"]["visible-tests"])
    assert "grader" not in yaml.safe_dump(flow["jobs"]["visible-tests"])


@pytest.mark.parametrize("mode", classroom.MODES)
def test_a_push_reuses_the_environment_and_supersedes_older_runs(mode):
    """Each job restores its environment from a cache keyed on the files that pin it (files
    the job really has), installs only on a miss, and installs bubblewrap every time; the
    grader's key is its own, so the visible tests' environment (in which learner code ran
    unsandboxed) is never restored into the grading job; a newer push cancels an older run."""
    flow = _flows()[mode]
    assert flow["concurrency"] == {"group": "${{ github.workflow }}-${{ github.ref }}",
                                   "cancel-in-progress": True}
    files = set(classroom.template_files("visible"))
    layout = {"visible-tests": {"": files}, "grade": {"": files}} if mode == "visible" else {
        "visible-tests": {"": files},
        "grade": {"submission/": files,
                  "grader/": {"requirements.txt", gradescope.GRADER_REQUIREMENTS}}}
    keys = {}
    for name, job in flow["jobs"].items():
        if name not in layout:
            continue
        steps = job["steps"]
        (cache,) = [s for s in steps if s.get("uses") == "actions/cache@v4"]
        (install,) = [s for s in steps if "pip install -q $TORCH" in s.get("run", "")]
        assert steps.index(cache) < steps.index(install)
        assert install["if"] == f"steps.{cache['id']}.outputs.cache-hit != 'true'"
        folder = install.get("working-directory", "")
        assert cache["with"]["path"] == (f"{folder}/.venv" if folder else ".venv")
        hashed = re.search(r"hashFiles\((.*)\)", cache["with"]["key"])[1]
        paths = [p.strip(" '") for p in hashed.split(",")]
        for path in paths:  # every pinning file is one the job has checked out
            prefix = next((p for p in layout[name] if p and path.startswith(p)), "")
            assert path.removeprefix(prefix) in layout[name][prefix], (name, path)
        assert any(p.endswith(classroom.WORKFLOW) for p in paths)  # it holds $TORCH
        assert any(p.endswith("requirements.txt") for p in paths)
        if folder:  # this repository's requirements.txt, and what it includes
            assert f"{folder}/{gradescope.GRADER_REQUIREMENTS}" in paths
        keys[name] = cache["with"]["key"].split("${{")[0]
        for step in steps:
            if "bubblewrap" in step.get("run", ""):
                assert "if" not in step  # the sandbox is installed on every run
    if mode == "hidden":
        assert keys["grade"] != keys["visible-tests"], keys


def test_hidden_mode_needs_the_grader_repository():
    with pytest.raises(ValueError, match="--grader-repository"):
        classroom.workflow("hidden")
    with pytest.raises(ValueError, match="OWNER/NAME"):
        classroom.workflow("hidden", repository="a b; rm -rf /")


def test_template_is_the_handout_and_the_workflow(tmp_path):
    files = classroom.template_files("visible")
    assert classroom.WORKFLOW in files and "exercises/embeddings.py" in files
    assert "README.md" in files and "requirements.txt" in files
    assert files[classroom.RUNNER_SCRIPT] == (ROOT / "autograder" / "frontends" /
                                              "classroom_runner.py").read_bytes()
    assert not [n for n in files if n.startswith(("autograder/", "lumen/", "solutions/"))]
    hidden = classroom.template_files("hidden", repository="course/grader")
    assert classroom.RUNNER_SCRIPT not in hidden
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError):  # never into a folder of something else
        classroom.write_template(tmp_path, files)


# --- the steps, run ----------------------------------------------------------------------------


def _run_step(flow: dict, cwd: Path, tmp_path: Path, **env: str) -> tuple[str, dict[str, str]]:
    """Run the grade job's ``grade`` step as GitHub would: bash, its working directory,
    RUNNER_TEMP and GITHUB_OUTPUT; (what the log shows, the outputs)."""
    (step,) = [s for s in flow["jobs"]["grade"]["steps"] if s.get("id") == "grade"]
    output = tmp_path / "github_output"
    temp = tmp_path / "runner_temp"
    temp.mkdir()
    done = subprocess.run([shutil.which("bash"), "-e", "-c", step["run"]],
                          cwd=cwd / step.get("working-directory", "."),
                          env={**os.environ, "RUNNER_TEMP": str(temp),
                               "GITHUB_OUTPUT": str(output), **env},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr, step_outputs(output.read_text())


def _hidden_job(tmp_path: Path, replacements: dict[str, str]) -> Path:
    """The grade job's layout: submission/ (the learner's repository), grader/ (this one)."""
    job = tmp_path / "work"
    classroom.write_template(job / "submission",
                             classroom.template_files("hidden", repository="course/grader"))
    make_submission(job / "submission" / "exercises", replacements)
    (job / "grader").mkdir()
    for name in ("autograder", "lumen", "solutions", ".venv"):
        (job / "grader" / name).symlink_to(ROOT / name)
    return job


def test_hidden_grading_step_without_a_sandbox_is_an_error(tmp_path):
    flow = yaml.safe_load(classroom.workflow("hidden", repository="course/grader"))
    job = _hidden_job(tmp_path, {})
    log, outputs = _run_step(flow, job, tmp_path, PATH="/nonexistent")  # no bwrap to find
    seen = reporter(*reporter_env(flow, outputs))
    assert seen["notified"] is None and seen["failed"] == "Some tests errored."
    assert classroom.GRADER_FAILED in log and "bwrap" not in log


@pytest.mark.skipif(BwrapLauncher.find() is None, reason="the hidden mode grades under bwrap")
def test_hidden_grading_step_runs_as_on_github(tmp_path):
    flow = yaml.safe_load(classroom.workflow("hidden", repository="course/grader"))
    replacements, _, words = TYING_MISTAKES["head a copy (clone)"]
    job = _hidden_job(tmp_path, replacements)
    log, outputs = _run_step(flow, job, tmp_path)

    grade = Grade.from_json(json.loads((tmp_path / "runner_temp" / "grade.json").read_text()))
    stages = {s.name: s.score for s in grade.stages}
    env, runners = reporter_env(flow, outputs)
    seen = reporter(env, runners)
    for stage, points in stages.items():
        assert seen["console"][stage] == pytest.approx(points), stage
    assert seen["notified"] == (pytest.approx(grade.score), 100.0)
    full = float(full_marks("tying"))
    assert stages["tying"] < full and grade.score == 100 - full + stages["tying"]
    shown = log + seen["log"]
    assert words not in shown and words not in report.visible_summary(grade, "hidden")
    assert any(words in r.message for s in grade.stages for r, _, _ in s.tests)
    assert not [r.title for s in grade.stages for r, _, _ in s.tests if r.title in shown]
    assert "tying" in log and "shown to your instructor only" in log


def test_visible_grading_step_scores_the_visible_tests(tmp_path):
    flow = yaml.safe_load(classroom.workflow("visible"))
    repo = tmp_path / "learner"
    classroom.write_template(repo, classroom.template_files("visible"))
    (repo / "exercises" / "params.py").write_bytes((ROOT / "lumen" / "params.py").read_bytes())
    (repo / ".venv").symlink_to(ROOT / ".venv")
    log, outputs = _run_step(flow, repo, tmp_path)
    env, runners = reporter_env(flow, outputs)
    seen = reporter(env, runners)
    full = float(full_marks("params"))
    assert seen["console"]["params"] == full and seen["notified"] == (full, 100.0)
    assert all(seen["console"][s] == 0 for s in STAGE_NAMES if s != "params")
    assert "not implemented yet" in log  # pytest's own output: the learner's feedback
