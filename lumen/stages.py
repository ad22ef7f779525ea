"""The stages of the exercise: one list that stubs, tests, rubric and reports all read.

A stage owns the functions whose bodies the learner writes. The stub generator checks that
every ``### BEGIN SOLUTION`` region sits in exactly one owned function, and the grader uses
the same list to grade each stage in isolation: in the stage's own process, the functions the
other stages own are the grader's public stand-ins (never the reference) and the given code is
the grader's own copy, so a broken Embedding does not cost the tying points.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    """One gradable step of the chapter.

    Attributes:
        name: the short name used as pytest marker, rubric key and report heading.
        title: what the learner builds, in the chapter's words.
        section: the chapter section that explains it.
        owns: the functions the learner writes, as ``"module:Qualified.name"``.
    """

    name: str
    title: str
    section: str
    owns: tuple[str, ...]


STAGES: tuple[Stage, ...] = (
    Stage(
        "embedding",
        "the Embedding module: a V x d Parameter and a row lookup",
        "Dense embeddings: a lookup table that is also a matrix multiply",
        (
            "embeddings:Embedding.__init__",
            "embeddings:Embedding.forward",
            "embeddings:check_ids",
        ),
    ),
    Stage(
        "onehot",
        "the one-hot equivalence: one_hot(ids) @ E selects the rows of E",
        "One-hot encoding: correct but wasteful",
        ("embeddings:one_hot", "embeddings:embed_via_onehot"),
    ),
    Stage(
        "neighbours",
        "cosine similarity, nearest neighbours and the analogy",
        "Measuring similarity: cosine",
        (
            "embeddings:cosine_similarity",
            "embeddings:_top_k",
            "embeddings:cosine_neighbours",
            "embeddings:analogy",
        ),
    ),
    Stage(
        "params",
        "the parameter calculator: where a GPT-2's parameters live",
        "Choosing the embedding dimension",
        (
            "params:count_params",
            "params:ParamCount.embedding_share",
            "params:ParamCount.memory_bytes",
        ),
    ),
    Stage(
        "tying",
        "weight tying: one matrix for the embedding and the output layer",
        "Weight tying with the output layer",
        ("gpt2:GPT2.tie_weights",),
    ),
    Stage(
        "init",
        "initialisation: why the numbers start small",
        "Initialisation: why the numbers start small",
        (
            "embeddings:Embedding.reset_parameters",
            "embeddings:Embedding.scale_output",
            "embeddings:expected_dot_std",
            "gpt2:GPT2.init_weights",
        ),
    ),
)

STAGE_NAMES: tuple[str, ...] = tuple(stage.name for stage in STAGES)

#: The files a learner submits; every stage lives in one of them.
SUBMISSION_FILES: tuple[str, ...] = ("embeddings.py", "params.py", "gpt2.py")


def stage(name: str) -> Stage:
    """Return the stage called ``name``; a ValueError lists the valid names."""
    for s in STAGES:
        if s.name == name:
            return s
    raise ValueError(f"unknown stage {name!r}; the stages are {', '.join(STAGE_NAMES)}")


def owner(module: str, qualname: str) -> str | None:
    """The stage that owns ``module:qualname``, or None for code the learner is given."""
    key = f"{module}:{qualname}"
    for s in STAGES:
        if key in s.owns:
            return s.name
    return None


#: What every stub raises (NotImplementedError), written and read only by the two functions
#: below: the stub generator, the visible tests, the explorer and the grader all use them.
_STUB = re.compile(r"([\w.]+) is not implemented yet \(stage '(\w+)'\)")


def stub_message(qualname: str, stage: str) -> str:
    """The message of a stub: ``Embedding.forward is not implemented yet (stage 'embedding')``."""
    return f"{qualname} is not implemented yet (stage '{stage}')"


def parse_stub_message(text: str) -> tuple[str, str] | None:
    """(function, stage) if ``text`` contains a stub's message, else None."""
    found = _STUB.search(text)
    return (found[1], found[2]) if found else None
