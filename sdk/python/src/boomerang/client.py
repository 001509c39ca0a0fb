"""The raw TCP client: dial, Client, Credentials, Session.

Threads, not asyncio: a Client is safe to share between threads, its calls
block the calling thread, and submit() starts a call without waiting, for
pipelining from one thread (or for asyncio, through asyncio.wrap_future).
Each Client runs a reader thread per connection (one per node it routes
to in a cluster), one thread for session work (refreshes and logins
after a refusal), a thread while it reconnects or dials a node, and in a
cluster one that sends routed requests again; all are daemon threads.
Futures settle on the reader thread, so a done-callback must not make
blocking calls on the same client: the reader would wait for itself.
"""

from __future__ import annotations

import itertools
import logging
import queue
import random
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

from google.protobuf.message import Message

from ._api import Api
from ._connection import Connection, resolve
from ._operations import MAY_BE_EMPTY, OPERATIONS
from ._router import Router, copy_outcome, gather_batch
from ._routes import routable
from .errors import (
    BoomerangError,
    ClientClosedError,
    InvalidRequestError,
    ProtocolError,
    error_from_wire,
)
from .frames import encode_frame
from .v1 import boomerang_pb2 as pb

#: Bounds one attempt to open the TCP connection, in seconds.
DEFAULT_DIAL_TIMEOUT = 5.0
#: Shortest and longest wait between reconnection attempts, in seconds;
#: the wait doubles, with jitter.
DEFAULT_RECONNECT_MIN = 0.1
DEFAULT_RECONNECT_MAX = 5.0
#: Requests sent and not yet answered; further calls wait for a slot.
DEFAULT_MAX_IN_FLIGHT = 8192
#: The largest response frame read, in bytes.
DEFAULT_MAX_RESPONSE_BYTES = 64 << 20
#: Bounds dial: connecting, logging in and reading the server's limits.
DEFAULT_START_TIMEOUT = 30.0

# A login after a refusal, or a refresh, gives up after this many seconds.
_SESSION_WORK_TIMEOUT = 30.0
# The session is refreshed when this share of its life has passed, as the
# Go and TypeScript SDKs do.
_REFRESH_SHARE = 2 / 3


class Credentials(NamedTuple):
    """A registered client's id and password. With them a client logs in
    when it starts and again whenever its session expires or the server
    forgets it (after a restart)."""

    client_id: str
    password: str


@dataclass(frozen=True)
class Session:
    """A login session on the server."""

    id: str
    expires_at: datetime
    admin: bool


class _Call:
    """One call of an operation, across a resend after a session refusal."""

    __slots__ = ("op", "request", "future", "deadline", "retry", "request_id", "session_id", "inner", "target", "parts")

    def __init__(
        self, op: str, request: Message, deadline: float | None, retry: bool, target: str | None = None
    ) -> None:
        self.op = op
        self.request = request
        self.future: Future[Message] = Future()
        self.deadline = deadline  # time.monotonic() bound of the wait for a slot
        self.retry = retry  # whether a session refusal gets one resend
        self.request_id = 0
        self.session_id = ""
        self.inner: Future[pb.Response] | None = None  # the wire response of the latest send
        self.target = target  # the node a part of a batch split by leader goes to
        self.parts: list[_Call] = []  # the parts of a batch split by leader


def dial(
    address: str,
    credentials: Credentials | tuple[str, str] | None = None,
    *,
    session: Session | None = None,
    timeout: float = DEFAULT_START_TIMEOUT,
    **options: Any,
) -> Client:
    """Connects to the server at address ("host:port") over raw TCP. With
    credentials it logs in; with a session it adopts it instead. Either way
    it then asks for the server's limits, which also proves the session
    works. Without either it only connects: call login. options are
    Client's keyword arguments. Close the client when done, or use it as a
    context manager."""
    client = Client(address, credentials, session=session, **options)
    try:
        client.start(timeout)
    except BaseException:
        client.close()
        raise
    return client


