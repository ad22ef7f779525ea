"""Hidden tests, stage 'params': the parameter calculator, where a GPT-2's parameters live.

Compared with lumen field by field, exactly: a parameter count is whole-number arithmetic. The
four GPT-2 presets pin the published sizes (124,439,808 for gpt2, tied); random small shapes
catch a formula that fits the presets by accident, and are also passed positionally, in the
stub's order. A wrong number is diagnosed by the difference it makes: a missing V x d,
n_ctx x d, or bias is named in the chapter's words.

A count passes when it equals lumen's and is a whole number by the contract's rule (the
docstring of ParamCount): anything ``operator.index`` accepts, so numpy's integers and 0-d
integer tensors pass too; a float does not. ``embedding_share`` and ``memory_bytes`` are graded
on a ParamCount the grader fills in with lumen's counts, so a wrong count_params costs only
its own tests.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from autograder.boundary.session import is_stub_message
from autograder.suites import values
from autograder.suites.feedback import Mistake, NotImplementedYet, is_one_of, unwrap
from lumen import params as ref

STAGE = "params"
MODULE = "params"
FIELDS = ("token_embedding", "position_embedding", "attention", "mlp", "layer_norms",
          "final_norm", "lm_head", "total")

#: Hidden test -> the visible tests (exercises/tests/test_params.py) of the same requirement.
VISIBLE: dict[str, tuple[str, ...]] = {
    "test_gpt2_totals": ("test_gpt2_sizes_as_published", "test_untying_adds_one_more_table"),
    "test_parts_field_by_field": ("test_every_part_matches_pytorchs_layers",
                                  "test_counts_are_whole_numbers",
                                  "test_arguments_by_position_or_by_name",
                                  "test_counts_are_exact_at_the_edges"),
    "test_embedding_share": ("test_the_table_is_a_large_share_of_a_small_model",
                             "test_embedding_share_of_any_count"),
    "test_memory_bytes": ("test_memory_bytes",),
    "test_unknown_dtype_refused": ("test_unknown_dtype_is_refused",),
}

Number = int | float


def _preset(name: str) -> dict[str, int]:
    return {k: v for k, v in ref.PRESETS[name].items() if k != "n_heads"}


def _random_shape(gen: torch.Generator) -> dict[str, int]:
    """A small shape of this run's own. Each size has a range of its own (N < d < n_ctx < V),
    so a formula that swaps two of them, or takes them in another order, is always off; and
    N >= 2, so a per-block count not multiplied by N is too."""
    def pick(lo: int, hi: int) -> int:
        return int(torch.randint(lo, hi + 1, (), generator=gen))

    return {"vocab_size": pick(600, 2000), "n_ctx": pick(100, 512), "d_model": pick(10, 96),
            "n_layers": pick(2, 8)}


#: The smallest model (one of each) and, drawn per run, one far larger than GPT-2 whose every
#: per-block count and token table is past 2**31 (int32 arithmetic wraps there), yet below 2**62.
SMALLEST = {"vocab_size": 1, "n_ctx": 1, "d_model": 1, "n_layers": 1}
INT32 = 2**32


def _large_shape(gen: torch.Generator) -> dict[str, int]:
    """A shape of this run's own, larger than Llama 3 405B: V x d >= 200,000 x 12,288 and
    N x 4d^2 >= 64 x 4 x 12,288^2, both past 2**31."""
    def pick(lo: int, hi: int) -> int:
        return int(torch.randint(lo, hi + 1, (), generator=gen))

    return {"vocab_size": pick(200_000, 262_144), "n_ctx": pick(65_536, 131_072),
            "d_model": pick(12_288, 16_384), "n_layers": pick(64, 128)}


def _wrapped(got: Number, want: int) -> bool:
    """Whether ``got`` is ``want`` wrapped around by 32-bit arithmetic (int32 or uint32)."""
    return isinstance(got, int) and got != want and (got - want) % INT32 == 0


def _call(shape: dict, tied: bool | None, positional: bool) -> str:
    """The call as the learner would write it (``tied=None``: left out, its default)."""
    given = () if tied is None else (tied,)
    if positional:
        args = (shape["vocab_size"], shape["d_model"], shape["n_layers"], shape["n_ctx"], *given)
        return f"count_params({', '.join(map(str, args))})"
    keywords = [f"{k}={v}" for k, v in shape.items()] + [f"tied={t}" for t in given]
    return f"count_params({', '.join(keywords)})"


def _kind(entry: object) -> str:
    """What a value the probe reported was, for a message: 'a float (3.5)', 'a str'."""
    if not isinstance(entry, dict):
        return "not a number"
    if entry.get("type") == "NoneType":
        return "None (missing)"
    if isinstance(entry.get("float"), float):
        return f"a float ({entry['float']:,})"
    return f"a {entry.get('type', 'value')}"


def _numeric(entry: object) -> Number | None:
    """The number in a probe's ``_count`` entry: an int (a whole number), a float, or None."""
    if not isinstance(entry, dict):
        return None
    for key in ("int", "float"):
        value = entry.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return values.comparable(value)
    return None


