"""The wire format of HTTP callbacks (docs/callbacks.md): the headers that
describe a delivery and the HMAC-SHA256 signature that proves it came
from Boomerang."""

from __future__ import annotations

import hashlib
import hmac
import re
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, Union, cast

from .v1 import boomerang_pb2 as pb

# Header names of an HTTP delivery; HTTP header names are case-insensitive.
HEADER_DELIVERY_ID = "Boomerang-Delivery-Id"
HEADER_TASK_ID = "Boomerang-Task-Id"
HEADER_ATTEMPT = "Boomerang-Attempt"
HEADER_FIRE_AT = "Boomerang-Fire-At"
HEADER_CLIENT = "Boomerang-Client"
HEADER_GROUP = "Boomerang-Group"
HEADER_TIMESTAMP = "Boomerang-Timestamp"
HEADER_SIGNATURE = "Boomerang-Signature"

#: Prefixes a v1 signature in Boomerang-Signature.
SCHEME_V1 = "v1="

#: How far a delivery's timestamp may be from the receiver's clock, either way, in seconds.
DEFAULT_TOLERANCE = 300.0

# The signed header values, in the order they are signed.
_SIGNED = (HEADER_TIMESTAMP, HEADER_TASK_ID, HEADER_ATTEMPT, HEADER_FIRE_AT, HEADER_CLIENT, HEADER_GROUP)


class WebhookError(Exception):
    """A delivery that fails verification; a receiver answers 401 (400 for
    BadHeaderError)."""


class NoSignatureError(WebhookError):
    """The delivery carries no v1 signature."""


class BadSignatureError(WebhookError):
    """No v1 signature matches the secret: the delivery was not sent by
    Boomerang with this client's secret, or was altered."""


class StaleSignatureError(WebhookError):
    """The timestamp is too far from the receiver's clock: a replay, or
    clocks out of step."""


class BadHeaderError(WebhookError):
    """A Boomerang header is missing or malformed."""


class _MultiHeaders(Protocol):
    def get_all(self, name: str) -> list[str] | None:
        ...


#: Request headers in any of the usual shapes: a mapping with names in any
#: case and str (or list of str) values, an email.message.Message such as
#: http.server's headers, or (name, value) pairs of str or bytes, as ASGI
#: gives them.
HeaderSource = Union[
    Mapping[str, Union[str, list[str]]],
    _MultiHeaders,
    Iterable[tuple[Union[str, bytes], Union[str, bytes]]],
]


@dataclass(frozen=True)
class WebhookMeta:
    """What the headers of a delivery say."""

    delivery_id: int
    task_id: int
    attempt: int
    fire_at_ms: int
    client: str
    group: str
    #: When the attempt was sent, Unix seconds.
    timestamp: int


