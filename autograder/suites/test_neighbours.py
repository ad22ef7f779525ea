"""Hidden tests, stage 'neighbours': cosine similarity, nearest neighbours and the analogy.

Compared with lumen on fresh seeded tables. Two kinds of table keep the verdicts free of luck:

- random rows of very different lengths (so a dot product ranks differently from a cosine),
  redrawn until the scores that decide the answer are at least GAP apart, so that any correct
  way of computing a cosine gives the same ids;
- "exact" rows of +-1 times powers of two, whose cosines are multiples of 1/8 that every
  correct method computes without rounding, so that ties are real ties and a duplicated row
  scores exactly 1.

Scores are compared with a tolerance (float32 arithmetic in any order), ids exactly. Each
function is called as its stub's signature allows, positionally and by name, and must leave
its arguments as they were.
"""

from __future__ import annotations

import torch

from autograder.suites import bans
from autograder.suites.feedback import (
    Mistake,
    NotImplementedYet,
    check_signature,
    checked_devices,
    describe_error,
    expect_error,
    expect_tensor,
    expect_unchanged,
    unwrap,
    unwrap_on,
)
from autograder.suites.promises.sweeps import (
    EDGE_VOCAB,
    INTEGER_DTYPES,
    top_id,
    wrap_hint,
    wraps,
)
from lumen import embeddings as ref

STAGE = "neighbours"
MODULE = "embeddings"
GAP = 1e-3  # the least distance between two scores whose order decides an answer
TOL = {"rtol": 1e-4, "atol": 1e-5}  # float32 cosines computed in another order
BFLOAT16_TOL = {"rtol": 0.0, "atol": 0.04}  # bfloat16 inputs: 8 bits of mantissa
COSINE = "cosine_similarity(a, b, eps=1e-8)"
NEIGHBOURS = "cosine_neighbours(E, token, k)"
ANALOGY = "analogy(E, a, b, c, k=1, exclude_inputs=True)"

#: Each hidden test -> the visible tests (exercises/tests/test_neighbours.py) that check the
#: same requirement on other inputs (tests/test_requirements.py holds every hidden test to one).
VISIBLE: dict[str, tuple[str, ...]] = {
    "test_cosine_similarity_values": ("test_cosine_similarity_matches_pytorch",
                                      "test_lengths_cancel", "test_eps_dtype_and_short_vectors",
                                      "test_results_follow_the_tables_device"),
    "test_cosine_similarity_broadcasts": ("test_cosine_similarity_broadcasts",),
    "test_zero_vectors_score_zero": ("test_a_zero_vector_scores_zero_not_nan",),
    "test_neighbours_match_reference": ("test_neighbours_rank_by_cosine_and_leave_out_the_token",
                                        "test_a_token_may_be_a_0d_integer_tensor",
                                        "test_a_token_at_the_edge_of_its_dtype",
                                        "test_sims_keep_the_tables_dtype",
                                        "test_results_follow_the_tables_device"),
    "test_k_out_of_range_refused": ("test_k_from_one_to_the_rows_that_may_be_returned",
                                    "test_analogy_with_an_input_given_twice"),
    "test_query_excluded_by_index": ("test_a_copy_of_the_token_still_counts",),
    "test_ties_go_to_smaller_id": ("test_ties_go_to_the_smaller_id",),
    "test_query_vector_excludes_nothing": ("test_a_query_vector_leaves_nothing_out",
                                           "test_a_table_of_one_row"),
    "test_analogy_excludes_inputs": ("test_analogy_needs_the_exclusion",
                                     "test_analogy_by_position_and_by_name"),
    "test_analogy_direction": ("test_analogy_needs_the_exclusion",
                               "test_results_follow_the_tables_device"),
    "test_inputs_are_left_unchanged": ("test_inputs_are_left_unchanged",),
}


def _table(gen: torch.Generator, V: int, d: int) -> torch.Tensor:
    """Random rows whose lengths range from 1/16 to 16: lengths that a cosine must cancel."""
    return torch.randn(V, d, generator=gen) * 2.0 ** torch.randint(-4, 5, (V, 1), generator=gen)


def _exact_table(gen: torch.Generator, V: int, d: int = 16) -> torch.Tensor:
    """Distinct rows of +-1 (d = 16) times powers of two: every cosine is a multiple of 1/8,
    computed exactly by any correct method, so equal scores are exact ties."""
    codes = torch.randperm(2**d, generator=gen)[:V]  # distinct sign patterns
    signs = ((codes.unsqueeze(1) >> torch.arange(d)) & 1) * 2.0 - 1.0  # (V, d)
    return signs * 2.0 ** torch.randint(-3, 4, (V, 1), generator=gen)


def _clear(sims: torch.Tensor, k: int, exclude: tuple[int, ...] | list[int] = ()) -> bool:
    """Whether the best k + 1 candidates' scores are all at least GAP apart."""
    keep = torch.ones_like(sims, dtype=torch.bool)
    keep[list(exclude)] = False
    top = sims[keep].sort(descending=True).values[: k + 1]
    return bool((top[:-1] - top[1:] > GAP).all())


def _clear_table(gen: torch.Generator, V: int, d: int, clear) -> torch.Tensor:
    """A ``_table`` for which ``clear(E)`` holds (redrawn from the same generator if not)."""
    for _ in range(100):
        E = _table(gen, V, d)
        if clear(E):
            return E
    raise RuntimeError("no table with well-separated scores in 100 draws")  # a grader bug


def _meta_pass(devices: list[str]) -> list[str]:
    """Where the device checks run beyond ``devices``: the meta device on a grader without a
    GPU (``checked_devices``), nowhere on one with a GPU (already in ``devices``)."""
    return [device for device in checked_devices(devices) if device not in devices]


