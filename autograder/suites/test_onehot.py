"""Hidden tests, stage 'onehot': one_hot(ids) @ E selects the rows of E.

Compared with lumen on fresh seeded inputs, exactly (torch.equal) in every dtype: the product
adds exact zeros to one copied number, so even bfloat16 has no rounding to forgive. Every
failure says what was expected and the likely mistake, in the chapter's words. The ids never
hold the last class, V - 1 (except in the ban's test, which judges the ban alone), so a length
guessed from ids.max() + 1 always shows.

Every point is earned by what the learner's code returns on fresh ids (values, dtype, device,
shape), except the F.one_hot ban, judged from the submitted source alone
(``autograder/suites/bans.py``). Two checks earn their points behind the rules
(``bans.certify``; docs/threat-model.md): that the inputs are left as they were, and that
embed_via_onehot is a product (its NaN columns, which only a costlier imitation gives too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from autograder.suites import bans
from autograder.suites.feedback import (
    Mistake,
    check_signature,
    checked_devices,
    describe_error,
    expect_tensor,
    expect_unchanged,
    first_difference,
    same,
    unwrap,
    unwrap_on,
)
from autograder.suites.promises.sweeps import (
    EDGE_VOCAB,
    INTEGER_DTYPES,
    edge_ids,
    top_id,
    wrap_hint,
)
from lumen import embeddings as ref

if TYPE_CHECKING:
    from autograder.boundary.session import Outcome

STAGE = "onehot"
MODULE = "embeddings"
SHAPES = {(): "a single id (0-D)", (6,): "a sequence (1-D)", (2, 5): "a batch (2-D)",
          (0,): "no ids at all (empty)", (1, 4): "a batch of one sequence",
          (3, 1): "sequences of one id each"}
#: The vocabularies of the sweep at the edges of the ids' dtypes, at most LARGEST classes: a
#: one-hot may be built from the rows of a V x V identity, which 33,000 classes would make
#: 4 GB, so int16's range is passed only by stages embedding and neighbours.
LARGEST = 1_000
EDGES = {dtype: min(V, LARGEST) for dtype, V in EDGE_VOCAB.items()}
ONE_HOT = "one_hot(ids, num_classes, dtype=torch.float32)"
EMBED = "embed_via_onehot(weight, ids)"

#: Each hidden test -> the visible tests (exercises/tests/test_onehot.py) that check the same
#: requirement on other inputs (tests/test_requirements.py holds every hidden test to one).
VISIBLE: dict[str, tuple[str, ...]] = {
    "test_one_hot_rows": ("test_one_hot_matches_pytorch",),
    "test_ids_and_weight_are_left_unchanged": ("test_one_hot_leaves_the_ids_alone",
                                       "test_embed_via_onehot_selects_rows"),
    "test_num_classes_is_given": ("test_num_classes_is_given_not_guessed",),
    "test_one_hot_written_by_hand": ("test_one_hot_is_written_by_hand",),
    "test_one_hot_dtype": ("test_one_hot_matches_pytorch", "test_one_hot_dtype"),
    "test_one_hot_device": ("test_results_follow_the_inputs_device",),
    "test_integer_ids_accepted": ("test_every_integer_dtype_and_layout",
                                  "test_ids_at_the_edges_of_their_dtype"),
    "test_embed_via_onehot_is_the_lookup": ("test_embed_via_onehot_selects_rows",
                                            "test_embed_via_onehot_keeps_the_weights_dtype"),
    "test_embed_via_onehot_dtype_and_device": ("test_embed_via_onehot_keeps_the_weights_dtype",
                                               "test_results_follow_the_inputs_device"),
    "test_embed_via_onehot_is_a_product": ("test_embed_via_onehot_is_a_product",),
}


def _ids(gen: torch.Generator, V: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Random ids of ``shape`` from 0 to V - 2: the last class never occurs, so the vectors'
    length must come from num_classes (ids.max() + 1 is always too short)."""
    return torch.randint(0, V - 1, shape, generator=gen)


