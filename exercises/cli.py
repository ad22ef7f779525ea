# Generated from lumen/cli.py by `make stubs`: given code, nothing to write here.
# Learners: read it, run it, no need to change it. Course staff: edit lumen/cli.py.
"""The chapter, live: run its examples, figures and interactive page on one package's code.

From the folder that holds exercises/ (your code)::

    python -m exercises tokens "The cat sat"        # GPT-2's ids, and the text of each
    python -m exercises neighbours cat -k 10        # nearest GloVe words, by your cosine
    python -m exercises analogy man king woman      # with and without excluding the inputs
    python -m exercises params llama3-8b --dtype bf16   # the parameter calculator
    python -m exercises figures --out figures       # the chapter's six figures, as PNG files
    python -m exercises explore --out explore.html  # the interactive page, offline

``--impl PACKAGE`` (or ``$LUMEN_IMPL``, as for the visible tests) runs another package's code
with the same files; the default is the package this command belongs to. A stage you have not
written yet is skipped with one line that names it, so run these after every stage.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import figures
from .live import (
    MODELS,
    PUBLISHED_TIED,
    Impl,
    count_model,
    impl_package,
    load_impl,
    model_shape,
    stub_first,
    tiny_words,
)
from .sections import section

PACKAGE = __package__ or "lumen"


def cmd_tokens(impl: Impl, args: argparse.Namespace) -> int:
    """GPT-2's ids for the text, and the piece of text each id stands for."""
    ids = impl.tokenizer.encode(args.text)
    pieces = impl.tokenizer.token_strings(ids)
    print(f"{args.text!r} -> {len(ids)} GPT-2 tokens: {' '.join(map(str, ids))}")
    for i, piece in zip(ids, pieces, strict=True):
        print(f"  {i:>6}  {piece!r}")
    print("ids are labels, not quantities: each one only picks a row of the embedding table")
    return 0


def _glove(impl: Impl) -> Any:
    start = time.perf_counter()
    words = impl.vectors.load_glove()
    seconds = time.perf_counter() - start
    print(f"GloVe 6B 50-d: {len(words.words):,} words, loaded in {seconds:.1f} s")
    return words


def cmd_neighbours(impl: Impl, args: argparse.Namespace) -> int:
    """The k nearest GloVe words to a word, by the package's cosine_neighbours."""
    code = 0

    def show() -> None:
        nonlocal code
        stub_first(lambda: tiny_words(impl).neighbours("w0", k=1))  # a stub: no GloVe to load
        words = _glove(impl)
        if args.word not in words.index:
            print(f"{args.word!r} is not among GloVe's {len(words.words):,} words (lower case)")
            code = 1
            return
        for rank, (word, sim) in enumerate(words.neighbours(args.word, k=args.k), start=1):
            print(f"  {rank:>3}. {word:<16} {sim:.3f}")

    try:
        section(f"Nearest to {args.word!r} by cosine_neighbours in {impl.package}/", "neighbours",
                show)
    except ValueError as error:  # -k out of range: cosine_neighbours says which range
        print(f"error: {error}")
        return 1
    return code


def cmd_analogy(impl: Impl, args: argparse.Namespace) -> int:
    """a : b :: c : ?, with and without excluding the three inputs, side by side."""
    code = 0

    def show() -> None:
        nonlocal code
        stub_first(lambda: tiny_words(impl).analogy("w0", "w1", "w2", k=1))
        words = _glove(impl)
        missing = [w for w in (args.a, args.b, args.c) if w not in words.index]
        if missing:
            print(f"not among GloVe's {len(words.words):,} words (lower case): "
                  f"{', '.join(missing)}")
            code = 1
            return
        kept = words.analogy(args.a, args.b, args.c, k=args.k, exclude_inputs=False)
        excluded = words.analogy(args.a, args.b, args.c, k=args.k, exclude_inputs=True)
        print(f"  {'excluding the inputs':<30}{'not excluding them'}")
        for rank, ((w1, s1), (w2, s2)) in enumerate(zip(excluded, kept, strict=True), start=1):
            print(f"  {rank:>2}. {w1:<16} {s1:.3f}    {rank:>2}. {w2:<16} {s2:.3f}")
        if kept[0][0] in (args.a, args.b, args.c):
            print(f"  without the exclusion the nearest word is {kept[0][0]!r}, an input itself: "
                  "the standard test excludes them (Nissim et al., 2020)")

    title = f"{args.a} : {args.b} :: {args.c} : ?  by analogy in {impl.package}/"
    try:
        section(title, "neighbours", show)
    except ValueError as error:  # -k out of range
        print(f"error: {error}")
        return 1
    return code


def cmd_params(impl: Impl, args: argparse.Namespace) -> int:
    """The parameter calculator: where a model's parameters live, and the memory they take."""
    tied = PUBLISHED_TIED[args.model] if args.tied is None else args.tied

    def show() -> None:  # every line computed first: a stub leaves only its own line
        count = count_model(impl, args.model, tied)
        shape = model_shape(impl, args.model)
        tying = "tied" if tied else "untied"
        described = ", ".join(f"{k}={v}" for k, v in shape.items())
        V, d = shape["vocab_size"], shape["d_model"]
        size = count.memory_bytes(args.dtype)
        print("\n".join((
            impl.params.format_table(count, f"{args.model} ({described}, {tying})"),
            f"token embedding: {V:,} x {d:,} = {count.token_embedding:,} of "
            f"{count.total:,} parameters ({count.embedding_share:.1%}), {tying}",
            f"memory at {args.dtype}: {size:,} bytes = {size / 2**30:.2f} GiB")))

    section(f"count_params in {impl.package}/", "params", show)
    return 0


