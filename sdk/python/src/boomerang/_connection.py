"""One TCP connection to the server: a reader thread matches responses to
their requests by id, in whatever order they come."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError

from .errors import ConnectionLostError, error_from_wire
from .frames import FrameDecoder
from ._writer import FrameWriter
from .v1 import boomerang_pb2 as pb

_READ_SIZE = 1 << 16

#: Called once when a connection fails: the connection, the cause and how
#: many requests failed with it.
LostCallback = Callable[["Connection", BaseException, int], None]


def resolve(future: Future, result: object = None, error: BaseException | None = None) -> None:
    """Settles a future unless its holder cancelled it."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except InvalidStateError:
        pass


class Connection:
    def __init__(self, sock: socket.socket, max_response_bytes: int, lost: LostCallback) -> None:
        self._sock = sock
        self._lost = lost
        self._decoder = FrameDecoder(pb.Response, max_response_bytes)
        self._lock = threading.Lock()
        self._pending: dict[int, Future[pb.Response]] = {}
        self._writer = FrameWriter(sock, self.fail)
        self._failed: BaseException | None = None
        self._farewell: pb.Error | None = None
        threading.Thread(target=self._read, name="boomerang-reader", daemon=True).start()

    def send(self, request_id: int, frame: bytes, future: Future[pb.Response]) -> bool:
        """Queues a framed request; future gets its response, or
        ConnectionLostError. Returns False, without sending, if the
        connection has already failed: the request may then go out on the
        next one."""
        with self._lock:
            if self._failed is not None:
                return False
            self._pending[request_id] = future
        self._writer.write(frame)
        return True

    def abandon(self, request_id: int) -> Future[pb.Response] | None:
        """Forgets a request whose caller stopped waiting and returns its
        future; a late response is dropped."""
        with self._lock:
            return self._pending.pop(request_id, None)

    def _read(self) -> None:
        try:
            while True:
                chunk = self._sock.recv(_READ_SIZE)
                if not chunk:
                    self._decoder.end()
                    raise ConnectionError("the server closed the connection")
                for response in self._decoder.feed(chunk):
                    self._received(response)
        except Exception as err:  # whatever ends the connection is its cause
            self.fail(err)

    def _received(self, response: pb.Response) -> None:
        if response.request_id == 0:
            # A connection error: the server closes the connection next.
            self._farewell = response.error
            return
        with self._lock:
            future = self._pending.pop(response.request_id, None)
        if future is not None:
            resolve(future, response)

    def fail(self, cause: BaseException) -> None:
        """Closes the connection and fails every request waiting on it with
        ConnectionLostError. Only the first cause counts; when the server
        said why it closed the connection, that is the cause."""
        with self._lock:
            if self._failed is not None:
                return
            self._failed = error_from_wire(self._farewell) if self._farewell is not None else cause
            waiting = list(self._pending.values())
            self._pending.clear()
        self._writer.close()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed by the peer
        self._sock.close()
        lost = self._failed
        for future in waiting:
            resolve(future, error=ConnectionLostError(lost))
        self._lost(self, lost, len(waiting))
