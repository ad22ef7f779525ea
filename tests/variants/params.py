"""Stage 'params': other correct calculators, and the mistakes the hidden suite must name."""

import ast

from tests.variants.build import LUMEN


def _lumen_def(module: str, name: str) -> str:
    """lumen's source of the top-level function or class ``name`` of ``module``.py."""
    source = (LUMEN / f"{module}.py").read_text(encoding="utf-8")
    node = next(n for n in ast.parse(source).body
                if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name)
    return ast.get_source_segment(source, node)


#: A learner's self-check at the end of params.py: it compares with PyTorch's own layers and
#: uses what the rules refuse (numpy, eval, os), all in a block the grader neither reads nor runs.
SELF_CHECK = """


if __name__ == "__main__":  # python -m exercises.params: my own checks first
    import os

    import numpy as np
    import torch.nn.functional as F
    from torch import nn

    small = count_params(50257, 768, 12, 1024)
    assert small.total == 124_439_808, small
    assert small.token_embedding == nn.Embedding(50257, 768).weight.numel()
    assert F.one_hot(torch.tensor([2]), 3).sum() == 1
    print(np.round(small.embedding_share, 3), eval("small.memory_bytes('fp16')"), os.getcwd())
"""

CORRECT = {
    # A ValueError of its own: caught by every except ValueError (checked by hierarchy).
    "memory_bytes raising a subclass of ValueError": {
        "params:ParamCount.memory_bytes": '''
        def memory_bytes(self, dtype="fp32"):
            class UnknownDtypeError(ValueError):
                pass

            name = _TORCH_DTYPES.get(dtype, dtype) if isinstance(dtype, torch.dtype) else dtype
            if name not in DTYPE_BYTES:
                raise UnknownDtypeError(
                    f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}")
            return self.total * DTYPE_BYTES[name]
        ''',
    },
    "module by module, in a loop": {
        "params:count_params": '''
            def count_params(vocab_size, d_model, n_layers, n_ctx, tied=True):
                def linear(n_in, n_out):
                    return n_in * n_out + n_out  # weights and a bias

                def layer_norm(d):
                    return 2 * d  # a scale and a shift

                d = d_model
                attention = mlp = layer_norms = 0
                for _ in range(n_layers):
                    attention += linear(d, 3 * d) + linear(d, d)
                    mlp += linear(d, 4 * d) + linear(4 * d, d)
                    layer_norms += layer_norm(d) + layer_norm(d)
                lm_head = 0 if tied else vocab_size * d
                parts = [vocab_size * d, n_ctx * d, attention, mlp, layer_norms, layer_norm(d),
                         lm_head]
                return ParamCount(*parts, total=sum(parts))
        ''',
    },
    "closed form, total written out": {
        "params:count_params": '''
            def count_params(vocab_size, d_model, n_layers, n_ctx, tied=True):
                V, d, N = vocab_size, d_model, n_layers
                total = (V + n_ctx) * d + N * (12 * d * d + 13 * d) + 2 * d + (0 if tied else V * d)
                return ParamCount(
                    token_embedding=V * d, position_embedding=n_ctx * d,
                    attention=N * (4 * d * d + 4 * d), mlp=N * (8 * d * d + 5 * d),
                    layer_norms=N * 4 * d, final_norm=2 * d, lm_head=0 if tied else V * d,
                    total=total,
                )
        ''',
    },
    "sizes from torch, share as 1 - rest": {
        "params:ParamCount.embedding_share": '''
            @property
            def embedding_share(self):
                return 1 - (self.total - self.token_embedding) / self.total
        ''',
        "params:ParamCount.memory_bytes": '''
            def memory_bytes(self, dtype="fp32"):
                names = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
                if isinstance(dtype, str):
                    if dtype not in names:
                        raise ValueError(f"unknown dtype {dtype!r}: fp32, fp16 or bf16")
                    dtype = names[dtype]
                if dtype not in names.values():
                    raise ValueError(f"unknown dtype {dtype}: fp32, fp16 or bf16")
                return self.total * (torch.finfo(dtype).bits // 8)
        ''',
    },
    # torch's 0-d integer tensors: an int-like type a learner's arithmetic can produce (numpy's
    # integers are allowed too; the count's rule is operator.index, whatever the type).
    "counts as 0-d integer tensors": {
        "params:count_params": '''
            def count_params(vocab_size, d_model, n_layers, n_ctx, tied=True):
                V, d, N = (torch.tensor(n) for n in (vocab_size, d_model, n_layers))
                parts = [V * d, n_ctx * d, N * (4 * d * d + 4 * d), N * (8 * d * d + 5 * d),
                         N * 4 * d, 2 * d, 0 if tied else V * d]  # 0-d int64 tensors
                return ParamCount(*parts, total=sum(parts))
        ''',
    },
    # numpy's int64 is a whole number by the contract's rule, and stays exact past 2**31.
    "counts in numpy.int64": {
        "params:count_params": '''
            def count_params(vocab_size, d_model, n_layers, n_ctx, tied=True):
                import numpy as np

                V, d, N, C = (np.int64(n) for n in (vocab_size, d_model, n_layers, n_ctx))
                parts = [V * d, C * d, N * (4 * d * d + 4 * d), N * (8 * d * d + 5 * d),
                         N * 4 * d, 2 * d, np.int64(0) if tied else V * d]
                return ParamCount(*parts, total=sum(parts))
        ''',
    },
    "a self-check under __main__ in params.py": {
        "params:main": _lumen_def("params", "main") + SELF_CHECK,
    },
}

