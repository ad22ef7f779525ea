"""The wire format between the grader and its worker: JSON plus raw tensor bytes, never pickle.

A message is ``[u64 length][u32 header length][header JSON][tensor bytes...]``; the header is
``{"value": V, "tensors": [descriptor, ...]}``. So that no data can pass for a marker, every
JSON object in V is a one-key tag: ``{"dict": {...}}`` a dict (whatever its keys),
``{"tensor": i}`` the i-th descriptor (``dtype``, ``shape``, ``device``, ``bytes``; its bytes
follow in order, each padded to ``ALIGN``), ``{"object": "TypeName"}`` a value described,
never sent.

Loading builds only dicts, lists, strings, numbers, None and tensors of whitelisted dtypes:
nothing in a message can run code. The peer may be hostile, so ``recv`` reads against one
deadline and refuses, before building anything, what is too big (``MAX_MESSAGE``,
``MAX_HEADER``, ``MAX_ITEMS``, ``MAX_STORAGE``), too deep (``MAX_DEPTH``) or inconsistent;
any other failure while reading is a ProtocolError too (``_read_safely``).
"""

from __future__ import annotations

import json
import re
import struct
import time

import torch

MAX_MESSAGE = 64 << 20  # bytes; an honest reply is at most ~9 MB (a GPT-2's logits and state)
MAX_HEADER = 1 << 20  # bytes of header JSON; an honest one is at most ~4 KB
MAX_DEPTH = 64  # JSON nesting; an honest header nests at most ~45 (``_encode``'s 20 levels)
MAX_ITEMS = 100_000  # JSON values in a header; an honest one has at most ~300
MAX_STRING = 4000  # characters kept of a message from learner code (an exception's)
#: The largest tensor torch can describe, in bytes: its storage size, computed with each
#: dimension of 0 counted as 1 (as torch computes strides), must fit an int64.
MAX_STORAGE = (1 << 63) - 1
ALIGN = 16  # each tensor's bytes start at a multiple of this: complex128's itemsize
CHUNK = 1 << 20  # bytes asked of one recv

DTYPES: dict[str, torch.dtype] = {
    str(dt).removeprefix("torch."): dt
    for dt in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
        torch.complex128, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
        torch.bool,
    )
}
TAGS = ("dict", "tensor", "object")


class ProtocolError(Exception):
    """A message that is malformed, too large, or cut off."""


def type_name(obj: object) -> str:
    """The name of ``obj``'s type, without running any code ``obj`` defines."""
    try:
        name = type.__getattribute__(type(obj), "__qualname__")
        return name[:200] if type(name) is str else "?"
    except Exception:  # noqa: BLE001 - a metaclass can make even this raise
        return "?"


# --- writing ---------------------------------------------------------------------------------


def _encode(obj: object, tensors: list[dict], blobs: list[bytes], depth: int = 0) -> object:
    if depth > 20:
        raise ProtocolError("value nested too deeply")
    kind = type(obj)
    if obj is None or kind in (bool, int, float, str):
        return obj
    if kind in (list, tuple):
        return [_encode(x, tensors, blobs, depth + 1) for x in obj]
    if kind is dict:
        return {"dict": {str(k)[:200]: _encode(v, tensors, blobs, depth + 1)
                         for k, v in obj.items()}}
    if kind in (torch.Tensor, torch.nn.Parameter):
        return _encode_tensor(obj, tensors, blobs)
    # Anything else (a learner's own class, a numpy array, a tensor subclass) is described,
    # never sent: its methods could lie.
    return {"object": type_name(obj)}


def _encode_tensor(t: torch.Tensor, tensors: list[dict], blobs: list[bytes]) -> dict:
    t = torch.Tensor.detach(t)
    dtype = str(t.dtype).removeprefix("torch.")
    if dtype not in DTYPES or t.layout != torch.strided:
        return {"object": f"Tensor(dtype={dtype}, layout={t.layout})"}
    head = {"dtype": dtype, "shape": list(t.shape), "device": str(t.device), "bytes": None}
    if t.device.type != "meta":
        flat = t.resolve_conj().resolve_neg().cpu().contiguous().reshape(-1)
        blob = flat.view(torch.uint8).numpy().tobytes()
        head["bytes"] = len(blob)
        blobs += [blob, bytes(-len(blob) % ALIGN)]  # the padding: the next one starts aligned
    tensors.append(head)
    return {"tensor": len(tensors) - 1}


def encode(obj: object) -> bytes:
    """``obj`` as one message, without its u64 length."""
    tensors: list[dict] = []
    blobs: list[bytes] = []
    value = _encode(obj, tensors, blobs)
    header = json.dumps({"value": value, "tensors": tensors}).encode()
    data = b"".join([struct.pack(">I", len(header)), header, *blobs])
    if len(data) > MAX_MESSAGE or len(header) > MAX_HEADER:
        raise ProtocolError(f"message of {len(data):,} bytes (a header of {len(header):,}) "
                            f"exceeds {MAX_MESSAGE:,} ({MAX_HEADER:,})")
    return data