def _cosine(learner, seed: int, a: torch.Tensor, b: torch.Tensor, device: str = "cpu",
            hint: str = "", eps: float | None = None, positional: int | None = 2
            ) -> tuple[torch.Tensor | None, str, dict]:
    """The learner's ``cosine_similarity(a, b[, eps])`` on ``device``, ``eps`` by name unless
    ``positional`` says otherwise (see probes._call): (output, description, probe result);
    ``hint`` explains an error. On the meta device the output has no values, and is None when
    the call fails on the CPU too (``feedback.unwrap_on``)."""
    shown = [f"a of shape {tuple(a.shape)} {a.dtype}", f"b of shape {tuple(b.shape)}"
             + ("" if b.dtype == a.dtype else f" {b.dtype}")]
    shown += [] if eps is None else [str(eps)]
    split = len(shown) if positional is None else positional
    arguments = shown[:split] + [f"{n}={v}" for n, v in
                                 zip(("a", "b", "eps")[split:], shown[split:], strict=False)]
    what = f"cosine_similarity({', '.join(arguments)}) on {device}"

    def call(device: str):
        return learner.call("cosine_similarity", seed=seed, a=a, b=b, device=device, eps=eps,
                            positional=positional)

    outcome = call(device)
    check_signature(outcome, what, COSINE)
    if hint and outcome.error is not None and not outcome.error.get("not_implemented") \
            and device != "meta":
        raise Mistake(f"{what} raised {describe_error(outcome.error)}: {hint}")
    result = unwrap_on(device, call, what, MODULE, outcome)
    if result is None:
        return None, what, {}
    return expect_tensor(result["out"], what, device=device), what, result