_TIED_HEAD_COUNTED = '''
    def count_params(vocab_size, d_model, n_layers, n_ctx, tied=True):
        d = d_model
        counts = {
            "token_embedding": vocab_size * d, "position_embedding": n_ctx * d,
            "attention": n_layers * (4 * d * d + 4 * d), "mlp": n_layers * (8 * d * d + 5 * d),
            "layer_norms": n_layers * 4 * d, "final_norm": 2 * d, "lm_head": d * vocab_size,
        }
        return ParamCount(**counts, total=sum(counts.values()))
'''


def _count_params(token="vocab_size * d", position="n_ctx * d", attention="4 * d * d + 4 * d",
                  mlp="8 * d * d + 5 * d", layer_norms="4 * d", final_norm="2 * d") -> str:
    """count_params with some parts written wrong (per block where it says so)."""
    return f'''
        def count_params(vocab_size, d_model, n_layers, n_ctx, tied=True):
            d = d_model
            counts = {{
                "token_embedding": {token}, "position_embedding": {position},
                "attention": n_layers * ({attention}), "mlp": n_layers * ({mlp}),
                "layer_norms": n_layers * ({layer_norms}), "final_norm": {final_norm},
                "lm_head": 0 if tied else d * vocab_size,
            }}
            return ParamCount(**counts, total=sum(counts.values()))
    '''