def _one_hot(learner, seed: int, ids: torch.Tensor, V: int, device: str = "cpu",
             dtype: str | None = None, watch: bool = False, layout: str | None = None,
             positional: int | None = 2) -> tuple[dict | None, str]:
    """The learner's ``one_hot(ids, V[, dtype])`` on ``device``, ``dtype`` by name unless
    ``positional`` says otherwise (see probes._call): (probe result, description). On the meta
    device, None when it fails on the CPU too (``feedback.unwrap_on``)."""
    names = ("ids", "num_classes", "dtype")
    shown = [f"ids of shape {tuple(ids.shape)}", str(V)] + ([f"torch.{dtype}"] if dtype else [])
    split = len(shown) if positional is None else positional
    arguments = shown[:split] + [f"{n}={v}" for n, v in
                                 zip(names[split:], shown[split:], strict=False)]
    what = f"one_hot({', '.join(arguments)}) on {device}"
    def call(device: str) -> Outcome:
        return learner.call("one_hot", seed=seed, ids=ids, num_classes=V, dtype=dtype,
                            device=device, watch=watch, layout=layout, positional=positional)

    outcome = call(device)
    check_signature(outcome, what, ONE_HOT)
    return unwrap_on(device, call, what, MODULE, outcome), what


def _check_rows(out: torch.Tensor, ids: torch.Tensor, V: int, what: str) -> None:
    """``out`` must hold a single 1 at each id's position and zeros elsewhere."""
    expected = ref.one_hot(ids, V, torch.float64)
    got = out.to(torch.float64)  # values only: the dtype has its own test
    if torch.equal(got, expected):
        return
    rows, want = got.reshape(-1, V), expected.reshape(-1, V)
    bad = int((rows != want).any(dim=1).nonzero()[0])
    token = int(ids.reshape(-1)[bad])
    ones = [int(i) for i in rows[bad].nonzero().flatten()]
    found = f"ones at positions {ones}" if ones else "no 1 at all"
    if ones == [token]:
        found = f"its 1 right, but other values wrong {first_difference(rows[bad], want[bad])}"
    raise Mistake(f"{what}: the vector for id {token} has {found}; expected a single 1 at "
                  f"position {token} and zeros everywhere else")


def _check_shape(out: torch.Tensor, ids: torch.Tensor, V: int, what: str) -> None:
    """``out`` has shape ids.shape + (V,); a length of ids.max() + 1 is named."""
    shape = (*ids.shape, V)
    if tuple(out.shape) == shape:
        return
    guessed = ids.numel() > 0 and tuple(out.shape) == (*ids.shape, int(ids.max()) + 1)
    raise Mistake(
        f"{what}: shape {tuple(out.shape)}, expected {shape} = ids.shape + (num_classes,)"
        + (f": your num_classes is ids.max() + 1 = {int(ids.max()) + 1}, guessed from "
           "the ids (F.one_hot's default when num_classes is left out)" if guessed else "")
        + ". One vector of length V per id, whatever the ids' shape: a batch that lacks the "
        "last token still has V classes, so the length comes from num_classes, never the ids"
    )


def test_one_hot_rows(learner, seed, gen, devices):
    """one_hot(ids, V) has a single 1 at each id, shape ids.shape + (V,), on every device"""
    V = 9
    for shape, name in SHAPES.items():
        ids = _ids(gen, V, shape)
        for device in devices:
            result, what = _one_hot(learner, seed, ids, V, device)
            what = f"{what} ({name})"
            out = expect_tensor(result["out"], what, device=device)
            _check_shape(out, ids, V, what)
            _check_rows(out, ids, V, what)


def test_num_classes_is_given(learner, seed, gen):
    """the vectors have num_classes entries even when the ids lack the last tokens

    num_classes given by position and by name."""
    V = 12
    for shape, positional in (((5,), 2), ((2, 3), 0)):
        ids = torch.randint(0, V - 4, shape, generator=gen)  # the top 4 classes never occur
        result, what = _one_hot(learner, seed, ids, V, positional=positional)
        out = expect_tensor(result["out"], what, device="cpu")
        _check_shape(out, ids, V, what)
        _check_rows(out, ids, V, what)


