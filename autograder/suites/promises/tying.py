"""Stage 'tying': every promise of GPT2.tie_weights, and the checks that hold it.

The values are earned on the grader's checkpoint (``values.grader_state``) loaded into the
learner's model, against lumen's GPT-2 holding the same checkpoint. Whether the head is the
very same Parameter is observed in the learner's process: those checks earn their points
behind the rules (``bans.certify``; docs/threat-model.md).
"""

from __future__ import annotations

from autograder.suites.promises import Promise

TIE = "gpt2:GPT2.tie_weights"
TINY = "GPT2(V=97, n_ctx=16, d=32, 2 blocks, 4 heads)"
SQUARE = "GPT2(V=64, n_ctx=16, d=64, 2 blocks, 4 heads), square so a transposed head runs"
LOADED = "the grader's checkpoint loaded (E stored once, as wte.weight), then wte.weight += delta"

PROMISES: list[Promise] = [
    Promise(TIE, "Apply ``self.config.tie_weights`` (read when called)",
            f"{TINY} built untied, the grader's checkpoint with two matrices loaded, then "
            "config.tie_weights=True and tie_weights() called again",
            "test_tying.py::test_embedding_matrix_is_kept",
            "test_tying.py::test_the_tie_keeps_the_embeddings_matrix",
            mutant='ties whatever the config says'),
    Promise(TIE, "share wte's matrix with lm_head, or keep them apart.",
            f"{SQUARE} tied and {TINY} untied, {LOADED}: the logits",
            "test_tying.py::test_tied_logits_and_initial_loss",
            "test_tying.py::test_untied_keeps_two_matrices",
            mutant='never ties'),
    Promise(TIE, "``lm_head.weight`` must be the very same Parameter as ``wte.weight`` (not a "
            "copy, not a view)",
            f"{TINY} tied, {LOADED}: logits h @ (E + delta)^T and wte.weight.grad holding both "
            "uses (certified)",
            "test_tying.py::test_tied_head_is_the_embedding",
            "test_tying.py::test_tied_head_is_the_same_parameter",
            mutant='head a copy (clone)'),
    Promise(TIE, "so the logits are ``h @ E.T``", f"{SQUARE}, {LOADED}, float32 on the CPU",
            "test_tying.py::test_tied_logits_and_initial_loss",
            "test_tying.py::test_tied_logits_are_h_times_the_table_transposed",
            mutant='tied to the transposed table'),
    Promise(TIE, "``parameters()`` counts it once",
            f"{TINY} tied and untied, the grader's checkpoint, one SGD step with weight decay "
            "over parameters() (certified)",
            "test_tying.py::test_parameter_count",
            "test_tying.py::test_tied_counts_the_table_once",
            mutant='head shares .data (two Parameters)'),
    Promise(TIE, "both uses of E add to its one gradient",
            f"{TINY} tied, {LOADED}, sum(logits * grad) backward: wte.weight.grad (certified)",
            "test_tying.py::test_tied_head_is_the_embedding",
            "test_tying.py::test_every_row_gets_gradient_from_the_output_side",
            mutant='a second head, refreshed from the table by a forward pre-hook'),
    Promise(TIE, "the tie survives ``.to(device)`` and a state_dict round trip (loading "
            "``wte.weight`` alone loads the head too)",
            f"{TINY} .to(device, float64) on every device of the run (the GPU, else the meta "
            f"device), and .to('cpu', bfloat16), then {LOADED}; and float32 on the CPU "
            "without .to()",
            "test_tying.py::test_tie_survives_to_and_load",
            "test_tying.py::test_the_tie_survives_to_and_a_state_dict_round_trip",
            mutant='nn.Parameter around wte.weight (split by .to)',
            edges=('devices',)),
    Promise(TIE, "The embedding's matrix is the one kept, exactly as it is",
            f"{TINY} built untied, wte and lm_head loaded with two different matrices, then "
            "tie_weights(): lumen's logits with wte's matrix as the head",
            "test_tying.py::test_embedding_matrix_is_kept",
            "test_tying.py::test_the_tie_keeps_the_embeddings_matrix",
            mutant='tied in the wrong direction'),
    Promise(TIE, "not transposed (nn.Linear stores (V, d), the table's own layout)",
            f"{SQUARE}: a transposed head still runs there, and is named",
            "test_tying.py::test_tied_logits_and_initial_loss",
            "test_tying.py::test_tied_logits_are_h_times_the_table_transposed",
            mutant='tied to the transposed table'),
    Promise(TIE, "not rescaled, so that a fresh model's loss on random ids is about ln V.",
            f"a fresh {SQUARE} as built, 8 x 16 random ids: next-token loss within 0.25 of "
            "ln 64", "test_tying.py::test_tied_logits_and_initial_loss",
            "test_tying.py::test_the_tie_keeps_the_embeddings_matrix",
            mutant='tied matrix rescaled by sqrt(d_model)'),
    Promise(TIE, "two separate Parameters, each keeping its own numbers",
            f"{TINY} untied, the checkpoint holding E and H, then wte.weight += delta: the "
            "logits must be h @ H^T", "test_tying.py::test_untied_keeps_two_matrices",
            "test_tying.py::test_untied_keeps_two_matrices",
            mutant='untied, the head redrawn with std 1'),
    Promise(TIE, "Untied, it changes nothing", f"{TINY} untied holding E and H, tie_weights() "
            "run again with config.tie_weights=False: the logits still h @ H^T",
            "test_tying.py::test_untied_keeps_two_matrices",
            "test_tying.py::test_untied_keeps_two_matrices",
            mutant="untied, the head made a copy of the table"),
    Promise(TIE, "(no copy of the table into the head, no fill of the head's: it may run "
            "again on a loaded model)", "as above: a copy of E, zeros, N(0, 1) draws named",
            "test_tying.py::test_untied_keeps_two_matrices",
            "test_tying.py::test_untied_keeps_two_matrices",
            mutant="untied, the head zeroed"),
]
