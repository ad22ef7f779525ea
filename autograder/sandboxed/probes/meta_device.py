"""The meta device with the values kept behind it: how a machine without a GPU checks devices.

Code that creates its tensors on a fixed device (``device="cpu"``, ``.cpu()``) instead of its
inputs' device works on the CPU and breaks on a GPU. Without a GPU, the grader and the visible
tests run learner code on the meta device instead, where tensors have a shape but no values,
so a tensor made on, or moved to, another device shows. Correct code may read values though (a
range check); ``MetaWithValues`` keeps a CPU twin behind every meta tensor, so that it runs.

The grader's own module (autograder/sandboxed/probes/meta_device.py) is the single source; the
release copies it into exercises/tests/ for the visible tests. It imports only torch, and holds
no answer.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map


class _NoValues(Exception):
    """A meta tensor whose values are not known (one the learner's code made some other way)."""


def _meta_args(args: object) -> bool:
    """Whether an operator's arguments hold a meta tensor or name the meta device."""
    return any((isinstance(x, torch.Tensor) and x.device.type == "meta")
               or (isinstance(x, torch.device) and x.type == "meta") for x in tree_flatten(args)[0])


#: Operators that take a tensor on another device beside a GPU tensor on a real GPU too:
#: indexing with CPU indices, and copies between devices.
_CROSS_DEVICE = frozenset({"aten::index", "aten::index_put", "aten::index_put_",
                           "aten::_index_put_impl_", "aten::copy_", "aten::_to_copy"})


def _fixed_device_tensor(func: object, args: object) -> bool:
    """Whether an operator mixes a meta tensor with one of more than one number on a real
    device, which a GPU refuses (only a 0-d CPU tensor may meet a GPU tensor)."""
    if getattr(getattr(func, "_schema", None), "name", "") in _CROSS_DEVICE:
        return False
    return any(isinstance(x, torch.Tensor) and x.device.type != "meta" and x.dim() > 0
               for x in tree_flatten(args)[0])


def _functional(func: object) -> bool:
    """Whether an operator writes nothing and returns no view of its arguments: its meta
    result is fully known from its twins' (a new tensor of that shape and dtype)."""
    schema = getattr(func, "_schema", None)
    return schema is not None and not schema.is_mutable and not any(
        r.alias_info for r in schema.returns)


def _asks_real_device(args: object) -> bool:
    """Whether an operator's arguments name a device other than meta (a copy to the CPU)."""
    return any(isinstance(x, torch.device) and x.type != "meta" for x in tree_flatten(args)[0])


class MetaWithValues(TorchDispatchMode):
    """The meta device for the device checks, with the values kept behind it.

    Without a GPU, the suites check that learner code creates its tensors on its inputs'
    device (not a hard-coded one) by running it on the meta device, where tensors have a shape
    but no values. Correct code may read values though: a range check (``bool((ids < 0).any())``,
    ``int(ids.max())``, ``.tolist()``, ``ids[mask]``) works on every real device, and must not
    fail here. So every meta tensor keeps a twin on the CPU holding its values: each operator
    runs on the twins, and an operator that needs values (or a copy to the CPU) gets the
    twins' answer. One that writes into its arguments or returns a view of them runs on the
    meta tensors too, so that they change as on a GPU; any other gets its twins' answer back
    on the meta device, as its meta kernel would give it, without running that kernel (many
    import torch's reference implementations, sympy included, at their first call). The code
    then runs as it runs on the CPU, except for where its tensors live: only a tensor made on,
    or moved to, a fixed device shows, and it shows as on a GPU: an operator that meets it
    beside a meta tensor raises (a 0-d CPU tensor, CPU indices and copies between devices
    excepted, as on a GPU).
    """

    def __init__(self) -> None:
        super().__init__()
        self._twins: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # id(meta) -> (meta, CPU)

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Leave ``__torch_dispatch__`` as it is: by default torch wraps it to keep torch.compile
        out, and that wrapper's first call imports torch._dynamo (~3 s in every stage process).
        Nothing here is ever compiled."""
        return False

    def pair(self, meta: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """Give ``meta`` its values (kept alive with it, so its id is not reused)."""
        self._twins[id(meta)] = (meta, values)
        return meta

    def meta(self, t: torch.Tensor) -> torch.Tensor:
        """A meta tensor of ``t``'s shape and dtype, whose values are ``t``'s."""
        return self.pair(torch.empty(t.shape, dtype=t.dtype, device="meta"), t.clone())

    def move(self, module: nn.Module) -> nn.Module:
        """``module`` moved to the meta device, its parameters' and buffers' values kept. Each
        tensor is moved once, so one that two modules share (a tied head) stays one tensor;
        ``module.to("meta")`` would give each module its own copy."""
        moved: dict[int, torch.Tensor] = {}
        for sub in module.modules():
            for table in (sub._parameters, sub._buffers):
                for name, t in list(table.items()):
                    if t is None:
                        continue
                    if id(t) not in moved:
                        meta = torch.empty(t.shape, dtype=t.dtype, device="meta")
                        if isinstance(t, nn.Parameter):
                            meta = nn.Parameter(meta, requires_grad=t.requires_grad)
                        moved[id(t)] = self.pair(meta, t.detach().clone())
                    table[name] = moved[id(t)]
        return module

    def values(self, x: torch.Tensor) -> torch.Tensor | None:
        """The values behind the meta tensor ``x``, if known."""
        meta, values = self._twins.get(id(x), (None, None))
        return values if meta is x else None

    def _twin(self, x: object) -> object:
        """What ``x`` is in the twins' run: a meta tensor's values, the CPU for the meta device."""
        if isinstance(x, torch.Tensor) and x.device.type == "meta":
            values = self.values(x)
            if values is None:
                raise _NoValues
            return values
        if isinstance(x, torch.device) and x.type == "meta":
            return torch.device("cpu")
        return x

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not _meta_args((args, kwargs)):
            return func(*args, **kwargs)  # no meta tensor: runs as it is
        try:
            twins = func(*tree_map(self._twin, args), **tree_map(self._twin, kwargs))
        except Exception:  # noqa: BLE001 - no values to run on: the meta device alone decides
            return func(*args, **kwargs)
        fixed = _fixed_device_tensor(func, (args, kwargs))
        if _functional(func) and not fixed:
            return self._answer(twins, args, kwargs)  # no meta kernel needed (see below)
        try:
            out = func(*args, **kwargs)
        except Exception:  # noqa: BLE001 - an operator that needs values: the twins answer
            if fixed:
                raise  # a tensor made on a fixed device: on a GPU this raises too
            return self._answer(twins, args, kwargs)
        for o, twin in zip(tree_flatten(out)[0], tree_flatten(twins)[0], strict=False):
            if isinstance(o, torch.Tensor) and isinstance(twin, torch.Tensor) \
                    and o.device.type == "meta":
                self.pair(o, twin)
        return out

    def _answer(self, twins: object, args: tuple, kwargs: dict) -> object:
        """What an operator that the meta device cannot run (``.item()``, ``nonzero``, a copy
        to the CPU) returns: its twins' numbers as they are; a tensor it wrote in place as that
        tensor; a copy to a real device as the copy, values and all; any other tensor back on
        the meta device, with its values behind it."""
        given = [x for x in tree_flatten((args, kwargs))[0] if isinstance(x, torch.Tensor)]
        itself = {id(x): x for x in given if x.device.type != "meta"}  # written in place
        itself.update({id(self.values(x)): x for x in given if self.values(x) is not None})
        to_real_device = _asks_real_device((args, kwargs))

        def back(twin: object) -> object:
            if not isinstance(twin, torch.Tensor):
                return twin
            if id(twin) in itself:
                return itself[id(twin)]
            if to_real_device:
                return twin
            return self.pair(torch.empty(twin.shape, dtype=twin.dtype, device="meta"), twin)

        return tree_map(back, twins)


def on_meta(call: Callable[..., object], *inputs: torch.Tensor,
            module: nn.Module | None = None) -> object:
    """``call(*inputs)`` with the inputs, and ``module``'s parameters and buffers, moved to
    the meta device with their values kept behind them (``MetaWithValues``)."""
    mode = MetaWithValues()
    if module is not None:
        mode.move(module)
    metas = [mode.meta(t) for t in inputs]
    with mode:
        return call(*metas)