def _pair(result: dict, what: str, k: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, sims) from a probe result, checked to be two tensors of k entries."""
    if result["kind"] != "tuple":
        raise Mistake(f"{what} returned a {result['kind']}, expected a tuple (ids, sims)")
    sims = expect_tensor(result["sims"], f"the sims from {what}", device=device)
    ids = expect_tensor(result["ids"], f"the ids from {what}", device=device)
    if not isinstance(ids, torch.Tensor) and device != "meta":
        raise Mistake(f"{what}: the ids came back on the meta device, without values")
    for name, t in (("ids", ids), ("sims", sims)):
        if tuple(t.shape) != (k,):
            raise Mistake(f"{what}: {name} has shape {tuple(t.shape)}, expected ({k},): one "
                          f"entry per neighbour, k = {k}")
    if ids.dtype != torch.int64:
        raise Mistake(f"{what}: ids have dtype {ids.dtype}, expected torch.int64: ids are row "
                      "indices, a LongTensor, as torch.topk and torch.argsort return them (keep "
                      "that dtype: no .int(), no torch.tensor(list) of another dtype)")
    if device == "meta":
        return ids, sims  # no values: where they are, their shape and dtype say all
    return ids.long(), sims.double()


def _token_text(token: object) -> str:
    if not isinstance(token, torch.Tensor):
        return f"token {token}"
    if token.dim() == 1:
        return "a query vector" + ("" if token.dtype == torch.float32 else f" ({token.dtype})")
    return f"torch.tensor({int(token)}, dtype={token.dtype})"


#: Appended to what goes wrong with a 0-d tensor as the token.
ROW_INDEX = (" (a 0-d integer tensor is a row index, like the int it holds: take int(token); "
             "used as an index as it is, a uint8 tensor reads as a mask)")


def _searched(learner, seed: int, probe: str, arguments: dict, k: int, what: str, stub: str,
              device: str) -> tuple[torch.Tensor, torch.Tensor, dict] | None:
    """A call of the ``probe`` (cosine_neighbours or analogy): (ids, sims, probe result); on
    the meta device, None when the call fails on the CPU too (``feedback.unwrap_on``)."""
    def call(device: str):
        return learner.call(probe, seed=seed, device=device, **arguments)

    outcome = call(device)
    check_signature(outcome, what, stub)
    result = unwrap_on(device, call, what, MODULE, outcome)
    return None if result is None else (*_pair(result, what, k, device), result)


def _neighbours(learner, seed: int, E: torch.Tensor, token, k: int, device: str = "cpu",
                positional: int | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, str, dict] | None:
    """The learner's ``cosine_neighbours(E, token, k)``, by name with ``positional=0``:
    (ids, sims, description, probe result); None as ``_searched`` says."""
    shown = (f"E {E.shape[0]} x {E.shape[1]}", _token_text(token), str(k))
    if positional == 0:
        shown = tuple(f"{n}={v}" for n, v in zip(("E", "token", "k"), shown, strict=True))
    what = f"cosine_neighbours({', '.join(shown)}) on {device}"
    arguments = {"E": E, "token": token, "k": k, "positional": positional}
    try:
        found = _searched(learner, seed, "cosine_neighbours", arguments, k, what, NEIGHBOURS,
                          device)
    except NotImplementedYet:
        raise
    except Mistake as mistake:
        if isinstance(token, torch.Tensor) and token.dim() == 0:
            raise Mistake(f"{mistake}{ROW_INDEX}", mistake.kind) from None
        raise
    if found is None:
        return None
    ids, sims, result = found
    return ids, sims, what, result


def _analogy(learner, seed: int, E: torch.Tensor, a: int, b: int, c: int, k: int | None = None,
             device: str = "cpu", positional: int | None = 4, **flags
             ) -> tuple[torch.Tensor, torch.Tensor, str, dict] | None:
    """The learner's ``analogy(E, a, b, c[, k][, exclude_inputs])``, ``k`` and ``flags`` by name
    unless ``positional`` says otherwise (``k=None``: left to its default, 1): (ids, sims,
    description, probe result)."""
    names = ["E", "a", "b", "c"] + (["k"] if k is not None else []) + list(flags)
    shown = [f"E {E.shape[0]} x {E.shape[1]}", str(a), str(b), str(c)]
    shown += ([str(k)] if k is not None else []) + [str(v) for v in flags.values()]
    split = len(shown) if positional is None else positional
    arguments = shown[:split] + [f"{n}={v}" for n, v in zip(names[split:], shown[split:],
                                                             strict=True)]
    what = f"analogy({', '.join(arguments)}) on {device}"
    call = {"E": E, "a": a, "b": b, "c": c, "positional": positional, **flags}
    if k is not None:
        call["k"] = k
    found = _searched(learner, seed, "analogy", call, 1 if k is None else k, what, ANALOGY,
                      device)
    return None if found is None else (*found[:2], what, found[2])


def _no_nan(sims: torch.Tensor, what: str) -> None:
    if torch.isnan(sims).any():
        raise Mistake(f"{what}: the sims contain NaN. A zero vector (a zero row, or a zero "
                      "query) has length 0, and 0/0 is NaN: divide by the length clamped to "
                      "eps (norm.clamp_min(eps)), so that a zero vector scores 0")


def _best(E: torch.Tensor, query: torch.Tensor, k: int, exclude: list[int] | None = None
          ) -> list[int]:
    """The k rows nearest to ``query`` by lumen's cosine, ties to the smaller id (for choosing
    a test's inputs; the verdicts compare with lumen's own functions)."""
    sims = ref.cosine_similarity(E, query)
    sims[exclude or []] = -torch.inf
    return torch.sort(sims, descending=True, stable=True).indices[:k].tolist()


def _compare(ids: torch.Tensor, sims: torch.Tensor, expected: tuple, E: torch.Tensor,
             query: torch.Tensor, exclude: list[int], what: str) -> None:
    """The learner's (ids, sims) must be lumen's ``expected``: the diagnosis names the likely
    mistake. ``query`` and ``exclude`` are what lumen searched with."""
    want_ids, want_sims = expected
    _no_nan(sims, what)
    if ids.shape[0] > 1 and bool((sims[1:] - sims[:-1] > 1e-6).any()):  # beyond rounding
        raise Mistake(f"{what}: sims {_show(sims)} are not in descending order: the nearest "
                      "neighbours come first, largest cosine first (sort descending)")
    if bool(((ids < 0) | (ids >= E.shape[0])).any()):
        raise Mistake(f"{what}: ids {ids.tolist()} are not all rows of E (0 to {E.shape[0] - 1})")
    cosines = ref.cosine_similarity(E[ids], query).double()  # of the rows returned
    if not torch.allclose(sims, cosines, **TOL):
        dots = (E[ids] @ query).double()
        if torch.allclose(sims, dots, **TOL):
            raise Mistake(f"{what}: sims {_show(sims)} are dot products, not cosines "
                          f"{_show(cosines)}: a dot product grows with the rows' lengths (here "
                          "they differ up to 256-fold), so long rows win; divide by both lengths, "
                          "cos = a.b / (|a| |b|)")
        raise Mistake(f"{what}: sims {_show(sims)} are not the cosines of the rows returned "
                      f"(ids {ids.tolist()} have cosines {_show(cosines)})")
    if not torch.equal(ids, want_ids):
        p = int((ids != want_ids).nonzero()[0])
        mine, theirs = int(ids[p]), int(want_ids[p])
        tie = float(ref.cosine_similarity(E[mine], query)) == float(want_sims[p])
        if tie and mine not in exclude:
            raise Mistake(f"{what}: ids {ids.tolist()}, expected {want_ids.tolist()}: rows "
                          f"{theirs} and {mine} tie at cosine {float(want_sims[p]):.4g}, and ties "
                          f"go to the smaller id, so {min(mine, theirs)} comes first (a stable "
                          "descending sort does this; flipping an ascending sort reverses ties)")
        raise Mistake(f"{what}: ids {ids.tolist()} with sims {_show(sims)}, expected ids "
                      f"{want_ids.tolist()} with sims {_show(want_sims)}: the k rows with the "
                      "largest cosine, largest first")


def _show(t: torch.Tensor) -> str:
    return "[" + ", ".join(f"{float(x):.4g}" for x in t) + "]"


# --- cosine_similarity ----------------------------------------------------------------------


def _cosine_mistake(out: torch.Tensor, expected: torch.Tensor, a: torch.Tensor,
                    b: torch.Tensor, what: str) -> Mistake:
    """Why ``out`` is not the cosine ``expected``, in the chapter's words."""
    if out.shape != expected.shape:
        return Mistake(f"{what}: shape {tuple(out.shape)}, expected {tuple(expected.shape)}: "
                       "one cosine per pair of vectors, the last dimension (d) summed away")
    if torch.allclose(out.double(), (a * b).sum(-1).double(), **TOL):
        return Mistake(f"{what} returned the dot product {_show(out)}, not the cosine "
                       f"{_show(expected)}: the dot product grows with the lengths; divide by "
                       "both lengths, cos = a.b / (|a| |b|), so a row 4 times longer in the same "
                       "direction still scores 1")
    dot, lengths = (a * b).sum(-1).double(), (a.norm(dim=-1) * b.norm(dim=-1)).double()
    for wrong, how in ((dot / (lengths + 1e-8), "eps was added to the product of the lengths"),
                       (dot / lengths.clamp_min(1e-8), "eps bounded the product of the "
                        "lengths")):
        if torch.allclose(out.double(), wrong, rtol=1e-6, atol=1e-9):
            return Mistake(f"{what}: got {_show(out)}, expected {_show(expected)}: {how}, so a "
                           "short vector scores wrong. eps is the least length of each vector, "
                           "each length on its own: divide a by max(|a|, eps) and b by "
                           "max(|b|, eps) (norm.clamp_min(eps))")
    return Mistake(f"{what}: got {_show(out)}, expected {_show(expected)} (the cosine of each "
                   "pair: a.b / (|a| |b|), 1 for the same direction and -1 for the opposite "
                   "one, whatever the lengths)")


