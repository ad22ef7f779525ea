"""Hidden tests, stage 'params': the parameter calculator, where a GPT-2's parameters live.

Compared with lumen field by field, exactly: a parameter count is whole-number arithmetic. The
four GPT-2 presets pin the published sizes (124,439,808 for gpt2, tied); random small shapes
catch a formula that fits the presets by accident. A wrong number is diagnosed by the
difference it makes: a missing V x d, n_ctx x d, or bias is named in the chapter's words.
"""

from __future__ import annotations

import math

import torch

from autograder.feedback import Mistake, NotImplementedYet, unwrap
from lumen import params as ref

STAGE = "params"
MODULE = "params"
FIELDS = ("token_embedding", "position_embedding", "attention", "mlp", "layer_norms",
          "final_norm", "lm_head", "total")


def _preset(name: str) -> dict[str, int]:
    return {k: v for k, v in ref.PRESETS[name].items() if k != "n_heads"}


def _random_shape(gen: torch.Generator) -> dict[str, int]:
    def pick(lo: int, hi: int) -> int:
        return int(torch.randint(lo, hi + 1, (), generator=gen))

    return {"vocab_size": pick(50, 2000), "n_ctx": pick(16, 512), "d_model": pick(8, 96),
            "n_layers": pick(1, 8)}


def _count(learner, seed: int, shape: dict, tied: bool, dtypes: tuple[str, ...] = (),
           share: bool = False, name: str = "") -> tuple[dict, str]:
    """The learner's count for ``shape``: (probe result, description)."""
    args = ", ".join(f"{k}={v}" for k, v in shape.items())
    what = f"count_params({args}, tied={tied})" + (f" ({name})" if name else "")
    outcome = learner.call("count_params", seed=seed, fields=list(FIELDS), dtypes=list(dtypes),
                           share=share, tied=tied, **shape)
    result = unwrap(outcome, what, MODULE)
    if result["type"] != "ParamCount":
        raise Mistake(f"{what} returned a {result['type']}, expected a ParamCount (the dataclass "
                      "given in params.py): return ParamCount(token_embedding=..., ..., total=...)")
    fields = result["fields"]
    for field in FIELDS:
        value = fields.get(field) if isinstance(fields, dict) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Mistake(f"{what}: {field} is {value}, expected a whole number of parameters")
    return result, what


