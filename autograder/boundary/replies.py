"""What each probe's reply may hold: one schema per probe, checked once where replies arrive.

The probes (``sandboxed/probes/``) run in the learner's process, which can rewrite them, so a
reply is whatever that process chose to send. ``boundary/session.StageSession`` checks every
reply against its probe's schema before the hidden suites see it: a mismatch is the learner's
mistake, never an exception inside a hidden test. A field the honest probe fixes the type of
is typed; one that is whatever the learner's code returned (an ``out``, a gradient) is
``ANY``, and the suites judge it with ``feedback.expect_tensor`` and ``values.close``.

The notation, read like the reply itself: ``str``, ``bool``, ``int`` (never a bool),
``float``, ``NUMBER`` (an int or a float); ``{"key": S, "key?": S}`` a dict with exactly these
keys, ``?`` marking one that may be absent; ``DictOf(S)`` any keys, each value ``S``; ``[S]`` a
list of ``S``; ``Items(S1, S2, ...)`` a list of exactly these; ``Maybe(S)`` None or ``S``;
``OneOf(S1, S2, ...)`` the first that fits; ``ANY`` anything.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class _Any:
    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()


@dataclass(frozen=True)
class DictOf:
    value: object


@dataclass(frozen=True)
class Items:
    items: tuple

    def __init__(self, *items: object) -> None:
        object.__setattr__(self, "items", items)


@dataclass(frozen=True)
class OneOf:
    options: tuple

    def __init__(self, *options: object) -> None:
        object.__setattr__(self, "options", options)


def Maybe(schema: object) -> OneOf:  # noqa: N802 - reads as a type, like Optional
    return OneOf(None, schema)


NUMBER = OneOf(int, float)


def problem(value: object, schema: object, path: str = "reply") -> str | None:
    """Where ``value`` first departs from ``schema``, for a message; None if it fits."""
    if schema is ANY:
        return None
    if schema is None:
        return None if value is None else f"{path} is not None"
    if isinstance(schema, type):
        return None if type(value) is schema else f"{path} is not a {schema.__name__}"
    if isinstance(schema, OneOf):
        if any(problem(value, option, path) is None for option in schema.options):
            return None
        return f"{path} is none of the forms the probe sends"
    if isinstance(schema, list | Items):
        if type(value) is not list:
            return f"{path} is not a list"
        if isinstance(schema, Items):
            if len(value) != len(schema.items):
                return f"{path} has {len(value)} items, not {len(schema.items)}"
            pairs = zip(value, schema.items, strict=True)
        else:
            pairs = ((item, schema[0]) for item in value)
        for i, (item, item_schema) in enumerate(pairs):
            if (found := problem(item, item_schema, f"{path}[{i}]")) is not None:
                return found
        return None
    if type(value) is not dict:
        return f"{path} is not a dict"
    if isinstance(schema, DictOf):
        for key, item in value.items():
            if (found := problem(item, schema.value, f"{path}[{key!r}]")) is not None:
                return found
        return None
    fields = {key.removesuffix("?"): key.endswith("?") for key in schema}
    if (extra := set(value) - set(fields)):
        return f"{path} has a field the probe never sends: {sorted(map(str, extra))[0]!r}"
    for key, optional in fields.items():
        if key not in value:
            if optional:
                continue
            return f"{path} lacks {key!r}"
        found = problem(value[key], schema[f"{key}?" if optional else key], f"{path}[{key!r}]")
        if found is not None:
            return found
    return None


# --- pieces the probes share ------------------------------------------------------------------

#: The learner's exception as the worker describes it (``loader.error_data``); the worker's own
#: "could not be sent back" adds ``not_implemented``.
ERROR = {"type": str, "message": str, "where": [str], "bases?": [str],
         "not_implemented?": bool}
#: An exception caught inside a probe (``probes/shared._attempt``, ``probes/shared.refusal``).
REFUSAL = {"error": str, "message": str, "bases?": [str]}


def attempt(schema: object) -> OneOf:
    """``probes/shared._attempt(get)``: what ``get()`` gave, or its exception as data."""
    return OneOf(REFUSAL, schema)


#: ``probes/recorder._recorded``: what ran while the call was watched (only with ``watch``).
RECORDED = {"calls?": [str], "watch_problem?": Maybe(str)}


def watched(*inputs: str) -> dict:
    """``probes/shared._watched``: the learner's output, the inputs afterwards, which of them an
    in-place operation touched. On the meta device (or for ids that are not a tensor), the
    output alone."""
    return {"out": ANY, "inputs?": {name: ANY for name in inputs}, "in_place?": [str],
            **RECORDED}


def searched(*inputs: str) -> dict:
    """``probes/neighbours._searched``: the (ids, sims) pair the learner returned, if it was
    one, and the inputs as ``watched``; on the meta device, the pair alone."""
    return {"ids": ANY, "sims": ANY, "kind": str,
            "inputs?": {f"{name}?" if name == "token" else name: ANY for name in inputs},
            "in_place?": [str]}


#: ``probes/shared._load``: load_state_dict's result.
LOADED = {"missing": [ANY], "unexpected": [ANY]}
#: ``probes/params._count``: a whole number, or what it was instead.
COUNT = {"int": Maybe(int), "type": str, "float?": Maybe(float)}
#: ``probes/tying._tie_facts``: what a model says about its tie (messages only).
TIE_FACTS = {"same_object": bool, "same_storage": bool, "head_shape": [int],
             "same_values": bool, "transposed": bool, "n_params": int, "head_is_param": bool}
#: A state_dict, as the learner's model returned it.
STATE = DictOf(ANY)
#: ``probes/init._constructed``: a constructor's refusal, or what it left after its last call of
#: the recorded method and once done (a weight, or a state: the learner's values).
CONSTRUCTED = {"built": Maybe(REFUSAL), "times_called": int, "recorded?": ANY, "final?": ANY}
#: Rows looked up and the gradient in the registered weight (``embedding_lookup_as_shipped``).
ROWS = {"rows": ANY, "grad": ANY}


# --- the probes -------------------------------------------------------------------------------

SCHEMAS: dict[str, object] = {
    "embedding_parameter": {
        "has_weight": bool, "weight_type": str, "registered": bool, "std": Maybe(NUMBER),
        "parameters": [Items(str, ANY, bool)], "shape": Maybe([int]), "requires_grad": bool,
        "load": attempt(LOADED),
        "trained?": attempt({"rows": ANY, "grad": ANY, "after": ANY}),
    },
    "embedding_forward": {**watched("ids"), "grad?": ANY},
    "embedding_check_ids": {"returned": str},
    "one_hot": watched("ids"),
    "embed_via_onehot": watched("weight", "ids"),
    "cosine_similarity": watched("a", "b"),
    "cosine_neighbours": searched("E", "token"),
    "analogy": searched("E"),
    "count_params": {"type": str, "fields": DictOf(COUNT)},
    "param_count": {
        "memory": DictOf(OneOf(REFUSAL, COUNT)),
        "embedding_share?": OneOf(NUMBER, REFUSAL, {"type": str}),
    },
    "gpt2_build": {**TIE_FACTS, "logits": ANY},
    "gpt2_perturbed": {
        "before": TIE_FACTS, **TIE_FACTS, "load": attempt(LOADED), "logits": ANY,
        "grads?": {"wte.weight": ANY, "lm_head.weight": ANY},
    },
    "gpt2_sgd_step": {**TIE_FACTS, "load": attempt(LOADED), "logits": ANY},
    "gpt2_tie_direction": {**TIE_FACTS, "tied_before": bool, "load": attempt(LOADED),
                           "logits": ANY},
    "embedding_init": {"weight": ANY},
    "embedding_reset": {"same_object": bool, "rows": ANY, "after": ANY},
    "embedding_scale": {"out": ANY, "input_after": ANY, "grad": ANY},
    "embedding_on_device": {"out": ANY},
    "expected_dot_std": {"value": Maybe(float), "type": str},
    "gpt2_init": {"state": STATE},
    "gpt2_on_device": {"placed": STATE},
    # given code as the learner wrote it (the probes' last section)
    "embedding_as_shipped": CONSTRUCTED,
    "gpt2_as_shipped": CONSTRUCTED,
    "gpt2_tie_as_shipped": {"pinned": attempt(ANY), "shipped": attempt(ANY)},
    "embedding_lookup_as_shipped": {"pinned": attempt(ROWS), "shipped": attempt(ROWS)},
}


# --- the worker's own messages (``sandboxed/worker.py``) --------------------------------------

#: The first message of a stage process: who it is (the zygote is asked to kill it by this).
HELLO_PID = {"pid": int}
#: After loading the submission: each module's import error, and what importing printed.
HELLO_IMPORTS = {"imports": DictOf(ERROR), "output": str}


def schema_of(probe: str) -> object:
    """``probe``'s value schema; a RuntimeError (the grader's bug) if it has none."""
    if probe not in SCHEMAS:
        raise RuntimeError(f"the probe {probe!r} has no reply schema in "
                           "autograder/boundary/replies.py")
    return SCHEMAS[probe]


def reply_problem(probe: str, reply: object) -> str | None:
    """Where the reply to a call of ``probe`` departs from what the worker sends, or None.

    The worker sends the probe's value, the learner's exception, or the probe's refusal of its
    arguments (each with how long it took and, but for one of the worker's own errors, what
    was printed). A probe without a schema is the grader's bug, said at once, in the grader
    (tests/test_wire.py checks that every probe has one)."""
    common = {"seconds": float, "output?": str}
    kinds = {"value": schema_of(probe), "error": ERROR, "probe_error": str}
    kind = next((k for k in kinds if isinstance(reply, dict) and k in reply), "value")
    return problem(reply, {kind: kinds[kind], **common})