def send(sock, obj: object, deadline: float | None = None) -> None:
    """Send ``obj`` as one length-prefixed message; by ``deadline`` (time.monotonic()), if
    given, else TimeoutError (a peer that reads a byte at a time gets no more time)."""
    send_encoded(sock, encode(obj), deadline)


def send_encoded(sock, data: bytes, deadline: float | None = None) -> None:
    """``send`` of a message already encoded."""
    for part in (struct.pack(">Q", len(data)), data):
        view = memoryview(part)
        while view:
            _wait(sock, deadline)
            view = view[sock.send(view[:CHUNK]):]


# --- reading ---------------------------------------------------------------------------------


class MetaTensor:
    """A tensor that lived on the meta device: a shape and a dtype, no values."""

    def __init__(self, dtype: torch.dtype, shape: list[int]) -> None:
        self.dtype, self.shape, self.device = dtype, torch.Size(shape), torch.device("meta")

    def __repr__(self) -> str:
        return f"MetaTensor(shape={list(self.shape)}, dtype={self.dtype})"


class RemoteObject:
    """A value the worker described but did not send (not a tensor or plain data)."""

    def __init__(self, name: str) -> None:
        self.type_name = name

    def __repr__(self) -> str:
        return f"<a {self.type_name} object>"


#: A JSON string (its escapes included), or a character that starts a value: what a string
#: holds is text, not structure.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[{,]', re.DOTALL)


def _within_budget(text: str) -> None:
    """Refuse a header of more than MAX_ITEMS values before json.loads builds them (tens of
    MB of ``[],[],...`` would be gigabytes of lists). Counting its commas and brackets, at C
    speed, bounds the values from above; only a header over that bound (commas in its strings,
    or too many values) is counted exactly, by one pass that stops at the first value too many.
    Nesting is bounded while the value is built (``_value``; json.loads stops at Python's
    recursion limit, which costs nothing)."""
    if text.count(",") + text.count("[") + text.count("{") < MAX_ITEMS:
        return
    for items, _ in enumerate(_TOKEN.finditer(text)):
        if items >= MAX_ITEMS:
            raise ProtocolError(f"a header of more than {MAX_ITEMS:,} values")


def _header(raw: bytes) -> tuple[object, list[dict]]:
    """The header's value (still tagged) and its tensor descriptors, checked."""
    try:
        text = raw.decode("utf-8")  # strictly: json.loads would guess UTF-16 from raw bytes
    except UnicodeDecodeError as error:
        raise ProtocolError(f"a header that is not UTF-8: {error}") from error
    _within_budget(text)
    try:
        header = json.loads(text)
    except (ValueError, RecursionError) as error:  # big-integer digits are a ValueError too
        raise ProtocolError(f"a header that is not JSON: {error}") from error
    if type(header) is not dict or set(header) != {"value", "tensors"} \
            or type(header["tensors"]) is not list:
        raise ProtocolError("a header without exactly its value and tensors")
    return header["value"], [_descriptor(d) for d in header["tensors"]]


def _descriptor(d: object) -> dict:
    """A tensor descriptor, its fields typed and consistent (bytes = numel * itemsize)."""
    if type(d) is not dict or set(d) != {"dtype", "shape", "device", "bytes"}:
        raise ProtocolError(f"a tensor descriptor with other fields: {str(d)[:200]}")
    dtype, shape, nbytes = DTYPES.get(d["dtype"]) if type(d["dtype"]) is str else None, \
        d["shape"], d["bytes"]
    if dtype is None or type(shape) is not list or type(d["device"]) is not str \
            or not all(type(s) is int and 0 <= s < 1 << 62 for s in shape) or len(shape) > 64:
        raise ProtocolError(f"a bad tensor descriptor: {str(d)[:200]}")
    numel, storage = 1, dtype.itemsize
    for s in shape:  # exact (Python's integers), stopping once past what torch can hold
        numel, storage = numel * s, storage * max(s, 1)
        if storage > MAX_STORAGE:
            raise ProtocolError(f"a tensor shape whose size overflows (torch could never "
                                f"hold it, even with a dimension of 0): {str(d)[:200]}")
    if nbytes is not None and (type(nbytes) is not int
                               or nbytes != numel * dtype.itemsize):
        raise ProtocolError(f"tensor bytes that do not match its shape: {str(d)[:200]}")
    return {"dtype": dtype, "shape": shape, "device": d["device"][:200], "bytes": nbytes}


def _blob_bytes(tensors: list[dict]) -> int:
    """How many bytes follow the header: each tensor's, padded to ALIGN."""
    return sum(d["bytes"] + -d["bytes"] % ALIGN for d in tensors if d["bytes"] is not None)


