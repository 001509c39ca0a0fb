"""Routing: each request goes straight to its shard's leader in a cluster
(docs/cluster.md, "Routing"), over a connection the client opens to
that node when first needed, with the client's session (sessions are
valid on every node).

Nothing here blocks a reader thread: an attempt's answer decides the next
attempt in a callback, which leaves the sending to one thread of the
router's (Later), also for the pauses between attempts; dials run on
threads of their own. Only the first fetch of the routing view waits, on
the thread of the first request that needs it."""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message

from ._connection import resolve
from ._later import Later
from ._peers import NotSent, Peers
from ._routes import HOME, View, repeatable, routable
from .errors import BoomerangError, ConnectionLostError, ProtocolError, error_from_wire
from .frames import encode_frame
from .v1 import boomerang_pb2 as pb

if TYPE_CHECKING:
    from .client import Client

# A request is sent at most _MAX_ATTEMPTS times and, once _WINDOW seconds
# have passed since its first attempt, once more only: that last attempt
# goes through the client's own connection without route, so its node
# forwards it. Before an attempt that follows a NOT_LEADER naming no
# leader, a node that cannot be reached or a BUSY answer (a shard changing
# leaders: an election takes a second or two) it waits _BACKOFF seconds,
# doubling up to _MAX_BACKOFF. A failed first fetch of the view is tried
# again after _FETCH_RETRY seconds at the soonest. The Go SDK's bounds.
_MAX_ATTEMPTS = 32
_WINDOW = 10.0
_BACKOFF = 0.02
_MAX_BACKOFF = 0.5
_FETCH_RETRY = 1.0


class _Routed:
    """One request on its way to its shard's leader, across attempts."""

    __slots__ = ("request", "inner", "attempts", "until", "wait")

    def __init__(self, request: pb.Request, inner: Future[pb.Response]) -> None:
        self.request = request
        self.inner = inner  # settles with the answer that reaches the caller
        self.attempts = 0
        self.until = time.monotonic() + _WINDOW  # no routed attempt after it
        self.wait = _BACKOFF


