"""Routing in a cluster (docs/cluster.md, "Routing") against fake nodes
on loopback ports: requests go to their shard's leader, NOT_LEADER is
followed, batches are split by leader, a node that cannot be reached or
goes is routed around, BUSY is asked again, and routing can be off."""

from __future__ import annotations

import unittest
from collections.abc import Callable
from typing import Any
from unittest import mock

import boomerang
from boomerang import pb
from boomerang._shard import shard_of_group

from .fake_node import CLIENT_ID, PASSWORD, FakeNode, Reply, refuse
from .harness import WAIT_LIMIT

SHARDS = 64


def by_parity(shard: int) -> str:
    return "12"[shard % 2]


def group_on(leaders: Callable[[int], str], node: str) -> str:
    """A group of the test client on a shard whose leader is node."""
    return next(g for g in "abcdefghijkl" if leaders(shard_of_group(SHARDS, CLIENT_ID, g)) == node)


class RoutingTest(unittest.TestCase):
    def dial(self, node: FakeNode, **options: Any) -> boomerang.Client:
        client = boomerang.dial(node.address, (CLIENT_ID, PASSWORD), timeout=WAIT_LIMIT, **options)
        self.addCleanup(client.close)
        return client

    def two_nodes(self, leaders: Callable[[int], str]) -> tuple[FakeNode, FakeNode, boomerang.Client]:
        """Node 1, which the client dials, and node 2, with shard s led by
        leaders(s). Node 2 takes node 1's session, as a cluster does."""
        one, two = FakeNode(self), FakeNode(self)
        one.routes = pb.GetRoutesResponse(
            shards=SHARDS,
            revision=1,
            node="1",
            client=CLIENT_ID,
            nodes=[pb.RouteNode(id="1", tcp_address=one.address), pb.RouteNode(id="2", tcp_address=two.address)],
            leaders=[leaders(s) for s in range(SHARDS)],
        )
        client = self.dial(one)
        assert client.session is not None
        two.sessions.add(client.session.id)
        return one, two, client

    def test_sends_to_the_leader(self) -> None:
        one, two, client = self.two_nodes(by_parity)
        for _ in range(3):
            client.schedule(b"x", group=group_on(by_parity, "2"), timeout=WAIT_LIMIT)
        client.schedule(b"x", group=group_on(by_parity, "1"), timeout=WAIT_LIMIT)
        self.assertEqual([(r.route, r.WhichOneof("body")) for r in two.received], [(True, "register_task")] * 3)
        self.assertEqual((len(one.tasks), one.fetches), (1, 1), "node 1's tasks and view fetches")

    def test_follows_not_leader(self) -> None:
        one, two, client = self.two_nodes(lambda _: "1")
        hint = pb.NotLeader(shard=3, leader_id="2", leader_tcp_address=two.address, revision=5)

        def not_leader(r: pb.Request) -> Reply:
            if r.route and r.HasField("register_task"):
                return refuse(r, pb.STATUS_NOT_LEADER, "node 2 leads it", not_leader=hint)
            return None

        one.hook = not_leader
        task = client.schedule(b"x", group="g", timeout=WAIT_LIMIT)
        self.assertIn(task.id, two.tasks)
        # The hint is newer than the view: the view is fetched again.
        one.wait("the view fetched again", lambda: one.fetches >= 2)

    def test_splits_batches(self) -> None:
        one, two, client = self.two_nodes(by_parity)
        groups = [chr(ord("a") + i) for i in range(20)]
        results = client.schedule_batch([boomerang.BatchTask(bytes([i]), group=g) for i, g in enumerate(groups)])
        self.assertEqual([(r.error, r.task.group if r.task else None) for r in results], [(None, g) for g in groups])
        for node, name in ((one, "1"), (two, "2")):
            self.assertEqual(len(node.batches), 1, f"node {name}'s batches")
            for task in node.tasks.values():
                self.assertEqual(by_parity(shard_of_group(SHARDS, CLIENT_ID, task.group)), name, task.group)

    def test_routes_around_an_unreachable_node(self) -> None:
        one, two, client = self.two_nodes(lambda _: "2")
        two.close()
        task = client.schedule(b"x", group="g", timeout=WAIT_LIMIT)
        self.assertIn(task.id, one.tasks)
        self.assertTrue(one.received[-1].route, "sent on at once, routed, not given up on after the window")

    def test_lost_connection(self) -> None:
        # A read is sent again, through the node dialed; a registration
        # without idempotency key fails, as it may have taken effect.
        one, two, client = self.two_nodes(lambda _: "2")
        two.hook = lambda _: "close"
        task_id = 2 << 48 | 1  # a task of shard 2
        with one.changed:
            one.tasks[task_id] = pb.Task(id=task_id, client=CLIENT_ID)
        self.assertEqual(client.get_task(id=task_id, timeout=WAIT_LIMIT).task.id, task_id)
        with self.assertRaises(boomerang.ConnectionLostError):
            client.schedule(b"x", group="g", timeout=WAIT_LIMIT)

    def test_busy_asked_again(self) -> None:
        # Twice BUSY, then answered, for a read; a registration without
        # idempotency key gets BusyError, as it may have taken effect.
        _, two, client = self.two_nodes(lambda _: "2")
        task_id = 5 << 48 | 1
        busy = []

        def answer_busy(r: pb.Request) -> Reply:
            if r.HasField("register_task") or (r.HasField("get_task") and len(busy) < 2):
                busy.append(r.WhichOneof("body"))
                return refuse(r, pb.STATUS_BUSY, "the task's shard is changing leaders")
            return None

        with two.changed:
            two.tasks[task_id] = pb.Task(id=task_id, client=CLIENT_ID)
        two.hook = answer_busy
        self.assertEqual(client.get_task(id=task_id, timeout=WAIT_LIMIT).task.id, task_id)
        with self.assertRaises(boomerang.BusyError):
            client.schedule(b"x", group="g", timeout=WAIT_LIMIT)
        self.assertEqual(busy, ["get_task", "get_task", "register_task"])

    def test_gives_up_routing_and_lets_the_node_forward(self) -> None:
        # NOT_LEADER naming no leader, again and again: once the window has
        # passed, the request goes through the node dialed without route.
        one, _, client = self.two_nodes(lambda _: "1")

        def no_leader(r: pb.Request) -> Reply:
            return refuse(r, pb.STATUS_NOT_LEADER, "no leader", not_leader=pb.NotLeader(shard=1)) if r.route else None

        one.hook = no_leader
        with mock.patch("boomerang._router._WINDOW", 0.2):
            task = client.schedule(b"x", group="g", timeout=WAIT_LIMIT)
        self.assertIn(task.id, one.tasks)
        routes = [r.route for r in one.received if r.HasField("register_task")]
        self.assertGreater(len(routes), 2)
        self.assertEqual(routes[-1:], [False], "only the last attempt goes without route")
        self.assertNotIn(False, routes[:-1])

    def test_close_ends_requests_waiting_for_a_leader(self) -> None:
        one, _, client = self.two_nodes(lambda _: "1")
        one.hook = lambda r: refuse(r, pb.STATUS_NOT_LEADER, "no leader") if r.route else None
        # A read: whether in flight or waiting to be sent again at close, it
        # is not sent again, and fails with ClientClosedError.
        future = client.submit("get_task", pb.GetTaskRequest(id=1 << 48 | 1))
        one.wait("a routed attempt", lambda: any(r.route for r in one.received))
        client.close()
        with self.assertRaises(boomerang.ClientClosedError):
            future.result(WAIT_LIMIT)

    def test_routing_off(self) -> None:
        node = FakeNode(self)
        node.routes = pb.GetRoutesResponse(shards=SHARDS, node="1", leaders=["2"] * SHARDS)
        client = self.dial(node, routing=False)
        client.schedule(b"x", group="g", timeout=WAIT_LIMIT)
        self.assertEqual((node.received[-1].route, node.fetches), (False, 0))

    def test_standalone_fetches_once(self) -> None:
        node = FakeNode(self)  # answers get_routes standalone
        client = self.dial(node)
        for _ in range(3):
            client.schedule(b"x", group="g", timeout=WAIT_LIMIT)
        client.schedule_batch([boomerang.BatchTask(b"y", group="h")])
        self.assertEqual(node.fetches, 1)
        self.assertEqual([r.route for r in node.received if r.HasField("register_task")], [False] * 3)
        self.assertEqual(node.batches, [1])


if __name__ == "__main__":
    unittest.main()