def test_one_hot_written_by_hand(learner, seed, gen, grading):
    """one_hot builds the vectors itself: no F.one_hot

    Passes only when (1) one_hot gives the right vectors on fresh ids and (2) the submitted
    files, all three (they all run in this stage's process), read here with autograder/rules/,
    name F.one_hot nowhere in live code, use no module that calls it for you
    (torch.distributions) and hold none of the constructs that could call it without naming it
    (``bans.ONEHOT``). (2) is out of the learner's reach; the recorder in the learner's process
    only explains a failure (``autograder/suites/bans.py``). The ids hold every class once, so
    that only the ban is judged here.
    """
    V = 10
    ids = torch.randperm(V, generator=gen).reshape(2, 5)
    result, what = _one_hot(learner, seed, ids, V, watch=True)
    out = expect_tensor(result["out"], what, device="cpu")
    if tuple(out.shape) != (2, 5, V) or not torch.equal(out.double(), ref.one_hot(ids, V).double()):
        raise Mistake(f"{what} does not give the one-hot vectors yet (see the first check), so "
                      "there is nothing to judge here")
    bans.judge(grading.files, bans.ONEHOT, result,
               f"{what} calls PyTorch's F.one_hot: the point of the stage is to build the "
               "vectors yourself, a row of zeros with a 1 at the id (torch.zeros plus "
               "scatter_, or a comparison with torch.arange(num_classes))")


def test_one_hot_dtype(learner, seed, gen):
    """the vectors are floats: float32 by default, else the dtype asked for

    The dtype given by position and by name."""
    V = 7
    ids = _ids(gen, V, (3, 2))
    for dtype, positional in ((None, 2), ("float64", None), ("float16", 2), ("bfloat16", None)):
        result, what = _one_hot(learner, seed, ids, V, dtype=dtype, positional=positional)
        out = expect_tensor(result["out"], what, device="cpu")
        want = getattr(torch, dtype or "float32")
        if not out.dtype.is_floating_point:
            raise Mistake(f"{what} has dtype {out.dtype}: one-hot vectors get multiplied by a "
                          "weight matrix, so they must be floats (float32 unless a dtype is "
                          "asked for), not the int64 of F.one_hot or .long(), nor bools")
        if out.dtype != want:
            raise Mistake(
                f"{what} has dtype {out.dtype}, expected {want}: "
                + ("float32 is the default" if dtype is None else
                   "create the vectors with dtype=dtype (embed_via_onehot asks for the weight's)")
            )
        if tuple(out.shape) == (3, 2, V):
            _check_rows(out, ids, V, what)


def test_one_hot_device(learner, seed, gen, devices):
    """the vectors are created on the ids' device (checked on the GPU, else the meta device)"""
    V = 8
    ids = _ids(gen, V, (2, 3))
    result, what = _one_hot(learner, seed, ids, V)  # the values, on the CPU
    out = expect_tensor(result["out"], what, device="cpu")
    _check_shape(out, ids, V, what)
    _check_rows(out, ids, V, what)
    for device in checked_devices(devices):
        result, what = _one_hot(learner, seed, ids, V, device)
        if result is None:
            continue  # it fails on the CPU as well: the CPU checks judge it
        out = expect_tensor(result["out"], what, device=device)
        if tuple(out.shape) != (2, 3, V) or out.dtype != torch.float32:
            raise Mistake(f"{what}: shape {tuple(out.shape)} and dtype {out.dtype}, expected "
                          f"{(2, 3, V)} and torch.float32")
        if device != "meta":
            _check_rows(out, ids, V, what)


def _layouts() -> list[tuple[torch.dtype, str | None]]:
    """Every integer dtype, then ids that are not contiguous (see probes._arranged)."""
    return [(dtype, None) for dtype in INTEGER_DTYPES] + [
        (torch.int64, "transposed"), (torch.int32, "strided"), (torch.uint8, "transposed")]


def _dtype_mistake(outcome, what: str, layout: str | None) -> None:
    """A Mistake when a call on ids of another integer dtype or layout raised."""
    error = outcome.error
    if error is None or error.get("not_implemented"):
        return
    raise Mistake(
        f"{what} raised {describe_error(error)}: ids of every integer dtype are token ids. "
        "Widen them to int64 (ids.long()) where an operation needs it: scatter_ and "
        "index_select refuse int8, int16 and uint8 indices, and indexing reads uint8 ids as a "
        "mask" + ("; and flatten with reshape, never view, which fails on non-contiguous "
                  "tensors" if layout else "")
    )


