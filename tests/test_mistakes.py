"""Mistake ids (autograder/mistakes.py): one id per diagnosed mistake, whatever the inputs.

The messages below are the hidden suites' own, as two learners got them on different seeds,
shapes, dtypes and devices, or with different words of their own; each pair must share an id,
and two different mistakes of one test must not.
"""

from __future__ import annotations

import pytest

from autograder import mistakes
from autograder.mistakes import mistake_id
from autograder.suites.feedback import describe_error

SAME = [  # (test, one learner's message, another's)
    ("test_meta_device_and_dtypes",
     "Embedding(13, 4) with a torch.float64 weight has dtype torch.float32, expected "
     "torch.float64: keep the weight's dtype (no float32 default, no .float())",
     "Embedding(7, 9) with a torch.bfloat16 weight has dtype torch.float32, expected "
     "torch.bfloat16: keep the weight's dtype (no float32 default, no .float())"),
    ("test_repeated_ids_accumulate_gradients",
     "backward through Embedding with ids [[3, 1, 3, 7], [3, 0, 1, 9]]: weight.grad is None: the "
     "output must come from self.weight by differentiable indexing (no .detach(), no "
     "torch.no_grad, no .data)",
     "backward through Embedding with ids [[5, 5, 2, 0], [1, 5, 8, 2]]: weight.grad is None: the "
     "output must come from self.weight by differentiable indexing (no .detach(), no "
     "torch.no_grad, no .data)"),
    ("test_gpt2_totals",  # numbers with thousands separators
     "count_params(vocab_size=50257, n_ctx=1024, d_model=768, n_layers=12, tied=True) (gpt2): "
     "total 123,653,376 expected 124,439,808: your count is 786,432 short: the position "
     "embedding (wpe), n_ctx x d = 1024 x 768 is missing",
     "count_params(vocab_size=50257, n_ctx=1024, d_model=1024, n_layers=24, tied=True) "
     "(gpt2-medium): total 353,774,592 expected 354,823,168: your count is 1,048,576 short: the "
     "position embedding (wpe), n_ctx x d = 1024 x 1024 is missing"),
    ("test_one_hot_device",  # devices
     "one_hot(ids of shape (2, 3), num_classes=8) on meta came back on cpu for inputs on meta: "
     "create new tensors on the inputs' device (device=ids.device), never a hard-coded one",
     "one_hot(ids of shape (4,), num_classes=5) on cuda:0 came back on cpu for inputs on cuda:0: "
     "create new tensors on the inputs' device (device=ids.device), never a hard-coded one"),
    ("test_no_builtin_embedding",  # the learner's code, quoted in a detail
     "your Embedding uses PyTorch's own embedding: write that lookup yourself (found: "
     "embeddings.py, line 107: `return F.embedding(ids, self.weight)` (F.embedding))",
     "your Embedding uses PyTorch's own embedding: write that lookup yourself (found: params.py, "
     "line 140: `return torch.nn.functional.embedding(ids, weight)` "
     "(torch.nn.functional.embedding))"),
    ("test_out_of_range_ids_are_refused",  # the learner's own words for one mistake
     "Embedding(17, 3) on ids containing -1 raised "
     + describe_error({"type": "ValueError", "message": "bad id: -1 (it's negative)",
                       "where": ["embeddings.py, line 9, in check_ids: raise ValueError(msg)"]})
     + ", but should raise IndexError: a negative id (-1): plain indexing would silently "
     "return the last row",
     "Embedding(23, 4) on ids containing 23 raised "
     + describe_error({"type": "ValueError", "message": 'ids must lie in [0, V) "V" = 23',
                       "where": ["embeddings.py, line 12, in forward: check(ids))"]})
     + ", but should raise IndexError: a negative id (-1): plain indexing would silently "
     "return the last row"),
]

DIFFERENT = [  # (test, one mistake's message, another mistake's)
    ("test_repeated_ids_accumulate_gradients",
     "backward through Embedding with ids [[3, 1, 3, 7]]: weight.grad is None: the output must "
     "come from self.weight by differentiable indexing",
     "backward through Embedding with ids [[3, 1, 3, 7]]: weight.grad row 3 is wrong; id 3 "
     "appears 2 times, so its gradient is the sum of 2 upstream gradients"),
    ("test_meta_device_and_dtypes",
     "Embedding(13, 4) with a torch.float64 weight has dtype torch.float32, expected "
     "torch.float64: keep the weight's dtype",
     "Embedding(13, 4) with a torch.float64 weight has shape (6, 4), expected (2, 3, 4)"),
    ("test_unknown_dtype_refused",
     "count_params(...).memory_bytes('fp8') raised KeyError: \"'fp8'\", but should raise "
     "ValueError (listing the dtypes it knows)",
     "count_params(...).memory_bytes('fp8') returned 4 but should raise ValueError: a dtype it "
     "does not know has no size to guess"),
]


