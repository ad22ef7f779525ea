"""Text from learner code is data: never a crash, never a terminal command, never unbounded.

First the sanitiser itself (``autograder/boundary/clean.py``), then end to end: submissions whose
code raises, prints or returns hostile strings are graded, through the command line and a warm
``Grader``, and every report comes out whole, valid and without a raw control character.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest
import torch

from autograder.boundary.clean import MAX_NAME, MAX_OUTPUT, MAX_TEXT, clean, clean_reply, clean_text
from autograder.boundary.session import StageSession
from autograder.grading import Grader
from autograder.options import Limits, Options
from autograder.sandboxed.protocol import MetaTensor, RemoteObject
from autograder.views import report
from tests.variants.build import make_submission

REPO = Path(__file__).resolve().parents[1]
#: What must never reach a terminal or a file raw: C0 but newline and tab, DEL, C1, bidi
#: controls, lone surrogates.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                 "\ud800-\udfff]")
BIDI = [chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]]


def _strings(value: object):
    """Every string in a decoded value, dict keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, RemoteObject):
        yield value.type_name


def _assert_clean(text: str, what: str, lines: bool = False) -> None:
    bad = RAW.search(text) or (not lines and re.search("[\n\t]", text))
    assert not bad, f"{what}: raw {bad.group()!r} in {text[:300]!r}"
    text.encode("utf-8")  # strict: no lone surrogate


# --- the sanitiser ---------------------------------------------------------------------------


def test_lone_surrogates_become_replacement_characters():
    assert clean_text("\ud800 and \udcff") == "\ufffd and \ufffd"
    assert clean_text(b"caf\xe9") == "caf\ufffd", "undecodable bytes are replaced"
    clean_text("\udfff" * 10).encode("utf-8")


@pytest.mark.parametrize("sequence, shown", [
    ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # CSI: clear the screen, cursor home
    ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),  # OSC: the window title, ended by BEL
    ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "\\x1b]8;;http://x\\x1b\\link\\x1b]8;;\\x1b\\"),
    ("\x9b2J", "\\x9b2J"),  # the C1 form of CSI
    ("100.0 / 100\r  total", "100.0 / 100\\r  total"),  # CR: overwrite the line
    ("a\x00b\x7fc", "a\\x00b\\x7fc"),  # NUL, DEL
])
def test_terminal_sequences_are_shown_as_text(sequence, shown):
    assert clean_text(sequence) == shown
    assert clean_text(sequence, keep_lines=True) == shown


def test_bidi_overrides_and_isolates_are_escaped():
    for char in BIDI:
        assert clean_text(f"ok{char}x") == f"ok\\u{ord(char):04x}x"
    assert clean_text("é, 日本, 🙂, tab-less") == "é, 日本, 🙂, tab-less", "ordinary text is kept"


def test_lines_and_tabs_kept_only_in_printed_output():
    assert clean_text("a\nb\tc", keep_lines=True) == "a\nb\tc"
    assert clean_text("a\nb\tc") == "a\\nb\\tc", "a message is one line: no faked report lines"


def test_long_strings_are_cut_with_a_note():
    assert clean_text("x" * 10_000, limit=100) == "x" * 100 + "... (9,900 more characters)"
    escaped = clean_text("\x1b" * 10_000, limit=100)  # escaping may not lift the bound
    assert escaped == "\\x1b" * 25 + "... (9,975 more characters)"
    mixed = clean_text("ab\x1b" * 50, limit=10)  # never half an escape
    assert mixed == "ab\\x1bab... (145 more characters)"
    assert len(clean_text("y" * 10**6)) < MAX_TEXT + 40
    assert clean_text("y" * MAX_TEXT) == "y" * MAX_TEXT


def test_cleaning_twice_changes_nothing():
    for text in ("\x1b[2J\ud800\u202e\r\n", "plain", "x" * 50):
        once = clean_text(text)
        assert clean_text(once) == once