def _count(learner, seed: int, shape: dict, tied: bool | None, name: str = "",
           positional: bool = False) -> tuple[dict[str, Number], str]:
    """The learner's count for ``shape``: (field -> number, the call as written)."""
    what = _call(shape, tied, positional) + (f" ({name})" if name else "")
    outcome = learner.call("count_params", seed=seed, fields=list(FIELDS), tied=tied,
                           positional=positional, **shape)
    result = unwrap(outcome, what, MODULE)
    if result["type"] != "ParamCount":
        raise Mistake(f"{what} returned a {result['type']}, expected a ParamCount (the dataclass "
                      "given in params.py): return ParamCount(token_embedding=..., ..., total=...)")
    reported = result["fields"] if isinstance(result["fields"], dict) else {}
    fields = {}
    for field in FIELDS:
        fields[field] = _numeric(reported.get(field))
        if fields[field] is None:
            raise Mistake(f"{what}: {field} is {_kind(reported.get(field))}, expected a whole "
                          "number of parameters (an int)")
    return fields, what


def _is_stub(value: dict) -> bool:
    """Whether a refusal the probe reported is a stub's own NotImplementedError."""
    return value.get("error") == "NotImplementedError" and is_stub_message(
        str(value.get("message", "")))


def _refused(value: object, what: str) -> None:
    """A method's exception, reported by the probe, as the Mistake it is."""
    if isinstance(value, dict) and "error" in value:
        if _is_stub(value):
            raise NotImplementedYet(f"{what} is not implemented yet")
        raise Mistake(f"{what} raised {value['error']}: {value.get('message', '')}")


def _number(value: object, what: str) -> float:
    """A number the probe read from a property: its error or odd type is a Mistake."""
    _refused(value, what)
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = value.get("type") if isinstance(value, dict) else type(value).__name__
        raise Mistake(f"{what} returned a {kind}, expected a float (a plain Python number, "
                      "as token_embedding / total gives it: no Fraction, no numpy or torch "
                      "scalar)")
    return values.comparable(value)


def _total_hint(diff: Number, shape: dict, tied: bool, name: str) -> str:
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
    """the totals of GPT-2's four sizes, tied (124,439,808 for gpt2) and untied (163,037,184);
    the docstring's example, count_params(50257, 768, 12, 1024) with tied left out, is tied"""
    for name in ref.PRESETS:
        shape = _preset(name)
        for tied in (True, False):
            fields, what = _count(learner, seed, shape, tied, name=name)
            got, want = fields["total"], ref.count_params(**shape, tied=tied).total
            if got != want:
                hint = _total_hint(got - want, shape, tied, name)
                raise Mistake(f"{what}: total {got:,}, expected {want:,}: {hint}")
    shape = _preset("gpt2")
    for positional in (True, False):
        fields, what = _count(learner, seed, shape, None, positional=positional)
        want = ref.count_params(**shape).total
        if fields["total"] != want:
            hint = ("tied defaults to True, as the stub's signature says (tied: bool = True)"
                    if fields["total"] == ref.count_params(**shape, tied=False).total else
                    _total_hint(fields["total"] - want, shape, True, "gpt2"))
            raise Mistake(f"{what}: total {fields['total']:,}, expected {want:,}, the "
                          f"docstring's own example: {hint}")


