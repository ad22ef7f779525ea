"""Stage 'onehot': a one-hot vector times E selects a row (chapter: "One-hot encoding").

The references are PyTorch's ``F.one_hot`` and ``F.embedding``.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's usual name)
from torch.overrides import TorchFunctionMode

pytestmark = pytest.mark.onehot

INTEGER_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


@pytest.mark.parametrize("shape", [(), (6,), (4, 5), (1, 4), (3, 1)],
                         ids=["0-d", "1-d", "2-d", "a batch of one", "length one"])
def test_one_hot_matches_pytorch(embeddings, shape):
    ids = torch.randint(0, 10, shape)
    out = embeddings.one_hot(ids, 10)
    expected = F.one_hot(ids, num_classes=10).float()  # (..., 10)
    assert out.dtype == torch.float32, f"expected float32 by default, got {out.dtype}"
    assert out.shape == expected.shape, (
        f"expected shape (..., V) = {tuple(expected.shape)}, got {tuple(out.shape)}"
    )
    assert torch.equal(out, expected), "expected a single 1 at each id's position, zeros elsewhere"


def test_one_hot_leaves_the_ids_alone(embeddings):
    ids = torch.tensor([[3, 0], [1, 3]])  # int64: ids.long() is ids itself, no copy
    before, version = ids.clone(), ids._version
    embeddings.one_hot(ids, 4)
    assert ids.shape == before.shape and torch.equal(ids, before), (
        f"one_hot changed the ids it was given (now of shape {tuple(ids.shape)}): work on new "
        "tensors (ids.long().unsqueeze(-1)), never in place (ids.unsqueeze_(-1))"
    )
    assert ids._version == version, "one_hot ran an in-place operation on the ids it was given"


@pytest.mark.parametrize("by_name", [False, True], ids=["positional", "by name"])
def test_num_classes_is_given_not_guessed(embeddings, by_name):
    ids = torch.tensor([0, 2])  # a batch that lacks the vocabulary's last tokens
    out = embeddings.one_hot(ids=ids, num_classes=5) if by_name else embeddings.one_hot(ids, 5)
    assert tuple(out.shape) == (2, 5), (
        f"expected (2, 5): a vocabulary of 5 tokens gives vectors of length 5 whatever the "
        f"batch holds; got {tuple(out.shape)} (was the length guessed from ids.max()?)"
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("by_name", [False, True], ids=["positional", "by name"])
def test_one_hot_dtype(embeddings, dtype, by_name):
    ids = torch.tensor([[3, 1]])
    out = embeddings.one_hot(ids, 4, dtype=dtype) if by_name else embeddings.one_hot(ids, 4, dtype)
    assert out.dtype == dtype, f"expected dtype {dtype}, got {out.dtype}"
    assert torch.equal(out, F.one_hot(torch.tensor([[3, 1]]), 4).to(dtype))


def test_one_hots_are_neutral(embeddings):
    vocab = ["the", "cat", "sat", "on", "mat"]
    onehots = embeddings.one_hot(torch.arange(len(vocab)), len(vocab))  # (5, 5)
    dots = onehots @ onehots.T  # every pair's dot product
    assert torch.equal(dots, torch.eye(len(vocab))), (
        "expected every one-hot to have length 1 and every pair to be orthogonal (dot product "
        f"0: no token is accidentally close to another); the dot products are\n{dots}"
    )


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_every_integer_dtype_and_layout(embeddings, dtype, layout):
    ids = torch.randint(0, 9, (3, 4))
    if layout == "transposed":
        ids = ids.T.contiguous().T  # the same values, stored column by column
    weight = torch.randn(9, 2)
    hint = ("widen the ids with .long() where an operation needs int64 (scatter_ and "
            "index_select refuse int8, int16 and uint8; indexing reads uint8 as a mask), and "
            "flatten with reshape, not view (which fails on non-contiguous ids)")
    for name, call, expected in (
        ("one_hot", lambda: embeddings.one_hot(ids.to(dtype), 9), F.one_hot(ids, 9).float()),
        ("embed_via_onehot", lambda: embeddings.embed_via_onehot(weight, ids.to(dtype)),
         F.embedding(ids, weight)),
    ):
        try:
            out = call()
        except NotImplementedError:
            raise
        except Exception as error:  # PyTorch's own message does not say what to do: this does
            pytest.fail(f"{name} on {dtype} ids ({layout}) raised {type(error).__name__}: "
                        f"{error}\n{hint}")
        assert torch.equal(out, expected), f"{name} on {dtype} ids ({layout}): {hint}"


@pytest.mark.parametrize(("dtype", "V"), [(torch.uint8, 300), (torch.int8, 200)], ids=str)
def test_ids_at_the_edges_of_their_dtype(embeddings, id_dtypes, dtype, V):
    """Every value the ids' dtype holds is an id when there are enough classes."""
    top = torch.iinfo(dtype).max
    ids = torch.tensor([top, 0, 7, top - 1], dtype=dtype)
    weight = torch.randn(V, 2)
    fix = (f"{dtype} ids up to {top} are all valid with {V} classes; "
           + id_dtypes.wraps(dtype, V, "num_classes") + ". Compare and count in int64, "
           f"ids.long() (arange({V}, dtype={dtype}) wraps the same way)")
    try:
        vectors = embeddings.one_hot(ids, V)
        rows = embeddings.embed_via_onehot(weight, ids)
    except NotImplementedError:
        raise
    except Exception as error:
        pytest.fail(f"{type(error).__name__}: {error}\n{fix}")
    assert torch.equal(vectors, F.one_hot(ids.long(), V).float()), f"one_hot: {fix}"
    assert torch.equal(rows, F.embedding(ids.long(), weight)), f"embed_via_onehot: {fix}"


