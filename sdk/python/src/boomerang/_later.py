"""One thread that runs jobs after a delay, in due order. The router
sends a request again through it, so that a reader thread never writes
to a socket (it could wait for a node that waits for it to read), and
pauses between attempts with it."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

Job = Callable[[], None]


class Later:
    def __init__(self, name: str, log: logging.Logger) -> None:
        self._name = name
        self._log = log
        self._changed = threading.Condition()
        self._due: list[tuple[float, int, Job]] = []  # a heap, soonest first
        self._order = itertools.count()  # keeps jobs due at once in order
        self._thread: threading.Thread | None = None  # started by the first job
        self._closed = False

    def run(self, delay: float, job: Job) -> None:
        """Runs job on the thread after delay seconds; once closed, at once
        on the calling thread."""
        with self._changed:
            if not self._closed:
                heapq.heappush(self._due, (time.monotonic() + delay, next(self._order), job))
                if self._thread is None:
                    self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                    self._thread.start()
                self._changed.notify()
                return
        job()

    def close(self) -> None:
        """Runs the waiting jobs at once, then ends the thread."""
        with self._changed:
            self._closed = True
            self._changed.notify()

    def _loop(self) -> None:
        while True:
            with self._changed:
                while True:
                    now = time.monotonic()
                    if self._due and (self._closed or self._due[0][0] <= now):
                        job = heapq.heappop(self._due)[2]
                        break
                    if self._closed:
                        return
                    self._changed.wait(self._due[0][0] - now if self._due else None)
            try:
                job()
            except Exception:  # noqa: BLE001 - one failed job must not stop the others
                self._log.exception("boomerang: %s: a job failed", self._name)