def test_clean_walks_dict_keys_lists_and_described_objects():
    tensor = torch.arange(3)
    tensor.remote_device = "cpu\x1b[2J"
    meta = MetaTensor(torch.float32, [2, 3])
    value = clean({"a\x1b": {"\ud800" * 500: ["\u202e", 1, 2.5, None, True, tensor, meta]},
                   "obj": RemoteObject("Evil\x1b[2J")})
    key, inner = next(iter(value["a\\x1b"].items()))
    assert key.startswith("\ufffd") and len(key) < MAX_NAME + 40, "dict keys: short and clean"
    assert inner[:5] == ["\\u202e", 1, 2.5, None, True]
    assert inner[5] is tensor and tensor.remote_device == "cpu\\x1b[2J"
    assert inner[6] is meta, "tensors and numbers pass through"
    assert value["obj"].type_name == "Evil\\x1b[2J"


def test_a_tampered_reply_nested_without_end_is_bounded():
    deep: list = []
    for _ in range(500):
        deep = [deep]
    cleaned = clean(deep)
    for _ in range(60):
        if not isinstance(cleaned, list):
            break
        cleaned = cleaned[0]
    assert isinstance(cleaned, str)


def test_reply_output_has_its_own_cap_and_keeps_lines():
    reply = clean_reply({"output": "line\n\x1b[31mred\t" * 1000, "seconds": 0.5,
                         "error": {"type": "E\u202e", "message": "m\r", "where": ["x\x1b"]}})
    assert reply["output"].startswith("line\n\\x1b[31mred\tline\n")
    assert len(reply["output"]) < MAX_OUTPUT + 40 and "more characters" in reply["output"]
    assert reply["error"] == {"type": "E\\u202e", "message": "m\\r", "where": ["x\\x1b"]}
    assert reply["seconds"] == 0.5


def test_writers_never_raise_on_any_string(tmp_path):
    """Even text that skipped the sanitiser: a lone surrogate, XML's forbidden characters."""
    from autograder.results import TestResult, score
    from autograder.rubric import load

    hostile = "\ud800\x00\x1b[2J\ufffe"
    result = TestResult(name="test_lookup_every_shape", stage="embedding", title=hostile,
                        passed=False, message=hostile)
    grade = score([result], load(), submission=f"/tmp/{hostile}", seed=1,
                         devices=["cpu"], sandbox="unsafe-process", seconds=1.0, notes=[hostile])
    report.terminal(grade).encode("utf-8")
    report.write_json(tmp_path / "results.json", report.gradescope(grade))
    json.loads((tmp_path / "results.json").read_bytes().decode("utf-8"))
    report.write_atomic(tmp_path / "junit.xml", report.junit(grade))
    ElementTree.parse(tmp_path / "junit.xml")
    report.write_atomic(tmp_path / "feedback.txt", hostile)
    (tmp_path / "feedback.txt").read_bytes().decode("utf-8")


# --- end to end ------------------------------------------------------------------------------


def forward(body: str) -> dict:
    """Embedding.forward replaced by ``body``."""
    code = "def forward(self, ids):\n" + textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return {"embeddings:Embedding.forward": code + "\n"}


FAKE = "embedding     20.0 / 20    all checks passed\n  total        100.0 / 100"
ATTACKS = {
    "a lone surrogate in a message": forward(r"raise ValueError('\ud800 broke ' + 'x' * 9000)"),
    "a lone surrogate in an error at import": {"embeddings:check_ids": textwrap.dedent(r'''
        def check_ids(ids, vocab_size):
            pass
        raise ImportError("\udcff broke the import")
    ''')},
    "terminal escapes in a message": forward(rf'''
        raise ValueError("\x1b[2J\x1b[H\x1b]0;graded\x07{FAKE!r}\r\u202e")
    '''),
    "a bidi override in a traceback line": forward(
        "raise ValueError('see the line')  # \u202e\x1b[2J trojan source\n"),
    "printing escapes": forward(rf'''
        print("\x1b[2J\x1b[H" + {FAKE!r} + "\r\u202e\x07" + "\x1b[1m" * 5000, flush=True)
        return self.weight[ids]
    '''),
    "printing escapes at import": {"embeddings:check_ids": textwrap.dedent(r'''
        def check_ids(ids, vocab_size):
            pass
        print("\x1b]0;owned\x07\x1b[2J\u2066hidden\u2069", flush=True)
    ''')},
    "an object whose class name has escapes": forward(r'''
        return type("Tensor\x1b[2J\x1b[H\u202e", (), {})()  # (a surrogate cannot be in one)
    '''),
    "a dict with hostile keys": forward(r'''
        return {"\x1b[2J\ud800" * 100: "\u202e", "ok": ["\x1b]0;t\x07"]}
    '''),
}
#: Through the command line too.
MAIN = ["a lone surrogate in a message", "a lone surrogate in an error at import",
        "terminal escapes in a message", "an object whose class name has escapes"]


