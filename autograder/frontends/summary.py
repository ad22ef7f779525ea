"""The class summary an instructor reads: summary.md and the score histogram.

Per-stage averages, who was not graded and why, and the diagnosed mistakes ranked by how many
learners made them (one row per mistake id, each learner once), each with one full message.
Everything learner-derived is escaped for Markdown (``views/escape.py``).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

from lumen.stages import STAGE_NAMES

from ..mistakes import KINDS, mistake_id
from ..views.escape import markdown_inline, markdown_text
from ..views.report import write_atomic
from ..words import counted

SUMMARY, HISTOGRAM = "summary.md", "histogram.png"
TITLE_CHARS = 400  # a check's title is one sentence, shown whole: this only bounds the table


@dataclass
class Diagnosed:
    """One row of the summary's table: a diagnosed mistake and the learners who made it."""

    id: str  # mistakes.mistake_id: stage/test/digest, or the kind of code that never ran
    kind: str  # mistakes.MISTAKE or one of mistakes.KINDS
    check: str  # what the failing check checks (its title), or what the kind means
    stages: list[str]  # where it struck, in stage order
    learners: list[str]  # each once, in the CSV's order
    example: str  # the first learner's message, in full
    example_learner: str


def ranked_mistakes(rows: list[dict]) -> list[Diagnosed]:
    """The diagnosed mistakes, most learners first, each learner counted once per mistake.

    Grouped by mistake id, computed here from each message's template and its kind (data of
    the record, ``mistakes.mistake_id``) rather than read back: the same check failing the
    same way is one mistake whatever the inputs, and code that never ran (import failures,
    timeouts, crashes) is one mistake per kind, whichever tests met it."""
    found: dict[str, Diagnosed] = {}
    for row in rows:
        for mistake in row["mistakes"]:
            stage, test, message = mistake["stage"], mistake["test"], mistake["message"]
            how = mistake["kind"]
            key = mistake_id(stage, test, message, how)
            if key not in found:
                check = KINDS.get(how) or str(mistake.get("title") or test)
                found[key] = Diagnosed(key, how, check, [], [], message, row["learner"])
            entry = found[key]
            if stage not in entry.stages:
                entry.stages = sorted([*entry.stages, stage], key=STAGE_NAMES.index)
            if row["learner"] not in entry.learners:
                entry.learners.append(row["learner"])
    return sorted(found.values(), key=lambda d: (-len(d.learners),
                                                 STAGE_NAMES.index(d.stages[0]), d.id))


