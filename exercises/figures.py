# Generated from lumen/figures.py by `make stubs`: given code, nothing to write here.
# Learners: read it, run it, no need to change it. Course staff: edit lumen/figures.py.
"""The chapter's six figures, each computed by one package's code (the learner's or lumen's).

    python -m exercises figures --out figures/

Every function takes an ``Impl`` (``live.load_impl``), draws one matplotlib Figure and returns
it with the numbers it plotted, so what a learner sees is what their code computed, and a test
can read it back. A stage still at its stub raises its NotImplementedError; the command line
turns that into one line that names the stage.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from .live import (
    GLOVE_CLUSTERS,
    TOY_ANALOGY,
    TOY_D,
    TOY_PAIRS,
    TOY_VOCAB,
    Impl,
    count_model,
    stub_first,
    tiny_words,
    toy_map,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .vectors import WordVectors

COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


@dataclass
class Drawn:
    """A figure and the numbers it shows (lists and floats, as plotted)."""

    figure: Figure
    data: dict[str, Any] = field(default_factory=dict)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files, no display
    import matplotlib.pyplot as plt

    return plt


def toy_table(impl: Impl, seed: int = 0) -> Any:
    """The toy vocabulary's table: ``impl``'s ``Embedding(5, 8)``, seeded (``Embedding``).

    Until stage 'init' is written its rows are placeholders (explore.py's
    ``placeholders_until_init``), so the lookup can be seen from stage 'embedding' on.
    """
    torch.manual_seed(seed)
    with impl.explore.placeholders_until_init():
        return impl.embeddings.Embedding(len(TOY_VOCAB), TOY_D)


# 1. One-hot, the row it selects, the dense vector


def onehot_figure(impl: Impl, token: str = "cat") -> Drawn:
    """A token's one-hot vector, the row it selects in E, and the dense vector, side by side.

    Stages 'embedding' (the table, the lookup) and 'onehot' (the one-hot vector, the product).
    """
    emb = toy_table(impl)
    i = TOY_VOCAB.index(token)
    with torch.set_grad_enabled(False):
        E = emb.weight.detach().clone()  # (5, 8)
        onehot = impl.embeddings.one_hot(torch.tensor(i), len(TOY_VOCAB))  # (5,)
        product = impl.embeddings.embed_via_onehot(E, torch.tensor([i]))[0]  # (8,)
        lookup = emb(torch.tensor([i]))[0]  # (8,)
    plt = _pyplot()
    fig, (left, middle, right) = plt.subplots(
        1, 3, figsize=(12, 3.8), layout="constrained", gridspec_kw={"width_ratios": [1.2, 8, 8]}
    )
    limit = float(E.abs().max())
    left.imshow(onehot[:, None].numpy(), cmap="Greys", vmin=0, vmax=1)
    left.set_yticks(range(len(TOY_VOCAB)), TOY_VOCAB)
    left.set_xticks([])
    left.set_title(f"one_hot({i}, V=5)\n'{token}'", fontsize=10)
    for r, value in enumerate(onehot.tolist()):
        left.text(0, r, f"{value:g}", ha="center", va="center",
                  color="white" if value else "black")
    middle.imshow(E.numpy(), cmap="coolwarm", vmin=-limit, vmax=limit)
    middle.add_patch(plt.Rectangle((-0.5, i - 0.5), TOY_D, 1, fill=False, lw=3, ec="black"))
    middle.set_yticks(range(len(TOY_VOCAB)), TOY_VOCAB)
    middle.set_xticks(range(TOY_D))
    middle.set_xlabel("d (8 numbers a row)")
    middle.set_title(f"E, V x d = 5 x {TOY_D}: the 1 selects row {i}", fontsize=10)
    right.imshow(product[None, :].numpy(), cmap="coolwarm", vmin=-limit, vmax=limit)
    for c, value in enumerate(product.tolist()):
        right.text(c, 0, f"{value:+.2f}", ha="center", va="center", fontsize=8, rotation=90)
    right.set_yticks([])
    right.set_xticks(range(TOY_D))
    same = torch.equal(product, lookup)
    right.set_title(f"one_hot @ E, the dense vector\n(== E[{i}], the lookup: {same})", fontsize=10)
    fig.suptitle("A one-hot vector times a matrix selects a row", fontsize=12)
    return Drawn(fig, {"token": token, "id": i, "onehot": onehot.tolist(), "E": E.tolist(),
                       "dense": product.tolist(), "lookup": lookup.tolist(), "equal": same})


# 2. The toy 2-D map: cosines and one analogy


def toy_map_figure(impl: Impl) -> Drawn:
    """The chapter's hand-placed 2-D map: thirty words in five clusters, three cosines and
    king - man + woman, measured by ``impl``'s cosine_similarity and analogy (stage
    'neighbours')."""
    words, clusters, xy = toy_map()
    E = torch.tensor(xy)  # (30, 2)
    cos = impl.embeddings.cosine_similarity
    pairs = {f"{a}-{b}": float(cos(E[words.index(a)], E[words.index(b)])) for a, b in TOY_PAIRS}
    a, b, c = (words.index(w) for w in TOY_ANALOGY)
    found = {}
    for exclude in (True, False):
        ids, sims = impl.embeddings.analogy(E, a, b, c, 1, exclude)
        found[exclude] = (words[int(ids[0])], float(sims[0]))
    target = (E[b] - E[a] + E[c]).tolist()

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10.5, 7.5), layout="constrained")
    names = list(dict.fromkeys(clusters))
    for colour, cluster in zip(COLOURS, names, strict=False):
        points = [p for p, k in zip(xy, clusters, strict=True) if k == cluster]
        ax.scatter(*zip(*points, strict=True), s=40, color=colour, label=cluster, zorder=3)
    for word, (x, y) in zip(words, xy, strict=True):
        ax.annotate(word, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=9)
    for (p, q), (key, value) in zip(TOY_PAIRS, pairs.items(), strict=True):
        for w in (p, q):
            ax.plot([0, xy[words.index(w)][0]], [0, xy[words.index(w)][1]], ls=":", lw=1,
                    color="grey")
        mx, my = (torch.tensor(xy[words.index(p)]) + torch.tensor(xy[words.index(q)])) / 4
        ax.text(float(mx), float(my), f"cos({key.replace('-', ', ')}) = {value:+.2f}",
                fontsize=9, color="dimgrey", ha="center",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    arrow = {"arrowstyle": "->", "lw": 2}
    ax.annotate("", xy=xy[b], xytext=xy[a], arrowprops={**arrow, "color": "black"})
    ax.annotate("", xy=target, xytext=xy[c], arrowprops={**arrow, "color": "crimson"})
    word, sim = found[True]
    ax.scatter([target[0]], [target[1]], marker="x", s=90, color="crimson", zorder=4,
               label=f"king - man + woman -> {word} (cos {sim:.2f})")
    ax.axhline(0, color="lightgrey", lw=0.8)
    ax.axvline(0, color="lightgrey", lw=0.8)
    ax.set_aspect("equal")
    fig.legend(*ax.get_legend_handles_labels(), fontsize=9, loc="outside right upper")
    ax.set_title("A hand-placed 2-D toy map: in 2-d a cosine sees only the angle\n"
                 "(the arithmetic is the one you would run on a real table)", fontsize=11)
    return Drawn(fig, {"words": words, "clusters": clusters, "xy": [list(p) for p in xy],
                       "cosines": pairs, "target": target, "analogy": found[True][0],
                       "analogy_without_exclusion": found[False][0]})


# 3. The calculator's split across model sizes


SPLIT = ("token embedding", "position embedding", "blocks", "untied head")


def _split(count: Any) -> dict[str, int]:
    blocks = count.attention + count.mlp + count.layer_norms + count.final_norm
    return {"token embedding": int(count.token_embedding),
            "position embedding": int(count.position_embedding),
            "blocks": int(blocks), "untied head": int(count.lm_head)}


#: The bars of figure 3: (model, tied), each as published, and GPT-2 small untied.
CALCULATOR_BARS: tuple[tuple[str, bool | None], ...] = (
    ("gpt2", None), ("gpt2", False), ("gpt2-medium", None), ("gpt2-large", None),
    ("gpt2-xl", None), ("llama3-8b", None),
)


def params_figure(impl: Impl) -> Drawn:
    """Where the parameters live (``impl``'s count_params, memory_bytes: stage 'params'),
    across GPT-2's sizes and Llama 3 8B, with the memory at fp32 and at half precision."""
    rows = []
    for name, tied in CALCULATOR_BARS:
        count = count_model(impl, name, tied)
        is_tied = count.lm_head == 0
        rows.append({
            "label": f"{name} ({'tied' if is_tied else 'untied'})", "model": name,
            "tied": is_tied, "split": _split(count), "total": int(count.total),
            "share": float(count.embedding_share),
            "fp32": int(count.memory_bytes("fp32")), "bf16": int(count.memory_bytes("bf16")),
        })
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), layout="constrained",
                                      gridspec_kw={"width_ratios": [3, 2]})
    labels = [r["label"] for r in rows]
    y = range(len(rows))
    start = [0.0] * len(rows)
    for colour, part in zip(("tab:red", "tab:orange", "tab:grey", "tab:purple"), SPLIT,
                            strict=True):
        shares = [r["split"][part] / r["total"] for r in rows]
        left.barh(y, shares, left=start, color=colour, label=part)
        start = [s + w for s, w in zip(start, shares, strict=True)]
    for i, r in enumerate(rows):
        left.text(0.005, i, f"{r['share']:.1%}", va="center", color="white", fontsize=9)
    left.set_yticks(list(y), labels)
    left.invert_yaxis()
    left.set_xlim(0, 1)
    left.set_xlabel("share of all parameters")
    left.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.13))
    left.set_title("The token embedding (its share in white): large in a small model,\n"
                   "small in a large one", fontsize=10)
    gib = 2**30
    height = 0.38
    right.barh([i - height / 2 for i in y], [r["fp32"] / gib for r in rows], height,
               label="fp32 (4 bytes)", color="tab:blue")
    right.barh([i + height / 2 for i in y], [r["bf16"] / gib for r in rows], height,
               label="bf16 / fp16 (2 bytes)", color="tab:cyan")
    for i, r in enumerate(rows):
        right.text(r["fp32"] / gib, i - height / 2, f" {r['fp32'] / gib:.2f}", va="center",
                   fontsize=8)
        right.text(r["bf16"] / gib, i + height / 2, f" {r['bf16'] / gib:.2f}", va="center",
                   fontsize=8)
    right.set_yticks(list(y), labels)
    right.invert_yaxis()
    right.set_xscale("log")
    right.set_xlim(right=max(r["fp32"] for r in rows) / gib * 3)  # room for the last label
    right.set_xlabel("memory for the parameters, GiB (log scale)")
    right.legend(fontsize=8, loc="upper right")
    right.set_title("Memory: half precision halves it", fontsize=10)
    return Drawn(fig, {"rows": rows})


