"""Runs the real boomerang binary for the tests: built once per test run
from the repository's source, started on free loopback ports with a
temporary data directory and a known admin password, and stopped when the
test ends."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
from collections.abc import Callable
from http.server import HTTPServer, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boomerang
from boomerang import pb

ADMIN_PASSWORD = "admin-password-sdk-py"
#: Every wait in the tests is bounded by this many seconds.
WAIT_LIMIT = 60.0
#: A signing secret every test client registers with.
SECRET = b"sdk-py-signing-secret-0123456789"

REPO_ROOT = Path(__file__).resolve().parents[3]
_built: str | None = None
_build_lock = threading.Lock()


def boomerang_binary() -> str:
    """Builds cmd/boomerang into a temporary directory, once per run."""
    global _built
    with _build_lock:
        if _built is None:
            tmp = tempfile.mkdtemp(prefix="boomerang-sdk-py-")
            atexit.register(shutil.rmtree, tmp, True)
            binary = os.path.join(tmp, "boomerang")
            subprocess.run(["go", "build", "-o", binary, "./cmd/boomerang"], cwd=REPO_ROOT, check=True)
            _built = binary
        return _built


class Server:
    """A running boomerang process."""

    def __init__(self, proc: subprocess.Popen[bytes], data_dir: str, tcp: str, http: str) -> None:
        self.proc = proc
        self.data_dir = data_dir
        self.tcp = tcp
        self.http = http

    @property
    def tcp_port(self) -> int:
        return int(self.tcp.rsplit(":", 1)[1])

    def stop(self) -> int:
        """SIGTERM, then the exit code."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(WAIT_LIMIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def start_server(
    case: unittest.TestCase,
    data_dir: str | None = None,
    tcp_port: int = 0,
    args: tuple[str, ...] = (),
    await_log: str = "",
) -> Server:
    """Starts boomerang and stops it when the test ends; with await_log,
    returns once it also logged that message (msg="...")."""
    if data_dir is None:
        data_dir = tempfile.mkdtemp(prefix="boomerang-data-")
        case.addCleanup(shutil.rmtree, data_dir, True)
    cmd = [
        boomerang_binary(),
        "serve",
        "--data-dir",
        data_dir,
        "--tcp-addr",
        f"127.0.0.1:{tcp_port}",
        "--http-addr",
        "127.0.0.1:0",
        "--admin-password",
        ADMIN_PASSWORD,
        "--partitions",
        "2",
        *args,
    ]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def reap() -> None:
        if proc.poll() is None:
            proc.kill()
        proc.wait()

    case.addCleanup(reap)
    found: list[tuple[str, str]] = []
    seen: list[str] = []
    ready = threading.Event()
    awaited = [not await_log]

    def read_log() -> None:
        # Reads the log to the end, so the server never blocks on a full pipe.
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            seen.append(line)
            m = re.search(r" msg=listening tcp=(\S+) http=(\S+)", line)
            if m and not found:
                found.append((m[1], m[2]))
            if await_log and f'msg="{await_log}"' in line:
                awaited[0] = True
            if found and awaited[0]:
                ready.set()
        proc.stderr.close()
        ready.set()

    threading.Thread(target=read_log, daemon=True).start()
    if not ready.wait(WAIT_LIMIT) or not found or not awaited[0]:
        waited = f" and {await_log!r}" if await_log else ""
        raise AssertionError(f"boomerang did not report its addresses{waited}:\n" + "\n".join(seen))
    return Server(proc, data_dir, *found[0])


def connect(
    case: unittest.TestCase, server: Server | str, client_id: str, password: str, **options: Any
) -> boomerang.Client:
    """Dials the server and closes the client when the test ends."""
    address = server if isinstance(server, str) else server.tcp
    c = boomerang.dial(address, (client_id, password), timeout=WAIT_LIMIT, **options)
    case.addCleanup(c.close)
    return c


def admin(case: unittest.TestCase, server: Server, **options: Any) -> boomerang.Client:
    return connect(case, server, "admin", ADMIN_PASSWORD, **options)


