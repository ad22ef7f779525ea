"""Partial work shows: a learner part-way through sees exactly what their finished stages allow.

The stages are walked in order (``render.render(solved=...)`` writes the stubs with the first
k stages solved, as a learner has them after k stages); after each, the command line's figures
and the offline page's sections are exactly those whose stages are all finished, and every
figure or section left out names a stage still to finish. Before stage 'init' the lookups run
on placeholder rows (``forward`` ends in ``scale_output``, stage init's) and say so.
"""

from __future__ import annotations

import re
import sys

import pytest

from lumen import page
from lumen.live import load_impl
from lumen.stages import STAGE_NAMES
from solutions import release

#: What each figure needs, by the chapter (not by figures.py): its file and its stages.
FIGURE_NEEDS = {
    "1-onehot.png": {"embedding", "onehot"},
    "2-toy-map.png": {"neighbours"},
    "3-params.png": {"params"},
    "4-pca-tsne.png": {"embedding"},
    "5-onehot-cost.png": {"embedding", "onehot"},
    "6-init.png": {"embedding", "init"},
}
#: The panels a figure draws only once more stages are finished: its file and those stages
#: (till then each holds the line that names the stage, which the command line prints too).
PANEL_NEEDS = {"4-pca-tsne.png": {"neighbours"}}  # t-SNE's distances are cosines
#: The page's sections and the stages each needs.
PAGE_NEEDS = {"tokens": {"embedding", "onehot"}, "cosines": {"neighbours"},
              "counts": {"params"}}
LOOKS_UP = {"1-onehot.png", "4-pca-tsne.png", "5-onehot-cost.png"}
SKIP_LINE = re.compile(r"stage '(\w+)' not implemented yet - skipped")


@pytest.fixture(scope="module")
def partial(tmp_path_factory):
    """partial0 .. partial6 on sys.path: the stubs with the first k stages solved."""
    root = tmp_path_factory.mktemp("partial")
    for k in range(len(STAGE_NAMES) + 1):
        for path, text in release.render(solved=STAGE_NAMES[:k]).items():
            file = root / f"partial{k}" / path
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(root))
    yield root
    sys.path.remove(str(root))


def _sections(data: dict) -> set[str]:
    shown = set()
    if data["tokens"] is not None:
        shown.add("tokens")
    if data["map"]["cosine"] is not None:
        shown.add("cosines")
    if all(entry["counts"] is not None for entry in data["calc"]["presets"].values()):
        shown.add("counts")
    return shown


@pytest.mark.parametrize("k", range(len(STAGE_NAMES) + 1))
def test_after_each_stage_every_figure_and_section_it_allows_shows(k, partial, tmp_path,
                                                                   capsys):
    from lumen import cli

    done = set(STAGE_NAMES[:k])
    impl = f"partial{k}"
    assert cli.main(["figures", "--out", str(tmp_path), "--quick", "--impl", impl]) == 0
    out = capsys.readouterr().out
    drawn = {p.name for p in tmp_path.iterdir()}
    assert drawn == {name for name, needs in FIGURE_NEEDS.items() if needs <= done}, out
    for stage in SKIP_LINE.findall(out):  # each figure left out names a stage still to do
        assert stage not in done, out
    partly = {name for name in drawn if not PANEL_NEEDS.get(name, set()) <= done}
    assert len(SKIP_LINE.findall(out)) == len(FIGURE_NEEDS) - len(drawn) + len(partly), out
    for name in drawn & LOOKS_UP:  # before init, the rows are placeholders, and it says so
        line = next(line for line in out.splitlines() if f"{name}:" in line)
        assert ("finish stage 'init'" in line) == ("init" not in done), line

    data = page.build(load_impl(impl))
    shown = _sections(data)
    assert shown == {name for name, needs in PAGE_NEEDS.items() if needs <= done}, data["skipped"]
    for note in data["skipped"]:
        stage = SKIP_LINE.search(note)
        assert (stage and stage[1] not in done) or "finish stage 'init'" in note, note
    assert ("tokens" in shown and "init" not in done) == any(
        "finish stage 'init'" in note for note in data["skipped"])


#: The lab's cells that run learner code, each by a call it makes (the first key that matches),
#: and the stages each needs.
LAB_NEEDS = {"one_hot(ids": {"embedding", "onehot"}, "emb(ids)": {"embedding"},
             "glove.neighbours": {"neighbours"}, "count_params": {"params"},
             "GPT2(config)": {"embedding", "tying"}, "expected_dot_std": {"embedding", "init"}}


@pytest.mark.parametrize("k", range(len(STAGE_NAMES) + 1))
def test_the_lab_notebook_runs_every_cell_the_finished_stages_allow(k, partial, monkeypatch,
                                                                     capsys):
    """exercises/lab.ipynb's cells (the released notebook: autograder/publish/notebook.py), run in
    order on the learner's package: a cell is skipped exactly when a stage it needs is not
    finished, with the stub's message naming that stage."""
    import nbformat

    done = set(STAGE_NAMES[:k])
    folder = partial / f"partial{k}"
    nb = nbformat.reads((folder / "lab.ipynb").read_text(encoding="utf-8"), as_version=4)
    monkeypatch.chdir(folder)
    namespace: dict = {}
    ran = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or "check(" in cell.source.split("def check", 1)[0]:
            continue
        exec(compile(cell.source, "lab.ipynb", "exec"), namespace)  # noqa: S102
        out = capsys.readouterr().out
        needs = next((v for key, v in LAB_NEEDS.items() if key in cell.source), None)
        if needs is None:
            continue
        ran += 1
        skipped = re.search(r"skipped: .*\(stage '(\w+)'\)", out)
        assert (skipped is None) == (needs <= done), f"{cell.source}\n{out}"
        assert skipped is None or skipped[1] not in done, out
    assert ran == len(LAB_NEEDS)