# 4. PCA and t-SNE of GloVe words


def glove_rows(impl: Impl, words: WordVectors, chosen: Sequence[str]) -> torch.Tensor:
    """The rows of ``chosen`` looked up by ``impl``'s Embedding holding GloVe's table,
    ``(n, 50)`` (stage 'embedding')."""
    V, d = words.E.shape
    with impl.explore.placeholders_until_init():
        emb = impl.embeddings.Embedding(V, d)
    with torch.set_grad_enabled(False):
        emb.weight.copy_(words.E)  # (V, 50): GloVe's table in the learner's layer
        return emb(torch.tensor([words.id(w) for w in chosen]))  # (n, 50)


def pca(X: torch.Tensor) -> torch.Tensor:
    """``X`` ``(n, d)`` on its two directions of greatest variance, ``(n, 2)``; each direction's
    sign fixed so that its largest coordinate is positive (an SVD's signs are arbitrary)."""
    X = X - X.mean(dim=0)
    _, _, Vh = torch.linalg.svd(X, full_matrices=False)
    xy = X @ Vh[:2].T  # (n, 2)
    signs = torch.sign(xy.gather(0, xy.abs().argmax(dim=0, keepdim=True)))  # (1, 2)
    return xy * signs


def tsne(distances: torch.Tensor, seed: int, perplexity: float) -> torch.Tensor:
    """scikit-learn's t-SNE of a precomputed distance matrix ``(n, n)`` -> ``(n, 2)``."""
    from sklearn.manifold import TSNE

    model = TSNE(n_components=2, metric="precomputed", init="random", random_state=seed,
                 perplexity=perplexity, method="exact", max_iter=500)
    return torch.from_numpy(model.fit_transform(distances.double().numpy()))


