"""Hidden tests, stage 'neighbours': cosine similarity, nearest neighbours and the analogy.

Compared with lumen on fresh seeded tables. Two kinds of table keep the verdicts free of luck:

- random rows of very different lengths (so a dot product ranks differently from a cosine),
  redrawn until the scores that decide the answer are at least GAP apart, so that any correct
  way of computing a cosine gives the same ids;
- "exact" rows of +-1 times powers of two, whose cosines are multiples of 1/8 that every
  correct method computes without rounding, so that ties are real ties and a duplicated row
  scores exactly 1.

Scores are compared with a tolerance (float32 arithmetic in any order), ids exactly.
"""

from __future__ import annotations

import torch

from autograder.feedback import (
    Mistake,
    describe_error,
    expect_error,
    expect_tensor,
    unwrap,
    unwrap_meta,
)
from lumen import embeddings as ref

STAGE = "neighbours"
MODULE = "embeddings"
GAP = 1e-3  # the least distance between two scores whose order decides an answer
TOL = {"rtol": 1e-4, "atol": 1e-5}  # float32 cosines computed in another order


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


def _cosine(learner, seed: int, a: torch.Tensor, b: torch.Tensor, device: str = "cpu",
            hint: str = "") -> tuple[torch.Tensor, str]:
    """The learner's ``cosine_similarity(a, b)`` on ``device``; ``hint`` explains an error."""
    what = (f"cosine_similarity(a of shape {tuple(a.shape)}, b of shape {tuple(b.shape)}) "
            f"on {device}")
    outcome = learner.call("cosine_similarity", seed=seed, a=a, b=b, device=device)
    if hint and outcome.error is not None and not outcome.error.get("not_implemented"):
        raise Mistake(f"{what} raised {describe_error(outcome.error)}: {hint}")
    result = (unwrap_meta if device == "meta" else unwrap)(outcome, what, MODULE)
    return expect_tensor(result["out"], what, device=device), what


