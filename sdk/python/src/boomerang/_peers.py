"""The connections a routing client opens to the other nodes of a
cluster, one per node, dialed when first needed (on a thread of its own,
while what is for that node waits) and again after one breaks."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING

from ._connection import Connection, resolve
from .errors import ClientClosedError
from .v1 import boomerang_pb2 as pb

if TYPE_CHECKING:
    from .client import Client

Waiting = list[tuple[int, bytes, "Future[pb.Response]"]]


class NotSent(Exception):
    """The node could not be reached: the request never left."""


class _Peer:
    """The connection to one node; while it is dialed, what waits for it."""

    __slots__ = ("conn", "waiting")

    def __init__(self) -> None:
        self.conn: Connection | None = None
        self.waiting: Waiting | None = None


class Peers:
    """A client's connections to the other nodes, by address."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._peers: dict[str, _Peer] = {}  # by address
        self._closed = False

    def close(self) -> None:
        """Closes every connection; later sends fail with ClientClosedError."""
        with self._lock:
            self._closed = True
            peers, self._peers = list(self._peers.values()), {}
        for peer in peers:
            if peer.conn is not None:
                peer.conn.fail(ClientClosedError())

    def send(self, address: str, request_id: int, frame: bytes, answer: Future[pb.Response]) -> None:
        """Sends a frame over the connection to the node at address,
        dialing it if there is none; answer fails with NotSent if the
        node cannot be reached."""
        with self._lock:
            if self._closed:
                resolve(answer, error=ClientClosedError())
                return
            peer = self._peers.setdefault(address, _Peer())
            conn = peer.conn
            if conn is None:
                if peer.waiting is None:
                    peer.waiting = []
                    threading.Thread(
                        target=self._dial, args=(address, peer), name="boomerang-dial", daemon=True
                    ).start()
                peer.waiting.append((request_id, frame, answer))
                return
        if conn.send(request_id, frame, answer):
            return
        with self._lock:  # it failed meanwhile: dial again
            if peer.conn is conn:
                peer.conn = None
        self.send(address, request_id, frame, answer)

    def _dial(self, address: str, peer: _Peer) -> None:
        conn: Connection | None = None
        failure: BaseException = ClientClosedError()
        try:
            sock = self._client._dial(self._client._dial_timeout, address)
            conn = Connection(sock, self._client._max_response_bytes, partial(self._peer_lost, address, peer))
        except OSError as err:
            failure = NotSent(err)
        with self._lock:
            waiting, peer.waiting = peer.waiting or [], None
            if conn is not None and self._closed:
                conn, closing = None, conn
            else:
                closing = None
                peer.conn = conn
        if closing is not None:
            closing.fail(ClientClosedError())
        if conn is None:
            for _, _, answer in waiting:
                resolve(answer, error=failure)
            return
        for request_id, frame, answer in waiting:
            self.send(address, request_id, frame, answer)

    def _peer_lost(self, address: str, peer: _Peer, conn: Connection, cause: BaseException, failed: int) -> None:
        with self._lock:
            if peer.conn is conn:
                peer.conn = None
        if failed:
            self._client._log.warning(
                "boomerang: connection to node %s lost (%s); %d requests failed", address, cause, failed
            )