def test_results_follow_the_inputs_device(embeddings, other_device):
    device = other_device.name
    ids = other_device.to(torch.tensor([[1, 0, 4]]))
    out = other_device.run(lambda: embeddings.one_hot(ids, 5))
    assert out.device.type == device and tuple(out.shape) == (1, 3, 5), (
        f"one_hot of ids on {device} should be on {device}, shape (1, 3, 5); got {out.device}, "
        f"{tuple(out.shape)}: create the vectors with device=ids.device, never a fixed one"
    )
    weight = other_device.to(torch.randn(5, 2))
    out = other_device.run(lambda: embeddings.embed_via_onehot(weight, ids))
    assert out.device.type == device and tuple(out.shape) == (1, 3, 2), (
        f"embed_via_onehot with the weight on {device} should answer on {device}, shape "
        f"(1, 3, 2); got {out.device}, {tuple(out.shape)}"
    )


@pytest.mark.parametrize("by_name", [False, True], ids=["positional", "by name"])
def test_embed_via_onehot_selects_rows(embeddings, by_name):
    weight = torch.randn(10, 4)  # E, (V, d)
    ids = torch.randint(0, 10, (2, 3))
    kept, kept_ids = weight.clone(), ids.clone()
    out = (embeddings.embed_via_onehot(weight=weight, ids=ids) if by_name
           else embeddings.embed_via_onehot(weight, ids))
    expected = F.embedding(ids, weight)  # (2, 3, 4)
    assert torch.equal(weight, kept) and torch.equal(ids, kept_ids), (
        "embed_via_onehot changed the weight or the ids it was given: leave them as they were"
    )
    assert out.shape == expected.shape, (
        f"expected shape (..., d) = {tuple(expected.shape)}, got {tuple(out.shape)}"
    )
    assert torch.equal(out, expected), (
        "expected one_hot(ids) @ E to be exactly the rows E[ids]: all the zeros contribute "
        f"nothing and the single 1 copies its row; largest difference "
        f"{(out - expected).abs().max().item():.3g}"
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16], ids=str)
def test_embed_via_onehot_keeps_the_weights_dtype(embeddings, dtype):
    weight = torch.randn(7, 3, dtype=torch.float64).to(dtype)
    ids = torch.tensor([6, 0, 6])
    out = embeddings.embed_via_onehot(weight, ids)
    assert out.dtype == dtype, (
        f"expected the weight's dtype, {dtype}, got {out.dtype}: build the one-hots in "
        "weight.dtype before multiplying"
    )
    assert torch.equal(out, weight[ids]), "expected rows 6, 0 and 6 of the weight, exactly"


def test_embed_via_onehot_is_a_product(embeddings):
    weight = torch.randn(6, 3)
    weight[5, 1] = float("inf")  # row 5: no id below selects it
    weight[4, 2] = float("nan")  # row 4 neither
    ids = torch.tensor([[0, 3], [2, 2]])
    out = embeddings.embed_via_onehot(weight, ids)
    expected = F.one_hot(ids, 6).to(weight.dtype) @ weight  # 0 * inf and 0 * nan are nan
    assert torch.equal(out.isnan(), expected.isnan()), (
        "expected columns 1 and 2 to be NaN: in the product one_hot(ids) @ E every row of E "
        "takes part, and 0 * inf (or 0 * NaN) is NaN, so rows 4 and 5, though no id selects "
        f"them, make their columns NaN; got {out.tolist()}. A lookup (weight[ids]) skips them: "
        "compute the product, every row of E takes part"
    )
    assert torch.equal(out[:, :, 0], weight[ids][:, :, 0]), "column 0 should be the rows' own"


def test_gradient_is_the_same_as_the_lookups(embeddings):
    weight = torch.randn(8, 5, requires_grad=True)
    ids = torch.tensor([[2, 2, 7], [0, 2, 5]])
    embeddings.embed_via_onehot(weight, ids).sum().backward()
    reference = weight.detach().clone().requires_grad_()
    F.embedding(ids, reference).sum().backward()
    assert weight.grad is not None, "no gradient reached the weight: keep it in the graph"
    assert torch.equal(weight.grad, reference.grad), (
        "the slow route should train the table exactly as the lookup does: expected gradient "
        f"rows {reference.grad[:, 0].tolist()}, got {weight.grad[:, 0].tolist()}"
    )


class _TorchFunctions(TorchFunctionMode):
    """The names of the torch functions that run while it is on (F.one_hot: "one_hot")."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.add(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def test_one_hot_is_written_by_hand(embeddings, rules, your_files):
    out = embeddings.one_hot(torch.tensor([2, 0]), 3)
    assert torch.equal(out, torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])), (
        "expected one_hot([2, 0], 3) to be [[0, 0, 1], [1, 0, 0]]"
    )
    with _TorchFunctions() as ran:  # what runs, as the grader watches it
        embeddings.one_hot(torch.tensor([[1, 3], [0, 2]]), 4)
    assert "one_hot" not in ran.names, (
        "F.one_hot ran while your one_hot ran (called by a library on your behalf?): build "
        "the vectors yourself, a row of zeros with a 1 at the id"
    )
    findings = rules.check(your_files, "onehot")  # the grader's own check of your source
    if findings:
        pytest.fail("the grader reads your files and would refuse these lines (see 'Rules' at "
                    "the top of embeddings.py):\n" + rules.explain(findings, limit=10, sep="\n"),
                    pytrace=False)
