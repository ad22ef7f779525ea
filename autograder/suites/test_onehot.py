"""Hidden tests, stage 'onehot': one_hot(ids) @ E selects the rows of E.

Compared with lumen on fresh seeded inputs, exactly (torch.equal) in every dtype: a one-hot
vector holds only zeros and ones, so the product adds exact zeros to one copied number and
even float32 or bfloat16 has no rounding to forgive. Every failure says what was expected and
the likely mistake, in the chapter's words.

Every point is earned by the values (and the dtype, device and shape) the learner's code
returns on fresh ids; the one exception is the F.one_hot ban, judged from the submitted source
as well (``autograder/bans.py``), outside the learner's reach.
"""

from __future__ import annotations

import torch

from autograder import bans
from autograder.feedback import (
    Mistake,
    describe_error,
    expect_tensor,
    first_difference,
    unwrap,
    unwrap_meta,
)
from lumen import embeddings as ref

STAGE = "onehot"
MODULE = "embeddings"
SHAPES = {(): "a single id (0-D)", (6,): "a sequence (1-D)", (2, 5): "a batch (2-D)"}


def _other_devices(devices: list[str]) -> list[str]:
    """Where to check that results stay on the inputs' device: the GPU, else the meta device."""
    return [d for d in devices if d != "cpu"] or ["meta"]


def _one_hot(learner, seed: int, ids: torch.Tensor, V: int, device: str = "cpu",
             dtype: str | None = None, watch: bool = False) -> tuple[dict, str]:
    """The learner's ``one_hot(ids, V[, dtype])`` on ``device``: (probe result, description);
    ``watch``: with the torch functions and ATen operators it ran."""
    asked = f", dtype=torch.{dtype}" if dtype else ""
    what = f"one_hot(ids of shape {tuple(ids.shape)}, num_classes={V}{asked}) on {device}"
    outcome = learner.call("one_hot", seed=seed, ids=ids, num_classes=V, dtype=dtype,
                           device=device, watch=watch)
    return (unwrap_meta if device == "meta" else unwrap)(outcome, what, MODULE), what


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


def test_one_hot_rows(learner, seed, gen, devices):
    """one_hot(ids, V) has a single 1 at each id, shape ids.shape + (V,), on every device"""
    V = 9
    for shape, name in SHAPES.items():
        ids = torch.randint(0, V, shape, generator=gen)
        for device in devices:
            result, what = _one_hot(learner, seed, ids, V, device)
            out = expect_tensor(result["out"], what, device=device)
            if tuple(out.shape) != (*shape, V):
                raise Mistake(f"{what} ({name}): shape {tuple(out.shape)}, expected "
                              f"{(*shape, V)} = ids.shape + (num_classes,): one vector of "
                              "length V per id, whatever the ids' shape")
            _check_rows(out, ids, V, what)


def test_num_classes_is_given(learner, seed, gen):
    """the vectors have num_classes entries even when the ids lack the last tokens"""
    V = 12
    for shape in ((5,), (2, 3)):
        ids = torch.randint(0, V - 4, shape, generator=gen)  # the top 4 classes never occur
        result, what = _one_hot(learner, seed, ids, V)
        out = expect_tensor(result["out"], what, device="cpu")
        if tuple(out.shape) != (*shape, V):
            guessed = tuple(out.shape) == (*shape, int(ids.max()) + 1)
            raise Mistake(
                f"{what}: shape {tuple(out.shape)}, expected {(*shape, V)}"
                + (f": your num_classes is ids.max() + 1 = {int(ids.max()) + 1}, guessed from "
                   "the ids (F.one_hot's default when num_classes is left out)" if guessed else "")
                + ". A batch that lacks the last token still has V classes: use num_classes, "
                "never the ids, for the length"
            )
        _check_rows(out, ids, V, what)


def test_one_hot_written_by_hand(learner, seed, gen, grading):
    """one_hot builds the vectors itself: no F.one_hot

    Passes only when (1) one_hot gives the right vectors on fresh ids, (2) the submitted files,
    read here with lumen/rules.py, name F.one_hot nowhere in live code and hold none of the
    refused constructs that could hide a call from the grader, and (3) the recorder in the
    learner's process saw no one_hot operator run, in any thread. (2) is out of the learner's
    reach; (3) can only add a finding, never earn the point (``autograder/bans.py``).
    """
    V = 10
    ids = torch.randint(0, V, (2, 4), generator=gen)
    result, what = _one_hot(learner, seed, ids, V, watch=True)
    out = expect_tensor(result["out"], what, device="cpu")
    if tuple(out.shape) != (2, 4, V) or not torch.equal(out.double(), ref.one_hot(ids, V).double()):
        raise Mistake(f"{what} does not give the one-hot vectors yet (see the first check), so "
                      "there is nothing to judge here")
    bans.judge(grading.files, STAGE, result,
               f"{what} calls PyTorch's F.one_hot: the point of the stage is to build the "
               "vectors yourself, a row of zeros with a 1 at the id (torch.zeros plus "
               "scatter_, or a comparison with torch.arange(num_classes))")