class Client(Api):
    """A connection to a Boomerang server over raw TCP, made by dial.

    Calls share its one connection (in a cluster, one per node it routes
    requests to: each goes to its shard's leader; see README.md) and are
    pipelined on it: each request carries its own id, the server answers
    in any order, and requests made while another thread writes leave
    together in one write.

    The client refreshes its session before it expires and logs in again
    when the server refuses it. When the connection breaks, the requests in
    flight fail with ConnectionLostError (they may or may not have taken
    effect: use idempotency keys to retry safely), and the client
    reconnects in the background with exponential backoff; calls made
    meanwhile wait for the new connection, within their timeout.
    """

    def __init__(
        self,
        address: str,
        credentials: Credentials | tuple[str, str] | None = None,
        *,
        session: Session | None = None,
        dial_timeout: float = DEFAULT_DIAL_TIMEOUT,
        reconnect_min: float = DEFAULT_RECONNECT_MIN,
        reconnect_max: float = DEFAULT_RECONNECT_MAX,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        routing: bool = True,
        logger: logging.Logger | None = None,
    ) -> None:
        """Use dial, which also connects. routing=False sends every request
        to the node dialed instead of its shard's leader in a cluster."""
        self.address = address
        _split_address(address)  # a bad address fails here, not at the first dial
        self._credentials = Credentials(*credentials) if credentials is not None else None
        self._dial_timeout = dial_timeout
        self._reconnect_min = reconnect_min
        self._reconnect_max = max(reconnect_max, reconnect_min)
        self._max_response_bytes = max_response_bytes
        self._log = logger or logging.getLogger("boomerang")
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self._ids = itertools.count(1)
        self._max_frame = 0

        self._lock = threading.Lock()
        self._current: Connection | None = None
        # Requests made while there is no connection, sent on the next one.
        self._backlog: dict[int, tuple[bytes, Future[pb.Response]]] = {}
        self._dial_error: BaseException | None = None
        self._closed = False
        self._closing = threading.Event()
        self._session: Session | None = None
        self._refresh_at: float | None = None  # Unix seconds
        # Sends requests to their shards' leaders in a cluster; None when off.
        self._router = Router(self) if routing else None

        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        threading.Thread(target=self._work, name="boomerang-session", daemon=True).start()
        if session is not None:
            self._set_session(session)

    # ---- Lifecycle ----

    def start(self, timeout: float = DEFAULT_START_TIMEOUT) -> None:
        """Connects, logs in or adopts the session, and reads the server's
        limits; dial calls it."""
        deadline = time.monotonic() + timeout
        self._install(self._dial(min(self._dial_timeout, timeout)))
        if self._session is None and self._credentials is None:
            return
        if self._session is None:
            assert self._credentials is not None
            self.login(
                client_id=self._credentials.client_id,
                password=self._credentials.password,
                timeout=_left(deadline),
            )
        info = self.get_server_info(timeout=_left(deadline))
        self._max_frame = info.max_frame_bytes

    def _frame_limit(self) -> int:
        return self._max_frame

    def close(self) -> None:
        """Closes the connection. Calls in flight fail with
        ConnectionLostError (caused by ClientClosedError); later calls fail
        with ClientClosedError. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conn, self._current = self._current, None
            waiting = [future for _, future in self._backlog.values()]
            self._backlog.clear()
        self._closing.set()
        self._jobs.put(None)
        for future in waiting:
            resolve(future, error=ClientClosedError())
        if conn is not None:
            conn.fail(ClientClosedError())
        if self._router is not None:
            self._router.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def session(self) -> Session | None:
        """The session in use; None before the first login."""
        return self._session

    # ---- Calls ----

    def call(self, op: str, request: Message | None = None, *, timeout: float | None = None) -> Message:
        """Runs the operation named op (as in the envelope: "register_task",
        ...) and returns its response message, or raises: a BoomerangError
        for a refused request, ConnectionLostError, ClientClosedError, or
        TimeoutError after timeout seconds (the request may still take
        effect). The methods named after each operation call this."""
        call = self._begin(op, request, timeout)
        return self._wait(call, timeout)

    def submit(self, op: str, request: Message | None = None) -> Future[Message]:
        """Starts the operation named op and returns at once with a future
        of its response, for pipelining many requests from one thread:

            futures = [client.submit("get_task", GetTaskRequest(id=i)) for i in ids]
            tasks = [f.result().task for f in futures]

        asyncio code awaits asyncio.wrap_future(client.submit(...)). It
        blocks only while max_in_flight requests are unanswered. Cancelling
        the future does not recall the request."""
        return self._begin(op, request, None).future

    def _begin(self, op: str, request: Message | None, timeout: float | None) -> _Call:
        if op not in OPERATIONS:
            raise ValueError(f"unknown operation {op!r}")
        req_type = OPERATIONS[op][0]
        if request is None:
            request = req_type()
        elif not isinstance(request, req_type):
            raise TypeError(f"{op} takes a {req_type.DESCRIPTOR.full_name}, not {type(request).__name__}")
        deadline = None if timeout is None else time.monotonic() + timeout
        target = None
        if op == "register_tasks" and self._router is not None:
            assert isinstance(request, pb.RegisterTasksRequest)
            parts = self._router.split_batch(request)
            if parts is not None and len(parts) > 1:
                return self._begin_batch(request, parts, deadline)
            target = parts[0][0] if parts else None
        call = _Call(op, request, deadline, retry=op != "login", target=target)
        self._start(call)
        return call

    def _begin_batch(
        self, batch: pb.RegisterTasksRequest, parts: list[tuple[str, list[int]]], deadline: float | None
    ) -> _Call:
        """Sends a batch as one register_tasks request per leader, all at
        once, each keeping the batch's order (a group's tasks share a
        shard); the results come back in the batch's order."""
        whole = _Call("register_tasks", batch, deadline, retry=False)
        for address, indexes in parts:
            part = pb.RegisterTasksRequest(client=batch.client, tasks=[batch.tasks[i] for i in indexes])
            whole.parts.append(_Call("register_tasks", part, deadline, retry=True, target=address))
        for part_call in whole.parts:
            self._start(part_call)
        merged = gather_batch(len(batch.tasks), [(i, p.future) for (_, i), p in zip(parts, whole.parts)])
        merged.add_done_callback(lambda f: copy_outcome(f, whole.future))
        return whole

    def _start(self, call: _Call) -> None:
        """Sends call's request with the current session; call.future
        settles with the outcome."""
        session = self._session
        call.session_id = "" if call.op == "login" or session is None else session.id
        call.request_id = next(self._ids)
        envelope = pb.Request(request_id=call.request_id, session_id=call.session_id)
        getattr(envelope, call.op).CopyFrom(call.request)
        # Counted in the frame's size, though the last attempt goes without.
        envelope.route = self._router is not None and call.target is None and routable(call.op)
        size = envelope.ByteSize()
        if self._max_frame and size > self._max_frame:
            # The server would close the connection, failing every request on it.
            resolve(
                call.future,
                error=InvalidRequestError(
                    pb.STATUS_INVALID_REQUEST,
                    f"the request is {size} bytes; the server takes frames of at most {self._max_frame} bytes",
                    "payload",
                ),
            )
            return
        if not self._slots.acquire(timeout=_left(call.deadline)):
            resolve(call.future, error=TimeoutError(f"boomerang: {call.op}: no free request slot in time"))
            return
        inner: Future[pb.Response] = Future()
        call.inner = inner
        inner.add_done_callback(lambda _: self._slots.release())
        inner.add_done_callback(lambda f: self._finish(call, f))
        if self._router is None:
            self._dispatch(call.request_id, encode_frame(envelope), inner)
        else:
            self._router.send(envelope, inner, call.target)

    def _finish(self, call: _Call, inner: Future[pb.Response]) -> None:
        """Settles call with its response. Runs on whichever thread settled
        inner (usually the reader), so it never blocks."""
        failed = inner.exception()
        if failed is not None:
            resolve(call.future, error=failed)
            return
        response = inner.result()
        if response.HasField("error"):
            err = error_from_wire(response.error)
            if call.retry and _session_refused(err) and not call.future.done():
                call.retry = False
                self._jobs.put(lambda: self._renew_and_resend(call, err))
                return
            resolve(call.future, error=err)
            return
        body = response.WhichOneof("body")
        if body == call.op:
            result: Message = getattr(response, call.op)
        elif body is None and call.op in MAY_BE_EMPTY:
            result = OPERATIONS[call.op][1]()
        else:
            resolve(
                call.future, error=ProtocolError(f"the response to request {call.request_id} has no {call.op} body")
            )
            return
        if call.op in ("login", "refresh_session"):
            self._adopt(call.op, result)
        resolve(call.future, result)

    def _wait(self, call: _Call, timeout: float | None) -> Any:
        try:
            return call.future.result(timeout)
        except TimeoutError:
            if call.future.done():
                raise  # the call itself failed with a timeout
            self._abandon(call)
            with self._lock:
                reason = f" (not connected: {self._dial_error})" if self._dial_error is not None else ""
            raise TimeoutError(f"boomerang: {call.op} timed out after {timeout:g} s{reason}") from None

    def _abandon(self, call: _Call) -> None:
        """Gives up on a call: a late response is dropped."""
        resolve(call.future, error=TimeoutError(f"boomerang: {call.op} abandoned"))
        for part in call.parts:
            self._abandon(part)
        with self._lock:
            self._backlog.pop(call.request_id, None)
            conn = self._current
        if conn is not None:
            conn.abandon(call.request_id)
        if call.inner is not None:
            # Frees the slot; a routed request goes no further.
            resolve(call.inner, error=TimeoutError(f"boomerang: {call.op} abandoned"))

    # ---- Connections ----

    def _dial(self, timeout: float, address: str | None = None) -> socket.socket:
        """Connects to the node at address, by default the one the client
        dials."""
        address = address or self.address
        try:
            sock = socket.create_connection(_split_address(address), timeout=timeout)
        except (OSError, ValueError) as err:
            raise ConnectionError(f"cannot connect to {address}: {err}") from err
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _install(self, sock: socket.socket) -> None:
        conn = Connection(sock, self._max_response_bytes, self._detach)
        with self._lock:
            closed = self._closed
            if not closed:
                self._current = conn
                self._dial_error = None
                waiting = list(self._backlog.items())
                self._backlog.clear()
        if closed:
            conn.fail(ClientClosedError())
            return
        for request_id, (frame, future) in waiting:
            self._dispatch(request_id, frame, future)

    def _next_id(self) -> int:
        return next(self._ids)

    def _dispatch(self, request_id: int, frame: bytes, future: Future[pb.Response]) -> None:
        """Sends a frame on the current connection, or keeps it for the next."""
        while True:
            with self._lock:
                closed, conn = self._closed, self._current
                if not closed and conn is None:
                    self._backlog[request_id] = (frame, future)
                    return
            if closed:
                resolve(future, error=ClientClosedError())
                return
            assert conn is not None
            if conn.send(request_id, frame, future):
                return
            self._detach(conn, ConnectionError("the connection failed"), 0)

    def _detach(self, conn: Connection, cause: BaseException, failed_requests: int) -> None:
        """A connection failed: unless closing, reconnect in the background."""
        with self._lock:
            if self._closed or self._current is not conn:
                return
            self._current = None
        if failed_requests:
            self._log.warning(
                "boomerang: connection to %s lost (%s); %d requests failed; reconnecting",
                self.address,
                cause,
                failed_requests,
            )
        else:
            self._log.info("boomerang: connection to %s closed (%s); reconnecting", self.address, cause)
        threading.Thread(target=self._reconnect, name="boomerang-reconnect", daemon=True).start()

    def _reconnect(self) -> None:
        """Dials with exponential backoff and jitter until it works or the
        client closes."""
        wait = self._reconnect_min
        for attempt in itertools.count(1):
            if self._closing.wait(wait / 2 + random.random() * wait / 2):
                return
            try:
                sock = self._dial(self._dial_timeout)
            except OSError as err:
                with self._lock:
                    self._dial_error = err
                wait = min(2 * wait, self._reconnect_max)
                continue
            self._log.info("boomerang: reconnected to %s after %d attempts", self.address, attempt)
            self._install(sock)
            return

    # ---- Sessions ----

    def _adopt(self, op: str, response: Any) -> None:
        session = self._session
        admin = response.admin if op == "login" else session is not None and session.admin
        expires = datetime.fromtimestamp(response.expires_at_ms / 1000, timezone.utc)
        self._set_session(Session(response.session_id, expires, admin))

    def _set_session(self, session: Session) -> None:
        now = time.time()
        expires = session.expires_at.timestamp()
        with self._lock:
            self._session = session
            self._refresh_at = None if not session.id or expires <= 0 else now + (expires - now) * _REFRESH_SHARE
        self._jobs.put(_wake)

    def _work(self) -> None:
        """The session thread: runs queued session work, and refreshes the
        session when due."""
        while True:
            with self._lock:
                at = self._refresh_at
            try:
                job = self._jobs.get(timeout=None if at is None else max(0.0, at - time.time()))
            except queue.Empty:
                self._refresh()
                continue
            if job is None:
                return
            job()

    def _renew_and_resend(self, call: _Call, refusal: BoomerangError) -> None:
        """Sends a request refused for its session once more: with the
        current session if another call replaced it meanwhile, else after
        logging in again when the client has credentials."""
        if call.future.done():
            return
        if self._renew(call.session_id):
            self._start(call)
        else:
            resolve(call.future, error=refusal)

    def _renew(self, stale: str) -> bool:
        session = self._session
        if session is not None and session.id != stale:
            return True
        if self._credentials is None:
            return False
        try:
            self._login_now()
        except Exception as err:
            self._log.warning("boomerang: logging in again as %s failed: %s", self._credentials.client_id, err)
            return False
        return True

    def _login_now(self) -> None:
        assert self._credentials is not None
        request = pb.LoginRequest(client_id=self._credentials.client_id, password=self._credentials.password)
        self._call_once("login", request)

    def _call_once(self, op: str, request: Message) -> Any:
        """A call for the session thread: no resend, bounded in time."""
        call = _Call(op, request, time.monotonic() + _SESSION_WORK_TIMEOUT, retry=False)
        self._start(call)
        return self._wait(call, _SESSION_WORK_TIMEOUT)

    def _refresh(self) -> None:
        """Replaces the session with a refreshed one, or with a new login
        when the server no longer knows it; on failure, tries again later."""
        with self._lock:
            at, session = self._refresh_at, self._session
            if self._closed or at is None or at > time.time() or session is None:
                return  # woke early, or nothing to refresh
        try:
            try:
                self._call_once("refresh_session", pb.RefreshSessionRequest())
            except BoomerangError as err:
                if not _session_refused(err) or self._credentials is None:
                    raise
                self._login_now()
        except BoomerangError as err:
            if _session_refused(err):
                self._log.warning("boomerang: session refresh refused; waiting for a new login: %s", err)
                with self._lock:
                    self._refresh_at = None
                return
            self._retry_refresh(session, err)
        except Exception as err:
            self._retry_refresh(session, err)

    def _retry_refresh(self, session: Session, err: BaseException) -> None:
        if self._closed:
            return
        left = session.expires_at.timestamp() - time.time()
        retry = min(max(left / 10, 0.1), 30.0)
        self._log.warning("boomerang: session refresh failed; retrying in %.1f s: %s", retry, err)
        with self._lock:
            if self._session is session:
                self._refresh_at = time.time() + retry


def _wake() -> None:
    """A job that only makes the session thread look at the clock again."""


def _session_refused(err: BoomerangError) -> bool:
    return err.status in (pb.STATUS_SESSION_EXPIRED, pb.STATUS_UNAUTHORIZED)


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _split_address(address: str) -> tuple[str, int]:
    """Splits "host:port" or "[v6]:port"."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bad address {address!r}: want host:port")
    return host.removeprefix("[").removesuffix("]"), int(port)
