"""Mutation testing of the hidden suites: ``make mutation`` (``python -m tools.mutation``).

mutmut's operators (flipped comparisons, changed numbers, swapped arithmetic, ...) mutate every
solution line of lumen, one mutation at a time. Each mutant becomes a submission, graded by one
warm Grader on the stage that owns the mutated function. A mutant is killed when that stage
loses a point. Survivors are printed; ``KNOWN_EQUIVALENT`` lists those that behave exactly like
the original, each with the reason, and any other survivor fails the run.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
import time
from pathlib import Path

import libcst as cst
from mutmut.mutation.file_mutation import create_mutations

from autograder.grading import Grader
from autograder.options import Options
from autograder.publish.stubber import LUMEN, find_regions
from lumen.stages import SUBMISSION_FILES

CPU_ONLY = ("moves a tensor to the device it is already on: the same on a machine with one "
            "device (CI); the CUDA pass tells them apart on a GPU runner")
SPEED_ONLY = ("changes only which rows are rescored exactly after the fast matmul: every true "
              "top-k row stays a candidate, so the answer is the same")
DEFAULT_ARG = "passes explicitly what is already the default"
#: (file, the original line, the mutated line) -> why no test can tell the mutant apart.
KNOWN_EQUIVALENT: dict[tuple[str, str, str], str] = {
    ("embeddings.py", "index = ids.reshape(-1).to(self.weight.device, torch.long)  # (N,)",
     "index = ids.reshape(-1).to(None, torch.long)  # (N,)"): CPU_ONLY,
    ("embeddings.py", "index = ids.reshape(-1).to(self.weight.device, torch.long)  # (N,)",
     "index = ids.reshape(-1).to(torch.long)  # (N,)"): CPU_ONLY,
    ("embeddings.py",
     "onehot = one_hot(ids.to(weight.device), weight.shape[0], weight.dtype)  # (..., V)",
     "onehot = one_hot(ids.to(None), weight.shape[0], weight.dtype)  # (..., V)"): CPU_ONLY,
    ("embeddings.py", "approx[torch.tensor(exclude, device=approx.device)] = -math.inf",
     "approx[torch.tensor(exclude, device=None)] = -math.inf"): CPU_ONLY,
    ("embeddings.py", "approx[torch.tensor(exclude, device=approx.device)] = -math.inf",
     "approx[torch.tensor(exclude, )] = -math.inf"): CPU_ONLY,
    ("embeddings.py", "query, exclude = token.to(E.device, E.dtype), []",
     "query, exclude = token.to(None, E.dtype), []"): CPU_ONLY,
    ("embeddings.py", "query, exclude = token.to(E.device, E.dtype), []",
     "query, exclude = token.to(E.dtype), []"): CPU_ONLY,
    ("embeddings.py", "query, exclude = token.to(E.device, E.dtype), []",
     "query, exclude = token.to(E.device, None), []"):
        "keeps the query's dtype; the exercise specifies no query of another dtype than E's",
    ("embeddings.py", "query, exclude = token.to(E.device, E.dtype), []",
     "query, exclude = token.to(E.device, ), []"):
        "keeps the query's dtype; the exercise specifies no query of another dtype than E's",
    ("embeddings.py",
     "approx = (E @ query) / (E.norm(dim=1).clamp_min(1e-8) * query.norm().clamp_min(1e-8))"
     "  # (V,)",
     "approx = (E @ query) / (E.norm(dim=1).clamp_min(1e-8) / query.norm().clamp_min(1e-8))"
     "  # (V,)"): SPEED_ONLY,
    ("embeddings.py",
     "approx = (E @ query) / (E.norm(dim=1).clamp_min(1e-8) * query.norm().clamp_min(1e-8))"
     "  # (V,)",
     "approx = (E @ query) / (E.norm(dim=1).clamp_min(1e-8) * query.norm().clamp_min("
     "1.00000001))  # (V,)"): SPEED_ONLY,
    ("embeddings.py",
     "candidates = torch.nonzero(approx >= kth - 1e-4).squeeze(1)  # ascending ids, with margin",
     "candidates = torch.nonzero(approx > kth - 1e-4).squeeze(1)  # ascending ids, with margin"
     ): SPEED_ONLY,
    ("embeddings.py",
     "candidates = torch.nonzero(approx >= kth - 1e-4).squeeze(1)  # ascending ids, with margin",
     "candidates = torch.nonzero(approx >= kth - 1.0001).squeeze(1)  # ascending ids, with "
     "margin"): SPEED_ONLY,
    ("embeddings.py", "index = _row_index(E, token, \"token\")",
     "index = _row_index(E, token, None)"): "the label only names the argument in a message",
    ("embeddings.py",
     'a, b, c = (_row_index(E, t, name) for t, name in ((a, "a"), (b, "b"), (c, "c")))',
     'a, b, c = (_row_index(E, t, None) for t, name in ((a, "a"), (b, "b"), (c, "c")))'):
        "the label only names the argument in a message",
    ("gpt2.py", "nn.init.normal_(module.weight, mean=0.0, std=std)",
     "nn.init.normal_(module.weight, std=std)"): DEFAULT_ARG,
    ("gpt2.py", "nn.init.normal_(self.wte.weight, mean=0.0, std=0.02)",
     "nn.init.normal_(self.wte.weight, std=0.02)"): DEFAULT_ARG,
    ("gpt2.py", "nn.init.normal_(self.wpe.weight, mean=0.0, std=0.01)",
     "nn.init.normal_(self.wpe.weight, std=0.01)"): DEFAULT_ARG,
}
KNOWN_EQUIVALENT[(
    "embeddings.py",
    'if ids.numel() == 0 or ids.device.type == "meta":',
    'if ids.numel() == 0 and ids.device.type == "meta":',
)] = ("then checks the ids' values on the meta device too, which a range check may do: the "
      "meta pass never penalises validation that reads values (issue 9), and on every real "
      "device the check is the same")
KNOWN_EQUIVALENT[(
    "embeddings.py",
    "if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= available:",
    "if isinstance(k, bool) and not isinstance(k, int) or not 1 <= k <= available:",
)] = ("a k that is not an int is still refused (by topk, with a TypeError); only k=True "
      "would now count as 1, and the exercise does not ask to refuse bools for k")
#: Lines whose every mutant is equivalent, with the reason.
EQUIVALENT_LINES: dict[tuple[str, str], str] = {
    ("params.py",
     "name = _TORCH_DTYPES.get(dtype, dtype) if isinstance(dtype, torch.dtype) else dtype"):
        "maps torch dtypes to names; an unknown dtype is refused with the same ValueError "
        "whichever name it maps to",
    ("embeddings.py", "order = torch.sort(exact, descending=True, stable=True).indices[:k]"):
        "torch's CPU sort keeps equal keys in input order for arrays this small even when not "
        "asked to; the tie tests catch an order that differs",
}
#: Mutations of string literals only change what an error message says; learners word their
#: messages their own way, and the suites check only what a message must name (an id, V).
MESSAGE_TEXT = "changes only the wording of a message, which is the learner's own"
_STRINGS = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)


def _message_lines(source: str) -> set[int]:
    """Lines that only build the message of a raised exception (its call's arguments)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            for arg in node.exc.args:
                lines.update(range(arg.lineno, (arg.end_lineno or arg.lineno) + 1))
    return lines


def mutants(name: str) -> list[tuple[str, int, str, str]]:
    """``(stage, line, original line, mutant source, message-only)`` per mutation in a region."""
    source = (LUMEN / name).read_text(encoding="utf-8")
    regions = find_regions(source, name)
    lines = {n: r.stage for r in regions for n in range(r.begin + 1, r.end)}
    messages = _message_lines(source)
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
        wording = isinstance(mutation.original_node, _STRINGS) or changed[0] in messages
        out.append((lines[changed[0]], changed[0], original_lines[changed[0] - 1].strip(), code,
                    wording))
    return out


def _equivalent(name: str, original: str, mutated: str, wording: bool) -> str | None:
    """Why this surviving mutant is equivalent, or None if it is a gap in the suites."""
    if wording:
        return MESSAGE_TEXT
    return KNOWN_EQUIVALENT.get((name, original, mutated)) or EQUIVALENT_LINES.get((name, original))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=0, help="at most this many mutants")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    killed, survivors, equivalent = 0, [], []
    with Grader(Options(device="auto")) as grader, tempfile.TemporaryDirectory() as tmp:
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
            elif (why := _equivalent(name, original, mutated_line, wording)) is not None:
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
