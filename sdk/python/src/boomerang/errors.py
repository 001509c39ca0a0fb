"""The errors the client raises: one class per server status, as the Go
SDK has one sentinel per status, and the client's own."""

from __future__ import annotations

from .v1 import boomerang_pb2 as pb


class BoomerangError(Exception):
    """A request the server refused, or a connection it closed, with the
    status, message and offending field it gave. Each status has its own
    subclass (NotFoundError, BusyError, ...), so `except NotFoundError`
    picks one out; status_of(err) reads the status of any error."""

    def __init__(self, status: int, server_message: str, field: str = "") -> None:
        super().__init__(_describe(status, server_message, field))
        #: The server's status code, a boomerang.v1.Status value.
        self.status = status
        #: The server's message, for humans.
        self.server_message = server_message
        #: INVALID_REQUEST: the field that broke a rule, e.g. "delay_ms".
        self.field = field


class InvalidRequestError(BoomerangError):
    """A field breaks a rule; field names it."""


class UnauthorizedError(BoomerangError):
    """No session, an unknown session, a wrong password, or an operation
    the client may not perform."""


class SessionExpiredError(BoomerangError):
    """The session expired; log in again. A client with credentials does so
    by itself and retries once."""


class NotFoundError(BoomerangError):
    """No such task, dead letter, group or client for this caller. Other
    clients' objects are not found either."""


class BusyError(BoomerangError):
    """The server is overloaded; retry later."""


class GroupFullError(BoomerangError):
    """The group has too many waiting tasks; retry later."""


class ConflictError(BoomerangError):
    """The request clashes with the current state, such as a task whose
    delivery is under way."""


class InternalError(BoomerangError):
    """A server fault; the request may or may not have taken effect."""


class UnknownStatusError(BoomerangError):
    """The server answered with a status this SDK does not know."""


_BY_STATUS: dict[int, tuple[type[BoomerangError], str]] = {
    pb.STATUS_INVALID_REQUEST: (InvalidRequestError, "invalid request"),
    pb.STATUS_UNAUTHORIZED: (UnauthorizedError, "unauthorized"),
    pb.STATUS_SESSION_EXPIRED: (SessionExpiredError, "session expired"),
    pb.STATUS_NOT_FOUND: (NotFoundError, "not found"),
    pb.STATUS_BUSY: (BusyError, "server busy"),
    pb.STATUS_GROUP_FULL: (GroupFullError, "group full"),
    pb.STATUS_CONFLICT: (ConflictError, "conflict"),
    pb.STATUS_INTERNAL: (InternalError, "internal server error"),
}


def _describe(status: int, message: str, field: str) -> str:
    """Reads like "not found: task 42: not found"."""
    label = _BY_STATUS[status][1] if status in _BY_STATUS else f"unknown status {status}"
    if field and field not in message:
        label += f": field {field}"
    return f"{label}: {message}" if message else label


def error_from_wire(e: pb.Error) -> BoomerangError:
    """The BoomerangError subclass for a wire Error."""
    cls = _BY_STATUS[e.status][0] if e.status in _BY_STATUS else UnknownStatusError
    return cls(e.status, e.message, e.field)


class ConnectionLostError(Exception):
    """The connection broke while the request was in flight. The request
    may or may not have taken effect; retry it with an idempotency key to
    be safe. __cause__ is a BoomerangError when the server closed the
    connection with an error frame."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"connection lost; the request may or may not have taken effect: {cause}")
        self.__cause__ = cause


class ClientClosedError(Exception):
    """The client was closed."""

    def __init__(self) -> None:
        super().__init__("client closed")


class ProtocolError(Exception):
    """The server sent something the protocol does not allow, such as a
    response without a body."""

    def __init__(self, message: str) -> None:
        super().__init__(f"protocol violation: {message}")


def status_of(err: BaseException | None) -> int:
    """The status of a failed request: the status of a BoomerangError
    (also as the cause of a ConnectionLostError), STATUS_OK for None, and
    STATUS_UNSPECIFIED for errors that did not come from the server."""
    if err is None:
        return pb.STATUS_OK
    if isinstance(err, BoomerangError):
        return err.status
    if isinstance(err, ConnectionLostError) and isinstance(err.__cause__, BoomerangError):
        return err.__cause__.status
    return pb.STATUS_UNSPECIFIED
