"""Stage 'onehot': every promise of one_hot and embed_via_onehot, and the checks that hold it.

Compared with lumen (and ``weight[ids]``) exactly: a one-hot holds zeros and ones, so the
product has no rounding to forgive. The ids never hold the last class (``test_onehot._ids``),
so a length guessed from ``ids.max() + 1`` always shows. That the inputs are left as they
were, and that embed_via_onehot is a product, earn their points behind the rules
(``bans.certify``; docs/threat-model.md).
"""

from __future__ import annotations

from autograder.suites.promises import Promise

ONE_HOT = "embeddings:one_hot"
EMBED = "embeddings:embed_via_onehot"

SHAPES = "ids 0-d, (6,), (2, 5) and (0,) (empty), int64"
DEVICES = "on every device of the run (the GPU, else the meta device with its values kept)"
DTYPES = "(3, 4) ids in int8, int16, int32, int64 and uint8, transposed and strided"
EDGES = ("(2, 3) ids of each integer dtype up to the largest value it holds with more classes "
         "than its range where one fits (int8 up to 127 of 200, uint8 255 of 300; int16, int32 "
         "and int64 up to 998 of 1,000: 33,000 classes would make a one-hot from a V x V "
         "identity 4 GB)")

PROMISES: list[Promise] = [
    # one_hot
    Promise(ONE_HOT, "ids: token ids of any shape ``(...)`` (a single 0-d id too)",
            f"{SHAPES}, V=9, {DEVICES}", "test_onehot.py::test_one_hot_rows",
            "test_onehot.py::test_one_hot_matches_pytorch",
            mutant='one_hot squeezes its output (ids of shape (3, 1) give (3, V))',
            edges=('0-d', 'empty', 'size-1')),
    Promise(ONE_HOT, "of any integer dtype (``scatter_`` wants int64 indices",
            f"{DTYPES}, V=9", "test_onehot.py::test_integer_ids_accepted",
            "test_onehot.py::test_every_integer_dtype_and_layout",
            mutant='scatter_ with the ids as they are (no .long())',
            edges=('integer dtypes',)),
    Promise(ONE_HOT, "``num_classes`` may not fit in the ids' dtype (uint8 ids up to 255 with "
            "300 classes): compare and count in int64", EDGES,
            "test_onehot.py::test_integer_ids_accepted",
            "test_onehot.py::test_ids_at_the_edges_of_their_dtype",
            mutant=("the classes counted in the ids' own dtype (arange wraps: "
                    "255 matches class 255 and 511)")),
    Promise(ONE_HOT, "Left as they were: no ``ids.unsqueeze_(-1)``",
            f"{SHAPES}: the ids afterwards, values and version counter (certified)",
            "test_onehot.py::test_ids_and_weight_are_left_unchanged",
            "test_onehot.py::test_one_hot_leaves_the_ids_alone",
            mutant="the caller's ids changed in place (unsqueeze_)"),
    Promise(ONE_HOT, "num_classes: V, the length of each one-hot vector. Always given, never "
            "guessed from ``ids.max()``", "V=12, ids below 8, num_classes by position ((5,) "
            "ids) and by name ((2, 3) ids); every other check's ids lack the last class",
            "test_onehot.py::test_num_classes_is_given",
            "test_onehot.py::test_num_classes_is_given_not_guessed",
            mutant='num_classes guessed from ids.max() + 1'),
    Promise(ONE_HOT, "dtype: the result's dtype, float32 unless given (by position or by name)",
            "(3, 2) ids, V=7: dtype left out, float64 by name, float16 by position, bfloat16 "
            "by name", "test_onehot.py::test_one_hot_dtype",
            "test_onehot.py::test_one_hot_dtype",
            mutant='dtype argument ignored',
            edges=('defaults',)),
    Promise(ONE_HOT, "``(..., num_classes)`` in ``dtype``, on ``ids``'s device",
            f"{SHAPES}: the shape and a single 1 at each id; (2, 3) ids {DEVICES}",
            "test_onehot.py::test_one_hot_device",
            "test_onehot.py::test_results_follow_the_inputs_device",
            mutant='one_hot compares the ids with a CPU arange',
            edges=('devices',)),
    # embed_via_onehot
    Promise(EMBED, "weight: the embedding matrix E, ``(V, d)``; left as it was.",
            f"float32 and float64 (13, 5) weights with rows of very different sizes, {SHAPES}; "
            "the weight afterwards (certified)",
            "test_onehot.py::test_embed_via_onehot_is_the_lookup",
            "test_onehot.py::test_embed_via_onehot_selects_rows",
            mutant="embed_via_onehot's weight renamed (E)"),
    Promise(EMBED, "ids: token ids as in ``one_hot``: any shape, any integer dtype, contiguous "
            "or not; left as they were.", f"{DTYPES}; {EDGES}; {SHAPES}",
            "test_onehot.py::test_integer_ids_accepted",
            "test_onehot.py::test_every_integer_dtype_and_layout",
            mutant='rows of the identity indexed by the ids as they are (uint8 read as a mask)',
            edges=('integer dtypes',)),
    Promise(EMBED, "``(..., d)`` in ``weight``'s dtype (float64, float16, bfloat16 too",
            "bfloat16 and float16 (11, 4) weights on the CPU; float32 and float64 in the "
            "lookup check", "test_onehot.py::test_embed_via_onehot_dtype_and_device",
            "test_onehot.py::test_embed_via_onehot_keeps_the_weights_dtype",
            mutant='a float32 one-hot with a float64 weight',
            edges=('float dtypes',)),
    Promise(EMBED, "on ``weight``'s device", f"(2, 3) ids, a float32 weight, {DEVICES}",
            "test_onehot.py::test_embed_via_onehot_dtype_and_device",
            "test_onehot.py::test_results_follow_the_inputs_device",
            mutant='embed_via_onehot hard-coded cpu, another error elsewhere',
            edges=('devices',)),
    Promise(EMBED, "for a finite E, exactly the lookup's numbers",
            f"{SHAPES}, float32 and float64, {DEVICES}, by position and by name: torch.equal "
            "with weight[ids]", "test_onehot.py::test_embed_via_onehot_is_the_lookup",
            "test_onehot.py::test_embed_via_onehot_selects_rows",
            mutant='the one-hot transposed (E @ onehot^T)',
            edges=('0-d', 'empty', 'size-1')),
    Promise(EMBED, "Compute the product: every row of E takes part.",
            "float32 and float64 (12, 5) weights with an inf and a NaN in rows no id selects: "
            "their columns must be NaN (certified)",
            "test_onehot.py::test_embed_via_onehot_is_a_product",
            "test_onehot.py::test_embed_via_onehot_is_a_product",
            mutant='embed_via_onehot looks the rows up (weight[ids]), no product'),
]
