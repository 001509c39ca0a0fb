"""Raw TCP framing: each frame is a message's length as a base-128 varint,
then the message (the size-delimited format of protobuf's other runtimes;
the Python runtime has no helper for it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, Literal, TypeVar

from google.protobuf.message import DecodeError, Message

M = TypeVar("M", bound=Message)

FrameErrorKind = Literal["truncated", "too_large", "bad_length", "undecodable"]

# A varint of more than ten bytes, or one whose tenth byte sets bits past
# the 64th, is not a 64-bit length.
_MAX_VARINT_BYTES = 10


class FrameError(Exception):
    """A byte stream that is not valid frames; the connection it came from
    is unusable. kind says why: "truncated", "too_large", "bad_length" or
    "undecodable"."""

    def __init__(self, kind: FrameErrorKind, message: str) -> None:
        super().__init__(f"broken frame: {message}")
        self.kind: FrameErrorKind = kind


def encode_varint(n: int) -> bytes:
    """The base-128 varint of a non-negative integer below 2**64."""
    if n < 0 or n >= 1 << 64:
        raise ValueError(f"varint out of range: {n}")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_frame(message: Message) -> bytes:
    """The message, serialized, behind its length."""
    data = message.SerializeToString()
    return encode_varint(len(data)) + data


def _peek_length(buf: bytes | bytearray) -> tuple[int, int] | None:
    """The length a frame's prefix gives and the prefix's size, or None if
    the prefix is not complete yet."""
    n = 0
    for i in range(min(len(buf), _MAX_VARINT_BYTES)):
        b = buf[i]
        n |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if n >= 1 << 64:
                raise FrameError("bad_length", "length prefix over 64 bits")
            return n, i + 1
    if len(buf) >= _MAX_VARINT_BYTES:
        raise FrameError("bad_length", "length prefix longer than ten bytes")
    return None


class FrameDecoder(Generic[M]):
    """Turns the chunks a socket delivers into messages of one type. Frames
    may span chunks and chunks may hold many frames. max_bytes bounds one
    frame's message; a longer length is refused before its bytes arrive."""

    def __init__(self, message_type: type[M], max_bytes: int) -> None:
        self._type = message_type
        self._max = max_bytes
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> Iterator[M]:
        """Adds a chunk and returns an iterator over the messages it
        completes, in order; iterate it before the next feed. The iterator
        raises FrameError when the stream breaks, after yielding the
        messages before the broken frame."""
        self._buf += chunk
        return self._messages()

    def _messages(self) -> Iterator[M]:
        offset = 0
        try:
            while True:
                head = _peek_length(self._buf[offset : offset + _MAX_VARINT_BYTES])
                if head is None:
                    return
                size, prefix = head
                if size > self._max:
                    raise FrameError("too_large", f"frame of {size} bytes exceeds the limit of {self._max}")
                start = offset + prefix
                if len(self._buf) < start + size:
                    return
                message = self._type()
                try:
                    message.ParseFromString(bytes(self._buf[start : start + size]))
                except DecodeError as err:
                    raise FrameError("undecodable", f"message does not decode: {err}") from err
                offset = start + size
                yield message
        finally:
            del self._buf[:offset]

    def end(self) -> None:
        """Raises FrameError if the stream ended inside a frame."""
        if self._buf:
            raise FrameError("truncated", "stream ended inside a frame")
