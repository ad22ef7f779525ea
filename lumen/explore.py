"""See the chapter's functions at work on real data: GPT-2's tokenizer and GloVe word vectors.

    python -m exercises.explore --figure mine.png    # your code, from the folder above exercises/

Four sections, one or two stages each, then a figure. A stage you have not written yet is
skipped with a note, so you can run this after every stage and watch more of it come alive.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .embeddings import Embedding, embed_via_onehot, expected_dot_std
from .live import load_impl, stub_first, tiny_words
from .params import PRESETS, count_params, format_table
from .sections import section, skip_note
from .tokenizer import encode, token_strings
from .vectors import WordVectors, load_glove

if TYPE_CHECKING:
    from matplotlib.axes import Axes

TEXT = "The cat sat"
NEIGHBOUR_WORDS = ("cat", "king", "paris")

@contextlib.contextmanager
def placeholders_until_init() -> Iterator[list[str]]:
    """Until stage 'init' is written, Embedding's fill and scaling fall back to placeholders.

    'init' is the last stage, and the lookup (stage 'embedding') is worth seeing long before:
    inside this block a stub's NotImplementedError from ``reset_parameters`` fills the rows
    with placeholder numbers (uniform on [-1, 1), not GPT-2's) and one from ``scale_output``
    leaves the rows unscaled, and one from ``GPT2.init_weights`` keeps PyTorch's default
    initialisation (so the tying cell of the lab runs too). The list it yields names the
    methods that fell back.
    """
    from .gpt2 import GPT2  # late: gpt2 imports embeddings

    fell_back: list[str] = []
    owners = {"reset_parameters": Embedding, "scale_output": Embedding, "init_weights": GPT2}
    originals = {name: getattr(cls, name) for name, cls in owners.items()}

    def placeholder_fill(self: Embedding) -> None:
        self.weight.data.uniform_(-1.0, 1.0)

    def unscaled(self: Embedding, x: torch.Tensor) -> torch.Tensor:
        return x

    def defaults(self: GPT2) -> None:
        pass  # PyTorch's default initialisation of each layer stays

    def with_fallback(name: str, fallback: Callable[..., object]) -> Callable[..., object]:
        def call(self: object, *args: object) -> object:
            try:
                return originals[name](self, *args)
            except NotImplementedError as error:
                if "(stage 'init')" not in str(error):
                    raise
                fell_back.append(name)
                return fallback(self, *args)

        return call

    Embedding.reset_parameters = with_fallback("reset_parameters", placeholder_fill)
    Embedding.scale_output = with_fallback("scale_output", unscaled)
    GPT2.init_weights = with_fallback("init_weights", defaults)
    try:
        yield fell_back
    finally:
        for name, method in originals.items():
            setattr(owners[name], name, method)


def show_tokens() -> None:
    """Token ids in, vectors out: each id picks one row of the table (stage 'embedding')."""
    ids = torch.tensor([encode(TEXT)])  # (1, T)
    print(f"  {TEXT!r} -> ids {ids[0].tolist()}, tokens {token_strings(ids[0].tolist())}")
    torch.manual_seed(0)
    with placeholders_until_init() as fell_back:
        emb = Embedding(50257, 768)  # GPT-2 small's table, freshly initialised
        vectors = emb(ids)  # (1, T, 768)
        if fell_back:
            print(
                "  (stage 'init' is not written yet: the rows are placeholders, uniform on [-1, 1))"
            )
        print(f"  Embedding(50257, 768)(ids) has shape {tuple(vectors.shape)}: one row per token")
        for i, piece in zip(ids[0].tolist(), token_strings(ids[0].tolist()), strict=True):
            row = emb.weight[i]
            first = ", ".join(f"{x:+.4f}" for x in row[:4].tolist())
            print(f"  {i:>6} {piece!r:>7}: row {i} = [{first}, ...], length {row.norm():.3f}")
        same = all(torch.equal(vectors[0, t], emb.weight[i]) for t, i in enumerate(ids[0].tolist()))
        print(f"  each position holds its id's row: {same}")
        section(
            "The same rows the slow way: one_hot(ids) @ E", "onehot", lambda: show_onehot(emb, ids)
        )


def show_onehot(emb: Embedding, ids: torch.Tensor) -> None:
    """The one-hot route gives the same numbers (stage 'onehot')."""
    slow = embed_via_onehot(emb.weight, ids)  # (1, T, 768)
    fast = emb(ids)
    V = emb.weight.shape[0]
    n = ids.numel() * V
    print(
        f"  the one-hot vectors: {ids.numel()} x {V:,} = {n:,} numbers, {n - ids.numel():,} zeros"
    )
    difference = (slow - fast).abs().max().item()
    print(f"  embed_via_onehot == Embedding: {torch.equal(slow, fast)} (max |diff| {difference})")


def show_neighbours(words: WordVectors) -> None:
    """Cosine neighbours and the analogy on GloVe (stage 'neighbours')."""
    print(
        f"  GloVe 6B, the {len(words.words):,} most frequent words, {words.E.shape[1]} numbers each"
    )
    for word in NEIGHBOUR_WORDS:
        found = ", ".join(f"{w} {s:.2f}" for w, s in words.neighbours(word, k=5))
        print(f"  nearest to {word!r}: {found}")
    for exclude in (True, False):
        found = ", ".join(
            f"{w} {s:.2f}"
            for w, s in words.analogy("man", "king", "woman", k=3, exclude_inputs=exclude)
        )
        print(f"  man : king :: woman : ?  (exclude_inputs={exclude}): {found}")
    print("  without the exclusion the nearest word is often king itself (Nissim et al., 2020)")


def show_params() -> None:
    """Where GPT-2's parameters live, tied and untied (stage 'params')."""
    shape = {k: v for k, v in PRESETS["gpt2"].items() if k != "n_heads"}
    for tied in (True, False):
        title = f"GPT-2 small, {'tied' if tied else 'untied'}"
        table = format_table(count_params(**shape, tied=tied), title)
        print("  " + table.replace("\n", "\n  ") + "\n")
    shares = []
    for name, preset in PRESETS.items():
        count = count_params(**{k: v for k, v in preset.items() if k != "n_heads"})
        shares.append(f"{name} {count.embedding_share:.1%}")
    print("  the token embedding's share, tied: " + ", ".join(shares))


def show_init() -> None:
    """Dot products of random rows: measured against std**2 * sqrt(d) (stage 'init')."""
    for std, d in ((0.02, 768), (1.0, 768)):
        predicted = expected_dot_std(std, d)
        measured = _random_dots(std, d).std().item()
        print(
            f"  std={std}, d={d}: dot products of random rows have std {measured:.4f}, "
            f"predicted {predicted:.4f}"
        )
    print("  0.02 keeps first-block attention scores near zero, as the rest of the network expects")


def _random_dots(std: float, d: int, n: int = 512) -> torch.Tensor:
    """Dot products between ``n`` random rows and ``n`` others of a fresh Embedding, ``(n*n,)``."""
    torch.manual_seed(0)
    rows = Embedding(2 * n, d, std=std)(torch.arange(2 * n))  # (2n, d)
    return (rows[:n] @ rows[n:].T).flatten()  # independent pairs: no row meets itself


def _dots_panel(ax: Axes) -> None:
    """Histogram of random rows' dot products against N(0, expected_dot_std^2)."""
    std, d = 0.02, 768
    dots = _random_dots(std, d)
    predicted = expected_dot_std(std, d)
    ax.hist(
        dots.numpy(),
        bins=80,
        density=True,
        alpha=0.6,
        label=f"measured: std {dots.std().item():.4f}",
    )
    x = torch.linspace(-4 * predicted, 4 * predicted, 200)
    pdf = torch.exp(-0.5 * (x / predicted) ** 2) / (predicted * (2 * torch.pi) ** 0.5)
    ax.plot(
        x.numpy(),
        pdf.numpy(),
        color="black",
        label=rf"predicted: $\sigma^2\sqrt{{d}}$ = {predicted:.4f}",
    )
    ax.set_title(f"dot products of random rows, Embedding(1024, {d}, std={std})", fontsize=10)
    ax.set_xlabel("dot product of two rows")
    ax.set_ylabel("density")
    ax.legend(fontsize=8)


def save_figure(path: Path, glove: Callable[[], WordVectors | None]) -> None:
    """Two panels, saved as a PNG: the GloVe words' PCA, figure 4's own (``figures.glove_pca``:
    stage 'embedding'), and random rows' dot products (stage 'init'). A panel whose stage is
    not written yet holds its note, which is printed too; ``glove`` loads the words, once."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    from . import figures

    impl = load_impl(__package__ or "lumen")
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5), layout="constrained")
    notes = []
    try:
        with placeholders_until_init(), torch.set_grad_enabled(False):  # forward's scale_output
            stub_first(lambda: figures.glove_rows(impl, tiny_words(impl), ["w0"]))
            words = glove()
            if words is None:
                figures.note_panel(left, "GloVe is not installed: pip install -r requirements.txt")
            else:
                figures.draw_map(left, figures.glove_pca(impl, words)[1], figures.PCA_TITLE)
                left.legend(fontsize=8, loc="best")
    except NotImplementedError as error:
        left.clear()
        notes.append(f"the figure's PCA panel: {skip_note(error, 'embedding')}")
        figures.note_panel(left, notes[-1])
    try:
        with torch.set_grad_enabled(False):  # looking, not training
            _dots_panel(right)
    except NotImplementedError as error:
        right.clear()
        notes.append(f"the figure's dot products: {skip_note(error, 'init')}")
        figures.note_panel(right, notes[-1])
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"\nfigure saved to {path}")
    for note in notes:
        print(f"  {note}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__package__}.explore",
        description="Run the chapter's functions on GPT-2's tokenizer and GloVe word vectors.",
    )
    parser.add_argument(
        "--figure",
        type=Path,
        default=Path("explore.png"),
        metavar="PATH",
        help="where to save the figure (default: explore.png)",
    )
    args = parser.parse_args(argv)
    print(f"running the code in {__package__}/")

    @functools.cache
    def glove() -> WordVectors | None:
        """GloVe's 50,000 most frequent words, loaded the first time a written stage needs
        them; None, said once, when the package is not installed."""
        try:
            return load_glove(50_000)
        except ImportError as error:
            print(f"  {error}")
            return None

    def show_neighbours_of_glove() -> None:
        tiny = tiny_words(load_impl(__package__ or "lumen"))
        stub_first(lambda: (tiny.neighbours("w0", k=1), tiny.analogy("w0", "w1", "w2", k=1)))
        words = glove()  # loaded once the stage is written, not before
        if words is not None:
            show_neighbours(words)

    section("Token ids in, vectors out", "embedding", show_tokens)
    section("Cosine neighbours and the analogy", "neighbours", show_neighbours_of_glove)
    section("Where a GPT-2's parameters live", "params", show_params)
    section("Why the numbers start small", "init", show_init)
    save_figure(args.figure, glove)


if __name__ == "__main__":
    main()
