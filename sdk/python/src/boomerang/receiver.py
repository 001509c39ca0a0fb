"""HTTP webhook receivers: WebhookReceiver checks each delivery's signature
and hands it to a handler, as a WSGI app, an ASGI app, or a handler class
for http.server."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Union

from .v1 import boomerang_pb2 as pb
from .webhook import DEFAULT_TOLERANCE, BadHeaderError, HeaderSource, WebhookError, verify_webhook

#: Handles one delivery. Returning acknowledges it; raising fails the
#: attempt, and the server retries it according to the task's retry
#: policy. Under ASGI it may be a coroutine function.
#:
#: Deliveries are at least once: the same occurrence of a task can arrive
#: again after a timeout, a lost acknowledgement or a server restart. A
#: handler with effects that must not repeat should deduplicate by
#: (task_id, fire_at_ms), which names one occurrence of a task; attempt and
#: delivery_id change from one attempt to the next. term is the Raft term
#: in which the sender leads the task's shard: Fence.wrap drops deliveries
#: from a leader that was replaced.
Handler = Callable[[pb.Delivery], Union[None, Awaitable[None]]]

_Receive = Callable[[], Awaitable[dict[str, Any]]]
_Send = Callable[[dict[str, Any]], Awaitable[None]]

#: The largest delivery payload a receiver accepts by default, in bytes.
DEFAULT_MAX_DELIVERY = 16 << 20


@dataclass(frozen=True)
class WebhookAnswer:
    """An HTTP answer: status, headers and a plain-text body ("" for none)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""


def _answer(status: int, body: str = "", **headers: str) -> WebhookAnswer:
    h = {"Content-Type": "text/plain; charset=utf-8"} if body else {}
    h.update(headers)
    return WebhookAnswer(status, h, body)


