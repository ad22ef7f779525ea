"""What PyTorch does with token ids of a narrow integer dtype, in the words every message uses.

Token ids may have any integer dtype, and two mistakes follow from it: a check made in the
ids' own dtype, where a vocabulary larger than the dtype holds wraps around, and a lookup that
does not widen them (``weight[ids]`` refuses int8 and int16 ids and reads uint8 ids as a
mask). The hidden suites' messages and the visible tests' (the release copies this file to
exercises/tests/) say both in the dtype that was sent, its numbers computed here, never
remembered: an int16 id is not told about uint8. torch is all it imports.
"""

from __future__ import annotations

import torch

#: The dtypes whose ids plain indexing and index_select do not take as they are.
NARROW = (torch.int8, torch.int16, torch.uint8)


def wraps(dtype: torch.dtype, V: int, what: str = "vocab_size") -> str:
    """Why a comparison made in the ids' own ``dtype`` refuses valid ids of ``V`` classes (no
    fix: each caller says its own); "" when ``dtype`` is no integer dtype or holds ``V``."""
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return ""
    top = torch.iinfo(dtype).max
    if V <= top:
        return ""
    low = int(torch.tensor(V).to(dtype))  # what V becomes next to ids of this dtype
    return (f"{what} = {V} does not fit in {dtype}: next to {dtype} ids it becomes {low}, so "
            f"the valid id {top} >= {V} is True in {dtype}")


def lookup(dtype: torch.dtype) -> str:
    """What a lookup that does not widen ``dtype`` ids does with them, then the fix; "" for
    the dtypes indexing takes as they are (int32, int64)."""
    if dtype == torch.uint8:
        trouble = (f"plain weight[ids] reads {dtype} ids as a mask, not as ids, and "
                   "index_select refuses them")
    elif dtype in NARROW:
        trouble = f"plain weight[ids] and index_select refuse {dtype} ids"
    else:
        return ""
    return f"{trouble}: widen them to int64 with ids.long() before the lookup"
