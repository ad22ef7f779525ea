"""The inputs the sweeps of stages embedding, onehot and neighbours share: ids at the edges.

Token ids may have any integer dtype (the stubs' docstrings say so), and every value a dtype
holds is an id when the table is large enough. A check written in the ids' own dtype is right
on small tables and wrong on large ones: in uint8, ``vocab_size = 300`` wraps to 44, so
``ids >= 300`` is True for every id. So each narrow dtype is sent with a vocabulary larger
than its largest value, and ids that reach that value.
"""

from __future__ import annotations

import torch

from autograder.suites import id_dtypes

#: The integer dtypes token ids may have, in the order the dtype checks try them.
INTEGER_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
#: For each integer dtype ids may have, a vocabulary larger than the dtype's largest value
#: where one fits in a test (int8 127 < 200, uint8 255 < 300, int16 32767 < 33,000); int32 and
#: int64 hold any V, so theirs only goes past int16's range.
EDGE_VOCAB: dict[torch.dtype, int] = {
    torch.int8: 200, torch.uint8: 300, torch.int16: 33_000, torch.int32: 70_000,
    torch.int64: 70_000,
}


def top_id(dtype: torch.dtype, V: int, last: int | None = None) -> int:
    """The largest id both ``dtype`` and the vocabulary hold (``last`` if given: V - 1 unless
    a test keeps the last class out)."""
    return min(torch.iinfo(dtype).max, V - 1 if last is None else last)


def edge_ids(gen: torch.Generator, dtype: torch.dtype, V: int, shape: tuple[int, ...],
             last: int | None = None) -> torch.Tensor:
    """Random ids of ``shape`` in ``dtype``, up to ``top_id``, holding that largest id and 0
    at random places (``shape`` has at least two elements)."""
    top = top_id(dtype, V, last)
    ids = torch.randint(0, top + 1, shape, generator=gen).reshape(-1)
    places = torch.randperm(ids.numel(), generator=gen)[:2]
    ids[places[0]], ids[places[1]] = top, 0
    return ids.reshape(shape).to(dtype)


def wraps(dtype: torch.dtype, V: int) -> bool:
    """Whether ``V`` is past what ``dtype`` holds (a comparison in that dtype wraps)."""
    return bool(id_dtypes.wraps(dtype, V))


def wrap_hint(dtype: torch.dtype, V: int, what: str = "vocab_size", fix: str = "") -> str:
    """Why valid ids of ``dtype`` were refused with ``V`` classes, in the dtype that was sent
    (``id_dtypes.wraps``; empty when ``V`` fits in ``dtype``), then ``fix``, what to do
    instead (by default, compare as int64)."""
    if not wraps(dtype, V):
        return ""
    return (f"; {id_dtypes.wraps(dtype, V, what)}: a comparison or an arange made in the ids' "
            "own dtype wraps around; " + (fix or f"compare them as int64, ids.long() >= {what}"))