#: The PCA panel's title: figure 4's first panel, and the explorer's (``explore.save_figure``).
PCA_TITLE = "PCA: linear, deterministic; clusters squashed together"


def glove_words() -> tuple[list[str], list[str]]:
    """The projections' 48 GloVe words (``GLOVE_CLUSTERS``), and each word's cluster."""
    chosen = [w for members in GLOVE_CLUSTERS.values() for w in members]
    clusters = [k for k, members in GLOVE_CLUSTERS.items() for _ in members]
    return chosen, clusters


def glove_pca(impl: Impl, words: WordVectors) -> tuple[torch.Tensor, torch.Tensor]:
    """The 48 words' rows looked up by ``impl``'s Embedding, ``(48, 50)`` (stage 'embedding'),
    and their PCA, ``(48, 2)``: the PCA panel wherever it is drawn."""
    X = glove_rows(impl, words, glove_words()[0])  # (48, 50)
    return X, pca(X)


def draw_map(ax: Any, xy: torch.Tensor, title: str) -> None:
    """The 48 words at ``xy`` ``(48, 2)`` on ``ax``, coloured by cluster."""
    chosen, clusters = glove_words()
    for colour, cluster in zip(COLOURS, GLOVE_CLUSTERS, strict=True):
        points = xy[[i for i, k in enumerate(clusters) if k == cluster]]
        ax.scatter(points[:, 0], points[:, 1], s=25, color=colour, label=cluster)
    for word, (x, y) in zip(chosen, xy.tolist(), strict=True):
        ax.annotate(word, (x, y), textcoords="offset points", xytext=(3, 3), fontsize=7)
    ax.set_title(title, fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])


