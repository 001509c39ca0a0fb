"""The Python SDK for Boomerang, the durable, ordered task scheduler.

- dial / Client: a client over Boomerang's raw TCP protocol, with
  pipelining, session refresh, reconnection with backoff, and every
  operation of the API.
- WebhookReceiver: receives HTTP callbacks, checking their signatures, as a
  WSGI app, an ASGI app, or an http.server handler; verify_webhook checks
  one delivery from any other stack.
- TCPReceiver: receives raw TCP callbacks (Delivery and Ack frames).
- Fence: drops deliveries from shard leaders that were replaced, by their
  term; Fence.wrap puts it in front of any receiver's handler.

The API messages are in boomerang.v1.boomerang_pb2, re-exported here as
`pb`. See README.md.
"""

from ._api import MAX_BATCH, BatchTask, ScheduleResult
from .client import (
    DEFAULT_DIAL_TIMEOUT,
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_RECONNECT_MAX,
    DEFAULT_RECONNECT_MIN,
    DEFAULT_START_TIMEOUT,
    Client,
    Credentials,
    Session,
    dial,
)
from .errors import (
    BoomerangError,
    BusyError,
    ClientClosedError,
    ConflictError,
    ConnectionLostError,
    GroupFullError,
    InternalError,
    InvalidRequestError,
    NotFoundError,
    ProtocolError,
    SessionExpiredError,
    UnauthorizedError,
    UnknownStatusError,
    error_from_wire,
    status_of,
)
from .fence import DEFAULT_FENCE_CAPACITY, Fence, fence_key
from .frames import FrameDecoder, FrameError, encode_frame, encode_varint
from .receiver import DEFAULT_MAX_DELIVERY, Handler, WebhookAnswer, WebhookReceiver
from .tcp_receiver import DEFAULT_RECEIVER_IN_FLIGHT, TCPReceiver
from .v1 import boomerang_pb2 as pb
from .webhook import (
    DEFAULT_TOLERANCE,
    BadHeaderError,
    BadSignatureError,
    NoSignatureError,
    StaleSignatureError,
    WebhookError,
    WebhookMeta,
    escape_name,
    parse_webhook_headers,
    sign_webhook,
    signed_bytes,
    unescape_name,
    verify_webhook,
)

__all__ = [
    "DEFAULT_DIAL_TIMEOUT",
    "DEFAULT_FENCE_CAPACITY",
    "DEFAULT_MAX_DELIVERY",
    "DEFAULT_MAX_IN_FLIGHT",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_RECEIVER_IN_FLIGHT",
    "DEFAULT_RECONNECT_MAX",
    "DEFAULT_RECONNECT_MIN",
    "DEFAULT_START_TIMEOUT",
    "DEFAULT_TOLERANCE",
    "MAX_BATCH",
    "BadHeaderError",
    "BadSignatureError",
    "BatchTask",
    "BoomerangError",
    "BusyError",
    "Client",
    "ClientClosedError",
    "ConflictError",
    "ConnectionLostError",
    "Credentials",
    "Fence",
    "FrameDecoder",
    "FrameError",
    "GroupFullError",
    "Handler",
    "InternalError",
    "InvalidRequestError",
    "NoSignatureError",
    "NotFoundError",
    "ProtocolError",
    "ScheduleResult",
    "Session",
    "SessionExpiredError",
    "StaleSignatureError",
    "TCPReceiver",
    "UnauthorizedError",
    "UnknownStatusError",
    "WebhookAnswer",
    "WebhookError",
    "WebhookMeta",
    "WebhookReceiver",
    "dial",
    "encode_frame",
    "encode_varint",
    "error_from_wire",
    "escape_name",
    "fence_key",
    "parse_webhook_headers",
    "pb",
    "sign_webhook",
    "signed_bytes",
    "status_of",
    "unescape_name",
    "verify_webhook",
]
