"""Frame writing shared by the client and the TCP receiver."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable


class FrameWriter:
    """Writes frames to a socket from many threads. The frames queued while
    one thread writes leave together in that thread's next write, so
    concurrent requests (or acks) share system calls and TCP segments."""

    def __init__(self, sock: socket.socket, failed: Callable[[OSError], None]) -> None:
        self._sock = sock
        self._failed = failed
        self._lock = threading.Lock()
        self._out: list[bytes] = []
        self._writing = False
        self._closed = False

    def write(self, frame: bytes) -> None:
        """Queues frame, and writes everything queued unless another thread
        is writing already. A write error goes to failed; later frames are
        dropped."""
        with self._lock:
            if self._closed:
                return
            self._out.append(frame)
            if self._writing:
                return
            self._writing = True
        while True:
            with self._lock:
                if not self._out or self._closed:
                    self._writing = False
                    return
                data = b"".join(self._out)
                self._out.clear()
            try:
                self._sock.sendall(data)
            except OSError as err:
                self.close()
                self._failed(err)
                return

    def close(self) -> None:
        """Drops what is queued and every later frame."""
        with self._lock:
            self._closed = True
            self._writing = False
            self._out.clear()