def note_panel(ax: Any, note: str) -> None:
    """A panel whose stage is not written yet: its note (``sections.skip_note``) in its place."""
    ax.text(0.5, 0.5, note.replace(" - ", "\n"), ha="center", va="center", wrap=True,
            fontsize=9, transform=ax.transAxes)
    ax.set_axis_off()


def projections_figure(impl: Impl, words: WordVectors, seeds: tuple[int, int] = (0, 1),
                       perplexity: float = 10.0) -> Drawn:
    """PCA and t-SNE (two seeds) of 48 GloVe words: rows by ``impl``'s Embedding (stage
    'embedding', which the figure needs), t-SNE's distances by its cosine_similarity (stage
    'neighbours': until it is written, the t-SNE panels hold its note, ``data["skipped"]``)."""
    chosen, clusters = glove_words()
    X, xy = glove_pca(impl, words)  # (48, 50), (48, 2)
    maps, skipped, distances = {"pca": xy}, [], None
    try:
        with torch.set_grad_enabled(False):
            similarity = impl.embeddings.cosine_similarity(X[:, None, :], X[None, :, :])  # (n, n)
    except NotImplementedError as error:
        skipped.append(f"t-SNE: {impl.explore.skip_note(error, 'neighbours')}")
    else:
        distances = (1 - similarity).clamp_min(0).fill_diagonal_(0)
        for seed in seeds:
            maps[f"tsne seed {seed}"] = tsne(distances, seed, perplexity)
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.5), layout="constrained")
    draw_map(axes[0], xy, PCA_TITLE)
    for ax, seed in zip(axes[1:], seeds, strict=True):
        key = f"tsne seed {seed}"
        if key in maps:
            draw_map(ax, maps[key], f"t-SNE, perplexity {perplexity:g}, seed {seed}:\n"
                                    "cluster sizes and gaps mean nothing")
        else:
            note_panel(ax, skipped[0])
    axes[0].legend(fontsize=8)
    fig.suptitle("GloVe 6B 50-d, 48 words: two 2-D shadows of a 50-d table. Different seeds "
                 "give different maps: check any claim with cosine numbers", fontsize=11)
    return Drawn(fig, {"words": chosen, "clusters": clusters, "skipped": skipped,
                       "distances": None if distances is None else distances.tolist(),
                       **{key: xy.tolist() for key, xy in maps.items()}})


