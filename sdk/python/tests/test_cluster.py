"""Routing against a real cluster: three boomerang nodes and an embedded
etcd (boomerang etcd) on loopback. The routing client's requests reach
their shards' leaders, so no node forwards any of them; a client with
routing off has its requests forwarded."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import tempfile
import threading
import unittest
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import boomerang
from boomerang import pb

from .harness import WAIT_LIMIT, Server, admin, boomerang_binary, connect, start_server, wait_for

PASSWORD = "router-secret-1"


def start_etcd(case: unittest.TestCase) -> str:
    """Runs boomerang etcd on free ports until the test ends; returns its
    client address."""
    data_dir = tempfile.mkdtemp(prefix="boomerang-etcd-")
    case.addCleanup(shutil.rmtree, data_dir, True)
    cmd = [boomerang_binary(), "etcd", "--data-dir", data_dir, "--client-addr", "127.0.0.1:0"]
    proc = subprocess.Popen(
        [*cmd, "--peer-addr", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def reap() -> None:
        proc.kill()
        proc.wait()

    case.addCleanup(reap)
    found: list[str] = []
    ready = threading.Event()

    def read_log() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:  # to the end, so etcd never blocks on a full pipe
            m = re.search(r'msg="embedded etcd serving" clients=(\S+)', raw.decode(errors="replace"))
            if m and not found:
                found.append(m[1])
                ready.set()
        proc.stderr.close()
        ready.set()

    threading.Thread(target=read_log, daemon=True).start()
    if not ready.wait(WAIT_LIMIT) or not found:
        raise AssertionError("boomerang etcd did not report its address")
    return found[0]


def start_node(case: unittest.TestCase, etcd: str, node_id: int) -> Server:
    with socket.create_server(("127.0.0.1", 0)) as s:
        replication = "127.0.0.1:%d" % s.getsockname()[1]  # the node listens on it next
    args = ("--etcd", etcd, "--cluster", "sdk-py", "--node-id", str(node_id), "--cluster-addr", replication)
    return start_server(case, args=args, await_log="clients and sessions caught up with the cluster")


def settled(adm: boomerang.Client) -> bool:
    """Every shard on three live nodes, led by its preferred leader."""
    cluster = adm.call("get_cluster", timeout=5)
    assert isinstance(cluster, pb.GetClusterResponse)
    live = {n.id for n in cluster.nodes if n.live and not n.mark}
    return len(cluster.shards) > 0 and all(
        len(s.replicas) == 3 and s.leader and s.leader == s.preferred_leader and set(s.replicas) <= live
        for s in cluster.shards
    )


def forwarded(nodes: list[Server]) -> float:
    """The requests the nodes forwarded to other nodes, in all."""
    total = 0.0
    for node in nodes:
        with urllib.request.urlopen(f"http://{node.http}/metrics", timeout=WAIT_LIMIT) as page:
            for line in page.read().decode().splitlines():
                if line.startswith("boomerang_forwarded_requests_total{"):
                    total += float(line.rsplit(" ", 1)[1])
    return total


def work(client: boomerang.Client, name: str) -> None:
    """Schedules tasks (grouped, with an idempotency key, anywhere), alone
    and in a batch, and reads, changes and cancels them; name keeps the
    keys and groups apart from other work's."""

    def one(i: int) -> None:
        kind = i % 3
        task = client.schedule(
            b"work",
            after=3600,
            group=f"{name}-{i}" if kind == 0 else "",
            idempotency_key=f"{name}-{i}" if kind == 1 else "",
            timeout=WAIT_LIMIT,
        )
        client.get_task(id=task.id, timeout=WAIT_LIMIT)
        client.update_task(id=task.id, payload=b"changed", timeout=WAIT_LIMIT)
        client.cancel(task.id, timeout=WAIT_LIMIT)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(24)))
    batch = client.schedule_batch([boomerang.BatchTask(b"b", after=3600, group=f"{name}-batch-{i}") for i in range(16)])
    if any(r.error is not None for r in batch):
        raise AssertionError(f"batch: {[r.error for r in batch]}")


class ClusterRoutingTest(unittest.TestCase):
    def test_routing_client_needs_no_forwarding(self) -> None:
        etcd = start_etcd(self)
        nodes = [start_node(self, etcd, i) for i in (1, 2, 3)]
        adm = admin(self, nodes[0])
        wait_for("the cluster to settle", lambda: settled(adm), interval=0.2)
        adm.register_client(client_id="router", password=PASSWORD)

        routed = connect(self, nodes[0], "router", PASSWORD)
        routes = routed.call("get_routes")
        assert isinstance(routes, pb.GetRoutesResponse)
        self.assertEqual((routes.standalone, routes.node, len(routes.nodes)), (False, "1", 3))
        before = forwarded(nodes)
        work(routed, "routed")
        self.assertEqual(forwarded(nodes), before, "requests of the routing client forwarded")

        plain = connect(self, nodes[0], "router", PASSWORD, routing=False)
        work(plain, "plain")
        self.assertGreater(forwarded(nodes), before, "requests of the client without routing forwarded")


if __name__ == "__main__":
    unittest.main()
