"""Stage 'params': every promise of count_params, embedding_share and memory_bytes, and its checks.

Counts are exact whole-number arithmetic, so every hidden check compares with lumen's count of
the same shape, or with the grader's own ParamCount (``param_count``), never with a number the
learner's process derived.
"""

from __future__ import annotations

from autograder.suites.promises import Promise

COUNT = "params:count_params"
SHARE = "params:ParamCount.embedding_share"
MEMORY = "params:ParamCount.memory_bytes"

#: Random shapes: each size in a range of its own, N < d < n_ctx < V (test_params._random_shape).
RANDOM = "a random small shape of the run's seed (N in 2-8, d 10-96, n_ctx 100-512, V 600-2000)"
EDGES = ("count_params(1, 1, 1, 1) tied by name and untied by position, and a random shape "
         "past 2**31 (V 200,000-262,144, d 12,288-16,384, N 64-128, n_ctx 65,536-131,072), "
         "tied by name and untied by position")
PRESETS = "GPT-2's four presets by name, tied and untied"
FILLED = "a ParamCount the grader fills in with lumen's counts (gpt2, gpt2-xl, a random shape)"

PROMISES: list[Promise] = [
    # count_params
    Promise(COUNT, "The arguments come by position, in this order, or by name.",
            f"{RANDOM}, by position (count_params(V, d, N, n_ctx, tied)) and by name; "
            "the one-of-each and past-2**31 shapes both ways",
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_arguments_by_position_or_by_name",
            mutant="count_params's arguments in another order (n_ctx before n_layers)"),
    Promise(COUNT, "vocab_size: V.", f"{PRESETS}; {RANDOM}; {EDGES}",
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_every_part_matches_pytorchs_layers",
            mutant='the tied head counted'),
    Promise(COUNT, "d_model: d.", f"{PRESETS}; {RANDOM}; {EDGES}",
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_every_part_matches_pytorchs_layers",
            mutant='attention without biases'),
    Promise(COUNT, "n_layers: N, the number of blocks.", f"{PRESETS}; {RANDOM} (N >= 2); {EDGES}",
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_every_part_matches_pytorchs_layers",
            mutant='layer norms dropped'),
    Promise(COUNT, "n_ctx: the context length (rows of the position embedding).",
            f"{PRESETS}; {RANDOM}; {EDGES}",
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_every_part_matches_pytorchs_layers",
            mutant='the position embedding forgotten'),
    Promise(COUNT, "tied: whether the output layer reuses the token embedding (weight tying).",
            f"{PRESETS}: the totals; {RANDOM}, tied and untied: lm_head",
            "test_params.py::test_gpt2_totals",
            "test_params.py::test_untying_adds_one_more_table",
            mutant='count_params untied by default (tied=False)'),
    Promise(COUNT, "token and position embeddings, ``n_layers`` pre-LN blocks",
            f"{PRESETS}; {RANDOM}: token_embedding, position_embedding and the per-block "
            "fields multiplied by N", "test_params.py::test_parts_field_by_field",
            "test_params.py::test_every_part_matches_pytorchs_layers",
            mutant='the position embedding forgotten'),
    Promise(COUNT, "attention with a fused d -> 3d projection and a d -> d output projection",
            f"{PRESETS}; {RANDOM}: attention = N x (4d^2 + 4d)",
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_every_part_matches_pytorchs_layers",
            mutant='attention without biases'),
    Promise(COUNT, "an MLP d -> 4d -> d", f"{PRESETS}; {RANDOM}: mlp = N x (8d^2 + 5d)",
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_every_part_matches_pytorchs_layers",
            mutant="the MLP's hidden layer 3d wide, not 4d"),
    Promise(COUNT, "a final LayerNorm", f"{PRESETS}; {RANDOM}: final_norm = 2d",
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_every_part_matches_pytorchs_layers",
            mutant='the final LayerNorm forgotten'),
    Promise(COUNT, "every Linear and LayerNorm with a bias",
            f"{PRESETS}; {RANDOM}: attention, mlp, layer_norms and final_norm field by field",
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_every_part_matches_pytorchs_layers",
            mutant='no biases anywhere'),
    Promise(COUNT, "a d -> V head without bias that is the token embedding itself when ``tied``",
            f"{PRESETS}: lm_head 0 tied, d x V untied (no bias)",
            "test_params.py::test_gpt2_totals",
            "test_params.py::test_untying_adds_one_more_table",
            mutant='the tied head counted'),
    Promise(COUNT, "The ``ParamCount``, every field a whole number;",
            f"{PRESETS}; {RANDOM}; {EDGES}: the type ParamCount, each field as operator.index "
            "takes it (int, numpy's integers, 0-d integer tensors), a float refused",
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_counts_are_whole_numbers",
            mutant='the total a float (math.fsum)'),
    Promise(COUNT, "``count_params(50257, 768, 12, 1024).total == 124_439_808``",
            "gpt2 by name, tied", "test_params.py::test_gpt2_totals",
            "test_params.py::test_gpt2_sizes_as_published",
            mutant='count_params untied by default (tied=False)',
            edges=('defaults', 'examples')),
    Promise(COUNT, "``count_params(50257, 768, 12, 1024, False)`` is the same model untied.",
            "gpt2 by name, untied (163,037,184)", "test_params.py::test_gpt2_totals",
            "test_params.py::test_untying_adds_one_more_table",
            mutant='the tied head counted'),
    Promise(COUNT, "Exact for any sizes, from one of each (``count_params(1, 1, 1, 1)``) to "
            "models far larger than GPT-2, whose counts pass 2**31", EDGES,
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_counts_are_exact_at_the_edges",
            mutant='counts in int32 tensors (wrap past 2**31)'),
    Promise(COUNT, "count in Python's ints, never in int32 (a ``torch.int32`` tensor or "
            "``numpy.int32`` wraps around past 2,147,483,647)",
            f"{EDGES}: a count off by a multiple of 2**32 is named as int32 wrap-around",
            "test_params.py::test_parts_field_by_field",
            "test_params.py::test_counts_are_exact_at_the_edges",
            mutant='counts in int32 tensors (wrap past 2**31)'),
    # ParamCount.embedding_share
    Promise(SHARE, "The token embedding's fraction of all parameters, ``token_embedding / "
            "total``", f"{FILLED}, tied and untied", "test_params.py::test_embedding_share",
            "test_params.py::test_the_table_is_a_large_share_of_a_small_model",
            mutant='embedding_share counts the position embedding too'),
    Promise(SHARE, "for whatever counts this ParamCount holds",
            f"{FILLED}: the learner's count_params plays no part",
            "test_params.py::test_embedding_share",
            "test_params.py::test_embedding_share_of_any_count",
            mutant='embedding_share as a percentage'),
    Promise(SHARE, "(one filled in by hand too: use its fields, never a config worked back "
            "from them)", "a record built by hand: odd whole numbers that add up to its total "
            "and fit no config", "test_params.py::test_embedding_share",
            "test_params.py::test_embedding_share_of_any_count", edges=("by hand",),
            mutant="embedding_share from a config worked back out of the record"),
    Promise(SHARE, "a float, as ``/`` gives it (0.31 for GPT-2 small, tied), not a percentage "
            "and not a ``Fraction``.",
            "gpt2 tied (0.31), gpt2 untied, gpt2-xl tied: a float (a float subclass too; a "
            "Fraction, a numpy or torch scalar named), 100x named",
            "test_params.py::test_embedding_share",
            "test_params.py::test_embedding_share_of_any_count",
            mutant="embedding_share as an exact Fraction"),
    # ParamCount.memory_bytes
    Promise(MEMORY, "Bytes to store every parameter once in ``dtype``: this record's "
            "``total`` x bytes per number.", f"{FILLED} (gpt2 tied, a random shape untied) and "
            "a record built by hand that fits no config, every dtype below",
            "test_params.py::test_memory_bytes", "test_params.py::test_memory_bytes",
            edges=("by hand",),
            mutant="memory_bytes from a config worked back out of the record"),
    Promise(MEMORY, '"fp32" (4 bytes a number, the default), "fp16" or "bf16" (2 each)',
            "memory_bytes(), 'fp32', 'fp16', 'bf16' by position",
            "test_params.py::test_memory_bytes", "test_params.py::test_memory_bytes",
            mutant='fp16 at 4 bytes per number',
            edges=('defaults',)),
    Promise(MEMORY, "or the same three as torch's dtypes (torch.float32, torch.float16, "
            "torch.bfloat16)", "torch.float32, torch.float16, torch.bfloat16 by position",
            "test_params.py::test_memory_bytes", "test_params.py::test_memory_bytes",
            mutant="memory_bytes refuses torch's dtypes (strings only)"),
    Promise(MEMORY, 'by position or by name (``memory_bytes(dtype="fp16")``)',
            "dtype='fp16' and dtype=torch.bfloat16 by name; a TypeError names the signature",
            "test_params.py::test_memory_bytes", "test_params.py::test_memory_bytes",
            mutant="memory_bytes's argument renamed (dtype= refused)"),
    Promise(MEMORY, "A whole number of bytes (an int, as the counts are: use ``//``, never "
            "``/``).", "every dtype above: as operator.index takes it, a float refused",
            "test_params.py::test_memory_bytes", "test_params.py::test_memory_bytes",
            mutant='memory_bytes from bits / 8 (a float)'),
    Promise(MEMORY, "ValueError: for any other dtype, a torch one too (torch.float64, "
            "torch.int8)", "'fp12', 'int3', torch.float64, torch.int8 by position",
            "test_params.py::test_unknown_dtype_refused",
            "test_params.py::test_unknown_dtype_is_refused",
            mutant='any torch dtype sized by its bits (float64 as 8 bytes)'),
    Promise(MEMORY, 'and for the names spelled otherwise ("FP16", "float16": the names are '
            'exact)', "'FP16', 'Bf16', 'float16' by position",
            "test_params.py::test_unknown_dtype_refused",
            "test_params.py::test_unknown_dtype_is_refused",
            mutant="dtype names matched in any case"),
    Promise(MEMORY, "the message lists the ones understood.",
            "the same four: the message must name fp32, fp16 and bf16",
            "test_params.py::test_unknown_dtype_refused",
            "test_params.py::test_unknown_dtype_is_refused",
            mutant='unknown dtype raises KeyError'),
]