def cmd_figures(impl: Impl, args: argparse.Namespace) -> int:
    """The chapter's six figures as PNG files in ``--out``."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    chosen = args.only or list(range(1, len(figures.FIGURES) + 1))
    saved: list[Path] = []
    for index in chosen:
        name, title, stage = figures.FIGURES[index - 1]

        def body(index: int = index, name: str = name) -> None:
            drawn = figures.draw(impl, index, quick=args.quick)
            path = out / name
            drawn.figure.savefig(path, dpi=110)
            import matplotlib.pyplot as plt

            plt.close(drawn.figure)
            saved.append(path)
            print(f"  saved {path}: {figures.summary(index, drawn)}")
            for note in drawn.data.get("skipped", []):  # a panel whose stage is not written
                print(f"  {note}")

        section(title, stage, body)
    print(f"\nthe code in {impl.package}/ drew {len(saved)} of the {len(chosen)} figures asked for"
          + (f"; open them in {out}/" if saved else ""))
    return 0


def cmd_explore(impl: Impl, args: argparse.Namespace) -> int:
    """The offline page: one HTML file, no network, no server."""
    from . import page

    data = page.write(impl, args.out)
    for note in data["skipped"]:
        print(f"  {note}")
    print(f"wrote {args.out}: open it in a browser (it needs no network and no server)")
    return 0


def parser() -> argparse.ArgumentParser:
    impl_option = argparse.ArgumentParser(add_help=False)
    impl_option.add_argument(
        "--impl", default=argparse.SUPPRESS, metavar="PACKAGE",
        help=f"whose code runs (default: $LUMEN_IMPL, else {PACKAGE})")
    main = argparse.ArgumentParser(
        prog=f"python -m {PACKAGE}", parents=[impl_option],
        description="The chapter's examples, figures and page, computed by one package's code.")
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=help, description=help, parents=[impl_option])

    tokens = command("tokens", "GPT-2's token ids for TEXT, and the text each stands for")
    tokens.add_argument("text", metavar="TEXT")
    tokens.set_defaults(run=cmd_tokens)

    neighbours = command("neighbours", "the nearest GloVe words to WORD, by cosine")
    neighbours.add_argument("word", metavar="WORD")
    neighbours.add_argument("-k", type=int, default=10, metavar="N", help="how many (10)")
    neighbours.set_defaults(run=cmd_neighbours)

    analogy = command("analogy", "A : B :: C : ?, with and without excluding A, B and C")
    for name in ("a", "b", "c"):
        analogy.add_argument(name, metavar=name.upper())
    analogy.add_argument("-k", type=int, default=5, metavar="N", help="how many (5)")
    analogy.set_defaults(run=cmd_analogy)

    params = command("params", "the parameter calculator for MODEL")
    params.add_argument("model", metavar="MODEL", choices=MODELS,
                        help=f"one of {', '.join(MODELS)}")
    tying = params.add_mutually_exclusive_group()
    tying.add_argument("--untied", dest="tied", action="store_false", default=None,
                       help="a separate output layer (Llama 3's choice)")
    tying.add_argument("--tied", dest="tied", action="store_true", default=None,
                       help="the output layer is the token embedding (GPT-2's choice)")
    params.add_argument("--dtype", default="fp32", choices=("fp32", "fp16", "bf16"),
                        help="the precision for the memory line (fp32)")
    params.set_defaults(run=cmd_params)

    draw = command("figures", "the chapter's six figures, as PNG files")
    draw.add_argument("--out", type=Path, default=Path("figures"), metavar="DIR",
                      help="the folder to write (figures/)")
    draw.add_argument("--only", type=lambda s: [int(i) for i in s.split(",")], metavar="1,2",
                      help="only these figures, by number")
    draw.add_argument("--quick", action="store_true",
                      help="figures 5 and 6 on smaller sizes, for a fast look")
    draw.set_defaults(run=cmd_figures)

    page = command("explore", "the chapter's interactive figures, as one offline HTML page")
    page.add_argument("--out", type=Path, default=Path("explore.html"), metavar="FILE",
                      help="the file to write (explore.html)")
    page.set_defaults(run=cmd_explore)
    return main


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status is 0 unless a word or an option was wrong."""
    args = parser().parse_args(argv)
    if args.command == "figures" and args.only:
        bad = [i for i in args.only if not 1 <= i <= len(figures.FIGURES)]
        if bad:
            parser().error(f"--only: there are figures 1 to {len(figures.FIGURES)}, not {bad}")
    try:
        impl = load_impl(impl_package(getattr(args, "impl", None), PACKAGE))
    except ImportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"running the code in {impl.package}/")
    return args.run(impl, args)


if __name__ == "__main__":
    sys.exit(main())
