"""Stage 'embedding': every promise of Embedding.__init__, Embedding.forward and check_ids.

Every value check compares with PyTorch's own lookup (``F.embedding``) computed in the grader,
on the grader's matrix copied into the layer. What the learner's process reports about itself
(the weight's type, the ids afterwards) is observed there: those checks earn their points
behind the rules (``bans.certify``; docs/threat-model.md).
"""

from __future__ import annotations

from autograder.suites.promises import Promise

INIT = "embeddings:Embedding.__init__"
FORWARD = "embeddings:Embedding.forward"
CHECK = "embeddings:check_ids"

SHAPES = "ids 0-d, (7,), (3, 5), (2, 3, 4) and (0,), int64, V=23, d=5"
EDGES = ("ids of each integer dtype up to the largest value it holds, on a table larger than "
         "its range where one fits (int8 up to 127 of 200 rows, uint8 255 of 300, int16 32767 "
         "of 33,000; int32 and int64 up to 69,999 of 70,000)")
DEVICES = "on every device of the run (the GPU, else the meta device with its values kept)"

PROMISES: list[Promise] = [
    # Embedding.__init__ (documented by the class)
    Promise(INIT, "vocab_size: V, the number of tokens (rows).",
            "Embedding(11, 6) and Embedding(vocab_size=11, d_model=6): a (V, d) matrix W "
            "loaded as 'weight', rows W[ids] looked up, one SGD step (certified); the lookups "
            "of every other check, V from 8 to 70,000",
            "test_embedding.py::test_weight_is_a_parameter",
            "test_embedding.py::test_weight_is_a_registered_v_by_d_parameter",
            mutant='weight a plain tensor'),
    Promise(INIT, "d_model: d, the width of each row (the residual stream's width).",
            f"Embedding(11, 6) as above (certified); {SHAPES}: output (..., d)",
            "test_embedding.py::test_lookup_every_shape",
            "test_embedding.py::test_weight_is_a_registered_v_by_d_parameter",
            mutant='flattens the output'),
    Promise(INIT, "std: standard deviation of the N(0, std^2) initialisation",
            "left to its default (0.02) by every build here; the given code stores it and "
            "stage init's reset_parameters draws with it, graded there "
            "(test_init.py::test_reset_parameters_uses_std); here the layer as written, "
            "loaded and converted with .double()",
            "test_embedding.py::test_layer_as_you_wrote_it",
            "test_embedding.py::test_weight_is_a_registered_v_by_d_parameter",
            mutant='given code changed: double() overridden (the layer stays float32)'),
    Promise(INIT, "Kept as it came (``self.std is None`` for None): ``reset_parameters`` works "
            "it out.", "Embedding(11, 6, std=None) and std=0.3, std by name: the std the layer "
            "holds once built (certified)", "test_embedding.py::test_weight_is_a_parameter",
            "test_embedding.py::test_weight_is_a_registered_v_by_d_parameter",
            edges=("defaults",), mutant="std=None mapped to 0.02 in the constructor"),
    Promise(INIT, "scale: multiply the output by ``sqrt(d_model)``",
            "Embedding(12, 16, scale=True), 5 ids, scale_output the grader's scaffold (x * 3): "
            "scaled once, through scale_output, never in forward",
            "test_embedding.py::test_scale_is_applied_once",
            "test_embedding.py::test_forward_returns_its_rows_through_scale_output",
            mutant='scales twice'),
    Promise(INIT, "forward: ids ``(...)`` integer -> ``(..., d_model)`` in ``weight``'s dtype "
            "and device.", f"{SHAPES}, {DEVICES}; float64 and bfloat16 weights",
            "test_embedding.py::test_meta_device_and_dtypes",
            "test_embedding.py::test_output_keeps_the_weights_dtype_and_device",
            mutant='float32 output whatever the weight'),
    Promise(INIT, "Build it positionally or by name, ``Embedding(V, d)`` or "
            "``Embedding(vocab_size=V, d_model=d)``.",
            "Embedding(11, 6) and Embedding(vocab_size=11, d_model=6), then the (7,) lookup "
            "built by name and the others by position",
            "test_embedding.py::test_lookup_every_shape",
            "test_embedding.py::test_weight_is_a_registered_v_by_d_parameter",
            mutant="nn.Embedding's argument names (num_embeddings, embedding_dim)"),
    # Embedding.forward
    Promise(FORWARD, "ids: token ids of any shape ``(...)`` (a single 0-d id too, and none at "
            "all: ids of shape ``(4, 0)`` give ``(4, 0, d_model)``)",
            f"{SHAPES}, {DEVICES}",
            "test_embedding.py::test_lookup_every_shape",
            "test_embedding.py::test_ids_of_any_shape",
            mutant='rows reshaped with view(*ids.shape, -1) (an empty batch cannot be sized)',
            edges=('0-d', 'empty', 'size-1', 'devices')),
    Promise(FORWARD, "of any integer dtype: plain ``weight[ids]`` refuses int8 and int16 ids",
            "(3, 4) ids of V=120 in int8, int16, int32, int64 and uint8, transposed (int64, "
            "uint8) and strided (int32)", "test_embedding.py::test_integer_dtypes_accepted",
            "test_embedding.py::test_every_integer_dtype_and_layout",
            mutant='plain weight[ids] (int16 refused, uint8 read as a mask)',
            edges=('integer dtypes',)),
    Promise(FORWARD, "Every value the dtype holds is an id: uint8 ids of a 300-row table go up "
            "to 255", f"{EDGES}, (2, 4) ids holding the largest and 0, through forward",
            "test_embedding.py::test_integer_dtypes_accepted",
            "test_embedding.py::test_ids_at_the_edges_of_their_dtype",
            mutant=("a range check made in the ids' own dtype (vocab_size wraps "
                    "in uint8, int8, int16)")),
    Promise(FORWARD, "Contiguous or not (flatten with ``reshape``, not ``view``), and left as "
            "they were", "transposed and strided ids (values); the ids of every shape "
            "afterwards, values and version counter (certified)",
            "test_embedding.py::test_ids_are_left_unchanged",
            "test_embedding.py::test_forward_leaves_the_ids_as_they_were",
            mutant="the caller's ids changed in place (unsqueeze_)"),
    Promise(FORWARD, "row ``ids[...]`` of ``weight``, exactly", f"{SHAPES}, {DEVICES}: "
            "torch.equal with F.embedding", "test_embedding.py::test_lookup_every_shape",
            "test_embedding.py::test_forward_is_the_row_lookup",
            mutant='forward squeezes its output (ids of shape (1, 4) give (4, d))'),
    Promise(FORWARD, "in ``weight``'s dtype (float64 and bfloat16 too) and on its device",
            f"(2, 3) ids, float64 and bfloat16 weights; {DEVICES}",
            "test_embedding.py::test_meta_device_and_dtypes",
            "test_embedding.py::test_output_keeps_the_weights_dtype_and_device",
            mutant='hard-coded cpu'),
    Promise(FORWARD, "then ``self.scale_output``, which does the optional scaling (so none "
            "here)", "Embedding(12, 16, scale=True) with the scaffold's scale_output (x * 3)",
            "test_embedding.py::test_scale_is_applied_once",
            "test_embedding.py::test_forward_returns_its_rows_through_scale_output",
            mutant='scales twice'),
    Promise(FORWARD, "the gradients of repeated ids add up in ``weight.grad``",
            "float64 weight (10, 4), ids [[3, 1, 3, 7], [3, 0, 1, 9]], a random upstream "
            "gradient", "test_embedding.py::test_repeated_ids_accumulate_gradients",
            "test_embedding.py::test_repeated_ids_add_up_their_gradients",
            mutant='rows written one by one (no accumulated gradient)'),
    Promise(FORWARD, "TypeError, IndexError: as ``check_ids``.",
            "every refused input of check_ids' rows, through forward as well",
            "test_embedding.py::test_out_of_range_ids_are_refused",
            "test_embedding.py::test_ids_outside_the_vocabulary_raise",
            mutant='the range check in forward, none in check_ids'),
    # check_ids
    Promise(CHECK, "any integer dtype (int8, int16, int32, int64, uint8: compare them as "
            "int64", f"{EDGES}: check_ids on its own must not raise",
            "test_embedding.py::test_integer_dtypes_accepted",
            "test_embedding.py::test_ids_at_the_edges_of_their_dtype",
            mutant='int8 ids refused',
            edges=('integer dtypes', '0-d', 'empty', 'size-1', 'devices')),
    Promise(CHECK, "vocab_size: V, the number of rows; valid ids are ``0 <= id < V``.",
            "V=17: ids -1, -17, 17 and one past (by position, once by name); the valid edges "
            "of every dtype above", "test_embedding.py::test_out_of_range_ids_are_refused",
            "test_embedding.py::test_ids_outside_the_vocabulary_raise",
            mutant='negative ids wrap'),
    Promise(CHECK, "TypeError: ``ids`` is not a tensor",
            "float32, float16, bool and complex64 ids, and a Python list, through forward and "
            "check_ids on its own", "test_embedding.py::test_non_integer_ids_are_refused",
            "test_embedding.py::test_check_ids_refuses_what_is_not_integer_ids",
            mutant='float ids accepted'),
    Promise(CHECK, "IndexError: some id is outside ``[0, vocab_size)``; the message names that "
            "id and ``vocab_size``.",
            "V=17: -1, -V, V and a 0-d id past V in int64; the ends of int8 (-128), uint8 "
            "(255), int16 (-32768) and int64 (-2**63), each among valid (2, 4) ids",
            "test_embedding.py::test_out_of_range_ids_are_refused",
            "test_embedding.py::test_ids_outside_the_vocabulary_raise",
            mutant='its own exceptions, named TypeError and IndexError but derived from Exception'),
]