def verify_webhook(
    secret: bytes | str,
    headers: HeaderSource,
    body: bytes,
    *,
    now: float | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> pb.Delivery:
    """Checks an HTTP delivery: its Boomerang headers, its signature over
    the headers and body with the client's signing secret (compared in
    constant time), and its timestamp against now (Unix seconds, default
    the clock), within tolerance seconds either way. Returns the delivery
    the headers and body describe, or raises BadHeaderError,
    NoSignatureError, BadSignatureError or StaleSignatureError."""
    meta = parse_webhook_headers(headers)
    entries = [e.strip() for e in ",".join(_values(headers, HEADER_SIGNATURE)).split(",")]
    v1 = [e[len(SCHEME_V1) :] for e in entries if e.startswith(SCHEME_V1)]
    if not v1:
        raise NoSignatureError(f"no {SCHEME_V1} signature")
    want = _sign(secret, [_first(headers, n) for n in _SIGNED], body).encode()
    ok = False
    for sig in v1:
        # Every entry is compared, so the time taken does not tell which matched.
        if hmac.compare_digest(sig.lower().encode("ascii", "replace"), want):
            ok = True
    if not ok:
        raise BadSignatureError("signature does not match")
    # Checked after the signature, so a stale verdict is about a genuine
    # delivery, not a forged one.
    clock = time.time() if now is None else now
    limit = tolerance if tolerance > 0 else DEFAULT_TOLERANCE
    if abs(clock - meta.timestamp) > limit:
        raise StaleSignatureError(
            f"timestamp outside tolerance: sent {meta.timestamp}, now {clock:.0f}, tolerance {limit:g} s"
        )
    return pb.Delivery(
        delivery_id=meta.delivery_id,
        task_id=meta.task_id,
        attempt=meta.attempt,
        client=meta.client,
        group=meta.group,
        fire_at_ms=meta.fire_at_ms,
        payload=body,
        sent_ms=meta.timestamp * 1000,
    )


def sign_webhook(secret: bytes | str, meta: WebhookMeta, body: bytes) -> dict[str, str]:
    """The headers Boomerang sends with a delivery described by meta,
    signed with secret over meta and body: for tests of a receiver, and for
    relaying deliveries."""
    h = {
        HEADER_DELIVERY_ID: str(meta.delivery_id),
        HEADER_TASK_ID: str(meta.task_id),
        HEADER_ATTEMPT: str(meta.attempt),
        HEADER_FIRE_AT: str(meta.fire_at_ms),
        HEADER_CLIENT: escape_name(meta.client),
        HEADER_GROUP: escape_name(meta.group),
        HEADER_TIMESTAMP: str(meta.timestamp),
    }
    h[HEADER_SIGNATURE] = SCHEME_V1 + _sign(secret, [h[n] for n in _SIGNED], body)
    return h


def signed_bytes(fields: Iterable[str], body: bytes) -> bytes:
    """The bytes that are signed: the six header values as received, each
    followed by a line feed, then the body."""
    return "".join(f + "\n" for f in fields).encode("latin-1", "replace") + body


def _sign(secret: bytes | str, fields: Iterable[str], body: bytes) -> str:
    key = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(key, signed_bytes(fields, body), hashlib.sha256).hexdigest()


def parse_webhook_headers(headers: HeaderSource) -> WebhookMeta:
    """Reads the delivery headers without checking the signature; raises
    BadHeaderError."""
    return WebhookMeta(
        delivery_id=_integer(headers, HEADER_DELIVERY_ID, signed=False, bits=64),
        task_id=_integer(headers, HEADER_TASK_ID, signed=False, bits=64),
        attempt=_integer(headers, HEADER_ATTEMPT, signed=False, bits=32),
        fire_at_ms=_integer(headers, HEADER_FIRE_AT, signed=True, bits=64),
        timestamp=_integer(headers, HEADER_TIMESTAMP, signed=True, bits=64),
        client=_unescape_header(headers, HEADER_CLIENT),
        group=_unescape_header(headers, HEADER_GROUP),
    )


_UNSIGNED = re.compile(r"[0-9]+")
_SIGNED_INT = re.compile(r"[+-]?[0-9]+")


def _integer(headers: HeaderSource, name: str, *, signed: bool, bits: int) -> int:
    """A decimal integer as Go's strconv reads it: unsigned ones unsigned,
    signed ones with an optional sign, within bits."""
    v = _first(headers, name)
    if not (_SIGNED_INT if signed else _UNSIGNED).fullmatch(v):
        raise BadHeaderError(f"bad header: {name} {v!r}")
    n = int(v)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not lo <= n <= hi:
        raise BadHeaderError(f"bad header: {name} {v!r}")
    return n


def _unescape_header(headers: HeaderSource, name: str) -> str:
    try:
        return unescape_name(_first(headers, name))
    except ValueError as err:
        raise BadHeaderError(f"bad header: {name}: {err}") from err


def escape_name(name: str) -> str:
    """Percent-encodes every byte of the UTF-8 encoding of name outside
    A-Z a-z 0-9 - . _ ~, as Boomerang does for client and group names in
    headers."""
    return urllib.parse.quote(name, safe="")


_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def unescape_name(value: str) -> str:
    """Decodes %XX sequences (either case); other characters are kept.
    Raises ValueError on a bad escape."""
    bad = _BAD_ESCAPE.search(value)
    if bad is not None:
        raise ValueError(f"bad escape {value[bad.start() : bad.start() + 3]!r} in {value!r}")
    return urllib.parse.unquote(value, errors="replace")


def _values(headers: HeaderSource, name: str) -> list[str]:
    """Every value of a header, by name in any case."""
    get_all = getattr(headers, "get_all", None)
    if callable(get_all):
        return list(get_all(name) or [])
    lower = name.lower()
    if isinstance(headers, Mapping):
        for key in (name, lower):
            if key in headers:
                return _as_list(headers[key])
        for key, value in headers.items():
            if key.lower() == lower:
                return _as_list(value)
        return []
    pairs = cast(Iterable[tuple[Union[str, bytes], Union[str, bytes]]], headers)
    return [_text(value) for key, value in pairs if _text(key).lower() == lower]


def _text(s: str | bytes) -> str:
    return s.decode("latin-1") if isinstance(s, bytes) else s


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _first(headers: HeaderSource, name: str) -> str:
    v = _values(headers, name)
    return v[0] if v else ""
