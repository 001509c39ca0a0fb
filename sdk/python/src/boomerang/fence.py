"""Fencing by term: dropping deliveries from shard leaders that were
replaced."""

from __future__ import annotations

import threading
from collections import OrderedDict

from .receiver import Handler, _is_async
from .v1 import boomerang_pb2 as pb

#: How many keys a Fence remembers unless told otherwise.
DEFAULT_FENCE_CAPACITY = 100_000


class Fence:
    """Drops deliveries sent by a shard leader that has been replaced.

    Every delivery carries the Raft term in which its sender leads the
    task's shard (delivery.term, from 1). Terms only grow from one leader
    to the next, so once a receiver has seen term T for a group, a
    delivery for that group with a lower term comes from a leader that was
    replaced: one cut off from its cluster, or slow, may still deliver for
    a short while. That leader can no longer record any outcome, so its
    delivery may be dropped: the task is in the new leader's hands, which
    delivers it again unless its own delivery already settled it.

    A Fence keeps the highest term it admitted per key. fence_key names
    the key of a delivery: its client and group, or for an ungrouped task
    its client and task id. Terms of different keys are never compared:
    groups live in shards with independent terms.

    Memory is bounded: a Fence remembers at most capacity keys, forgetting
    the least recently used one to make room. A forgotten key's next
    delivery is admitted whatever its term, so size the capacity above the
    keys that receive deliveries within a few seconds, the time a replaced
    leader may go on delivering. A Fence only knows what its own process
    has seen, and it does not make delivery exactly once: keep
    deduplicating by (task_id, fire_at_ms).

    Safe for use from several threads.
    """

    def __init__(self, capacity: int = DEFAULT_FENCE_CAPACITY) -> None:
        """capacity bounds the keys remembered; 0 or less means
        DEFAULT_FENCE_CAPACITY."""
        self.capacity = capacity if capacity > 0 else DEFAULT_FENCE_CAPACITY
        self._terms: OrderedDict[str, int] = OrderedDict()  # least recently used first
        self._stale = 0
        self._lock = threading.Lock()

    def admit(self, key: str, term: int) -> bool:
        """Whether a delivery in term may be processed under key: True when
        term is at least the highest term admitted for key so far (it then
        becomes the highest), False when it is lower."""
        with self._lock:
            highest = self._terms.get(key)
            if highest is not None:
                self._terms.move_to_end(key)
                if term < highest:
                    self._stale += 1
                    return False
            elif len(self._terms) >= self.capacity:
                self._terms.popitem(last=False)
            self._terms[key] = term
            return True

    @property
    def stale(self) -> int:
        """How many deliveries admit has refused."""
        with self._lock:
            return self._stale

    def wrap(self, handler: Handler) -> Handler:
        """A handler, for any receiver, that passes handler the deliveries
        this fence admits under fence_key, and acknowledges the others
        without calling it. A coroutine function stays one:

            fence = Fence()
            receiver = WebhookReceiver(secret, fence.wrap(handle))

        A stale delivery is answered with success, not an error. Either is
        safe: its sender no longer leads the task's shard, so the outcome it
        records cannot take effect, and the task stays with the new leader.
        Success ends the stale attempt at once; an error would have the
        replaced leader retry against this receiver until it learns that it
        was replaced, and count failures that are not the receiver's."""
        if _is_async(handler):

            async def fenced_async(delivery: pb.Delivery) -> None:
                if self.admit(fence_key(delivery), delivery.term):
                    await handler(delivery)  # type: ignore[misc]

            return fenced_async

        def fenced(delivery: pb.Delivery) -> object:
            if self.admit(fence_key(delivery), delivery.term):
                return handler(delivery)
            return None

        return fenced  # type: ignore[return-value]


def fence_key(delivery: pb.Delivery) -> str:
    """The key a delivery is fenced under: "client/group", or for an
    ungrouped task "client#task_id". A client id never holds "/" or "#",
    so two deliveries share a key only when they share a client and a
    group, or a task."""
    if delivery.group:
        return f"{delivery.client}/{delivery.group}"
    return f"{delivery.client}#{delivery.task_id}"
