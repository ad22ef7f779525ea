"""Stage 'neighbours': every promise of cosine_similarity, _top_k, cosine_neighbours and analogy.

Compared with lumen on seeded tables whose deciding scores are at least GAP apart, or on exact
tables of +-1 times powers of two whose ties are real (``test_neighbours``'s docstring). The
learner's ``_top_k`` is reached through cosine_neighbours and analogy, which it ranks for (it
may be folded into them). That the arguments are left as they were is observed in the
learner's process and earns its points behind the rules (``bans.certify``).
"""

from __future__ import annotations

from autograder.suites.promises import Promise

COSINE = "embeddings:cosine_similarity"
TOP_K = "embeddings:_top_k"
NEIGHBOURS = "embeddings:cosine_neighbours"
ANALOGY = "embeddings:analogy"

DEVICES = "on every device of the run (the GPU, else the meta device with its values kept)"
TABLE = "a (25, 8) table with rows 1/16 to 16 long, its deciding scores 1e-3 apart"
EDGES = ("a 0-d token at the largest value of int8 (127 of 200 rows), uint8 (255 of 300) and "
         "int16 (32767 of 33,000)")

PROMISES: list[Promise] = [
    # cosine_similarity
    Promise(COSINE, "a: ``(..., d)``, for any d (1 and 2 too); left as it was",
            f"(6, d) pairs for d = 8 {DEVICES}, and d = 2, 1; the inputs afterwards "
            "(certified, test_inputs_are_left_unchanged)",
            "test_neighbours.py::test_cosine_similarity_values",
            "test_neighbours.py::test_eps_dtype_and_short_vectors",
            mutant='cosine_similarity divides its inputs in place'),
    Promise(COSINE, "b: ``(..., d)``, broadcastable against ``a`` as in ``a * b``",
            "(5, 6) with (6,), (6,) with (5, 6), (3, 1, 6) with (1, 4, 6), (6,) with (6,)",
            "test_neighbours.py::test_cosine_similarity_broadcasts",
            "test_neighbours.py::test_cosine_similarity_broadcasts",
            mutant='no broadcasting (a @ b)',
            edges=('size-1', 'empty')),
    Promise(COSINE, "eps: the least length: each vector is divided by ``max(its length, eps)``, "
            "each length on its own (not their product)",
            "eps=0.5 by position and by name on (6, 4) vectors 1/16 to 2 long; zero rows "
            "with the default eps", "test_neighbours.py::test_cosine_similarity_values",
            "test_neighbours.py::test_eps_dtype_and_short_vectors",
            mutant='eps added to the product of the lengths (a.b / (|a| |b| + eps))',
            edges=('defaults',)),
    Promise(COSINE, "so a zero vector scores 0, not NaN",
            "zero rows against random and zero rows; a zero row and a zero query in "
            "cosine_neighbours", "test_neighbours.py::test_zero_vectors_score_zero",
            "test_neighbours.py::test_a_zero_vector_scores_zero_not_nan",
            mutant='no eps (NaN for a zero vector)'),
    Promise(COSINE, "the broadcast shape without the last dimension, values in [-1, 1], in the "
            "inputs' dtype (float64 stays float64, bfloat16 stays bfloat16)",
            "the broadcast pairs above; same and opposite directions (1 and -1); (6, 8) pairs "
            "in float64 and in bfloat16: dtype kept",
            "test_neighbours.py::test_cosine_similarity_values",
            "test_neighbours.py::test_eps_dtype_and_short_vectors",
            edges=("float dtypes", "devices"),
            mutant="a bfloat16 cosine computed and returned in float32"),
    Promise(COSINE, "inputs of two dtypes give the dtype of ``a * b`` (float32 with float64 is "
            "float64).", "(6, 8) pairs, a float32 and b float64: dtype float64",
            "test_neighbours.py::test_cosine_similarity_values",
            "test_neighbours.py::test_eps_dtype_and_short_vectors",
            edges=("mixed dtypes",), mutant="a cosine of two dtypes computed in a's dtype"),
    # _top_k, reached through cosine_neighbours and analogy
    Promise(TOP_K, "E: the table, ``(V, d)``.", f"{TABLE}; {EDGES}",
            "test_neighbours.py::test_neighbours_match_reference",
            "test_neighbours.py::test_neighbours_rank_by_cosine_and_leave_out_the_token",
            mutant='float32 sims from a float64 table'),
    Promise(TOP_K, "query: ``(d,)``, in ``E``'s dtype and on its device (``cosine_neighbours`` "
            "and ``analogy`` make it so).", "a query vector equal to a row, a zero query, and "
            "analogy's E[b] - E[a] + E[c], each as its caller gives it",
            "test_neighbours.py::test_query_vector_excludes_nothing",
            "test_neighbours.py::test_a_query_vector_leaves_nothing_out",
            mutant='a query vector excludes its nearest row',
            edges=('size-1',)),
    Promise(TOP_K, "k: how many ids to return: from 1 to the number of rows that may be "
            "returned (V minus the distinct rows of ``exclude``), both ends included.",
            "k = 0, all, all + 1, all + 3 through a token, a query vector, analogy with and "
            "without its inputs, and analogy(E, a, a, c)",
            "test_neighbours.py::test_k_out_of_range_refused",
            "test_neighbours.py::test_k_from_one_to_the_rows_that_may_be_returned",
            mutant='k = all the rows that may be returned, refused'),
    Promise(TOP_K, "exclude: row indices that may never be returned",
            "an exact copy of the token's row before and after it; analogy's inputs",
            "test_neighbours.py::test_query_excluded_by_index",
            "test_neighbours.py::test_a_copy_of_the_token_still_counts",
            mutant='query excluded by position (topk(k + 1)[1:])'),
    Promise(TOP_K, "``(ids, sims)``, each ``(k,)``: ``ids`` a LongTensor, ``sims`` as "
            "``cosine_similarity``.", f"{TABLE}, k = 1 to 24; a float64 table: sims float64",
            "test_neighbours.py::test_neighbours_match_reference",
            "test_neighbours.py::test_neighbours_rank_by_cosine_and_leave_out_the_token",
            mutant='cosine_neighbours returns its ids as int32',
            edges=('float dtypes', 'devices')),
    Promise(TOP_K, "ValueError: ``k`` is outside that range.",
            "k = 0, all + 1, all + 3 on every path",
            "test_neighbours.py::test_k_out_of_range_refused",
            "test_neighbours.py::test_k_from_one_to_the_rows_that_may_be_returned",
            mutant='k checked as if one row were always excluded'),
    Promise(TOP_K, "rows with exactly equal cosines in ascending id order",
            "exact (40, 16) tables: k cutting a tie and a few past it, through a token, a "
            "query vector equal to two rows (k = 1 too) and the analogy",
            "test_neighbours.py::test_ties_go_to_smaller_id",
            "test_neighbours.py::test_ties_go_to_the_smaller_id",
            mutant='ties reversed (an ascending sort, flipped)'),
    # cosine_neighbours
    Promise(NEIGHBOURS, "E: the embedding table, ``(V, d)``; left as it was (never normalised "
            "in place).", f"{TABLE}; the table afterwards (certified)",
            "test_neighbours.py::test_inputs_are_left_unchanged",
            "test_neighbours.py::test_inputs_are_left_unchanged",
            mutant=("cosine_neighbours normalises the caller's table in place "
                    "(the ranking unchanged)")),
    Promise(NEIGHBOURS, "token: a row index, whose own row is excluded by index, so a "
            "duplicate of that row still counts as a neighbour",
            "an exact (20, 16) table with the token's row copied before, then after it",
            "test_neighbours.py::test_query_excluded_by_index",
            "test_neighbours.py::test_a_copy_of_the_token_still_counts",
            mutant='every row equal to the query excluded'),
    Promise(NEIGHBOURS, "an int, or a 0-d tensor of any integer dtype (take ``int(token)``",
            f"{TABLE}: the token an int and a 0-d int8, int16, int32, int64 and uint8 tensor",
            "test_neighbours.py::test_neighbours_match_reference",
            "test_neighbours.py::test_a_token_may_be_a_0d_integer_tensor",
            mutant='a 0-d token tensor used as an index as it is (uint8 reads as a mask)',
            edges=('0-d',)),
    Promise(NEIGHBOURS, "compared with V as it is, a uint8 250 is ``>= 300``", EDGES,
            "test_neighbours.py::test_neighbours_match_reference",
            "test_neighbours.py::test_a_token_at_the_edge_of_its_dtype",
            mutant='the token compared with V as it is (a uint8 255 is >= 300 in uint8)'),
    Promise(NEIGHBOURS, "Or a query vector ``(d,)`` of any float dtype, taken in ``E``'s "
            "(``query.to(E.dtype)``)", "a float64 query vector against a float32 (25, 8) "
            "table: float32 sims", "test_neighbours.py::test_neighbours_match_reference",
            "test_neighbours.py::test_sims_keep_the_tables_dtype", edges=("mixed dtypes",),
            mutant="a float64 query vector kept in float64 against a float32 table"),
    Promise(NEIGHBOURS, "in which case nothing is excluded.",
            "a (20, 8) table and a query equal to one of its rows",
            "test_neighbours.py::test_query_vector_excludes_nothing",
            "test_neighbours.py::test_a_query_vector_leaves_nothing_out",
            mutant='a query vector excludes its nearest row',
            edges=('size-1',)),
    Promise(NEIGHBOURS, "k: how many neighbours to return: from 1 to the number of rows that "
            "may be returned, both included (V - 1 for a token, V for a query vector).",
            "(9, 4) table: k = 0, all, all + 1, all + 3 for a token and a query vector",
            "test_neighbours.py::test_k_out_of_range_refused",
            "test_neighbours.py::test_k_from_one_to_the_rows_that_may_be_returned",
            mutant='k = all the rows that may be returned, refused'),
    Promise(NEIGHBOURS, "``ids`` a LongTensor ``(k,)`` and ``sims`` ``(k,)`` in ``E``'s dtype "
            "(float32 stays float32 and float64 stays float64, whatever the query's), both on "
            "``E``'s device, by descending similarity",
            f"{TABLE}, k = 1, 4, 5, 24, {DEVICES}, by position and by name; the same table in "
            "float32 and float64", "test_neighbours.py::test_neighbours_match_reference",
            "test_neighbours.py::test_sims_keep_the_tables_dtype",
            edges=("float dtypes", "devices"),
            mutant="float64 sims from a float32 table (promoted for precision)"),
    Promise(NEIGHBOURS, "ties broken by the smaller id.",
            "exact (40, 16) tables, k cutting a tie",
            "test_neighbours.py::test_ties_go_to_smaller_id",
            "test_neighbours.py::test_ties_go_to_the_smaller_id",
            mutant='ties reversed for a query vector'),
    Promise(NEIGHBOURS, "ValueError: ``k`` is not from 1 to the number of rows that may be "
            "returned.", "(9, 4) table: k = 0, V, V + 2 for a token",
            "test_neighbours.py::test_k_out_of_range_refused",
            "test_neighbours.py::test_k_from_one_to_the_rows_that_may_be_returned",
            mutant='k checked as if one row were always excluded'),
    # analogy
    Promise(ANALOGY, "E: the embedding table, ``(V, d)``; left as it was. Build the query out "
            "of place", "a (12, 5) table: the table afterwards (certified); its values in "
            "every later call", "test_neighbours.py::test_inputs_are_left_unchanged",
            "test_neighbours.py::test_inputs_are_left_unchanged",
            mutant='analogy builds its query in place, in E[b]'),
    Promise(ANALOGY, "a, b, c: row indices (ints).",
            "ints on (20, 6) and (9, 4) tables, every path of the analogy",
            "test_neighbours.py::test_analogy_direction",
            "test_neighbours.py::test_analogy_needs_the_exclusion",
            mutant='analogy the wrong way round (E[a] - E[b] + E[c])'),
    Promise(ANALOGY, "They need not differ: ``analogy(E, a, a, c)`` is a question too.",
            "analogy(E, a, a, c, k) on a (9, 4) table, k = V - 2 (all) and past it",
            "test_neighbours.py::test_k_out_of_range_refused",
            "test_neighbours.py::test_analogy_with_an_input_given_twice",
            mutant="analogy's k bound counts three inputs, not the distinct ones"),
    Promise(ANALOGY, "k: how many answers to return, 1 unless given",
            "k left out and by position (test_analogy_excludes_inputs), k = 3 by name; k = 0, "
            "all, all + 1, all + 3 with and without the inputs, and with an input given twice "
            "(V - 2 allowed)",
            "test_neighbours.py::test_k_out_of_range_refused",
            "test_neighbours.py::test_analogy_with_an_input_given_twice",
            mutant="analogy's k and exclude_inputs in the other order",
            edges=('defaults',)),
    Promise(ANALOGY, "exclude_inputs: leave ``a``, ``b`` and ``c`` out of the answers",
            "a (20, 6) table where an input ranks in the top 3 when it may: the default, and "
            "exclude_inputs=False by name and by position",
            "test_neighbours.py::test_analogy_excludes_inputs",
            "test_neighbours.py::test_analogy_needs_the_exclusion",
            mutant='analogy keeps its inputs',
            edges=('size-1',)),
    Promise(ANALOGY, "``(ids, sims)`` as in ``cosine_neighbours`` (ties to the smaller id).",
            f"(20, 6) tables where E[a] - E[b] + E[c] answers otherwise, {DEVICES}; a float64 "
            "table: sims float64; tables with tied rows (test_ties_go_to_smaller_id)",
            "test_neighbours.py::test_analogy_direction",
            "test_neighbours.py::test_analogy_needs_the_exclusion",
            mutant='ties reversed in the analogy',
            edges=('float dtypes', 'devices')),
    Promise(ANALOGY, "ValueError: as ``cosine_neighbours``, for ``k``.",
            "k = 0, all + 1, all + 3, with and without the inputs and with an input twice",
            "test_neighbours.py::test_k_out_of_range_refused",
            "test_neighbours.py::test_k_from_one_to_the_rows_that_may_be_returned",
            mutant="analogy's k bound counts three inputs, not the distinct ones"),
]