def _pair(result: dict, what: str, k: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, sims) from a probe result, checked to be two tensors of k entries."""
    if result["kind"] != "tuple":
        raise Mistake(f"{what} returned a {result['kind']}, expected a tuple (ids, sims)")
    sims = expect_tensor(result["sims"], f"the sims from {what}", device=device)
    ids = expect_tensor(result["ids"], f"the ids from {what}")
    if not isinstance(ids, torch.Tensor):
        raise Mistake(f"{what}: the ids came back on the meta device, without values")
    for name, t in (("ids", ids), ("sims", sims)):
        if tuple(t.shape) != (k,):
            raise Mistake(f"{what}: {name} has shape {tuple(t.shape)}, expected ({k},): one "
                          f"entry per neighbour, k = {k}")
    if ids.is_floating_point() or ids.dtype == torch.bool:
        raise Mistake(f"{what}: ids have dtype {ids.dtype}; ids are row indices, a LongTensor")
    return ids.long(), sims.double()


def _neighbours(learner, seed: int, E: torch.Tensor, token, k: int, device: str = "cpu"
                ) -> tuple[torch.Tensor, torch.Tensor, str]:
    if isinstance(token, torch.Tensor):
        query = "a query vector" if token.dim() == 1 else f"torch.tensor({int(token)})"
    else:
        query = f"token {token}"
    what = f"cosine_neighbours(E {E.shape[0]} x {E.shape[1]}, {query}, k={k}) on {device}"
    outcome = learner.call("cosine_neighbours", seed=seed, E=E, token=token, k=k, device=device)
    return (*_pair(unwrap(outcome, what, MODULE), what, k, device), what)


def _analogy(learner, seed: int, E: torch.Tensor, a: int, b: int, c: int, k: int,
             device: str = "cpu", **kwargs) -> tuple[torch.Tensor, torch.Tensor, str]:
    flag = "".join(f", {key}={value}" for key, value in kwargs.items())
    what = f"analogy(E {E.shape[0]} x {E.shape[1]}, a={a}, b={b}, c={c}, k={k}{flag}) on {device}"
    outcome = learner.call("analogy", seed=seed, E=E, a=a, b=b, c=c, k=k, device=device, **kwargs)
    return (*_pair(unwrap(outcome, what, MODULE), what, k, device), what)


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


def test_cosine_similarity_values(learner, seed, gen, devices):
    """cosine_similarity is a.b / (|a| |b|): lengths cancel, values in [-1, 1], on every device"""
    n, d = 6, 8
    a = _table(gen, n, d)
    b = _table(gen, n, d)
    b[0] = a[0] * 4.0  # the same direction, 4 times longer: cosine 1
    b[1] = -a[1] / 8.0  # the opposite direction: cosine -1
    expected = ref.cosine_similarity(a, b).double()
    for device in devices:
        out, what = _cosine(learner, seed, a, b, device)
        if tuple(out.shape) != (n,):
            raise Mistake(f"{what}: shape {tuple(out.shape)}, expected ({n},): one cosine per "
                          "pair of rows, the last dimension (d) summed away")
        out = out.double()
        if not torch.allclose(out, expected, **TOL):
            if torch.allclose(out, (a * b).sum(-1).double(), **TOL):
                raise Mistake(f"{what} returned the dot product {_show(out)}, not the cosine "
                              f"{_show(expected)}: the dot product grows with the lengths; divide "
                              "by both lengths, cos = a.b / (|a| |b|), so a row 4 times longer "
                              "in the same direction still scores 1")
            raise Mistake(f"{what}: got {_show(out)}, expected {_show(expected)} (rows 0 and 1 "
                          "point the same and opposite ways: cosines 1 and -1, whatever the "
                          "lengths)")


def test_cosine_similarity_broadcasts(learner, seed, gen, devices):
    """a and b broadcast like a * b: (V, d) with (d,) gives (V,), (B, 1, d) with (1, N, d) (B, N)"""
    V, B, N, d = 5, 3, 4, 6
    cases = [(_table(gen, V, d), _table(gen, 1, d)[0]),  # a table against one query
             (_table(gen, 1, d)[0], _table(gen, V, d)),  # the other way round
             (_table(gen, B, d).unsqueeze(1), _table(gen, N, d).unsqueeze(0)),  # all pairs
             (_table(gen, 1, d)[0], _table(gen, 1, d)[0])]  # two vectors: a 0-D result
    rule = ("a and b broadcast as in a * b, and only the last dimension (d) is summed away: "
            "reduce with dim=-1, never flatten, transpose or use a @ b")
    for a, b in cases:
        expected = ref.cosine_similarity(a, b).double()
        for device in devices:  # no meta pass: its norm costs ~0.7 s of lazy imports a grade
            hint = f"expected shape {tuple(expected.shape)}; {rule}" if device != "meta" else ""
            out, what = _cosine(learner, seed, a, b, device, hint)
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
    out, what = _cosine(learner, seed, a, b)
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
    ids, sims, what = _neighbours(learner, seed, E, token, V - 1)
    _compare(ids, sims, ref.cosine_neighbours(E, token, V - 1), E, E[token], [token],
             what + f", with row {z} all zeros")
    for query in (z, torch.zeros(d)):  # a zero row as the token, and a zero query vector
        ids, sims, what = _neighbours(learner, seed, E, query, 3)
        _no_nan(sims, what + " (the query is all zeros)")
        if not bool((sims == 0).all()):
            raise Mistake(f"{what}: sims {_show(sims)}, expected [0, 0, 0]: every row scores 0 "
                          "against a zero query")


# --- cosine_neighbours ----------------------------------------------------------------------


def test_neighbours_match_reference(learner, seed, gen, devices):
    """cosine_neighbours returns the k most similar rows, largest cosine first, with their sims"""
    V, d = 25, 8
    tokens = [int(t) for t in torch.randperm(V, generator=gen)[:2]]
    cases = [(tokens[0], 5), (tokens[1], 1), (torch.tensor(tokens[0]), 3)]

    def clear(E: torch.Tensor) -> bool:
        return all(_clear(ref.cosine_similarity(E, E[int(t)]), k, [int(t)]) for t, k in cases)

    E = _clear_table(gen, V, d, clear)
    for token, k in cases:
        for device in devices:
            ids, sims, what = _neighbours(learner, seed, E, token, k, device)
            _compare(ids, sims, ref.cosine_neighbours(E, token, k), E, E[int(token)],
                     [int(token)], what)


def test_query_excluded_by_index(learner, seed, gen):
    """the token's own row is left out by its index: a duplicate of it comes first, cosine 1"""
    V, k = 20, 3
    E = _exact_table(gen, V)
    first, second = sorted(int(i) for i in torch.randperm(V, generator=gen)[:2])
    for token, duplicate in ((second, first), (first, second)):  # the copy before, then after
        table = E.clone()
        table[duplicate] = table[token]
        ids, sims, what = _neighbours(learner, seed, table, token, k)
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


def test_ties_go_to_smaller_id(learner, seed, gen):
    """rows with exactly equal cosines come in ascending id order, at the cut-off too"""
    V = 40
    E = _exact_table(gen, V)
    token = int(torch.randint(0, V, (), generator=gen))
    sims = ref.cosine_similarity(E, E[token])
    sims[token] = -2.0  # excluded
    ordered = sims.sort(descending=True).values
    splits = [j for j in range(1, V - 1) if ordered[j - 1] == ordered[j]]  # k = j cuts a tie
    for k in (splits[0], min(splits[0] + 6, V - 1)):  # a tie at the cut-off, then inside
        ids, got, what = _neighbours(learner, seed, E, token, k)
        _compare(ids, got, ref.cosine_neighbours(E, token, k), E, E[token], [token], what)