WRAPPED = ("the right count wrapped around 2**32: it was computed in 32-bit integers (a "
           "torch.int32 tensor or numpy.int32), which overflow past 2**31 - 1 = 2,147,483,647. "
           "Count with Python's ints (or int64), which stay exact")


def _field_hint(field: str, got: Number, shape: dict, tied: bool, fields: dict) -> str:
    """The likely mistake behind one wrong field."""
    V, d, N, n_ctx = shape["vocab_size"], shape["d_model"], shape["n_layers"], shape["n_ctx"]
    if _wrapped(got, getattr(ref.count_params(**shape, tied=tied), field)):
        return WRAPPED
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


def _first_wrong(fields: dict[str, Number], want: ref.ParamCount) -> str | None:
    return next((f for f in FIELDS if fields[f] != getattr(want, f)), None)


def test_parts_field_by_field(learner, seed, gen):
    """every part (wte, wpe, attention, MLP, layer norms, ln_f, head) as a whole number, for
    the presets and for random shapes passed by name and positionally, exactly at the edges:
    one of each size, and a model whose counts are past 2**31"""
    cases = [(_preset(name), True, name, False) for name in ref.PRESETS]
    cases.append((_preset("gpt2"), False, "gpt2", False))
    for tied in (True, False):
        shape = _random_shape(gen)
        cases += [(shape, tied, "", True), (shape, tied, "", False)]
    large = _large_shape(gen)
    cases += [(SMALLEST, True, "one of each", False), (SMALLEST, False, "one of each", True),
              (large, False, "larger than Llama 3 405B", True),
              (large, True, "larger than Llama 3 405B", False)]
    for shape, tied, name, positional in cases:
        fields, what = _count(learner, seed, shape, tied, name=name, positional=positional)
        want = ref.count_params(**shape, tied=tied)
        wrong = _first_wrong(fields, want)
        if wrong is not None:
            expected = getattr(want, wrong)
            if positional and _first_wrong(_count(learner, seed, shape, tied)[0], want) is None:
                raise Mistake(
                    f"{what}: {wrong} is {fields[wrong]:,}, expected {expected:,}, though the "
                    "same call with the arguments by name is right: your count_params takes its "
                    "arguments in another order. Keep the stub's signature, count_params("
                    "vocab_size, d_model, n_layers, n_ctx, tied=True)"
                )
            hint = _field_hint(wrong, fields[wrong], shape, tied, fields)
            raise Mistake(f"{what}: {wrong} is {fields[wrong]:,}, expected {expected:,}: {hint}")
        floats = [f for f in FIELDS if not isinstance(fields[f], int)]
        if floats:
            raise Mistake(
                f"{what}: {', '.join(floats)} {'is' if len(floats) == 1 else 'are'} "
                f"{fields[floats[0]]!r}, a float: the right number, but a parameter count is a "
                "whole number (an int, as ParamCount's fields say). A / makes a float even "
                "when it divides exactly: keep to +, * and //"
            )


def _counts(shape: dict, tied: bool) -> dict[str, int]:
    """lumen's counts for ``shape``, as ParamCount's fields."""
    return dataclasses.asdict(ref.count_params(**shape, tied=tied))


def _described(shape: dict | None, tied: bool, name: str, counts: dict | None = None) -> str:
    """The record a method is asked of, for a message (``shape`` None: built by hand)."""
    if shape is None:
        return f"ParamCount({', '.join(f'{k}={v}' for k, v in (counts or {}).items())}), " \
               "built by hand (its fields fit no config: use them as they are)"
    size = name or ", ".join(f"{k}={v}" for k, v in shape.items())
    return f"the ParamCount of {size}, {'tied' if tied else 'untied'}"


