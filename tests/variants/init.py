"""Stage 'init': other correct initialisations, and the mistakes the hidden suite must name."""

CORRECT = {
    "nn.init.normal_, parameters by name": {
        "embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                std = self.std
                if std is None:
                    std = self.d_model ** -0.5
                nn.init.normal_(self.weight, mean=0.0, std=std)
        ''',
        "embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                return x * self.d_model ** 0.5 if self.scale else x
        ''',
        "embeddings:expected_dot_std": '''
            def expected_dot_std(std, d_model):
                return std * std * d_model ** 0.5
        ''',
        "gpt2:GPT2.init_weights": '''
            def init_weights(self):
                n = self.config.n_layers
                for name, p in self.named_parameters():
                    if name == "wte.weight":
                        nn.init.normal_(p, 0.0, 0.02)
                    elif name == "wpe.weight":
                        nn.init.normal_(p, 0.0, 0.01)
                    elif name.endswith("bias"):
                        nn.init.zeros_(p)
                    elif ".ln_" in name or name.startswith("ln_"):
                        nn.init.ones_(p)
                    elif name.endswith("c_proj.weight"):
                        nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n))
                    else:
                        nn.init.normal_(p, 0.0, 0.02)
        ''',
    },
    # scale off: x's own values are what matters, a copy of them too (the docstring says so).
    "scale_output: a copy when off, torch.mul when on": {
        "embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                if not self.scale:
                    return x.clone()
                return torch.mul(x, math.sqrt(self.d_model))
        ''',
    },
    "randn * std, copied in under no_grad": {
        "embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                std = 1 / math.sqrt(self.d_model) if self.std is None else self.std
                with torch.no_grad():
                    self.weight.copy_(torch.randn(self.vocab_size, self.d_model) * std)
        ''',
        "embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                if self.scale:
                    x = x * torch.sqrt(torch.tensor(float(self.d_model)))
                return x
        ''',
        "embeddings:expected_dot_std": '''
            def expected_dot_std(std, d_model):
                return math.sqrt(d_model * std ** 4)
        ''',
        "gpt2:GPT2.init_weights": '''
            def init_weights(self):
                with torch.no_grad():
                    for name, module in self.named_modules():
                        if isinstance(module, nn.Linear):
                            std = 0.02
                            if name.split(".")[-1] == "c_proj":
                                std /= math.sqrt(2 * self.config.n_layers)
                            module.weight.copy_(torch.randn_like(module.weight) * std)
                            if module.bias is not None:
                                module.bias.zero_()
                        elif isinstance(module, nn.LayerNorm):
                            module.weight.fill_(1.0)
                            module.bias.fill_(0.0)
                    self.wte.weight.copy_(torch.randn_like(self.wte.weight) * 0.02)
                    self.wpe.weight.copy_(torch.randn_like(self.wpe.weight) * 0.01)
        ''',
    },
    "normal_ in place, embeddings through reset_parameters": {
        "embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                if self.std is not None:
                    std = self.std
                else:
                    std = math.pow(self.d_model, -0.5)
                self.weight.data.normal_(mean=0.0, std=std)
        ''',
        "embeddings:expected_dot_std": '''
            def expected_dot_std(std, d_model):
                return float(std ** 2 * torch.tensor(float(d_model), dtype=torch.float64).sqrt())
        ''',
        "gpt2:GPT2.init_weights": '''
            def init_weights(self):
                for module in self.modules():
                    if isinstance(module, nn.Linear):
                        module.weight.data.normal_(0.0, 0.02)
                        if module.bias is not None:
                            module.bias.data.zero_()
                    elif isinstance(module, nn.LayerNorm):
                        module.reset_parameters()  # scale 1, shift 0
                for block in self.blocks:
                    for proj in (block.attn.c_proj, block.mlp.c_proj):
                        proj.weight.data.normal_(0.0, 0.02 / (2 * self.config.n_layers) ** 0.5)
                self.wte.std, self.wpe.std = 0.02, 0.01
                self.wte.reset_parameters()
                self.wpe.reset_parameters()
        ''',
    },
    # Helpers of the learner's own (tests/test_scaffolds.py grades these on every stage).
    "module-level helpers, a helper method, imported across modules": {
        "embeddings:expected_dot_std": '''
            def _spread(std, d_model):
                """The std of a sum of d_model products of two N(0, std^2) numbers."""
                return math.sqrt(d_model) * std ** 2


            def fill_normal_(tensor, std):
                """Refill ``tensor`` in place with N(0, std^2) draws."""
                with torch.no_grad():
                    return tensor.normal_(mean=0.0, std=std)


            def expected_dot_std(std, d_model):
                return _spread(std, d_model)
        ''',
        "embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                fill_normal_(self.weight, self._init_std())

            def _init_std(self):
                return 1 / math.sqrt(self.d_model) if self.std is None else self.std
        ''',
        "gpt2:GPT2.init_weights": '''
            def init_weights(self):
                from .embeddings import fill_normal_

                residual = 0.02 / math.sqrt(2 * self.config.n_layers)
                for name, module in self.named_modules():
                    if isinstance(module, nn.Linear):
                        self._init_linear(module, residual if name.endswith(".c_proj") else 0.02)
                    elif isinstance(module, nn.LayerNorm):
                        module.reset_parameters()  # scale 1, shift 0
                fill_normal_(self.wte.weight, 0.02)
                fill_normal_(self.wpe.weight, 0.01)

            def _init_linear(self, linear, std):
                nn.init.normal_(linear.weight, 0.0, std)
                if linear.bias is not None:
                    nn.init.zeros_(linear.bias)
        ''',
    },
}

MISTAKES = {
    "scale_output squeezes x (a batch of one loses its dimension)": (
        {"embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                x = x.squeeze()
                if not self.scale:
                    return x
                return x * math.sqrt(self.d_model)
        '''},
        "test_scale_output", "x of shape (1, 4, 9)",
    ),
    "std ignored: N(0, 1)": (
        {"embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                with torch.no_grad():
                    self.weight.normal_()
        '''},
        "test_reset_parameters_uses_std", "ignores std",
    ),
    "std=None falls back to 0.02": (
        {"embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                std = 0.02 if self.std is None else self.std
                with torch.no_grad():
                    self.weight.normal_(0.0, std)
        '''},
        "test_std_none_means_inverse_sqrt_d", "fell back to GPT-2's 0.02",
    ),
    "std=None as 1/d_model": (
        {"embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                std = 1 / self.d_model if self.std is None else self.std
                with torch.no_grad():
                    self.weight.normal_(0.0, std)
        '''},
        "test_std_none_means_inverse_sqrt_d", "1/d_model instead of 1/sqrt(d_model)",
    ),
    "`self.std or ...` treats std=0.0 as None": (
        {"embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                std = self.std or 1 / math.sqrt(self.d_model)
                with torch.no_grad():
                    self.weight.normal_(0.0, std)
        '''},
        "test_std_none_means_inverse_sqrt_d", "`self.std is None`",
    ),
    "zero init": (
        {"embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                with torch.no_grad():
                    self.weight.zero_()
        '''},
        "test_rows_are_not_identical", "symmetry never breaks",
    ),
    "reset replaces the Parameter": (
        {"embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                std = self.std if self.std is not None else 1 / math.sqrt(self.d_model)
                self.weight = nn.Parameter(torch.randn(self.vocab_size, self.d_model) * std)
        '''},
        "test_reset_refills_in_place", "new Parameter",
    ),
    "normal_ outside torch.no_grad (autograd refuses the in-place fill)": (
        {"embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                std = self.std if self.std is not None else 1.0 / math.sqrt(self.d_model)
                self.weight.normal_(0.0, std)
        '''},
        "test_reset_parameters_uses_std", "Fill it inside torch.no_grad()",
    ),
    "scale not applied": (
        {"embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                return x
        '''},
        "test_scale_output", "returned x unchanged",
    ),
    "scale applied twice": (
        {"embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                if self.scale:
                    x = x * math.sqrt(self.d_model)
                    x = x * math.sqrt(self.d_model)
                return x
        '''},
        "test_scale_output", "applied twice",
    ),
    # Right for float64 rows (all the rows the check sent before the sweep), wrong for others.
    "scale_output computed in float64 (x.double())": (
        {"embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                if not self.scale:
                    return x
                return x.double() * math.sqrt(self.d_model)
        '''},
        "test_scale_output", "rows, expected torch.float32, x's own",
    ),
    # Right for (B, T, d) rows, wrong for one row or four dimensions.
    "scale_output's width read as x.shape[2]": (
        {"embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                return x * math.sqrt(x.shape[2]) if self.scale else x
        '''},
        "test_scale_output", "multiplied x by about 2, expected sqrt(d_model)",
    ),
    "scaled even when scale=False": (
        {"embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                return x * math.sqrt(self.d_model)
        '''},
        "test_scale_output", "scale=False",
    ),
    "dot std with std instead of std^2": (
        {"embeddings:expected_dot_std": '''
            def expected_dot_std(std, d_model):
                return std * math.sqrt(d_model)
        '''},
        "test_expected_dot_std", "std instead of std**2",
    ),
    "dot std with d instead of sqrt(d)": (
        {"embeddings:expected_dot_std": '''
            def expected_dot_std(std, d_model):
                return std**2 * d_model
        '''},
        "test_expected_dot_std", "d instead of sqrt(d)",
    ),
    "wpe at 0.02": (
        {"gpt2:GPT2.init_weights": '''
            def init_weights(self):
                for name, module in self.named_modules():
                    if isinstance(module, nn.Linear):
                        std = 0.02
                        if name.endswith("c_proj"):
                            std /= math.sqrt(2 * self.config.n_layers)
                        nn.init.normal_(module.weight, 0.0, std)
                        if module.bias is not None:
                            nn.init.zeros_(module.bias)
                nn.init.normal_(self.wte.weight, 0.0, 0.02)
                nn.init.normal_(self.wpe.weight, 0.0, 0.02)
        '''},
        "test_gpt2_weight_stds", "positions at 0.01",
    ),
    "c_proj without 1/sqrt(2 n_layers)": (
        {"gpt2:GPT2.init_weights": '''
            def init_weights(self):
                for module in self.modules():
                    if isinstance(module, nn.Linear):
                        nn.init.normal_(module.weight, 0.0, 0.02)
                        if module.bias is not None:
                            nn.init.zeros_(module.bias)
                nn.init.normal_(self.wte.weight, 0.0, 0.02)
                nn.init.normal_(self.wpe.weight, 0.0, 0.01)
        '''},
        "test_gpt2_weight_stds", "1/sqrt(2 * n_layers)",
    ),
    "biases left at nn.Linear's default": (
        {"gpt2:GPT2.init_weights": '''
            def init_weights(self):
                for name, module in self.named_modules():
                    if isinstance(module, nn.Linear):
                        std = 0.02
                        if name.endswith("c_proj"):
                            std /= math.sqrt(2 * self.config.n_layers)
                        nn.init.normal_(module.weight, 0.0, std)
                nn.init.normal_(self.wte.weight, 0.0, 0.02)
                nn.init.normal_(self.wpe.weight, 0.0, 0.01)
        '''},
        "test_gpt2_biases_and_layernorm", "not all zeros",
    ),
    "every .weight drawn, LayerNorm scales too": (
        {"gpt2:GPT2.init_weights": '''
            def init_weights(self):
                for name, p in self.named_parameters():
                    if name.endswith("bias"):
                        nn.init.zeros_(p)
                    elif name.endswith("c_proj.weight"):
                        nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * self.config.n_layers))
                    else:
                        nn.init.normal_(p, 0.0, 0.01 if name == "wpe.weight" else 0.02)
        '''},
        "test_gpt2_biases_and_layernorm", "LayerNorm starts as the identity",
    ),
    "uniform draws with the right std": (
        {"embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                std = self.std if self.std is not None else 1 / math.sqrt(self.d_model)
                bound = std * math.sqrt(3)  # U(-a, a) has std a / sqrt(3)
                with torch.no_grad():
                    self.weight.uniform_(-bound, bound)
        '''},
        "test_reset_parameters_uses_std", "not normally distributed",
    ),
    "every entry +-std, random signs": (
        {"embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                std = self.std if self.std is not None else 1 / math.sqrt(self.d_model)
                signs = torch.randint(0, 2, self.weight.shape) * 2 - 1
                with torch.no_grad():
                    self.weight.copy_(signs * std)
        '''},
        "test_reset_parameters_uses_std", "not normally distributed",
    ),
    "reset puts a new float32 tensor in .data": (
        {"embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                std = self.std if self.std is not None else 1 / math.sqrt(self.d_model)
                self.weight.data = torch.randn(self.vocab_size, self.d_model) * std
        '''},
        "test_reset_refills_in_place", "no longer float64",
    ),
    "scale_output cut off from autograd (detach)": (
        {"embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                if not self.scale:
                    return x
                return x.detach() * math.sqrt(self.d_model)
        '''},
        "test_scale_output", "no gradient reaches x",
    ),
    "scale_output in place (x.mul_)": (
        {"embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                if self.scale:
                    x.mul_(math.sqrt(self.d_model))
                return x
        '''},
        "test_scale_output_leaves_its_input", "changed its input x in place",
    ),
    "expected_dot_std's parameters renamed": (
        {"embeddings:expected_dot_std": '''
            def expected_dot_std(sigma, d):
                return sigma**2 * math.sqrt(d)
        '''},
        "test_expected_dot_std", "expected_dot_std(std, d_model)",
    ),
    "init over the blocks only: lm_head left at nn.Linear's default": (
        {"gpt2:GPT2.init_weights": '''
            def init_weights(self):
                residual = 0.02 / math.sqrt(2 * self.config.n_layers)
                for block in self.blocks:
                    for name, module in block.named_modules():
                        if isinstance(module, nn.Linear):
                            std = residual if name.endswith("c_proj") else 0.02
                            nn.init.normal_(module.weight, 0.0, std)
                            nn.init.zeros_(module.bias)
                nn.init.normal_(self.wte.weight, 0.0, 0.02)
                nn.init.normal_(self.wpe.weight, 0.0, 0.01)
        '''},
        "test_gpt2_weight_stds", "lm_head.weight from N(0, 0.02^2) too",
    ),
    "init_weights with uniform draws of GPT-2's stds": (
        {"gpt2:GPT2.init_weights": '''
            def init_weights(self):
                def uniform(weight, std):
                    nn.init.uniform_(weight, -std * math.sqrt(3), std * math.sqrt(3))

                residual = 0.02 / math.sqrt(2 * self.config.n_layers)
                for name, module in self.named_modules():
                    if isinstance(module, nn.Linear):
                        uniform(module.weight, residual if name.endswith("c_proj") else 0.02)
                        if module.bias is not None:
                            nn.init.zeros_(module.bias)
                    elif isinstance(module, nn.LayerNorm):
                        nn.init.ones_(module.weight)
                        nn.init.zeros_(module.bias)
                uniform(self.wte.weight, 0.02)
                uniform(self.wpe.weight, 0.01)
        '''},
        "test_gpt2_weight_stds", "not normally distributed",
    ),
    "init_weights puts new float32 tensors in .data": (
        {"gpt2:GPT2.init_weights": '''
            def init_weights(self):
                residual = 0.02 / math.sqrt(2 * self.config.n_layers)
                for name, module in self.named_modules():
                    if isinstance(module, nn.Linear):
                        std = residual if name.endswith("c_proj") else 0.02
                        module.weight.data = torch.randn(module.weight.shape) * std
                        if module.bias is not None:
                            module.bias.data = torch.zeros(module.bias.shape)
                    elif isinstance(module, nn.LayerNorm):
                        nn.init.ones_(module.weight)
                        nn.init.zeros_(module.bias)
                self.wte.weight.data = torch.randn(self.wte.weight.shape) * 0.02
                self.wpe.weight.data = torch.randn(self.wpe.weight.shape) * 0.01
        '''},
        "test_gpt2_weight_stds", "is torch.float32 afterwards",
    ),
}


# --- given code changed -----------------------------------------------------------------------
# The grader runs its own copy of the given code (autograder/sandboxed/given.py); the two
# "as you wrote it" tests build the learner's Embedding and GPT2 with their own constructors,
# and say that given code was changed.

#: lumen's Embedding.__init__ (the given lines and the solution), then ``{after}``.
_EMBEDDING_INIT = '''
    def __init__(self, vocab_size, d_model, std=0.02, scale=False):
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("d_model", d_model)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{{name}} must be a positive int, got {{value!r}}")
        if std is not None and not std >= 0:
            raise ValueError(f"std must be >= 0 or None, got {{std!r}}")
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.std = std
        self.scale = scale
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
        {after}
'''

#: lumen's GPT2.__init__ up to its layers, then ``{after}``.
_GPT2_INIT = '''
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = Embedding(config.vocab_size, config.d_model)
        self.wpe = Embedding(config.n_ctx, config.d_model)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        {after}
'''

MISTAKES.update({
    "given code changed: reset_parameters' draw redrawn after the call in __init__": (
        {"embeddings:Embedding.__init__": _EMBEDDING_INIT.format(
            after="self.reset_parameters()\n        nn.init.normal_(self.weight, 0.0, 0.02)  # GPT-2's")},
        "test_embedding_keeps_its_draw_as_you_wrote_it", "does not keep what reset_parameters drew",
    ),
    "given code changed: __init__ draws inline, never calls reset_parameters": (
        {"embeddings:Embedding.__init__": _EMBEDDING_INIT.format(
            after="with torch.no_grad():\n"
                  "            self.weight.normal_(0.0, 1 / math.sqrt(d_model) if std is None else std)")},
        "test_embedding_keeps_its_draw_as_you_wrote_it", "never calls reset_parameters",
    ),
    "given code changed: GPT2.__init__ never calls init_weights": (
        {"gpt2:GPT2.__init__": _GPT2_INIT.format(after="self.tie_weights()")},
        "test_gpt2_keeps_its_initialisation_as_you_wrote_it", "never calls init_weights",
    ),
    "given code changed: GPT2.__init__ redraws the positions after init_weights": (
        {"gpt2:GPT2.__init__": _GPT2_INIT.format(
            after="self.init_weights()\n        self.tie_weights()\n"
                  "        nn.init.normal_(self.wpe.weight, 0.0, 0.02)")},
        "test_gpt2_keeps_its_initialisation_as_you_wrote_it", "wpe.weight is not what init_weights drew",
    ),
    # Issue 29: init_weights run again on a changed model.
    "init_weights leaves the LayerNorms to their constructor": (
        {"gpt2:GPT2.init_weights": '''
            def init_weights(self):
                residual_std = 0.02 / math.sqrt(2 * self.config.n_layers)
                for name, module in self.named_modules():
                    if isinstance(module, nn.Linear):
                        std = residual_std if name.endswith("c_proj") else 0.02
                        nn.init.normal_(module.weight, mean=0.0, std=std)
                        if module.bias is not None:
                            nn.init.zeros_(module.bias)
                    # nn.LayerNorm already starts at scale 1 and shift 0
                nn.init.normal_(self.wte.weight, mean=0.0, std=0.02)
                nn.init.normal_(self.wpe.weight, mean=0.0, std=0.01)
        '''},
        "test_gpt2_biases_and_layernorm", "not left to the LayerNorm's constructor",
    ),
    # Issue 29: devices. Each runs on the CPU; on a layer moved to a GPU (or the meta device
    # of a CPU-only grader's device pass) it makes or leaves a tensor on the CPU.
    "reset_parameters puts a weight drawn on the CPU in place of the old one": (
        {"embeddings:Embedding.reset_parameters": '''
            def reset_parameters(self):
                std = self.std if self.std is not None else 1.0 / math.sqrt(self.d_model)
                self.weight.data = torch.randn(self.weight.shape, dtype=self.weight.dtype) * std
        '''},
        "test_reset_refills_in_place", "reset_parameters() on a layer moved to",
    ),
    "scale_output multiplies by a one-element CPU tensor": (
        {"embeddings:Embedding.scale_output": '''
            def scale_output(self, x):
                if not self.scale:
                    return x
                return x * torch.full((1,), math.sqrt(self.d_model), dtype=x.dtype)
        '''},
        "test_scale_output", "the same call on CPU tensors ran",
    ),
    "init_weights puts weights drawn on the CPU in .data": (
        {"gpt2:GPT2.init_weights": '''
            def init_weights(self):
                residual_std = 0.02 / math.sqrt(2 * self.config.n_layers)
                for name, module in self.named_modules():
                    if isinstance(module, nn.Linear):
                        std = residual_std if name.endswith("c_proj") else 0.02
                        w = module.weight
                        w.data = torch.randn(w.shape, dtype=w.dtype) * std
                        if module.bias is not None:
                            nn.init.zeros_(module.bias)
                    elif isinstance(module, nn.LayerNorm):
                        nn.init.ones_(module.weight)
                        nn.init.zeros_(module.bias)
                nn.init.normal_(self.wte.weight, mean=0.0, std=0.02)
                nn.init.normal_(self.wpe.weight, mean=0.0, std=0.01)
        '''},
        "test_gpt2_weight_stds", "init_weights() again",
    ),
})
