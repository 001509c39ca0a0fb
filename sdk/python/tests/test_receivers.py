"""The receivers with real deliveries from the real server: the webhook
receiver under http.server, a WSGI server and an ASGI server, and the TCP
receiver."""

from __future__ import annotations

import http.client
import socket
import socketserver
import threading
import unittest
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import uvicorn

import boomerang
from boomerang import pb

from .harness import SECRET, WAIT_LIMIT, Inbox, admin, register, serve_in_thread, start_server, wait_for, webhook_server


class _QuietWSGIHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


def wsgi_server(case: unittest.TestCase, app: Callable[..., Any]) -> str:
    """A WSGI app under wsgiref on a free loopback port; returns its base URL."""
    server = make_server("127.0.0.1", 0, app, server_class=_ThreadingWSGIServer, handler_class=_QuietWSGIHandler)
    return serve_in_thread(case, server)


def asgi_server(case: unittest.TestCase, app: Callable[..., Any]) -> str:
    """An ASGI app under uvicorn on a free loopback port; returns its base URL."""
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    server.install_signal_handlers = lambda: None  # not the main thread
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()

    def stop() -> None:
        server.should_exit = True
        thread.join(WAIT_LIMIT)
        sock.close()

    case.addCleanup(stop)
    wait_for("uvicorn to start", lambda: server.started or not thread.is_alive())
    case.assertTrue(server.started, "uvicorn started")
    return "http://127.0.0.1:%d" % sock.getsockname()[1]


def round_trip(case: unittest.TestCase, c: boomerang.Client, inbox: Inbox, client_id: str) -> None:
    """Schedules a good and a flaky task and checks both arrive as they should."""
    group = "orders / Zürich 100%"
    hello = c.schedule("hello", group=group)
    d = inbox.next(f"hello for {client_id}", lambda x: x.task_id == hello.id)
    case.assertEqual(
        (d.payload, d.client, d.group), (b"hello", client_id, group), "the group is decoded from its escaped header"
    )
    case.assertEqual((d.fire_at_ms, d.attempt), (hello.fire_at_ms, 1))
    case.assertGreaterEqual(d.term, 1, "the leader's term arrives")

    flaky = c.schedule("flaky:1")
    second = inbox.next(f"the retry for {client_id}", lambda x: x.task_id == flaky.id and x.attempt == 2)
    case.assertEqual(second.payload, b"flaky:1")

    def deleted() -> bool:
        try:
            c.get_task(id=flaky.id)
        except boomerang.NotFoundError:
            return True
        return False

    wait_for("the acknowledged task to be deleted", deleted)


class WebhookDeliveryTest(unittest.TestCase):
    def test_webhooks_arrive_through_http_server_wsgi_and_asgi(self) -> None:
        s = start_server(self)
        a = admin(self, s)

        via_http = Inbox()
        url = webhook_server(self, via_http)
        round_trip(self, register(self, s, a, "http-server", pb.PROTOCOL_HTTP, url), via_http, "http-server")

        via_wsgi = Inbox()
        url = wsgi_server(self, boomerang.WebhookReceiver(SECRET, via_wsgi.handler).wsgi) + "/hook"
        round_trip(self, register(self, s, a, "wsgi", pb.PROTOCOL_HTTP, url), via_wsgi, "wsgi")

        via_asgi = Inbox()

        async def async_handler(d: pb.Delivery) -> None:
            via_asgi.handler(d)

        url = asgi_server(self, boomerang.WebhookReceiver(SECRET, async_handler).asgi) + "/hook"
        round_trip(self, register(self, s, a, "asgi", pb.PROTOCOL_HTTP, url), via_asgi, "asgi")

        # A plain function under ASGI runs in a worker thread.
        via_asgi_sync = Inbox()
        url = asgi_server(self, boomerang.WebhookReceiver(SECRET, via_asgi_sync.handler).asgi) + "/hook"
        round_trip(self, register(self, s, a, "asgi-sync", pb.PROTOCOL_HTTP, url), via_asgi_sync, "asgi-sync")

    def test_a_delivery_signed_with_another_secret_is_refused_and_dead_lettered(self) -> None:
        s = start_server(self)
        a = admin(self, s)
        inbox = Inbox()
        url = webhook_server(self, inbox, b"the receiver's own secret")
        c = register(self, s, a, "mismatch", pb.PROTOCOL_HTTP, url)
        task = c.schedule("never handled")
        wait_for("the dead letter", lambda: any(d.task.id == task.id for d in c.list_dead_letters().dead_letters))
        dl = c.list_dead_letters().dead_letters[0]
        self.assertIn("401", dl.last_error)
        self.assertEqual(dl.attempts, 1, "401 is final: no retries")
        self.assertEqual(inbox.deliveries, [], "the handler never saw it")