def _number(value: object, what: str) -> float:
    """A number the probe read from a property or method: its error or odd type is a Mistake."""
    if isinstance(value, dict) and "error" in value:
        if value.get("not_implemented"):
            raise NotImplementedYet(f"{what} is not implemented yet")
        raise Mistake(f"{what} raised {value['error']}: {value.get('message', '')}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = value.get("type") if isinstance(value, dict) else type(value).__name__
        raise Mistake(f"{what} returned a {kind}, expected a plain Python number")
    return value


def _total_hint(diff: int, shape: dict, tied: bool, name: str) -> str:
    """The likely mistake behind a total that is ``diff`` off."""
    V, d, N, n_ctx = shape["vocab_size"], shape["d_model"], shape["n_layers"], shape["n_ctx"]
    untied = ref.count_params(**shape, tied=False).total
    hints = [
        (V * d if tied else 0, "your tied count includes the output layer: tied means the same "
         f"V x d matrix, counted once ({untied:,} is {name or 'this model'} untied)"),
        (0 if tied else -V * d, "your untied count leaves out the output layer: untied, lm_head "
         f"is its own d x V matrix, V x d = {V * d:,} more parameters"),
        (0 if tied else V, "GPT-2's output layer has no bias: it is d x V weights only"),
        (-n_ctx * d, f"your count is {n_ctx * d:,} short: the position embedding (wpe), "
         f"n_ctx x d = {n_ctx:,} x {d:,}, is missing"),
        (-N * 4 * d, f"your count is {N * 4 * d:,} short: attention without biases (c_attn has "
         "3d biases and c_proj d, 4d per block)"),
        (-N * 5 * d, f"your count is {N * 5 * d:,} short: the MLP without biases (c_fc has 4d "
         "biases and c_proj d, 5d per block)"),
        (-N * 9 * d, f"your count is {N * 9 * d:,} short: the Linear layers without biases "
         "(every Linear in a block has one: 4d in attention, 5d in the MLP)"),
        (-(N * 4 * d + 2 * d), f"your count is {N * 4 * d + 2 * d:,} short: the layer norms are "
         "missing (ln_1 and ln_2 in every block, ln_f at the end, each a scale and a shift of d)"),
        (-(N * 2 * d + d), "each LayerNorm has a scale and a shift (2d numbers), and you count "
         "only one of them"),
        (-2 * d, "the final LayerNorm (ln_f, 2d) after the last block is missing"),
    ]
    for off, hint in hints:
        if off and diff == off:
            return hint
    return ("count wte and wpe, then N blocks of (ln_1, attention, ln_2, MLP), every Linear and "
            "LayerNorm with its bias, then ln_f, and the head only when untied")


def test_gpt2_totals(learner, seed):
    """the totals of GPT-2's four sizes, tied (124,439,808 for gpt2) and untied (163,037,184)"""
    for name in ref.PRESETS:
        shape = _preset(name)
        for tied in (True, False):
            result, what = _count(learner, seed, shape, tied, name=name)
            got, want = result["fields"]["total"], ref.count_params(**shape, tied=tied).total
            if got != want:
                hint = _total_hint(int(got) - want, shape, tied, name)
                raise Mistake(f"{what}: total {got:,}, expected {want:,}: {hint}")


def _field_hint(field: str, got: int, shape: dict, tied: bool, fields: dict) -> str:
    """The likely mistake behind one wrong field."""
    V, d, N, n_ctx = shape["vocab_size"], shape["d_model"], shape["n_layers"], shape["n_ctx"]
    hints = {
        "token_embedding": [(V * d + n_ctx * d, "wte and wpe are separate tables: the token "
                             "embedding is V x d alone")],
        "position_embedding": [(0, f"the position embedding (wpe) is missing: one row of d "
                                f"numbers per position, n_ctx x d = {n_ctx * d:,}")],
        "attention": [(N * 4 * d * d, "attention without biases: c_attn (d -> 3d) has 3d biases "
                       "and c_proj (d -> d) has d, so each block's attention is 4d^2 + 4d"),
                      (4 * d * d + 4 * d, "that is one block: multiply by n_layers")],
        "mlp": [(N * 8 * d * d, "the MLP without biases: c_fc (d -> 4d) has 4d biases and c_proj "
                 "(4d -> d) has d, so each block's MLP is 8d^2 + 5d"),
                (8 * d * d + 5 * d, "that is one block: multiply by n_layers")],
        "layer_norms": [(0, "the blocks' layer norms are missing: ln_1 and ln_2, each a scale "
                         "and a shift of d numbers, 4d per block"),
                        (N * 2 * d, "each LayerNorm has a scale and a shift (2d), and a block "
                         "has two of them (ln_1, ln_2): 4d per block")],
        "final_norm": [(0, "ln_f, the LayerNorm after the last block, is missing: a scale and "
                        "a shift, 2d"),
                       (d, "ln_f has a scale and a shift: 2d, not d")],
        "lm_head": [(V * d, "your tied count includes the output layer: tied means the same "
                     "V x d matrix, counted once, so lm_head is 0") if tied else
                    (0, "untied, the output layer is its own d x V matrix"),
                    (V * d + V, "GPT-2's output layer has no bias: d x V weights only")],
    }
    for value, hint in hints.get(field, []):
        if got == value:
            return hint
    if field == "total":
        parts = sum(fields[f] for f in FIELDS if f != "total")
        if got != parts:
            return f"total is not the sum of the parts ({parts:,}): each Parameter counted once"
    formulas = {
        "token_embedding": "V x d", "position_embedding": "n_ctx x d",
        "attention": "N x (4d^2 + 4d)", "mlp": "N x (8d^2 + 5d)", "layer_norms": "N x 4d",
        "final_norm": "2d", "lm_head": "0 when tied, d x V untied", "total": "the sum of the parts",
    }
    return f"{field} is {formulas[field]}"


def test_parts_field_by_field(learner, seed, gen):
    """every part (wte, wpe, attention, MLP, layer norms, ln_f, head), presets and random shapes"""
    cases = [(_preset(name), True, name) for name in ref.PRESETS]
    cases += [(_preset("gpt2"), False, "gpt2"), (_random_shape(gen), True, ""),
              (_random_shape(gen), False, "")]
    for shape, tied, name in cases:
        result, what = _count(learner, seed, shape, tied, name=name)
        fields = result["fields"]
        want = ref.count_params(**shape, tied=tied)
        for field in FIELDS:
            expected = getattr(want, field)
            if fields[field] != expected:
                hint = _field_hint(field, fields[field], shape, tied, fields)
                raise Mistake(f"{what}: {field} is {fields[field]:,}, expected {expected:,}: "
                              f"{hint}")


def test_embedding_share(learner, seed, gen):
    """embedding_share is token_embedding / total: 0.31 for gpt2 tied, less for larger models"""
    cases = [(_preset("gpt2"), True, "gpt2"), (_preset("gpt2"), False, "gpt2"),
             (_preset("gpt2-xl"), True, "gpt2-xl"), (_random_shape(gen), True, "")]
    for shape, tied, name in cases:
        result, what = _count(learner, seed, shape, tied, share=True, name=name)
        what = f"{what}.embedding_share"
        got = _number(result["embedding_share"], what)
        fields = result["fields"]  # judged against the learner's own counts
        token, total = fields["token_embedding"], fields["total"]
        want = token / total if total else math.nan
        if math.isclose(got, want, rel_tol=1e-9):
            continue
        hints = [
            ((token + fields["position_embedding"]) / total, "that includes the position "
             "embedding: the share is the token embedding (wte) alone"),
            (100 * want, "that is a percentage: return the fraction (0.31, not 31)"),
            (token / (total - token) if total != token else math.nan, "that divides by the rest "
             "of the model: divide by the total"),
        ]
        hint = next((h for value, h in hints if math.isclose(got, value, rel_tol=1e-9)),
                    "the token embedding's fraction of all parameters, token_embedding / total")
        raise Mistake(f"{what} is {got:.6g}, expected {want:.6g} = {token:,} / {total:,}: {hint}")


def test_memory_bytes(learner, seed, gen):
    """memory_bytes: 4 bytes per number in fp32 (the default), 2 in fp16 and bf16, torch's too"""
    size = {"default": 4, "fp32": 4, "fp16": 2, "bf16": 2, "torch.float32": 4,
            "torch.float16": 2, "torch.bfloat16": 2}
    for shape, tied, name in ((_preset("gpt2"), True, "gpt2"), (_random_shape(gen), False, "")):
        result, what = _count(learner, seed, shape, tied, dtypes=tuple(size), name=name)
        total = result["fields"]["total"]  # judged against the learner's own total
        memory = result["memory"]
        for dtype, bytes_per in size.items():
            arg = "" if dtype == "default" else dtype if "." in dtype else repr(dtype)
            where = f"{what}.memory_bytes({arg})"
            got = _number(memory.get(dtype) if isinstance(memory, dict) else None, where)
            want = total * bytes_per
            if got == want:
                continue
            hints = [
                (total * 4, f"{dtype.removeprefix('torch.')} stores each number in 2 bytes (16 "
                 "bits), not 4: half precision halves the memory"),
                (total * bytes_per * 8, "that is bits: divide by 8 for bytes"),
                (total * bytes_per / 2**20, "that is MiB: return bytes"),
                (total, "that is the number of parameters: multiply by the bytes per number"),
            ]
            hint = next((h for value, h in hints if math.isclose(got, value, rel_tol=1e-12)),
                        f"total x {bytes_per} bytes per number")
            if dtype == "default":
                hint = "the default dtype is fp32, 4 bytes per number"
            raise Mistake(f"{where} is {got:,}, expected {want:,} = {total:,} x {bytes_per}: "
                          f"{hint}")


def test_unknown_dtype_refused(learner, seed):
    """memory_bytes refuses a dtype it does not know with ValueError, listing those it knows"""
    shape = _preset("gpt2")
    unknown = ("fp12", "int3")
    result, what = _count(learner, seed, shape, True, dtypes=unknown, name="gpt2")
    memory = result["memory"]
    for dtype in unknown:
        where = f"{what}.memory_bytes({dtype!r})"
        value = memory.get(dtype) if isinstance(memory, dict) else None
        if not (isinstance(value, dict) and "error" in value):
            _number(value, where)  # a wrong type is its own mistake
            raise Mistake(f"{where} returned {value:,}, but should raise ValueError: a dtype it "
                          "does not know has no size to guess (only fp32, fp16 and bf16 do)")
        if value.get("not_implemented"):
            raise NotImplementedYet(f"{where} is not implemented yet")
        if value["error"] != "ValueError":
            raise Mistake(f"{where} raised {value['error']}: {value.get('message', '')}, but "
                          "should raise ValueError (a bad argument value), e.g. with "
                          "`if name not in DTYPE_BYTES: raise ValueError(...)`")
        message = str(value.get("message", ""))
        missing = [known for known in ref.DTYPE_BYTES if known not in message]
        if missing:
            raise Mistake(f"{where} raised ValueError({message!r}); the message should list the "
                          f"dtypes it understands ({', '.join(ref.DTYPE_BYTES)}), so the caller "
                          "can fix the call")