@pytest.mark.parametrize(("test", "one", "other"), SAME)
def test_one_mistake_on_other_inputs_has_one_id(test, one, other):
    assert one != other
    assert mistake_id("embedding", test, one) == mistake_id("embedding", test, other), \
        (mistakes.template(one), mistakes.template(other))


@pytest.mark.parametrize(("test", "one", "other"), DIFFERENT)
def test_two_mistakes_of_one_test_have_two_ids(test, one, other):
    assert mistake_id("embedding", test, one) != mistake_id("embedding", test, other)


def test_the_id_names_its_stage_and_test_and_is_stable():
    message = SAME[0][1]
    found = mistake_id("embedding", "test_meta_device_and_dtypes", message)
    assert found.startswith("embedding/test_meta_device_and_dtypes/") and len(found) == 46
    assert found == mistake_id("embedding", "test_meta_device_and_dtypes", message)
    assert found != mistake_id("embedding", "test_lookup_every_shape", message)


def test_code_that_never_ran_is_one_mistake_per_kind_whichever_test():
    """The messages feedback.unwrap words for a file that did not import, a call that did not
    finish and a process that ended: one id per kind, on any test of any stage."""
    imports = [("embedding", "test_lookup_every_shape",
                "your embeddings.py could not be imported, so Embedding(23, 5) on a single id "
                "(0-D), shape (), on cpu could not be graded: SyntaxError: 'invalid syntax "
                "(embeddings.py, line 132)'"),
               ("tying", "test_parameter_count",
                "your gpt2.py could not be imported, so GPT2(vocab_size=97) could not be graded: "
                "ImportError: 'gpt2.py is not UTF-8 text'")]
    timeouts = [("embedding", "test_meta_device_and_dtypes",
                 "Embedding(13, 4) with a torch.float64 weight did not finish in time"
                 + mistakes.TIMEOUT_ADVICE),
                ("embedding", "test_scale_is_applied_once",
                 "Embedding(12, 16, scale=True)(ids) did not finish in time (not run: 2 earlier "
                 "checks of this stage ran out of time, so its remaining checks were skipped)"
                 + mistakes.TIMEOUT_ADVICE)]
    crashes = [("onehot", "test_one_hot_rows",
                "one_hot(ids of shape (), num_classes=9) on cpu" + mistakes.CRASH_MARK
                + "the process running your code ended (EOFError): os._exit, sys.exit in a "
                "thread, a segfault, or running out of memory")]
    for kind, cases in ((mistakes.IMPORT_FAILED, imports), (mistakes.TIMED_OUT, timeouts),
                        (mistakes.CRASHED, crashes)):
        assert {mistake_id(*case) for case in cases} == {kind}
        assert {mistakes.kind(case[2]) for case in cases} == {kind}
    assert mistakes.kind(mistakes.NOT_RUN_MESSAGE) == mistakes.NOT_RUN
    assert mistakes.kind(SAME[0][1]) == mistakes.MISTAKE


def test_a_learners_words_cannot_pass_for_another_kind():
    """Quoted by describe_error, a learner's exception text saying "could not be imported" or
    ending in the timeout advice is still a mistake of its test."""
    forged = ("Embedding(9, 3) on torch.float32 ids raised " + describe_error(
        {"type": "RuntimeError", "message": "your embeddings.py could not be imported, so x"
         + mistakes.TIMEOUT_ADVICE + mistakes.CRASH_MARK}))
    assert mistakes.kind(forged) == mistakes.MISTAKE


def test_describe_error_quotes_the_learners_words_and_code():
    text = describe_error({"type": "IndexError", "message": "index 9 is out of bounds",
                           "where": ["embeddings.py, line 7, in forward: return w[ids]"]})
    assert text == ("IndexError: 'index 9 is out of bounds' "
                    "(at embeddings.py, line 7, in forward: `return w[ids]`)")