META = boomerang.WebhookMeta(
    delivery_id=7,
    task_id=281474976710657,
    attempt=1,
    fire_at_ms=1767225600000,
    client="billing",
    group="customer 7",
    term=3,
    timestamp=1767225600,
)


def signed(payload: bytes, change: Callable[[dict[str, str]], object] = lambda h: None) -> dict[str, str]:
    h = boomerang.sign_webhook("whsec_example", META, payload)
    change(h)
    return h


CASES: list[tuple[str, str, dict[str, str], bytes, int, str | None]] = [
    # name, method, headers, body, status, a part of the answer's body
    ("signed", "POST", signed(b'{"invoice":42}'), b'{"invoice":42}', 204, None),
    ("handler error", "POST", signed(b"boom"), b"boom", 500, "handler failed"),
    ("not POST", "PUT", signed(b"x"), b"x", 405, "POST"),
    ("too large", "POST", signed(b"x" * 65), b"x" * 65, 413, "64 bytes"),
    ("unsigned", "POST", signed(b"x", lambda h: h.pop("Boomerang-Signature")), b"x", 401, "no v1= signature"),
    ("altered", "POST", signed(b"x"), b"y", 401, "does not match"),
    ("term relabelled", "POST", signed(b"x", lambda h: h.update({"Boomerang-Term": "4"})), b"x", 401, "does not match"),
    ("no term", "POST", signed(b"x", lambda h: h.pop("Boomerang-Term")), b"x", 400, "Boomerang-Term"),
    ("stale", "POST", signed(b"x", lambda h: h.update({"Boomerang-Timestamp": "1767225000"})), b"x", 401, None),
    (
        "bad header",
        "POST",
        signed(b"x", lambda h: h.update({"Boomerang-Attempt": "first"})),
        b"x",
        400,
        "Boomerang-Attempt",
    ),
]


class WebhookAnswersTest(unittest.TestCase):
    def test_the_webhook_receiver_answers_as_documented(self) -> None:
        seen: list[pb.Delivery] = []

        def handler(d: pb.Delivery) -> None:
            seen.append(d)
            if d.payload == b"boom":
                raise RuntimeError("handler failed\nwith a second line")

        async def async_handler(d: pb.Delivery) -> None:
            handler(d)

        def receiver(h: Callable[[pb.Delivery], Any]) -> boomerang.WebhookReceiver:
            return boomerang.WebhookReceiver("whsec_example", h, clock=lambda: 1767225600.0, max_body=64)

        servers = {
            "http.server": serve_in_thread(self, ThreadingHTTPServer(("127.0.0.1", 0), receiver(handler).http_handler)),
            "WSGI": wsgi_server(self, receiver(handler).wsgi),
            "ASGI": asgi_server(self, receiver(async_handler).asgi),
        }
        for via, base in servers.items():
            for name, method, headers, body, status, reply in CASES:
                with self.subTest(name, via=via):
                    conn = http.client.HTTPConnection(urlsplit(base).netloc, timeout=WAIT_LIMIT)
                    conn.request(method, "/hook", body=body, headers=headers)
                    resp = conn.getresponse()
                    text = resp.read().decode()
                    conn.close()
                    self.assertEqual(resp.status, status, text)
                    if reply is not None:
                        self.assertIn(reply, text)
                        self.assertNotIn("second line", text)
                    if status == 405:
                        self.assertEqual(resp.getheader("Allow"), "POST")
        self.assertEqual(len(seen), 2 * len(servers), "the handler saw the signed deliveries only")
        self.assertEqual(
            (seen[0].group, seen[0].task_id, seen[0].term, seen[0].payload),
            ("customer 7", 281474976710657, 3, b'{"invoice":42}'),
        )


