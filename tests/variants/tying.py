"""Stage 'tying': other correct ties, and the mistakes the hidden suite must name."""

import ast

from tests.variants.build import LUMEN


def _gpt2_without_tie(name: str, bases: str) -> str:
    """lumen's GPT2 class renamed ``name`` with ``bases``, and without its tie_weights (given
    code: __init__ still calls self.tie_weights(), which the layout supplies elsewhere)."""
    source = (LUMEN / "gpt2.py").read_text(encoding="utf-8")
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "GPT2")
    tie = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "tie_weights")
    lines = source.splitlines()
    kept = lines[cls.lineno - 1 : tie.lineno - 1] + lines[tie.end_lineno : cls.end_lineno]
    kept[0] = f"class {name}({bases}):"
    return "\n".join(kept) + "\n"


def _mixin_layout() -> str:
    """GPT2(_Tying, nn.Module): tie_weights lives in a mixin, not in GPT2's own body."""
    mixin = '''
class _Tying:
    """Mixin: weight tying for a model with wte and lm_head."""

    def tie_weights(self):
        if self.config.tie_weights:
            self.lm_head.weight = self.wte.weight


'''
    return mixin.lstrip("\n") + _gpt2_without_tie("GPT2", "_Tying, nn.Module")


def _subclass_layout() -> str:
    """class GPT2(_Model): the whole model in a base class, the tie in the subclass."""
    tied = '''

class GPT2(_Model):
    """The model with its output layer tied to the token embedding."""

    def tie_weights(self):
        if not self.config.tie_weights:
            return
        self.lm_head.register_parameter("weight", self.wte.weight)
'''
    return _gpt2_without_tie("_Model", "nn.Module") + tied


def _gpt2_source() -> str:
    """lumen's GPT2 class as it is."""
    source = (LUMEN / "gpt2.py").read_text(encoding="utf-8")
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "GPT2")
    return ast.get_source_segment(source, cls)


#: A learner's self-check at the end of gpt2.py: it compares with PyTorch's own layers and uses
#: what the rules refuse (F.embedding, F.one_hot, os, eval), all in a block the grader neither
#: reads nor runs.
SELF_CHECK = """


if __name__ == "__main__":  # python -m exercises.gpt2: my own checks first
    import os

    model = GPT2(GPT2Config(vocab_size=50, n_ctx=8, d_model=16, n_layers=1, n_heads=2))
    assert model.lm_head.weight is model.wte.weight
    ids = torch.randint(0, 50, (1, 8))
    assert torch.equal(model.wte(ids), F.embedding(ids, model.wte.weight))
    assert torch.equal(F.one_hot(ids, 50).float() @ model.wte.weight, model.wte(ids)[0])
    print(eval("model.num_params()"), os.getcwd())
"""

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
    # Class layouts of the learner's own (tests/test_scaffolds.py grades these on every stage).
    "tied through a helper method": {
        "gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self._share(self.wte, self.lm_head)

            def _share(self, source, target):
                """target uses source's Parameter itself, not a copy of it."""
                target.weight = source.weight
        ''',
    },
    "tie_weights from a mixin": {
        "gpt2:GPT2": _mixin_layout(),
    },
    "GPT2 a subclass of their own model class": {
        "gpt2:GPT2": _subclass_layout(),
    },
    "a self-check under __main__ in gpt2.py": {
        "gpt2:GPT2": _gpt2_source() + SELF_CHECK,
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
    "a second head, refreshed from the table by a forward pre-hook": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    def refresh(module, args):  # the same numbers before every call
                        with torch.no_grad():
                            module.lm_head.weight.copy_(module.wte.weight)
                    self.register_forward_pre_hook(refresh)
        '''},
        "test_tied_head_is_the_embedding", "lm_head.weight is not wte.weight",
    ),
    "the tied head given a bias": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self.lm_head = nn.Linear(self.config.d_model, self.config.vocab_size)
                    self.lm_head.weight = self.wte.weight
        '''},
        "test_parameter_count", "parameters",
    ),
    "never ties": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                pass
        '''},
        "test_tied_head_is_the_embedding", "not even equal",
    ),
}


# --- given code changed: the tie moved out of tie_weights, or the tie undone elsewhere ------
# The grader runs its own copy of the given code (autograder/sandboxed/given.py), so each of
# these loses points where the tie is judged, and test_tie_as_you_wrote_it, which also runs the
# learner's GPT2 as they wrote it, says that given code was changed.

#: lumen's GPT2.forward, with ``{before}`` as its first line.
_FORWARD = '''
    def forward(self, ids):
        {before}
        B, T = ids.shape
        positions = torch.arange(T, device=ids.device)
        x = self.drop(self.wte(ids) + self.wpe(positions))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))
'''

_NO_TIE = '''
    def tie_weights(self):
        pass  # tied in forward instead
'''