def test_query_vector_excludes_nothing(learner, seed, gen):
    """a query vector (d,) is not a row index: nothing is excluded, an equal row comes first"""
    V, d, k = 20, 8, 3
    token = int(torch.randint(0, V, (), generator=gen))
    E = _clear_table(gen, V, d, lambda E: _clear(ref.cosine_similarity(E, E[token]), k))
    ids, sims, what = _neighbours(learner, seed, E, E[token].clone(), k)
    what += f" equal to row {token}"
    _no_nan(sims, what)
    if int(ids[0]) != token:
        raise Mistake(f"{what}: ids {ids.tolist()}; row {token} equals the query, so it has "
                      "cosine 1 and comes first. A query vector is not one of the rows, so "
                      "nothing is excluded: exclude only when given a row index")
    _compare(ids, sims, ref.cosine_neighbours(E, E[token].clone(), k), E, E[token], [], what)


def test_k_out_of_range_refused(learner, seed, gen):
    """k must be from 1 to the number of rows that may be returned: else a ValueError"""
    V, d = 9, 4
    E = torch.randn(V, d, generator=gen)
    for k, why in ((0, "k=0 asks for no neighbours"),
                   (V, f"only {V - 1} rows remain once the token's own row is excluded"),
                   (V + 3, f"the table has only {V} rows")):
        outcome = learner.call("cosine_neighbours", seed=seed, E=E, token=2, k=k)
        what = f"cosine_neighbours(E with {V} rows, token=2, k={k})"
        expect_error(outcome, what, ("ValueError",), f"{why} (a short list, or rows scored "
                     "-inf, would hide the mistake)", MODULE)


# --- analogy --------------------------------------------------------------------------------


def _query(E: torch.Tensor, a: int, b: int, c: int) -> torch.Tensor:
    return E[b] - E[a] + E[c]  # (d,): "a is to b as c is to ?"


def test_analogy_excludes_inputs(learner, seed, gen):
    """analogy leaves out a, b and c by default; with exclude_inputs=False they may be answers"""
    V, d, k = 20, 6, 3
    a, b, c = (int(i) for i in torch.randperm(V, generator=gen)[:3])

    def clear(E: torch.Tensor) -> bool:  # an input ranks in the top k when it may
        query = _query(E, a, b, c)
        sims = ref.cosine_similarity(E, query)
        return (bool({a, b, c} & set(_best(E, query, k))) and _clear(sims, k)
                and _clear(sims, k, [a, b, c]))

    E = _clear_table(gen, V, d, clear)
    query = _query(E, a, b, c)
    ids, sims, what = _analogy(learner, seed, E, a, b, c, k)
    inputs = sorted({a, b, c} & set(ids.tolist()))
    if inputs:
        raise Mistake(f"{what} returned input(s) {inputs} (ids {ids.tolist()}): by default the "
                      "three inputs are left out, the standard test; without that, the nearest "
                      "row to king - man + woman is very often king itself (Nissim et al., 2020)")
    _compare(ids, sims, ref.analogy(E, a, b, c, k), E, query, [a, b, c], what)
    ids, sims, what = _analogy(learner, seed, E, a, b, c, k, exclude_inputs=False)
    want = ref.analogy(E, a, b, c, k, exclude_inputs=False)
    kept = sorted({a, b, c} & set(want[0].tolist()))
    if not set(kept) <= set(ids.tolist()):
        raise Mistake(f"{what}: ids {ids.tolist()}, expected {want[0].tolist()}: with "
                      f"exclude_inputs=False the inputs are candidates like any other row, and "
                      f"input(s) {kept} are among the nearest")
    _compare(ids, sims, want, E, query, [], what)


def test_analogy_direction(learner, seed, gen, devices):
    """analogy(E, a, b, c) searches near E[b] - E[a] + E[c]: king - man + woman"""
    V, d, k = 20, 6, 2
    a, b, c = (int(i) for i in torch.randperm(V, generator=gen)[:3])
    inputs = [a, b, c]

    def answer(E: torch.Tensor, query: torch.Tensor) -> list[int]:
        return _best(E, query, k, inputs)

    def clear(E: torch.Tensor) -> bool:
        right, wrong = _query(E, a, b, c), _query(E, b, a, c)
        return (_clear(ref.cosine_similarity(E, right), k, inputs)
                and _clear(ref.cosine_similarity(E, wrong), k, inputs)
                and answer(E, right) != answer(E, wrong))

    E = _clear_table(gen, V, d, clear)
    for device in devices:
        ids, sims, what = _analogy(learner, seed, E, a, b, c, k, device)
        if ids.tolist() == answer(E, _query(E, b, a, c)):
            raise Mistake(f"{what}: ids {ids.tolist()} are the answer for E[a] - E[b] + E[c]; "
                          f"'a is to b as c is to ?' takes the offset from a to b and adds it to "
                          f"c: E[b] - E[a] + E[c] (king - man + woman for man : king :: woman : ?)")
        _compare(ids, sims, ref.analogy(E, a, b, c, k), E, _query(E, a, b, c), inputs, what)