class WebhookReceiver:
    """Receives HTTP webhook deliveries: checks the signature, hands the
    delivery to the handler, and answers 204 when the handler returns, so
    the server counts it delivered.

        405 the method is not POST
        413 the body is larger than max_body
        400 a Boomerang header is missing or malformed
        401 no signature, a signature that does not match, or a stale timestamp
        500 the handler raised (the first line of its message is the body)

    The server retries 500 and dead-letters at once on 400, 401, 405 and
    413, which only a configuration change can fix. Serve it as a WSGI app
    (receiver.wsgi), an ASGI app (receiver.asgi), or with http.server
    (receiver.http_handler); receive() answers a request read by anything
    else.
    """

    def __init__(
        self,
        secret: bytes | str,
        handler: Handler,
        *,
        tolerance: float = DEFAULT_TOLERANCE,
        max_body: int = DEFAULT_MAX_DELIVERY,
        clock: Callable[[], float] = time.time,
        logger: logging.Logger | None = None,
    ) -> None:
        """secret is the client's signing secret, as register_client
        returned it; tolerance (seconds) bounds how far a delivery's
        timestamp may be from clock(), in Unix seconds."""
        if not secret:
            raise ValueError("WebhookReceiver: secret is required")
        if tolerance < 0 or max_body < 0:
            raise ValueError("WebhookReceiver: tolerance and max_body must not be negative")
        self.secret = secret
        self.handler = handler
        self.tolerance = tolerance or DEFAULT_TOLERANCE
        self.max_body = max_body or DEFAULT_MAX_DELIVERY
        self._clock = clock
        self._log = logger or logging.getLogger("boomerang")

    def check(self, method: str, headers: HeaderSource, body: bytes) -> pb.Delivery | WebhookAnswer:
        """The verified delivery, or the answer that refuses the request."""
        if method != "POST":
            return _answer(405, "method must be POST", Allow="POST")
        if len(body) > self.max_body:
            return self.too_large()
        try:
            return verify_webhook(self.secret, headers, body, now=self._clock(), tolerance=self.tolerance)
        except WebhookError as err:
            return _answer(400 if isinstance(err, BadHeaderError) else 401, str(err))

    def receive(self, method: str, headers: HeaderSource, body: bytes) -> WebhookAnswer:
        """Answers one request whose body has been read whole, running the
        handler in this thread."""
        checked = self.check(method, headers, body)
        if isinstance(checked, WebhookAnswer):
            return checked
        try:
            result = self.handler(checked)
            if inspect.iscoroutine(result):
                result.close()
                raise TypeError("the handler is a coroutine function: serve it with the ASGI app")
        except Exception as err:
            return _answer(500, _first_line(err))
        return _answer(204)

    async def receive_async(self, method: str, headers: HeaderSource, body: bytes) -> WebhookAnswer:
        """Answers one request whose body has been read whole: awaits a
        coroutine handler, and runs any other in a worker thread so the
        event loop is not blocked."""
        checked = self.check(method, headers, body)
        if isinstance(checked, WebhookAnswer):
            return checked
        try:
            if _is_async(self.handler):
                await self.handler(checked)  # type: ignore[misc]
            else:
                result = await asyncio.to_thread(self.handler, checked)
                if inspect.isawaitable(result):
                    await result
        except Exception as err:
            return _answer(500, _first_line(err))
        return _answer(204)

    def too_large(self) -> WebhookAnswer:
        """The 413 answer."""
        return _answer(413, f"body larger than {self.max_body} bytes")

    # ---- WSGI ----

    def wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """A WSGI application (PEP 3333): pass receiver.wsgi to any WSGI
        server, or mount it in a framework's router."""
        method = environ.get("REQUEST_METHOD", "")
        length = environ.get("CONTENT_LENGTH") or ""
        if length.isdigit() and int(length) > self.max_body + _DRAIN_LIMIT:
            a = self.too_large()  # the server deals with the unread body
        elif length.isdigit() and int(length) > self.max_body:
            environ["wsgi.input"].read(int(length))
            a = self.too_large()
        else:
            body = _read_wsgi_body(environ, int(length) if length.isdigit() else None, self.max_body)
            a = self.too_large() if body is None else self.receive(method, _wsgi_headers(environ), body)
        start_response(f"{a.status} {HTTPStatus(a.status).phrase}", list(a.headers.items()))
        return [a.body.encode()] if a.body else []

    # ---- ASGI ----

    @functools.cached_property
    def asgi(self) -> Callable[..., Awaitable[None]]:
        """An ASGI 3 application: pass receiver.asgi to any ASGI server, or
        mount it in a framework's router. It answers the lifespan protocol
        too, so it can be the whole app. (A plain coroutine function, so
        servers that guess the interface from the app guess right.)"""

        async def app(scope: dict[str, Any], receive: _Receive, send: _Send) -> None:
            await self._serve_asgi(scope, receive, send)

        return app

    async def _serve_asgi(self, scope: dict[str, Any], receive: _Receive, send: _Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            raise ValueError(f"WebhookReceiver serves HTTP, not {scope['type']}")
        declared = next((v for k, v in scope["headers"] if k.lower() == b"content-length"), b"")
        body = bytearray()
        size = 0
        unread = declared.isdigit() and int(declared) > self.max_body + _DRAIN_LIMIT
        while not unread:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size <= self.max_body:
                body += chunk
            unread = size > self.max_body + _DRAIN_LIMIT
            if not message.get("more_body", False):
                break
        too_large = unread or size > self.max_body
        a = self.too_large() if too_large else await self.receive_async(scope["method"], scope["headers"], bytes(body))
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in a.headers.items()]
        if unread:
            headers.append((b"connection", b"close"))  # the rest of the body is not read
        await send({"type": "http.response.start", "status": a.status, "headers": headers})
        await send({"type": "http.response.body", "body": a.body.encode()})

    # ---- http.server ----

    @functools.cached_property
    def http_handler(self) -> type[BaseHTTPRequestHandler]:
        """A request handler class for http.server:

        ThreadingHTTPServer(("127.0.0.1", 8080), receiver.http_handler).serve_forever()
        """
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, so Boomerang reuses connections

            def do_POST(self) -> None:
                receiver._serve_http(self)

            do_GET = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_POST

            def log_message(self, format: str, *args: Any) -> None:
                receiver._log.debug("boomerang: webhook %s: " + format, self.address_string(), *args)

        return Handler

    def _serve_http(self, h: BaseHTTPRequestHandler) -> None:
        length = h.headers.get("Content-Length")
        if "chunked" in (h.headers.get("Transfer-Encoding") or "").lower():
            a = _answer(411, "a Content-Length is required")
        elif length is not None and not length.strip().isdigit():
            a = _answer(400, "bad Content-Length")
        elif length is not None and int(length) > self.max_body + _DRAIN_LIMIT:
            a = self.too_large()
            h.close_connection = True  # the body is not read
        elif length is not None and int(length) > self.max_body:
            h.rfile.read(int(length))
            a = self.too_large()
        else:
            a = self.receive(h.command, h.headers, h.rfile.read(int(length or 0)))
        if a.status in (400, 411):
            h.close_connection = True  # the body was not read
        h.send_response(a.status)
        for name, value in a.headers.items():
            h.send_header(name, value)
        body = a.body.encode()
        if a.status != 204:
            h.send_header("Content-Length", str(len(body)))
        if h.close_connection:
            h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(body)


# A body too large by up to _DRAIN_LIMIT bytes is read and dropped before
# the 413 goes out, and the connection kept: closed with the body still
# arriving, the connection would be reset, and the sender might see the
# reset instead of the answer. A larger one is answered at once, and the
# connection closed.
_DRAIN_LIMIT = 1 << 20


def _is_async(handler: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(getattr(handler, "__call__", None))


def _first_line(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return text.splitlines()[0] if text.splitlines() else text


def _wsgi_headers(environ: dict[str, Any]) -> dict[str, str]:
    """The request headers from a WSGI environ, CGI names turned back into
    header names (case does not matter to the lookup)."""
    return {key[5:].replace("_", "-"): value for key, value in environ.items() if key.startswith("HTTP_")}


def _read_wsgi_body(environ: dict[str, Any], length: int | None, limit: int) -> bytes | None:
    """The body, or None when it is larger than limit."""
    stream = environ["wsgi.input"]
    if length is not None:
        return stream.read(length) if length else b""
    if not environ.get("wsgi.input_terminated"):
        return b""  # without a length, reading on may block (PEP 3333)
    body = stream.read(limit + 1)
    return None if len(body) > limit else body


async def _lifespan(receive: _Receive, send: _Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