def test_cosine_similarity_values(learner, seed, gen, devices):
    """cosine_similarity is a.b / (|a| |b|): lengths cancel, values in [-1, 1], and eps counts

    On every device, for d = 8, 2 and 1, in the inputs' dtype (float64 and bfloat16 too; a
    float32 a with a float64 b gives float64, as a * b); a given eps (by position or by name)
    is the least length of each vector."""
    n, d = 6, 8
    a = _table(gen, n, d)
    b = _table(gen, n, d)
    b[0] = a[0] * 4.0  # the same direction, 4 times longer: cosine 1
    b[1] = -a[1] / 8.0  # the opposite direction: cosine -1
    a[2] = a[2] * 1e-4  # a short row, far above the default eps: it still counts in full
    meta = _meta_pass(devices)
    cases = [(a, b, devices + meta), (_table(gen, n, 2), _table(gen, n, 2), ["cpu"]),
             (_table(gen, n, 1), _table(gen, n, 1), ["cpu"]), (a.double(), b.double(), ["cpu"]),
             (a.bfloat16(), b.bfloat16(), ["cpu"]), (a, b.double(), ["cpu", *meta])]
    for x, y, where in cases:
        expected = ref.cosine_similarity(x.double(), y.double())
        dtype = torch.promote_types(x.dtype, y.dtype)
        for device in where:
            out, what, _ = _cosine(learner, seed, x, y, device)
            if out is None:
                continue  # fails on the CPU too: judged there
            if tuple(out.shape) != (n,):
                raise Mistake(f"{what}: shape {tuple(out.shape)}, expected ({n},): one cosine "
                              "per pair of rows, the last dimension (d) summed away")
            if out.dtype != dtype:
                raise Mistake(f"{what}: dtype {out.dtype}, expected {dtype}: the cosine comes "
                              "back in the inputs' dtype, as a * b gives it (no .float(), no "
                              "cast at the end), so float64 keeps its precision and bfloat16 "
                              "its size")
            tol = BFLOAT16_TOL if dtype == torch.bfloat16 else TOL
            if device != "meta" and not torch.allclose(out.double(), expected, **tol):
                raise _cosine_mistake(out, expected, x, y, what)
    _check_eps(learner, seed, gen)