class WebhookTooLargeTest(unittest.TestCase):
    def test_a_body_a_little_too_large_is_read_and_the_connection_kept(self) -> None:
        seen: list[pb.Delivery] = []

        async def async_handler(d: pb.Delivery) -> None:
            seen.append(d)

        def receiver(h: Callable[[pb.Delivery], Any]) -> boomerang.WebhookReceiver:
            return boomerang.WebhookReceiver("whsec_example", h, clock=lambda: 1767225600.0, max_body=64)

        # wsgiref answers HTTP/1.0, one request a connection: not here.
        servers = {
            "http.server": serve_in_thread(self, ThreadingHTTPServer(("127.0.0.1", 0), receiver(seen.append).http_handler)),
            "ASGI": asgi_server(self, receiver(async_handler).asgi),
        }
        good = b'{"invoice":42}'
        for via, base in servers.items():
            with self.subTest(via=via):
                conn = http.client.HTTPConnection(urlsplit(base).netloc, timeout=WAIT_LIMIT)
                self.addCleanup(conn.close)
                conn.request("POST", "/hook", body=b"x" * 65, headers=signed(b"x" * 65))
                resp = conn.getresponse()
                resp.read()
                self.assertEqual(resp.status, 413)
                self.assertNotEqual((resp.getheader("Connection") or "").lower(), "close")
                conn.request("POST", "/hook", body=good, headers=signed(good))
                resp = conn.getresponse()
                resp.read()
                self.assertEqual(resp.status, 204, "the next delivery on the same connection")
        self.assertEqual([d.payload for d in seen], [good, good])


class TCPReceiverTest(unittest.TestCase):
    def test_the_tcp_receiver_takes_deliveries_and_answers_with_acks(self) -> None:
        s = start_server(self)
        a = admin(self, s)
        inbox = Inbox()
        # The first tasks of two groups wait for each other: they can only
        # both finish if the receiver runs deliveries concurrently.
        together = threading.Barrier(2, timeout=WAIT_LIMIT)
        firsts: set[str] = set()
        lock = threading.Lock()
        running = [0, 0]  # now, most at once

        def handler(d: pb.Delivery) -> None:
            with lock:
                running[0] += 1
                running[1] = max(running[1], running[0])
                first = d.group in ("g0", "g1") and d.attempt == 1 and d.group not in firsts
                firsts.add(d.group)
            try:
                if first:
                    together.wait()
                inbox.handler(d)
            finally:
                with lock:
                    running[0] -= 1

        receiver = boomerang.TCPReceiver(handler, max_in_flight=8)
        _, port = receiver.listen("127.0.0.1", 0)
        closed = False

        def close() -> None:
            if not closed:
                receiver.close(1.0)

        self.addCleanup(close)
        c = register(self, s, a, "tcp", pb.PROTOCOL_TCP, f"127.0.0.1:{port}")

        groups, per_group = 4, 25
        futures = [
            c.submit("register_task", pb.RegisterTaskRequest(payload=b"task %d" % i, group=f"g{i % groups}"))
            for i in range(groups * per_group)
        ]
        tasks = [f.result(WAIT_LIMIT).task for f in futures]
        for t in tasks:
            inbox.next(f"task {t.id}", _is_delivery_of(t.id))
        # Registrations sent together are accepted in any order; each group
        # is then delivered in due order: by due time, then acceptance sequence.
        for g in range(groups):
            arrived = [d.task_id for d in inbox.deliveries if d.group == f"g{g}"]
            due = [t.id for t in sorted((t for t in tasks if t.group == f"g{g}"), key=lambda t: (t.fire_at_ms, t.seq))]
            self.assertEqual(arrived, due, f"group g{g} arrives in due order")
        self.assertTrue(all(d.term >= 1 for d in inbox.deliveries), "every delivery carries the leader's term")
        self.assertTrue(2 <= running[1] <= 8, f"handlers overlapped within the limit (at most {running[1]} at once)")

        failing = c.schedule("fail:tcp")
        wait_for(
            "the refused delivery's dead letter",
            lambda: any(d.task.id == failing.id for d in c.list_dead_letters().dead_letters),
        )
        dl = next(d for d in c.list_dead_letters().dead_letters if d.task.id == failing.id)
        self.assertIn("refused fail:tcp", dl.last_error)
        self.assertEqual(dl.attempts, 3)
        flaky = c.schedule("flaky:tcp")
        inbox.next("the retried TCP delivery", lambda d: d.task_id == flaky.id and d.attempt == 2)
        wait_for("every task to be acknowledged", lambda: len(c.list_tasks().tasks) == 0)

        closed = True
        receiver.close(10.0)


def _is_delivery_of(task_id: int) -> Callable[[pb.Delivery], bool]:
    return lambda d: d.task_id == task_id


if __name__ == "__main__":
    unittest.main()
