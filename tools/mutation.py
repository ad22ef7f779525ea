"""Mutation testing of the hidden suites: ``make mutation`` (``python -m tools.mutation``).

mutmut's operators (flipped comparisons, changed numbers, swapped arithmetic, ...) mutate every
solution line of lumen, one mutation at a time. Each mutant becomes a submission, graded by one
warm Grader on the stage that owns the mutated function. A mutant is killed when that stage
loses a point. Survivors are printed; ``KNOWN_EQUIVALENT`` lists those that behave exactly like
the original, each with the reason, and any other survivor fails the run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import libcst as cst
from mutmut.mutation.file_mutation import create_mutations

from autograder.grading import Grader
from lumen.stages import SUBMISSION_FILES
from solutions.release import LUMEN, find_regions

#: (file, the mutated line's text, the mutant's code) -> why it cannot be told apart.
KNOWN_EQUIVALENT: dict[tuple[str, str, str], str] = {}
#: Mutations of string literals only change what an error message says; learners word their
#: messages their own way, and the suites check only what a message must name (an id, V).
MESSAGE_TEXT = "changes only the wording of a message, which is the learner's own"
_STRINGS = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)


def mutants(name: str) -> list[tuple[str, int, str, str]]:
    """``(stage, line, original line, mutant source, message-only)`` per mutation in a region."""
    source = (LUMEN / name).read_text(encoding="utf-8")
    regions = find_regions(source, name)
    lines = {n: r.stage for r in regions for n in range(r.begin + 1, r.end)}
    module, mutations, _, _ = create_mutations(name, source, covered_lines=set(lines))
    out = []
    original_lines = source.splitlines()
    for mutation in mutations:
        mutated = module.deep_replace(mutation.original_node, mutation.mutated_node)
        code = mutated.code
        pairs = zip(original_lines, code.splitlines(), strict=False)  # a mutant may add lines
        changed = [i for i, (a, b) in enumerate(pairs, 1) if a != b]
        if not changed or changed[0] not in lines:
            continue
        wording = isinstance(mutation.original_node, _STRINGS)
        out.append((lines[changed[0]], changed[0], original_lines[changed[0] - 1].strip(), code,
                    wording))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=0, help="at most this many mutants")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    killed, survivors, equivalent = 0, [], []
    with Grader(device="auto") as grader, tempfile.TemporaryDirectory() as tmp:
        todo = [(name, *m) for name in SUBMISSION_FILES for m in mutants(name)]
        if args.limit:
            todo = todo[: args.limit]
        for i, (name, stage, line, original, code, wording) in enumerate(todo, 1):
            folder = Path(tmp) / f"mutant-{i}"
            folder.mkdir()
            for other in SUBMISSION_FILES:
                text = code if other == name else (LUMEN / other).read_text(encoding="utf-8")
                (folder / other).write_text(text)
            result = grader.grade(folder, stages=[stage])
            graded = next(s for s in result.stages if s.name == stage)
            mutated_line = code.splitlines()[line - 1].strip()
            if graded.score < graded.max_score:
                killed += 1
            elif wording or (name, original, mutated_line) in KNOWN_EQUIVALENT:
                why = MESSAGE_TEXT if wording else KNOWN_EQUIVALENT[(name, original, mutated_line)]
                equivalent.append((name, line, original, mutated_line, why))
            else:
                survivors.append((name, line, original, mutated_line))
            print(f"\r[{i:>4}/{len(todo)}] killed {killed}, survived {len(survivors)}",
                  end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    total = killed + len(survivors)
    print(f"mutation score: {killed}/{total} non-equivalent mutants killed "
          f"({killed / max(total, 1):.1%}), {len(equivalent)} known equivalent, "
          f"{time.perf_counter() - started:.0f} s")
    for name, line, original, mutated in survivors:
        print(f"  survived lumen/{name}:{line}: {original!r} -> {mutated!r}")
    for name, line, original, mutated, why in equivalent:
        print(f"  equivalent lumen/{name}:{line}: {original!r} -> {mutated!r}: {why}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
