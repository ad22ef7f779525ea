"""The cluster recipes in deploy/ run as they are (docs/cluster.md).

Each recipe's commands are run by a shell as its engine would run them (Slurm's job array and
its dependent merge, with a stand-in ``sbatch``; the Kubernetes Jobs' container command; the
GitHub Actions steps), with a stand-in for the grader's interpreter that records its
arguments, and those arguments go through ``python -m autograder``'s own parser and dispatch
(grading itself replaced): every shard K of N is asked for once, the merge gets every shard's
output, and the options exist. The Kubernetes manifests are validated against Kubernetes' own
schema (kubernetes-validate, which ships the schemas: no network), the workflow against
SchemaStore's (as tests/test_classroom.py does). tests/test_slurm.py runs the Slurm recipe on
a real one-node Slurm (full tier).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from autograder import __main__ as cli

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
K8S_VERSION = "1.37.0"  # the newest schema kubernetes-validate ships (requirements-dev.txt)


def _fake_python(folder: Path) -> Path:
    """folder/.venv/bin/python: appends its arguments to folder/calls.jsonl, runs nothing."""
    fake = folder / ".venv" / "bin" / "python"
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"open({str(folder / 'calls.jsonl')!r}, 'a').write("
                    "json.dumps(sys.argv[1:]) + '\\n')\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return fake


def _calls(folder: Path) -> list[list[str]]:
    path = folder / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _dispatch(argv: list[str], monkeypatch, tmp_path: Path) -> tuple[str, tuple, dict]:
    """``python -m autograder ARGS`` through the real parser and dispatch, with grading and
    merging replaced by a recorder; the folders the command names are made first."""
    assert argv[:2] == ["-m", "autograder"], argv
    args = argv[2:]
    seen = []
    monkeypatch.setattr(cli, "_sandbox_ready", lambda kind: True)
    monkeypatch.setattr("autograder.frontends.batch.run",
                        lambda *a, **k: seen.append(("grade-batch", a, k)) or 0)
    monkeypatch.setattr("autograder.frontends.shards.merge",
                        lambda *a, **k: seen.append(("merge-shards", a, k)) or 0)
    if args[0] == "grade-batch":
        (tmp_path / args[1].lstrip("/")).mkdir(parents=True, exist_ok=True)
        args[1] = str(tmp_path / args[1].lstrip("/"))
    assert cli.main(args) == 0, args
    assert len(seen) == 1
    return seen[0]


def _shards_asked(calls: list[list[str]], monkeypatch, tmp_path) -> list[tuple[int, int]]:
    asked = []
    for argv in calls:
        command, positional, _ = _dispatch(argv, monkeypatch, tmp_path)
        assert command == "grade-batch"
        asked.append(positional[3].shard)  # run(submissions, out, options, batch)
    return asked


def test_slurm_array_and_its_merge(tmp_path, monkeypatch):
    """slurm-submit.sh, run from elsewhere with relative paths, submits an array of SHARDS
    tasks and a merge after them (afterok), both in the repository's root with the paths made
    absolute in their environment and their logs in $OUT; each task of slurm-grade.sh asks for
    its shard; the merge (its --wrap, under sh) names every shard's CSV. tests/test_slurm.py
    runs the recipe on a real one-node Slurm."""
    fake = tmp_path / "bin" / "sbatch"
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    f"open({str(tmp_path / 'sbatch.jsonl')!r}, 'a').write(json.dumps("
                    "[sys.argv[1:], {k: os.environ[k] for k in ('SUBMISSIONS', 'SHARDS', "
                    "'OUT')}]) + '\\n')\nprint(123)\n")
    fake.chmod(0o755)
    elsewhere = tmp_path / "course"
    (elsewhere / "submissions").mkdir(parents=True)
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}",
           "SUBMISSIONS": "submissions", "SHARDS": "3", "OUT": "out"}
    run = subprocess.run(["bash", str(DEPLOY / "slurm-submit.sh")], cwd=elsewhere, env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    (array, seen), (merge, merge_env) = [
        json.loads(x) for x in (tmp_path / "sbatch.jsonl").read_text().splitlines()]
    out = elsewhere / "out"
    exported = {"SUBMISSIONS": str(elsewhere / "submissions"), "SHARDS": "3", "OUT": str(out)}
    assert seen == merge_env == exported
    assert "--array=1-3" in array and array[-1] == str(DEPLOY / "slurm-grade.sh")
    assert f"--output={out}/lumen-grade-%A_%a.log" in array
    for job in (array, merge):
        assert "--export=ALL" in job and f"--chdir={ROOT}" in job, job
    assert "--dependency=afterok:123" in merge
    wrapped = next(a for a in merge if a.startswith("--wrap=")).removeprefix("--wrap=")
    _fake_python(tmp_path)  # tmp_path stands for the repository the jobs run in (--chdir)
    run = subprocess.run(["sh", "-c", wrapped], cwd=tmp_path, env={**env, **exported},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    [argv] = _calls(tmp_path)
    command, args, options = _dispatch(argv, monkeypatch, tmp_path)
    assert command == "merge-shards"
    assert [str(p) for p in args[0]] == [f"{out}/shard-{k}.csv" for k in (1, 2, 3)]
    assert str(args[1]) == f"{out}/grades.csv"

    (tmp_path / "calls.jsonl").unlink()
    for k in (1, 2, 3):  # each array task, as Slurm starts it; the third rerun alone
        task = {**env, **exported, "SLURM_ARRAY_TASK_ID": str(k),
                "SLURM_ARRAY_TASK_COUNT": "1" if k == 3 else "3"}
        run = subprocess.run(["bash", str(DEPLOY / "slurm-grade.sh")], cwd=tmp_path, env=task,
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
    assert _shards_asked(_calls(tmp_path), monkeypatch, tmp_path) == [(1, 3), (2, 3), (3, 3)]
    run = subprocess.run(["bash", str(DEPLOY / "slurm-grade.sh")], cwd=elsewhere, env=task,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "no .venv/bin/python in" in run.stderr, run.stderr
    for script in ("slurm-grade.sh", "slurm-submit.sh"):
        assert os.access(DEPLOY / script, os.X_OK), f"{script} is executable"


def _manifests() -> dict[str, dict]:
    return {p.stem: yaml.safe_load(p.read_text()) for p in (DEPLOY / "kubernetes").glob("*.yaml")}


def test_kubernetes_jobs_are_valid_against_kubernetes_schema():
    manifests = _manifests()
    assert set(manifests) == {"grade-job", "merge-job"}
    for manifest in manifests.values():
        kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)
    broken = _manifests()["grade-job"]
    broken["spec"]["template"]["spec"]["containers"][0]["workdir"] = "/lumen"  # a typo
    with pytest.raises(kubernetes_validate.ValidationError):  # strict: unknown keys caught
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def _container(manifest: dict) -> dict:
    return manifest["spec"]["template"]["spec"]["containers"][0]


def _shards_env(manifest: dict) -> str:
    return next(e["value"] for e in _container(manifest)["env"] if e["name"] == "SHARDS")


def test_kubernetes_indexed_job_grades_every_shard_then_merges(tmp_path, monkeypatch):
    grade, merge = _manifests()["grade-job"], _manifests()["merge-job"]
    n = grade["spec"]["completions"]
    assert grade["spec"]["completionMode"] == "Indexed"
    assert _shards_env(grade) == _shards_env(merge) == str(n), "SHARDS must equal completions"
    container = _container(grade)
    security = container["securityContext"]
    assert security["seccompProfile"]["type"] == "Unconfined", "bubblewrap's user namespaces"
    _fake_python(tmp_path)
    for index in range(n):  # the container's command, as each pod runs it
        run = subprocess.run([*container["command"], *container["args"]], cwd=tmp_path,
                             env={**os.environ, "JOB_COMPLETION_INDEX": str(index),
                                  "SHARDS": str(n)}, capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 0, run.stderr
    asked = _shards_asked(_calls(tmp_path), monkeypatch, tmp_path)
    assert asked == [(k, n) for k in range(1, n + 1)]
    (tmp_path / "calls.jsonl").unlink()
    container = _container(merge)
    run = subprocess.run([*container["command"], *container["args"]], cwd=tmp_path,
                         env={**os.environ, "SHARDS": str(n)}, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    [argv] = _calls(tmp_path)
    command, args, _ = _dispatch(argv, monkeypatch, tmp_path)
    assert command == "merge-shards"
    assert [str(p) for p in args[0]] == [f"/data/grades/shard-{k}.csv" for k in range(1, n + 1)]


def _workflow() -> dict:
    return yaml.safe_load((DEPLOY / "github-actions.yml").read_text())


def test_github_actions_matrix_is_a_valid_workflow():
    vendor = resources.files("check_jsonschema") / "builtin_schemas" / "vendor"
    schema = json.loads((vendor / "github-workflows.json").read_text(encoding="utf-8"))
    flow = _workflow()
    jsonschema.validate(flow, schema)
    assert "workflow_dispatch" in flow["on"], "'on' quoted: YAML 1.1 reads a bare on as True"
    upload = next(s for s in flow["jobs"]["shard"]["steps"]
                  if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["include-hidden-files"] is True, "the manifest is .shard.json"


def test_github_actions_matrix_grades_every_shard_then_merges(tmp_path, monkeypatch):
    flow = _workflow()
    shards = flow["jobs"]["shard"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    _fake_python(tmp_path)
    for k in shards:
        for step in flow["jobs"]["shard"]["steps"]:
            if "autograder" in step.get("run", ""):
                script = step["run"].replace("${{ matrix.shard }}", str(k))
                assert "${{" not in script
                run = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path,
                                     capture_output=True, text=True, timeout=60)
                assert run.returncode == 0, run.stderr
    asked = _shards_asked(_calls(tmp_path), monkeypatch, tmp_path)
    assert asked == [(k, len(shards)) for k in shards]
    assert flow["jobs"]["merge"]["needs"] == "shard"
    (tmp_path / "calls.jsonl").unlink()
    (tmp_path / "grades").mkdir(exist_ok=True)
    for k in shards:  # what download-artifact leaves there
        (tmp_path / "grades" / f"shard-{k}.csv").write_text("")
    [merge] = [s["run"] for s in flow["jobs"]["merge"]["steps"]
               if "merge-shards" in s.get("run", "")]
    run = subprocess.run(["bash", "-e", "-c", merge], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    [argv] = _calls(tmp_path)
    command, args, options = _dispatch(argv, monkeypatch, tmp_path)
    assert command == "merge-shards"
    assert [str(p) for p in args[0]] == [f"grades/shard-{k}.csv" for k in shards]


def test_github_actions_runners_install_the_makefiles_torch():
    """Each job's `make setup` takes the Makefile's torch (its CPU build, gradescope.CPU_TORCH):
    no second copy of the pin to fall behind it."""
    flow = _workflow()
    setups = [step["run"] for job in flow["jobs"].values() for step in job["steps"]
              if "make setup" in step.get("run", "")]
    assert len(setups) == len(flow["jobs"])
    assert not [run for run in setups if "TORCH" in run or "torch" in run], setups


def test_recipes_say_what_a_node_needs_and_how_files_travel():
    for path in [DEPLOY / "slurm-grade.sh", DEPLOY / "kubernetes" / "grade-job.yaml",
                 DEPLOY / "github-actions.yml"]:
        text = path.read_text()
        assert "What a node needs" in text or "What a runner needs" in text, path
        assert "bubblewrap" in text and "How files travel" in text, path
        assert re.search(r"pinned environment", text), path