class Router:
    """Sends a client's requests to their shards' leaders."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._spread = itertools.count(1)
        self._fetch_lock = threading.Lock()  # one first fetch at a time
        self._fetch_failed = -_FETCH_RETRY  # time.monotonic() of the last failed first fetch
        self._lock = threading.Lock()
        self._view: View | None = None
        self._fetching = False  # a background refresh runs
        self._peers = Peers(client)
        self._closed = False
        self._later = Later("boomerang-route", client._log)  # sends again, after a pause or at once

    def send(self, request: pb.Request, inner: Future[pb.Response], target: str | None = None) -> None:
        """Sends request to its shard's leader; inner settles with the
        answer, after whatever attempts that takes. A NOT_LEADER answer
        sends it on to the leader named; a node that cannot be reached, a
        connection that broke with a repeatable request in flight, or a
        BUSY answer to one sends it again after a pause; meanwhile the
        view is refreshed. With target (a part of a batch split by
        leader), it goes to that node, or through the client's own
        connection if that node cannot be reached."""
        if target is not None:
            self._send_part(request, target, inner)
            return
        view = self.view() if routable(request.WhichOneof("body")) else None
        if view is None or view.standalone:
            request.route = False
            self._send(HOME, request, inner)
            return
        self._attempt(_Routed(request, inner), view.target(request, self._spread))

    def view(self) -> View | None:
        """The view to route by, fetching the first one; None if that
        failed (less than _FETCH_RETRY seconds ago)."""
        view = self._view
        if view is not None:
            return view
        with self._fetch_lock:
            if self._view is None and time.monotonic() - self._fetch_failed >= _FETCH_RETRY:
                try:
                    self._fetch().result(self._client._dial_timeout)
                except Exception as err:  # noqa: BLE001 - any failure leaves requests to the node dialed
                    self._fetch_failed = time.monotonic()
                    self._client._log.warning(
                        "boomerang: fetching the routing view failed; requests go through the node dialed: %s", err
                    )
            return self._view

    def split_batch(self, batch: pb.RegisterTasksRequest) -> list[tuple[str, list[int]]] | None:
        """The indexes of batch's tasks by the address of their shard's
        leader (HOME for the client's own node), in order; None when the
        batch goes to the node dialed as it is."""
        view = self.view()
        if view is None or view.standalone:
            return None
        parts: dict[str, list[int]] = {}
        for i, task in enumerate(batch.tasks):
            parts.setdefault(view.task_address(batch.client, task), []).append(i)
        return list(parts.items())

    def close(self) -> None:
        """Closes the connections to the other nodes."""
        with self._lock:
            self._closed = True
        self._peers.close()
        self._later.close()

    # ---- Attempts ----

    def _attempt(self, routed: _Routed, address: str) -> None:
        if routed.inner.done():
            return  # abandoned
        routed.attempts += 1
        last = routed.attempts >= _MAX_ATTEMPTS or time.monotonic() > routed.until
        routed.request.route = not last
        answer: Future[pb.Response] = Future()
        answer.add_done_callback(partial(self._answered, routed, last))
        self._send(HOME if last else address, routed.request, answer, again=routed.attempts > 1)

    def _answered(self, routed: _Routed, last: bool, answer: Future[pb.Response]) -> None:
        """Settles routed with an attempt's answer, or starts the next."""
        if routed.inner.done():
            return
        err = answer.exception()
        response = answer.result() if err is None else None
        status = response.error.status if response is not None and response.HasField("error") else pb.STATUS_OK
        home = False  # the next attempt goes through the client's own connection
        if last:
            copy_outcome(answer, routed.inner)
            return
        if status == pb.STATUS_NOT_LEADER:
            assert response is not None
            address = self._learn(response.error.not_leader)
            if address != HOME:
                self._later.run(0, partial(self._attempt, routed, address))
                return
        elif isinstance(err, NotSent) or (isinstance(err, ConnectionLostError) and repeatable(routed.request)):
            # The node cannot be reached, or went: the node dialed can,
            # though it may still name the other one for a while.
            home = True
        elif not (status == pb.STATUS_BUSY and repeatable(routed.request)):
            # BUSY (overloaded, or the shard changed leaders while the
            # request was under way) is asked again only by a repeatable
            # request: anything else may have taken effect.
            if isinstance(err, ConnectionLostError):
                self.refresh_soon()
            copy_outcome(answer, routed.inner)
            return
        self.refresh_soon()
        self._later.run(routed.wait, partial(self._again, routed, home))
        routed.wait = min(2 * routed.wait, _MAX_BACKOFF)

    def _again(self, routed: _Routed, home: bool) -> None:
        view = self._view
        assert view is not None
        self._attempt(routed, HOME if home else view.target(routed.request, self._spread))

    def _learn(self, hint: pb.NotLeader) -> str:
        """Keeps a NOT_LEADER hint until the next view, asks for that view
        when the hint is newer, and returns where to send the request next
        (HOME when the hint names no other leader)."""
        address = hint.leader_tcp_address
        with self._lock:
            view = self._view
            assert view is not None
            named = address != "" and hint.leader_id != view.node
            if named and hint.shard < view.shards:
                self._view = view.with_leader(hint.shard, hint.leader_id, address)
        if hint.revision > view.revision or not address:
            self.refresh_soon()
        return address if named else HOME

    def _send_part(self, request: pb.Request, address: str, inner: Future[pb.Response]) -> None:
        if address == HOME:
            self._send(HOME, request, inner)
            return

        def answered(answer: Future[pb.Response]) -> None:
            if isinstance(answer.exception(), NotSent):
                self.refresh_soon()
                self._later.run(0, partial(self._send, HOME, request, inner, True))
            else:
                copy_outcome(answer, inner)

        answer: Future[pb.Response] = Future()
        answer.add_done_callback(answered)
        self._send(address, request, answer)

    def _send(self, address: str, request: pb.Request, answer: Future[pb.Response], again: bool = False) -> None:
        """Sends request over the connection to address, or the client's
        own for HOME; again, under a new id (its first id stays until then,
        so that a call given up on is taken back from the backlog)."""
        if again:
            request.request_id = self._client._next_id()
        frame = encode_frame(request)
        if address == HOME:
            self._client._dispatch(request.request_id, frame, answer)
        else:
            self._peers.send(address, request.request_id, frame, answer)

    # ---- The routing view ----

    def refresh_soon(self) -> None:
        """Fetches the view in the background, unless a fetch runs."""
        with self._lock:
            if self._fetching or self._closed:
                return
            self._fetching = True

        def fetched(done: Future[None]) -> None:
            with self._lock:
                self._fetching = False
            if done.exception() is not None:
                self._client._log.debug("boomerang: refreshing the routing view failed: %s", done.exception())

        self._later.run(0, lambda: self._fetch().add_done_callback(fetched))

    def _fetch(self) -> Future[None]:
        """Asks the client's node for the view; the future settles once it
        is kept. It takes no request slot: the requests waiting for the
        view may hold them all."""
        session = self._client.session
        request = pb.Request(
            request_id=self._client._next_id(),
            session_id=session.id if session else "",
            get_routes=pb.GetRoutesRequest(),
        )
        done: Future[None] = Future()
        answer: Future[pb.Response] = Future()
        answer.add_done_callback(partial(self._fetched, done))
        self._send(HOME, request, answer)
        return done

    def _fetched(self, done: Future[None], answer: Future[pb.Response]) -> None:
        try:
            response = answer.result()
            if response.HasField("error"):
                err = error_from_wire(response.error)
                if err.status != pb.STATUS_INVALID_REQUEST or err.field != "body":
                    raise err
                view = View(standalone=True)  # a server without GetRoutes does not route
            elif response.WhichOneof("body") != "get_routes":
                raise ProtocolError("the response to get_routes has no body")
            else:
                view = View.of(response.get_routes)
            with self._lock:
                if self._view is None or view.revision >= self._view.revision:
                    self._view = view
        except Exception as err:  # noqa: BLE001 - the fetch's failure is its outcome
            resolve(done, error=err)
            return
        resolve(done)


def copy_outcome(source: Future[Any], target: Future[Any]) -> None:
    """Settles target as source settled."""
    err = source.exception()
    if err is not None:
        resolve(target, error=err)
    else:
        resolve(target, source.result())


def gather_batch(total: int, parts: list[tuple[list[int], Future[Message]]]) -> Future[Message]:
    """The response to a batch of total tasks sent in parts, each the
    indexes of its tasks and the future of its response: the results put
    back in the batch's order. A part refused as a whole fails its tasks;
    any other failure (a lost connection, a timeout) fails the batch."""
    whole: Future[Message] = Future()
    left = [len(parts)]
    lock = threading.Lock()

    def merge() -> None:
        results: list[Any] = [None] * total
        for indexes, future in parts:
            err = future.exception()
            if err is None:
                response: Any = future.result()
                if len(response.results) != len(indexes):
                    err = ProtocolError(f"{len(response.results)} results for {len(indexes)} tasks")
            if isinstance(err, BoomerangError):
                wire = pb.Error(status=err.status, message=err.server_message, field=err.field)  # type: ignore[arg-type]
                for i in indexes:
                    results[i] = pb.RegisterTaskResult(error=wire)
            elif err is not None:
                resolve(whole, error=err)
                return
            else:
                for i, result in zip(indexes, response.results):
                    results[i] = result
        resolve(whole, pb.RegisterTasksResponse(results=results))

    def one_done(_: Future[Message]) -> None:
        with lock:
            left[0] -= 1
            if left[0]:
                return
        merge()

    for _, future in parts:
        future.add_done_callback(one_done)
    return whole