def _tie_in_a_base_class() -> str:
    """GPT2(_Base): the learner's own base class holds a forward that ties, and GPT2 has no
    forward of its own (nor a tie_weights that does anything)."""
    base = '''
class _Base(nn.Module):
    """Ties the head in the forward pass."""

    def forward(self, ids):
        if self.config.tie_weights:
            self.lm_head.weight = self.wte.weight
        B, T = ids.shape
        x = self.drop(self.wte(ids) + self.wpe(torch.arange(T, device=ids.device)))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


'''
    source = (LUMEN / "gpt2.py").read_text(encoding="utf-8")
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "GPT2")
    drop = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)
            and n.name in ("forward", "tie_weights")}
    lines = source.splitlines()
    kept = []
    for number in range(cls.lineno, cls.end_lineno + 1):
        if any(f.lineno <= number <= f.end_lineno for f in drop.values()):
            continue
        kept.append(lines[number - 1])
    kept[0] = "class GPT2(_Base):"
    kept.insert(1, "    def tie_weights(self):\n        pass  # _Base.forward ties")
    return base.lstrip("\n") + "\n".join(kept) + "\n"


MISTAKES.update({
    "given code changed: the tie made in forward, tie_weights does nothing": (
        {"gpt2:GPT2.tie_weights": _NO_TIE,
         "gpt2:GPT2.forward": _FORWARD.format(
             before="if self.config.tie_weights:\n            self.lm_head.weight = self.wte.weight")},
        "test_tie_as_you_wrote_it", "not through tie_weights",
    ),
    "given code changed: the tie made in forward, whatever the config": (
        {"gpt2:GPT2.forward": _FORWARD.format(before="self.lm_head.weight = self.wte.weight")},
        "test_tie_as_you_wrote_it", "given code outside YOUR CODE HERE was changed",
    ),
    "given code changed: the tie in the learner's own base class's forward": (
        {"gpt2:GPT2": _tie_in_a_base_class()},
        "test_tie_as_you_wrote_it", "not through tie_weights",
    ),
    "given code changed: the tie made in GPT2.__init__": (
        {"gpt2:GPT2.tie_weights": _NO_TIE,
         "gpt2:GPT2.__init__": '''
            def __init__(self, config):
                super().__init__()
                self.config = config
                self.wte = Embedding(config.vocab_size, config.d_model)
                self.wpe = Embedding(config.n_ctx, config.d_model)
                self.drop = nn.Dropout(config.dropout)
                self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
                self.ln_f = nn.LayerNorm(config.d_model)
                self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
                self.init_weights()
                if config.tie_weights:
                    self.lm_head.weight = self.wte.weight
        '''},
        "test_tie_as_you_wrote_it", "not through tie_weights",
    ),
    "given code changed: load_state_dict overridden, the head reloaded apart": (
        {"gpt2:GPT2.num_params": '''
            def num_params(self):
                return sum(p.numel() for p in self.parameters())

            def load_state_dict(self, state_dict, strict=True, assign=False):
                result = super().load_state_dict(state_dict, strict=False)
                self.lm_head.weight = nn.Parameter(self.lm_head.weight.detach().clone())
                return result
        '''},
        "test_tie_as_you_wrote_it", "given code outside YOUR CODE HERE was changed",
    ),
    "given code changed: to() overridden, the tie undone after a conversion": (
        {"gpt2:GPT2.num_params": '''
            def num_params(self):
                return sum(p.numel() for p in self.parameters())

            def to(self, *args, **kwargs):
                model = super().to(*args, **kwargs)
                model.lm_head.weight = nn.Parameter(model.wte.weight.detach().clone())
                return model
        '''},
        "test_tie_as_you_wrote_it", "given code outside YOUR CODE HERE was changed",
    ),
    # Issue 29: an untied head that tie_weights touches.
    "untied, the head made a copy of the table": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self.lm_head.weight = self.wte.weight
                else:  # "start the head where the table is"
                    self.lm_head.weight = nn.Parameter(self.wte.weight.detach().clone())
        '''},
        "test_untied_keeps_two_matrices", "a copy of the table",
    ),
    "untied, the head zeroed": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self.lm_head.weight = self.wte.weight
                else:
                    nn.init.zeros_(self.lm_head.weight)  # a head that starts neutral
        '''},
        "test_untied_keeps_two_matrices", "the head's numbers were changed",
    ),
    "untied, the head redrawn with std 1": (
        {"gpt2:GPT2.tie_weights": '''
            def tie_weights(self):
                if self.config.tie_weights:
                    self.lm_head.weight = self.wte.weight
                else:
                    nn.init.normal_(self.lm_head.weight)  # its own numbers
        '''},
        "test_untied_keeps_two_matrices", "no fill of the head's own",
    ),
})

# A class attribute under the name of a submodule the given __init__ sets shadows it (nn.Module
# keeps submodules per object, found only when the class has no such name): the pins remove
# it, so the model the grader runs holds the given, untied lm_head (issue 30).
MISTAKES["given code changed: lm_head shadowed by a class property that answers with the table"] = (
    {"gpt2:GPT2.tie_weights": '''
        class _Head(nn.Module):  # answers model.lm_head: the table itself, as a head
            def __init__(self, table):
                super().__init__()
                self.table = table

            @property
            def weight(self):
                return self.table.weight

            def forward(self, h):
                return h @ self.table.weight.T

        lm_head = property(lambda self: GPT2._Head(self.wte) if self.config.tie_weights
                           else self._modules["lm_head"])

        def tie_weights(self):
            pass
    '''},
    "test_tie_as_you_wrote_it", "not through tie_weights",
)
