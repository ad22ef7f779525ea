"""Stage 'embedding': other correct lookups, and the mistakes the hidden suite must name."""

CORRECT = {
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
                return self.scale_output(torch.index_select(self.weight, 0, ids.flatten().long()).view(*ids.shape, -1))
        ''',
        "embeddings:Embedding.__init__": '''
            def __init__(self, vocab_size, d_model, std=0.02, scale=False):
                super().__init__()
                self.vocab_size, self.d_model, self.std, self.scale = vocab_size, d_model, std, scale
                self.weight = nn.Parameter(torch.randn(vocab_size, d_model))
                self.reset_parameters()
        ''',
    },
}

MISTAKES = {
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
        "test_no_builtin_embedding", "PyTorch's own embedding",
    ),
}