def _by_hand(gen: torch.Generator) -> dict[str, int]:
    """A ParamCount's fields as a caller may fill them in by hand: whole numbers that add up
    to ``total`` but fit no config (an odd final_norm, a token_embedding with no d_model), so
    a method that works back to a config and counts again gives another answer."""
    fields = [f.name for f in dataclasses.fields(ref.ParamCount) if f.name != "total"]
    parts = {name: int(n) for name, n in zip(
        fields, torch.randint(1, 10**6, (len(fields),), generator=gen) * 2 + 1, strict=True)}
    return {**parts, "total": sum(parts.values())}


def _methods(learner, seed: int, counts: dict, what: str, **asked) -> dict:
    """The learner's ParamCount(**counts) (filled in by the grader) and what ``asked`` of it."""
    outcome = learner.call("param_count", seed=seed, counts=counts, **asked)
    return unwrap(outcome, f"ParamCount(**counts) for {what}", MODULE)


def test_embedding_share(learner, seed, gen):
    """embedding_share is token_embedding / total: 0.31 for gpt2 tied, less for larger models

    For GPT-2's sizes, a shape of this run's own, and a record built by hand whose fields fit
    no config: the share of whatever counts the record holds, a float."""
    cases = [(_preset("gpt2"), True, "gpt2"), (_preset("gpt2"), False, "gpt2"),
             (_preset("gpt2-xl"), True, "gpt2-xl"), (_random_shape(gen), True, ""),
             (None, True, "by hand")]
    for shape, tied, name in cases:
        counts = _by_hand(gen) if shape is None else _counts(shape, tied)
        what = f"embedding_share of {_described(shape, tied, name, counts)}"
        got = _number(_methods(learner, seed, counts, what, share=True)["embedding_share"], what)
        token, total = counts["token_embedding"], counts["total"]
        want = token / total
        if math.isclose(got, want, rel_tol=1e-9):
            continue
        hints = [
            ((token + counts["position_embedding"]) / total, "that includes the position "
             "embedding: the share is the token embedding (wte) alone"),
            (100 * want, "that is a percentage: return the fraction (0.31, not 31)"),
            (token / (total - token), "that divides by the rest of the model: divide by the "
             "total"),
        ]
        hint = next((h for value, h in hints if math.isclose(got, value, rel_tol=1e-9)),
                    "the token embedding's fraction of all parameters, token_embedding / total")
        raise Mistake(f"{what} is {got:.6g}, expected {want:.6g} = {token:,} / {total:,}: {hint}")


#: memory_bytes's argument -> bytes per number: as a string, as torch's dtype, by keyword
#: ("dtype=..."), and none at all ("default", fp32).
SIZES = {"default": 4, "fp32": 4, "fp16": 2, "bf16": 2, "torch.float32": 4, "torch.float16": 2,
         "torch.bfloat16": 2, "dtype=fp16": 2, "dtype=torch.bfloat16": 2}


def _memory_call(spec: str) -> str:
    """``spec`` as the call a learner would write: memory_bytes(dtype='fp16')."""
    keyword, name = spec.startswith("dtype="), spec.removeprefix("dtype=")
    arg = "" if name == "default" else name if name.startswith("torch.") else repr(name)
    return f"memory_bytes({'dtype=' if keyword else ''}{arg})"


def _memory_hint(got: Number, total: int, bytes_per: int, spec: str) -> str:
    if spec == "default":
        return "the default dtype is fp32, 4 bytes per number"
    hints = [
        (total * 4, f"{spec.split('.')[-1].removeprefix('dtype=')} stores each number in 2 bytes "
         "(16 bits), not 4: half precision halves the memory"),
        (total * bytes_per * 8, "that is bits: divide by 8 for bytes"),
        (total * bytes_per / 2**20, "that is MiB: return bytes"),
        (total, "that is the number of parameters: multiply by the bytes per number"),
    ]
    return next((h for value, h in hints if math.isclose(got, value, rel_tol=1e-12)),
                f"total x {bytes_per} bytes per number")