# 5. The one-hot path's cost against the lookup


def _seconds(call: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` timings of ``call()``: the least disturbed by the machine."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def _time_one(impl: Impl, V: int, d: int, n_ids: int, repeats: int,
              generator: torch.Generator, onehot: list[float], lookup: list[float]) -> None:
    """Append the seconds of both paths at vocabulary size ``V``."""
    torch.manual_seed(0)
    with impl.explore.placeholders_until_init():
        emb = impl.embeddings.Embedding(V, d)
    E = emb.weight.detach()  # (V, d)
    ids = torch.randint(0, V, (n_ids,), generator=generator)  # (n_ids,)
    with torch.set_grad_enabled(False):
        impl.embeddings.embed_via_onehot(E, ids)  # warm up once
        emb(ids)
        onehot.append(_seconds(lambda: impl.embeddings.embed_via_onehot(E, ids), repeats))
        lookup.append(_seconds(lambda: emb(ids), repeats))


def cost_figure(impl: Impl, sizes: Sequence[int] = (1_000, 4_000, 16_000, 50_257), d: int = 64,
                n_ids: int = 64, repeats: int = 3) -> Drawn:
    """Seconds for ``n_ids`` ids through ``impl``'s embed_via_onehot and its Embedding, as V
    grows: the one-hot path costs V times the lookup (stages 'embedding' and 'onehot')."""
    onehot, lookup = [], []
    generator = torch.Generator().manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one core each: a fair race, and steadier on a busy machine
    try:
        for V in sizes:
            _time_one(impl, V, d, n_ids, repeats, generator, onehot, lookup)
    finally:
        torch.set_num_threads(threads)

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    ax.plot(list(sizes), [s * 1e3 for s in onehot], "o-", label="embed_via_onehot: one_hot @ E")
    ax.plot(list(sizes), [s * 1e3 for s in lookup], "s-", label="Embedding: E[ids]")
    for V, slow, fast in zip(sizes, onehot, lookup, strict=True):
        ax.annotate(f"{slow / fast:.0f}x", (V, slow * 1e3), textcoords="offset points",
                    xytext=(-8, 8), fontsize=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("V, the vocabulary size")
    ax.set_ylabel(f"milliseconds for {n_ids} ids, d = {d} (fastest of {repeats})")
    ax.legend()
    ax.set_title("Same numbers, V times slower: the one-hot path against the lookup\n"
                 "(your functions, timed on this machine)", fontsize=11)
    return Drawn(fig, {"sizes": list(sizes), "onehot_s": onehot, "lookup_s": lookup,
                       "d": d, "n_ids": n_ids})


# 6. Dot products of random rows against std^2 sqrt(d)


def random_dots(impl: Impl, std: float, d: int, n: int = 256, seed: int = 0) -> torch.Tensor:
    """Dot products of ``n`` rows with ``n`` others of ``impl``'s fresh ``Embedding(2n, d,
    std=std)``, ``(n * n,)``: independent pairs, no row meets itself (stage 'init')."""
    torch.manual_seed(seed)
    with torch.set_grad_enabled(False):
        rows = impl.embeddings.Embedding(2 * n, d, std=std).weight  # (2n, d)
        return (rows[:n] @ rows[n:].T).flatten()


def init_figure(impl: Impl, stds: Sequence[float] = (0.02, 0.1, 1.0),
                widths: Sequence[int] = (64, 256, 768, 2048), n: int = 256) -> Drawn:
    """The spread of random rows' dot products, measured on ``impl``'s Embedding, against its
    expected_dot_std (std^2 sqrt(d)), for several std and d (stage 'init')."""
    points = []
    for std in stds:
        for d in widths:
            measured = float(random_dots(impl, std, d, n).std())
            predicted = float(impl.embeddings.expected_dot_std(std, d))
            points.append({"std": std, "d": d, "measured": measured, "predicted": predicted})
    hist_std, hist_d = 0.02, 768
    dots = random_dots(impl, hist_std, hist_d, n)
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.8), layout="constrained")
    for colour, std in zip(COLOURS, stds, strict=False):
        mine = [p for p in points if p["std"] == std]
        left.plot([p["d"] for p in mine], [p["predicted"] for p in mine], "-", color=colour,
                  label=rf"$\sigma$={std:g}: expected_dot_std = $\sigma^2\sqrt{{d}}$")
        left.plot([p["d"] for p in mine], [p["measured"] for p in mine], "o", color=colour,
                  label=rf"$\sigma$={std:g}: measured")
    left.set_xscale("log", base=2)
    left.set_xticks(list(widths), [str(d) for d in widths])
    left.set_yscale("log")
    left.set_xlabel("d, the row width")
    left.set_ylabel("std of the dot product of two random rows")
    left.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    left.set_title("Measured on your Embedding (dots) against std^2 sqrt(d) (lines)",
                   fontsize=10)
    predicted = float(impl.embeddings.expected_dot_std(hist_std, hist_d))
    right.hist(dots.numpy(), bins=80, density=True, alpha=0.6,
               label=f"measured: std {float(dots.std()):.4f}")
    x = torch.linspace(-4 * predicted, 4 * predicted, 200)
    pdf = torch.exp(-0.5 * (x / predicted) ** 2) / (predicted * (2 * torch.pi) ** 0.5)
    right.plot(x.numpy(), pdf.numpy(), color="black",
               label=rf"N(0, ($\sigma^2\sqrt{{d}}$)$^2$), $\sigma^2\sqrt{{d}}$ = {predicted:.4f}")
    right.set_xlabel("dot product of two rows")
    right.set_ylabel("density")
    right.legend(fontsize=8)
    right.set_title(f"std={hist_std}, d={hist_d} (GPT-2 small): first-block scores start "
                    "near zero", fontsize=10)
    return Drawn(fig, {"points": points, "hist_dots": dots.tolist(), "hist_predicted": predicted})


#: The six figures: file name, title, the stage named when one cannot be drawn, its function.
FIGURES: tuple[tuple[str, str, str], ...] = (
    ("1-onehot.png", "1. One-hot, the row it selects, the dense vector", "onehot"),
    ("2-toy-map.png", "2. The 2-D toy map: cosines and king - man + woman", "neighbours"),
    ("3-params.png", "3. Where the parameters live, GPT-2 to Llama 3 8B", "params"),
    ("4-pca-tsne.png", "4. PCA and t-SNE of GloVe words, two seeds", "embedding"),
    ("5-onehot-cost.png", "5. The one-hot path's cost against the lookup", "onehot"),
    ("6-init.png", "6. Dot products of random rows against std^2 sqrt(d)", "init"),
)


def summary(index: int, drawn: Drawn) -> str:
    """One line of the numbers figure ``index`` shows, for the command line."""
    line = _summary(index, drawn.data)
    return f"{line} ({PLACEHOLDER_NOTE})" if drawn.data.get("placeholders") else line


def _summary(index: int, data: dict[str, Any]) -> str:
    if index == 1:
        return f"one_hot({data['id']}) @ E == E[{data['id']}]: {data['equal']}"
    if index == 2:
        cosines = ", ".join(f"cos({k.replace('-', ', ')}) {v:+.2f}"
                            for k, v in data["cosines"].items())
        return f"{cosines}; king - man + woman -> {data['analogy']}"
    if index == 3:
        shares = ", ".join(f"{r['label']} {r['share']:.1%}" for r in data["rows"])
        return f"the token embedding's share: {shares}"
    if index == 4:
        shown = "PCA only (t-SNE needs stage 'neighbours')" if data["skipped"] else (
            "PCA and t-SNE with two seeds")
        return f"{len(data['words'])} GloVe words, {shown}"
    if index == 5:
        V, slow, fast = data["sizes"][-1], data["onehot_s"][-1], data["lookup_s"][-1]
        return f"at V = {V:,} the one-hot path takes {slow / fast:.0f}x the lookup's time"
    worst = max(abs(p["measured"] / p["predicted"] - 1) for p in data["points"])
    return (f"measured spreads within {worst:.0%} of std^2 sqrt(d), "
            f"for {len(data['points'])} (std, d)")


#: What stage 'init' adds to the figures drawn on placeholder rows before it is written.
PLACEHOLDER_NOTE = ("the rows are placeholders, uniform on [-1, 1): finish stage 'init' for "
                    "N(0, std^2) rows")


def draw(impl: Impl, index: int, words: WordVectors | None = None, quick: bool = False) -> Drawn:
    """Figure ``index`` (1 to 6); ``words`` for figure 4; ``quick``: smaller sizes (tests).

    A figure needs exactly its own stages: figures 1, 4 and 5 look rows up, and the whole
    drawing (not only the table's construction) runs inside ``placeholders_until_init``, since
    ``forward`` ends in ``scale_output``, stage 'init''s; ``data["placeholders"]`` then names
    what fell back, and the summary line says to finish stage 'init'.
    """
    if index in (1, 4, 5):
        with impl.explore.placeholders_until_init() as fell_back:
            drawn = _draw(impl, index, words, quick)
        drawn.data["placeholders"] = sorted(set(fell_back))
        return drawn
    return _draw(impl, index, words, quick)


def _draw(impl: Impl, index: int, words: WordVectors | None, quick: bool) -> Drawn:
    if index == 1:
        return onehot_figure(impl)
    if index == 2:
        return toy_map_figure(impl)
    if index == 3:
        return params_figure(impl)
    if index == 4:
        if words is None:  # a stub says so before GloVe loads
            stub_first(lambda: glove_rows(impl, tiny_words(impl), ["w0"]))
            words = impl.vectors.load_glove(50_000)
        return projections_figure(impl, words)
    if index == 5:
        if quick:
            return cost_figure(impl, sizes=(500, 4_000, 32_000), d=32, n_ids=32, repeats=2)
        return cost_figure(impl)
    if index == 6:
        if quick:
            return init_figure(impl, stds=(0.02, 1.0), widths=(64, 768), n=128)
        return init_figure(impl)
    raise ValueError(f"there are six figures, 1 to 6, not {index}")
