"""lumen/embeddings.py against independent references.

- ``Embedding`` against ``torch.nn.functional.embedding`` (forward and gradients, exactly),
- ``one_hot`` against ``F.one_hot`` and ``embed_via_onehot`` against ``weight[ids]`` (exactly),
- ``cosine_similarity`` against ``F.cosine_similarity``, ``cosine_neighbours`` and ``analogy``
  against a brute-force search written here (exact ids, ties to the smaller id),
- the initialisation against the normal distribution it claims, with tolerances derived from
  the sample size (6 standard errors, so a correct implementation fails about once in 5e8 runs).

Floating-point tolerances appear only where the arithmetic is not exact; a row lookup is exact.
"""

from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 - F, as in the chapter
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import BroadcastableShapes, mutually_broadcastable_shapes
from torch import Tensor, nn

from lumen.embeddings import (
    Embedding,
    analogy,
    cosine_neighbours,
    cosine_similarity,
    embed_via_onehot,
    expected_dot_std,
    one_hot,
)
from tests.helpers import assert_normal, random_ids

SEEDS = st.integers(0, 2**32 - 1)
SHAPES = st.lists(st.integers(0, 4), max_size=3).map(tuple)  # (), (n,), (B, T), (B, T, U)
NARROW_INT_DTYPES = [torch.int32, torch.int16, torch.int8, torch.uint8]


# --- Embedding: a V x d Parameter and a row lookup --------------------------------------------


@pytest.mark.embedding
def test_weight_is_a_registered_parameter_of_shape_v_by_d() -> None:
    emb = Embedding(11, 5)
    assert isinstance(emb.weight, nn.Parameter), "weight must be an nn.Parameter"
    assert emb.weight.shape == (11, 5)
    assert emb.weight.requires_grad
    assert dict(emb.named_parameters()) == {"weight": emb.weight}, "exactly one Parameter"
    assert list(emb.state_dict()) == ["weight"]
    assert not any(isinstance(m, nn.Embedding) for m in emb.modules()), "no nn.Embedding inside"