def write_summary(out_dir: Path, rows: list[dict]) -> None:
    graded = [r for r in rows if r["total"] is not None]
    lines = [f"# Class summary: {len(graded)} of {counted(len(rows), 'learner')} graded", ""]
    unsafe = [r for r in graded if r.get("sandbox", "bwrap") != "bwrap"]
    if unsafe:  # the operator's channel: summary.md, never a learner's feedback
        lines += [f"**Not graded in bubblewrap** ({counted(len(unsafe), 'learner')}): "
                  f"{markdown_inline(' '.join(unsafe[0].get('operator_notes', [])), 600)}", ""]
    if len(graded) < len(rows):
        lines += [f"{len(rows) - len(graded)} not graded (a rerun retries them):", ""]
        lines += [f"- {markdown_inline(r['learner'], 60)}: "
                  f"{markdown_inline('; '.join(r['notes']), 160)}"
                  for r in rows if r["total"] is None] + [""]
    if graded:
        totals = sorted(r["total"] for r in graded)
        median = totals[len(totals) // 2] if len(totals) % 2 else \
            (totals[len(totals) // 2 - 1] + totals[len(totals) // 2]) / 2
        lines += [f"Total: mean {sum(totals) / len(totals):.1f}, median {median:g}, "
                  f"lowest {totals[0]:g}, highest {totals[-1]:g}.", "",
                  "| stage | average | out of | full marks | not attempted |",
                  "|---|---:|---:|---:|---:|"]
        for stage in STAGE_NAMES:
            if not any(stage in r["stages"] for r in graded):
                continue  # not graded in this batch (--stage)
            scores = [r["stages"].get(stage, 0.0) for r in graded]
            out_of = max((r["max"].get(stage, 0.0) for r in graded), default=0.0)
            full = sum(1 for r in graded if out_of and r["stages"].get(stage) == out_of)
            untouched = sum(1 for r in graded if not r["stages"].get(stage)
                            and not any(m["stage"] == stage for m in r["mistakes"]))
            lines.append(f"| {stage} | {sum(scores) / len(scores):.1f} | {out_of:g} | {full} "
                         f"| {untouched} |")
        left_out = [s for s in STAGE_NAMES if not any(s in r["stages"] for r in graded)]
        if left_out:
            lines += ["", f"Not graded in this batch (--stage): {', '.join(left_out)}."]
        lines.append("")
        if _histogram(out_dir / HISTOGRAM, totals):
            lines += [f"![score histogram]({HISTOGRAM})", ""]
    lines += _mistakes_section(ranked_mistakes(rows))
    write_atomic(out_dir / SUMMARY, "\n".join(lines) + "\n")


def _mistakes_section(mistakes: list[Diagnosed], names_shown: int = 8) -> list[str]:
    """What to re-teach: a row per diagnosed mistake, then each one's full message once."""
    lines = ["## What to re-teach: mistakes ranked by how many learners made them", ""]
    if not mistakes:
        return [*lines, "No diagnosed mistakes (unwritten stubs are not mistakes)."]
    lines += ["One row per mistake: the same check failing the same way, whatever the inputs, "
              "each learner counted once. Code that never ran is one row per kind (import "
              "failures, timeouts, crashes), whichever checks it cost. The full messages are "
              "below the table.", "",
              "| # | learners | stage | check | mistake id | who |",
              "|---|---:|---|---|---|---|"]
    for n, m in enumerate(mistakes, start=1):
        who = ", ".join(m.learners[:names_shown])
        if len(m.learners) > names_shown:
            who += f" and {len(m.learners) - names_shown} more"
        check = markdown_inline(m.check, TITLE_CHARS)
        lines.append(f"| M{n} | {len(m.learners)} | {', '.join(m.stages)} "
                     f"| {check} | `{m.id}` | {markdown_inline(who)} |")
    lines += ["", "### Each mistake in full", ""]
    for n, m in enumerate(mistakes, start=1):
        learners = ", ".join(m.learners)
        lines += [f"**M{n}** `{m.id}`: {counted(len(m.learners), 'learner')} "
                  f"({markdown_inline(learners)}). "
                  f"{markdown_inline(m.example_learner)}'s message:", ""]
        lines += [f"> {line}" for line in markdown_text(m.example).splitlines()] + [""]
    return lines


def histogram_figure(totals: list[float]):
    """The score histogram as a matplotlib Figure (no display; the caller closes it), or None
    without matplotlib. Its learner axis counts learners: whole numbers only."""
    try:
        import matplotlib  # optional and heavy: only the histogram needs it

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # after use("Agg"): no display is looked for
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return None
    figure, axes = plt.subplots(figsize=(6, 3.5))
    axes.hist(totals, bins=range(0, 101, 10), edgecolor="black")
    axes.set_xlabel("total score (out of 100)")
    axes.set_ylabel("learners")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))  # no 0.2 of a learner
    axes.set_title(f"Scores of {counted(len(totals), 'learner')}")
    axes.set_xlim(0, 100)
    return figure


def _histogram(path: Path, totals: list[float]) -> bool:
    """The score histogram as a PNG; False if it cannot be drawn."""
    figure = histogram_figure(totals)
    if figure is None:
        return False
    import matplotlib.pyplot as plt  # histogram_figure imported it

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(figure)
    tmp = path.with_name(f".{path.name}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_bytes(buffer.getvalue())
    os.replace(tmp, path)
    return True
