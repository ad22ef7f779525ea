"""The wire between the grader and the learner's process, attacked as its owner would.

The process that runs learner code can write anything to its socket, byte by byte, whenever it
likes (``autograder/sandboxed/protocol.py``, ``autograder/boundary/session.py``). Whatever it
sends must end as that learner's mistake or timeout, in bounded time and memory: never an
internal "grading error" (a row the instructor must look at), never a GraderError, never a
grade held open. Every reply is checked against its probe's schema
(``autograder/boundary/replies.py``), and every value a schema lets through must be judged by the
suites without an exception.
"""

from __future__ import annotations

import json
import math
import random
import socket
import struct
import textwrap
import threading
import time
import tracemalloc

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.boundary import replies
from autograder.boundary.clean import clean
from autograder.boundary.session import MALFORMED, Outcome, StageSession
from autograder.grading import Grader
from autograder.options import Limits, Options
from autograder.results import GraderError
from autograder.sandboxed import protocol
from autograder.sandboxed.probes import PROBES
from autograder.sandboxed.protocol import MetaTensor, ProtocolError, RemoteObject
from tests.variants.build import make_submission

# --- the encoding: no data can pass for a marker ---------------------------------------------

#: Dicts whose keys are the markers of this encoding, and of the one before it.
COLLIDING = [
    {"tensor": 0}, {"dict": {"dict": 1}}, {"object": "Tensor"}, {"tensor": 0, "dict": 2},
    {"__tensor__": 0, "dtype": "float32", "shape": [2], "device": "cpu"},
    {"__object__": "Parameter"}, {"value": 1, "tensors": []},
    {"dtype": "float32", "shape": [1], "device": "cpu", "bytes": 4},
    {"tensor": None, "dtype": "float32", "shape": [3], "device": "meta"},
]


def _roundtrip_socket(value: object) -> object:
    a, b = socket.socketpair()
    with a, b:
        sender = threading.Thread(target=protocol.send, args=(a, value))
        sender.start()
        got = protocol.recv(b, time.monotonic() + 10)
        sender.join()
    return got


@pytest.mark.parametrize("data", COLLIDING, ids=[str(c) for c in COLLIDING])
def test_learner_dicts_with_marker_keys_are_data(data):
    for value in (data, {"out": data}, [data, {"k": [data]}]):
        assert protocol.decode(protocol.encode(value)) == value
        assert _roundtrip_socket(value) == value


def test_tensors_and_objects_round_trip_beside_colliding_data():
    t = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    value = {"tensor": t, "dict": [torch.tensor([True, False]), {"object": "x"}],
             "object": object(), "m": torch.empty(4, 5, device="meta"),
             "c": torch.randn(3, dtype=torch.complex128), "e": torch.empty(0, 7),
             "i": torch.arange(5, dtype=torch.int8)[1:]}
    got = _roundtrip_socket(value)
    assert torch.equal(got["tensor"], t) and got["tensor"].remote_device == "cpu"
    assert torch.equal(got["dict"][0], value["dict"][0]) and got["dict"][1] == {"object": "x"}
    assert isinstance(got["object"], RemoteObject) and got["object"].type_name == "object"
    assert isinstance(got["m"], MetaTensor) and list(got["m"].shape) == [4, 5]
    assert torch.equal(got["c"], value["c"]) and got["e"].shape == (0, 7)
    assert torch.equal(got["i"], torch.arange(1, 5, dtype=torch.int8))
    assert got["c"].data_ptr() % 16 == 0, "each tensor's bytes are aligned for its dtype"


# --- messages a hostile peer writes: each a ProtocolError, nothing built ---------------------


def _message(header: object | bytes, blobs: bytes = b"") -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack(">I", len(raw)) + raw + blobs


def _head(value: object, tensors: list | None = None) -> dict:
    return {"value": value, "tensors": tensors or []}