MISTAKES = {
    "count_params untied by default (tied=False)": (
        {"params:count_params": _lumen_def("params", "count_params").replace(
            "tied: bool = True", "tied: bool = False", 1)},
        "test_gpt2_totals", "tied defaults to True",
    ),
    "the tied head counted": (
        {"params:count_params": _TIED_HEAD_COUNTED},
        "test_gpt2_totals", "counted once (163,037,184 is gpt2 untied)",
    ),
    "the position embedding forgotten": (
        {"params:count_params": _count_params(position="0")},
        "test_gpt2_totals", "786,432 short",
    ),
    "attention without biases": (
        {"params:count_params": _count_params(attention="4 * d * d")},
        "test_parts_field_by_field", "attention without biases",
    ),
    "no biases anywhere": (
        {"params:count_params": _count_params(attention="4 * d * d", mlp="8 * d * d")},
        "test_gpt2_totals", "the Linear layers without biases",
    ),
    "layer norms dropped": (
        {"params:count_params": _count_params(layer_norms="0", final_norm="0")},
        "test_gpt2_totals", "the layer norms are missing",
    ),
    "layer norms as a scale only": (
        {"params:count_params": _count_params(layer_norms="2 * d", final_norm="d")},
        "test_parts_field_by_field", "a scale and a shift",
    ),
    "fp16 at 4 bytes per number": (
        {"params:ParamCount.memory_bytes": '''
            def memory_bytes(self, dtype="fp32"):
                sizes = {"fp32": 4, "fp16": 4, "bf16": 2, torch.float32: 4, torch.float16: 4,
                         torch.bfloat16: 2}
                if dtype not in sizes:
                    raise ValueError(f"unknown dtype {dtype!r}; use fp32, fp16 or bf16")
                return self.total * sizes[dtype]
        '''},
        "test_memory_bytes", "2 bytes (16 bits), not 4",
    ),
    "embedding_share counts the position embedding too": (
        {"params:ParamCount.embedding_share": '''
            @property
            def embedding_share(self):
                return (self.token_embedding + self.position_embedding) / self.total
        '''},
        "test_embedding_share", "the token embedding (wte) alone",
    ),
    "embedding_share as a percentage": (
        {"params:ParamCount.embedding_share": '''
            @property
            def embedding_share(self):
                return 100 * self.token_embedding / self.total
        '''},
        "test_embedding_share", "percentage",
    ),
    "unknown dtype guessed as 4 bytes": (
        {"params:ParamCount.memory_bytes": '''
            def memory_bytes(self, dtype="fp32"):
                name = _TORCH_DTYPES.get(dtype, dtype) if isinstance(dtype, torch.dtype) else dtype
                return self.total * DTYPE_BYTES.get(name, 4)
        '''},
        "test_unknown_dtype_refused", "should raise ValueError",
    ),
    "count_params's arguments in another order (n_ctx before n_layers)": (
        {"params:count_params": '''
            def count_params(vocab_size, d_model, n_ctx, n_layers, tied=True):
                d = d_model
                counts = {
                    "token_embedding": vocab_size * d, "position_embedding": n_ctx * d,
                    "attention": n_layers * (4 * d * d + 4 * d),
                    "mlp": n_layers * (8 * d * d + 5 * d), "layer_norms": n_layers * 4 * d,
                    "final_norm": 2 * d, "lm_head": 0 if tied else d * vocab_size,
                }
                return ParamCount(**counts, total=sum(counts.values()))
        '''},
        "test_parts_field_by_field", "arguments in another order",
    ),
    "the total a float (math.fsum)": (
        {"params:count_params": '''
            def count_params(vocab_size, d_model, n_layers, n_ctx, tied=True):
                d = d_model
                counts = {
                    "token_embedding": vocab_size * d, "position_embedding": n_ctx * d,
                    "attention": n_layers * (4 * d * d + 4 * d),
                    "mlp": n_layers * (8 * d * d + 5 * d), "layer_norms": n_layers * 4 * d,
                    "final_norm": 2 * d, "lm_head": 0 if tied else d * vocab_size,
                }
                import math  # params.py does not import it

                return ParamCount(**counts, total=math.fsum(counts.values()))
        '''},
        "test_parts_field_by_field", "a float",
    ),
    "memory_bytes from bits / 8 (a float)": (
        {"params:ParamCount.memory_bytes": '''
            def memory_bytes(self, dtype="fp32"):
                bits = {"fp32": 32, "fp16": 16, "bf16": 16}
                name = _TORCH_DTYPES.get(dtype, dtype) if isinstance(dtype, torch.dtype) else dtype
                if name not in bits:
                    raise ValueError(f"unknown dtype {dtype!r}; use fp32, fp16 or bf16")
                return self.total * bits[name] / 8
        '''},
        "test_memory_bytes", "a float",
    ),
    "memory_bytes's argument renamed (dtype= refused)": (
        {"params:ParamCount.memory_bytes": '''
            def memory_bytes(self, precision="fp32"):
                name = (_TORCH_DTYPES.get(precision, precision) if isinstance(precision, torch.dtype)
                        else precision)
                if name not in DTYPE_BYTES:
                    raise ValueError(f"unknown dtype {precision!r}; use fp32, fp16 or bf16")
                return self.total * DTYPE_BYTES[name]
        '''},
        "test_memory_bytes", "memory_bytes(self, dtype=",
    ),
    "any torch dtype sized by its bits (float64 as 8 bytes)": (
        {"params:ParamCount.memory_bytes": '''
            def memory_bytes(self, dtype="fp32"):
                if isinstance(dtype, torch.dtype):
                    return self.total * (torch.finfo(dtype).bits // 8)
                if dtype not in DTYPE_BYTES:
                    raise ValueError(f"unknown dtype {dtype!r}; use fp32, fp16 or bf16")
                return self.total * DTYPE_BYTES[dtype]
        '''},
        "test_unknown_dtype_refused", "torch.float64",
    ),
    # Right for every GPT-2 (all its counts are below 2**31), wrong past it.
    "counts in int32 tensors (wrap past 2**31)": (
        {"params:count_params": '''
            def count_params(vocab_size, d_model, n_layers, n_ctx, tied=True):
                V, d, N, C = (torch.tensor(n, dtype=torch.int32)
                              for n in (vocab_size, d_model, n_layers, n_ctx))
                parts = [V * d, C * d, N * (4 * d * d + 4 * d), N * (8 * d * d + 5 * d),
                         N * 4 * d, 2 * d, 0 if tied else V * d]
                return ParamCount(*parts, total=sum(parts))
        '''},
        "test_parts_field_by_field", "wrapped around 2**32",
    ),
    "unknown dtype raises KeyError": (
        {"params:ParamCount.memory_bytes": '''
            def memory_bytes(self, dtype="fp32"):
                name = _TORCH_DTYPES.get(dtype, dtype) if isinstance(dtype, torch.dtype) else dtype
                return self.total * DTYPE_BYTES[name]
        '''},
        "test_unknown_dtype_refused", "raised KeyError",
    ),
    # Issue 29: records made by hand, the float promised, names as written.
    "embedding_share from a config worked back out of the record": (
        {"params:ParamCount.embedding_share": '''
            @property
            def embedding_share(self):
                d = self.final_norm // 2  # ln_f holds 2 d numbers, so the rest follows
                again = count_params(self.token_embedding // d, d, self.layer_norms // (4 * d),
                                     self.position_embedding // d, tied=self.lm_head == 0)
                return again.token_embedding / again.total
        '''},
        "test_embedding_share", "built by hand",
    ),
    "memory_bytes from a config worked back out of the record": (
        {"params:ParamCount.memory_bytes": '''
            def memory_bytes(self, dtype="fp32"):
                name = _TORCH_DTYPES.get(dtype, dtype) if isinstance(dtype, torch.dtype) else dtype
                if name not in DTYPE_BYTES:
                    raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}")
                d = self.final_norm // 2
                again = count_params(self.token_embedding // d, d, self.layer_norms // (4 * d),
                                     self.position_embedding // d, tied=self.lm_head == 0)
                return again.total * DTYPE_BYTES[name]
        '''},
        "test_memory_bytes", "built by hand",
    ),
    "embedding_share as an exact Fraction": (
        {"params:ParamCount.embedding_share": '''
            @property
            def embedding_share(self):
                from fractions import Fraction

                return Fraction(self.token_embedding, self.total)  # exact, no rounding
        '''},
        "test_embedding_share", "returned a Fraction",
    ),
    "dtype names matched in any case": (
        {"params:ParamCount.memory_bytes": '''
            def memory_bytes(self, dtype="fp32"):
                name = _TORCH_DTYPES.get(dtype, dtype) if isinstance(dtype, torch.dtype) else dtype
                name = name.lower() if isinstance(name, str) else name  # "FP16" is fp16 too?
                if name not in DTYPE_BYTES:
                    raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}")
                return self.total * DTYPE_BYTES[name]
        '''},
        "test_unknown_dtype_refused", "memory_bytes('FP16')",
    ),
    "the MLP's hidden layer 3d wide, not 4d": (
        {"params:count_params": _lumen_def("params", "count_params").replace(
            "mlp = (d * 4 * d + 4 * d) + (4 * d * d + d)",
            "mlp = (d * 3 * d + 3 * d) + (3 * d * d + d)", 1)},
        "test_parts_field_by_field", "mlp is",
    ),
    "the final LayerNorm forgotten": (
        {"params:count_params": _lumen_def("params", "count_params").replace(
            '"final_norm": 2 * d,', '"final_norm": 0,', 1)},
        "test_parts_field_by_field", "final_norm is",
    ),
    "memory_bytes refuses torch's dtypes (strings only)": (
        {"params:ParamCount.memory_bytes": '''
            def memory_bytes(self, dtype="fp32"):
                if dtype not in DTYPE_BYTES:
                    raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}")
                return self.total * DTYPE_BYTES[dtype]
        '''},
        "test_memory_bytes", "memory_bytes(torch.float32) of",
    ),
}