def test_integer_ids_accepted(learner, seed, gen):
    """one_hot and embed_via_onehot take ids of every integer dtype, contiguous or not, up to
    the largest value their dtype holds

    int8, int16, int32, int64 and uint8; transposed and strided ids; then each dtype with more
    classes than its range holds where one fits (uint8 ids up to 255 with 300 classes)."""
    V, d = 9, 3
    ids = _ids(gen, V, (3, 4))
    weight = torch.randn(V, d, generator=gen)
    for dtype, layout in _layouts():
        how = f"{dtype} ids" + (f", non-contiguous ({layout}: the same values, laid out "
                                "otherwise)" if layout else "")
        outcome = learner.call("one_hot", seed=seed, ids=ids.to(dtype), num_classes=V,
                               layout=layout)
        what = f"one_hot({how}, {V})"
        _dtype_mistake(outcome, what, layout)
        out = expect_tensor(unwrap(outcome, what, MODULE)["out"], what, device="cpu")
        _check_shape(out, ids, V, what)
        _check_rows(out, ids, V, what)
        outcome = learner.call("embed_via_onehot", seed=seed, weight=weight, ids=ids.to(dtype),
                               layout=layout)
        what = f"embed_via_onehot(weight {V} x {d}, {how})"
        _dtype_mistake(outcome, what, layout)
        out = expect_tensor(unwrap(outcome, what, MODULE)["out"], what, like=weight[ids])
        if not torch.equal(out, weight[ids]):
            raise _differs(out, weight, ids, what)
    _integer_ids_at_their_edges(learner, seed, gen)


def _integer_ids_at_their_edges(learner, seed: int, gen: torch.Generator) -> None:
    """Ids up to the largest value of their dtype, with more classes than that dtype holds
    where one fits (``EDGES``): every one is valid, and a comparison or an arange made in the
    ids' own dtype wraps around. The last class stays out, as in ``_ids``."""
    for dtype, V in EDGES.items():
        ids = edge_ids(gen, dtype, V, (2, 3), last=V - 2)
        shown = f"{dtype} ids {ids.tolist()} (the largest, {top_id(dtype, V, V - 2)}, a valid id)"
        weight = torch.randn(V, 2, generator=gen)
        for probe, arguments, what in (
            ("one_hot", {"num_classes": V}, f"one_hot({shown}, {V})"),
            ("embed_via_onehot", {"weight": weight}, f"embed_via_onehot(weight {V} x 2, {shown})"),
        ):
            outcome = learner.call(probe, seed=seed, ids=ids, **arguments)
            error = outcome.error
            if error is not None and not error.get("not_implemented"):
                raise Mistake(f"{what} raised {describe_error(error)}: every id from 0 to "
                              f"{V - 1} is valid, whatever the ids' dtype"
                              + (wrap_hint(dtype, V, "num_classes") or "; widen them with "
                                 "ids.long()"))
            out = expect_tensor(unwrap(outcome, what, MODULE)["out"], what, device="cpu")
            if probe == "one_hot":
                _check_shape(out, ids, V, what)
                _check_rows(out, ids, V, what + wrap_hint(dtype, V, "num_classes"))
            else:
                expect_tensor(out, what, like=weight[ids.long()])
                if not torch.equal(out, weight[ids.long()]):
                    raise Mistake(f"{_differs(out, weight, ids.long(), what)}"
                                  f"{wrap_hint(dtype, V, 'num_classes')}")