def _check_eps(learner, seed: int, gen: torch.Generator) -> None:
    """A given eps is the least length of each vector on its own: a / max(|a|, eps) and
    b / max(|b|, eps), so short vectors score less than their cosine."""
    n, d, eps = 6, 4, 0.5
    lengths = torch.tensor([0.125, 0.25, 2.0, 0.0625, 1.0, 0.25])  # most below eps
    a = torch.nn.functional.normalize(torch.randn(n, d, generator=gen), dim=-1) * lengths[
        torch.randperm(n, generator=gen)].unsqueeze(1)
    b = torch.nn.functional.normalize(torch.randn(n, d, generator=gen), dim=-1) * lengths[
        torch.randperm(n, generator=gen)].unsqueeze(1)
    expected = ref.cosine_similarity(a, b, eps=eps)
    for positional in (None, 2):  # cosine_similarity(a, b, 0.5), then eps=0.5
        out, what, _ = _cosine(learner, seed, a, b, eps=eps, positional=positional)
        if tuple(out.shape) == (n,) and torch.allclose(out.double(), expected.double(), **TOL):
            continue
        ignored = torch.allclose(out.double(), ref.cosine_similarity(a, b).double(), **TOL)
        product = (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(eps)
        raise Mistake(
            f"{what}: got {_show(out.flatten())}, expected {_show(expected)}"
            + (": eps was not used" if ignored else
               ": eps bounded the product of the lengths" if torch.allclose(
                   out.double(), product.double(), **TOL) else "")
            + f". eps is the least length of each vector, each length on its own: divide a by "
            f"max(|a|, eps) and b by max(|b|, eps) (norm.clamp_min(eps)); these vectors are "
            f"mostly shorter than eps = {eps}"
        )


def test_cosine_similarity_broadcasts(learner, seed, gen, devices):
    """a and b broadcast like a * b: (V, d) with (d,) gives (V,), (B, 1, d) with (1, N, d) (B, N)"""
    V, B, N, d = 5, 3, 4, 6
    cases = [(_table(gen, V, d), _table(gen, 1, d)[0]),  # a table against one query
             (_table(gen, 1, d)[0], _table(gen, V, d)),  # the other way round
             (_table(gen, B, d).unsqueeze(1), _table(gen, N, d).unsqueeze(0)),  # all pairs
             (_table(gen, 1, d)[0], _table(gen, 1, d)[0]),  # two vectors: a 0-D result
             (_table(gen, 1, d), _table(gen, 1, d)[0]),  # a one-row table: (1,), not 0-D
             (_table(gen, B, d).unsqueeze(1), _table(gen, 1, d).unsqueeze(0)),  # (B, 1)
             (_table(gen, 0, d), _table(gen, 1, d)[0])]  # no rows at all: shape (0,)
    rule = ("a and b broadcast as in a * b, and only the last dimension (d) is summed away: "
            "reduce with dim=-1, never flatten, transpose or use a @ b")
    for a, b in cases:
        expected = ref.cosine_similarity(a, b).double()
        for device in devices + _meta_pass(devices):
            hint = f"expected shape {tuple(expected.shape)}; {rule}"
            out, what, _ = _cosine(learner, seed, a, b, device, hint)
            if out is None:
                continue  # fails on the CPU too: judged there
            if tuple(out.shape) != tuple(expected.shape):
                raise Mistake(f"{what}: shape {tuple(out.shape)}, expected "
                              f"{tuple(expected.shape)}: {rule}")
            if device != "meta" and not torch.allclose(out.double(), expected, **TOL):
                raise Mistake(f"{what}: values differ from the cosines of the broadcast pairs "
                              f"(got {_show(out.flatten())}, expected {_show(expected.flatten())})")


def test_zero_vectors_score_zero(learner, seed, gen):
    """a zero vector scores 0, never NaN, as a row or as a query, in cosine and in neighbours"""
    V, d = 10, 6
    a = _table(gen, 4, d)
    a[1] = 0.0
    b = _table(gen, 4, d)
    b[1] = b[2] = 0.0  # row 1: zero against zero; row 2: a vector against zero
    out, what, _ = _cosine(learner, seed, a, b)
    _no_nan(out, what)
    expected = ref.cosine_similarity(a, b).double()
    if tuple(out.shape) != (4,) or not torch.allclose(out.double(), expected, **TOL):
        raise Mistake(f"{what}: got {_show(out.flatten())}, expected {_show(expected)}: a zero "
                      "vector scores 0 against anything")
    z, token = (int(i) for i in torch.randperm(V, generator=gen)[:2])

    def clear(E: torch.Tensor) -> bool:
        E = E.clone()
        E[z] = 0.0
        return _clear(ref.cosine_similarity(E, E[token]), V - 1, [token])

    E = _clear_table(gen, V, d, clear)
    E[z] = 0.0
    ids, sims, what, _ = _neighbours(learner, seed, E, token, V - 1)
    _compare(ids, sims, ref.cosine_neighbours(E, token, V - 1), E, E[token], [token],
             what + f", with row {z} all zeros")
    for query in (z, torch.zeros(d)):  # a zero row as the token, and a zero query vector
        ids, sims, what, _ = _neighbours(learner, seed, E, query, 3)
        _no_nan(sims, what + " (the query is all zeros)")
        if not bool((sims == 0).all()):
            raise Mistake(f"{what}: sims {_show(sims)}, expected [0, 0, 0]: every row scores 0 "
                          "against a zero query")


# --- cosine_neighbours ----------------------------------------------------------------------


def _token_compare(ids, sims, E: torch.Tensor, token, k: int, what: str) -> None:
    """``_compare`` for a token (int or 0-d tensor): its own row is the query, and excluded."""
    index = int(token)
    try:
        _compare(ids, sims, ref.cosine_neighbours(E, index, k), E, E[index], [index], what)
    except Mistake as mistake:
        if isinstance(token, torch.Tensor):
            raise Mistake(f"{mistake}{ROW_INDEX}", mistake.kind) from None
        raise


def test_neighbours_match_reference(learner, seed, gen, devices):
    """cosine_neighbours returns the k most similar rows, largest cosine first, with their sims

    For k = 1 to every row but the token's; the token an int or a 0-d tensor of any integer
    dtype, up to the largest value it holds on a table larger than that (a uint8 255 of a
    300-row table); the sims in the table's dtype, float32 and float64 (the analogy's too, and
    a float64 query vector's against a float32 table); called by position and by name."""
    V, d = 25, 8
    t = [int(i) for i in torch.randperm(V, generator=gen)[:3]]
    cases = [(t[0], 5, None), (t[1], 1, None), (t[2], V - 1, None), (t[0], 4, 0)]
    cases += [(torch.tensor(t[1], dtype=dtype), 3, None) for dtype in INTEGER_DTYPES]

    def clear(E: torch.Tensor) -> bool:
        return all(_clear(ref.cosine_similarity(E, E[int(token)]), k, [int(token)])
                   for token, k, _ in cases)

    E = _clear_table(gen, V, d, clear)
    for token, k, positional in cases:
        for device in devices:
            ids, sims, what, _ = _neighbours(learner, seed, E, token, k, device, positional)
            _token_compare(ids, sims, E, token, k, what)
    # The meta pass: an int, a 0-d int64 tensor and a query vector; both results on E's device.
    for token in (t[0], torch.tensor(t[1]), E[t[2]] * 2.0):
        for device in _meta_pass(devices):
            _neighbours(learner, seed, E, token, 3, device)
    _tokens_at_their_edges(learner, seed, gen)
    _sims_keep_the_tables_dtype(learner, seed, E, t[0])


#: What to do with a 0-d tensor token whose dtype cannot hold V.
AS_INT = "take int(token) and compare that with E.shape[0]"


def _tokens_at_their_edges(learner, seed: int, gen: torch.Generator) -> None:
    """A token as a 0-d tensor at the largest value of a narrow dtype, on a table larger than
    that dtype's range (``sweeps.EDGE_VOCAB``): a valid row index, which a check made in the
    tensor's own dtype refuses (in uint8, 255 >= 300 is True)."""
    k, d = 3, 32
    for dtype, V in EDGE_VOCAB.items():
        if not wraps(dtype, V):
            continue
        top = top_id(dtype, V)
        E = _clear_table(gen, V, d, lambda E, top=top: _clear(ref.cosine_similarity(E, E[top]),
                                                               k, [top]))
        token = torch.tensor(top, dtype=dtype)
        hint = wrap_hint(dtype, V, "V", AS_INT)
        try:
            ids, sims, what, _ = _neighbours(learner, seed, E, token, k)
            _token_compare(ids, sims, E, token, k, what)
        except NotImplementedYet:
            raise
        except Mistake as mistake:
            raise Mistake(f"{mistake}{hint}") from None


def _sims_keep_the_tables_dtype(learner, seed: int, E: torch.Tensor, token: int) -> None:
    """The sims are in the table's dtype, as cosine_similarity's: float32 stays float32 and
    float64 stays float64 (no .float(), no .double()), and a query vector of another dtype is
    taken in the table's (a float64 query against a float32 table gives float32 sims)."""
    a, b, c = ((token + i) % E.shape[0] for i in (1, 2, 3))
    for table in (E.float(), E.double()):
        calls = [("cosine_neighbours", _neighbours(learner, seed, table, token, 3)),
                 ("analogy", _analogy(learner, seed, table, a, b, c, 3))]
        if table.dtype == torch.float32:
            calls.append(("a query vector's", _neighbours(
                learner, seed, table, table[token].double(), 3)))
        for name, (_, _, what, result) in calls:
            got = result["sims"].dtype
            if got != table.dtype:
                raise Mistake(f"{what} on a {table.dtype} table: sims have dtype {got}, "
                              f"expected {table.dtype}: {name} sims are in the table's dtype, "
                              "as cosine_similarity's (no .float(), no .double(), a query "
                              "vector taken in E's dtype with query.to(E.dtype))")


def _k_refused(learner, seed: int, probe: str, arguments: dict, what: str, allowed: int,
               rows: str) -> None:
    """A k outside 1..allowed must raise ValueError."""
    outcome = learner.call(probe, seed=seed, **arguments)
    expect_error(outcome, what, ("ValueError",), f"k goes from 1 to the number of rows that may "
                 f"be returned, here {allowed} ({rows}); a shorter list, or rows scored -inf, "
                 "would hide the mistake", MODULE)


def _k_accepted(ids: torch.Tensor, sims: torch.Tensor, E: torch.Tensor, query: torch.Tensor,
                allowed: list[int], what: str) -> None:
    """k = every row that may be returned: exactly those rows, each with its cosine."""
    if sorted(ids.tolist()) != sorted(allowed):
        raise Mistake(f"{what}: ids {ids.tolist()}; k is every row that may be returned, so "
                      f"each of {sorted(allowed)} comes back once")
    _no_nan(sims, what)
    if not torch.allclose(sims, ref.cosine_similarity(E[ids], query).double(), **TOL):
        raise Mistake(f"{what}: sims {_show(sims)} are not the cosines of the rows returned")


def test_k_out_of_range_refused(learner, seed, gen):
    """k goes from 1 to the number of rows that may be returned, through every path; else ValueError

    The paths: a token, a query vector, the analogy with and without its inputs, and with an
    input given twice (analogy(E, a, a, c): two distinct inputs). Both ends of the range work
    (k = all those rows returns them all)."""
    V, d = 9, 4
    E = torch.randn(V, d, generator=gen)
    token, a, b, c = (int(i) for i in torch.randperm(V, generator=gen)[:4])
    query = torch.randn(d, generator=gen)
    inputs = sorted({a, b, c})
    paths = [  # (probe, arguments, description, query, rows that may be returned, which)
        ("cosine_neighbours", {"E": E, "token": token}, f"cosine_neighbours(E {V} x {d}, token "
         f"{token}, k={{k}})", E[token], [i for i in range(V) if i != token],
         "every row but the token's own"),
        ("cosine_neighbours", {"E": E, "token": query}, f"cosine_neighbours(E {V} x {d}, a "
         "query vector, k={k})", query, list(range(V)), "every row: nothing is excluded"),
        ("analogy", {"E": E, "a": a, "b": b, "c": c}, f"analogy(E {V} x {d}, {a}, {b}, {c}, "
         "k={k})", E[b] - E[a] + E[c], [i for i in range(V) if i not in inputs],
         "every row but the three inputs"),
        ("analogy", {"E": E, "a": a, "b": a, "c": c}, f"analogy(E {V} x {d}, {a}, {a}, {c}, "
         "k={k})", E[c], [i for i in range(V) if i not in (a, c)],
         f"every row but the two distinct inputs: {a} is given twice, and left out once"),
        ("analogy", {"E": E, "a": a, "b": b, "c": c, "exclude_inputs": False},
         f"analogy(E {V} x {d}, {a}, {b}, {c}, k={{k}}, exclude_inputs=False)", E[b] - E[a] + E[c],
         list(range(V)), "every row: with exclude_inputs=False nothing is excluded"),
    ]
    for probe, arguments, template, q, allowed, rows in paths:
        n = len(allowed)
        what = template.format(k=n)
        outcome = learner.call(probe, seed=seed, k=n, **arguments)
        if outcome.error is not None and not outcome.error.get("not_implemented"):
            raise Mistake(f"{what} raised {describe_error(outcome.error)}: k may be anything "
                          f"from 1 to the number of rows that may be returned, here {n} "
                          f"({rows}), and k = {n} returns them all")
        ids, sims = _pair(unwrap(outcome, what, MODULE), what, n, "cpu")
        _k_accepted(ids, sims, E, q, allowed, what)
        for k in (0, n + 1, n + 3):
            _k_refused(learner, seed, probe, {**arguments, "k": k}, template.format(k=k), n,
                       rows)


def test_query_excluded_by_index(learner, seed, gen):
    """the token's own row is left out by its index: a duplicate of it comes first, cosine 1"""
    V, k = 20, 3
    E = _exact_table(gen, V)
    first, second = sorted(int(i) for i in torch.randperm(V, generator=gen)[:2])
    for token, duplicate in ((second, first), (first, second)):  # the copy before, then after
        table = E.clone()
        table[duplicate] = table[token]
        ids, sims, what, _ = _neighbours(learner, seed, table, token, k)
        what += f", where row {duplicate} is an exact copy of row {token}"
        _no_nan(sims, what)
        if token in ids.tolist():
            raise Mistake(f"{what}: token {token} appears among its own neighbours (ids "
                          f"{ids.tolist()}). Exclude the query by its index (its score set to "
                          "-inf), not by dropping the first result (topk(k + 1)[1:]): the "
                          "duplicate ties with the query, and may be the one dropped")
        if int(ids[0]) != duplicate or abs(float(sims[0]) - 1.0) > 1e-5:
            raise Mistake(f"{what}: ids {ids.tolist()} with sims {_show(sims)}; the copy, row "
                          f"{duplicate}, has cosine 1 and must come first. Only the token's own "
                          "index is excluded, not every row equal to it, and not whatever "
                          "ranks first")


def _tie_cuts(sims: torch.Tensor, exclude: list[int]) -> list[int]:
    """Values of k that cut a tie (the k-th and (k+1)-th best scores are equal), then one a
    few places further on: ties at the cut-off and inside the list."""
    sims = sims.clone()
    sims[exclude] = -2.0  # below every cosine
    ordered = sims.sort(descending=True).values[: sims.shape[0] - len(exclude)]
    splits = [j for j in range(1, ordered.shape[0]) if ordered[j - 1] == ordered[j]]
    return [splits[0], min(splits[0] + 6, ordered.shape[0])]


def test_ties_go_to_smaller_id(learner, seed, gen):
    """rows with exactly equal cosines come in ascending id order, at the cut-off too

    Through every path: a token, a query vector (k = 1 too) and the analogy."""
    V = 40
    E = _exact_table(gen, V)
    token, other = (int(i) for i in torch.randperm(V, generator=gen)[:2])
    for k in _tie_cuts(ref.cosine_similarity(E, E[token]), [token]):
        ids, got, what, _ = _neighbours(learner, seed, E, token, k)
        _compare(ids, got, ref.cosine_neighbours(E, token, k), E, E[token], [token], what)
    # a query vector equal to two rows (token's, and its copy at other): they tie at cosine 1
    table = E.clone()
    table[other] = table[token]
    query = table[token].clone()
    for k in sorted({1, *_tie_cuts(ref.cosine_similarity(table, query), [])}):
        ids, got, what, _ = _neighbours(learner, seed, table, query, k)
        what += f", where rows {min(token, other)} and {max(token, other)} both equal the query"
        _compare(ids, got, ref.cosine_neighbours(table, query, k), table, query, [], what)
    # the analogy: row c is a copy of row a, so E[b] - E[a] + E[c] is exactly row b, whose
    # cosines with the other rows are exact multiples of 1/8 (and b, first when inputs may be
    # answers, shows an analogy that keeps its inputs whatever the draw)
    a, b, c = (int(i) for i in torch.randperm(V, generator=gen)[:3])
    table = E.clone()
    table[c] = table[a]
    for k in _tie_cuts(ref.cosine_similarity(table, table[b]), [a, b, c]):
        ids, got, what, _ = _analogy(learner, seed, table, a, b, c, k)
        what += f", where row {c} is a copy of row {a}"
        _compare(ids, got, ref.analogy(table, a, b, c, k), table, table[b], [a, b, c], what)


def test_query_vector_excludes_nothing(learner, seed, gen):
    """a query vector (d,) is not a row index: nothing is excluded, an equal row comes first

    Also on a table of one row, for a query vector and the analogy with its inputs allowed."""
    V, d, k = 20, 8, 3
    token = int(torch.randint(0, V, (), generator=gen))
    E = _clear_table(gen, V, d, lambda E: _clear(ref.cosine_similarity(E, E[token]), k))
    ids, sims, what, _ = _neighbours(learner, seed, E, E[token].clone(), k)
    what += f" equal to row {token}"
    _no_nan(sims, what)
    if int(ids[0]) != token:
        raise Mistake(f"{what}: ids {ids.tolist()}; row {token} equals the query, so it has "
                      "cosine 1 and comes first. A query vector is not one of the rows, so "
                      "nothing is excluded: exclude only when given a row index")
    _compare(ids, sims, ref.cosine_neighbours(E, E[token].clone(), k), E, E[token], [], what)
    _one_row(learner, seed, gen)


def _one_row(learner, seed: int, gen: torch.Generator) -> None:
    """A table of one row: a query vector's neighbour, and the analogy with its inputs
    allowed, is row 0, as ids of shape (1,) (no squeeze to a 0-d tensor)."""
    E = _table(gen, 1, 8)
    for name, (ids, _, what, _) in (
            ("cosine_neighbours", _neighbours(learner, seed, E, _table(gen, 1, 8)[0], 1)),
            ("analogy", _analogy(learner, seed, E, 0, 0, 0, 1, exclude_inputs=False))):
        if ids.tolist() != [0]:
            raise Mistake(f"{what} on a table of one row: ids {ids.tolist()}, expected [0]: "
                          f"the one row there is, as a LongTensor of shape (1,) ({name})")


# --- analogy --------------------------------------------------------------------------------


def _query(E: torch.Tensor, a: int, b: int, c: int) -> torch.Tensor:
    return E[b] - E[a] + E[c]  # (d,): "a is to b as c is to ?"


def test_analogy_excludes_inputs(learner, seed, gen):
    """analogy leaves out a, b and c by default; with exclude_inputs=False they may be answers

    k is 1 by default; called by position and by name."""
    V, d, k = 20, 6, 3
    a, b, c = (int(i) for i in torch.randperm(V, generator=gen)[:3])

    def clear(E: torch.Tensor) -> bool:  # an input ranks in the top k when it may
        query = _query(E, a, b, c)
        sims = ref.cosine_similarity(E, query)
        return (bool({a, b, c} & set(_best(E, query, k))) and _clear(sims, k)
                and _clear(sims, k, [a, b, c]))

    E = _clear_table(gen, V, d, clear)
    query = _query(E, a, b, c)
    ids, sims, what, _ = _analogy(learner, seed, E, a, b, c, k)
    inputs = sorted({a, b, c} & set(ids.tolist()))
    if inputs:
        raise Mistake(f"{what} returned input(s) {inputs} (ids {ids.tolist()}): by default the "
                      "three inputs are left out, the standard test; without that, the nearest "
                      "row to king - man + woman is very often king itself (Nissim et al., 2020)")
    _compare(ids, sims, ref.analogy(E, a, b, c, k), E, query, [a, b, c], what)
    ids, sims, what, _ = _analogy(learner, seed, E, a, b, c)  # k left to its default
    _compare(ids, sims, ref.analogy(E, a, b, c), E, query, [a, b, c],
             what + " (k is 1 unless given)")
    want = ref.analogy(E, a, b, c, k, exclude_inputs=False)
    kept = sorted({a, b, c} & set(want[0].tolist()))
    ids, sims, what, _ = _analogy(learner, seed, E, a, b, c, k, positional=0,
                                  exclude_inputs=False)
    if not set(kept) <= set(ids.tolist()):
        raise Mistake(f"{what}: ids {ids.tolist()}, expected {want[0].tolist()}: with "
                      f"exclude_inputs=False the inputs are candidates like any other row, and "
                      f"input(s) {kept} are among the nearest")
    _compare(ids, sims, want, E, query, [], what)
    _analogy_positionally(learner, seed, E, a, b, c, k, want, query)


def _analogy_positionally(learner, seed: int, E: torch.Tensor, a: int, b: int, c: int, k: int,
                          want: tuple, query: torch.Tensor) -> None:
    """``analogy(E, a, b, c, k, False)`` must answer as it does by name."""
    try:
        ids, sims, what, _ = _analogy(learner, seed, E, a, b, c, k, positional=None,
                                      exclude_inputs=False)
        _compare(ids, sims, want, E, query, [], what)
    except NotImplementedYet:
        raise
    except Mistake as mistake:
        raise Mistake(f"{mistake}. By name the same call gave the right answer, so the "
                      f"parameters are not in the stub's order, {ANALOGY}: called positionally, "
                      "k comes fifth and exclude_inputs sixth") from None


def test_analogy_direction(learner, seed, gen, devices):
    """analogy(E, a, b, c) searches near E[b] - E[a] + E[c]: king - man + woman"""
    V, d, k = 20, 6, 2
    a, b, c = (int(i) for i in torch.randperm(V, generator=gen)[:3])
    inputs = [a, b, c]

    def answer(E: torch.Tensor, query: torch.Tensor) -> list[int]:
        return _best(E, query, k, inputs)

    def clear(E: torch.Tensor) -> bool:  # and an input ranks in the top k when it may
        right, wrong = _query(E, a, b, c), _query(E, b, a, c)
        return (_clear(ref.cosine_similarity(E, right), k, inputs)
                and _clear(ref.cosine_similarity(E, wrong), k, inputs)
                and answer(E, right) != answer(E, wrong)
                and bool(set(inputs) & set(_best(E, right, k))))

    E = _clear_table(gen, V, d, clear)
    for device in devices:
        ids, sims, what, _ = _analogy(learner, seed, E, a, b, c, k, device)
        if ids.tolist() == answer(E, _query(E, b, a, c)):
            raise Mistake(f"{what}: ids {ids.tolist()} are the answer for E[a] - E[b] + E[c]; "
                          f"'a is to b as c is to ?' takes the offset from a to b and adds it to "
                          f"c: E[b] - E[a] + E[c] (king - man + woman for man : king :: woman : ?)")
        _compare(ids, sims, ref.analogy(E, a, b, c, k), E, _query(E, a, b, c), inputs, what)
    for device in _meta_pass(devices):  # both results on E's device, shape (k,), int64 ids
        _analogy(learner, seed, E, a, b, c, k, device)


# --- every function leaves its arguments alone ----------------------------------------------


def test_inputs_are_left_unchanged(learner, seed, gen, grading):
    """cosine_similarity, cosine_neighbours and analogy leave their arguments as they were

    Values and shape, and no in-place operation on them: the caller goes on using the table.
    What the arguments hold afterwards is reported by the learner's process, so its points
    depend on the rules (``bans.certify``)."""
    V, d, k = 12, 5, 3
    a, b = _table(gen, 4, d), _table(gen, 4, d)
    out, what, result = _cosine(learner, seed, a, b)
    expected = ref.cosine_similarity(a, b)
    if out.shape != expected.shape or not torch.allclose(out.double(), expected.double(), **TOL):
        raise _cosine_mistake(out, expected, a, b, what)
    expect_unchanged(result, {"a": a, "b": b}, what)
    token, x, y, z = (int(i) for i in torch.randperm(V, generator=gen)[:4])
    vector = torch.randn(d, generator=gen)

    def clear(E: torch.Tensor) -> bool:  # and an input ranks in the top k when it may
        query = _query(E, x, y, z)
        return (_clear(ref.cosine_similarity(E, E[token]), k, [token])
                and _clear(ref.cosine_similarity(E, vector), k)
                and _clear(ref.cosine_similarity(E, query), k, [x, y, z])
                and bool({x, y, z} & set(_best(E, query, k))))

    E = _clear_table(gen, V, d, clear)
    ids, sims, what, result = _neighbours(learner, seed, E, token, k)
    _compare(ids, sims, ref.cosine_neighbours(E, token, k), E, E[token], [token], what)
    expect_unchanged(result, {"E": E}, what)
    ids, sims, what, result = _neighbours(learner, seed, E, vector, k)
    _compare(ids, sims, ref.cosine_neighbours(E, vector, k), E, vector, [], what)
    expect_unchanged(result, {"E": E, "token": vector}, what)
    ids, sims, what, result = _analogy(learner, seed, E, x, y, z, k)
    _compare(ids, sims, ref.analogy(E, x, y, z, k), E, _query(E, x, y, z), [x, y, z], what)
    expect_unchanged(result, {"E": E}, what)
    bans.certify(grading.files, "the arguments left as they were")
