"""Stage 'embedding': other correct lookups, and the mistakes the hidden suite must name."""

#: A range check that reads the ids' values, with no special case for the meta device: the
#: meta pass must answer those reads (tests/test_meta_pass.py grades it both ways). Compared as
#: int64: in the ids' own dtype, vocab_size may wrap (see the mistake of that name).
_RANGE_CHECK = '''
    def check_ids(ids, vocab_size):
        if not isinstance(ids, torch.Tensor):
            raise TypeError(f"token ids must be a tensor, got {type(ids).__name__}")
        if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
            raise TypeError(f"token ids must be integers, got {ids.dtype}")
        wide = ids.long()
        bad = (wide < 0) | (wide >= vocab_size)
        if bad.any():
            raise IndexError(f"token id {int(wide[bad][0])} is outside [0, {vocab_size})")
'''

CORRECT = {
    # Exceptions of its own: caught by every except IndexError / except TypeError (issue 29:
    # the promised class is checked by hierarchy, not by name).
    "its own exceptions, subclasses of TypeError and IndexError": {
        "embeddings:check_ids": '''
        def check_ids(ids, vocab_size):
            class TokenTypeError(TypeError):
                pass

            class TokenIndexError(IndexError):
                pass

            if not isinstance(ids, torch.Tensor):
                raise TokenTypeError(f"token ids must be a tensor, got {type(ids).__name__}")
            if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
                raise TokenTypeError(f"token ids must be integers, got dtype {ids.dtype}")
            if ids.numel() == 0 or ids.device.type == "meta":
                return
            wide = ids.long()
            bad = (wide < 0) | (wide >= vocab_size)
            if bool(bad.any()):
                raise TokenIndexError(
                    f"token id {int(wide[bad][0])} is outside [0, {vocab_size})")
        ''',
    },
    "plain indexing": {
        "embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                return self.scale_output(self.weight[ids.long()])
        ''',
    },
    "gather": {
        "embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                flat = ids.reshape(-1, 1).long().expand(-1, self.d_model)
                rows = self.weight.gather(0, flat).reshape(*ids.shape, self.d_model)
                return self.scale_output(rows)
        ''',
    },
    "checks inline, randn init": {
        "embeddings:Embedding.forward": '''
            def forward(self, ids):
                if not isinstance(ids, torch.Tensor) or not (
                        ids.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)):
                    raise TypeError("ids must be an integer tensor")
                if ids.numel() and ids.device.type != "meta":
                    lo, hi = int(ids.min()), int(ids.max())
                    if lo < 0 or hi >= self.vocab_size:
                        bad = lo if lo < 0 else hi
                        raise IndexError(f"id {bad} not in [0, {self.vocab_size})")
                return self.scale_output(torch.index_select(self.weight, 0, ids.flatten().long()).view(*ids.shape, self.d_model))
        ''',
        "embeddings:Embedding.__init__": '''
            def __init__(self, vocab_size, d_model, std=0.02, scale=False):
                super().__init__()
                self.vocab_size, self.d_model, self.std, self.scale = vocab_size, d_model, std, scale
                self.weight = nn.Parameter(torch.randn(vocab_size, d_model))
                self.reset_parameters()
        ''',
    },
    # Class layouts of the learner's own: while another stage is graded, the scaffolds go into
    # the learner's Embedding whatever its bases, and must work there (tests/test_scaffolds.py
    # grades these on every stage).
    "a base class of their own holds the Parameter": {
        "embeddings:Embedding": '''
            class _Table(nn.Module):
                """A rows x width matrix of learned numbers, and the lookup of its rows."""

                def __init__(self, rows, width):
                    super().__init__()
                    self.weight = nn.Parameter(torch.empty(rows, width))

                def lookup(self, ids):
                    check_ids(ids, self.weight.shape[0])
                    flat = ids.reshape(-1).to(self.weight.device, torch.long)
                    return self.weight.index_select(0, flat).view(*ids.shape, self.weight.shape[1])


            class Embedding(_Table):
                """The chapter's Embedding, on top of a _Table."""

                def __init__(self, vocab_size, d_model, std=0.02, scale=False):
                    for name, value in (("vocab_size", vocab_size), ("d_model", d_model)):
                        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                            raise ValueError(f"{name} must be a positive int, got {value!r}")
                    super().__init__(vocab_size, d_model)
                    self.vocab_size, self.d_model, self.std, self.scale = vocab_size, d_model, std, scale
                    self.reset_parameters()

                def reset_parameters(self):
                    std = self.d_model ** -0.5 if self.std is None else self.std
                    with torch.no_grad():
                        self.weight.normal_(0.0, std)

                def scale_output(self, x):
                    return x * math.sqrt(self.d_model) if self.scale else x

                def forward(self, ids):
                    return self.scale_output(self.lookup(ids))

                def extra_repr(self):
                    return f"{self.vocab_size}, {self.d_model}, std={self.std}, scale={self.scale}"
        ''',
    },
    "a subclass of their own earlier Embedding": {
        "embeddings:Embedding": '''
            class Embedding(nn.Module):
                """First version: the table and its initialisation, no lookup yet."""

                def __init__(self, vocab_size, d_model, std=0.02, scale=False):
                    super().__init__()
                    self.vocab_size, self.d_model, self.std, self.scale = vocab_size, d_model, std, scale
                    self.weight = nn.Parameter(torch.zeros(vocab_size, d_model))
                    self.reset_parameters()

                def reset_parameters(self):
                    std = self.std
                    if std is None:
                        std = 1 / math.sqrt(self.d_model)
                    nn.init.normal_(self.weight, 0.0, std)

                def scale_output(self, x):
                    if not self.scale:
                        return x
                    return x * self.d_model ** 0.5


            class Embedding(Embedding):  # the same name again: the lookup, added to the first
                def forward(self, ids):
                    check_ids(ids, self.vocab_size)
                    return self.scale_output(self.weight[ids.long()])
        ''',
    },
    "mixins for the checks and the scaling": {
        "embeddings:Embedding": '''
            class _Checked:
                """Mixin: flat int64 ids, checked against self.vocab_size."""

                def __init__(self, *args, **kwargs):
                    super().__init__(*args, **kwargs)
                    self.checks = 0  # how many lookups were checked

                def _checked(self, ids):
                    check_ids(ids, self.vocab_size)
                    self.checks += 1
                    return ids.reshape(-1).long()


            class _Scaled:
                """Mixin: the optional sqrt(d_model) output scaling."""

                def scale_output(self, x):
                    return x * math.sqrt(self.d_model) if self.scale else x


            class Embedding(_Checked, _Scaled, nn.Module):
                def __init__(self, vocab_size, d_model, std=0.02, scale=False):
                    super().__init__()  # through _Checked to nn.Module
                    self.vocab_size, self.d_model, self.std, self.scale = vocab_size, d_model, std, scale
                    self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
                    self.reset_parameters()

                def reset_parameters(self):
                    std = self.std if self.std is not None else 1 / math.sqrt(self.d_model)
                    with torch.no_grad():
                        self.weight.copy_(torch.randn_like(self.weight) * std)

                def forward(self, ids):
                    flat = self._checked(ids).to(self.weight.device)
                    rows = RowLookup.apply(self.weight, flat)
                    return self.scale_output(rows.view(*ids.shape, self.d_model))
        ''',
    },
    "module-level helpers, a helper method and extra attributes": {
        "embeddings:Embedding": '''
            def _as_index(ids, device):
                """Flat int64 ids on the table's device (index_select refuses uint8 and int16)."""
                return ids.reshape(-1).to(device=device, dtype=torch.long)


            def _default_std(d_model, std):
                return 1.0 / math.sqrt(d_model) if std is None else std


            class Embedding(nn.Module):
                def __init__(self, vocab_size, d_model, std=0.02, scale=False):
                    super().__init__()
                    self.vocab_size, self.d_model, self.std, self.scale = vocab_size, d_model, std, scale
                    self.padding_idx = None  # not used: as nn.Embedding has one
                    self.register_buffer("lookups", torch.zeros((), dtype=torch.long),
                                         persistent=False)
                    self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
                    self.reset_parameters()

                def reset_parameters(self):
                    with torch.no_grad():
                        self.weight.normal_(0.0, _default_std(self.d_model, self.std))

                def scale_output(self, x):
                    return x * math.sqrt(self.d_model) if self.scale else x

                def _rows(self, ids):
                    check_ids(ids, self.vocab_size)
                    index = _as_index(ids, self.weight.device)
                    return self.weight.index_select(0, index).reshape(*ids.shape, self.d_model)

                def forward(self, ids):
                    self.lookups += 1
                    return self.scale_output(self._rows(ids))
        ''',
    },
    "the lookup as one_hot(ids) @ E, through their own embed_via_onehot": {
        "embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)  # the one-hot product is exact: 1 * w + 0s
                return self.scale_output(embed_via_onehot(self.weight, ids))
        ''',
    },
    "a __main__ self-check against F.embedding (dead code: not read)": {
        "embeddings:expected_dot_std": '''
            def expected_dot_std(std, d_model):
                return std**2 * math.sqrt(d_model)


            if __name__ == "__main__":  # python embeddings.py: compare with PyTorch's lookup
                import threading  # refused in live code, fine here: this block never runs
                import torch.nn.functional as F

                layer = Embedding(10, 4)
                ids = torch.tensor([[1, 2], [9, 1]])
                assert torch.equal(layer(ids), F.embedding(ids, layer.weight))  # F.embedding!
                print("the lookup matches F.embedding")
        ''',
    },
    "a natural range check that reads the ids' values, as int64": {
        "embeddings:check_ids": _RANGE_CHECK,
    },
    "the ids read as a Python list, looked up with index_select": {
        "embeddings:check_ids": '''
            def check_ids(ids, vocab_size):
                if not isinstance(ids, torch.Tensor) or ids.dtype not in (
                        torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
                    raise TypeError("token ids must be a tensor of integers")
                for token in ids.reshape(-1).tolist():
                    if not 0 <= token < vocab_size:
                        raise IndexError(f"id {token} is not in [0, {vocab_size})")
        ''',
        "embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                flat = ids.reshape(-1).to(device=self.weight.device, dtype=torch.long)
                rows = torch.index_select(self.weight, 0, flat)
                return self.scale_output(rows.reshape(ids.shape + (self.d_model,)))
        ''',
    },
}

MISTAKES = {
    "forward squeezes its output (ids of shape (1, 4) give (4, d))": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                rows = self.weight[ids.to(self.weight.device, torch.long)]
                return self.scale_output(rows).squeeze()  # "tidy" the batch dimension
        '''},
        "test_lookup_every_shape", "a batch of one sequence",
    ),
    # A class of its own that is only called IndexError: no except IndexError catches it.
    "its own exceptions, named TypeError and IndexError but derived from Exception": (
        {"embeddings:check_ids": '''
        def check_ids(ids, vocab_size):
            class TokenTypeError(TypeError):
                pass

            class IndexError(Exception):
                pass

            TokenIndexError = IndexError
            if not isinstance(ids, torch.Tensor):
                raise TokenTypeError(f"token ids must be a tensor, got {type(ids).__name__}")
            if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
                raise TokenTypeError(f"token ids must be integers, got dtype {ids.dtype}")
            if ids.numel() == 0 or ids.device.type == "meta":
                return
            wide = ids.long()
            bad = (wide < 0) | (wide >= vocab_size)
            if bool(bad.any()):
                raise TokenIndexError(
                    f"token id {int(wide[bad][0])} is outside [0, {vocab_size})")
        '''},
        "test_out_of_range_ids_are_refused", "should raise IndexError",
    ),
    "weight a plain tensor": (
        {"embeddings:Embedding.__init__": '''
            def __init__(self, vocab_size, d_model, std=0.02, scale=False):
                super().__init__()
                self.vocab_size, self.d_model, self.std, self.scale = vocab_size, d_model, std, scale
                self.weight = torch.empty(vocab_size, d_model, requires_grad=True)
                self.reset_parameters()
        '''},
        "test_weight_is_a_parameter", "nn.Parameter",
    ),
    "negative ids wrap": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                return self.scale_output(self.weight[ids])
        ''',
         "embeddings:check_ids": '''
            def check_ids(ids, vocab_size):
                if ids.is_floating_point() or ids.dtype == torch.bool:
                    raise TypeError("ids must be integers")
                if ids.numel() and ids.device.type != "meta" and int(ids.max()) >= vocab_size:
                    raise IndexError(f"id {int(ids.max())} >= {vocab_size}")
        '''},
        "test_out_of_range_ids_are_refused", "last row",
    ),
    "float ids accepted": (
        {"embeddings:check_ids": '''
            def check_ids(ids, vocab_size):
                ids = ids.long()
                if ids.numel() and ids.device.type != "meta":
                    bad = ids[(ids < 0) | (ids >= vocab_size)]
                    if bad.numel():
                        raise IndexError(f"id {int(bad[0])} outside [0, {vocab_size})")
        '''},
        "test_non_integer_ids_are_refused", "labels",
    ),
    "flattens the output": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                return self.scale_output(self.weight[ids.reshape(-1)])
        '''},
        "test_lookup_every_shape", "ids.shape + (d_model,)",
    ),
    "rows written one by one (no accumulated gradient)": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                flat = ids.reshape(-1)
                out = torch.zeros(flat.numel(), self.d_model, dtype=self.weight.dtype, device=self.weight.device)
                for i, t in enumerate(flat.tolist()):
                    out[i] = self.weight.detach()[t]
                return self.scale_output(out.view(*ids.shape, self.d_model))
        '''},
        "test_repeated_ids_accumulate_gradients", "weight.grad is None",
    ),
    "float32 output whatever the weight": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                return self.scale_output(self.weight[ids].float())
        '''},
        "test_meta_device_and_dtypes", "dtype",
    ),
    "hard-coded cpu": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                return self.scale_output(self.weight.to("cpu")[ids.to("cpu")])
        '''},
        "test_meta_device_and_dtypes", "hard-coded",
    ),
    # A hard-coded cpu that dodges the device pass by choosing its error there: the same call
    # runs on CPU tensors, so whatever it raises elsewhere is a device mistake.
    "hard-coded cpu, another error elsewhere": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                if ids.device.type != "cpu":
                    raise ValueError("these ids are not valid")
                return self.scale_output(self.weight.to("cpu")[ids.to("cpu")])
        '''},
        "test_meta_device_and_dtypes", "same call on CPU tensors ran",
    ),
    "hard-coded cpu, a bare assert elsewhere": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                assert str(ids.device) == "cpu"
                return self.scale_output(self.weight[ids])
        '''},
        "test_meta_device_and_dtypes", "AssertionError",
    ),
    "scales twice": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                rows = self.weight[ids]
                if self.scale:
                    rows = rows * self.d_model ** 0.5
                return self.scale_output(rows)
        '''},
        "test_scale_is_applied_once", "twice",
    ),
    "nn.functional.embedding": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                return self.scale_output(torch.nn.functional.embedding(ids, self.weight))
        '''},
        "test_no_builtin_embedding", "PyTorch's own embedding",
    ),
    "getattr-hidden embedding": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                fn = getattr(torch, "embed" + "ding")
                return self.scale_output(fn(self.weight, ids))
        '''},
        "test_no_builtin_embedding", "without naming it",
    ),
    "F.embedding in a helper in params.py": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                from .params import lookup  # a helper of their own, in another file
                check_ids(ids, self.vocab_size)
                return self.scale_output(lookup(self.weight, ids.long()))
        ''',
         "params:main": '''
            def main(argv=None):
                raise SystemExit("the calculator is not needed here")


            def lookup(weight, ids):
                return torch.nn.functional.embedding(ids, weight)
        '''},
        "test_no_builtin_embedding", "PyTorch's own embedding",
    ),
    "nn.Embedding inside the layer": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                table = nn.Embedding(self.vocab_size, self.d_model, _weight=self.weight)
                return self.scale_output(table(ids.long()))
        '''},
        "test_no_builtin_embedding", "PyTorch's own embedding",
    ),
    "a right lookup, but a refused import (threading)": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                import threading  # unused, but the grader cannot tell: refused
                check_ids(ids, self.vocab_size)
                return self.scale_output(self.weight[ids.long()])
        '''},
        "test_no_builtin_embedding", "import threading",
    ),
    # Right on small tables, wrong at the edges of the ids' dtype, which the hidden checks
    # send: it refuses every uint8 id of a 300-row table (300 wraps to 44 in uint8).
    "a range check made in the ids' own dtype (vocab_size wraps in uint8, int8, int16)": (
        {"embeddings:check_ids": '''
            def check_ids(ids, vocab_size):
                if not isinstance(ids, torch.Tensor):
                    raise TypeError(f"token ids must be a tensor, got {type(ids).__name__}")
                if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
                    raise TypeError(f"token ids must be integers, got {ids.dtype}")
                bad = (ids < 0) | (ids >= vocab_size)
                if bad.any():
                    raise IndexError(f"token id {int(ids[bad][0])} is outside [0, {vocab_size})")
        '''},
        "test_integer_dtypes_accepted", "torch.int8 ids it becomes -56",
    ),
    "a natural range check, then a hard-coded cpu": (
        {"embeddings:check_ids": _RANGE_CHECK,
         "embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                return self.scale_output(self.weight.cpu()[ids.cpu().long()])
        '''},
        "test_meta_device_and_dtypes", "hard-coded",
    ),
    "nn.Embedding's argument names (num_embeddings, embedding_dim)": (
        {"embeddings:Embedding.__init__": '''
            def __init__(self, num_embeddings, embedding_dim, std=0.02, scale=False):
                super().__init__()
                self.vocab_size, self.d_model, self.std, self.scale = (
                    num_embeddings, embedding_dim, std, scale)
                self.weight = nn.Parameter(torch.empty(num_embeddings, embedding_dim))
                self.reset_parameters()
        '''},
        "test_weight_is_a_parameter", "by name",
    ),
    "plain weight[ids] (int16 refused, uint8 read as a mask)": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                return self.scale_output(self.weight[ids])
        '''},
        "test_integer_dtypes_accepted", "refuse torch.int8 ids",
    ),
    "int8 ids refused": (
        {"embeddings:check_ids": '''
            def check_ids(ids, vocab_size):
                if not isinstance(ids, torch.Tensor) or ids.dtype not in (
                        torch.uint8, torch.int16, torch.int32, torch.int64):
                    raise TypeError(f"token ids must be integers, got {ids.dtype}")
                wide = ids.long()
                bad = (wide < 0) | (wide >= vocab_size)
                if ids.device.type != "meta" and bool(bad.any()):
                    raise IndexError(f"token id {int(wide[bad][0])} is outside [0, {vocab_size})")
        '''},
        "test_integer_dtypes_accepted", "so does check_ids",
    ),
    "rows reshaped with view(*ids.shape, -1) (an empty batch cannot be sized)": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                rows = self.weight.index_select(0, ids.reshape(-1).long())
                return self.scale_output(rows.view(*ids.shape, -1))
        '''},
        "test_lookup_every_shape", "shape (0,)",
    ),
    "ids.view(-1) (non-contiguous ids refused)": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                flat = ids.view(-1).long()
                rows = self.weight.index_select(0, flat)
                return self.scale_output(rows.view(*ids.shape, self.d_model))
        '''},
        "test_integer_dtypes_accepted", "non-contiguous",
    ),
    "the caller's ids changed in place (unsqueeze_)": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                shape = ids.shape
                index = ids.long().unsqueeze_(-1)  # .long() of int64 ids is the caller's tensor
                rows = self.weight.gather(0, index.reshape(-1, 1).expand(-1, self.d_model))
                return self.scale_output(rows.view(*shape, self.d_model))
        '''},
        "test_ids_are_left_unchanged", "changed the ids",
    ),
    "a list of ids raises AttributeError": (
        {"embeddings:check_ids": '''
            def check_ids(ids, vocab_size):
                if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
                    raise TypeError(f"token ids must be integers, got {ids.dtype}")
                wide = ids.long()
                bad = (wide < 0) | (wide >= vocab_size)
                if ids.device.type != "meta" and bool(bad.any()):
                    raise IndexError(f"token id {int(wide[bad][0])} is outside [0, {vocab_size})")
        '''},
        "test_non_integer_ids_are_refused", "not a tensor",
    ),
    "complex ids accepted": (
        {"embeddings:check_ids": '''
            def check_ids(ids, vocab_size):
                if not isinstance(ids, torch.Tensor):
                    raise TypeError("token ids must be a tensor")
                if ids.dtype == torch.bool or ids.is_floating_point():
                    raise TypeError(f"token ids must be integers, got {ids.dtype}")
                wide = ids.long()
                bad = (wide < 0) | (wide >= vocab_size)
                if ids.device.type != "meta" and bool(bad.any()):
                    raise IndexError(f"token id {int(wide[bad][0])} is outside [0, {vocab_size})")
        '''},
        "test_non_integer_ids_are_refused", "complex",
    ),
    "float16 ids accepted (only float32 and float64 refused)": (
        {"embeddings:check_ids": '''
            def check_ids(ids, vocab_size):
                if not isinstance(ids, torch.Tensor):
                    raise TypeError("token ids must be a tensor")
                if ids.dtype in (torch.bool, torch.float32, torch.float64) or ids.is_complex():
                    raise TypeError(f"token ids must be integers, got {ids.dtype}")
                wide = ids.long()
                bad = (wide < 0) | (wide >= vocab_size)
                if ids.device.type != "meta" and bool(bad.any()):
                    raise IndexError(f"token id {int(wide[bad][0])} is outside [0, {vocab_size})")
        '''},
        "test_non_integer_ids_are_refused", "float16",
    ),
    "check_ids' vocab_size renamed (V)": (
        {"embeddings:check_ids": '''
            def check_ids(ids, V):
                if not isinstance(ids, torch.Tensor):
                    raise TypeError("token ids must be a tensor")
                if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
                    raise TypeError(f"token ids must be integers, got {ids.dtype}")
                wide = ids.long()
                bad = (wide < 0) | (wide >= V)
                if ids.device.type != "meta" and bool(bad.any()):
                    raise IndexError(f"token id {int(wide[bad][0])} is outside [0, {V})")
        '''},
        "test_out_of_range_ids_are_refused", "by name",
    ),
    "the range check in forward, none in check_ids": (
        {"embeddings:check_ids": '''
            def check_ids(ids, vocab_size):
                if not isinstance(ids, torch.Tensor):
                    raise TypeError("token ids must be a tensor")
                if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
                    raise TypeError(f"token ids must be integers, got {ids.dtype}")
        ''',
         "embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                wide = ids.long()
                bad = (wide < 0) | (wide >= self.vocab_size)
                if ids.device.type != "meta" and bool(bad.any()):
                    raise IndexError(f"token id {int(wide[bad][0])} is outside "
                                     f"[0, {self.vocab_size})")
                return self.scale_output(self.weight[wide])
        '''},
        "test_out_of_range_ids_are_refused", "check_ids(",
    ),
}