def _embed(learner, seed: int, weight: torch.Tensor, ids: torch.Tensor, device: str = "cpu",
           positional: int | None = None) -> tuple[dict | None, str]:
    """The learner's ``embed_via_onehot(weight, ids)`` on ``device`` (by name with
    ``positional=0``): (probe result, description); on the meta device None when the call
    shows nothing about devices: it fails on the CPU too (``feedback.unwrap_on``)."""
    V, d = weight.shape
    arguments = (f"weight {V} x {d} {weight.dtype}", f"ids of shape {tuple(ids.shape)}")
    if positional == 0:
        arguments = tuple(f"{n}={a}" for n, a in zip(("weight", "ids"), arguments, strict=True))
    what = f"embed_via_onehot({', '.join(arguments)}) on {device}"
    def call(device: str) -> Outcome:
        return learner.call("embed_via_onehot", seed=seed, weight=weight, ids=ids,
                            device=device, positional=positional)

    outcome = call(device)
    check_signature(outcome, what, EMBED)
    error = outcome.error
    if (error is not None and not error.get("not_implemented") and device != "meta"
            and weight.dtype != torch.float32 and "type" in error["message"].lower()):
        raise Mistake(f"{what} raised {describe_error(error)}: a float32 one-hot times a "
                      f"{weight.dtype} weight mixes dtypes; build the one-hot in the weight's "
                      "dtype, one_hot(ids, V, weight.dtype)")
    return unwrap_on(device, call, what, MODULE, outcome), what


def _differs(out: torch.Tensor, weight: torch.Tensor, ids: torch.Tensor, what: str) -> Mistake:
    """Why ``out`` is not ``weight[ids]``, in the chapter's words."""
    expected = weight[ids]
    if weight.dtype == torch.float64 and torch.equal(out, weight.float().double()[ids]):
        return Mistake(f"{what}: the rows come back rounded to float32 precision "
                       f"{first_difference(out, expected)}: the product went through float32 "
                       "(a .float(), or a float32 one-hot); keep everything in the weight's dtype")
    return Mistake(f"{what}: differs from the lookup weight[ids] "
                   f"{first_difference(out, expected)}. A one-hot vector times E copies one row "
                   "exactly (the zeros add nothing, the 1 multiplies exactly), so the numbers "
                   "must be identical to weight[ids]")


def test_embed_via_onehot_is_the_lookup(learner, seed, gen, devices):
    """embed_via_onehot(E, ids) equals E[ids] exactly, in float32 and float64, on every device

    Called by position and by name."""
    V, d = 13, 5
    for dtype in (torch.float32, torch.float64):
        # rows of very different sizes: a rounding detour shows in the last digits
        weight = (torch.randn(V, d, generator=gen, dtype=torch.float64)
                  * 10.0 ** torch.randint(-3, 4, (V, 1), generator=gen)).to(dtype)
        for n, (shape, name) in enumerate(SHAPES.items()):
            ids = _ids(gen, V, shape)
            expected = weight[ids]
            for device in devices:
                positional = 0 if n == 1 else None  # once by name: weight=..., ids=...
                result, what = _embed(learner, seed, weight, ids, device, positional)
                out = expect_tensor(result["out"], what, device=device)
                if tuple(out.shape) != tuple(expected.shape):
                    raise Mistake(f"{what} ({name}): shape {tuple(out.shape)}, expected "
                                  f"{tuple(expected.shape)} = ids.shape + (d,): the (..., V) "
                                  "one-hot times the (V, d) weight")
                expect_tensor(out, what, like=expected)
                if not torch.equal(out, expected):
                    raise _differs(out, weight, ids, what)


def test_ids_and_weight_are_left_unchanged(learner, seed, gen, grading):
    """one_hot and embed_via_onehot leave the ids and the weight they are given as they were

    What the inputs hold afterwards is reported by the learner's process, so its points depend
    on the rules (``bans.certify``)."""
    V, d = 9, 4
    for shape, name in SHAPES.items():
        ids = _ids(gen, V, shape)
        result, what = _one_hot(learner, seed, ids, V)
        _judged(result["out"], ref.one_hot(ids, V), what, "one-hot vectors", "test_one_hot_rows")
        expect_unchanged(result, {"ids": ids}, f"{what} ({name})")
        weight = torch.randn(V, d, generator=gen)
        result, what = _embed(learner, seed, weight, ids)
        _judged(result["out"], weight[ids], what, "rows", "test_embed_via_onehot_is_the_lookup")
        expect_unchanged(result, {"weight": weight, "ids": ids}, f"{what} ({name})")
    bans.certify(grading.files, "the ids and the weight left as they were")


