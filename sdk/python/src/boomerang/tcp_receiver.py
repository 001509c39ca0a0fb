"""The raw TCP callback receiver."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ._writer import FrameWriter
from .frames import FrameDecoder, encode_frame
from .receiver import DEFAULT_MAX_DELIVERY
from .v1 import boomerang_pb2 as pb

#: Handlers a TCPReceiver runs at once by default.
DEFAULT_RECEIVER_IN_FLIGHT = 256

# How long a closing connection waits for the server to close its side.
_LINGER = 1.0
_READ_SIZE = 1 << 16


class TCPReceiver:
    """Receives deliveries over raw TCP: the server connects to it and
    sends varint-length-delimited Delivery frames, many at a time on one
    connection; the receiver runs the handler for each in a pool of
    threads, concurrently, and answers each with an Ack frame carrying its
    delivery id as soon as the handler returns (ok) or raises (failed, with
    the error as the reason), in whatever order handlers finish.

        receiver = TCPReceiver(handler)
        host, port = receiver.listen("0.0.0.0", 9000)
        ...
        receiver.close()

    The handler takes the pb.Delivery; see Handler in boomerang.receiver for
    what returning and raising mean. It runs in a worker thread, never on
    the event loop: coroutine functions are not supported here.
    """

    def __init__(
        self,
        handler: Callable[[pb.Delivery], object],
        *,
        max_frame: int = DEFAULT_MAX_DELIVERY + (64 << 10),
        max_in_flight: int = DEFAULT_RECEIVER_IN_FLIGHT,
        logger: logging.Logger | None = None,
    ) -> None:
        """max_frame bounds a Delivery frame, in bytes (a larger one closes
        the connection); max_in_flight bounds the handlers running at once,
        and per connection the deliveries read ahead of their acks."""
        if max_frame <= 0 or max_in_flight <= 0:
            raise ValueError("TCPReceiver: max_frame and max_in_flight must be positive")
        self._handler = handler
        self._max_frame = max_frame
        self._max_in_flight = max_in_flight
        self._log = logger or logging.getLogger("boomerang")
        self._pool = ThreadPoolExecutor(max_workers=max_in_flight, thread_name_prefix="boomerang-handler")
        self._lock = threading.Lock()
        self._conns: set[_ReceiverConnection] = set()
        self._listener: socket.socket | None = None
        self._closing = False

    def listen(self, host: str = "127.0.0.1", port: int = 0) -> tuple[str, int]:
        """Starts listening and accepting in a background thread; port 0
        picks a free port. Returns the bound address."""
        listener = socket.create_server((host, port))
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="boomerang-accept", daemon=True).start()
        bound = listener.getsockname()
        return bound[0], bound[1]

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except OSError:
                return  # closed
            self.serve(sock)

    def serve(self, sock: socket.socket) -> None:
        """Serves a connection accepted elsewhere, in background threads."""
        with self._lock:
            if self._closing:
                sock.close()
                return
            conn = _ReceiverConnection(self, sock)
            self._conns.add(conn)
        conn.start()

    def _forget(self, conn: _ReceiverConnection) -> None:
        with self._lock:
            self._conns.discard(conn)

    def close(self, timeout: float = 30.0) -> None:
        """Stops accepting connections and reading deliveries, waits for the
        handlers under way and their acks to be written, and closes the
        connections. Deliveries the server sent that were not read fail on
        its side and are retried. After timeout seconds the connections are
        cut and TimeoutError is raised; handlers still running finish in
        the background."""
        with self._lock:
            self._closing = True
            conns = list(self._conns)
        if self._listener is not None:
            self._listener.close()
        for c in conns:
            c.stop()
        deadline = time.monotonic() + timeout
        late = [c for c in conns if not c.done.wait(max(0.0, deadline - time.monotonic()))]
        for c in late:
            c.cut()
        self._pool.shutdown(wait=not late)
        if late:
            raise TimeoutError(f"TCPReceiver: close timed out after {timeout:g} s; connections were cut")

    def __enter__(self) -> TCPReceiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ReceiverConnection:
    """One connection from the server."""

    def __init__(self, receiver: TCPReceiver, sock: socket.socket) -> None:
        self._receiver = receiver
        self._sock = sock
        self._writer = FrameWriter(sock, lambda err: self.cut())
        self._slots = threading.Semaphore(receiver._max_in_flight)
        self._lock = threading.Lock()
        self._in_flight = 0
        self._reading = True
        self._eof = False  # the reader has stopped
        self._ended = False  # our side is closing
        self._closed = False
        self.done = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._read, name="boomerang-receiver", daemon=True).start()

    def _read(self) -> None:
        decoder = FrameDecoder(pb.Delivery, self._receiver._max_frame)
        try:
            while True:
                chunk = self._sock.recv(_READ_SIZE)
                if not chunk:
                    return
                for delivery in decoder.feed(chunk):
                    self._begin(delivery)
        except Exception as err:  # a broken frame or a failed socket ends the connection
            if self._reading:
                self._receiver._log.warning("boomerang: callback connection closed: %s", err)
        finally:
            with self._lock:
                self._eof = True
                self._reading = False
                ended = self._ended
            if ended:
                self._close_socket()
            else:
                self._settle()

    def _begin(self, delivery: pb.Delivery) -> None:
        if not self._reading:
            return  # closing: drain what the server still sends
        self._slots.acquire()  # at the limit, stop reading until a handler ends
        with self._lock:
            self._in_flight += 1
        self._receiver._pool.submit(self._run, delivery)

    def _run(self, delivery: pb.Delivery) -> None:
        ack = pb.Ack(delivery_id=delivery.delivery_id, ok=True)
        try:
            self._receiver._handler(delivery)
        except Exception as err:
            ack.ok = False
            ack.error = str(err) or type(err).__name__
        self._writer.write(encode_frame(ack))
        with self._lock:
            self._in_flight -= 1
        self._slots.release()
        self._settle()

    def stop(self) -> None:
        """Stops reading; the connection closes after the handlers under way."""
        with self._lock:
            self._reading = False
        self._settle()

    def _settle(self) -> None:
        """Once reading has stopped and every ack is out, half-closes the
        connection and waits for the server to close its side. What the
        server still sends is read and dropped meanwhile: closing a socket
        with unread input resets it, which can destroy acks the server has
        not read yet."""
        with self._lock:
            if self._reading or self._in_flight or self._ended:
                return
            self._ended = True
            eof = self._eof
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server is gone already
        if eof:
            self._close_socket()
            return
        timer = threading.Timer(_LINGER, self._close_socket)
        timer.daemon = True
        timer.start()

    def cut(self) -> None:
        """Closes the connection at once."""
        self._close_socket()

    def _close_socket(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._writer.close()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the reader
        except OSError:
            pass
        self._sock.close()
        self._receiver._forget(self)
        self.done.set()
