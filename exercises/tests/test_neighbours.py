"""Stage 'neighbours': cosine similarity, nearest neighbours, the analogy.

Chapter: "Measuring similarity: cosine" and "Vector arithmetic and the famous analogy". The
reference is PyTorch's ``F.cosine_similarity``, ranked by hand.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's usual name)

pytestmark = pytest.mark.neighbours

INTEGER_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


def ranked(E: torch.Tensor, query: torch.Tensor, exclude: list[int], k: int) -> list[int]:
    """The ``k`` rows of ``E`` nearest to ``query`` by cosine, ``exclude`` left out."""
    sims = F.cosine_similarity(E, query.unsqueeze(0), dim=-1)
    sims[exclude] = -2.0  # below any cosine
    return sims.argsort(descending=True, stable=True)[:k].tolist()


def test_cosine_similarity_matches_pytorch(embeddings):
    a, b = torch.randn(6, 16), torch.randn(6, 16)
    out = embeddings.cosine_similarity(a, b)
    expected = F.cosine_similarity(a, b, dim=-1)  # (6,)
    assert out.shape == expected.shape, (
        f"expected one cosine per pair, shape {tuple(expected.shape)}, got {tuple(out.shape)}"
    )
    torch.testing.assert_close(out, expected, msg="cosine = a.b / (|a| |b|), over the last dim")
    E, q = torch.randn(10, 16), torch.randn(16)
    out = embeddings.cosine_similarity(E, q)
    assert tuple(out.shape) == (10,), (
        f"(V, d) against (d,) should broadcast to one score per row, (10,); got {tuple(out.shape)}"
    )
    torch.testing.assert_close(out, F.cosine_similarity(E, q.unsqueeze(0), dim=-1))


def test_lengths_cancel(embeddings):
    a, b = torch.randn(8), torch.randn(8)
    cos = embeddings.cosine_similarity
    torch.testing.assert_close(
        cos(3.0 * a, b),
        cos(a, b),
        msg="a token 3 times as loud that points the same way scores the same",
    )
    torch.testing.assert_close(cos(a, 2.5 * a), torch.tensor(1.0), msg="same direction: 1")
    torch.testing.assert_close(cos(a, -a), torch.tensor(-1.0), msg="opposite directions: -1")
    perpendicular = cos(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 3.0]))
    torch.testing.assert_close(perpendicular, torch.tensor(0.0), msg="perpendicular: 0")


def exact_table(V: int, d: int = 16) -> torch.Tensor:
    """Distinct rows of +-1 (d = 16) times powers of two: every cosine is a multiple of 1/8
    computed without rounding, so equal cosines are exact ties."""
    codes = torch.randperm(2**d)[:V]
    signs = ((codes.unsqueeze(1) >> torch.arange(d)) & 1) * 2.0 - 1.0
    return signs * 2.0 ** torch.randint(-2, 3, (V, 1))


@pytest.mark.parametrize("d", [1, 2], ids=["d=1", "d=2"])
def test_eps_dtype_and_short_vectors(embeddings, d):
    a, b = torch.randn(5, d), torch.randn(5, d)
    torch.testing.assert_close(embeddings.cosine_similarity(a, b),
                               F.cosine_similarity(a, b, dim=-1),
                               msg=f"cosines of vectors with d = {d} numbers each")
    for x, y, dtype in ((a.double(), b.double(), torch.float64),
                        (a.bfloat16(), b.bfloat16(), torch.bfloat16),
                        (a, b.double(), torch.float64)):
        out = embeddings.cosine_similarity(x, y)
        assert out.dtype == dtype, (
            f"a {x.dtype} and b {y.dtype} should give {dtype} cosines, got {out.dtype}: the "
            "inputs' dtype, as a * b gives it (no .float(), no cast at the end)")
        torch.testing.assert_close(out.double(), F.cosine_similarity(x.double(), y.double(),
                                                                       dim=-1),
                                   atol=0.04 if dtype == torch.bfloat16 else 1e-6, rtol=0,
                                   msg=f"cosines of a {x.dtype} and b {y.dtype}")
    short = torch.nn.functional.normalize(torch.randn(4, 3), dim=-1) * torch.tensor(
        [[0.1], [0.3], [2.0], [0.2]])  # lengths mostly below eps = 0.5
    other = torch.nn.functional.normalize(torch.randn(4, 3), dim=-1) * torch.tensor(
        [[0.25], [3.0], [0.4], [1.0]])
    expected = F.cosine_similarity(short, other, dim=-1, eps=0.5)
    for out in (embeddings.cosine_similarity(short, other, 0.5),
                embeddings.cosine_similarity(a=short, b=other, eps=0.5)):
        torch.testing.assert_close(
            out, expected,
            msg="with eps = 0.5, each vector is divided by max(its length, eps), each length on "
                "its own (not their product): short vectors score less than their cosine. "
                "Given by position or by name")


def test_cosine_similarity_broadcasts(embeddings):
    a, b = torch.randn(3, 1, 6), torch.randn(1, 4, 6)  # every pair of 3 rows and 4 rows
    out = embeddings.cosine_similarity(a, b)
    assert tuple(out.shape) == (3, 4), (
        f"(3, 1, d) against (1, 4, d) should broadcast to (3, 4), got {tuple(out.shape)}: "
        "a and b broadcast as in a * b, and only the last dimension is summed away (dim=-1)"
    )
    torch.testing.assert_close(out, F.cosine_similarity(a, b, dim=-1))
    one = embeddings.cosine_similarity(torch.randn(6), torch.randn(6))
    assert one.dim() == 0, f"two vectors (d,) give one number, shape (); got {tuple(one.shape)}"
    row = embeddings.cosine_similarity(torch.randn(1, 6), torch.randn(6))
    assert tuple(row.shape) == (1,), (
        f"a one-row table (1, d) against a vector (d,) gives shape (1,), got {tuple(row.shape)}: "
        "keep every dimension but the last (no squeeze())"
    )
    none = embeddings.cosine_similarity(torch.randn(0, 6), torch.randn(6))
    assert tuple(none.shape) == (0,), (
        f"a table of no rows (0, d) against a vector gives shape (0,), got {tuple(none.shape)}")


def test_a_zero_vector_scores_zero_not_nan(embeddings):
    out = embeddings.cosine_similarity(torch.zeros(4), torch.randn(4))
    assert not torch.isnan(out), (
        "expected 0 for a zero vector, got nan: 0 / 0. Clamp the lengths from below by eps"
    )
    assert out.item() == 0.0, f"expected 0 for a zero vector, got {out.item()}"
    E = torch.randn(8, 4)
    E[5] = 0.0
    for query in (5, torch.zeros(4)):  # a zero row as the token, a zero query vector
        _, sims = embeddings.cosine_neighbours(E, query, 3)
        assert not torch.isnan(sims).any() and bool((sims == 0).all()), (
            f"every row scores 0 against a zero query, never nan; got {sims.tolist()}"
        )


@pytest.mark.parametrize("k", [1, 5, 29], ids=["k=1", "k=5", "k=29 (every other row)"])
def test_neighbours_rank_by_cosine_and_leave_out_the_token(embeddings, k):
    E = torch.randn(30, 8)
    ids, sims = embeddings.cosine_neighbours(E, 7, k)
    by_name = embeddings.cosine_neighbours(E=E, token=7, k=k)  # the stub's parameter names
    assert torch.equal(by_name[0], ids), "called by name, cosine_neighbours should answer alike"
    expected = ranked(E, E[7], exclude=[7], k=k)
    assert ids.dtype == torch.long and tuple(ids.shape) == (k,), (
        f"expected ids as a LongTensor of shape ({k},), got {ids.dtype} {tuple(ids.shape)}"
    )
    assert 7 not in ids.tolist(), "token 7 is its own nearest row: leave it out of its neighbours"
    assert ids.tolist() == expected, (
        f"expected the {k} nearest rows, most similar first: {expected}; got {ids.tolist()}"
    )
    torch.testing.assert_close(sims, F.cosine_similarity(E[expected], E[7].unsqueeze(0), dim=-1))


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=str)
def test_a_token_may_be_a_0d_integer_tensor(embeddings, dtype):
    E = torch.randn(20, 6)
    ids, _ = embeddings.cosine_neighbours(E, torch.tensor(3, dtype=dtype), 4)
    assert ids.tolist() == ranked(E, E[3], exclude=[3], k=4), (
        f"torch.tensor(3, dtype={dtype}) is row index 3, like the int: take int(token) (used "
        "as an index as it is, a uint8 tensor reads as a mask)"
    )


@pytest.mark.parametrize(("dtype", "V"), [(torch.uint8, 300), (torch.int8, 200)], ids=str)
def test_a_token_at_the_edge_of_its_dtype(embeddings, id_dtypes, dtype, V):
    """A 0-d tensor holding the largest value of its dtype is a row index of a larger table."""
    E = torch.randn(V, 16, generator=torch.Generator().manual_seed(5))
    top = torch.iinfo(dtype).max
    fix = (f"torch.tensor({top}, dtype={dtype}) is row {top} of a {V}-row table; "
           + id_dtypes.wraps(dtype, V, "V") + ". Take int(token) and compare that")
    try:
        ids, _ = embeddings.cosine_neighbours(E, torch.tensor(top, dtype=dtype), 3)
    except NotImplementedError:
        raise
    except Exception as error:
        pytest.fail(f"{type(error).__name__}: {error}\n{fix}")
    assert ids.tolist() == ranked(E, E[top], exclude=[top], k=3), fix


def test_sims_keep_the_tables_dtype(embeddings):
    for dtype in (torch.float32, torch.float64):
        E = torch.randn(12, 5, dtype=dtype)
        for name, (_, sims) in (
                ("cosine_neighbours", embeddings.cosine_neighbours(E, 3, 4)),
                ("analogy", embeddings.analogy(E, 0, 1, 2, k=4)),
                ("a float64 query vector", embeddings.cosine_neighbours(E, E[3].double(), 4))):
            assert sims.dtype == dtype, (
                f"{name} on a {dtype} table returned {sims.dtype} sims: they are in the "
                "table's dtype, as cosine_similarity's (no .float(), no .double(); a query "
                "vector taken in E's dtype, query.to(E.dtype))")


def test_analogy_with_an_input_given_twice(embeddings):
    E = torch.randn(9, 4)
    ids, _ = embeddings.analogy(E, 0, 0, 5, k=7)  # 9 rows, 2 distinct inputs: 7 may be returned
    assert sorted(ids.tolist()) == [1, 2, 3, 4, 6, 7, 8], (
        f"analogy(E, 0, 0, 5, k=7) on 9 rows returned {ids.tolist()}: the inputs are 0 and 5 "
        "(0 given twice), so every other row, 7 of them, may be returned; count the distinct "
        "inputs (len({a, b, c})), not three")
    with pytest.raises(ValueError):
        embeddings.analogy(E, 0, 0, 5, k=8)


def test_k_from_one_to_the_rows_that_may_be_returned(embeddings):
    E = torch.randn(9, 4)
    paths = {  # what may be returned: every row but the token's; every row; all but a, b, c
        "token 2": (lambda k: embeddings.cosine_neighbours(E, 2, k), 8),
        "a query vector": (lambda k: embeddings.cosine_neighbours(E, torch.randn(4), k), 9),
        "analogy(E, 0, 1, 2)": (lambda k: embeddings.analogy(E, 0, 1, 2, k=k), 6),
        "analogy(..., exclude_inputs=False)": (
            lambda k: embeddings.analogy(E, 0, 1, 2, k=k, exclude_inputs=False), 9),
    }
    for path, (search, rows) in paths.items():
        ids, _ = search(rows)  # k = every row that may be returned: all of them
        assert len(set(ids.tolist())) == rows, f"{path}, k={rows}: expected all {rows} rows"
        for k in (0, rows + 1):
            try:
                search(k)
            except ValueError:
                continue
            pytest.fail(f"{path}, k={k}: expected a ValueError, k goes from 1 to {rows}, the "
                        "number of rows that may be returned")


def test_ties_go_to_the_smaller_id(embeddings):
    E = exact_table(24)
    E[17] = E[4]  # a copy: rows 4 and 17 tie at cosine 1 against a query equal to either
    for k in (1, 2, 10):
        ids, _ = embeddings.cosine_neighbours(E, E[4].clone(), k)
        assert ids.tolist() == ranked(E, E[4], exclude=[], k=k), (
            f"query vector, k={k}: rows with equal cosines come in ascending id order (a stable "
            "descending sort), so 4 before 17, and so on at the cut-off"
        )
        ids, _ = embeddings.cosine_neighbours(E, 9, k)
        assert ids.tolist() == ranked(E, E[9], exclude=[9], k=k), f"token 9, k={k}: ties"
    E[2] = E[11] + E[0] - E[1]  # analogy(E, 0, 2, 1) searches near E[11] exactly
    for k in (3, 12):
        ids, _ = embeddings.analogy(E, 0, 2, 1, k=k)
        assert ids.tolist() == ranked(E, E[11], exclude=[0, 1, 2], k=k), (
            f"analogy, k={k}: ties go to the smaller id here too"
        )


def test_inputs_are_left_unchanged(embeddings):
    E, a, b = torch.randn(10, 4), torch.randn(3, 4), torch.randn(3, 4)
    kept = E.clone(), a.clone(), b.clone()
    embeddings.cosine_similarity(a, b)
    embeddings.cosine_neighbours(E, 3, 2)
    embeddings.cosine_neighbours(E, torch.randn(4), 2)
    embeddings.analogy(E, 1, 2, 3, k=2)
    for name, now, before in zip(("E", "a", "b"), (E, a, b), kept, strict=True):
        assert torch.equal(now, before), (
            f"{name} changed: work on new tensors (x = x / n), never in place on an argument "
            "(x /= n; q = E[b]; q -= E[a] changes row b of E, a view)"
        )


def test_a_copy_of_the_token_still_counts(embeddings):
    E = torch.randn(12, 6)
    E[9] = 2.0 * E[4]  # the same direction, twice as long
    ids, sims = embeddings.cosine_neighbours(E, 4, k=1)
    assert ids.tolist() == [9], (
        f"row 9 points exactly where row 4 does, so it is token 4's nearest neighbour; got "
        f"{ids.tolist()} (the token is left out by its index, not by its value)"
    )
    torch.testing.assert_close(sims, torch.tensor([1.0]))
    E[2] = E[4]  # an exact copy, before the token: a tie, broken by the smaller id
    ids, _ = embeddings.cosine_neighbours(E, 4, k=1)
    assert ids.tolist() == [2], (
        f"row 2 is an exact copy of row 4, so it ties with token 4's own row and comes first "
        f"(the smaller id); got {ids.tolist()}: leave the token out by its index, not by "
        "dropping the first place of the ranking"
    )


def test_a_query_vector_leaves_nothing_out(embeddings):
    E = torch.randn(12, 6)
    ids, _ = embeddings.cosine_neighbours(E, E[3].clone(), k=2)
    assert ids.tolist()[0] == 3, (
        f"a query vector (d,) equal to row 3 has row 3 as its nearest row; got {ids.tolist()}: "
        "only a token index is left out of its own neighbours"
    )


def test_analogy_needs_the_exclusion(embeddings):
    # A toy table in 3-d, like the chapter's map: king is long, so it dominates b - a + c.
    words = ["man", "woman", "king", "queen", "apple", "river"]
    E = torch.tensor(
        [
            [1.0, 0.0, 0.0],  # man
            [0.0, 1.0, 0.0],  # woman
            [3.0, 0.0, 3.0],  # king
            [0.0, 3.0, 3.0],  # queen
            [0.0, 0.0, -1.0],  # apple
            [-1.0, -1.0, 0.0],  # river
        ]
    )
    man, woman, king = 0, 1, 2
    ids, _ = embeddings.analogy(E, man, king, woman, k=1)
    got = words[ids[0]]
    assert got == "queen", (
        f"man : king :: woman : ? should be queen with the inputs excluded, got {got}"
    )
    ids, _ = embeddings.analogy(E, man, king, woman, k=1, exclude_inputs=False)
    got = words[ids[0]]
    assert got == "king", (
        f"without exclude_inputs the nearest row to king - man + woman is king itself here, "
        f"got {got}: leave a, b and c out only when exclude_inputs is true"
    )


def test_analogy_by_position_and_by_name(embeddings):
    E = torch.randn(15, 5)
    ids, _ = embeddings.analogy(E, 0, 1, 2)
    assert tuple(ids.shape) == (1,), f"k is 1 unless given; got {tuple(ids.shape)}"
    by_name, _ = embeddings.analogy(E=E, a=0, b=1, c=2, k=4, exclude_inputs=False)
    positional, _ = embeddings.analogy(E, 0, 1, 2, 4, False)
    expected = ranked(E, E[1] - E[0] + E[2], exclude=[], k=4)
    assert by_name.tolist() == expected and positional.tolist() == expected, (
        f"analogy(E, a, b, c, k, exclude_inputs) by name gave {by_name.tolist()} and "
        f"positionally {positional.tolist()}, expected {expected}: keep the stub's parameter "
        "names and order"
    )


def test_king_minus_man_plus_woman_on_glove(vectors):
    try:
        words = vectors.load_glove(50_000)
    except ImportError as error:
        pytest.skip(f"GloVe is not installed ({error})")
    found = [word for word, _ in words.analogy("man", "king", "woman", k=1)]
    assert found == ["queen"], f"GloVe's man : king :: woman : ? is queen, got {found}"


def test_a_table_of_one_row(embeddings):
    E = torch.randn(1, 5)
    for name, (ids, _) in (("cosine_neighbours(E, query, 1)",
                            embeddings.cosine_neighbours(E, torch.randn(5), 1)),
                           ("analogy(E, 0, 0, 0, k=1, exclude_inputs=False)",
                            embeddings.analogy(E, 0, 0, 0, k=1, exclude_inputs=False))):
        assert ids.tolist() == [0] and tuple(ids.shape) == (1,), (
            f"{name} on a table of one row gave ids {ids.tolist()}: the one row there is, as a "
            "LongTensor of shape (1,) (no squeeze())")


def test_results_follow_the_tables_device(embeddings, other_device):
    device = other_device.name
    E = other_device.to(torch.randn(9, 4))
    sims = other_device.run(lambda: embeddings.cosine_similarity(E, E[1], eps=0.5))
    assert sims.device.type == device, (
        f"cosine_similarity(E, E[1], eps=0.5) with E on {device} should give cosines on "
        f"{device}; got {sims.device}: make new tensors on the inputs' device, never a fixed one")
    calls = {"cosine_neighbours(E, 2, 3)": lambda: embeddings.cosine_neighbours(E, 2, 3),
             "analogy(E, 0, 1, 2, k=3)": lambda: embeddings.analogy(E, 0, 1, 2, k=3)}
    for name, call in calls.items():
        ids, sims = other_device.run(call)
        assert ids.device.type == device and sims.device.type == device, (
            f"{name} with E on {device} should give ids and sims on {device}; got ids on "
            f"{ids.device} and sims on {sims.device}: make new tensors on E's device "
            "(device=E.device), never a fixed one")
