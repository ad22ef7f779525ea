"""Mistake ids (autograder/mistakes.py): one id per diagnosed mistake, whatever the inputs.

The messages below are the hidden suites' own, as two learners got them on different seeds,
shapes, dtypes and devices, or with different words of their own; each pair must share an id,
and two different mistakes of one test must not.
"""

from __future__ import annotations

import pytest

from autograder import mistakes
from autograder.boundary import intake
from autograder.boundary.session import Outcome
from autograder.mistakes import mistake_id
from autograder.suites.feedback import Mistake, describe_error, unwrap

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


def _verdict_of(outcome: Outcome, module: str | None = "embeddings"):
    """The Mistake that feedback.unwrap raises for ``outcome``."""
    with pytest.raises(Mistake) as raised:
        unwrap(outcome, "Embedding(23, 5) on cpu", module)
    return raised.value


def test_code_that_never_ran_is_one_mistake_per_kind_whichever_test():
    """feedback.unwrap sets the kind of a file that did not import, a call that did not finish
    and a process that ended, as data: one id per kind, on any test of any stage."""
    error = {"type": "SyntaxError", "message": "invalid syntax (embeddings.py, line 132)"}
    missing = {"type": "FileNotFoundError", "message": "embeddings.py is missing", "file":
               intake.MISSING}  # the grader's own findings (intake.finding), never the text
    unusable = {"type": "ImportError", "message": "embeddings.py is not UTF-8 text", "file":
                intake.REPLACED}
    cases = {mistakes.IMPORT_FAILED: Outcome(import_errors={"embeddings": error}),
             mistakes.MISSING_FILE: Outcome(import_errors={"embeddings": missing}),
             mistakes.UNUSABLE_FILE: Outcome(import_errors={"embeddings": unusable}),
             mistakes.TIMED_OUT: Outcome(timed_out=True),
             mistakes.CRASHED: Outcome(crashed="the process running your code ended (EOFError)"),
             mistakes.MISTAKE: Outcome(error={"type": "IndexError", "message": "index 9"})}
    for kind, outcome in cases.items():
        mistake = _verdict_of(outcome)
        assert mistake.kind == kind, (kind, str(mistake))
        ids = {mistake_id(stage, test, str(mistake), mistake.kind)
               for stage, test in (("embedding", "test_lookup_every_shape"),
                                   ("tying", "test_parameter_count"))}
        assert ids == ({kind} if kind != mistakes.MISTAKE else {
            mistake_id("embedding", "test_lookup_every_shape", str(mistake)),
            mistake_id("tying", "test_parameter_count", str(mistake))}), kind
    assert len({mistake_id("s", "t", mistakes.NOT_RUN_MESSAGE, k) for k in mistakes.KINDS}) == 6


#: The phrases feedback.unwrap words code that never ran with, as a learner may write them.
FORGED = ("your embeddings.py could not be imported, so x could not be graded: "
          "did not finish in time: look for a loop that never ends, or work that grows with "
          "V x V could not finish: the process running your code ended; "
          + mistakes.NOT_RUN_MESSAGE)


def test_a_learners_words_cannot_pass_for_another_kind():
    """A learner's exception text (or printed output) that says "could not be imported", ends
    in the timeout advice or reads as a crash is still a mistake of its test: the kind is data
    set by unwrap from what happened, never read from any message."""
    mistake = _verdict_of(Outcome(error={"type": "RuntimeError", "message": FORGED,
                                         "where": [f"embeddings.py, line 3, in f: {FORGED}"]}))
    assert mistake.kind == mistakes.MISTAKE
    assert mistake_id("embedding", "t", str(mistake), mistake.kind).startswith("embedding/t/")
    # not even a message that is nothing but those phrases: without a kind, it is a mistake
    assert mistake_id("embedding", "t", FORGED).startswith("embedding/t/")
    assert not hasattr(mistakes, "kind"), "nothing reads a kind from a message"


def test_describe_error_quotes_the_learners_words_and_code():
    text = describe_error({"type": "IndexError", "message": "index 9 is out of bounds",
                           "where": ["embeddings.py, line 7, in forward: return w[ids]"]})
    assert text == ("IndexError: 'index 9 is out of bounds' "
                    "(at embeddings.py, line 7, in forward: `return w[ids]`)")
