"""A fake cluster node: a real socket on a loopback port speaking the raw
TCP protocol with just enough behaviour to drive the client's routing
(sessions, a task map, batches, the routing view) and a hook to answer
or drop requests as a test needs. The real server is exercised by the
other tests and, in a cluster, by the Go end-to-end tests."""

from __future__ import annotations

import itertools
import socket
import threading
import time
import unittest
from collections.abc import Callable
from typing import Literal

from boomerang import FrameDecoder, encode_frame, pb

from .harness import WAIT_LIMIT

CLIENT_ID = "tester"
PASSWORD = "secret-pw"

#: What a hook does with a request: answer it so, close the connection,
#: or leave it to the node (None).
Reply = pb.Response | Literal["close"] | None


def refuse(request: pb.Request, status: pb.Status, message: str, **error: object) -> pb.Response:
    return pb.Response(request_id=request.request_id, error=pb.Error(status=status, message=message, **error))


class FakeNode:
    def __init__(self, case: unittest.TestCase) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self._listener.getsockname()[1]
        self.changed = threading.Condition()  # guards the fields below
        self.sessions: set[str] = set()
        self.tasks: dict[int, pb.Task] = {}
        self.routes: pb.GetRoutesResponse | None = None  # None: standalone
        self.fetches = 0  # get_routes requests
        self.batches: list[int] = []  # tasks of each register_tasks request
        self.received: list[pb.Request] = []  # every other request
        self.hook: Callable[[pb.Request], Reply] | None = None
        self._ids = itertools.count(1)
        self._conns: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()
        case.addCleanup(self.close)

    def close(self) -> None:
        """Stops listening and closes every connection."""
        _shut(self._listener)  # wakes the accepting thread, as close alone does not
        with self.changed:
            conns, self._conns = self._conns, []
        for conn in conns:
            _shut(conn)
        for t in self._threads:
            t.join(WAIT_LIMIT)

    def wait(self, what: str, cond: Callable[[], bool]) -> None:
        """Waits until cond holds, checked under the node's lock."""
        with self.changed:
            if not self.changed.wait_for(cond, WAIT_LIMIT):
                raise AssertionError(f"timed out waiting for {what}")

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self.changed:
                self._conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, conn: socket.socket) -> None:
        decoder = FrameDecoder(pb.Request, 1 << 20)
        try:
            while chunk := conn.recv(1 << 16):
                for request in decoder.feed(chunk):
                    reply = self._reply(request)
                    if reply == "close":
                        return
                    conn.sendall(encode_frame(reply))
        except OSError:
            pass
        finally:
            _shut(conn)

    def _reply(self, request: pb.Request) -> pb.Response | Literal["close"]:
        with self.changed:
            if request.HasField("get_routes"):
                self.fetches += 1
                self.changed.notify_all()
                view = self.routes or pb.GetRoutesResponse(standalone=True, shards=64)
                return pb.Response(request_id=request.request_id, get_routes=view)
            self.received.append(request)
            self.changed.notify_all()
            hook = self.hook
        reply = hook(request) if hook is not None else None
        if reply is not None:
            return reply
        with self.changed:
            response = self._handle(request)
            self.changed.notify_all()
            return response

    def _handle(self, request: pb.Request) -> pb.Response:
        op = request.WhichOneof("body")
        if op == "login":
            if (request.login.client_id, request.login.password) != (CLIENT_ID, PASSWORD):
                return refuse(request, pb.STATUS_UNAUTHORIZED, "wrong client id or password")
            session = f"s{next(self._ids)}"
            self.sessions.add(session)
            login = pb.LoginResponse(session_id=session, expires_at_ms=int((time.time() + 3600) * 1000))
            return pb.Response(request_id=request.request_id, login=login)
        if request.session_id not in self.sessions:
            return refuse(request, pb.STATUS_UNAUTHORIZED, "unknown session")
        if op == "get_server_info":
            info = pb.GetServerInfoResponse(version="fake", max_frame_bytes=1 << 20)
            return pb.Response(request_id=request.request_id, get_server_info=info)
        if op == "register_task":
            return pb.Response(request_id=request.request_id, register_task=self._register(request.register_task))
        if op == "register_tasks":
            results = [pb.RegisterTaskResult(registered=self._register(t)) for t in request.register_tasks.tasks]
            self.batches.append(len(results))
            return pb.Response(request_id=request.request_id, register_tasks=pb.RegisterTasksResponse(results=results))
        if op == "get_task" and request.get_task.id in self.tasks:
            return pb.Response(
                request_id=request.request_id, get_task=pb.GetTaskResponse(task=self.tasks[request.get_task.id])
            )
        if op == "get_task":
            return refuse(request, pb.STATUS_NOT_FOUND, "no such task")
        return refuse(request, pb.STATUS_INTERNAL, "not implemented by the fake")

    def _register(self, r: pb.RegisterTaskRequest) -> pb.RegisterTaskResponse:
        task = pb.Task(id=next(self._ids), client=CLIENT_ID, payload=r.payload, group=r.group)
        self.tasks[task.id] = task
        return pb.RegisterTaskResponse(task=task, created=True)


def _shut(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
