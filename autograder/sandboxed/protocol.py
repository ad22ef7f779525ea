"""The wire format between the grader and its worker: JSON plus raw tensor bytes, never pickle.

A message is ``[u32 header length][header JSON][tensor bytes...]``. Tensors become
``{"__tensor__": i, "dtype": ..., "shape": [...], "device": ...}`` in the header and their bytes
follow in order. Loading a message can build only dicts, lists, strings, numbers, None and
tensors of whitelisted dtypes: nothing in it can execute code.
"""

from __future__ import annotations

import json
import struct

import torch

MAX_MESSAGE = 256 << 20  # bytes; a bigger message is a protocol error, not an allocation
MAX_STRING = 4000  # characters kept of a message from learner code (an exception's)

DTYPES: dict[str, torch.dtype] = {
    str(dt).removeprefix("torch."): dt
    for dt in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
        torch.complex128, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
        torch.bool,
    )
}


class ProtocolError(Exception):
    """A message that is malformed, too large, or cut off."""


def type_name(obj: object) -> str:
    """The name of ``obj``'s type, without running any code ``obj`` defines."""
    try:
        name = type.__getattribute__(type(obj), "__qualname__")
        return name[:200] if type(name) is str else "?"
    except Exception:  # noqa: BLE001 - a metaclass can make even this raise
        return "?"


def _encode(obj: object, blobs: list[bytes], depth: int = 0) -> object:
    if depth > 20:
        raise ProtocolError("value nested too deeply")
    kind = type(obj)
    if obj is None or kind in (bool, int, float, str):
        return obj
    if kind in (list, tuple):
        return [_encode(x, blobs, depth + 1) for x in obj]
    if kind is dict:
        return {str(k)[:200]: _encode(v, blobs, depth + 1) for k, v in obj.items()}
    if kind in (torch.Tensor, torch.nn.Parameter):
        return _encode_tensor(obj, blobs)
    # Anything else (a learner's own class, a numpy array, a tensor subclass) is described,
    # never sent: its methods could lie.
    return {"__object__": type_name(obj)}


def _encode_tensor(t: torch.Tensor, blobs: list[bytes]) -> dict:
    t = torch.Tensor.detach(t)
    dtype = str(t.dtype).removeprefix("torch.")
    head = {"dtype": dtype, "shape": list(t.shape), "device": str(t.device)}
    if dtype not in DTYPES or t.layout != torch.strided:
        return {"__object__": f"Tensor(dtype={dtype}, layout={t.layout})"}
    if t.device.type == "meta":
        return {"__tensor__": None, **head}
    flat = t.resolve_conj().resolve_neg().cpu().contiguous().reshape(-1)
    blobs.append(flat.view(torch.uint8).numpy().tobytes())
    return {"__tensor__": len(blobs) - 1, **head}


def encode(obj: object) -> bytes:
    """``obj`` as one message."""
    blobs: list[bytes] = []
    header = _encode(obj, blobs)
    body = json.dumps({"value": header, "sizes": [len(b) for b in blobs]}).encode()
    data = b"".join([struct.pack(">I", len(body)), body, *blobs])
    if len(data) > MAX_MESSAGE:
        raise ProtocolError(f"message of {len(data):,} bytes exceeds {MAX_MESSAGE:,}")
    return data


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


def _decode(obj: object, blobs: list[memoryview]) -> object:
    if isinstance(obj, list):
        return [_decode(x, blobs) for x in obj]
    if not isinstance(obj, dict):
        return obj
    if "__object__" in obj:
        return RemoteObject(str(obj["__object__"]))
    if "__tensor__" not in obj:
        return {k: _decode(v, blobs) for k, v in obj.items()}
    dtype = DTYPES.get(obj["dtype"])
    shape = [int(s) for s in obj["shape"]]
    if dtype is None or any(s < 0 for s in shape):
        raise ProtocolError(f"bad tensor header {obj!r}")
    if obj["__tensor__"] is None:
        return MetaTensor(dtype, shape)
    raw = blobs[int(obj["__tensor__"])]
    numel = 1
    for s in shape:
        numel *= s
    itemsize = torch.empty((), dtype=dtype).element_size()
    if len(raw) != numel * itemsize:
        raise ProtocolError("tensor bytes do not match its shape")
    if numel == 0:
        t = torch.empty(shape, dtype=dtype)
    else:
        t = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)
    t.remote_device = obj["device"]  # where it lived in the worker
    return t


def decode(data: bytes) -> object:
    """The value in one message (the inverse of ``encode``)."""
    try:
        (n,) = struct.unpack(">I", data[:4])
        header = json.loads(data[4 : 4 + n])
        blobs, offset = [], 4 + n
        view = memoryview(data)
        for size in header["sizes"]:
            blobs.append(view[offset : offset + int(size)])
            offset += int(size)
        if offset != len(data):
            raise ProtocolError("trailing bytes after the last tensor")
        return _decode(header["value"], blobs)
    except ProtocolError:
        raise
    except Exception as error:
        raise ProtocolError(f"malformed message: {error}") from error


def send(sock, obj: object) -> None:
    """Send ``obj`` as one length-prefixed message on a connected socket."""
    data = encode(obj)
    sock.sendall(struct.pack(">Q", len(data)) + data)


def _recv_exact(sock, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("the other end closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(sock) -> object:
    """Receive one message; EOFError if the peer has gone."""
    (n,) = struct.unpack(">Q", _recv_exact(sock, 8))
    if n > MAX_MESSAGE:
        raise ProtocolError(f"message of {n:,} bytes exceeds {MAX_MESSAGE:,}")
    return decode(_recv_exact(sock, n))