def _tensors(descriptors: list[dict], blobs: bytearray) -> list[object]:
    """Each descriptor's tensor, sharing ``blobs``' memory (no copy), or its MetaTensor."""
    out: list[object] = []
    offset = 0
    for d in descriptors:
        if d["bytes"] is None:
            out.append(MetaTensor(d["dtype"], d["shape"]))
            continue
        if d["bytes"] == 0:
            t = torch.empty(d["shape"], dtype=d["dtype"])
        else:
            t = torch.frombuffer(blobs, dtype=d["dtype"], count=d["bytes"] // d["dtype"].itemsize,
                                 offset=offset).reshape(d["shape"])
        offset += d["bytes"] + -d["bytes"] % ALIGN
        t.remote_device = d["device"]  # where it lived in the worker
        out.append(t)
    return out


def _value(obj: object, tensors: list[object], used: set[int], depth: int = 0) -> object:
    """The tagged header value as data, at most MAX_DEPTH deep; each tensor may be referenced
    once (no amplification: one 8 MB tensor named 100,000 times would be 800 GB)."""
    kind = type(obj)
    if obj is None or kind in (bool, int, float, str):
        return obj
    if depth >= MAX_DEPTH:
        raise ProtocolError(f"a header nested more than {MAX_DEPTH} deep")
    if kind is list:
        return [_value(x, tensors, used, depth + 1) for x in obj]
    if kind is not dict or len(obj) != 1 or next(iter(obj)) not in TAGS:
        raise ProtocolError(f"a JSON object that is not a tag of the protocol: {str(obj)[:200]}")
    (tag, inner), = obj.items()
    if tag == "dict" and type(inner) is dict:
        return {k: _value(v, tensors, used, depth + 2) for k, v in inner.items()}
    if tag == "object" and type(inner) is str:
        return RemoteObject(inner)
    if tag == "tensor" and type(inner) is int and 0 <= inner < len(tensors) \
            and inner not in used:
        used.add(inner)
        return tensors[inner]
    raise ProtocolError(f"a bad {tag!r} tag: {str(obj)[:200]}")


def _build(value: object, descriptors: list[dict], blobs: bytearray) -> object:
    tensors = _tensors(descriptors, blobs)
    used: set[int] = set()
    result = _value(value, tensors, used)
    if len(used) != len(tensors):
        raise ProtocolError("a tensor sent but never referenced")
    return result


def _read_safely(step, *args: object) -> object:
    """``step(*args)`` (reading a header, building its value): whatever goes wrong there is
    the message's fault, a ProtocolError, never another exception (torch refusing a shape,
    memory, recursion): no reply can raise anything else in the grader."""
    try:
        return step(*args)
    except ProtocolError:
        raise
    except Exception as error:  # noqa: BLE001 - every failure on hostile input, as one kind
        raise ProtocolError(f"a message that could not be read ({type(error).__name__}: "
                            f"{str(error)[:200]})") from error


def decode(data: bytes) -> object:
    """The value in one message (the inverse of ``encode``)."""
    if len(data) < 4:
        raise ProtocolError("a message shorter than its header length")
    (n,) = struct.unpack(">I", data[:4])
    if n > MAX_HEADER or 4 + n > len(data):
        raise ProtocolError(f"a header of {n:,} bytes in a message of {len(data):,}")
    value, descriptors = _read_safely(_header, data[4 : 4 + n])
    if 4 + n + _blob_bytes(descriptors) != len(data):
        raise ProtocolError("tensor bytes that do not add up to the message")
    return _read_safely(_build, value, descriptors, bytearray(data[4 + n :]))


def _wait(sock, deadline: float | None) -> None:
    """Give the next socket operation only what is left until ``deadline``."""
    if deadline is not None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the deadline passed")
        sock.settimeout(left)


def _recv_into(sock, buffer: bytearray, deadline: float | None) -> None:
    view, got = memoryview(buffer), 0
    while got < len(buffer):
        _wait(sock, deadline)
        n = sock.recv_into(view[got:], min(len(buffer) - got, CHUNK))
        if not n:
            raise EOFError("the other end closed the connection")
        got += n


def _read(sock, n: int, deadline: float | None) -> bytearray:
    buffer = bytearray(n)
    _recv_into(sock, buffer, deadline)
    return buffer


def recv(sock, deadline: float | None = None) -> object:
    """Receive one message; EOFError if the peer has gone, TimeoutError if it is not all
    there by ``deadline`` (time.monotonic()), ProtocolError if it breaks a rule above. Sizes
    are checked before what they announce is read: the grader's memory follows MAX_MESSAGE."""
    total, n = struct.unpack(">QI", _read(sock, 12, deadline))
    if total > MAX_MESSAGE or n > MAX_HEADER or 4 + n > total:
        raise ProtocolError(f"a message of {total:,} bytes with a header of {n:,} (at most "
                            f"{MAX_MESSAGE:,} and {MAX_HEADER:,})")
    value, descriptors = _read_safely(_header, bytes(_read(sock, n, deadline)))
    if 4 + n + _blob_bytes(descriptors) != total:
        raise ProtocolError("tensor bytes that do not add up to the message")
    blobs = _read(sock, total - 4 - n, deadline)
    return _read_safely(_build, value, descriptors, blobs)