@pytest.mark.embedding
@pytest.mark.parametrize("shape", [(), (7,), (3, 5), (2, 3, 4)], ids=str)
def test_forward_is_the_row_lookup(shape: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    emb = Embedding(50, 6)
    ids = random_ids(shape, 50, seed=1)
    out = emb(ids)
    assert out.shape == (*shape, 6)
    assert torch.equal(out, F.embedding(ids, emb.weight))


@pytest.mark.embedding
def test_forward_reaches_the_first_and_last_rows() -> None:
    emb = Embedding(9, 3)
    out = emb(torch.tensor([[0, 8], [8, 0]]))
    assert torch.equal(out[0, 0], emb.weight[0]) and torch.equal(out[0, 1], emb.weight[8])


@pytest.mark.embedding
@settings(max_examples=50, deadline=None)
@given(shape=SHAPES, V=st.integers(1, 30), d=st.integers(1, 8), seed=SEEDS)
def test_forward_equals_f_embedding_for_any_shape(
    shape: tuple[int, ...], V: int, d: int, seed: int
) -> None:
    torch.manual_seed(seed)
    emb = Embedding(V, d)
    ids = random_ids(shape, V, seed)
    out = emb(ids)
    assert out.shape == (*shape, d) and out.dtype == emb.weight.dtype
    assert torch.equal(out, F.embedding(ids, emb.weight))


@pytest.mark.embedding
def test_gradients_of_repeated_ids_add_up() -> None:
    torch.manual_seed(0)
    emb = Embedding(10, 4)
    ids = torch.tensor([[1, 3, 1], [3, 3, 9]])  # 1 twice, 3 three times, most rows never
    # Whole-number upstream gradients: their sums are exact in any order, so equality is exact.
    upstream = random_ids((2, 3, 4), 17, seed=2).float() - 8
    emb(ids).backward(upstream)

    weight = emb.weight.detach().clone().requires_grad_()
    F.embedding(ids, weight).backward(upstream)
    assert torch.equal(emb.weight.grad, weight.grad)
    assert torch.equal(emb.weight.grad[3], upstream[0, 1] + upstream[1, 0] + upstream[1, 1])
    assert torch.equal(emb.weight.grad[0], torch.zeros(4)), "an unused row gets no gradient"


@pytest.mark.embedding
@settings(max_examples=30, deadline=None)
@given(shape=SHAPES, V=st.integers(1, 6), seed=SEEDS)
def test_gradients_equal_f_embedding_gradients(shape: tuple[int, ...], V: int, seed: int) -> None:
    torch.manual_seed(seed)
    emb = Embedding(V, 3)
    ids = random_ids(shape, V, seed)  # a small V makes repeats likely
    upstream = random_ids((*shape, 3), 17, seed + 1).float() - 8
    emb(ids).backward(upstream)
    weight = emb.weight.detach().clone().requires_grad_()
    F.embedding(ids, weight).backward(upstream)
    assert torch.equal(emb.weight.grad, weight.grad)


@pytest.mark.init
def test_scale_multiplies_by_sqrt_d_model() -> None:
    torch.manual_seed(0)
    ids = random_ids((2, 5), 20, seed=3)
    plain, scaled = Embedding(20, 16), Embedding(20, 16, scale=True)
    scaled.load_state_dict(plain.state_dict())
    assert torch.equal(plain(ids), F.embedding(ids, plain.weight))
    assert torch.equal(scaled(ids), F.embedding(ids, plain.weight) * math.sqrt(16))


@pytest.mark.embedding
@pytest.mark.parametrize(
    "ids",
    [
        torch.tensor([1.0, 2.0]),
        torch.tensor([1.0, 2.0], dtype=torch.float64),
        torch.tensor([1.0, 2.0], dtype=torch.float16),
        torch.tensor([True, False]),
        torch.tensor([1 + 0j]),
        [1, 2],
    ],
    ids=["float32", "float64", "float16", "bool", "complex", "list"],
)
def test_non_integer_ids_raise_type_error(ids: object) -> None:
    # Whole-number floats are refused too: ids are labels, not quantities.
    with pytest.raises(TypeError):
        Embedding(10, 4)(ids)


def number(n: int) -> str:
    """A regex matching ``n`` as a whole number (not a part of a longer one)."""
    return rf"(?<![\d-]){re.escape(str(n))}(?!\d)"


@pytest.mark.embedding
@pytest.mark.parametrize("bad", [-1, -2, -37, 37, 38, 10**6])
def test_ids_outside_the_vocabulary_raise_index_error_naming_them(bad: int) -> None:
    V = 37
    ids = torch.tensor([[0, 5, 36], [7, bad, 2]])
    with pytest.raises(IndexError) as error:
        Embedding(V, 4)(ids)
    message = str(error.value)
    assert re.search(number(bad), message), f"the message should name id {bad}: {message!r}"
    assert re.search(number(V), message), f"the message should name V={V}: {message!r}"


@pytest.mark.embedding
@pytest.mark.parametrize("dtype", [torch.int64, *NARROW_INT_DTYPES], ids=str)
def test_any_integer_dtype_of_ids_works(dtype: torch.dtype) -> None:
    # V = 50257 does not fit in uint8, int8 or int16: the range check must not wrap around.
    V = 50257
    high = min(V, torch.iinfo(dtype).max + 1)
    ids = random_ids((4, 9), high, seed=4).to(dtype)
    emb = Embedding(V, 3)
    assert torch.equal(emb(ids), F.embedding(ids.long(), emb.weight))


@pytest.mark.embedding
@pytest.mark.parametrize("dtype", NARROW_INT_DTYPES, ids=str)
def test_bad_ids_are_caught_in_narrow_dtypes(dtype: torch.dtype) -> None:
    bad = -3 if dtype.is_signed else 100
    with pytest.raises(IndexError, match=number(bad)):
        Embedding(50, 4)(torch.tensor([1, bad, 2], dtype=dtype))


@pytest.mark.embedding
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16], ids=str)
def test_dtype_is_preserved_after_to(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    emb = Embedding(30, 8).to(dtype)
    assert isinstance(emb.weight, nn.Parameter) and emb.weight.dtype == dtype
    ids = random_ids((3, 4), 30, seed=5)
    out = emb(ids)
    assert out.dtype == dtype
    assert torch.equal(out, F.embedding(ids, emb.weight))


@pytest.mark.embedding
def test_works_on_the_meta_device() -> None:
    with torch.device("meta"):
        emb = Embedding(50257, 768)  # no memory: shapes only
    assert emb.weight.is_meta
    out = emb(torch.tensor([[464, 3797, 3332]]))
    assert out.is_meta and out.shape == (1, 3, 768)
    assert emb(torch.empty(2, 5, dtype=torch.long, device="meta")).shape == (2, 5, 768)
    with pytest.raises(IndexError):
        emb(torch.tensor([50257]))  # ids that have values are still checked


@pytest.mark.embedding
@pytest.mark.parametrize(
    "kwargs",
    [
        {"vocab_size": 0, "d_model": 4},
        {"vocab_size": 10, "d_model": -1},
        {"vocab_size": 10.0, "d_model": 4},
        {"vocab_size": True, "d_model": 4},
        {"vocab_size": 10, "d_model": 4, "std": -0.1},
    ],
)
def test_bad_sizes_raise_value_error(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        Embedding(**kwargs)


# --- one-hot: one_hot(ids) @ E selects the rows of E ------------------------------------------


@pytest.mark.onehot
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("shape", [(), (7,), (3, 5), (2, 3, 4), (0,)], ids=str)
def test_one_hot_equals_f_one_hot(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    ids = random_ids(shape, 12, seed=6)
    out = one_hot(ids, 12, dtype)
    assert out.dtype == dtype
    assert torch.equal(out, F.one_hot(ids, 12).to(dtype))


@pytest.mark.onehot
def test_one_hot_never_infers_the_number_of_classes() -> None:
    ids = torch.tensor([[0, 2], [1, 2]])  # the largest id is 2, but there are 10 classes
    assert one_hot(ids, 10).shape == (2, 2, 10)
    assert one_hot(ids, 10).dtype == torch.float32  # the default dtype
    with pytest.raises(IndexError):
        one_hot(ids, 2)
    with pytest.raises(TypeError):
        one_hot(ids.float(), 10)


@pytest.mark.onehot
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(), (7,), (3, 5), (2, 3, 4)], ids=str)
def test_embed_via_onehot_is_exactly_the_lookup(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    # Exact, not approximately equal: each output number is 1 * E[i, j] plus V - 1 products
    # 0 * E[., j] = 0, and adding zeros is exact whatever order the matmul sums in.
    g = torch.Generator().manual_seed(7)
    weight = torch.randn(40, 8, generator=g, dtype=torch.float64).to(dtype)  # full precision
    ids = random_ids(shape, 40, seed=8)
    out = embed_via_onehot(weight, ids)
    assert out.dtype == dtype and out.shape == (*shape, 8)
    assert torch.equal(out, weight[ids])
    assert torch.equal(out, F.embedding(ids, weight))


@pytest.mark.onehot
@settings(max_examples=40, deadline=None)
@given(shape=SHAPES, V=st.integers(1, 30), d=st.integers(1, 8), seed=SEEDS)
def test_embed_via_onehot_equals_embedding_for_any_shape(
    shape: tuple[int, ...], V: int, d: int, seed: int
) -> None:
    torch.manual_seed(seed)
    emb = Embedding(V, d)
    ids = random_ids(shape, V, seed)
    assert torch.equal(embed_via_onehot(emb.weight, ids), emb(ids))
    assert torch.equal(one_hot(ids, V), F.one_hot(ids, V).float())


@pytest.mark.onehot
@pytest.mark.parametrize("dtype", NARROW_INT_DTYPES, ids=str)
def test_one_hot_takes_any_integer_dtype(dtype: torch.dtype) -> None:
    ids = random_ids((3, 4), 100, seed=9).to(dtype)
    weight = torch.randn(300, 5, generator=torch.Generator().manual_seed(9))
    assert torch.equal(one_hot(ids, 300), F.one_hot(ids.long(), 300).float())
    assert torch.equal(embed_via_onehot(weight, ids), weight[ids.long()])


# --- cosine similarity, neighbours and the analogy --------------------------------------------


def reference_scores(E: Tensor, query: Tensor) -> list[float]:
    """The cosine of every row of ``E`` (V, d) with ``query`` (d,), brute force in float64.

    Each dot product and squared length is one math.fsum (rounded once), then
    dot / (|row| |query|); a zero vector scores 0.
    """
    q = query.double().tolist()
    q_norm = math.sqrt(math.fsum(x * x for x in q))
    scores = []
    for row in E.double().tolist():
        norm = math.sqrt(math.fsum(x * x for x in row))
        dot = math.fsum(x * y for x, y in zip(row, q, strict=True))
        scores.append(dot / (norm * q_norm) if norm and q_norm else 0.0)
    return scores


def reference_neighbours(
    E: Tensor, query: Tensor, k: int, exclude: set[int] = frozenset()
) -> tuple[list[int], list[float]]:
    """The ``k`` best rows by (descending score, ascending id), skipping ``exclude``."""
    scores = reference_scores(E, query)
    candidates = [i for i in range(len(scores)) if i not in exclude]
    order = sorted(candidates, key=lambda i: (-scores[i], i))
    return order[:k], [scores[i] for i in order[:k]]


# Two kinds of table keep the expected ids free of rounding luck:
#
# - random rows: no two scores are within rounding of each other (in float64 the chance is
#   about 1e-12 a pair), so the order is the same however a cosine is computed;
# - exact rows: +-1 times a power of two, with d = 1, 4 or 16, so every length is a power of
#   two and every cosine is a multiple of 1/d that any correct method (row-wise sums, one
#   matmul, normalise-then-matmul, in any order) computes without rounding. Their many equal
#   scores are real ties, and copies of a row are common: this is where ties are tested.
#   (With random rows, a matmul may round two identical rows differently, so a copy is not a
#   reliable tie.)


def random_table(seed: int, V: int, d: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """Gaussian rows ``(V, d)``."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(V, d, generator=g, dtype=torch.float64).to(dtype)


def exact_table(
    seed: int, V: int, d: int, zero_row: bool = False, dtype: torch.dtype = torch.float64
) -> Tensor:
    """Rows ``(V, d)`` of +-1 times 2^s (s from -2 to 2), d in (1, 4, 16); one zero row if asked."""
    assert d in (1, 4, 16), "sqrt(d) must be a power of two"
    g = torch.Generator().manual_seed(seed)
    signs = torch.randint(0, 2, (V, d), generator=g) * 2.0 - 1.0  # (V, d)
    E = signs * 2.0 ** torch.randint(-2, 3, (V, 1), generator=g)
    if zero_row:
        E[int(torch.randint(0, V, (1,), generator=g))] = 0
    return E.to(dtype)


TABLES = st.sampled_from(["random", "exact"])


def draw_table(data: st.DataObject, kind: str, seed: int, V: int) -> Tensor:
    if kind == "random":
        return random_table(seed, V, data.draw(st.integers(1, 8), label="d"))
    d = data.draw(st.sampled_from([1, 4, 16]), label="d")
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64]), label="dtype")
    return exact_table(seed, V, d, data.draw(st.booleans(), label="zero_row"), dtype)


def assert_neighbours(
    got: tuple[Tensor, Tensor], expected: tuple[list[int], list[float]], E: Tensor
) -> None:
    (ids, sims), (expected_ids, expected_sims) = got, expected
    assert ids.dtype == torch.int64 and sims.dtype == E.dtype
    assert ids.tolist() == expected_ids
    atol = 1e-12 if E.dtype == torch.float64 else 1e-6
    torch.testing.assert_close(sims, torch.tensor(expected_sims, dtype=E.dtype), rtol=0, atol=atol)


@pytest.mark.neighbours
@pytest.mark.parametrize("dtype, atol", [(torch.float32, 1e-6), (torch.float64, 1e-12)])
def test_cosine_similarity_matches_torch(dtype: torch.dtype, atol: float) -> None:
    g = torch.Generator().manual_seed(10)
    a, b = torch.randn(2, 64, 16, generator=g, dtype=dtype)
    out = cosine_similarity(a, b)
    assert out.shape == (64,) and out.dtype == dtype
    torch.testing.assert_close(out, F.cosine_similarity(a, b, dim=-1), rtol=0, atol=atol)


@pytest.mark.neighbours
@settings(max_examples=50, deadline=None)
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4),
    d=st.integers(1, 6),
    seed=SEEDS,
)
def test_cosine_similarity_broadcasts(shapes: BroadcastableShapes, d: int, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    (shape_a, shape_b), result = shapes.input_shapes, shapes.result_shape
    a = torch.randn(*shape_a, d, generator=g, dtype=torch.float64)
    b = torch.randn(*shape_b, d, generator=g, dtype=torch.float64)
    out = cosine_similarity(a, b)
    assert out.shape == tuple(result)
    torch.testing.assert_close(out, F.cosine_similarity(a, b, dim=-1), rtol=0, atol=1e-12)
    assert bool((out.abs() <= 1 + 1e-12).all())


@pytest.mark.neighbours
def test_cosine_similarity_ignores_length_and_sign_flips_it() -> None:
    g = torch.Generator().manual_seed(11)
    a, b = torch.randn(2, 10, generator=g, dtype=torch.float64)
    torch.testing.assert_close(cosine_similarity(3.7 * a, b), cosine_similarity(a, b))
    torch.testing.assert_close(cosine_similarity(a, a), torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(cosine_similarity(a, -a), torch.tensor(-1.0, dtype=torch.float64))


@pytest.mark.neighbours
def test_a_zero_vector_scores_zero_not_nan() -> None:
    b = torch.randn(3, 5, generator=torch.Generator().manual_seed(12))
    zero = torch.zeros(5)
    assert torch.equal(cosine_similarity(zero, b), torch.zeros(3))
    assert torch.equal(cosine_similarity(b, zero), torch.zeros(3))
    assert torch.equal(cosine_similarity(zero, zero), torch.tensor(0.0))


@pytest.mark.neighbours
@settings(max_examples=80, deadline=None)
@given(seed=SEEDS, kind=TABLES, V=st.integers(2, 40), data=st.data())
def test_cosine_neighbours_of_a_token_match_brute_force(
    seed: int, kind: str, V: int, data: st.DataObject
) -> None:
    E = draw_table(data, kind, seed, V)
    token = data.draw(st.integers(0, V - 1), label="token")
    k = data.draw(st.integers(1, V - 1), label="k")
    expected = reference_neighbours(E, E[token], k, exclude={token})
    assert_neighbours(cosine_neighbours(E, token, k), expected, E)


@pytest.mark.neighbours
@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, kind=TABLES, V=st.integers(1, 40), data=st.data())
def test_cosine_neighbours_of_a_query_vector_exclude_nothing(
    seed: int, kind: str, V: int, data: st.DataObject
) -> None:
    E = draw_table(data, kind, seed, V)
    if data.draw(st.booleans(), label="a row's own vector"):
        query = E[seed % V].clone()  # passed as a vector, so its row is not excluded
    elif kind == "random":
        query = random_table(seed + 1, 1, E.shape[1])[0]
    else:
        query = exact_table(seed + 1, 1, E.shape[1], dtype=E.dtype)[0]
    k = data.draw(st.integers(1, V), label="k")
    assert_neighbours(cosine_neighbours(E, query, k), reference_neighbours(E, query, k), E)


@pytest.mark.neighbours
def test_ties_hold_in_a_large_float32_table() -> None:
    # Thousands of exact rows with only 2^16 directions: many copies, many tied scores.
    E = exact_table(24, 4099, 16, zero_row=True, dtype=torch.float32)
    for token in (0, 2048, 4098):
        expected = reference_neighbours(E, E[token], 300, exclude={token})
        assert_neighbours(cosine_neighbours(E, token, 300), expected, E)


@pytest.mark.neighbours
def test_float32_neighbours_score_like_brute_force() -> None:
    # In float32 two different random rows may score within rounding of each other, so the ids
    # are compared by their scores here; the exact order is checked in float64 above.
    E = random_table(13, 500, 32, torch.float32)
    ids, sims = cosine_neighbours(E, 17, 20)
    assert sims.dtype == torch.float32 and ids.dtype == torch.int64
    assert 17 not in ids.tolist() and len(set(ids.tolist())) == 20
    _, expected_sims = reference_neighbours(E, E[17], 20, exclude={17})
    expected_sims = torch.tensor(expected_sims, dtype=torch.float64)
    torch.testing.assert_close(sims.double(), expected_sims, rtol=0, atol=1e-6)
    scores = torch.tensor(reference_scores(E, E[17]), dtype=torch.float64)
    torch.testing.assert_close(sims.double(), scores[ids], rtol=0, atol=1e-6)  # each id's own


@pytest.mark.neighbours
def test_a_duplicate_of_the_query_row_is_its_nearest_neighbour() -> None:
    # The query is excluded by its index, not by its value: a copy elsewhere still counts.
    E = random_table(14, 20, 8)
    E[13] = E[4]
    for token, duplicate in ((4, 13), (13, 4)):
        ids, sims = cosine_neighbours(E, token, 3)
        assert ids[0] == duplicate and token not in ids.tolist()
        torch.testing.assert_close(sims[0], torch.tensor(1.0, dtype=torch.float64))


@pytest.mark.neighbours
def test_ties_go_to_the_smaller_id() -> None:
    E = random_table(15, 50, 16)
    u = exact_table(15, 1, 16)[0]  # +-1 entries: u and its copies score exactly 1
    for i, scale in ((31, 1.0), (7, 2.0), (44, 0.5), (12, 4.0)):  # same direction, four lengths
        E[i] = scale * u
    assert cosine_neighbours(E, u, 2)[0].tolist() == [7, 12]  # k cuts the tie: smaller ids
    assert cosine_neighbours(E, u, 5)[0].tolist()[:4] == [7, 12, 31, 44]
    assert cosine_neighbours(E, 31, 3)[0].tolist() == [7, 12, 44]

    ids, sims = cosine_neighbours(E, torch.zeros(16, dtype=torch.float64), 6)  # all score 0
    assert ids.tolist() == list(range(6)) and not bool(sims.any())


@pytest.mark.neighbours
@pytest.mark.parametrize("k", [0, -1, 10, 11, True, 2.0])
def test_k_outside_the_candidates_raises_value_error(k: object) -> None:
    E = random_table(16, 10, 4, torch.float32)
    with pytest.raises(ValueError):
        cosine_neighbours(E, 3, k)  # 9 candidates: the token itself is excluded


@pytest.mark.neighbours
def test_k_bounds_count_the_candidates() -> None:
    E = random_table(17, 10, 4, torch.float32)
    assert cosine_neighbours(E, 3, 9)[0].shape == (9,)
    assert cosine_neighbours(E, E[3], 10)[0].shape == (10,)  # a vector excludes nothing
    with pytest.raises(ValueError):
        cosine_neighbours(E, E[3], 11)
    assert analogy(E, 1, 2, 3, k=7)[0].shape == (7,)
    with pytest.raises(ValueError):
        analogy(E, 1, 2, 3, k=8)  # three inputs excluded
    assert analogy(E, 1, 2, 3, k=10, exclude_inputs=False)[0].shape == (10,)


@pytest.mark.neighbours
def test_bad_tokens_are_refused() -> None:
    E = random_table(18, 10, 4, torch.float32)
    with pytest.raises(IndexError):
        cosine_neighbours(E, 10, 1)
    with pytest.raises(IndexError):
        cosine_neighbours(E, -1, 1)
    with pytest.raises(TypeError):
        cosine_neighbours(E, 2.0, 1)
    with pytest.raises(ValueError):
        cosine_neighbours(E, torch.zeros(5), 1)  # a query vector of the wrong width
    as_tensor, as_int = cosine_neighbours(E, torch.tensor(3), 2), cosine_neighbours(E, 3, 2)
    assert torch.equal(as_tensor[0], as_int[0])  # a 0-d tensor is a row index, not a vector


@pytest.mark.neighbours
@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, V=st.integers(4, 40), d=st.integers(1, 8), data=st.data())
def test_analogy_matches_brute_force(seed: int, V: int, d: int, data: st.DataObject) -> None:
    # Random rows only: b - a + c of exact rows is no longer exact once normalised.
    E = random_table(seed, V, d)
    a, b, c = (data.draw(st.integers(0, V - 1), label=name) for name in "abc")
    exclude_inputs = data.draw(st.booleans(), label="exclude_inputs")
    exclude = {a, b, c} if exclude_inputs else set()
    k = data.draw(st.integers(1, V - len(exclude)), label="k")
    expected = reference_neighbours(E, E[b] - E[a] + E[c], k, exclude)
    assert_neighbours(analogy(E, a, b, c, k=k, exclude_inputs=exclude_inputs), expected, E)


@pytest.mark.neighbours
def test_analogy_excludes_its_inputs_unless_told_not_to() -> None:
    # If man and woman were the same vector, king - man + woman would be king itself.
    E = random_table(19, 30, 16)
    man, king, woman = 3, 11, 20
    E[woman] = E[man]
    ids, _ = analogy(E, man, king, woman, k=5, exclude_inputs=False)
    assert ids[0] == king
    ids, _ = analogy(E, man, king, woman, k=27)  # every row but the three inputs
    assert not {man, king, woman} & set(ids.tolist())
    assert analogy(E, man, king, woman)[0].shape == (1,)  # k defaults to 1


# --- initialisation: why the numbers start small ----------------------------------------------


@pytest.mark.init
@pytest.mark.parametrize("std, expected", [(0.02, 0.02), (0.5, 0.5), (None, 1 / math.sqrt(64))])
def test_weight_is_drawn_from_normal_with_std(std: float | None, expected: float) -> None:
    torch.manual_seed(20)
    emb = Embedding(4096, 64, std=std)  # 262,144 draws: the std is known to about 0.14%
    assert_normal(emb.weight, expected, f"Embedding(std={std}).weight")


@pytest.mark.init
def test_reset_parameters_draws_again_in_place() -> None:
    torch.manual_seed(21)
    emb = Embedding(100, 8)
    weight, before = emb.weight, emb.weight.detach().clone()
    emb.reset_parameters()
    assert emb.weight is weight, "reset in place: the same Parameter"
    assert not torch.equal(emb.weight, before)


@pytest.mark.init
@pytest.mark.parametrize("std, d", [(0.02, 768), (1.0, 1), (0.5, 64), (1 / math.sqrt(512), 512)])
def test_expected_dot_std_formula(std: float, d: int) -> None:
    assert expected_dot_std(std, d) == pytest.approx(std**2 * math.sqrt(d), rel=1e-12)


@pytest.mark.init
def test_expected_dot_std_matches_random_rows() -> None:
    # The dot product x . y of two rows of d independent N(0, s^2) numbers has variance
    # v = s^4 d and fourth moment s^8 (3 d^2 + 6 d), so over n pairs the sample variance has
    # standard error s^4 sqrt((2 d^2 + 6 d) / n), and the sample std about that / (2 sqrt(v)).
    std, d, n = 0.02, 64, 20_000
    torch.manual_seed(22)
    rows = Embedding(2 * n, d, std=std).weight.detach().double().view(n, 2, d)
    dots = (rows[:, 0] * rows[:, 1]).sum(-1)  # (n,) independent pairs of rows
    expected = expected_dot_std(std, d)
    standard_error = std**4 * math.sqrt((2 * d**2 + 6 * d) / n) / (2 * expected)
    sample = dots.pow(2).mean().sqrt().item()  # the mean is 0 by construction
    assert abs(sample - expected) <= 6 * standard_error, (
        f"dot products of rows have std {sample:.5g}, expected {expected:.5g}"
    )


# --- on a GPU, when there is one ---------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_embedding_on_cuda_matches_f_embedding() -> None:
    torch.manual_seed(23)
    emb = Embedding(1000, 32).cuda()
    ids = random_ids((4, 16), 1000, seed=23)
    out = emb(ids.cuda())
    assert out.is_cuda
    assert torch.equal(out, F.embedding(ids.cuda(), emb.weight))
    assert torch.equal(emb(ids), out), "ids on the CPU are moved to the table's device"
    assert torch.equal(embed_via_onehot(emb.weight, ids), out)
    upstream = random_ids((4, 16, 32), 17, seed=24).float().cuda() - 8
    out.backward(upstream)
    weight = emb.weight.detach().clone().requires_grad_()
    F.embedding(ids.cuda(), weight).backward(upstream)
    assert torch.equal(emb.weight.grad, weight.grad)
    with pytest.raises(IndexError):
        emb(torch.tensor([1000], device="cuda"))