def test_memory_bytes(learner, seed, gen):
    """memory_bytes: 4 bytes per number in fp32 (the default), 2 in fp16 and bf16, torch's too

    For gpt2, a shape of this run's own, and a record built by hand: total x bytes per number
    of the record's own total."""
    for shape, tied, name in ((_preset("gpt2"), True, "gpt2"), (_random_shape(gen), False, ""),
                              (None, True, "by hand")):
        counts = _by_hand(gen) if shape is None else _counts(shape, tied)
        total, described = counts["total"], _described(shape, tied, name, counts)
        memory = _methods(learner, seed, counts, described, dtypes=list(SIZES))["memory"]
        for spec, bytes_per in SIZES.items():
            where = f"{_memory_call(spec)} of {described}"
            value = memory.get(spec) if isinstance(memory, dict) else None
            if spec.startswith("dtype=") and isinstance(value, dict) and \
                    value.get("error") == "TypeError":
                raise Mistake(f"{where} raised TypeError: {value.get('message', '')}: keep the "
                              "stub's signature, memory_bytes(self, dtype='fp32'), so that the "
                              "dtype can be given by name too")
            _refused(value, where)
            got, want = _numeric(value), total * bytes_per
            if got is None:
                raise Mistake(f"{where} returned {_kind(value)}, expected a whole number of "
                              "bytes (an int)")
            if got != want:
                raise Mistake(f"{where} is {got:,}, expected {want:,} = {total:,} x {bytes_per}: "
                              f"{_memory_hint(got, total, bytes_per, spec)}")
            if not isinstance(got, int):
                raise Mistake(f"{where} is {got!r}, a float: the right number, but bytes are a "
                              "whole number (an int, as the signature says). A / makes a float "
                              "even when it divides exactly: use //")


#: Dtypes memory_bytes does not understand: made-up names, and torch dtypes other than the three.
#: The names are exact: another spelling of a known one is unknown too.
UNKNOWN = ("fp12", "int3", "torch.float64", "torch.int8", "FP16", "Bf16", "float16")


def test_unknown_dtype_refused(learner, seed):
    """memory_bytes refuses a dtype it does not know with ValueError, listing those it knows"""
    counts, described = _counts(_preset("gpt2"), True), _described(_preset("gpt2"), True, "gpt2")
    memory = _methods(learner, seed, counts, described, dtypes=list(UNKNOWN))["memory"]
    for spec in UNKNOWN:
        where = f"{_memory_call(spec)} of {described}"
        value = memory.get(spec) if isinstance(memory, dict) else None
        if not (isinstance(value, dict) and "error" in value):
            got = _numeric(value)
            shown = f"{got:,}" if got is not None else _kind(value)
            raise Mistake(f"{where} returned {shown}, but should raise ValueError: a dtype it "
                          "does not know has no size to guess (only fp32, fp16 and bf16 do, as "
                          "strings or as torch.float32, torch.float16 and torch.bfloat16)")
        if _is_stub(value):
            raise NotImplementedYet(f"{where} is not implemented yet")
        if not is_one_of({"type": value["error"], "bases": value.get("bases")}, ("ValueError",)):
            raise Mistake(f"{where} raised {value['error']}: {value.get('message', '')}, but "
                          "should raise ValueError (a bad argument value), e.g. with "
                          "`if name not in DTYPE_BYTES: raise ValueError(...)`")
        message = str(value.get("message", ""))
        missing = [known for known in ref.DTYPE_BYTES if known not in message]
        if missing:
            raise Mistake(f"{where} raised ValueError({message!r}); the message should list the "
                          f"dtypes it understands ({', '.join(ref.DTYPE_BYTES)}), so the caller "
                          "can fix the call")
