"""Stage 'tying': other correct ties, and the mistakes the hidden suite must name."""

CORRECT = {
    "register_parameter": {
        "gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self.lm_head.register_parameter("weight", self.wte.weight)
        ''',
    },
    "one new Parameter registered under both names": {
        "gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if not self.config.tie_weights:
                    return
                shared = nn.Parameter(self.wte.weight.detach())  # the embedding's numbers
                self.wte.weight = shared
                self.lm_head.weight = shared
        ''',
    },
    "delete the head's Parameter, then assign": {
        "gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights is True:
                    assert self.lm_head.weight.shape == self.wte.weight.shape
                    del self.lm_head.weight
                    self.lm_head.weight = self.wte.weight
                else:
                    pass  # untied: lm_head keeps its own matrix
        ''',
    },
    "through the module's _parameters": {
        "gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self.lm_head._parameters["weight"] = self.wte._parameters["weight"]
        ''',
    },
}

MISTAKES = {
    "head a copy (clone)": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self.lm_head.weight = nn.Parameter(self.wte.weight.clone())
        '''},
        "test_tied_head_is_the_embedding", "a copy, not the same Parameter",
    ),
    "head shares .data (two Parameters)": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self.lm_head.weight.data = self.wte.weight.data
        '''},
        "test_parameter_count", "counted twice",
    ),
    "nn.Parameter around wte.weight (split by .to)": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self.lm_head.weight = nn.Parameter(self.wte.weight)
        '''},
        "test_tie_survives_to_and_load", "tie is lost after .to()",
    ),
    "tied in the wrong direction": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self.wte.weight = self.lm_head.weight
        '''},
        "test_embedding_matrix_is_kept", "wrong direction",
    ),
    "tied to the transposed table": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self.lm_head.weight = nn.Parameter(self.wte.weight.t())
        '''},
        "test_tied_logits_and_initial_loss", "transposed table",
    ),
    "tied matrix rescaled by sqrt(d_model)": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    with torch.no_grad():
                        self.wte.weight.mul_(math.sqrt(self.config.d_model))
                    self.lm_head.weight = self.wte.weight
        '''},
        "test_tied_logits_and_initial_loss", "ln V",
    ),
    "ties whatever the config says": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                self.lm_head.weight = self.wte.weight
        '''},
        "test_untied_keeps_two_matrices", "config.tie_weights=False",
    ),
    "untied count: ties whatever the config says": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                self.lm_head.weight = self.wte.weight
        '''},
        "test_parameter_count", "untied model still shares",
    ),
    "never ties": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                pass
        '''},
        "test_tied_head_is_the_embedding", "not even equal",
    ),
}