@pytest.mark.parametrize("attack", MAIN)
def test_grade_command_survives_hostile_text(tmp_path, attack):
    folder = make_submission(tmp_path / "submission", ATTACKS[attack])
    out, junit = tmp_path / "results.json", tmp_path / "junit.xml"
    run = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out),
         "--junit", str(junit), "--stage", "embedding", "--probe-seconds", "5"],
        cwd=REPO, capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-3000:]
    stdout = run.stdout.decode("utf-8")  # strict
    _assert_clean(stdout, "the terminal report", lines=True)
    assert "embedding " in stdout and "total" in stdout
    results = json.loads(out.read_bytes().decode("utf-8"))
    for text in _strings(results):
        _assert_clean(text, "results.json", lines=True)
    assert [s.get("name") for s in ElementTree.parse(junit).getroot()][0] == "embedding"


@pytest.fixture(scope="module")
def grader():
    """--sandbox unsafe-process, not bubblewrap: these attacks only raise, print and return,
    and it hands back everything printed (the sandbox's users may differ in what they
    capture)."""
    limits = Limits(probe_seconds=5, import_seconds=10, submission_seconds=60)
    with Grader(Options(device="cpu", sandbox="unsafe-process", limits=limits)) as g:
        yield g


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_every_reply_is_clean_where_it_enters(grader, tmp_path, monkeypatch, attack):
    """Each probe's Outcome (message, traceback, output, values) and each report, clean."""
    outcomes, taken = [], []
    call, take = StageSession.call, StageSession.take_printed

    def spy(self, *args, **kwargs):
        outcome = call(self, *args, **kwargs)
        outcomes.append(outcome)
        return outcome

    def spy_printed(self):  # what was printed, at import too, as the report receives it
        taken.append(take(self))
        return taken[-1]

    monkeypatch.setattr(StageSession, "call", spy)
    monkeypatch.setattr(StageSession, "take_printed", spy_printed)
    folder = make_submission(tmp_path / "submission", ATTACKS[attack])
    result = grader.grade(folder, stages=["embedding"])
    assert outcomes, "the attack ran"
    for outcome in outcomes:
        for text in _strings([outcome.error, outcome.value, outcome.import_errors]):
            _assert_clean(text, "a reply's text")
            assert len(text) < MAX_TEXT + 40
        _assert_clean(outcome.output, "printed output", lines=True)
        assert len(outcome.output) < MAX_OUTPUT + 40
    for text in taken:
        _assert_clean(text, "printed output, as reported", lines=True)
    printed = [o.output for o in outcomes] + taken
    if attack.startswith("printing"):  # and it did reach the grader, escaped
        assert any("\\x1b[2J" in text for text in printed), printed[:3]
    embedding = next(s for s in result.stages if s.name == "embedding")
    assert embedding.score < embedding.max_score or attack.startswith("printing")
    assert not any(r.grader_error for r, _, _ in embedding.tests), \
        [r.message for r, _, _ in embedding.tests if r.grader_error]
    _assert_clean(report.terminal(result), "the terminal report", lines=True)
    for text in _strings(report.gradescope(result)):
        _assert_clean(text, "results.json", lines=True)
    ElementTree.fromstring(report.junit(result))