def wait_for(what: str, cond: Callable[[], bool], interval: float = 0.02) -> None:
    """Polls cond until it holds, at most WAIT_LIMIT seconds."""
    deadline = time.monotonic() + WAIT_LIMIT
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def register(
    case: unittest.TestCase,
    server: Server,
    adm: boomerang.Client,
    client_id: str,
    protocol: pb.Protocol,
    endpoint: str,
    secret: bytes = SECRET,
    max_attempts: int = 3,
) -> boomerang.Client:
    """Registers a client whose tasks go to endpoint, with quick retries,
    and connects as it."""
    adm.register_client(
        client_id=client_id,
        password=f"{client_id}-password",
        callback=pb.Callback(protocol=protocol, endpoint=endpoint, timeout_ms=5000),
        retry=pb.RetryPolicy(
            backoff=pb.BACKOFF_FIXED, initial_interval_ms=10, max_interval_ms=10, max_attempts=max_attempts
        ),
        signing_secret=secret,
    )
    return connect(case, server, client_id, f"{client_id}-password")


class Inbox:
    """Records deliveries and lets tests wait for them. Payloads that start
    with "fail:" are refused, so the server retries or dead-letters them;
    those that start with "flaky:" are refused on the first attempt only."""

    def __init__(self) -> None:
        self.deliveries: list[pb.Delivery] = []
        self._changed = threading.Condition()

    def handler(self, d: pb.Delivery) -> None:
        with self._changed:
            self.deliveries.append(d)
            self._changed.notify_all()
        payload = d.payload.decode(errors="replace")
        if payload.startswith("fail:") or (payload.startswith("flaky:") and d.attempt == 1):
            raise RuntimeError(f"refused {payload}\nsecond line")

    def next(self, what: str, match: Callable[[pb.Delivery], bool]) -> pb.Delivery:
        """The first delivery that matches, waiting for it."""
        deadline = time.monotonic() + WAIT_LIMIT
        with self._changed:
            while True:
                for d in self.deliveries:
                    if match(d):
                        return d
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no delivery: {what}")
                self._changed.wait(left)


def serve_in_thread(case: unittest.TestCase, server: HTTPServer) -> str:
    """Runs an http.server on its own thread until the test ends; returns its base URL."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(WAIT_LIMIT)

    case.addCleanup(stop)
    return "http://127.0.0.1:%d" % server.server_address[1]


def webhook_server(case: unittest.TestCase, inbox: Inbox, secret: bytes = SECRET) -> str:
    """A WebhookReceiver under http.server on a free loopback port; returns
    the hook's URL."""
    receiver = boomerang.WebhookReceiver(secret, inbox.handler)
    return serve_in_thread(case, ThreadingHTTPServer(("127.0.0.1", 0), receiver.http_handler)) + "/hook"


class Proxy:
    """Forwards TCP connections to the server, and can drop what a client
    sends and cut its connections: a network failure with requests in
    flight, injected around the real server."""

    def __init__(self, case: unittest.TestCase, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._swallowing: threading.Event | None = None
        threading.Thread(target=self._accept, daemon=True).start()
        case.addCleanup(self.close)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._target)
            with self._lock:
                self._socks += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        try:
            while chunk := src.recv(1 << 16):
                swallowing = self._swallowing
                if from_client and swallowing is not None:
                    swallowing.set()
                    continue
                dst.sendall(chunk)
        except OSError:
            pass
        for s in (src, dst):
            _shut(s)

    def swallow(self) -> threading.Event:
        """Drops what clients send from now on instead of forwarding it; the
        event is set once something was dropped."""
        self._swallowing = threading.Event()
        return self._swallowing

    def resume(self) -> None:
        """Forwards again."""
        self._swallowing = None

    def cut(self) -> None:
        """Cuts every connection and forwards again."""
        self._swallowing = None
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            _shut(s)

    def close(self) -> None:
        self.cut()
        self._listener.close()


def _shut(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
