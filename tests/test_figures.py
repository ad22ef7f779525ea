"""The chapter's six figures (lumen/figures.py): what each one plots, read back from the figure.

Each test draws a figure with lumen's code, reads the plotted numbers back from matplotlib's
artists (images, scatter offsets, bars, lines) and checks them against an independent
reference: PyTorch's built-ins (F.one_hot, F.cosine_similarity), scikit-learn's PCA and t-SNE,
the published parameter counts, and std^2 sqrt(d) by arithmetic. On the untouched stubs each
figure stops with a stub's message that names its stage, which the command line turns into
one line (tests/test_lumen_cli.py).
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lumen import figures
from lumen.live import GLOVE_CLUSTERS, TOY_ANALOGY, TOY_PAIRS, load_impl, toy_map
from lumen.stages import parse_stub_message
from lumen.vectors import load_glove

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

#: Parameter counts published for each model (GPT-2's checkpoints; Meta's Llama 3 8B).
PUBLISHED = {("gpt2", True): 124_439_808, ("gpt2", False): 124_439_808 + 50257 * 768,
             ("gpt2-medium", True): 354_823_168, ("gpt2-large", True): 774_030_080,
             ("gpt2-xl", True): 1_557_611_200, ("llama3-8b", False): 8_030_261_248}


@pytest.fixture(scope="module")
def impl():
    return load_impl("lumen")


@pytest.fixture(scope="module")
def glove():
    return load_glove(50_000)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_onehot_figure_shows_the_one_hot_the_row_and_the_dense_vector(impl):
    drawn = figures.onehot_figure(impl, "cat")
    torch.manual_seed(0)
    E = torch.empty(5, 8).normal_(0.0, 0.02)  # what Embedding(5, 8) draws after seed 0
    onehot = F.one_hot(torch.tensor(1), 5).float()
    left, middle, right = drawn.figure.axes
    np.testing.assert_array_equal(left.images[0].get_array(), onehot[:, None].numpy())
    np.testing.assert_array_equal(middle.images[0].get_array(), E.numpy())
    np.testing.assert_array_equal(right.images[0].get_array(), E[1:2].numpy())
    outline = middle.patches[0]  # the selected row's frame
    assert outline.get_xy() == (-0.5, 0.5) and outline.get_height() == 1
    assert drawn.data["equal"] and drawn.data["dense"] == E[1].tolist()


def test_toy_map_plots_the_words_with_real_cosines_and_the_analogy(impl):
    drawn = figures.toy_map_figure(impl)
    words, _, xy = toy_map()
    E = torch.tensor(xy)
    assert 28 <= len(words) <= 32 and len(set(words)) == len(words)
    ax = drawn.figure.axes[0]
    plotted = np.concatenate([c.get_offsets() for c in ax.collections[:5]])
    np.testing.assert_allclose(plotted, np.array(xy))
    for a, b in TOY_PAIRS:
        expected = F.cosine_similarity(E[words.index(a)], E[words.index(b)], dim=0)
        assert drawn.data["cosines"][f"{a}-{b}"] == pytest.approx(float(expected), abs=1e-6)
    a, b, c = (words.index(w) for w in TOY_ANALOGY)
    sims = F.cosine_similarity(E, (E[b] - E[a] + E[c])[None], dim=1)
    sims[[a, b, c]] = -math.inf
    assert drawn.data["analogy"] == words[int(sims.argmax())] == "queen"
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "cos(cat, dog)" in texts and "-> queen" in ax.get_legend_handles_labels()[1][-1]


def test_params_figure_splits_each_model_as_published(impl):
    drawn = figures.params_figure(impl)
    rows = drawn.data["rows"]
    assert {(r["model"], r["tied"]) for r in rows} == set(PUBLISHED)
    for r in rows:
        assert r["total"] == PUBLISHED[(r["model"], r["tied"])], r["label"]
        assert sum(r["split"].values()) == r["total"]
        assert r["fp32"] == 4 * r["total"] and r["bf16"] == 2 * r["total"]
    llama = next(r for r in rows if r["model"] == "llama3-8b")
    assert llama["split"]["token embedding"] == 128_256 * 4_096 == 525_336_576
    assert llama["split"]["untied head"] == 525_336_576
    assert rows[0]["share"] == pytest.approx(50257 * 768 / 124_439_808)
    shares = [r["share"] for r in rows if r["tied"]]
    assert shares == sorted(shares, reverse=True)  # larger model, smaller share
    left, right = drawn.figure.axes
    widths = np.array([p.get_width() for p in left.patches]).reshape(4, len(rows))
    for i, part in enumerate(figures.SPLIT):
        np.testing.assert_allclose(widths[i], [r["split"][part] / r["total"] for r in rows])
    memory = np.array([p.get_width() for p in right.patches]).reshape(2, len(rows))
    np.testing.assert_allclose(memory[0], [r["total"] * 4 / 2**30 for r in rows])
    np.testing.assert_allclose(memory[1], [r["total"] * 2 / 2**30 for r in rows])


def test_projections_are_pca_and_sklearn_tsne_of_real_glove_rows(impl, glove):
    from sklearn.decomposition import PCA
    from sklearn.manifold import trustworthiness

    drawn = figures.projections_figure(impl, glove)
    words = [w for members in GLOVE_CLUSTERS.values() for w in members]
    X = glove.E[[glove.id(w) for w in words]].double()
    reference = PCA(n_components=2).fit_transform(X.numpy())
    pca = np.array(drawn.data["pca"])
    for k in range(2):  # an SVD's signs are arbitrary: compare each direction up to its sign
        sign = np.sign(reference[:, k] @ pca[:, k])
        np.testing.assert_allclose(pca[:, k], sign * reference[:, k], atol=1e-4)
    distances = 1 - F.cosine_similarity(X[:, None], X[None], dim=-1)
    distances.fill_diagonal_(0)
    np.testing.assert_allclose(drawn.data["distances"], distances.numpy(), atol=1e-5)
    seeds = [np.array(drawn.data[f"tsne seed {s}"]) for s in (0, 1)]
    for xy in seeds:
        assert trustworthiness(distances.clamp_min(0).numpy(), xy, n_neighbors=5,
                               metric="precomputed") > 0.9  # neighbours kept near
    assert not np.allclose(seeds[0], seeds[1], atol=1.0)  # another seed, another map
    for ax, key in zip(drawn.figure.axes, ("pca", "tsne seed 0", "tsne seed 1"), strict=True):
        plotted = np.concatenate([c.get_offsets() for c in ax.collections])
        np.testing.assert_allclose(plotted, np.array(drawn.data[key]), rtol=1e-6)
        assert ax.get_title()


def test_cost_figure_times_the_packages_own_functions(impl, monkeypatch):
    calls = {"onehot": 0}
    original = impl.embeddings.embed_via_onehot

    def counted(weight, ids):
        calls["onehot"] += 1
        return original(weight, ids)

    monkeypatch.setattr(impl.embeddings, "embed_via_onehot", counted)
    sizes = (500, 32_000)
    drawn = figures.cost_figure(impl, sizes=sizes, d=32, n_ids=32, repeats=3)
    assert calls["onehot"] == len(sizes) * (1 + 3)  # a warm-up and three timed calls each
    slow, fast = drawn.data["onehot_s"], drawn.data["lookup_s"]
    assert slow[-1] > 5 * slow[0], "the one-hot path should grow with V (64x here)"
    assert slow[-1] / fast[-1] > slow[0] / fast[0]
    ax = drawn.figure.axes[0]
    onehot_line, lookup_line = ax.lines
    np.testing.assert_allclose(onehot_line.get_xdata(), sizes)
    np.testing.assert_allclose(onehot_line.get_ydata(), [s * 1e3 for s in slow])
    np.testing.assert_allclose(lookup_line.get_ydata(), [s * 1e3 for s in fast])


def test_init_figure_measures_the_spread_against_std2_sqrt_d(impl):
    drawn = figures.init_figure(impl, stds=(0.02, 1.0), widths=(64, 768), n=128)
    for p in drawn.data["points"]:
        assert p["predicted"] == pytest.approx(p["std"] ** 2 * math.sqrt(p["d"]))
        assert p["measured"] == pytest.approx(p["predicted"], rel=0.1)
    left, right = drawn.figure.axes
    for i, std in enumerate((0.02, 1.0)):
        mine = [p for p in drawn.data["points"] if p["std"] == std]
        prediction, measured = left.lines[2 * i], left.lines[2 * i + 1]
        np.testing.assert_allclose(prediction.get_ydata(), [p["predicted"] for p in mine])
        np.testing.assert_allclose(measured.get_ydata(), [p["measured"] for p in mine])
    heights = [p.get_height() for p in right.patches]
    # the figure bins the float32 dots: binned as float64, a dot on a bin's edge can move
    dots = np.asarray(drawn.data["hist_dots"], dtype=np.float32)
    expected, _ = np.histogram(dots, bins=80, density=True)
    np.testing.assert_allclose(heights, expected, rtol=1e-5)
    assert np.std(drawn.data["hist_dots"]) == pytest.approx(0.02**2 * math.sqrt(768), rel=0.1)


@pytest.mark.parametrize("index", range(1, 7))
def test_on_the_stubs_each_figure_stops_naming_its_stage(index, glove):
    stubs = load_impl("exercises")
    with pytest.raises(NotImplementedError) as raised:
        figures.draw(stubs, index, glove, quick=True)
    stub = parse_stub_message(str(raised.value))
    assert stub is not None, str(raised.value)
    needs = {1: {"embedding"}, 2: {"neighbours"}, 3: {"params"}, 4: {"embedding"},
             5: {"embedding"}, 6: {"embedding"}}
    assert stub[1] in needs[index]


def test_the_explorers_pca_panel_is_figure_4s(glove, tmp_path, monkeypatch, capsys):
    """python -m exercises.explore's PCA panel is figure 4's first panel, the same numbers
    (one source: figures.glove_pca), drawn through the package's lookup: on the stubs it
    holds the line that names stage 'embedding' instead of GloVe's words."""
    import exercises.explore
    import lumen.explore

    drawn = {}
    real = figures.draw_map
    monkeypatch.setattr(figures, "draw_map", lambda ax, xy, title: (
        drawn.setdefault(title, xy), real(ax, xy, title)))
    lumen.explore.save_figure(tmp_path / "lumen.png", lambda: glove)
    expected = figures.projections_figure(load_impl("lumen"), glove).data["pca"]
    np.testing.assert_allclose(drawn[figures.PCA_TITLE].numpy(), np.array(expected))
    exercises.explore.save_figure(tmp_path / "stubs.png", lambda: glove)
    out = capsys.readouterr().out
    assert "the figure's PCA panel: stage 'embedding' not implemented yet" in out, out
    assert (tmp_path / "stubs.png").is_file()