F32 = {"dtype": "float32", "shape": [2], "device": "cpu", "bytes": 8}
MALFORMED_MESSAGES = {
    "an object that is no tag": _message(_head({"a": 1})),
    "a tag with a second key": _message(_head({"dict": {}, "x": 1})),
    "an unknown tag": _message(_head({"pickle": "..."})),
    "a dict tag over a list": _message(_head({"dict": [1, 2]})),
    "an object tag over a number": _message(_head({"object": 5})),
    "a tensor index out of range": _message(_head({"tensor": 3}, [F32]), bytes(16)),
    "a tensor index that is a bool": _message(_head({"tensor": False}, [F32]), bytes(16)),
    "a tensor named twice": _message(_head([{"tensor": 0}, {"tensor": 0}], [F32]), bytes(16)),
    "a tensor never named": _message(_head(1, [F32]), bytes(16)),
    "bytes that do not fit the shape": _message(_head({"tensor": 0}, [{**F32, "bytes": 12}]),
                                                bytes(16)),
    "an unknown dtype": _message(_head({"tensor": 0}, [{**F32, "dtype": "object"}]), bytes(16)),
    "a negative dimension": _message(_head({"tensor": 0}, [{**F32, "shape": [-2]}]), bytes(16)),
    "a dimension past int64": _message(_head({"tensor": 0}, [{**F32, "shape": [2 ** 70],
                                                               "bytes": None}])),
    "a descriptor with a field more": _message(_head({"tensor": 0}, [{**F32, "x": 1}]),
                                               bytes(16)),
    "an empty tensor whose size overflows": _message(_head({"tensor": 0}, [
        {**F32, "shape": [2 ** 62 - 1, 2 ** 62 - 1, 0], "bytes": 0}])),
    "a meta tensor whose size overflows": _message(_head({"tensor": 0}, [
        {**F32, "shape": [2 ** 31, 2 ** 31, 2 ** 31], "device": "meta", "bytes": None}])),
    "a meta tensor one element past torch's largest": _message(_head({"tensor": 0}, [
        {**F32, "shape": [((1 << 63) - 1) // 4 + 1], "device": "meta", "bytes": None}])),
    "too few tensor bytes": _message(_head({"tensor": 0}, [F32]), bytes(8)),
    "trailing bytes": _message(_head(1), b"xyz"),
    "a header without tensors": _message({"value": 1}),
    "a header that is a list": _message([1, 2]),
    "not JSON": _message(b"{not json"),
    "not UTF-8": _message(b'{"value": "\xff\xfe", "tensors": []}'),
    "UTF-16, which json.loads would guess": _message(
        json.dumps(_head("x")).encode("utf-16-le")),
    "an integer of 10,000 digits": _message(b'{"value": ' + b"9" * 10_000 + b', "tensors": []}'),
    "a header length past the end": struct.pack(">I", 1000) + b"{}",
    "nothing": b"",
}


@pytest.mark.parametrize("name", list(MALFORMED_MESSAGES))
def test_malformed_messages_are_protocol_errors(name):
    with pytest.raises(ProtocolError):
        protocol.decode(MALFORMED_MESSAGES[name])


#: Dimensions a hostile descriptor may name: empty, small, at torch's edges and past them.
DIMENSIONS = st.one_of(st.integers(0, 4), st.sampled_from(
    [0, 1, 2 ** 31, 2 ** 32 + 1, 2 ** 61 - 1, 2 ** 61, 2 ** 62 - 1, ((1 << 63) - 1) // 16]),
    st.integers(0, 2 ** 62 - 1))


@settings(max_examples=300, deadline=None)
@given(dtype=st.sampled_from(sorted(protocol.DTYPES)),
       shape=st.lists(DIMENSIONS, max_size=70),
       meta=st.booleans(), extra=st.sampled_from([0, 0, 1, -1]))
def test_any_descriptor_is_a_tensor_torch_holds_or_a_protocol_error(dtype, shape, meta, extra):
    """Huge, many and empty dimensions, on the meta device or with their bytes (as many as
    the shape needs, or one more or less): decoding gives a tensor torch can hold (a meta
    tensor can be made of that shape) or a ProtocolError, never another exception (torch's
    "Storage size calculation overflowed" was one)."""
    itemsize = protocol.DTYPES[dtype].itemsize
    numel = math.prod(shape)
    nbytes = None if meta else numel * itemsize + extra
    blob = bytes(nbytes + -nbytes % protocol.ALIGN) if nbytes is not None and \
        0 <= nbytes <= (1 << 16) else b""
    message = _message(_head({"tensor": 0}, [
        {"dtype": dtype, "shape": shape, "device": "meta" if meta else "cpu",
         "bytes": nbytes}]), blob)
    try:
        value = protocol.decode(message)
    except ProtocolError:
        return
    torch.empty(list(value.shape), dtype=value.dtype, device="meta")  # torch can hold it
    assert list(value.shape) == shape and (meta or value.numel() == numel)


@pytest.mark.parametrize("failure", [MemoryError, RecursionError, RuntimeError, OverflowError,
                                     IndexError])
def test_any_failure_while_reading_a_message_is_a_protocol_error(monkeypatch, failure):
    """Whatever goes wrong while a header is read or its tensors are built is the message's
    fault: a ProtocolError (the learner's mistake), never another exception in the grader."""
    message = _message(_head({"tensor": 0}, [F32]), bytes(16))
    assert isinstance(protocol.decode(message), torch.Tensor)
    for where in ("frombuffer", "loads"):
        module = torch if where == "frombuffer" else json

        def fail(*args, **kwargs):
            raise failure("raised while reading")

        with monkeypatch.context() as patched:
            patched.setattr(module, where, fail)
            with pytest.raises(ProtocolError):
                protocol.decode(message)
            result, _, _ = _hostile_recv(_framed(message))
            assert isinstance(result, ProtocolError), result


def _hostile_recv(framed: bytes, seconds: float = 10.0) -> tuple[object, float, int]:
    """``recv`` of what a peer writes (in a thread, as fast as it is read): the outcome (a
    value or the exception), the seconds it took and the peak of Python memory meanwhile."""
    a, b = socket.socketpair()

    def write() -> None:
        try:
            a.sendall(framed)
        except OSError:  # the grader stopped reading: as it should
            pass

    writer = threading.Thread(target=write, daemon=True)
    tracemalloc.start()
    writer.start()
    started = time.monotonic()
    try:
        result: object = protocol.recv(b, started + seconds)
    except Exception as error:  # noqa: BLE001 - the outcome under test
        result = error
    took = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    b.close()
    writer.join(5)
    a.close()
    return result, took, peak


def _framed(message: bytes) -> bytes:
    return struct.pack(">Q", len(message)) + message


MB = 1 << 20


def test_a_64_mb_reply_of_nested_empty_lists_costs_nothing():
    """The reply of the issue: tens of MB of nested empty lists, as one header. Refused from
    its length, before a byte of it is read or parsed."""
    header = b'{"value": ' + b"[]," * (21 * MB) + b'[], "tensors": []}'  # 64 MB
    result, took, peak = _hostile_recv(_framed(_message(header)))
    assert isinstance(result, ProtocolError), result
    assert peak < 1 * MB and took < 2, (peak, took)


@pytest.mark.parametrize("shape", ["deep", "wide", "wide strings"])
def test_a_header_within_its_cap_but_too_nested_or_too_many_is_refused_unbuilt(shape):
    """A header just under MAX_HEADER that json.loads would turn into 350,000 lists (each
    ~56 bytes: 20 MB from 1 MB) or recurse on: refused by a scan of its text."""
    room = protocol.MAX_HEADER - 40
    body = {"deep": b"[" * (room // 2) + b"]" * (room // 2),
            "wide": b"[" + b"[]," * (room // 3 - 1) + b"[]]",
            "wide strings": b"[" + b'"",' * (room // 3 - 1) + b'""]'}[shape]
    header = b'{"value": ' + body + b', "tensors": []}'
    assert len(header) <= protocol.MAX_HEADER
    result, took, peak = _hostile_recv(_framed(_message(header)))
    assert isinstance(result, ProtocolError), result
    assert peak < 8 * MB and took < 2, (peak, took)


@pytest.mark.parametrize("depth", [protocol.MAX_DEPTH + 1, 5_000, 200_000])
def test_nesting_past_the_limit_is_refused(depth):
    header = b'{"value": ' + b"[" * depth + b"]" * depth + b', "tensors": []}'
    with pytest.raises(ProtocolError):
        protocol.decode(_message(header))


def test_honest_nesting_and_sizes_pass():
    """The deepest value the worker encodes (20 levels of dicts) and a header of 50,000
    values are within the budget: the limits cost no honest reply."""
    deep: object = torch.ones(2)
    for _ in range(20):
        deep = {"k": deep}
    assert torch.equal(_roundtrip_socket(deep)["k"]["k"]["k"]["k"]["k"]["k"]["k"]["k"]["k"]["k"]
                       ["k"]["k"]["k"]["k"]["k"]["k"]["k"]["k"]["k"]["k"], torch.ones(2))
    wide = {"calls": [f"aten::op{i}" for i in range(25_000)], "n": list(range(25_000))}
    assert _roundtrip_socket(wide) == wide


def test_brackets_inside_strings_are_text_not_nesting():
    value = {"s": "[[[[{{{{" * 1000, "t": '"]]]\\"' * 100}
    assert protocol.decode(protocol.encode(value)) == value


def test_tensor_bytes_are_refused_unread_when_descriptors_disagree():
    """60 MB announced for tensors the header does not describe: refused before reading."""
    header = json.dumps(_head({"tensor": 0}, [F32])).encode()
    framed = _framed(_message(header, bytes(60 * MB)))
    result, took, peak = _hostile_recv(framed)
    assert isinstance(result, ProtocolError), result
    assert peak < 2 * MB, peak


def test_a_message_over_the_cap_is_refused_from_its_length():
    announced = struct.pack(">QI", protocol.MAX_MESSAGE + 1, 10)
    result, _, peak = _hostile_recv(announced + b"x" * 1000)
    assert isinstance(result, ProtocolError) and peak < MB


def test_tensors_are_decoded_without_a_copy():
    """The honest path: a 16 MB tensor costs its 16 MB once (the buffer the tensor uses), not
    the two or three copies of joining chunks and copying each tensor out."""
    t = torch.randn(4 * MB)  # 16 MB
    result, _, peak = _hostile_recv(_framed(protocol.encode({"out": t})))
    assert torch.equal(result["out"], t)
    assert peak < 16 * MB * 1.1 + MB, peak / MB


# --- one absolute deadline, however the bytes trickle ----------------------------------------


def test_a_reply_written_a_byte_at_a_time_ends_at_the_deadline():
    message = _framed(protocol.encode({"out": "x" * 5000}))
    a, b = socket.socketpair()
    stop = threading.Event()

    def trickle() -> None:
        for byte in message:
            if stop.is_set():
                return
            try:
                a.send(bytes([byte]))
            except OSError:
                return
            time.sleep(0.01)

    writer = threading.Thread(target=trickle, daemon=True)
    writer.start()
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        protocol.recv(b, started + 1.0)
    took = time.monotonic() - started
    stop.set()
    writer.join(5)
    a.close()
    b.close()
    assert 0.9 < took < 1.3, took


def test_a_peer_that_never_reads_cannot_hold_a_send():
    a, b = socket.socketpair()
    with a, b:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            protocol.send(a, {"x": torch.zeros(4 * MB)}, started + 0.5)
        assert time.monotonic() - started < 1.0


# --- the schemas: one per probe, and nothing else gets through -------------------------------


def test_every_probe_has_a_reply_schema_and_every_schema_a_probe():
    assert set(replies.SCHEMAS) == set(PROBES), (
        "a probe was added, renamed or removed: give it its reply schema in "
        "autograder/boundary/replies.py "
        f"(missing: {sorted(set(PROBES) - set(replies.SCHEMAS))}, "
        f"stale: {sorted(set(replies.SCHEMAS) - set(PROBES))})")


def test_a_probe_without_a_schema_is_the_graders_error():
    with pytest.raises(RuntimeError, match="no reply schema"):
        replies.reply_problem("a_probe_added_without_its_schema", {"value": 1, "seconds": 0.0})


def _wrong(schema: object) -> list[object]:
    """Values that are not ``schema`` (for typed fields of a schema)."""
    if schema is replies.ANY:
        return []
    candidates = [None, True, 7, 2.5, "text", [], {}, [None], {"k": None}, RemoteObject("x"),
                  torch.zeros(2), MetaTensor(torch.float32, [2])]
    return [c for c in candidates if replies.problem(c, schema) is not None]


def _typed_paths(value: object, schema: object, path: tuple = ()):
    """(path, schema) of every typed field in ``value`` as ``schema`` reads it."""
    if schema is replies.ANY:
        return
    yield path, schema
    while isinstance(schema, replies.OneOf):  # the form ``value`` has: its fields are typed too
        schema = next(o for o in schema.options if replies.problem(value, o) is None)
    if isinstance(schema, dict):
        for key, item in value.items():
            yield from _typed_paths(item, schema.get(key, schema.get(f"{key}?")), (*path, key))
    elif isinstance(schema, replies.DictOf):
        for key, item in value.items():
            yield from _typed_paths(item, schema.value, (*path, key))
    elif isinstance(schema, list):
        for i, item in enumerate(value):
            yield from _typed_paths(item, schema[0], (*path, i))
    elif isinstance(schema, replies.Items):
        for i, (item, sub) in enumerate(zip(value, schema.items, strict=True)):
            yield from _typed_paths(item, sub, (*path, i))


def _replaced(value: object, path: tuple, new: object) -> object:
    if not path:
        return new
    head, *rest = path
    if isinstance(value, list):
        return [(_replaced(v, tuple(rest), new) if i == head else v) for i, v in enumerate(value)]
    return {k: (_replaced(v, tuple(rest), new) if k == head else v) for k, v in value.items()}


@pytest.fixture(scope="module")
def honest_replies() -> dict:
    """Every reply the worker sent while grading lumen, as it arrived, by probe."""
    seen: dict[str, list] = {}
    recv = protocol.recv

    def spy(sock, deadline=None):
        reply = recv(sock, deadline)
        kind = "hello" if "pid" in reply else "imports" if "imports" in reply else ""
        seen.setdefault(kind, []).append(reply)  # "": a probe's, filed by spy_call
        return reply

    call = StageSession.call

    def spy_call(self, probe, *args, **kwargs):
        before = len(seen.get("", []))
        outcome = call(self, probe, *args, **kwargs)
        seen.setdefault(probe, []).extend(seen.get("", [])[before:])
        return outcome

    mp = pytest.MonkeyPatch()
    mp.setattr(protocol, "recv", spy)
    mp.setattr(StageSession, "call", spy_call)
    try:
        with Grader(Options(device="cpu")) as grader:
            grader.forks = 1  # the spies record in this process, where the suites then run
            result = grader.grade("lumen")
    finally:
        mp.undo()
    assert result.score == result.max_score
    seen.pop("", None)
    return seen


def test_honest_replies_fit_their_schemas(honest_replies):
    honest_replies = dict(honest_replies)
    hellos = honest_replies.pop("hello"), honest_replies.pop("imports")
    for got, schema in zip(hellos, (replies.HELLO_PID, replies.HELLO_IMPORTS), strict=True):
        for reply in got:
            assert replies.problem(reply, schema) is None, reply
    assert set(honest_replies) == set(PROBES), "lumen's grade calls every probe"
    for probe, got in honest_replies.items():
        for reply in got:
            assert replies.reply_problem(probe, reply) is None, (probe, reply)


#: A value each probe sends when lumen's grade only ever makes it raise.
VALUES_NOT_SEEN = {"embedding_check_ids": {"returned": "NoneType"}}


def _fullest(honest_replies: dict) -> dict:
    """The longest reply with a value, of each probe."""
    fullest = {}
    for probe in PROBES:
        got = [r for r in honest_replies[probe] if "value" in r]
        if not got:
            got = [{"value": VALUES_NOT_SEEN[probe], "seconds": 0.1, "output": ""}]
        fullest[probe] = max(got, key=lambda r: len(str(r)))
    return fullest


def test_every_typed_field_refuses_every_wrong_type(honest_replies):
    """Each field the probe fixes the type of, in a real reply of every probe, replaced by each
    value of another type: the reply no longer fits (and each ANY field takes anything)."""
    checked = 0
    for probe, reply in _fullest(honest_replies).items():
        schema = {"value": replies.SCHEMAS[probe], "seconds": float, "output?": str}
        for path, field in list(_typed_paths(reply, schema)):
            for bad in _wrong(field):
                forged = _replaced(reply, path, bad)
                assert replies.reply_problem(probe, forged) is not None, (probe, path, bad)
                checked += 1
    assert checked > 500, checked


def test_fields_the_probe_never_sends_and_missing_fields_are_refused(honest_replies):
    for probe, reply in _fullest(honest_replies).items():
        if isinstance(reply["value"], dict):
            extra = {**reply, "value": {**reply["value"], "score": 100}}
            assert replies.reply_problem(probe, extra) is not None, probe
            required = [k for k in replies.SCHEMAS[probe] if not k.endswith("?")]
            for key in required:
                less = {**reply, "value": {k: v for k, v in reply["value"].items() if k != key}}
                assert replies.reply_problem(probe, less) is not None, (probe, key)
        for whole in (None, 1, "ok", [reply], {}, {"value": reply["value"]},
                      {**reply, "seconds": "0.1"}, {**reply, "output": ["x"]},
                      {"error": "TypeError", "seconds": 0.1},
                      {"error": {"type": "E", "message": "m"}, "seconds": 0.1},
                      {"probe_error": 5, "seconds": 0.1}):
            assert replies.reply_problem(probe, whole) is not None, (probe, whole)


# --- end to end: a learner's process that writes its own answers -----------------------------

#: At import: find the process's socket to the grader; in forward, write ``ANSWER`` to it
#: (``WRITE`` says how) instead of letting the probe answer, and never return.
RAW = '''
import json as _json, os as _os, socket as _socket, struct as _struct, threading as _threading
import time as _time


def _grader_socket():
    for fd in range(3, 1024):
        try:
            s = _socket.socket(fileno=_os.dup(fd))
        except OSError:
            continue
        if s.family == _socket.AF_UNIX and s.type == _socket.SOCK_STREAM:
            return s
        s.close()


def _framed(header, blobs=b""):
    if not isinstance(header, bytes):
        header = _json.dumps(header).encode()
    body = _struct.pack(">I", len(header)) + header + blobs
    return _struct.pack(">Q", len(body)) + body


def _reply(value, **fields):
    """A reply in the wire's tags, as the worker would write it."""
    def tag(v):
        if isinstance(v, dict):
            return {"dict": {k: tag(x) for k, x in v.items()}}
        if isinstance(v, list):
            return [tag(x) for x in v]
        return v
    return {"value": tag({"value": value, "seconds": 0.01, "output": "", **fields}),
            "tensors": []}


def _write(data, each=None):
    sock = _grader_socket()
    if each is None:
        sock.sendall(data)
    else:
        for i in range(0, len(data), each[0]):
            sock.send(data[i:i + each[0]])
            _time.sleep(each[1])
    _time.sleep(3600)
'''


def _raw(answer: str, each: str = "None") -> dict[str, str]:
    """Embedding.forward that writes ``answer`` (an expression of RAW's names) itself."""
    code = ("def forward(self, ids):\n"
            f"    _write({answer}, each={each})\n")
    return {"embeddings:check_ids": textwrap.dedent('''
        def check_ids(ids, vocab_size):
            pass
    ''') + RAW, "embeddings:Embedding.forward": code}


def _returning(value: str) -> dict[str, str]:
    return {"embeddings:Embedding.forward": f"def forward(self, ids):\n    return {value}\n"}


WIRE_ATTACKS = {
    # the encoding's markers, returned as data by the learner's forward
    **{f"forward returns {c}": _returning(repr(c)) for c in COLLIDING},
    "forward returns a list of 5,000,000 empty lists": _returning("[[] for _ in range(5_000_000)]"),
    "forward returns lists nested 10,000 deep": _returning(
        "__import__('functools').reduce(lambda x, _: [x], range(10_000), [])"),
    # written to the socket by hand
    "a reply a byte at a time": _raw('_framed(_reply({"out": "x" * 4000}))', each="(1, 0.005)"),
    "a reply 100 bytes a second": _raw('_framed(_reply({"out": "x" * 4000}))', each="(10, 0.1)"),
    "a 64 MB header of nested empty lists": _raw(
        '_framed(b\'{"value": \' + b"[]," * (21 << 20) + b\'[], "tensors": []}\')'),
    "a header nested 500,000 deep": _raw(
        '_framed(b\'{"value": \' + b"[" * 500_000 + b"]" * 500_000 + b\', "tensors": []}\')'),
    "a header of 300,000 values": _raw(
        '_framed(b\'{"value": [\' + b"0," * 300_000 + b\'0], "tensors": []}\')'),
    "a header with the old encoding's tensor": _raw(
        '_framed({"value": {"__tensor__": 0, "dtype": "float32", "shape": [1], '
        '"device": "cpu"}, "sizes": [4]}, b"\\0" * 4)'),
    "60 MB of tensor bytes no header describes": _raw(
        '_framed(_reply({"out": 1}), b"\\0" * (60 << 20))'),
    "an empty tensor whose size overflows when allocated": _raw(
        '_framed({"value": {"dict": {"value": {"dict": {"out": {"tensor": 0}}}, '
        '"seconds": 0.1}}, "tensors": [{"dtype": "float32", "shape": [2 ** 62 - 1, '
        '2 ** 62 - 1, 0], "device": "cpu", "bytes": 0}]})'),
    "a meta tensor of 2 ** 93 elements": _raw(
        '_framed({"value": {"dict": {"value": {"dict": {"out": {"tensor": 0}}}, '
        '"seconds": 0.1}}, "tensors": [{"dtype": "float32", "shape": [2 ** 31] * 3, '
        '"device": "meta", "bytes": None}]})'),
    "a reply replaced wholesale by a number": _raw('_framed({"value": 42, "tensors": []})'),
    "a reply that is a bare dict": _raw('_framed({"value": {"out": 1}, "tensors": []})'),
    "a reply whose value is a list": _raw('_framed(_reply([1, 2, 3]))'),
    "a reply with a field the probe never sends": _raw(
        '_framed(_reply({"out": 1, "inputs": {}, "in_place": [], "score": 20}))'),
    "in_place as a string": _raw('_framed(_reply({"out": 1, "inputs": {"ids": 1}, '
                                 '"in_place": "ids"}))'),
    "in_place holding numbers": _raw('_framed(_reply({"out": 1, "inputs": {"ids": 1}, '
                                     '"in_place": [1, 2]}))'),
    "inputs as a list": _raw('_framed(_reply({"out": 1, "inputs": [], "in_place": []}))'),
    "seconds as a string": _raw('_framed(_reply({"out": 1}, seconds="fast"))'),
    "seconds of 400 digits": _raw('_framed(_reply({"out": 1}, seconds=10 ** 400))'),
    "output as a list": _raw('_framed(_reply({"out": 1}, output=["x"]))'),
    "an error that is a string": _raw(
        '_framed({"value": {"dict": {"error": "TypeError", "seconds": 0.1}}, "tensors": []})'),
    "an error whose where is a dict": _raw(
        '_framed({"value": {"dict": {"error": {"dict": {"type": "E", "message": "m", '
        '"where": {"dict": {}}}}, "seconds": 0.1}}, "tensors": []})'),
    "a probe_error that is a number": _raw(
        '_framed({"value": {"dict": {"probe_error": 7, "seconds": 0.1}}, "tensors": []})'),
}


@pytest.fixture(scope="module")
def grader():
    limits = Limits(probe_seconds=2, import_seconds=8, submission_seconds=60)
    with Grader(Options(device="cpu", limits=limits)) as g:
        yield g


@pytest.mark.parametrize("attack", list(WIRE_ATTACKS))
def test_whatever_the_process_writes_is_the_learners(grader, tmp_path, monkeypatch, attack):
    """Each attack costs the learner the forward checks, in bounded time: no grading error,
    no GraderError, no call past its deadline."""
    calls: list[tuple[float, Outcome]] = []
    call = StageSession.call

    def timed(self, *args, **kwargs):
        started = time.monotonic()
        outcome = call(self, *args, **kwargs)
        calls.append((time.monotonic() - started, outcome))
        return outcome

    monkeypatch.setattr(StageSession, "call", timed)
    folder = make_submission(tmp_path / "submission", WIRE_ATTACKS[attack])
    started = time.monotonic()
    result = grader.grade(folder, stages=["embedding"])  # a grader error would raise here
    took = time.monotonic() - started
    embedding = next(s for s in result.stages if s.name == "embedding")
    assert not any(r.grader_error for r, _, _ in embedding.tests)
    failed = {r.name for r, _, _ in embedding.tests if not r.passed}
    assert "test_lookup_every_shape" in failed, failed
    assert embedding.score < embedding.max_score
    longest = max(seconds for seconds, _ in calls)
    assert longest < grader.worker.limits.probe_seconds + 1.5, longest  # the deadline held
    assert took < 45, took
    if "forward returns" not in attack:  # written by hand: named as the learner's doing
        messages = " ".join(r.message for r, _, _ in embedding.tests)
        assert MALFORMED in messages or "did not finish in time" in messages, messages[:2000]


# --- every value a schema lets through is judged, never raised on -----------------------------

_F = torch.float32
#: Values a reply may hold where its schema says ANY: each can be written to the socket.
STRANGE = [None, True, 0, -1, 10 ** 400, float("nan"), float("inf"), -1e308, "", "x" * 3000,
           [], [None, 1], {}, {"error": "E", "message": "m"}, {"error": 3}, {"tensor": 0},
           RemoteObject("Tensor"), MetaTensor(_F, [2, 3]), MetaTensor(torch.int64, [])]


def _strange_tensor(rng: random.Random, like: object) -> object:
    """A tensor near ``like`` (a real one from the honest reply), made strange."""
    if not isinstance(like, torch.Tensor):
        like = torch.zeros(2, 3)
    options = [
        lambda: like.double() if like.is_floating_point() else like.float(),
        lambda: like.to(torch.complex64),
        lambda: like.bool(),
        lambda: like.to(torch.int8),
        lambda: like.reshape(-1),
        lambda: like.unsqueeze(0),
        lambda: torch.empty(0, dtype=like.dtype),
        lambda: torch.full_like(like.float(), float("nan")),
        lambda: torch.full_like(like.float(), float("inf")),
        lambda: torch.tensor(3.0),
        lambda: torch.zeros(*([2] * 7)),
        lambda: like.mT if like.dim() >= 2 else like.flip(0) if like.dim() else like,
        lambda: MetaTensor(like.dtype, list(like.shape)),  # the right shape, and no values
        lambda: like + 1,  # the right shape and dtype, wrong values
    ]
    t = rng.choice(options)()
    if isinstance(t, torch.Tensor):
        t.remote_device = rng.choice(["cpu", "meta", "cuda:0", "\\x1b[2J", ""])
    return t


def _strange(rng: random.Random, like: object) -> object:
    return _strange_tensor(rng, like) if rng.random() < 0.5 else rng.choice(STRANGE)


def _mutated(value: object, schema: object, rng: random.Random, rate: float) -> object:
    """``value`` with fields changed at ``rate``, to values that still fit ``schema``."""
    if schema is replies.ANY:
        return _strange(rng, value) if rng.random() < rate else value
    if isinstance(schema, replies.OneOf):
        if rng.random() < rate / 2:  # another form the probe may send
            option = rng.choice(schema.options)
            if option is None:
                return None
            if option == replies.REFUSAL:
                return {"error": rng.choice(["TypeError", "NotImplementedError", "E"]),
                        "message": rng.choice(["", "device", "x" * 500])}
        fits = next(o for o in schema.options if replies.problem(value, o) is None)
        return _mutated(value, fits, rng, rate)
    if schema is int and rng.random() < rate:
        return rng.choice([0, -1, 10 ** 400, -(10 ** 400)])
    if schema is float and rng.random() < rate:
        return rng.choice([float("nan"), float("inf"), -0.0, 1e308])
    if schema is str and rng.random() < rate:
        return rng.choice(["", "Parameter", "ParamCount", "tuple", "NotImplementedError", "?"])
    if schema is bool and rng.random() < rate:
        return not value
    if isinstance(schema, list):
        items = [_mutated(v, schema[0], rng, rate) for v in value]
        return items[: rng.randrange(len(items) + 1)] if items and rng.random() < rate else items
    if isinstance(schema, replies.Items):
        return [_mutated(v, s, rng, rate) for v, s in zip(value, schema.items, strict=True)]
    if isinstance(schema, replies.DictOf):
        return {k: _mutated(v, schema.value, rng, rate) for k, v in value.items()
                if rng.random() >= rate / 2}  # a key dropped: a renamed layer, say
    if isinstance(schema, dict):
        out = {}
        for key, item in value.items():
            optional = f"{key}?" in schema
            if optional and rng.random() < rate / 2:
                continue  # an optional field left out
            out[key] = _mutated(item, schema[f"{key}?" if optional else key], rng, rate)
        return out
    return value


ERRORS = [{"type": "TypeError", "message": "f() got an unexpected keyword argument 'x'",
           "where": [], "not_implemented": False},
          {"type": "NotImplementedError", "message": "", "where": ["e.py, line 1, in f: x"],
           "not_implemented": False},
          {"type": "RuntimeError", "message": "Expected all tensors to be on the same device",
           "where": [], "not_implemented": False},
          {"type": "ValueError", "message": "7 is not in [0, 5)", "where": [],
           "not_implemented": False}]


@pytest.mark.parametrize("seed", range(6))
def test_schema_valid_strange_replies_are_judged_not_raised(monkeypatch, seed):
    """Every probe's outcome, as lumen's process answered it, with fields changed (at random,
    by the seed) to other values its schema allows: odd tensors, numbers past float, strings
    for tensors, dropped optional fields and state_dict keys, errors for values. Each is a
    reply the learner's process could write; the suites must judge every one as a verdict."""
    rng = random.Random(seed)
    call = StageSession.call
    rate = (0.02, 0.05, 0.1, 0.2, 0.4, 0.7)[seed]

    def strange(self, probe, *args, **kwargs):
        outcome = call(self, probe, *args, **kwargs)
        roll, imports = rng.random(), outcome.import_errors
        if roll < 0.02:  # what the grader makes of a hang, a crash, a malformed answer
            return rng.choice([Outcome(timed_out=True, import_errors=imports),
                               Outcome(crashed=MALFORMED, import_errors=imports)])
        if roll < 0.1 or outcome.error is not None and roll < 0.1 + rate:  # another exception
            return Outcome(error=rng.choice(ERRORS), import_errors=imports)
        if outcome.ok:
            outcome.value = clean(_mutated(outcome.value, replies.SCHEMAS[probe], rng, rate))
        return outcome

    monkeypatch.setattr(StageSession, "call", strange)
    try:
        with Grader(Options(device="cpu")) as grader:
            result = grader.grade("lumen")
    except GraderError as error:
        pytest.fail(f"a schema-valid reply raised inside a hidden test: {error}")
    assert not any(r.grader_error for s in result.stages for r, _, _ in s.tests)
    assert result.score < result.max_score, "the changes reached the suites"


def test_the_suites_comparisons_take_any_value():
    """values.close, first_gap, same and expect_tensor, given each strange value for a
    learner's tensor (expected values with NaN and inf too: they come from the learner's own
    weights): a bool, a string or a Mistake, never another exception."""
    from autograder.suites import values
    from autograder.suites.feedback import Mistake, expect_tensor, same

    rng = random.Random(0)
    base = torch.randn(3, 4)
    expected_values = [base, base.double(), torch.full((3, 4), float("nan")),
                       base.masked_fill(base > 0, float("inf")),
                       torch.zeros(3, 4, dtype=torch.int64)]
    strange = [*STRANGE, *(_strange_tensor(rng, base) for _ in range(60))]
    for expected in expected_values:
        for got in strange:
            assert type(values.close(got, expected)) is bool
            assert type(same(got, expected)) is bool
            if isinstance(got, torch.Tensor):
                assert type(values.first_gap(got, expected)) is str
            for kwargs in ({}, {"like": expected}, {"device": "cpu"}, {"device": "meta"}):
                try:
                    expect_tensor(got, "it", **kwargs)
                except Mistake:
                    pass
    for number in (10 ** 400, -(10 ** 400), 3, 2.5, float("nan")):
        assert isinstance(values.comparable(number), int | float)
        assert type(math.isclose(values.comparable(number), 0.5)) is bool


#: What a GPT2's state_dict() returns, in place of its state: markers of the encodings (this
#: one's and the one before), and states without the tensors a suite reads.
STATES = {
    "the old object marker": "{'__object__': 'Parameter'}",
    "the old tensor marker": "{'__tensor__': None, 'dtype': 'float32', 'shape': [2], "
                             "'device': 'cpu'}",
    "a tensor tag": "{'tensor': 0}",
    "a dict tag": "{'dict': {'wte.weight': 1}}",
    "an object tag for wte": "{'wte.weight': {'object': 'Parameter'}}",
    "nothing": "{}",
    "strings for tensors": "{k: 'x' for k in type(self).state_dict(self)}",
}


@pytest.mark.parametrize("state", list(STATES))
def test_a_state_dict_of_markers_is_the_learners(grader, tmp_path, state):
    """Through the honest probes: a model whose state_dict() returns ``state`` loses the
    tying checks that read it, and raises nothing in the grader (on main it raised TypeError
    and KeyError inside the hidden tests: "grading error" rows)."""
    code = textwrap.dedent(f'''
        def tie_weights(self):
            if self.config.tie_weights:
                self.lm_head.weight = self.wte.weight
            object.__setattr__(self, "state_dict", lambda *a, **k: {STATES[state]})
    ''')
    folder = make_submission(tmp_path / "submission", {"gpt2:GPT2.tie_weights": code})
    result = grader.grade(folder, stages=["tying", "init"])  # a grader error would raise here
    tying = next(s for s in result.stages if s.name == "tying")
    assert not any(r.grader_error for s in result.stages for r, _, _ in s.tests)
    assert tying.score < tying.max_score


@pytest.mark.parametrize("shape", [[], [5], [3, 4, 5]])
def test_a_transposed_head_of_any_reported_shape_is_a_verdict(shape):
    """Found by the strange-replies sweep (seed 2): a process reporting ``transposed`` with a
    head_shape that is not two numbers (its schema allows any list) got an internal error."""
    from autograder.suites import test_tying

    mistake = test_tying._transposed_mistake("the tie", {"head_shape": shape, "transposed": True})
    assert f"shape {tuple(shape)}" in str(mistake) and "transposed table" in str(mistake)


def test_builtin_bases_are_read_without_running_the_learners_code():
    """An exception's built-in classes, for ``feedback.is_one_of``: a subclass of IndexError
    names IndexError; a class merely called IndexError does not; a metaclass whose attribute
    lookup raises, or that lies about ``__module__``, neither runs nor fools the reading."""
    from autograder.sandboxed.probes.shared import builtin_bases
    from autograder.suites.feedback import is_one_of

    class TokenIndexError(IndexError):
        pass

    class IndexError_(Exception):  # noqa: N801 - a learner's look-alike
        pass

    IndexError_.__qualname__, IndexError_.__module__ = "IndexError", "builtins"

    class Loud(type):
        def __getattribute__(cls, name):
            raise RuntimeError("ran the learner's metaclass")

    class Quiet(Exception, metaclass=Loud):
        pass

    assert builtin_bases(TokenIndexError())[:3] == ["IndexError", "LookupError", "Exception"]
    assert "IndexError" not in builtin_bases(IndexError_())
    assert builtin_bases(Quiet()) == ["Exception", "BaseException", "object"]
    assert is_one_of({"type": "TokenIndexError", "bases": builtin_bases(TokenIndexError())},
                     ("IndexError",))
    assert not is_one_of({"type": "IndexError", "bases": builtin_bases(IndexError_())},
                         ("IndexError",))
    assert is_one_of({"type": "IndexError"}, ("IndexError",))  # no bases reported: by name
