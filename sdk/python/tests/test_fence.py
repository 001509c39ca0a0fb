"""The fence by term: its answers, its bound, its use from threads, and
its wrapper in front of a receiver's handler, sync and async."""

from __future__ import annotations

import asyncio
import random
import threading
import unittest

import boomerang
from boomerang import pb


class FenceTest(unittest.TestCase):
    def test_admits_the_highest_term_per_key_and_forgets_the_least_recently_used(self) -> None:
        fence = boomerang.Fence(2)
        steps = [
            ("c/a", 3, True),
            ("c/a", 3, True),  # the same leader again
            ("c/a", 2, False),  # a replaced leader
            ("c/b", 1, True),  # another key's terms are not compared
            ("c/a", 2, False),  # c/a is now the most recently used
            ("c/c", 1, True),  # c/b is forgotten to make room
            ("c/b", 0, True),  # a forgotten key admits any term
            ("c/c", 0, False),
        ]
        for i, (key, term, want) in enumerate(steps):
            self.assertEqual(fence.admit(key, term), want, f"step {i}")
        self.assertEqual(fence.stale, 3)
        self.assertEqual(boomerang.Fence().capacity, boomerang.DEFAULT_FENCE_CAPACITY)
        self.assertEqual(boomerang.Fence(0).capacity, boomerang.DEFAULT_FENCE_CAPACITY)

    def test_threads_racing_on_one_key(self) -> None:
        threads, n = 8, 2000
        fence = boomerang.Fence(16)
        admitted = [0] * threads

        def run(i: int) -> None:
            terms = list(range(1, n + 1))
            random.Random(i).shuffle(terms)
            for term in terms:
                if fence.admit("c/hot", term):
                    admitted[i] += 1

        workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self.assertEqual(sum(admitted) + fence.stale, threads * n, "every call admitted or counted stale")
        self.assertTrue(fence.admit("c/hot", n))
        self.assertFalse(fence.admit("c/hot", n - 1), f"term {n} is the highest")

    def test_keys(self) -> None:
        self.assertEqual(
            boomerang.fence_key(pb.Delivery(client="billing", group="customer 7", task_id=1)), "billing/customer 7"
        )
        self.assertEqual(
            boomerang.fence_key(pb.Delivery(client="billing", task_id=281474976710657)), "billing#281474976710657"
        )


def _deliver(receiver: boomerang.WebhookReceiver, payload: str, group: str, term: int, run_async: bool) -> int:
    meta = boomerang.WebhookMeta(
        delivery_id=1,
        task_id=2,
        attempt=1,
        fire_at_ms=1767225600000,
        client="billing",
        group=group,
        term=term,
        timestamp=1767225600,
    )
    body = payload.encode()
    headers = boomerang.sign_webhook("whsec_example", meta, body)
    if run_async:
        return asyncio.run(receiver.receive_async("POST", headers, body)).status
    return receiver.receive("POST", headers, body).status


class FencedReceiverTest(unittest.TestCase):
    def test_a_replaced_leaders_delivery_is_acknowledged_without_handling(self) -> None:
        for kind in ("sync", "async"):
            with self.subTest(kind):
                fence = boomerang.Fence()
                handled: list[bytes] = []

                def handler(d: pb.Delivery) -> None:
                    handled.append(d.payload)

                async def async_handler(d: pb.Delivery) -> None:
                    handled.append(d.payload)

                wrapped = fence.wrap(async_handler if kind == "async" else handler)
                self.assertEqual(asyncio.iscoroutinefunction(wrapped), kind == "async")
                receiver = boomerang.WebhookReceiver("whsec_example", wrapped, clock=lambda: 1767225600.0)
                for payload, group, term in (
                    ("new leader", "g", 5),
                    ("replaced leader", "g", 4),
                    ("another group", "h", 1),
                ):
                    self.assertEqual(_deliver(receiver, payload, group, term, kind == "async"), 204, payload)
                self.assertEqual(handled, [b"new leader", b"another group"])
                self.assertEqual(fence.stale, 1)


if __name__ == "__main__":
    unittest.main()