def _judged(out: object, expected: torch.Tensor, what: str, things: str, check: str) -> None:
    """Only a call that returns the right values is judged for what it does to its inputs."""
    if not isinstance(out, torch.Tensor) or not same(out, expected):
        raise Mistake(f"{what} does not return the right {things} yet (see {check}), so there "
                      "is nothing to judge here")


def test_embed_via_onehot_dtype_and_device(learner, seed, gen, devices):
    """embed_via_onehot keeps the weight's dtype (bfloat16, float16) and device (GPU or meta)"""
    V, d = 11, 4
    ids = _ids(gen, V, (2, 3))
    for dtype in (torch.bfloat16, torch.float16):
        weight = torch.randn(V, d, generator=gen).to(dtype)
        result, what = _embed(learner, seed, weight, ids)
        out = expect_tensor(result["out"], what, like=weight[ids], device="cpu")
        if not torch.equal(out, weight[ids]):
            raise _differs(out, weight, ids, what)
    weight = torch.randn(V, d, generator=gen)
    for device in checked_devices(devices):
        result, what = _embed(learner, seed, weight, ids, device)
        if result is None:
            continue  # it fails on the CPU as well: the CPU checks judge it
        out = expect_tensor(result["out"], what, device=device)
        if tuple(out.shape) != (2, 3, d):
            raise Mistake(f"{what}: shape {tuple(out.shape)}, expected {(2, 3, d)}")
        if device != "meta" and not torch.equal(out, weight[ids]):
            raise _differs(out, weight, ids, what)


def test_embed_via_onehot_is_a_product(learner, seed, gen, grading):
    """embed_via_onehot computes the product one_hot(ids) @ E: every row of E takes part

    Values alone cannot tell a product from the lookup it equals, but floating point can: in a
    true product each output number is a sum over all V rows, so a row that holds inf (or NaN)
    turns its column into NaN even where the one-hot has a 0 for it (0 * inf is NaN); a lookup
    never reads that row. Checked on the CPU, whose products (matmul, einsum, a broadcast
    multiply and sum) all follow IEEE 754 here. A lookup that sets the columns of non-finite
    rows to NaN gives the same numbers, but costs more than the product it imitates; the
    points depend on the rules (``bans.certify``), like every check of the process's output."""
    V, d = 12, 5
    rows = [int(r) for r in torch.randperm(V, generator=gen)]
    infinite, undefined = rows[0], rows[1]  # rows that no id selects
    chosen = torch.tensor([r for r in rows[2:] if r != V - 1])  # nor the last class (_ids)
    for dtype in (torch.float32, torch.float64):
        weight = torch.randn(V, d, generator=gen).to(dtype)
        columns = [int(c) for c in torch.randperm(d, generator=gen)[:2]]
        weight[infinite, columns[0]] = torch.inf
        weight[undefined, columns[1]] = torch.nan
        ids = chosen[torch.randint(0, chosen.numel(), (2, 3), generator=gen)]
        # the product, term by term: each output number sums onehot[v] * E[v, j] over every v
        expected = (ref.one_hot(ids, V, dtype).unsqueeze(-1) * weight).sum(dim=-2)
        result, what = _embed(learner, seed, weight, ids)
        what += (f", where row {infinite} holds inf and row {undefined} NaN, rows that no id "
                 "selects")
        out = expect_tensor(result["out"], what, like=expected, device="cpu")
        if same(out, expected):
            continue
        if torch.equal(torch.nan_to_num(out), torch.nan_to_num(expected)):
            raise Mistake(
                f"{what}: the NaN and inf of the product became finite numbers (nan_to_num, or "
                "a mask): return one_hot(ids) @ E as it is, every row of E takes part and "
                "0 * inf is NaN")
        if torch.equal(out, weight[ids]):
            raise Mistake(
                f"{what}: returned the rows weight[ids] without a NaN, as a lookup does. The "
                "product one_hot(ids) @ E lets every row of E take part: 0 * inf and 0 * NaN "
                f"are NaN, so columns {sorted(columns)} must be NaN. Compute the product, "
                "every row of E takes part (the chapter's point: the one-hot route does V times "
                "the work of the lookup, for the same numbers)"
            )
        raise Mistake(f"{what}: differs from one_hot(ids) @ E {first_difference(out, expected)}")
    bans.certify(grading.files, "the product one_hot(ids) @ E")