def test_one_hot_dtype(learner, seed, gen):
    """the vectors are floats: float32 by default, else the dtype asked for"""
    V = 7
    ids = torch.randint(0, V, (3, 2), generator=gen)
    for dtype in (None, "float64", "float16", "bfloat16"):
        result, what = _one_hot(learner, seed, ids, V, dtype=dtype)
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
    ids = torch.randint(0, V, (2, 3), generator=gen)
    for device in _other_devices(devices):
        result, what = _one_hot(learner, seed, ids, V, device)
        out = expect_tensor(result["out"], what, device=device)
        if tuple(out.shape) != (2, 3, V) or out.dtype != torch.float32:
            raise Mistake(f"{what}: shape {tuple(out.shape)} and dtype {out.dtype}, expected "
                          f"{(2, 3, V)} and torch.float32")
        if device != "meta":
            _check_rows(out, ids, V, what)


def _embed(learner, seed: int, weight: torch.Tensor, ids: torch.Tensor,
           device: str = "cpu") -> tuple[object, str]:
    """The learner's ``embed_via_onehot(weight, ids)`` on ``device``: (output, description)."""
    V, d = weight.shape
    what = (f"embed_via_onehot(weight {V} x {d} {weight.dtype}, ids of shape "
            f"{tuple(ids.shape)}) on {device}")
    outcome = learner.call("embed_via_onehot", seed=seed, weight=weight, ids=ids, device=device)
    error = outcome.error
    if (error is not None and not error.get("not_implemented") and device != "meta"
            and weight.dtype != torch.float32 and "type" in error["message"].lower()):
        raise Mistake(f"{what} raised {describe_error(error)}: a float32 one-hot times a "
                      f"{weight.dtype} weight mixes dtypes; build the one-hot in the weight's "
                      "dtype, one_hot(ids, V, weight.dtype)")
    result = (unwrap_meta if device == "meta" else unwrap)(outcome, what, MODULE)
    return result["out"], what


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
    """embed_via_onehot(E, ids) equals E[ids] exactly, in float32 and float64, on every device"""
    V, d = 13, 5
    for dtype in (torch.float32, torch.float64):
        # rows of very different sizes: a rounding detour shows in the last digits
        weight = (torch.randn(V, d, generator=gen, dtype=torch.float64)
                  * 10.0 ** torch.randint(-3, 4, (V, 1), generator=gen)).to(dtype)
        for shape, name in SHAPES.items():
            ids = torch.randint(0, V, shape, generator=gen)
            expected = weight[ids]
            for device in devices:
                out, what = _embed(learner, seed, weight, ids, device)
                out = expect_tensor(out, what, device=device)
                if tuple(out.shape) != tuple(expected.shape):
                    raise Mistake(f"{what} ({name}): shape {tuple(out.shape)}, expected "
                                  f"{tuple(expected.shape)} = ids.shape + (d,): the (..., V) "
                                  "one-hot times the (V, d) weight")
                expect_tensor(out, what, like=expected)
                if not torch.equal(out, expected):
                    raise _differs(out, weight, ids, what)


def test_embed_via_onehot_dtype_and_device(learner, seed, gen, devices):
    """embed_via_onehot keeps the weight's dtype (bfloat16, float16) and device (GPU or meta)"""
    V, d = 11, 4
    ids = torch.randint(0, V, (2, 3), generator=gen)
    for dtype in (torch.bfloat16, torch.float16):
        weight = torch.randn(V, d, generator=gen).to(dtype)
        out, what = _embed(learner, seed, weight, ids)
        out = expect_tensor(out, what, like=weight[ids], device="cpu")
        if not torch.equal(out, weight[ids]):
            raise _differs(out, weight, ids, what)
    weight = torch.randn(V, d, generator=gen)
    for device in _other_devices(devices):
        out, what = _embed(learner, seed, weight, ids, device)
        out = expect_tensor(out, what, device=device)
        if tuple(out.shape) != (2, 3, d):
            raise Mistake(f"{what}: shape {tuple(out.shape)}, expected {(2, 3, d)}")
        if device != "meta" and not torch.equal(out, weight[ids]):
            raise _differs(out, weight, ids, what)