# --- given code changed -----------------------------------------------------------------------
# The grader runs its own copy of the given code and nn.Module's own methods
# (autograder/sandboxed/given.py); test_layer_as_you_wrote_it also runs the learner's layer as
# they wrote it, and says that given code (or nn.Module's behaviour) was changed.

_LOOKUP = '''
    def forward(self, ids):
        check_ids(ids, self.vocab_size)
        return self.scale_output(self.weight[ids.long()])
'''

MISTAKES.update({
    "given code changed: load_state_dict overridden (it loads nothing)": (
        {"embeddings:Embedding.extra_repr": '''
            def extra_repr(self):
                return f"{self.vocab_size}, {self.d_model}, std={self.std}, scale={self.scale}"

            def load_state_dict(self, state_dict, strict=True, assign=False):
                return None  # the weight is initialised already
        '''},
        "test_layer_as_you_wrote_it", "your class changes what nn.Module does",
    ),
    "given code changed: double() overridden (the layer stays float32)": (
        {"embeddings:Embedding.extra_repr": '''
            def extra_repr(self):
                return f"{self.vocab_size}, {self.d_model}, std={self.std}, scale={self.scale}"

            def double(self):
                return self  # float32 is precise enough
        '''},
        "test_layer_as_you_wrote_it", "your class changes what nn.Module does",
    ),
    "given code changed: the lookup in __call__, forward only calls it": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                return self(ids)

            def __call__(self, ids):
                check_ids(ids, self.vocab_size)
                return self.scale_output(self.weight[ids.long()])
        '''},
        "test_layer_as_you_wrote_it", "only through code outside",
    ),
    "given code changed: RowLookup's backward copies instead of adding": (
        {"embeddings:Embedding.forward": '''
            def forward(self, ids):
                check_ids(ids, self.vocab_size)
                flat = ids.reshape(-1).to(self.weight.device, torch.long)
                rows = RowLookup.apply(self.weight, flat)
                return self.scale_output(rows.view(*ids.shape, self.d_model))
        ''',
         "embeddings:RowLookup.backward": '''
            @staticmethod
            def backward(ctx, grad):
                (index,) = ctx.saved_tensors
                grad_weight = grad.new_zeros(ctx.vocab_size, grad.shape[1])
                return grad_weight.index_copy_(0, index, grad), None
        '''},
        "test_layer_as_you_wrote_it", "given code was changed",
    ),
    # Issue 29: std=None decided in the constructor, where reset_parameters cannot see it.
    "std=None mapped to 0.02 in the constructor": (
        {"embeddings:Embedding.__init__": '''
            def __init__(self, vocab_size, d_model, std=0.02, scale=False):
                super().__init__()
                for name, value in (("vocab_size", vocab_size), ("d_model", d_model)):
                    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                        raise ValueError(f"{name} must be a positive int, got {value!r}")
                if std is not None and not std >= 0:
                    raise ValueError(f"std must be >= 0 or None, got {std!r}")
                self.vocab_size = vocab_size
                self.d_model = d_model
                self.std = std
                self.scale = scale
                if self.std is None:
                    self.std = 0.02  # "no std given: GPT-2's"
                self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
                self.reset_parameters()
        '''},
        "test_weight_is_a_parameter", "once built, the layer's std is 0.02, not None",
    ),
    "check_ids reads ids.min() and ids.max() (no ids at all raise)": (
        {"embeddings:check_ids": '''
            def check_ids(ids, vocab_size):
                if not isinstance(ids, Tensor):
                    raise TypeError(f"token ids must be a torch.Tensor, got {type(ids).__name__}")
                if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
                    raise TypeError(f"token ids must be integers, got dtype {ids.dtype}")
                low, high = int(ids.min()), int(ids.max())  # max() of nothing raises
                if low < 0 or high >= vocab_size:
                    bad = low if low < 0 else high
                    raise IndexError(f"token id {bad} is outside [0, {vocab_size})")
        '''},
        "test_integer_dtypes_accepted", "but these ids are valid",
    ),
})
